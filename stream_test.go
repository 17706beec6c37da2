package qp

import (
	"slices"
	"testing"
)

// TestChunkPlan: the plan covers every query once, no chunk exceeds max,
// sizes rise by 4× from first to max and fall back symmetrically, and
// first >= max gives fixed chunks.
func TestChunkPlan(t *testing.T) {
	cases := []struct {
		n, first, max int
		want          []int
	}{
		{0, 1024, 65536, nil},
		{100, 1024, 65536, []int{100}},
		{1500, 1024, 65536, []int{1024, 476}},
		{100000, 1024, 65536, []int{1024, 4096, 16384, 56992, 16384, 4096, 1024}},
		{300000, 1024, 65536, []int{1024, 4096, 16384, 65536, 65536, 65536, 60384, 16384, 4096, 1024}},
		{10, 4, 4, []int{4, 4, 2}},
		{20, 1, 8, []int{1, 4, 8, 2, 4, 1}},
	}
	for _, c := range cases {
		got := chunkPlan(c.n, c.first, c.max)
		if !slices.Equal(got, c.want) {
			t.Errorf("chunkPlan(%d, %d, %d) = %v, want %v", c.n, c.first, c.max, got, c.want)
		}
	}
	for n := range 3000 {
		for _, fm := range [][2]int{{1, 1}, {3, 50}, {16, 1000}, {1024, 65536}} {
			plan, sum := chunkPlan(n, fm[0], fm[1]), 0
			for _, s := range plan {
				if s < 1 || s > fm[1] {
					t.Fatalf("chunkPlan(%d, %d, %d) = %v: chunk %d", n, fm[0], fm[1], plan, s)
				}
				sum += s
			}
			if sum != n {
				t.Fatalf("chunkPlan(%d, %d, %d) = %v covers %d queries", n, fm[0], fm[1], plan, sum)
			}
		}
	}
}
