package index

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIncMin compares incMin with a plain loop for every length up to 40
// (the unrolled body and its tail), with and without a wrapping 2^32-1 at
// every position.
func TestIncMin(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for n := 0; n <= 40; n++ {
		for wrap := -1; wrap < n; wrap++ {
			fs := make([]uint32, n)
			for i := range fs {
				fs[i] = r.Uint32N(1000)
			}
			if wrap >= 0 {
				fs[wrap] = math.MaxUint32
			}
			want := make([]uint32, n)
			wmin := uint32(math.MaxUint32)
			for i, v := range fs {
				want[i] = v + 1
				wmin = min(wmin, v+1)
			}
			got := incMin(fs)
			if got != wmin {
				t.Fatalf("n %d wrap %d: minimum %d, want %d", n, wrap, got, wmin)
			}
			for i := range fs {
				if fs[i] != want[i] {
					t.Fatalf("n %d wrap %d: value %d is %d, want %d", n, wrap, i, fs[i], want[i])
				}
			}
			if (wrap >= 0) != (got == 0) {
				t.Fatalf("n %d wrap %d: minimum %d", n, wrap, got)
			}
		}
	}
}

func BenchmarkIncMin(b *testing.B) {
	fs := make([]uint32, 128)
	for i := range fs {
		fs[i] = uint32(i % 7)
	}
	for b.Loop() {
		for i := range fs {
			fs[i] &= 7
		}
		incMin(fs)
	}
}
