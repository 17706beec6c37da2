package compress

import (
	"math/rand/v2"
	"testing"
)

// TestBP128Docs128 compares BP128Docs128 with its scalar twin (and
// BP128Plus1x128 with the values plus one) on random
// blocks of every width (values up to the width's maximum, bases near 0 and
// near 2^32 so that the 32-bit vector sums wrap where the 64-bit ones pass
// 2^32), and checks that it declines the blocks it does not cover.
func TestBP128Docs128(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for w := uint(0); w <= 32; w++ {
		for _, base := range []uint32{0, 1, 1000, 1 << 31, 1<<32 - 1, 1<<32 - 200000} {
			for rep := 0; rep < 20; rep++ {
				var vals [128]uint32
				for i := range vals {
					if w > 0 {
						vals[i] = uint32(r.Uint64() & (1<<w - 1))
						if rep%3 == 0 {
							vals[i] = uint32(1<<w - 1) // all ones: the largest sums
						}
					}
				}
				packed := packAppend(nil, vals[:], w)
				data := append(packed, make([]byte, 16)...)[:len(packed)]
				var got, want [128]uint32
				wantLast := bp128Docs128Go(&want, data, w, base)
				last, ok := BP128Docs128(&got, data, w, base)
				covered := haveDocsSIMD && w >= 1 && w <= bp128DocsMaxWidth
				if ok != covered {
					t.Fatalf("w %d: ok %v, want %v", w, ok, covered)
				}
				if !ok {
					if w == 0 {
						var plus [128]uint32
						if !BP128Plus1x128(&plus, data, 0) || plus[0] != 1 || plus[127] != 1 {
							t.Fatalf("w 0: BP128Plus1x128 %v", plus)
						}
					}
					continue
				}
				if last != wantLast || got != want {
					t.Fatalf("w %d base %d: last %d (want %d), docs %v, want %v", w, base, last, wantLast, got, want)
				}
				var plus [128]uint32
				if !BP128Plus1x128(&plus, data, w) {
					t.Fatalf("w %d: BP128Plus1x128 declined", w)
				}
				for i := range plus {
					if plus[i] != vals[i]+1 {
						t.Fatalf("w %d: BP128Plus1x128 value %d = %d, want %d", w, i, plus[i], vals[i]+1)
					}
				}
			}
		}
	}
	// Without the readable bytes past the block, it declines.
	var out [128]uint32
	data := make([]byte, 16*5)
	if _, ok := BP128Docs128(&out, data, 5, 0); ok || BP128Plus1x128(&out, data, 5) {
		t.Fatal("decoded a block without the readable bytes after it that the vector loads take")
	}
}

// TestBP128Docs128Allocs: the routine does not allocate.
func TestBP128Docs128Allocs(t *testing.T) {
	data := make([]byte, 16*9+16)
	var out [128]uint32
	if a := testing.AllocsPerRun(10, func() { BP128Docs128(&out, data[:16*9], 9, 7) }); a != 0 {
		t.Fatalf("%v allocations", a)
	}
}

// BenchmarkBP128Docs128 times the vector routine against its scalar twin
// on a block of width 9 (a typical docID gap width of the TREC'06 AND
// queries' lists).
func BenchmarkBP128Docs128(b *testing.B) {
	data := make([]byte, 16*9+16)
	for i := range data {
		data[i] = byte(i * 37)
	}
	data = data[:16*9]
	var out [128]uint32
	b.Run("vector", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			BP128Docs128(&out, data, 9, 7)
		}
	})
	b.Run("scalar", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			bp128Docs128Go(&out, data, 9, 7)
		}
	})
}
