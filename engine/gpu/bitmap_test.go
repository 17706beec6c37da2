package gpu

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/qpengine/qp/bitmap/wah"
	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// TestBitmapLists: an index whose lists are all stored as roaring bitmaps
// (index.BitmapsAlways) is uploaded through index.BlockCodedList, and the
// GPU's AND/OR/AND+OR results equal the CPU engine's bit for bit.
func TestBitmapLists(t *testing.T) {
	c := testContext(t)
	nq := 12
	if emulated(c) {
		nq = 4
	}
	for _, name := range []string{"bp128", "vbyte"} {
		codec, err := compress.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(17))
			col := genCollection(rng, 3000, 24, 32, false)
			path := filepath.Join(t.TempDir(), "x.qp")
			w, err := index.NewWriter(path, index.WriterOptions{BlockSize: col.blockSize, DocCodec: codec, DocLens: col.lens, Bitmaps: index.BitmapsAlways})
			if err != nil {
				t.Fatal(err)
			}
			for i, term := range col.terms {
				if err := w.AddList(term, col.docs[i], col.freqs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			x, err := index.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if x.Meta.BitmapLists != uint64(x.NumTerms()) {
				t.Fatalf("%d of %d lists are bitmaps", x.Meta.BitmapLists, x.NumTerms())
			}
			terms := randomQueries(rng, col.terms, nq, nil)
			if res, _ := compare(t, x, newBackend(t, x, Options{}), expand(terms, []int{1, 10, 1000})); res == 0 {
				t.Fatal("no query had results")
			}
		})
	}
}

// TestAndBitmaps: AND and AND+OR with the densest lists' device bitmaps
// (bitmap.go: the filter, then list steps or scoring by rank) equal the CPU
// bit for bit, on bp128 (frequencies by rank, and decoded for the list
// steps) and vbyte (bitmap terms stay list steps); the density knob turns
// them off and on, and the byte budget bounds them.
func TestAndBitmaps(t *testing.T) {
	c := testContext(t)
	nq, docs := 24, 5000
	if emulated(c) {
		nq, docs = 8, 3000
	}
	for _, name := range []string{"bp128", "bp128/decodeFreqs", "vbyte"} {
		t.Run(name, func(t *testing.T) {
			codec, err := compress.ByName(strings.TrimSuffix(name, "/decodeFreqs"))
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(23))
			col := genCollection(rng, docs, 24, 32, false)
			x := col.write(t, codec)
			terms := randomQueries(rng, col.terms, nq, nil)
			// Pairs and triples of the densest terms: every term after the
			// first has a bitmap.
			terms = append(terms, []string{col.terms[8], col.terms[6]}, []string{col.terms[10], col.terms[7], col.terms[6]},
				[]string{col.terms[3], col.terms[6], col.terms[7]})
			var qs []engine.Query
			for _, q := range expand(terms, []int{1, 10, 1000}) {
				if q.Mode != engine.Or {
					qs = append(qs, q)
				}
			}
			g := newBackend(t, x, Options{BitmapDensity: 1.0 / 64})
			g.and.decodeFreqs = strings.HasSuffix(name, "/decodeFreqs")
			st := g.Bitmaps()
			minDF := bitmapDF(1.0/64, uint32(docs))
			dense := 0
			for tid := range x.NumTerms() {
				if g.info[tid].df >= minDF {
					dense++
				}
			}
			if st.Lists != dense || st.InUse != dense || st.Corrupt != 0 || dense < 4 {
				t.Fatalf("bitmaps %+v, want %d lists of df >= %d in use", st, dense, minDF)
			}
			check := func(wantBM bool) {
				t.Helper()
				if res, _ := compare(t, x, g, qs); res == 0 {
					t.Fatal("no query had results")
				}
				out := make([]engine.Response, len(qs))
				if err := g.SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
					t.Fatal(err)
				}
				used := 0
				for i := range out {
					used += out[i].Stats.AndBitmaps
				}
				if (used > 0) != wantBM {
					t.Fatalf("%d bitmap terms used, want bitmaps %v", used, wantBM)
				}
			}
			check(true)
			if err := g.SetBitmapDensity(-1); err != nil {
				t.Fatal(err)
			}
			if s := g.Bitmaps(); s.InUse != 0 {
				t.Fatalf("density -1: %d bitmaps in use", s.InUse)
			}
			check(false)
			if err := g.SetBitmapDensity(0.25); err != nil {
				t.Fatal(err)
			}
			if s := g.Bitmaps(); s.InUse == 0 || s.InUse >= dense {
				t.Fatalf("density 1/4: %d of %d bitmaps in use", s.InUse, dense)
			}
			check(true)
			// A budget of three columns: the three densest lists.
			D := wah.Groups(uint32(docs))
			g3 := newBackend(t, x, Options{BitmapDensity: 1.0 / 64, BitmapBytes: 3 * 4 * int64(D+kern.AndRankEntries(D))})
			if s := g3.Bitmaps(); s.Lists != 3 {
				t.Fatalf("budget of 3 columns: %+v", s)
			}
			for tid := range x.NumTerms() {
				more := 0
				for u := range x.NumTerms() {
					if g3.info[u].df > g3.info[tid].df || g3.info[u].df == g3.info[tid].df && u > tid {
						more++
					}
				}
				if has := g3.bm.col[tid] >= 0; has != (more < 3) {
					t.Fatalf("term %d (df %d, %d denser): bitmap %v", tid, g3.info[tid].df, more, has)
				}
			}
			if res, _ := compare(t, x, g3, qs); res == 0 {
				t.Fatal("no query had results")
			}
		})
	}
}

// TestAndBitmapsCorrupt: a damaged frequency block of a bitmap list, read
// by rank (by the filter's survivors, or by the bitmap AND's results), gives
// the queries that reach it index.ErrCorrupt;
// a damaged docID block leaves its list without a bitmap (New counts it)
// and the list steps report it.
func TestAndBitmapsCorrupt(t *testing.T) {
	testContext(t)
	for _, what := range []string{"frequency header", "docID header"} {
		t.Run(what, func(t *testing.T) {
			rng := rand.New(rand.NewSource(9))
			col := genCollection(rng, 3000, 12, 32, false)
			x := col.bp128(t)
			// The densest list whose middle block holds docID value bytes.
			tid, most := -1, 0
			for i := range x.NumTerms() {
				l, _ := x.List(i)
				if l.NBlocks > most && len(l.DocBlock(l.NBlocks/2)) >= 6 {
					tid, most = i, l.NBlocks
				}
			}
			l, _ := x.List(tid)
			b := l.NBlocks / 2
			lo, hi := l.BlockBase(b), l.LastDoc(b)
			if what == "frequency header" {
				l.FreqBlock(b)[0] = 0xff
			} else {
				l.DocBlock(b)[0] = 0xff
			}
			// Queries of the damaged term after a sparser one with documents
			// in the damaged block's range (and so, likely, matches there).
			var qs []engine.Query
			for o := range x.NumTerms() {
				ol, _ := x.List(o)
				if ol.DF >= l.DF || ol.DF < 2 {
					continue
				}
				in := 0
				for _, d := range col.docs[slices.Index(col.terms, x.Term(o))] {
					if d >= lo && d <= hi {
						in++
					}
				}
				if in > 0 {
					for _, mode := range []engine.Mode{engine.And, engine.AndOr} {
						qs = append(qs, engine.Query{ID: fmt.Sprintf("%d/%v", o, mode), Terms: []string{x.Term(o), x.Term(tid)}, Mode: mode, K: 1000})
					}
				}
			}
			for _, bmAnd := range []BitmapAndMode{BitmapAndOff, BitmapAndOn} {
				g := newBackend(t, x, Options{BitmapDensity: 1.0 / 64, BitmapAnd: bmAnd})
				st := g.Bitmaps()
				if what == "docID header" {
					if st.Corrupt != 1 || g.bm.col[tid] >= 0 {
						t.Fatalf("damaged docIDs: bitmaps %+v, term %d column %d", st, tid, g.bm.col[tid])
					}
				} else if g.bm.col[tid] < 0 {
					t.Fatalf("term %d has no bitmap", tid)
				}
				got, want := searchBoth(t, x, g, qs)
				// The CPU's block-max pruning may skip the damaged block where
				// the GPU, exhaustive, reads it: a query the CPU fails fails on
				// the GPU too, every GPU error is index.ErrCorrupt, and the
				// others agree.
				bad := 0
				for i, q := range qs {
					switch {
					case got[i].Err != nil:
						bad++
						if !errors.Is(got[i].Err, index.ErrCorrupt) {
							t.Errorf("query %s %q: GPU error %v, want index.ErrCorrupt", q.ID, q.Terms, got[i].Err)
						}
						if st := got[i].Stats; st.Terms != 2 || st.AndAlgo != AndGPU {
							t.Errorf("query %s %q: error with stats %+v, want its 2 terms and AND %q", q.ID, q.Terms, st, AndGPU)
						}
					case want[i].Err != nil:
						t.Errorf("query %s %q: CPU error %v, none on the GPU", q.ID, q.Terms, want[i].Err)
					default:
						if msg := sameResponse(got[i], want[i]); msg != "" {
							t.Errorf("query %s %q: %s", q.ID, q.Terms, msg)
						}
					}
				}
				if bad == 0 {
					t.Fatalf("no query of %d reached the damaged block (bitmap AND %v)", len(qs), bmAnd)
				}
				if n := g.Profile().BitmapAndQueries; bmAnd == BitmapAndOn && what == "frequency header" && n == 0 {
					t.Fatal("no query ran the bitmap AND")
				}
			}
		})
	}
}

// TestOrBitmaps: the fused OR tiles with device bitmaps (a tile whose
// threshold exceeds the maxima of the query's densest terms decodes only
// the others and adds those terms by rank, query_ortile.cu) equal the CPU
// bit for bit, with and without ties, for several tile sizes and k, at
// several OR bitmap densities; the split is taken (documents completed by
// rank), and not without bitmaps.
// A damaged frequency block of a bitmap term fails the queries with
// index.ErrCorrupt.
func TestOrBitmaps(t *testing.T) {
	c := testContext(t)
	nq, docs := 24, 6000
	tiles := []int{64, 256, 1024} // 1024: several accumulators per thread
	if emulated(c) {
		nq, docs, tiles = 8, 3000, []int{64, 512}
	}
	bp, _ := compress.ByName("bp128")
	for _, ties := range []bool{false, true} {
		rng := rand.New(rand.NewSource(31))
		col := genCollection(rng, docs, 24, 32, ties)
		x := col.write(t, bp)
		terms := randomQueries(rng, col.terms, nq, nil)
		// A sparser term before the densest ones.
		for _, r := range []int{12, 16, 20, 23} {
			terms = append(terms, []string{col.terms[r], col.terms[6], col.terms[7]},
				[]string{col.terms[r], col.terms[8], col.terms[6], col.terms[9], col.terms[10]})
		}
		qs := orQueries(terms, []int{1, 10, 100})
		for _, tile := range tiles {
			t.Run(fmt.Sprintf("ties=%v/T%d", ties, tile), func(t *testing.T) {
				// The OR density: the AND's (0), none, its own with the
				// AND's bitmaps off, and a higher one (fewer bitmap terms).
				for _, v := range []struct{ and, or float64 }{{0, 0}, {0, -1}, {-1, 1.0 / 64}, {0, 1.0 / 8}} {
					g := newBackend(t, x, Options{BitmapDensity: 1.0 / 64, orTile: tile})
					if v.and != 0 {
						if err := g.SetBitmapDensity(v.and); err != nil {
							t.Fatal(err)
						}
					}
					g.SetOrBitmapDensity(v.or)
					if res, _ := compare(t, x, g, qs); res == 0 {
						t.Fatal("no query had results")
					}
					if n := g.Profile().OrLookups; (n > 0) != (v.or >= 0) {
						t.Fatalf("densities %+v: %d documents completed by rank", v, n)
					}
				}
			})
		}
	}
	t.Run("corrupt", func(t *testing.T) {
		rng := rand.New(rand.NewSource(5))
		col := genCollection(rng, docs, 24, 32, false)
		x := col.write(t, bp)
		dense, _ := x.Lookup(col.terms[6])
		l, _ := x.List(dense)
		for b := range l.NBlocks {
			l.FreqBlock(b)[0] = 0xff
		}
		var qs []engine.Query
		for _, r := range []int{12, 16, 20, 23} {
			qs = append(qs, engine.Query{ID: fmt.Sprint(r), Terms: []string{col.terms[r], col.terms[6]}, Mode: engine.Or, K: 10})
		}
		g := newBackend(t, x, Options{BitmapDensity: 1.0 / 64, orTile: 64})
		got, _ := searchBoth(t, x, g, qs)
		for i, q := range qs {
			if !errors.Is(got[i].Err, index.ErrCorrupt) {
				t.Errorf("query %q: error %v, want index.ErrCorrupt", q.Terms, got[i].Err)
			}
		}
	})
}

// TestBitmapsOneProc: with GOMAXPROCS 1, New encodes every list that gets
// a bitmap (the encoding loop ran only its first list when parallelChunks
// ran in the caller, and New failed with more than one), and AND with
// them equals the CPU.
func TestBitmapsOneProc(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	testContext(t)
	docs := 3000
	rng := rand.New(rand.NewSource(29))
	col := genCollection(rng, docs, 24, 32, false)
	codec, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	x := col.write(t, codec)
	g := newBackend(t, x, Options{BitmapDensity: 1.0 / 64})
	minDF := bitmapDF(1.0/64, uint32(docs))
	dense := 0
	for tid := range x.NumTerms() {
		if g.info[tid].df >= minDF {
			dense++
		}
	}
	if st := g.Bitmaps(); dense < 2 || st.Lists != dense || st.InUse != dense || st.Corrupt != 0 {
		t.Fatalf("bitmaps %+v, want %d (>= 2) lists of df >= %d in use", st, dense, minDF)
	}
	terms := [][]string{{col.terms[8], col.terms[6]}, {col.terms[10], col.terms[7], col.terms[6]}, {col.terms[3], col.terms[6], col.terms[7]}}
	var qs []engine.Query
	for _, q := range expand(terms, []int{1, 10}) {
		if q.Mode != engine.Or {
			qs = append(qs, q)
		}
	}
	if res, _ := compare(t, x, g, qs); res == 0 {
		t.Fatal("no query had results")
	}
}

// TestBitmapBudget checks the bitmaps' device budget: Options.BitmapBytes
// (or its default) within 1/4 of the free memory, or 1/2 when it was set.
func TestBitmapBudget(t *testing.T) {
	const free = 80 << 30
	for _, c := range []struct {
		budget int64
		set    bool
		want   int64
	}{
		{DefaultBitmapBytes, false, DefaultBitmapBytes},
		{6 << 30, true, 6 << 30},
		{24 << 30, false, 20 << 30},
		{24 << 30, true, 24 << 30},
		{64 << 30, true, 40 << 30},
	} {
		if got := bitmapBudget(c.budget, c.set, free); got != c.want {
			t.Errorf("bitmapBudget(%d, %v, %d) = %d, want %d", c.budget, c.set, int64(free), got, c.want)
		}
	}
}

// TestBitmapAnd: with Options.BitmapAnd the AND queries whose every list
// has a device bitmap (term 0 included) run the word-wise AND of their
// columns (bmand.go) and equal the CPU bit for bit: AND alone (sets planned
// off the owner, the bitmap AND after each plan's queries) and with AND+OR
// (sets planned on the owner), k = 1, 10 and 1000, with QTF, beside queries
// of sparser terms in the same sets; with every list a bitmap (density 0),
// with the densest only (1/16), and with a budget of three columns. The
// bitmap AND runs (Profile.BitmapAndQueries), and not with the option off
// or on vbyte frequencies (no slot access).
func TestBitmapAnd(t *testing.T) {
	c := testContext(t)
	nq, docs := 24, 5000
	if emulated(c) {
		nq, docs = 10, 3000
	}
	for _, name := range []string{"bp128", "vbyte"} {
		t.Run(name, func(t *testing.T) {
			codec, err := compress.ByName(name)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(31))
			col := genCollection(rng, docs, 24, 32, false)
			x := col.write(t, codec)
			terms := randomQueries(rng, col.terms, nq, nil)
			terms = append(terms, []string{col.terms[8], col.terms[6]}, []string{col.terms[10], col.terms[7], col.terms[6]},
				[]string{col.terms[3], col.terms[6], col.terms[7]}, []string{col.terms[2], col.terms[3], col.terms[2]},
				[]string{col.terms[1], col.terms[2], col.terms[3], col.terms[4]})
			all := expand(terms, []int{1, 10, 1000})
			var ands, mixed []engine.Query
			for _, q := range all {
				if q.Mode == engine.And {
					ands = append(ands, q)
				}
				if q.Mode != engine.Or {
					mixed = append(mixed, q)
				}
			}
			D := wah.Groups(uint32(docs))
			for _, o := range []Options{{BitmapDensity: 1.0 / float64(docs)}, {BitmapDensity: 1.0 / 16},
				{BitmapDensity: 1.0 / 64, BitmapBytes: 3 * 4 * int64(D+kern.AndRankEntries(D))}} {
				for _, on := range []bool{true, false} {
					o.BitmapAnd = BitmapAndOff
					if on {
						o.BitmapAnd = BitmapAndOn
					}
					g := newBackend(t, x, o)
					for _, qs := range [][]engine.Query{ands, mixed} {
						if res, _ := compare(t, x, g, qs); res == 0 {
							t.Fatal("no query had results")
						}
					}
					pr := g.Profile()
					if want := on && name == "bp128"; (pr.BitmapAndQueries > 0) != want {
						t.Fatalf("%+v: %d queries ran the bitmap AND, want some: %v", o, pr.BitmapAndQueries, want)
					}
					if pr.PlannedSets == 0 {
						t.Fatalf("%+v: no set planned off the owner", o)
					}
				}
			}
		})
	}
}
