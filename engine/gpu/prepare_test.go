package gpu

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/querylog"
)

// TestPrepareRange: prepareRange (several queries' terms looked up in one
// call) prepares every query as prepare does alone: the same terms (each
// with its backend's termInfo), flags, statistics and errors, for queries of 1-8 terms (repeated and
// absent ones, QTF or not), empty queries, invalid k, and queries of more
// terms than a lookup group (prepGroupTerms), at every range start. No
// device: preparation reads only the index.
func TestPrepareRange(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	col := genCollection(rng, 2000, 300, 128, false)
	b := hostBackend(col.bp128(t))
	terms := randomQueries(rng, col.terms, 600, nil)
	qs := make([]engine.Query, len(terms))
	for i, ts := range terms {
		qs[i] = engine.Query{ID: fmt.Sprint(i), Terms: ts, Mode: engine.Mode(i % 3), K: 10, QTF: i%5 == 0}
		switch i % 97 {
		case 3:
			qs[i].Terms = nil // empty
		case 5:
			qs[i].K = 0 // invalid
		case 7, 8: // more than a group: alone
			for len(qs[i].Terms) <= prepGroupTerms {
				qs[i].Terms = append(qs[i].Terms, ts...)
			}
		case 9: // exactly a group
			qs[i].Terms = nil
			for len(qs[i].Terms) < prepGroupTerms {
				qs[i].Terms = append(qs[i].Terms, col.terms[rng.Intn(len(col.terms))])
			}
		}
	}
	want, wantErr := make([]prep, len(qs)), make([]error, len(qs))
	for i := range qs {
		want[i].i = i
		wantErr[i] = b.prepare(&want[i], nil, &qs[i])
	}
	for _, lo := range []int{0, 1, 7, 63} {
		got, gotErr := make([]prep, len(qs)), make([]error, len(qs))
		b.prepareRange(got, gotErr, qs, lo, len(qs), nil)
		for i := lo; i < len(qs); i++ {
			g, w := &got[i], &want[i]
			if g.i != w.i || g.q != w.q || g.unknown != w.unknown || g.st != w.st || !reflect.DeepEqual(g.terms, w.terms) {
				t.Fatalf("from %d, query %d %q: prepareRange %+v, prepare %+v", lo, i, qs[i].Terms, *g, *w)
			}
			for _, q := range g.terms {
				if q.ti != b.info[q.id] || q.df != b.info[q.id].df {
					t.Fatalf("query %d, term %d: termInfo %+v, df %d; the backend's %+v", i, q.id, q.ti, q.df, b.info[q.id])
				}
			}
			if fmt.Sprint(gotErr[i]) != fmt.Sprint(wantErr[i]) {
				t.Fatalf("from %d, query %d: error %v, prepare's %v", lo, i, gotErr[i], wantErr[i])
			}
		}
	}
	var bad, alone int
	for i := range qs {
		if wantErr[i] != nil {
			bad++
		}
		if len(qs[i].Terms) > prepGroupTerms {
			alone++
		}
	}
	if bad == 0 || alone == 0 {
		t.Fatalf("the test's queries lack a case: %d invalid, %d longer than a group", bad, alone)
	}
}

// TestPrepareRangeLooked: queries that carry their terms looked up in the
// backend's index (engine.Query.Dict, qp serve's) are prepared as prepare
// prepares them without it, in runs of their own and mixed with queries
// looked up here, at every range start; a Dict for another index (here
// wrong: term 0 everywhere) is ignored; and a Dict is used, not looked up again (a Dict naming other
// terms prepares those).
func TestPrepareRangeLooked(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	col := genCollection(rng, 2000, 300, 128, false)
	b := hostBackend(col.bp128(t))
	other := col.bp128(t) // an equal index, another *index.Index
	terms := randomQueries(rng, col.terms, 400, nil)
	qs := make([]engine.Query, len(terms))
	for i, ts := range terms {
		qs[i] = engine.Query{ID: fmt.Sprint(i), Terms: ts, Mode: engine.Mode(i % 3), K: 10, QTF: i%5 == 0}
		if i%41 == 3 {
			qs[i].Terms = append(qs[i].Terms, "absent-term")
		}
		if i%53 == 7 { // more than a group
			for len(qs[i].Terms) <= prepGroupTerms {
				qs[i].Terms = append(qs[i].Terms, ts...)
			}
		}
	}
	want, wantErr := make([]prep, len(qs)), make([]error, len(qs))
	for i := range qs {
		want[i].i = i
		wantErr[i] = b.prepare(&want[i], nil, &qs[i])
	}
	looked := 0
	for i := range qs {
		// Runs of looked-up queries (i/7 odd), single ones, and some looked up in the other index.
		x := b.x
		if i%11 == 0 {
			x = other
		}
		if (i/7)%2 == 1 || i%13 == 0 {
			d := &engine.TermLookup{X: x, IDs: make([]int, len(qs[i].Terms)), DFs: make([]uint32, len(qs[i].Terms))}
			x.LookupDictDF(qs[i].Terms, d.IDs, d.DFs)
			qs[i].Dict = d
			if x == b.x {
				looked++
			} else { // wrong IDs, which must not be read
				clear(d.IDs)
				clear(d.DFs)
			}
		}
	}
	if looked < len(qs)/3 {
		t.Fatalf("only %d queries looked up", looked)
	}
	for _, lo := range []int{0, 1, 7, 63} {
		got, gotErr := make([]prep, len(qs)), make([]error, len(qs))
		b.prepareRange(got, gotErr, qs, lo, len(qs), nil)
		for i := lo; i < len(qs); i++ {
			g, w := &got[i], &want[i]
			if g.i != w.i || g.q != &qs[i] || g.unknown != w.unknown || g.st != w.st || !reflect.DeepEqual(g.terms, w.terms) {
				t.Fatalf("from %d, query %d %q: prepareRange %+v, prepare without Dict %+v", lo, i, qs[i].Terms, *g, *w)
			}
			if fmt.Sprint(gotErr[i]) != fmt.Sprint(wantErr[i]) {
				t.Fatalf("from %d, query %d: error %v, prepare's %v", lo, i, gotErr[i], wantErr[i])
			}
		}
	}
	// A Dict is what the preparation reads: one naming the first two terms
	// of the dictionary prepares those.
	q := engine.Query{Terms: []string{"x", "y"}, Mode: engine.Or, K: 10,
		Dict: &engine.TermLookup{X: b.x, IDs: []int{0, 1}, DFs: []uint32{b.x.Record(0).DF, b.x.Record(1).DF}}}
	var p [1]prep
	var e [1]error
	b.prepareRange(p[:], e[:], []engine.Query{q}, 0, 1, nil)
	if e[0] != nil || len(p[0].terms) != 2 || p[0].unknown {
		t.Fatalf("a Dict of terms 0 and 1: %+v, %v", p[0], e[0])
	}
	for _, pt := range p[0].terms {
		if pt.id != 0 && pt.id != 1 {
			t.Fatalf("a Dict of terms 0 and 1 prepared term %d", pt.id)
		}
	}
}

// hostBackend is a Backend with only what the host preparation reads: x
// and a termInfo per term (df from the dictionary, max a distinct value).
func hostBackend(x *index.Index) *Backend {
	b := &Backend{x: x, info: make([]termInfo, x.NumTerms())}
	for t := range b.info {
		b.info[t] = termInfo{df: x.Record(t).DF, nb: uint32(t), max: float32(t) + 0.5}
	}
	return b
}

// TestPrepareRangeAllocs: a warm range allocates nothing (the preps keep
// their scratch).
func TestPrepareRangeAllocs(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	col := genCollection(rng, 2000, 300, 128, false)
	b := hostBackend(col.bp128(t))
	terms := randomQueries(rng, col.terms, 300, nil)
	qs := make([]engine.Query, len(terms))
	for i, ts := range terms {
		qs[i] = engine.Query{ID: fmt.Sprint(i), Terms: ts, Mode: engine.And, K: 10}
	}
	preps, errs := make([]prep, len(qs)), make([]error, len(qs))
	var arena termArena
	sc := prepScratch{arena: &arena}
	run := func() {
		arena.reset()
		sc.cur = nil
		b.prepareRange(preps, errs, qs, 0, len(qs), &sc)
	}
	run()
	if a := testing.AllocsPerRun(5, run); a != 0 {
		t.Errorf("prepareRange: %v allocations, want 0", a)
	}
}

// BenchmarkPrepareRange: a batch's preparation on one core, each query
// looked up alone (prepare: "each") against several queries' terms per
// lookup (prepareRange: "grouped"), the two alternating pass by pass in
// one loop (paired: a loaded machine's drift hits both): each-ns/query,
// grouped-ns/query and their ratio grouped/each; and, third in the loop,
// the same queries carrying their terms looked up (engine.Query.Dict, qp
// serve's): looked-ns/query and looked/grouped. No device.
// QP_HOSTPREP_INDEX and QP_HOSTPREP_QUERIES as for BenchmarkHostPrep
// (e.g. GCIDE and the TREC 2006 efficiency log: its first 4,500 queries);
// otherwise a 20,000-document collection of 1,000 terms.
func BenchmarkPrepareRange(b *testing.B) {
	var x *index.Index
	var terms [][]string
	if path := os.Getenv("QP_HOSTPREP_INDEX"); path != "" {
		var err error
		if x, err = index.Open(path); err != nil {
			b.Fatal(err)
		}
		if terms, err = querylog.FirstAnalyzed(x, os.Getenv("QP_HOSTPREP_QUERIES"), 4500); err != nil {
			b.Fatal(err)
		}
	} else {
		rng := rand.New(rand.NewSource(41))
		col := genCollection(rng, 20000, 1000, 128, false)
		x = col.bp128(b)
		terms = randomQueries(rng, col.terms, 4500, nil)
	}
	x.BuildLookup()
	g := hostBackend(x)
	qs := make([]engine.Query, len(terms))
	for i, t := range terms {
		qs[i] = engine.Query{ID: fmt.Sprint(i), Terms: t, Mode: engine.And, K: 10}
	}
	// The same queries carrying their terms looked up (engine.Query.Dict,
	// as qp serve hands them over): prepareRange without its lookups.
	looked := slices.Clone(qs)
	for i := range looked {
		q := &looked[i]
		q.Dict = &engine.TermLookup{X: x, IDs: make([]int, len(q.Terms)), DFs: make([]uint32, len(q.Terms))}
		x.LookupDictDF(q.Terms, q.Dict.IDs, q.Dict.DFs)
	}
	preps, errs := make([]prep, len(qs)), make([]error, len(qs))
	var each, grouped, dict time.Duration
	var arena termArena
	sc := prepScratch{arena: &arena}
	fresh := func() *prepScratch { // a batch's start (prepareBatch)
		arena.reset()
		sc.cur = nil
		return &sc
	}
	for b.Loop() {
		t0 := time.Now()
		fresh()
		for i := range qs {
			preps[i].i = i
			errs[i] = g.prepare(&preps[i], &sc, &qs[i])
		}
		t1 := time.Now()
		g.prepareRange(preps, errs, qs, 0, len(qs), fresh())
		t2 := time.Now()
		g.prepareRange(preps, errs, looked, 0, len(qs), fresh())
		t3 := time.Now()
		each, grouped, dict = each+t1.Sub(t0), grouped+t2.Sub(t1), dict+t3.Sub(t2)
	}
	for i := range errs {
		if errs[i] != nil {
			b.Fatalf("query %d: %v", i, errs[i])
		}
	}
	n := float64(b.N) * float64(len(qs))
	b.ReportMetric(float64(each.Nanoseconds())/n, "each-ns/query")
	b.ReportMetric(float64(grouped.Nanoseconds())/n, "grouped-ns/query")
	b.ReportMetric(float64(grouped)/float64(each), "grouped/each")
	b.ReportMetric(float64(dict.Nanoseconds())/n, "looked-ns/query")
	b.ReportMetric(float64(dict)/float64(grouped), "looked/grouped")
}

// TestPrepareBatchAllocs (gpuhost5): a batch prepared on warm buffers
// allocates nothing per query: its terms go into the buffers' arena, the
// canonical-order scratch is the preparing goroutine's. On one preparing
// goroutine (no goroutines started) it allocates at most its closures; a
// batch of twice the queries allocates no more. No device.
func TestPrepareBatchAllocs(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	col := genCollection(rng, 2000, 300, 128, false)
	b := hostBackend(col.bp128(t))
	b.SetPrepareCores(1)
	terms := randomQueries(rng, col.terms, 2000, nil)
	qs := make([]engine.Query, len(terms))
	for i, ts := range terms {
		qs[i] = engine.Query{ID: fmt.Sprint(i), Terms: ts, Mode: engine.Mode(1 + i%3), K: 10}
	}
	out := make([]engine.Response, len(qs))
	bb := b.bufs.get(len(qs))
	defer b.bufs.put(bb)
	allocs := func(n int) float64 {
		b.prepareBatch(bb, qs[:n], out[:n])
		return testing.AllocsPerRun(5, func() { b.prepareBatch(bb, qs[:n], out[:n]) })
	}
	half, all := allocs(len(qs)/2), allocs(len(qs))
	if half > 4 || all > half {
		t.Errorf("warm prepareBatch: %v allocations for %d queries, %v for %d; want at most 4, not growing with the batch", half, len(qs)/2, all, len(qs))
	}
	// On fresh buffers (a process's first batch) the allocations are the
	// buffers' and the arena's blocks, not per query (before gpuhost5:
	// each query's terms and canonical-order scratch, 2 or more a query).
	cold := testing.AllocsPerRun(3, func() {
		var pool bufPool
		fresh := pool.get(len(qs))
		b.prepareBatch(fresh, qs, out)
	})
	if cold > float64(len(qs)/50) { // about 20 (more under -race)
		t.Errorf("prepareBatch on fresh buffers: %v allocations for %d queries, want at most %d", cold, len(qs), len(qs)/50)
	}
	// The arena's windows are disjoint: rewriting one query's terms
	// leaves every other query's as prepare makes them.
	b.prepareBatch(bb, qs, out)
	for i := range bb.preps[:len(qs)] {
		p := &bb.preps[i]
		if cap(p.terms) != len(p.terms) {
			t.Fatalf("query %d: terms window of capacity %d for %d terms", i, cap(p.terms), len(p.terms))
		}
		for j := range p.terms {
			p.terms[j].id = -1 - i
		}
	}
	for i := range bb.preps[:len(qs)] {
		for _, pt := range bb.preps[i].terms {
			if pt.id != -1-i {
				t.Fatalf("query %d: a term overwritten by query %d's", i, -1-pt.id)
			}
		}
	}
}

// TestResultsGrow: results grows an empty slice once, and a slice with
// room not at all.
func TestResultsGrow(t *testing.T) {
	keys := make([]uint64, 10)
	for i := range keys {
		keys[i] = uint64(^math.Float32bits(float32(10-i)))<<32 | uint64(i)
	}
	if a := testing.AllocsPerRun(10, func() { _ = results(nil, keys) }); a != 1 {
		t.Errorf("results into an empty slice: %v allocations, want 1", a)
	}
	dst := results(nil, keys)
	if len(dst) != 10 || dst[3].Doc != 3 || dst[3].Score != 7 {
		t.Fatalf("results: %v", dst)
	}
	if a := testing.AllocsPerRun(10, func() { dst = results(dst[:0], keys) }); a != 0 {
		t.Errorf("results into a slice with room: %v allocations, want 0", a)
	}
}

// TestPrepareBatchOrder: prepareBatch's work list (its parallel counting
// sort, gpuhost5) is the queries that need the device, stably by term
// count: as slices.SortStableFunc orders them, on one goroutine and on
// several, with and without a query of prepSortKeys or more terms (the
// serial sort's path); the others are answered in out. Each prepared
// query's postings are its lists' (summed once, prep.post). No device.
func TestPrepareBatchOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	col := genCollection(rng, 2000, 300, 128, false)
	b := hostBackend(col.bp128(t))
	terms := randomQueries(rng, col.terms, 3000, nil)
	qs := make([]engine.Query, len(terms))
	for i, ts := range terms {
		qs[i] = engine.Query{ID: fmt.Sprint(i), Terms: ts, Mode: engine.Mode(1 + i%3), K: 10}
		switch i % 101 {
		case 3:
			qs[i].K = 0 // invalid: answered with an error
		case 5:
			qs[i].Terms = append(qs[i].Terms, "absent-term") // AND: answered empty
		}
	}
	long := slices.Clone(col.terms[:prepSortKeys+3])
	out := make([]engine.Response, len(qs))
	for _, workers := range []int{1, 3} {
		for _, withLong := range []bool{false, true} {
			b.SetPrepareCores(workers)
			qs[1234].Terms = terms[1234]
			if withLong {
				qs[1234].Terms = long
			}
			bb := b.bufs.get(len(qs))
			work := b.prepareBatch(bb, qs, out)
			var want []int
			for i := range qs {
				p := &bb.preps[i]
				var post int64
				for _, pt := range p.terms {
					post += int64(pt.df)
				}
				if p.post != post || p.postings() != post {
					t.Fatalf("query %d: post %d, postings %d; want %d", i, p.post, p.postings(), post)
				}
				if s := (prep{terms: p.terms}); s.postings() != post { // a prep made otherwise
					t.Fatalf("query %d: postings of an unsummed prep %d, want %d", i, s.postings(), post)
				}
				if engine.Validate(qs[i], "gpu") == nil && (p.runsAnd() || (p.q.Mode != engine.And && len(p.terms) > 0)) {
					want = append(want, i)
				} else if len(out[i].Results) != 0 || (out[i].Err != nil) != (qs[i].K == 0) {
					t.Fatalf("workers %d, long %v: query %d not in the work list: answer %+v", workers, withLong, i, out[i])
				}
			}
			slices.SortStableFunc(want, func(x, y int) int { return len(bb.preps[x].terms) - len(bb.preps[y].terms) })
			got := make([]int, len(work))
			for j, p := range work {
				got[j] = p.i
			}
			if !slices.Equal(got, want) {
				t.Fatalf("workers %d, long %v: work order differs from the stable sort by term count (%d and %d queries)", workers, withLong, len(got), len(want))
			}
			if withLong && len(bb.preps[1234].terms) < prepSortKeys {
				t.Fatalf("the long query has %d terms", len(bb.preps[1234].terms))
			}
			b.bufs.put(bb)
		}
	}
}
