package report

import (
	"cmp"
	"math"
)

// Percentile is qp's one percentile definition, the nearest-rank
// q-quantile of sorted (ascending) values: the element of 1-based rank
// ceil(q·n), clamped to 1..n, so that q = 0.5 of 4 values is the 2nd, q = 0.99
// of 100 values the 99th (not the maximum), q = 1 the maximum and q <= 0
// the minimum. It returns the zero value for no values. Every latency
// table (bench query, query --summary, the scheduler's replay, collstats)
// uses it, so their p50/p95/p99 agree.
func Percentile[T cmp.Ordered](sorted []T, q float64) T {
	if len(sorted) == 0 {
		var zero T
		return zero
	}
	return sorted[Rank(len(sorted), q)]
}

// Rank is the 0-based index Percentile reads: ceil(q·n) - 1 clamped to
// [0, n-1] (n >= 1).
func Rank(n int, q float64) int {
	r := int(math.Ceil(q*float64(n))) - 1
	return min(max(r, 0), n-1)
}
