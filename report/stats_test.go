package report

import (
	"testing"
	"time"
)

// TestPercentile: nearest rank on edge cases; p99 of 100 samples is the
// 99th (the definition the CLI's old pctl broke, which gave the 100th).
func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i + 1)
	}
	for _, c := range []struct {
		vals []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{[]time.Duration{7}, 0, 7},
		{[]time.Duration{7}, 0.99, 7},
		{[]time.Duration{7}, 1, 7},
		{[]time.Duration{1, 2}, 0.5, 1},
		{[]time.Duration{1, 2}, 0.51, 2},
		{[]time.Duration{1, 2, 3, 4}, 0.5, 2},
		{[]time.Duration{1, 2, 3, 4}, 0.75, 3},
		{[]time.Duration{1, 2, 3, 4}, 0.76, 4},
		{hundred, 0.99, 99},
		{hundred, 0.95, 95},
		{hundred, 0.50, 50},
		{hundred, 1, 100},
		{hundred, 0, 1},
		{hundred, -1, 1},
		{hundred, 2, 100},
	} {
		if got := Percentile(c.vals, c.q); got != c.want {
			t.Errorf("Percentile(%d values, %v) = %v, want %v", len(c.vals), c.q, got, c.want)
		}
	}
	if got := Percentile([]float64{0.5, 1.5, 2.5}, 0.5); got != 1.5 {
		t.Errorf("float64 median %v", got)
	}
}
