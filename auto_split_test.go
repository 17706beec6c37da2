package qp

import (
	"context"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
)

// splitFakes are fakes() with a clock per processor: a split batch runs
// its two parts at once, so its time is the longer part's.
func splitFakes() (cpuClk, gpuClk *vclock, cpu, gpu *fakeProc, r *router) {
	_, cpu, gpu = fakes()
	cpuClk, gpuClk = &vclock{t: time.Unix(0, 0)}, &vclock{t: time.Unix(0, 0)}
	cpu.clk, gpu.clk = cpuClk, gpuClk
	r = newRouter(cpu, gpu, 16)
	r.clock = [2]func() time.Time{cpuClk.now, gpuClk.now}
	return
}

// batchTimes runs one batch through r and returns how far each clock
// moved, checking every query's answer.
func batchTimes(t *testing.T, r *router, cpuClk, gpuClk *vclock, qs []engine.Query) (dc, dg time.Duration) {
	t.Helper()
	c0, g0 := cpuClk.now(), gpuClk.now()
	out := make([]engine.Response, len(qs))
	if err := r.SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if out[i].Err != nil || len(out[i].Results) != 1 || out[i].Results[0].Doc != uint32(i) {
			t.Fatalf("query %d answered %+v", i, out[i])
		}
	}
	return cpuClk.now().Sub(c0), gpuClk.now().Sub(g0)
}

// TestRouterSplit: batches of 16,384 queries, once both processors are
// measured, run on both at once; the GPU's share settles where both parts
// take the same time (the fakes' cost model solved for it), and a split
// batch then takes less than the faster processor alone would, in a mode
// the CPU wins (AND) and one the GPU wins (OR).
func TestRouterSplit(t *testing.T) {
	const n = 16384
	for _, m := range []engine.Mode{engine.And, engine.Or} {
		t.Run(m.String(), func(t *testing.T) {
			cpuClk, gpuClk, cpu, gpu, r := splitFakes()
			qs := queriesOf(n, m)
			var dc, dg time.Duration
			for range 30 {
				dc, dg = batchTimes(t, r, cpuClk, gpuClk, qs)
			}
			st := &r.modes[m].splits
			if st.batches < 20 || st.off {
				t.Fatalf("%d of 30 batches split (off %v):\n%s", st.batches, st.off, r.routing())
			}
			// Balanced: fixed + ng·per_g = ⌈(n-ng)/16⌉·per_c.
			pc, pg := cpu.per[m].Seconds(), gpu.per[m].Seconds()
			ng := (float64(n)*pc/16 - gpu.fixed.Seconds()) / (pg + pc/16)
			if want := ng / n; st.share < want-0.03 || st.share > want+0.03 {
				t.Errorf("GPU share %.3f, want %.3f ± 0.03:\n%s", st.share, want, r.routing())
			}
			alone := min(cpu.cost(m, n), gpu.cost(m, n))
			if wall := max(dc, dg); wall >= alone {
				t.Errorf("a split batch took %v (cpu part %v, gpu part %v), the faster alone %v", wall, dc, dg, alone)
			}
			t.Logf("split %v against %v alone; %s", max(dc, dg), alone, r.routing())
		})
	}
}

// TestRouterSplitStops: when the CPU's part becomes ten times slower than
// the router measured it alone (a machine suddenly shared), split batches
// take longer than the faster processor's measured time and the mode stops
// splitting after maxStrikes of them; every answer stays right.
func TestRouterSplitStops(t *testing.T) {
	cpuClk, gpuClk, cpu, _, r := splitFakes()
	qs := queriesOf(16384, engine.And)
	for range 20 {
		batchTimes(t, r, cpuClk, gpuClk, qs)
	}
	st := &r.modes[engine.And].splits
	if st.batches == 0 || st.off {
		t.Fatalf("no split before the slowdown (%d batches, off %v):\n%s", st.batches, st.off, r.routing())
	}
	cpu.slow = 10
	for range 10 {
		batchTimes(t, r, cpuClk, gpuClk, qs)
	}
	if !st.off {
		t.Errorf("still splitting after the CPU became 10× slower:\n%s", r.routing())
	}
}

// TestRouterSplitSmall: a batch below minSplit is not split, and a router
// with splitting off never splits.
func TestRouterSplitSmall(t *testing.T) {
	cpuClk, gpuClk, _, _, r := splitFakes()
	for range 20 {
		batchTimes(t, r, cpuClk, gpuClk, queriesOf(minSplit-1, engine.Or))
	}
	if b := r.modes[engine.Or].splits.batches; b != 0 {
		t.Errorf("%d batches of %d queries split", b, minSplit-1)
	}
	cpuClk, gpuClk, _, _, r = splitFakes()
	r.split = false
	for range 20 {
		batchTimes(t, r, cpuClk, gpuClk, queriesOf(16384, engine.Or))
	}
	if b := r.modes[engine.Or].splits.batches; b != 0 {
		t.Errorf("splitting off: %d batches split", b)
	}
}
