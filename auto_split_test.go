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
			for i := range 30 {
				dc, dg = batchTimes(t, r, cpuClk, gpuClk, qs)
				if i == 0 && r.modes[m].splits.batches != 0 {
					// The size is first answered alone: the reference
					// a split is judged against (fasterAlone).
					t.Fatalf("the first batch was split:\n%s", r.routing())
				}
			}
			st := &r.modes[m].splits
			if st.batches < 20 {
				t.Fatalf("%d of 30 batches split:\n%s", st.batches, r.routing())
			}
			// Balanced: fixed + ng·per_g = ⌈(n-ng)/16⌉·per_c.
			pc, pg := cpu.per[m].Seconds(), gpu.per[m].Seconds()
			ng := (float64(n)*pc/16 - gpu.fixed.Seconds()) / (pg + pc/16)
			if want := ng / n; st.share < want-0.03 || st.share > want+0.03 {
				t.Errorf("GPU share %.3f, want %.3f ± 0.03:\n%s", st.share, want, r.routing())
			}
			alone := min(cpu.cost(m, n), gpu.cost(m, n))
			if split := time.Duration(st.per * n * 1e9); split >= alone {
				t.Errorf("a split batch takes %v, the faster alone %v:\n%s", split, alone, r.routing())
			}
			t.Logf("last batch: cpu %v, gpu %v; faster alone %v; %s", dc, dg, alone, r.routing())
		})
	}
}

// TestRouterSplitLoses: while split batches take longer per query than
// the faster processor alone, only one batch in retryEvery is split (and
// one in probeEvery runs alone even while splitting wins).
func TestRouterSplitLoses(t *testing.T) {
	for _, c := range []struct {
		per  float64 // the split's time per query (µs); the CPU alone takes 1
		want int     // batches of 80 split
	}{
		{1.5, 3},  // the 20th, 40th and 60th (the 80th is a probe)
		{0.7, 75}, // all but the 16th, 32nd, 48th, 64th and 80th
	} {
		_, _, _, _, r := splitFakes()
		m := &r.modes[engine.Or]
		b := bucketOf(16384)
		m.cost[procCPU][b], m.size[procCPU][b] = 1e-6, 16384
		m.cost[procGPU][b], m.size[procGPU][b] = 2e-6, 16384
		m.splits.share, m.splits.per = 0.3, c.per*1e-6
		split := 0
		for range 80 {
			if r.splitShare(int(engine.Or), 16384) > 0 {
				split++
			}
		}
		if split != c.want {
			t.Errorf("split at %.1f µs per query against 1 µs alone: %d of 80 batches split, want %d", c.per, split, c.want)
		}
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
