package compress

import (
	"math/rand/v2"
	"testing"
)

// TestBP128Docs compares BP128Docs with its scalar twin (and BP128Plus1
// with the values plus one) on random blocks of every width and of counts
// 1..128 (partial last groups), values up to the width's maximum, bases
// near 0 and near 2^32 (so that the 32-bit vector sums wrap where the
// 64-bit ones pass 2^32), and checks that they decline the blocks they do
// not cover: nonzero padding, data without the readable bytes the vector
// loads take.
func TestBP128Docs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for w := uint(0); w <= 32; w++ {
		for _, n := range []int{1, 2, 7, 8, 9, 31, 64, 100, 127, 128} {
			for _, base := range []uint32{0, 1, 1000, 1 << 31, 1<<32 - 1, 1<<32 - 200000} {
				for rep := 0; rep < 6; rep++ {
					vals := make([]uint32, n)
					for i := range vals {
						if w > 0 {
							vals[i] = uint32(r.Uint64() & (1<<w - 1))
							if rep%3 == 0 {
								vals[i] = uint32(1<<w - 1) // all ones: the largest sums
							}
						}
					}
					packed := packAppend(nil, vals, w)
					data := append(packed, make([]byte, 64)...)[:len(packed)] // the mapping past a block
					got, want := make([]uint32, 128), make([]uint32, 128)
					wantLast := bp128DocsGo(want, data, n, w, base)
					last, ok := BP128Docs(got, data, n, w, base)
					covered := haveDocsSIMD && w >= 1 && w <= bp128DocsMaxWidth
					if ok != covered {
						t.Fatalf("w %d n %d: ok %v, want %v", w, n, ok, covered)
					}
					plus := make([]uint32, 128)
					if okp := BP128Plus1(plus, data, n, w); okp != (covered || w == 0) {
						t.Fatalf("w %d n %d: BP128Plus1 ok %v", w, n, okp)
					} else if okp {
						for i := range vals {
							if plus[i] != vals[i]+1 {
								t.Fatalf("w %d n %d: BP128Plus1 value %d = %d, want %d", w, n, i, plus[i], vals[i]+1)
							}
						}
					}
					if !ok {
						continue
					}
					if last != wantLast || !equal(got[:n], want[:n]) {
						t.Fatalf("w %d n %d base %d: last %d (want %d), docs %v, want %v", w, n, base, last, wantLast, got[:n], want[:n])
					}
					if r := uint64(n) * uint64(w) % 8; r != 0 {
						// A padding bit set: declined (Decode reports it).
						data[len(data)-1] |= 0x80
						if _, ok := BP128Docs(got, data, n, w, base); ok || BP128Plus1(plus, data, n, w) {
							t.Fatalf("w %d n %d: nonzero padding accepted", w, n)
						}
					}
				}
			}
		}
	}
	// Without the readable bytes past the block, they decline.
	out := make([]uint32, 128)
	data := make([]byte, 16*5)
	if _, ok := BP128Docs(out, data, 128, 5, 0); ok || BP128Plus1(out, data, 128, 5) {
		t.Fatal("decoded a block without the readable bytes after it that the vector loads take")
	}
}

func equal(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBP128DocsAllocs: the routines do not allocate.
func TestBP128DocsAllocs(t *testing.T) {
	data := make([]byte, 16*9+16)
	out := make([]uint32, 128)
	if a := testing.AllocsPerRun(10, func() { BP128Docs(out, data[:16*9], 128, 9, 7); BP128Plus1(out, data[:16*9], 128, 9) }); a != 0 {
		t.Fatalf("%v allocations", a)
	}
}

// BenchmarkBP128Docs times the vector routine against its scalar twin on a
// block of width 9 (a typical docID gap width of the TREC'06 AND queries'
// lists).
func BenchmarkBP128Docs(b *testing.B) {
	data := make([]byte, 16*9+16)
	for i := range data {
		data[i] = byte(i * 37)
	}
	data = data[:16*9]
	out := make([]uint32, 128)
	b.Run("vector", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			BP128Docs(out, data, 128, 9, 7)
		}
	})
	b.Run("scalar", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			bp128DocsGo(out, data, 128, 9, 7)
		}
	})
}

// FuzzBP128Docs: on any data, count, width and base, BP128Docs and
// BP128Plus1 either decline or give what the scalar twin gives (the docIDs
// and the 64-bit last docID; the values plus one). The data carries 64
// zero bytes past the block within its capacity, as the index mapping
// carries the blocks after it.
func FuzzBP128Docs(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(9), uint8(7), uint32(5))
	f.Add(make([]byte, 16*9), uint8(128), uint8(9), uint32(1<<32-3))
	f.Fuzz(func(t *testing.T, raw []byte, n8, w8 uint8, base uint32) {
		n, w := 1+int(n8)%128, uint(w8)%33
		nb := packBytes(n, w)
		if len(raw) < nb {
			return
		}
		data := append(append([]byte(nil), raw[:nb]...), make([]byte, 64)...)[:nb]
		got, want := make([]uint32, 128), make([]uint32, 128)
		if last, ok := BP128Docs(got, data, n, w, base); ok {
			if wl := bp128DocsGo(want, data, n, w, base); last != wl || !equal(got[:n], want[:n]) {
				t.Fatalf("n %d w %d base %d: last %d (want %d)", n, w, base, last, wl)
			}
		}
		if BP128Plus1(got, data, n, w) {
			packUnpack(want[:n], data, w)
			for i := range n {
				if got[i] != want[i]+1 {
					t.Fatalf("n %d w %d: BP128Plus1 value %d = %d, want %d", n, w, i, got[i], want[i]+1)
				}
			}
		}
	})
}
