package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFlattenBits compares flattenBits with a bit-by-bit scan on bitsets of
// every density, including words with one, two, odd and all 64 bits set,
// and checks that it leaves the bitset zeroed.
func TestFlattenBits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, density := range []float64{0, 0.001, 0.05, 0.3, 0.5, 0.9, 1} {
		for _, words := range []int{0, 1, 2, 5, 40} {
			bs := make([]uint64, words)
			var want []uint32
			for d := 0; d < 64*words; d++ {
				if r.Float64() < density {
					bs[d>>6] |= 1 << (d & 63)
					want = append(want, uint32(d))
				}
			}
			dst := make([]uint32, len(want)+1)
			n := flattenBits(dst, bs)
			if !slices.Equal(dst[:n], want) {
				t.Fatalf("density %v, %d words: got %v, want %v", density, words, dst[:n], want)
			}
			if i := slices.IndexFunc(bs, func(w uint64) bool { return w != 0 }); i >= 0 {
				t.Fatalf("density %v, %d words: word %d left %#x", density, words, i, bs[i])
			}
		}
	}
	// Single words with 1, 2 and 3 bits at the extremes.
	for _, word := range []uint64{1, 1 << 63, 1<<63 | 1, 1<<63 | 1<<62 | 1} {
		var want []uint32
		for b := 0; b < 64; b++ {
			if word&(1<<b) != 0 {
				want = append(want, uint32(64+b))
			}
		}
		dst := make([]uint32, len(want)+1)
		n := flattenBits(dst, []uint64{0, word})
		if !slices.Equal(dst[:n], want) {
			t.Fatalf("word %#x: got %v, want %v", word, dst[:n], want)
		}
	}
}
