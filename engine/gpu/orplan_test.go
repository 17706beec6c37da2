package gpu

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// TestPlannedOr: pure-OR batches are planned and converted off the owner
// goroutine (orplan.go) with the CPU's results: whole and tiled queries
// in one launch and over several launch sets, downloads that outgrow the
// batch's arena (K = 1000: converted early, on the owner), candidate
// slots that overflow (orCapMin 1: those queries rerun on the owner), a
// plan whose configuration changed before the batch took the device
// (dropped: the owner plans). Every query that ran reports its set's time.
func TestPlannedOr(t *testing.T) {
	c := testContext(t)
	rng := rand.New(rand.NewSource(78))
	col := genCollection(rng, 3000, 40, 16, false)
	x := col.bp128(t)
	nq := 40
	if emulated(c) {
		nq = 16
	}
	var qs []engine.Query
	for i, ts := range randomQueries(rng, col.terms, nq, nil) {
		for _, k := range []int{1, 10, 1000} {
			qs = append(qs, engine.Query{ID: fmt.Sprintf("q%d/k%d", i, k), Terms: ts, Mode: engine.Or, K: k})
		}
	}
	want := cpuAnswers(t, x, qs)
	for _, tc := range []struct {
		name    string
		opt     Options
		capMin  int
		stale   bool
		minSets int64
	}{
		{name: "one set", opt: Options{BitmapDensity: 1.0 / 8}, minSets: 1},
		{name: "sets", opt: Options{OrThreshold: 20000, orTile: 512, BitmapDensity: 1.0 / 8}, minSets: 2},
		{name: "overflow", opt: Options{OrThreshold: 20000, orTile: 128, orNoWhole: true}, capMin: 1, minSets: 2},
		{name: "stale", opt: Options{OrThreshold: 20000}, stale: true, minSets: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.capMin > 0 {
				saved := orCapMin
				orCapMin = tc.capMin
				t.Cleanup(func() { orCapMin = saved })
			}
			g := newBackend(t, x, tc.opt)
			var change func() error
			if tc.stale {
				change = func() error { return g.SetOr(OrTiled) } // the same strategy, a new snapshot
			}
			out, early := runPlanned(t, g, qs, change)
			for i := range qs {
				if msg := sameResponse(out[i], want[i]); msg != "" {
					t.Fatalf("query %s: %s", qs[i].ID, msg)
				}
				if len(want[i].Results) > 0 && (out[i].Stats.Time <= 0 || out[i].Stats.OrAlgo != OrGPU || out[i].Stats.Candidates == 0) {
					t.Fatalf("query %s: stats %+v, want its set's time, the GPU's OR and candidates", qs[i].ID, out[i].Stats)
				}
			}
			p := g.Profile()
			switch {
			case p.Sets < tc.minSets:
				t.Errorf("%d sets, want at least %d", p.Sets, tc.minSets)
			case tc.stale && p.PlannedSets != 0:
				t.Errorf("stale plan: %d sets ran on it", p.PlannedSets)
			case !tc.stale && p.PlannedSets != p.Sets:
				t.Errorf("%d of %d sets planned off the owner", p.PlannedSets, p.Sets)
			case !tc.stale && tc.minSets > 1 && early == 0:
				t.Errorf("no download converted early (K = 1000 should outgrow the arena)")
			}
			t.Logf("%d sets, %d planned, %d converted early, %d whole queries", p.Sets, p.PlannedSets, early, p.OrWholeQueries)
			// The same batch through SearchBatch, twice (warm buffers).
			compare(t, x, g, qs)
			compare(t, x, g, qs)
		})
	}
}

// TestPlannedOrCorrupt: a planned pure-OR set that meets a damaged block
// fails (its pending downloads dropped), is halved and retried on the
// owner's path; the error lands on
// the queries of the damaged term only, the others get the CPU's results.
func TestPlannedOrCorrupt(t *testing.T) {
	testContext(t)
	rng := rand.New(rand.NewSource(6))
	col := genCollection(rng, 3000, 12, 32, false)
	x := col.bp128(t)
	tid := damageMiddleBlock(t, x, 1<<30, "docID values")
	term := x.Term(tid)
	var qs []engine.Query
	for i := range x.NumTerms() {
		qs = append(qs, engine.Query{ID: fmt.Sprint(i), Terms: []string{x.Term(i), x.Term((i + 3) % x.NumTerms())}, Mode: engine.Or, K: 10})
	}
	for _, whole := range []bool{true, false} {
		g := newBackend(t, x, Options{orNoWhole: !whole})
		got, want := searchBoth(t, x, g, qs)
		for i, q := range qs {
			if slices.Contains(q.Terms, term) {
				if !errors.Is(got[i].Err, index.ErrCorrupt) {
					t.Errorf("whole %v: query %s %q: error %v, want index.ErrCorrupt", whole, q.ID, q.Terms, got[i].Err)
				}
			} else if msg := sameResponse(got[i], want[i]); msg != "" {
				t.Errorf("whole %v: query %s %q: %s", whole, q.ID, q.Terms, msg)
			}
		}
		if p := g.Profile(); p.Sets < 3 {
			t.Errorf("whole %v: %d sets: want the planned set and its halves", whole, p.Sets)
		}
	}
}

// TestPlannedAndOr: sets with AND+OR queries (alone, and mixed with AND
// and OR queries) get their AND part planned off the owner and their
// downloads converted after the device, with the CPU's results: several
// sets, early conversions (K = 1000), bitmap-AND queries, unknown terms
// (AND+OR queries that skip AND), and each OR strategy (the tiled one's
// downloads pending, the others' converted on the owner).
func TestPlannedAndOr(t *testing.T) {
	c := testContext(t)
	rng := rand.New(rand.NewSource(79))
	col := genCollection(rng, 3000, 40, 16, false)
	x := col.bp128(t)
	nq := 30
	if emulated(c) {
		nq = 12
	}
	terms := randomQueries(rng, col.terms, nq, [][]string{{col.terms[0], "nosuchterm"}, {"nosuchterm"}})
	var qs, mixed []engine.Query
	for i, ts := range terms {
		for _, k := range []int{10, 1000} {
			qs = append(qs, engine.Query{ID: fmt.Sprintf("q%d/k%d", i, k), Terms: ts, Mode: engine.AndOr, K: k})
			mixed = append(mixed, engine.Query{ID: fmt.Sprintf("q%d/k%d", i, k), Terms: ts, Mode: []engine.Mode{engine.And, engine.Or, engine.AndOr}[(i+k)%3], K: k})
		}
	}
	for _, tc := range []struct {
		name string
		opt  Options
		qs   []engine.Query
	}{
		{"andor", Options{Threshold: 300, BitmapDensity: 1.0 / 8}, qs},
		{"andor bitmap-and", Options{Threshold: 300, BitmapDensity: 1.0 / 8, BitmapAnd: BitmapAndOn}, qs},
		{"mixed", Options{Threshold: 300, BitmapDensity: 1.0 / 8}, mixed},
		{"andor maxscore", Options{Threshold: 300, Or: OrMaxScore}, qs},
		{"andor dense", Options{Threshold: 300, Or: OrDense}, qs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newBackend(t, x, tc.opt)
			got, want := searchBoth(t, x, g, tc.qs)
			for i, q := range tc.qs {
				if msg := sameResponse(got[i], want[i]); msg != "" {
					t.Fatalf("query %s %v %q: %s", q.ID, q.Mode, q.Terms, msg)
				}
				if len(want[i].Results) > 0 && got[i].Stats.Time <= 0 {
					t.Fatalf("query %s: time %v, want its set's", q.ID, got[i].Stats.Time)
				}
			}
			if p := g.Profile(); p.Sets < 2 || p.PlannedSets != p.Sets {
				t.Errorf("%d of %d sets planned off the owner, want all of at least 2", p.PlannedSets, p.Sets)
			}
		})
	}
}

// TestPlanOrLaunchChunks (gpuplan3): planOrLaunch sums a launch's records
// in chunks of orChunk and fillOrLaunch writes each chunk from its start,
// on several goroutines. A pure-OR batch of several chunks, whole and
// tiled queries interleaved, some with top-k scratch (k > 4096), planned
// on one goroutine and on three: the same uploads, orders and candidate
// slots, and every query's QMeta, scratch offset and (tiled) OQuery are
// the running sums of a serial reference over the launch's order (whole
// queries first, then tiled ones, each in the batch's order). Then the
// batch runs (GPU or emulator) with the CPU's results.
func TestPlanOrLaunchChunks(t *testing.T) {
	c := testContext(t)
	rng := rand.New(rand.NewSource(91))
	col := genCollection(rng, 3000, 40, 16, false)
	x := col.bp128(t)
	g := newBackend(t, x, Options{BitmapDensity: 1.0 / 8})
	var qs []engine.Query
	for i, ts := range randomQueries(rng, col.terms, 3*orChunk+37, nil) {
		k := 10
		if i%211 == 0 {
			k = 5000 // top-k scratch
		}
		qs = append(qs, engine.Query{ID: fmt.Sprint(i), Terms: ts, Mode: engine.Or, K: k})
	}
	out := make([]engine.Response, len(qs))
	type launch struct {
		up     []uint32
		order  []*prep
		caps   []int
		nw, nt int
	}
	oc := g.orConsts()
	var ref []launch
	for _, workers := range []int{1, 3} {
		bp, release := planOn(t, g, qs, out, workers)
		var got []launch
		for i := range bp.orl {
			ol := &bp.orl[i]
			l := launch{order: slices.Concat(ol.whole.qs, ol.tiled.qs), caps: slices.Clone(ol.tiled.caps), nw: ol.whole.nq, nt: ol.tiled.nq}
			if ol.whole.nq > 0 {
				l.up = append(l.up, ol.whole.up.u32(ol.whole.upAt, ol.whole.size/4)...)
				checkOrPart(t, ol.whole.up, ol.whole.upAt+ol.whole.oMeta, ol.whole.upAt+ol.whole.oScr, -1, ol.whole.qs, nil, nil)
			}
			if ol.tiled.nq > 0 {
				l.up = append(l.up, ol.tiled.up.u32(ol.tiled.upAt, ol.tiled.size/4)...)
				checkOrPart(t, ol.tiled.up, ol.tiled.upAt+ol.tiled.oMeta, ol.tiled.upAt+ol.tiled.oScr, ol.tiled.upAt+ol.tiled.oOq, ol.tiled.qs, ol.tiled.caps, oc.cap)
			}
			// The launch's order: its queries (a range of the batch's
			// work list), the whole ones first, each part in work order.
			var want []*prep
			for _, whole := range []bool{true, false} {
				for _, p := range ol.qs {
					if oc.runsWhole(p) == whole {
						want = append(want, p)
					}
				}
			}
			if !slices.Equal(l.order, want) {
				t.Fatalf("%d goroutines, launch %d: the order is not whole then tiled in the batch's order", workers, i)
			}
			got = append(got, l)
		}
		if len(got) != 1 || got[0].nw == 0 || got[0].nt == 0 || got[0].nw+got[0].nt <= 2*orChunk {
			t.Fatalf("launches %d (whole, tiled %d, %d): want one of several chunks with both parts", len(got), got[0].nw, got[0].nt)
		}
		if workers == 1 {
			ref = got
		} else {
			for i := range got {
				if !slices.Equal(got[i].up, ref[i].up) || !slices.Equal(got[i].caps, ref[i].caps) ||
					len(got[i].order) != len(ref[i].order) {
					t.Fatalf("%d goroutines, launch %d: the upload differs from one goroutine's", workers, i)
				}
				for a := range got[i].order {
					if got[i].order[a].i != ref[i].order[a].i {
						t.Fatalf("%d goroutines, launch %d: query %d is batch query %d, one goroutine's %d", workers, i, a,
							got[i].order[a].i, ref[i].order[a].i)
					}
				}
			}
		}
		release()
	}
	g.SetPrepareCores(0)
	if emulated(c) && testing.Short() {
		return
	}
	compare(t, x, g, qs)
}

// checkOrPart checks the QMetas (at byte offset oMeta of up), scratch
// offsets (oScr) and, for a tiled part (oOq >= 0), the OQuerys and
// candidate slots caps (each capOf its query) of the OR launch part qs
// against running sums over qs.
func checkOrPart(t *testing.T, up *pinned, oMeta, oScr, oOq int, qs []*prep, caps []int, capOf func(*prep) int) {
	t.Helper()
	meta, scr := up.u32(oMeta, 4*len(qs)), up.u64(oScr, len(qs))
	var oq []uint32
	if oOq >= 0 {
		oq = up.u32(oOq, 4*len(qs))
	}
	toff, res, sw, coff := 0, 0, 0, 0
	for a, p := range qs {
		wantScr := 0
		if p.q.K > 4096 {
			wantScr = sw
			sw += pow2(p.q.K)
		}
		if m := meta[4*a : 4*a+4]; int(m[0]) != len(p.terms) || int(m[1]) != toff || int(m[2]) != p.q.K || int(m[3]) != res || int(scr[a]) != wantScr {
			t.Fatalf("query %d: QMeta %v scratch %d, want [%d %d %d %d] %d", a, m, scr[a], len(p.terms), toff, p.q.K, res, wantScr)
		}
		if oq != nil {
			c := caps[a]
			if c != capOf(p) || c <= 0 {
				t.Fatalf("query %d: %d candidate slots, want %d", a, c, capOf(p))
			}
			if w := oq[4*a : 4*a+4]; int(w[0]) != toff || int(w[1]) != c || int(w[2]) != coff {
				t.Fatalf("query %d: OQuery %v, want [%d %d %d 0]", a, w, toff, c, coff)
			}
			coff += c
		}
		toff += len(p.terms)
		res += p.q.K
	}
}

// TestOrLaunchCuts (gpuplan3): OR work beyond one launch's accumulator
// budget is cut into several launches, from the queries' records, by
// planBatch (pure-OR sets: planOrSet) and on the owner (the OR part of
// AND+OR sets: runOrBudget), with the CPU's results; the small budget
// makes more launches than the default one.
func TestOrLaunchCuts(t *testing.T) {
	c := testContext(t)
	rng := rand.New(rand.NewSource(93))
	col := genCollection(rng, 3000, 40, 16, false)
	x := col.bp128(t)
	nq := 40
	if emulated(c) {
		nq = 16
	}
	terms := randomQueries(rng, col.terms, nq, nil)
	for _, mode := range []engine.Mode{engine.Or, engine.AndOr} {
		var qs []engine.Query
		for i, ts := range terms {
			for _, k := range []int{1, 10, 100} {
				qs = append(qs, engine.Query{ID: fmt.Sprintf("q%d/k%d", i, k), Terms: ts, Mode: mode, K: k})
			}
		}
		launches := make([]int64, 2)
		for i, budget := range []int64{0, 4000} {
			g := newBackend(t, x, Options{AccumulatorBytes: budget, BitmapDensity: 1.0 / 8})
			compare(t, x, g, qs)
			p := g.Profile()
			if p.PlannedSets != p.Sets {
				t.Errorf("%v, budget %d: %d of %d sets planned off the owner", mode, budget, p.PlannedSets, p.Sets)
			}
			launches[i] = p.Launches
		}
		if launches[1] <= launches[0] {
			t.Errorf("%v: %d launches with a budget of 4000 bytes, %d with the default: want more", mode, launches[1], launches[0])
		}
		t.Logf("%v: launches %d (default budget), %d (4000 bytes)", mode, launches[0], launches[1])
	}
}
