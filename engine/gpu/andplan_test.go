package gpu

import (
	"context"
	"fmt"
	"math/rand"
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
	want := make([]engine.Response, len(qs))
	if err := engine.NewCPU(x, 0).SearchBatch(context.Background(), qs, engine.Options{}, want); err != nil {
		t.Fatal(err)
	}
	for _, stale := range []bool{false, true} {
		g.ResetProfile()
		out := make([]engine.Response, len(qs))
		bb := g.bufs.get(len(qs))
		work := g.prepareBatch(bb, qs, out)
		g.planBatch(bb, work)
		if bb.plan.cfg == nil {
			t.Fatal("planBatch made no plan")
		}
		if stale {
			g.SetThreshold(512)
		}
		if err := g.runBatch(context.Background(), bb, work, 0, out); err != nil {
			t.Fatal(err)
		}
		early := bb.plan.res.flushed
		g.finishPending(&bb.plan.res, out)
		g.bufs.put(bb)
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
