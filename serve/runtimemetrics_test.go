package serve

import (
	"math"
	rm "runtime/metrics"
	"testing"
)

// TestRebucket: a runtime histogram's buckets count in the first bound at
// or above their upper edge (cumulatively), those past the last bound only
// in the total, and the sum is estimated from bucket midpoints (the lower
// edge for the unbounded last bucket, the upper for an unbounded first).
func TestRebucket(t *testing.T) {
	h := &rm.Float64Histogram{
		Buckets: []float64{math.Inf(-1), 0.001, 0.002, 0.004, 0.05, math.Inf(1)},
		Counts:  []uint64{1, 2, 3, 0, 4},
	}
	count, sum, cum := rebucket(h, []float64{0.001, 0.003, 0.01})
	if count != 10 {
		t.Errorf("count %d, want 10", count)
	}
	// (-inf, 1 ms] → 1 ms; (1, 2] → 3 ms; (2, 4] → 10 ms; (4, 50] → 10 ms
	// (none); (50, inf) → +Inf only.
	want := map[float64]uint64{0.001: 1, 0.003: 3, 0.01: 6}
	for b, n := range want {
		if cum[b] != n {
			t.Errorf("bucket le=%v: %d, want %d (all %v)", b, cum[b], n, cum)
		}
	}
	if len(cum) != 3 {
		t.Errorf("%d buckets, want 3", len(cum))
	}
	wantSum := 1*0.001 + 2*0.0015 + 3*0.003 + 4*0.05
	if math.Abs(sum-wantSum) > 1e-12 {
		t.Errorf("sum %v, want %v", sum, wantSum)
	}
	// The server's own buckets: ascending, 68 of them, factor 1.2 within
	// the rounding.
	if len(latencyBuckets) != 68 || latencyBuckets[0] != 0.0001 {
		t.Fatalf("latency buckets %v", latencyBuckets)
	}
	for i := 1; i < len(latencyBuckets); i++ {
		if r := latencyBuckets[i] / latencyBuckets[i-1]; r < 1.19 || r > 1.21 {
			t.Errorf("bucket %d: %v / %v = %v, want 1.2", i, latencyBuckets[i], latencyBuckets[i-1], r)
		}
	}
}
