package scheduler

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestBatchModelConverges: batches of random sizes whose times are
// 5 ms + 20 µs per query with ±10% noise; from a prior 10× off, the
// online refit's fixed part and time per query come within 5% of the
// truth, and its prediction error within the noise.
func TestBatchModelConverges(t *testing.T) {
	const fixed, per = 5 * time.Millisecond, 20 * time.Microsecond
	m := NewBatchModel(10*fixed, 10*per)
	rng := rand.New(rand.NewPCG(4, 5))
	for range 400 {
		n := 1 + rng.IntN(1000)
		wall := float64(fixed + time.Duration(n)*per)
		m.Observe(n, time.Duration(wall*(0.9+0.2*rng.Float64())))
	}
	f, q := m.Params()
	if math.Abs(f.Seconds()/fixed.Seconds()-1) > 0.05 || math.Abs(q.Seconds()/per.Seconds()-1) > 0.05 {
		t.Errorf("fit %v + %v per query, want %v + %v within 5%%", f, q, fixed, per)
	}
	if p := m.Predict(500); math.Abs(p.Seconds()/(fixed+500*per).Seconds()-1) > 0.05 {
		t.Errorf("predicts %v for 500 queries, want %v within 5%%", p, fixed+500*per)
	}
	// The error over all 400 includes the first, prior-driven, predictions.
	if e, n := m.MeanRelError(); n != 400 || e > 0.2 {
		t.Errorf("mean error %.3f over %d batches", e, n)
	}
	if m.Batches() != 400 {
		t.Errorf("%d batches observed, want 400", m.Batches())
	}
}

// TestBatchModelDrift: the model follows a GPU that becomes twice as slow
// per query (another load on it) within a few windows of batches.
func TestBatchModelDrift(t *testing.T) {
	m := NewBatchModel(0, 0)
	rng := rand.New(rand.NewPCG(6, 7))
	for i := range 600 {
		per := 10 * time.Microsecond
		if i >= 200 {
			per = 20 * time.Microsecond
		}
		n := 10 + rng.IntN(500)
		m.Observe(n, time.Millisecond+time.Duration(n)*per)
	}
	if _, q := m.Params(); math.Abs(q.Seconds()/20e-6-1) > 0.02 {
		t.Errorf("time per query %v after the drift, want 20µs", q)
	}
}

// TestBatchModelDegenerate: without a prior it predicts 0; batches of a
// single size determine only the time per query (a line through the
// origin), never a negative or NaN parameter; a clone is independent.
func TestBatchModelDegenerate(t *testing.T) {
	m := NewBatchModel(0, 0)
	if m.Predict(100) != 0 {
		t.Fatalf("untrained model predicts %v", m.Predict(100))
	}
	for range 10 {
		m.Observe(100, 10*time.Millisecond)
	}
	f, q := m.Params()
	if f != 0 || q != 100*time.Microsecond {
		t.Errorf("one batch size: %v + %v per query, want 0 + 100µs", f, q)
	}
	c := m.Clone()
	c.Observe(1000, time.Second)
	if _, q2 := m.Params(); q2 != q {
		t.Errorf("observing into a clone changed the original: %v, was %v", q2, q)
	}
	// Times falling with size (noise) give a positive time per query (a
	// line through the origin), never 0: that would admit any batch.
	m2 := NewBatchModel(0, 0)
	m2.Observe(10, 5*time.Millisecond)
	m2.Observe(1000, 4*time.Millisecond)
	if f, q := m2.Params(); q <= 0 || f != 0 {
		t.Errorf("falling times: %v + %v per query, want 0 + a positive time", f, q)
	}
}

// TestHostShare: a process whose GPU side uses 3 cores while the GPU is
// busy (its busy fraction varying), beside CPU slots busy 0-8 cores, is
// measured at 3 cores at full load from a prior of 1; windows where the
// host is saturated (16 cores used, the GPU side starved to 1) are not
// learned; the CPU cap on 16 cores is then 13.
func TestHostShare(t *testing.T) {
	var used time.Duration
	h := newHostShare(16, 1, func() (time.Duration, bool) { return used, true })
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	h.restart(now)
	rng := rand.New(rand.NewPCG(8, 9))
	for i := range 400 {
		busy := time.Duration(20+rng.IntN(20)) * time.Millisecond // a window each
		span := busy + time.Duration(rng.IntN(10))*time.Millisecond
		if i%4 == 0 { // saturated
			used += busy + 15*span
			h.cpuDone(15 * span)
		} else {
			slots := time.Duration(rng.IntN(9))
			used += 3*busy + slots*span
			h.cpuDone(slots * span)
		}
		now = now.Add(span)
		h.gpuDone(now, busy)
	}
	if d := h.demand(); math.Abs(d-3) > 0.1 {
		t.Errorf("demand %.2f cores, want 3", d)
	}
	if c := cpuSlotCap(16, h.demand(), 16); c != 13 {
		t.Errorf("CPU cap %d, want 13", c)
	}
	for _, c := range []struct {
		cores  int
		demand float64
		slots  int
		want   int
	}{{16, 1.02, 16, 15}, {16, 0, 16, 16}, {16, 2.5, 8, 8}, {4, 9, 4, 0}} {
		if got := cpuSlotCap(c.cores, c.demand, c.slots); got != c.want {
			t.Errorf("cpuSlotCap(%d, %v, %d) = %d, want %d", c.cores, c.demand, c.slots, got, c.want)
		}
	}
}

func TestParsePlacement(t *testing.T) {
	for _, p := range []Placement{PlaceCost, PlaceGPUFirst} {
		if got, err := ParsePlacement(p.String()); err != nil || got != p {
			t.Errorf("ParsePlacement(%q) = %v, %v", p, got, err)
		}
	}
	if _, err := ParsePlacement("fastest"); err == nil {
		t.Error("ParsePlacement accepted an unknown name")
	}
	if st, err := ParseSetup("cpu+gpu-first"); err != nil || st != ParallelGPUFirst || st.String() != "cpu+gpu-first" {
		t.Errorf("ParseSetup(cpu+gpu-first) = %v, %v", st, err)
	}
}

// TestGPUFirstBatchLimit: with the GPU measured at 10 ms + 1 ms per query
// and a 100 ms deadline at target 0.5, a GPU batch holds at most 40
// queries; the GPU's ETA for the 81st query in its queue is after three
// batches.
func TestGPUFirstBatchLimit(t *testing.T) {
	x := testIndex(t)
	bm := NewBatchModel(0, 0)
	for n := 1; n <= 100; n += 9 {
		bm.Observe(n, 10*time.Millisecond+time.Duration(n)*time.Millisecond)
	}
	clk := newManualClock()
	s, err := newScheduler(x, Config{
		CPU:       &Processor{Backend: nopBackend{}, Slots: 1},
		GPU:       &Processor{Backend: nopBackend{}, Slots: 1, Batch: BatchPolicy{MaxQueries: 1000}, BatchModel: bm},
		Deadline:  100 * time.Millisecond,
		Placement: PlaceGPUFirst, TargetFraction: 0.5, Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.budgetLimit(); n != 40 {
		t.Errorf("batch limit %d, want 40", n)
	}
	e := s.eta(s.procs[GPU], clk.Now())
	want := clk.Now().Add(3*10*time.Millisecond + 81*time.Millisecond)
	if d := e.finish(80).Sub(want); d < -time.Microsecond || d > time.Microsecond { // the fit's rounding
		t.Errorf("81st query finishes at %v, want %v", e.finish(80).Sub(clk.Now()), want.Sub(clk.Now()))
	}
}

// TestSpareBatch: the head of the GPU's queue the CPU leaves alone is the
// batch whose fixed part is 1/(1+k) of its time (k = SpareFixed), at most
// the batch the GPU forms; none with k = 0 or an unknown time per query.
func TestSpareBatch(t *testing.T) {
	for _, c := range []struct {
		k          float64
		fixed, per time.Duration
		batch      float64
		want       int
	}{
		{3, 900 * time.Microsecond, 1200 * time.Nanosecond, 5000, 2250},
		{3, 900 * time.Microsecond, 1200 * time.Nanosecond, 1000, 1000},
		{1, 10 * time.Millisecond, 3 * time.Microsecond, 1e9, 3334},
		{0, 900 * time.Microsecond, 1200 * time.Nanosecond, 5000, 0},
		{3, 900 * time.Microsecond, 0, 5000, 0},
	} {
		s := &Scheduler{cfg: Config{SpareFixed: c.k}}
		e := gpuETA{fixed: c.fixed, per: c.per, batch: c.batch}
		if got := s.spareBatch(&e); got != c.want {
			t.Errorf("k %v, fixed %v, per %v, batch %v: spare %d, want %d", c.k, c.fixed, c.per, c.batch, got, c.want)
		}
	}
}

// TestGPUFirstPipelinedBatchTime: with two GPU slots a batch dispatched
// before the previous one came back is learned at its marginal time (the
// time since the previous batch came back), not its wall time, which
// includes its wait for the device; a batch dispatched after it is
// learned at its wall time, and so is every batch of a one-slot GPU.
func TestGPUFirstPipelinedBatchTime(t *testing.T) {
	x := testIndex(t)
	for _, slots := range []int{1, 2} {
		clk := newManualClock()
		s, err := newScheduler(x, Config{Clock: clk, Placement: PlaceGPUFirst,
			GPU: &Processor{Backend: nopBackend{}, Slots: slots, Batch: BatchPolicy{MaxQueries: 100}, BatchModel: NewBatchModel(0, 0)}})
		if err != nil {
			t.Fatal(err)
		}
		g := s.procs[GPU]
		mk := func(n int, wall time.Duration) *batch {
			return &batch{p: g, jobs: make([]*job, n), start: clk.Now(), wall: wall}
		}
		// Batch a (10 queries) runs 4 ms; b (10 queries) is dispatched 1 ms
		// after a and comes back 3 ms after it, wall 6 ms.
		a := mk(10, 4*time.Millisecond)
		clk.Advance(time.Millisecond)
		b := mk(10, 6*time.Millisecond)
		clk.Advance(3 * time.Millisecond)
		s.gpuFinished(a)
		clk.Advance(3 * time.Millisecond)
		s.gpuFinished(b)
		// c starts after b came back: its wall time.
		c := mk(10, 3*time.Millisecond)
		clk.Advance(3 * time.Millisecond)
		s.gpuFinished(c)
		// The model through the origin (one batch size): the mean time
		// (the recent batches weigh a little more: within 2%).
		want := (4 + 6 + 3) * time.Millisecond / 3
		if slots == 2 {
			want = (4 + 3 + 3) * time.Millisecond / 3
		}
		if got := s.gf.bm.Predict(10); math.Abs(got.Seconds()/want.Seconds()-1) > 0.02 {
			t.Errorf("%d slots: predicts %v for 10 queries, want %v", slots, got, want)
		}
	}
}
