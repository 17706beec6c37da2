package index

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/score"
)

// randomLists makes T random posting lists over N docs with assorted lengths
// (incl. block boundaries) and frequencies.
func randomLists(rng *rand.Rand, n int, bs int) (terms []string, docs, freqs [][]uint32, lens []uint32) {
	lens = make([]uint32, n)
	sizes := []int{1, 2, bs - 1, bs, bs + 1, 3*bs + 5, n / 2, n}
	for i, sz := range sizes {
		if sz < 1 || sz > n {
			continue
		}
		perm := rng.Perm(n)[:sz]
		sort.Ints(perm)
		d := make([]uint32, sz)
		f := make([]uint32, sz)
		for j, p := range perm {
			d[j] = uint32(p)
			f[j] = uint32(1 + rng.Intn(3)*rng.Intn(20))
			lens[p] += f[j]
		}
		terms = append(terms, fmt.Sprintf("t%02d", i))
		docs = append(docs, d)
		freqs = append(freqs, f)
	}
	return
}

// writeIndex writes block-coded lists (writeIndexMode, bitmaps off).
func writeIndex(t *testing.T, path string, c compress.Codec, bs int, terms []string, docs, freqs [][]uint32, lens []uint32) {
	t.Helper()
	writeIndexMode(t, path, c, bs, BitmapsOff, terms, docs, freqs, lens)
}

func TestIndexRoundTripAllCodecs(t *testing.T) {
	for _, c := range compress.All() {
		for _, bs := range []int{1, 3, 128} {
			t.Run(fmt.Sprintf("%s/B%d", c.Name(), bs), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(bs)))
				terms, docs, freqs, lens := randomLists(rng, 1000, bs)
				path := filepath.Join(t.TempDir(), "x.qp")
				writeIndex(t, path, c, bs, terms, docs, freqs, lens)
				x, err := Open(path)
				if err != nil {
					t.Fatal(err)
				}
				if x.NumTerms() != len(terms) || x.NumDocs() != 1000 {
					t.Fatalf("terms %d docs %d", x.NumTerms(), x.NumDocs())
				}
				for i, term := range terms {
					id, ok := x.Lookup(term)
					if !ok || x.Term(id) != term {
						t.Fatalf("lookup %q", term)
					}
					l, err := x.List(id)
					if err != nil {
						t.Fatal(err)
					}
					gd, gf, err := l.Decode(nil, nil)
					if err != nil {
						t.Fatal(err)
					}
					assertEq(t, gd, docs[i], "docs")
					assertEq(t, gf, freqs[i], "freqs")
					checkMaxima(t, x, &l, docs[i], freqs[i])
					checkCursor(t, rng, l, docs[i], freqs[i])
				}
				if _, ok := x.Lookup("nope"); ok {
					t.Fatal("lookup of absent term succeeded")
				}
			})
		}
	}
}

func assertEq(t *testing.T, got, want []uint32, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s[%d] = %d, want %d", what, i, got[i], want[i])
		}
	}
}

func checkMaxima(t *testing.T, x *Index, l *List, docs, freqs []uint32) {
	t.Helper()
	k1p1 := x.Params().K1p1()
	var lmax float32
	for b := 0; b < l.NBlocks; b++ {
		var m float32
		for i := b * l.BlockSize; i < min((b+1)*l.BlockSize, len(docs)); i++ {
			m = max(m, score.Term(l.IDF, k1p1, freqs[i], x.Norms()[docs[i]]))
		}
		if l.BlockMax(b) != m {
			t.Fatalf("block %d max %v, want %v", b, l.BlockMax(b), m)
		}
		lmax = max(lmax, m)
	}
	if l.MaxScore != lmax {
		t.Fatalf("list max %v, want %v", l.MaxScore, lmax)
	}
}

func checkCursor(t *testing.T, rng *rand.Rand, l List, docs, freqs []uint32) {
	t.Helper()
	var c Cursor
	c.Reset(l)
	for i, d := range docs {
		if c.DocID() != d || c.Freq() != freqs[i] {
			t.Fatalf("Next walk: posting %d = (%d,%d), want (%d,%d)", i, c.DocID(), c.Freq(), d, freqs[i])
		}
		c.Next()
	}
	if c.DocID() != Terminated || c.Next() != Terminated {
		t.Fatal("cursor not terminated at the end")
	}
	// NextGEQ against a linear reference, with increasing random targets.
	for trial := 0; trial < 20; trial++ {
		c.Reset(l)
		target := uint32(0)
		for {
			target += uint32(rng.Intn(200))
			got := c.NextGEQ(target)
			j := sort.Search(len(docs), func(i int) bool { return docs[i] >= target })
			want := Terminated
			if j < len(docs) {
				want = docs[j]
			}
			if got != want {
				t.Fatalf("NextGEQ(%d) = %d, want %d", target, got, want)
			}
			if got == Terminated {
				break
			}
			if c.Freq() != freqs[j] {
				t.Fatalf("freq after NextGEQ(%d) = %d, want %d", target, c.Freq(), freqs[j])
			}
			if tf, ok, err := l.Freq(c.Block(), j-c.Block()*l.BlockSize); err != nil || (ok && tf != freqs[j]) {
				t.Fatalf("random-access Freq = %d,%v,%v want %d", tf, ok, err, freqs[j])
			}
		}
		if c.Err() != nil {
			t.Fatal(c.Err())
		}
	}
}

func TestSetParamsRecomputesMaxima(t *testing.T) {
	c, _ := compress.ByName("vbyte")
	if c == nil {
		t.Skip("vbyte codec not registered")
	}
	rng := rand.New(rand.NewSource(5))
	terms, docs, freqs, lens := randomLists(rng, 500, 16)
	path := filepath.Join(t.TempDir(), "x.qp")
	writeIndex(t, path, c, 16, terms, docs, freqs, lens)
	x, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.SetParams(score.Params{K1: 1.2, B: 0.75}); err != nil {
		t.Fatal(err)
	}
	for i := range terms {
		l, _ := x.List(i)
		checkMaxima(t, x, &l, docs[i], freqs[i])
	}
}

func TestCorruptionDetected(t *testing.T) {
	c, _ := compress.ByName("vbyte")
	if c == nil {
		t.Skip("vbyte codec not registered")
	}
	rng := rand.New(rand.NewSource(9))
	terms, docs, freqs, lens := randomLists(rng, 300, 8)
	path := filepath.Join(t.TempDir(), "x.qp")
	writeIndex(t, path, c, 8, terms, docs, freqs, lens)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load(path, good); err != nil {
		t.Fatal(err)
	}
	// Every single-byte flip is caught (header, sections by CRC, TOC, trailer).
	for i := 0; i < len(good); i += 1 + len(good)/2000 {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x5a
		_, err := load(path, bad)
		if err == nil {
			t.Fatalf("flip at byte %d/%d not detected", i, len(good))
		}
		if !errors.Is(err, ErrCorrupt) && !strings.Contains(err.Error(), "format version") {
			t.Fatalf("flip at %d: error %v does not wrap ErrCorrupt", i, err)
		}
	}
	for _, cut := range []int{0, 10, len(good) / 2, len(good) - 1} {
		if _, err := load(path, good[:cut]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncation to %d: %v", cut, err)
		}
	}
}

// sliceSource is a DocSource over fixed texts.
type sliceSource struct {
	docs []Document
	i    int
}

func (s *sliceSource) Next() (*Document, error) {
	if s.i >= len(s.docs) {
		return nil, io.EOF
	}
	s.i++
	d := s.docs[s.i-1]
	return &d, nil
}

func fieldsAnalyzer() Analyzer {
	return func(dst []string, text []byte) []string { return append(dst, strings.Fields(string(text))...) }
}

func randomTexts(rng *rand.Rand, n int) []Document {
	var out []Document
	for i := 0; i < n; i++ {
		var sb strings.Builder
		for j := rng.Intn(40); j >= 0; j-- {
			fmt.Fprintf(&sb, "w%d ", int(rng.ExpFloat64()*30))
		}
		out = append(out, Document{ID: fmt.Sprintf("doc-%d", i), Text: []byte(sb.String())})
	}
	return out
}

// refInvert is the trivially correct inversion of texts.
func refInvert(docs []Document) map[string]map[uint32]uint32 {
	m := map[string]map[uint32]uint32{}
	for i, d := range docs {
		for _, w := range strings.Fields(string(d.Text)) {
			if m[w] == nil {
				m[w] = map[uint32]uint32{}
			}
			m[w][uint32(i)]++
		}
	}
	return m
}

func TestBuildSpillAndOrders(t *testing.T) {
	c, _ := compress.ByName("vbyte")
	if c == nil {
		t.Skip("vbyte codec not registered")
	}
	rng := rand.New(rand.NewSource(11))
	texts := randomTexts(rng, 3000)
	ref := refInvert(texts)
	for _, tc := range []struct {
		name   string
		budget int64
		order  string
	}{{"memory", 1 << 30, "input"}, {"spill", 20000, "input"}, {"random", 20000, "random"}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.qp")
			st, err := Build(context.Background(), &sliceSource{docs: append([]Document(nil), texts...)}, BuildOptions{
				Out: path, DocCodec: c, BlockSize: 16, NewAnalyzer: fieldsAnalyzer,
				MemBudget: tc.budget, TempDir: t.TempDir(), DocIDOrder: tc.order, Workers: 3,
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.budget < 1<<30 && st.Runs == 0 {
				t.Fatal("expected spilled runs")
			}
			x, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if x.NumTerms() != len(ref) || x.NumDocs() != len(texts) || st.Docs != uint64(len(texts)) {
				t.Fatalf("terms %d/%d docs %d", x.NumTerms(), len(ref), x.NumDocs())
			}
			// Map new docIDs back to input positions through external ids.
			pos := map[string]uint32{}
			for i, d := range texts {
				pos[d.ID] = uint32(i)
			}
			for term, postings := range ref {
				id, ok := x.Lookup(term)
				if !ok {
					t.Fatalf("term %q missing", term)
				}
				l, _ := x.List(id)
				docs, freqs, err := l.Decode(nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(docs) != len(postings) {
					t.Fatalf("%q: df %d want %d", term, len(docs), len(postings))
				}
				for i, d := range docs {
					old := pos[x.ExternalID(d)]
					if postings[old] != freqs[i] {
						t.Fatalf("%q doc %s tf %d want %d", term, x.ExternalID(d), freqs[i], postings[old])
					}
				}
			}
			for d := 0; d < x.NumDocs(); d++ {
				want := len(strings.Fields(string(texts[pos[x.ExternalID(uint32(d))]].Text)))
				if int(x.DocLens()[d]) != want {
					t.Fatalf("doc %d len %d want %d", d, x.DocLens()[d], want)
				}
			}
		})
	}
}

func TestAddListsParallelMatchesSequential(t *testing.T) {
	c, _ := compress.ByName("vbyte")
	if c == nil {
		t.Skip("vbyte codec not registered")
	}
	rng := rand.New(rand.NewSource(13))
	terms, docs, freqs, lens := randomLists(rng, 700, 8)
	dir := t.TempDir()
	seq := filepath.Join(dir, "seq.qp")
	writeIndex(t, seq, c, 8, terms, docs, freqs, lens)
	par := filepath.Join(dir, "par.qp")
	w, err := NewWriter(par, WriterOptions{BlockSize: 8, DocCodec: c, DocLens: lens})
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.AddListsParallel(context.Background(), len(terms), 3, func(i int, d, f []uint32) (string, []uint32, []uint32, error) {
		return terms[i], append(d, docs[i]...), append(f, freqs[i]...), nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Terms != uint64(len(terms)) {
		t.Fatalf("terms %d", st.Terms)
	}
	w.meta.Created = "x"
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a, _ := Open(seq)
	b, _ := Open(par)
	if a.SizeBytes() != b.SizeBytes() || a.NumTerms() != b.NumTerms() {
		t.Fatalf("sizes differ: %d vs %d", a.SizeBytes(), b.SizeBytes())
	}
	for i := 0; i < a.NumTerms(); i++ {
		la, _ := a.List(i)
		lb, _ := b.List(i)
		if string(la.DocBytes()) != string(lb.DocBytes()) || string(la.FreqBytes()) != string(lb.FreqBytes()) {
			t.Fatalf("list %d differs", i)
		}
	}
}

// TestLookupHashMatchesSorted checks the hash-table Lookup against binary
// search of the sorted dictionary for every term, for prefixes and
// extensions of terms (absent neighbours), the empty string, and
// concurrent first calls.
func TestLookupHashMatchesSorted(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	terms, docs, freqs, lens := randomLists(rng, 500, 16)
	path := filepath.Join(t.TempDir(), "x.qp")
	bp, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	writeIndex(t, path, bp, 16, terms, docs, freqs, lens)
	x, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() { x.Lookup(terms[0]); done <- true }()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	probes := []string{"", "\x00", "zzzzzzzz"}
	for _, term := range terms {
		probes = append(probes, term, term+"x", term[:len(term)-1], term+"\x00")
	}
	checkLookups(t, x, terms, probes)
	// Every term's probe now meets a decoy first: a slot with the term's
	// fingerprint and another term's ID (equal fingerprints of different
	// terms, which a real table almost never holds), then its own slot.
	x.BuildLookup()
	n := x.NumTerms()
	size := 4
	for size < 4*n {
		size <<= 1
	}
	tab := make([]uint64, size)
	mask := uint64(size - 1)
	put := func(h uint64, s uint64) {
		for h &= mask; tab[h] != 0; h = (h + 1) & mask {
		}
		tab[h] = s
	}
	for id := 0; id < n; id++ {
		hash := maphash.Bytes(x.lookSeed, x.termAt(id))
		put(hash, lookSlot((id+1)%n, lookFP(hash)))
		put(hash, lookSlot(id, lookFP(hash)))
	}
	x.lookTab = tab
	checkLookups(t, x, terms, probes)
}

// checkLookups compares Lookup with the sorted search and LookupAll and
// LookupDict with Lookup over probes (every term of terms among them).
func checkLookups(t *testing.T, x *Index, terms, probes []string) {
	t.Helper()
	found := 0
	for _, p := range probes {
		id, ok := x.Lookup(p)
		wid, wok := x.lookupSorted(p)
		if ok != wok || (ok && id != wid) {
			t.Fatalf("Lookup(%q) = %d, %v; sorted search says %d, %v", p, id, ok, wid, wok)
		}
		if ok {
			found++
		}
	}
	if found < len(terms) {
		t.Fatalf("found %d of %d terms", found, len(terms))
	}
	// LookupAll and LookupDict, in batches of every size around their
	// chunk (lookBatch), give Lookup's answers (-1 for absent terms).
	ids := make([]int, len(probes))
	for _, dict := range []bool{false, true} {
		for _, n := range []int{1, 3, lookBatch - 1, lookBatch, lookBatch + 1, 2*lookBatch + 5, len(probes)} {
			clear(ids)
			for i := 0; i < len(probes); i += n {
				j := min(i+n, len(probes))
				if dict {
					x.LookupDict(probes[i:j], ids[i:j])
				} else {
					x.LookupAll(probes[i:j], ids[i:j])
				}
			}
			for i, p := range probes {
				id, ok := x.Lookup(p)
				if !ok {
					id = -1
				}
				if ids[i] != id {
					t.Fatalf("batches of %d (LookupDict %v): %q = %d, Lookup says %d", n, dict, p, ids[i], id)
				}
			}
		}
	}
}

// TestIDFTable checks that Index.IDF, tabulated for small df, returns the
// bits of score.IDF for every df of the collection (both sides of the
// table's end).
func TestIDFTable(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	terms, docs, freqs, lens := randomLists(rng, 50, 16)
	lens = append(lens, make([]uint32, 2*idfTabSize)...) // N > idfTabSize
	for i := range lens {
		lens[i] = max(lens[i], 1)
	}
	path := filepath.Join(t.TempDir(), "x.qp")
	bp, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	writeIndex(t, path, bp, 16, terms, docs, freqs, lens)
	x, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(x.NumDocs())
	if len(x.idfTab) != idfTabSize {
		t.Fatalf("IDF table of %d entries for N = %d, want %d", len(x.idfTab), n, idfTabSize)
	}
	for df := uint64(0); df <= n; df++ {
		if got, want := x.IDF(uint32(df)), score.IDF(n, df); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("IDF(%d) = %v, score.IDF says %v", df, got, want)
		}
	}
}

// TestListsIntoMatchesList checks the batched ListsInto against List for
// every term, in one batch and in a shuffled order.
func TestListsIntoMatchesList(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	terms, docs, freqs, lens := randomLists(rng, 500, 16)
	path := filepath.Join(t.TempDir(), "x.qp")
	bp, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	writeIndex(t, path, bp, 16, terms, docs, freqs, lens)
	x, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ids := rng.Perm(x.NumTerms())
	out := make([]List, len(ids))
	if err := x.ListsInto(out, ids); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		l, err := x.List(id)
		if err != nil {
			t.Fatal(err)
		}
		g := out[i]
		if g.Term != l.Term || g.DF != l.DF || g.IDF != l.IDF || g.MaxScore != l.MaxScore || g.NBlocks != l.NBlocks ||
			string(g.DocBytes()) != string(l.DocBytes()) || string(g.FreqBytes()) != string(l.FreqBytes()) || string(g.SkipBytes()) != string(l.SkipBytes()) {
			t.Fatalf("ListsInto[%d] (term %d) differs from List", i, id)
		}
	}
}
