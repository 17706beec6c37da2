package gpu

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/qpengine/qp/engine"
)

// TestPlannedAnd: pure-AND batches are planned and converted off the
// owner goroutine (andplan.go) with the CPU's results, over several launch
// sets whose downloads outgrow the batch's arena (K = 1000: converted
// early, on the owner); a plan whose configuration changed before the
// batch took the device is dropped and the sets are planned on the owner.
// Every query that ran reports its set's time.
func TestPlannedAnd(t *testing.T) {
	c := testContext(t)
	rng := rand.New(rand.NewSource(77))
	col := genCollection(rng, 3000, 40, 16, false)
	x := col.bp128(t)
	nq := 60
	if emulated(c) {
		nq = 24
	}
	var qs []engine.Query
	for i, ts := range randomQueries(rng, col.terms, nq, nil) {
		for _, k := range []int{10, 1000} {
			qs = append(qs, engine.Query{ID: fmt.Sprintf("q%d/k%d", i, k), Terms: ts, Mode: engine.And, K: k})
		}
	}
	g := newBackend(t, x, Options{Threshold: 256, BitmapDensity: 1.0 / 8})
	compare(t, x, g, qs)
	p := g.Profile()
	if p.Sets < 2 || p.PlannedSets != p.Sets {
		t.Fatalf("%d of %d sets planned off the owner, want all of at least 2", p.PlannedSets, p.Sets)
	}

	// By hand: the early conversion, and a stale plan.
	want := cpuAnswers(t, x, qs)
	for _, stale := range []bool{false, true} {
		g.ResetProfile()
		var change func() error
		if stale {
			change = func() error { g.SetThreshold(512); return nil }
		}
		out, early := runPlanned(t, g, qs, change)
		for i := range qs {
			if msg := sameResponse(out[i], want[i]); msg != "" {
				t.Fatalf("stale %v: query %s: %s", stale, qs[i].ID, msg)
			}
			// Its set's time (from the pending set since gpuhost5).
			if len(want[i].Results) > 0 && out[i].Stats.Time <= 0 {
				t.Fatalf("stale %v: query %s: time %v, want its set's", stale, qs[i].ID, out[i].Stats.Time)
			}
		}
		p := g.Profile()
		switch {
		case stale && p.PlannedSets != 0:
			t.Errorf("stale plan: %d sets ran on it", p.PlannedSets)
		case !stale && (p.PlannedSets != p.Sets || early == 0):
			t.Errorf("%d of %d sets planned off the owner, %d converted early; want all, > 0", p.PlannedSets, p.Sets, early)
		}
	}
}

// runPlanned runs qs through g by hand, as SearchBatch does with a plan
// made off the owner: prepareBatch, planBatch (which must plan), then
// change when not nil (between the plan and the device: a stale plan),
// runBatch and finishPending. It returns the responses and how many sets
// were converted early (on the owner, their downloads outgrowing the
// arena).
func runPlanned(t *testing.T, g *Backend, qs []engine.Query, change func() error) ([]engine.Response, int) {
	t.Helper()
	out := make([]engine.Response, len(qs))
	bb := g.bufs.get(len(qs))
	defer g.bufs.put(bb)
	work := g.prepareBatch(bb, qs, out)
	g.planBatch(bb, work)
	if bb.plan.cfg == nil {
		t.Fatal("planBatch made no plan")
	}
	if change != nil {
		if err := change(); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.runBatch(context.Background(), bb, work, 0, out); err != nil {
		t.Fatal(err)
	}
	early := bb.plan.res.flushed
	g.finishPending(&bb.plan.res, out)
	return out, early
}

// TestPlanBatchParallel (gpuhost5): planBatch's launch sets of more than
// one sortChunk of queries are planned and filled on several goroutines
// (countingSortPar, querySlots' and fillPlan's running sums) into the
// same upload bytes as on one: the order by steps, QMeta, QTerm, the
// scratch offsets and the Segs. Nothing runs on the device (the arena is
// pinned host memory).
func TestPlanBatchParallel(t *testing.T) {
	testContext(t)
	defer func(m int) { minScanWorkers = m }(minScanWorkers)
	minScanWorkers = 2
	rng := rand.New(rand.NewSource(78))
	col := genCollection(rng, 3000, 60, 16, false)
	x := col.bp128(t)
	g := newBackend(t, x, Options{Threshold: 1 << 30, BitmapDensity: 1.0 / 8})
	var qs []engine.Query
	for i, ts := range randomQueries(rng, col.terms, 3*sortChunk, nil) {
		k := 10
		if i%997 == 0 {
			k = 5000 // top-k scratch
		}
		qs = append(qs, engine.Query{ID: fmt.Sprint(i), Terms: ts, Mode: engine.And, K: k})
	}
	out := make([]engine.Response, len(qs))
	var ref [][]uint32
	for _, workers := range []int{1, 2} {
		bp, release := planOn(t, g, qs, out, workers)
		var got [][]uint32
		big := false
		for s := range bp.plans {
			if pl := &bp.plans[s]; pl.nq > 0 {
				big = big || pl.nq > sortChunk
				got = append(got, slices.Clone(pl.up.u32(pl.upAt, pl.upSize/4)))
			}
		}
		if !big {
			t.Fatalf("no planned set of more than %d queries", sortChunk)
		}
		if workers == 1 {
			ref = got
		} else if !slices.EqualFunc(got, ref, slices.Equal) {
			t.Fatalf("%d goroutines: the upload differs from one goroutine's", workers)
		}
		release()
	}
}

// planOn prepares and plans qs (answers of the queries that need no
// device in out) on workers goroutines, in buffers of their own; planBatch
// must plan. It returns the plan and the function that frees the buffers.
func planOn(t *testing.T, g *Backend, qs []engine.Query, out []engine.Response, workers int) (*batchPlan, func()) {
	t.Helper()
	g.SetPrepareCores(workers)
	pool := new(bufPool)
	bb := pool.get(len(qs))
	g.planBatch(bb, g.prepareBatch(bb, qs, out))
	if bb.plan.cfg == nil {
		t.Fatal("planBatch made no plan")
	}
	return &bb.plan, func() { pool.put(bb); pool.close() }
}
