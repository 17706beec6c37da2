package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/topk"
)

func smallIndex(t testing.TB, codecName string, n, bs int, seed int64) (*index.Index, *ref.Collection) {
	t.Helper()
	codec, err := compress.ByName(codecName)
	if err != nil {
		t.Skip(err)
	}
	rng := rand.New(rand.NewSource(seed))
	col := genCollection(rng, n, 24, bs, false)
	x, err := col.WriteIndex(filepath.Join(t.TempDir(), "x.qp"), codec, bs)
	if err != nil {
		t.Fatal(err)
	}
	return x, col
}

func TestQueryValidation(t *testing.T) {
	x, _ := smallIndex(t, "bp128", 300, 16, 1)
	e := New(x)
	long := make([]string, MaxTerms+1)
	for i := range long {
		long[i] = "t001"
	}
	for _, tc := range []struct {
		q    Query
		opt  Options
		want error
	}{
		{Query{Terms: nil, Mode: Or, K: 10}, Options{}, ErrEmptyQuery},
		{Query{Terms: []string{}, Mode: And, K: 10}, Options{}, ErrEmptyQuery},
		{Query{Terms: long, Mode: Or, K: 10}, Options{}, ErrTooManyTerms},
		{Query{Terms: []string{"t001"}, Mode: Or, K: 0}, Options{}, ErrBadK},
		{Query{Terms: []string{"t001"}, Mode: Or, K: topk.MaxK + 1}, Options{}, ErrBadK},
		{Query{Terms: []string{"t001"}, K: 10}, Options{}, ErrBadMode},
		{Query{Terms: []string{"t001"}, Mode: 9, K: 10}, Options{}, ErrBadMode},
		{Query{Terms: []string{"t001"}, Mode: Or, K: 10}, Options{OrAlgo: "wand"}, ErrBadStrategy},
		{Query{Terms: []string{"t001"}, Mode: And, K: 10}, Options{AndAlgo: "hash"}, ErrBadStrategy},
	} {
		_, _, err := e.Search(tc.q, tc.opt)
		if !errors.Is(err, tc.want) {
			t.Errorf("%+v %+v: error %v, want %v", tc.q, tc.opt, err, tc.want)
		}
	}
	// MaxTerms copies of one term are accepted.
	if _, _, err := e.Search(Query{Terms: long[:MaxTerms], Mode: Or, K: 10}, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"and", "OR", "andor", "and+or"} {
		if _, err := ParseMode(s); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseMode("xor"); !errors.Is(err, ErrBadMode) {
		t.Error(err)
	}
}

func TestQuerySemantics(t *testing.T) {
	x, _ := smallIndex(t, "bp128", 300, 16, 2)
	e := New(x)
	get := func(terms []string, mode Mode) []topk.Result {
		t.Helper()
		r, _, err := e.Search(Query{Terms: terms, Mode: mode, K: 50}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return append([]topk.Result(nil), r...)
	}
	base := get([]string{"t003", "t010"}, Or)
	if len(base) == 0 {
		t.Fatal("no results")
	}
	// Duplicates count once; unknown terms are ignored by OR.
	for _, terms := range [][]string{{"t010", "t003", "t010", "t003"}, {"nope", "t003", "t010", "nope2"}} {
		if _, ok := sameResults(get(terms, Or), base); !ok {
			t.Errorf("%q differs from [t003 t010]", terms)
		}
	}
	// Unknown terms empty an AND; AND+OR then falls back to OR.
	if r := get([]string{"t003", "nope"}, And); len(r) != 0 {
		t.Errorf("AND with an unknown term: %d results", len(r))
	}
	if _, ok := sameResults(get([]string{"t003", "nope", "t010"}, AndOr), base); !ok {
		t.Error("AND+OR with an unknown term differs from OR")
	}
	// All terms unknown: no results, no error.
	for _, m := range []Mode{And, Or, AndOr} {
		if r := get([]string{"nope"}, m); len(r) != 0 {
			t.Errorf("%v: %d results for an unknown term", m, len(r))
		}
	}
}

// TestNoAllocations checks that a warmed-up Engine does not allocate per
// query in any mode or strategy.
func TestNoAllocations(t *testing.T) {
	x, col := smallIndex(t, "bp128", 3000, 64, 3)
	e := New(x)
	rng := rand.New(rand.NewSource(4))
	var qs [][]string
	for i := 0; i < 20; i++ {
		qs = append(qs, genQuery(rng, col.Terms))
	}
	for _, opt := range allOptions() {
		for _, mode := range []Mode{And, Or, AndOr} {
			run := func() {
				for _, terms := range qs {
					if _, _, err := e.Search(Query{Terms: terms, Mode: mode, K: 100}, opt); err != nil {
						t.Fatal(err)
					}
				}
			}
			run() // warm up
			if a := testing.AllocsPerRun(5, run); a != 0 {
				t.Errorf("%v %+v: %v allocations per %d queries", mode, opt, a, len(qs))
			}
		}
	}
}

func TestStats(t *testing.T) {
	x, col := smallIndex(t, "bp128", 3000, 64, 5)
	e := New(x)
	big := col.Terms[len(col.Terms)/2] // a mid-size list
	_, st, err := e.Search(Query{Terms: []string{big, col.Terms[6]}, Mode: Or, K: 10}, Options{OrAlgo: OrTAAT})
	if err != nil {
		t.Fatal(err)
	}
	l0, _ := x.List(len(col.Terms) / 2)
	l1, _ := x.List(6)
	if st.PostingsDecoded != int64(l0.DF+l1.DF) || st.BlocksDecoded != int64(l0.NBlocks+l1.NBlocks) || st.Terms != 2 || st.Time <= 0 {
		t.Errorf("TAAT stats %+v", st)
	}
	_, st, err = e.Search(Query{Terms: []string{big, col.Terms[0]}, Mode: And, K: 10}, Options{AndAlgo: AndSkip})
	if err != nil {
		t.Fatal(err)
	}
	if st.BlocksDecoded > 3 || st.OrAlgo != "" || st.AndAlgo != AndSkip {
		t.Errorf("skip AND of a 1-posting list decoded %d blocks (stats %+v)", st.BlocksDecoded, st)
	}
}

// TestShortOrRunsTAAT checks the switch of MaxScore and BlockMax-WAND to
// TAAT, or to a TAAT prefix then MaxScore, at Options.OrTAATPostings
// postings, the stats saying what ran and the results staying identical.
// A query of two or more lists none of which is short runs the TAAT prefix
// plan with its first list (step 29); a one-list query runs MaxScore
// (step 31) unless NoTAAT keeps the strategy asked for.
func TestShortOrRunsTAAT(t *testing.T) {
	x, col := smallIndex(t, "bp128", 3000, 64, 5)
	e := New(x)
	terms := []string{col.Terms[len(col.Terms)/2], col.Terms[6], col.Terms[1]}
	sum, minDF := 0, math.MaxInt
	for _, s := range terms {
		id, _ := x.Lookup(s)
		sum += int(x.Record(id).DF)
		minDF = min(minDF, int(x.Record(id).DF))
	}
	q := Query{Terms: terms, Mode: Or, K: 10}
	want, _, err := e.SearchInto(nil, q, Options{OrAlgo: OrTAAT})
	if err != nil {
		t.Fatal(err)
	}
	for _, algo := range []OrStrategy{OrMaxScore, OrBMW} {
		for _, c := range []struct {
			limit int
			ran   OrStrategy
		}{{sum, OrTAAT}, {sum - 1, OrTAATMaxScore}, {minDF, OrTAATMaxScore}, {minDF - 1, OrTAATMaxScore}, {NoTAAT, algo}, {0, OrTAAT}} {
			got, st, err := e.SearchInto(nil, q, Options{OrAlgo: algo, OrTAATPostings: c.limit})
			if err != nil {
				t.Fatal(err)
			}
			if st.OrAlgo != c.ran {
				t.Errorf("%s with OrTAATPostings %d (query: %d postings): ran %q, want %q", algo, c.limit, sum, st.OrAlgo, c.ran)
			}
			if i, ok := sameResults(got, want); !ok {
				t.Errorf("%s with OrTAATPostings %d: results differ from TAAT at rank %d", algo, c.limit, i)
			}
		}
		one := Query{Terms: terms[:1], Mode: Or, K: 10}
		want1, _, err := e.SearchInto(nil, one, Options{OrAlgo: OrTAAT})
		if err != nil {
			t.Fatal(err)
		}
		got, st, err := e.SearchInto(nil, one, Options{OrAlgo: algo, OrTAATPostings: 1})
		if err != nil {
			t.Fatal(err)
		}
		if st.OrAlgo != OrMaxScore {
			t.Errorf("%s, one long list: ran %q, want %q", algo, st.OrAlgo, OrMaxScore)
		}
		if i, ok := sameResults(got, want1); !ok {
			t.Errorf("%s, one long list: results differ from TAAT at rank %d", algo, i)
		}
		if _, st, err = e.SearchInto(nil, one, Options{OrAlgo: algo, OrTAATPostings: NoTAAT}); err != nil {
			t.Fatal(err)
		}
		if st.OrAlgo != algo {
			t.Errorf("%s, one list, NoTAAT: ran %q", algo, st.OrAlgo)
		}
	}
}

func TestBackendBatch(t *testing.T) {
	x, col := smallIndex(t, "bp128", 2000, 32, 6)
	rng := rand.New(rand.NewSource(7))
	var qs []Query
	for i := 0; i < 60; i++ {
		q := Query{ID: fmt.Sprint(i), Terms: genQuery(rng, col.Terms), Mode: Mode(1 + i%3), K: []int{1, 10, 100}[i%3]}
		switch i % 17 {
		case 5:
			q.Terms = nil
		case 11:
			q.K = 0
		}
		qs = append(qs, q)
	}
	e := New(x)
	for _, workers := range []int{1, 3} {
		b := NewCPU(x, workers)
		out := make([]Response, len(qs))
		for round := 0; round < 2; round++ { // the second round reuses out
			if err := b.SearchBatch(context.Background(), qs, Options{}, out); err != nil {
				t.Fatal(err)
			}
			for i, q := range qs {
				want, _, werr := e.Search(q, Options{})
				if (werr == nil) != (out[i].Err == nil) {
					t.Fatalf("workers %d query %d: err %v, want %v", workers, i, out[i].Err, werr)
				}
				if _, ok := sameResults(out[i].Results, want); !ok {
					t.Fatalf("workers %d query %d: results differ", workers, i)
				}
			}
		}
		if err := b.SearchBatch(context.Background(), qs, Options{}, out[:3]); err == nil {
			t.Error("mismatched lengths accepted")
		}
		if err := b.SearchBatch(context.Background(), qs, Options{OrAlgo: "x"}, out); !errors.Is(err, ErrBadStrategy) {
			t.Errorf("bad options: %v", err)
		}
		// WithBetween's function runs before each of a worker's
		// queries but its first: len(qs) less one per worker that ran
		// any; the answers are the same.
		var calls atomic.Int64
		hctx := WithBetween(context.Background(), func() bool { calls.Add(1); return false })
		if err := b.SearchBatch(hctx, qs, Options{}, out); err != nil {
			t.Fatal(err)
		}
		if c := int(calls.Load()); c < len(qs)-workers || c > len(qs)-1 {
			t.Errorf("workers %d: the between function ran %d times for %d queries", workers, c, len(qs))
		}
		for i, q := range qs {
			if want, _, _ := e.Search(q, Options{}); !sameAs(out[i].Results, want) {
				t.Fatalf("workers %d query %d: results differ with a between function", workers, i)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := b.SearchBatch(ctx, qs, Options{}, out); !errors.Is(err, context.Canceled) || !errors.Is(out[len(out)-1].Err, context.Canceled) {
			t.Errorf("cancelled batch: %v / %v", err, out[len(out)-1].Err)
		}
	}
}

// corruptBlock overwrites the bytes of one encoded block of the loaded index
// in place (List.DocBlock/FreqBlock alias the index's memory), simulating
// damage that the section checksums did not catch, and returns a function
// that restores them.
func corruptBlock(b []byte, f func(i int) byte) (restore func()) {
	saved := append([]byte(nil), b...)
	for i := range b {
		b[i] = f(i)
	}
	return func() { copy(b, saved) }
}

// TestCorruptBlocksAreErrors damages the first docID block, then the first
// frequency block, of a list and expects every mode and strategy to return
// an error wrapping index.ErrCorrupt.
func TestCorruptBlocksAreErrors(t *testing.T) {
	x, col := smallIndex(t, "vbyte", 2000, 16, 8)
	e := New(x)
	tid := 10
	l, _ := x.List(tid)
	term := col.Terms[tid]
	for _, what := range []string{"docs", "freqs"} {
		blk := l.DocBlock(0)
		if what == "freqs" {
			blk = l.FreqBlock(0)
		}
		restore := corruptBlock(blk, func(int) byte { return 0xff }) // unterminated varints
		for _, opt := range allOptions() {
			for _, mode := range []Mode{And, Or, AndOr} {
				for _, terms := range [][]string{{term}, {term, col.Terms[12]}} {
					_, _, err := e.Search(Query{Terms: terms, Mode: mode, K: 1}, opt)
					if mode == And && len(terms) > 1 && err == nil {
						continue // the intersection may end before the damaged block's frequencies are needed
					}
					if !errors.Is(err, index.ErrCorrupt) {
						t.Errorf("%s damaged, %v %+v %q: error %v", what, mode, opt, terms, err)
					}
				}
			}
		}
		restore()
		if _, _, err := e.Search(Query{Terms: []string{term}, Mode: Or, K: 1}, Options{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCorruptionNeverPanics flips random bytes of random blocks for every
// codec and runs every mode and strategy: the engine must return (an error
// or results), never panic or hang.
func TestCorruptionNeverPanics(t *testing.T) {
	for _, codec := range compress.All() {
		t.Run(codec.Name(), func(t *testing.T) {
			x, col := smallIndex(t, codec.Name(), 1500, 8, int64(codec.ID()))
			e := New(x)
			rng := rand.New(rand.NewSource(int64(codec.ID())))
			for trial := 0; trial < 25; trial++ {
				tid := rng.Intn(len(col.Terms))
				l, _ := x.List(tid)
				b := rng.Intn(l.NBlocks)
				blk := l.DocBlock(b)
				if rng.Intn(2) == 0 {
					blk = l.FreqBlock(b)
				}
				if len(blk) == 0 {
					continue
				}
				pos, val := rng.Intn(len(blk)), byte(rng.Intn(256))
				restore := corruptBlock(blk, func(i int) byte {
					if i == pos {
						return val
					}
					return blk[i]
				})
				terms := []string{col.Terms[tid], col.Terms[rng.Intn(len(col.Terms))], col.Terms[rng.Intn(6)]}
				for _, opt := range allOptions() {
					for _, mode := range []Mode{And, Or, AndOr} {
						func() {
							defer func() {
								if r := recover(); r != nil {
									t.Fatalf("panic with %s block %d of term %d damaged, %v %+v: %v", codec.Name(), b, tid, mode, opt, r)
								}
							}()
							_, _, err := e.Search(Query{Terms: terms, Mode: mode, K: 10}, opt)
							if err != nil && !errors.Is(err, index.ErrCorrupt) {
								t.Fatalf("error does not wrap index.ErrCorrupt: %v", err)
							}
							checkTAATClean(t, e)
						}()
					}
				}
				restore()
			}
		})
	}
}

// checkTAATClean fails unless e's TAAT accumulator and bitset are all
// zero, as every query must leave them (also one that failed).
func checkTAATClean(t *testing.T, e *Engine) {
	t.Helper()
	if i := slices.IndexFunc(e.acc, func(a float32) bool { return a != 0 }); i >= 0 {
		t.Fatalf("accumulator of document %d left at %v", i, e.acc[i])
	}
	if i := slices.IndexFunc(e.bits, func(w uint64) bool { return w != 0 }); i >= 0 {
		t.Fatalf("bitset word %d left at %#x", i, e.bits[i])
	}
}

func TestModeString(t *testing.T) {
	if And.String() != "and" || AndOr.String() != "andor" || !strings.HasPrefix(Mode(0).String(), "Mode(") {
		t.Error("Mode.String")
	}
}

// TestAndSkipLazyCursors: an AND whose two shortest lists have no common
// docID decodes only their blocks (the third list's cursor is never
// reset), and its stats count none of the blocks that an earlier query's
// cursors decoded.
func TestAndSkipLazyCursors(t *testing.T) {
	x, col := smallIndex(t, "bp128", 3000, 64, 5)
	long := 0
	for i := range col.Docs {
		if len(col.Docs[i]) > len(col.Docs[long]) {
			long = i
		}
	}
	disjoint := func(a, b []uint32) bool {
		for _, d := range a {
			if _, ok := slices.BinarySearch(b, d); ok {
				return false
			}
		}
		return true
	}
	ta, tb := -1, -1
	for i := range col.Docs {
		for j := i + 1; j < len(col.Docs) && ta < 0; j++ {
			if n := len(col.Docs[long]); len(col.Docs[i]) < n/2 && len(col.Docs[j]) < n/2 && disjoint(col.Docs[i], col.Docs[j]) {
				ta, tb = i, j
			}
		}
	}
	if ta < 0 {
		t.Fatal("no two disjoint short lists")
	}
	e := New(x)
	// An earlier query leaves every cursor with decode counts.
	if _, _, err := e.Search(Query{Terms: col.Terms, Mode: Or, K: 10}, Options{OrAlgo: OrMaxScore, OrTAATPostings: NoTAAT}); err != nil {
		t.Fatal(err)
	}
	res, st, err := e.Search(Query{Terms: []string{col.Terms[long], col.Terms[ta], col.Terms[tb]}, Mode: And, K: 10}, Options{AndAlgo: AndSkip})
	if err != nil {
		t.Fatal(err)
	}
	la, _ := x.List(ta)
	lb, _ := x.List(tb)
	if len(res) != 0 || st.BlocksDecoded < 1 || st.BlocksDecoded > int64(la.NBlocks+lb.NBlocks) {
		t.Errorf("AND of disjoint terms %d, %d and the long %d: %d results, %d blocks decoded (lists of %d and %d blocks)", ta, tb, long, len(res), st.BlocksDecoded, la.NBlocks, lb.NBlocks)
	}
}

// sameAs reports whether got equals want (sameResults).
func sameAs(got, want []topk.Result) bool {
	_, ok := sameResults(got, want)
	return ok
}
