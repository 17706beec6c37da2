package qp

import "testing"

// TestGrainSize: a continuous stream's workers take streamGrain queries at
// once in the default chunks, fewer where a chunk would give each worker
// less than 64 grains, and at least one.
func TestGrainSize(t *testing.T) {
	for _, c := range []struct{ chunk, workers, want int }{
		{DefaultChunk, 16, streamGrain}, {DefaultChunk, 2, streamGrain}, {DefaultChunk, 128, 2},
		{384, 3, 2}, {3072, 3, 16}, {64, 3, 1}, {1, 1, 1}, {100, 0, 1},
	} {
		if got := grainSize(c.chunk, c.workers); got != c.want {
			t.Errorf("grainSize(%d, %d) = %d, want %d", c.chunk, c.workers, got, c.want)
		}
	}
}
