package compress

import (
	"math/bits"
	"math/rand"
	"testing"
)

// TestCentredCode checks the centred minimal binary code of every range
// size up to 600 and of large ones: the s = 2^b - r middle values [o, o+s),
// o = (r-s)/2, take b-1 bits, the others b bits, and a random sequence of
// codes of mixed ranges reads back.
func TestCentredCode(t *testing.T) {
	ranges := []uint64{1 << 31, 1<<32 + 1, 1<<40 - 3, 1 << 62, 1<<63 - 1, 1 << 63}
	for r := uint64(1); r <= 600; r++ {
		ranges = append(ranges, r)
	}
	for _, r := range ranges {
		b := uint64(bits.Len64(r - 1))
		s := uint64(1)<<b - r
		o := (r - s) / 2
		xs := []uint64{0, r - 1, o, o + s, r / 2}
		if o > 0 {
			xs = append(xs, o-1)
		}
		if r <= 600 {
			xs = xs[:0]
			for x := uint64(0); x < r; x++ {
				xs = append(xs, x)
			}
		}
		for _, x := range xs {
			if x >= r {
				continue
			}
			w := ipWriter{}
			w.centred(x, r)
			n := uint64(8*len(w.dst)) + uint64(w.nacc)
			want := b
			if r == 1 {
				want = 0
			} else if x >= o && x < o+s {
				want = b - 1
			}
			if n != want {
				t.Fatalf("r=%d x=%d: %d bits, want %d", r, x, n, want)
			}
		}
	}
	rng := rand.New(rand.NewSource(1))
	type code struct{ x, r uint64 }
	var codes []code
	w := ipWriter{}
	for range 5000 {
		r := ranges[rng.Intn(len(ranges))]
		x := uint64(rng.Int63n(int64(min(r, 1<<62))))
		if rng.Intn(4) == 0 {
			x = r - 1
		}
		codes = append(codes, code{x, r})
		w.centred(x, r)
	}
	src := w.flush()
	rd := ipReader{src: src}
	for i, c := range codes {
		got := uint64(0)
		if c.r > 1 {
			got = rd.centred(c.r)
		}
		if got != c.x || rd.consumed() > 8*uint64(len(src)) {
			t.Fatalf("code %d: read %d (%d bits consumed), want %d of range %d", i, got, rd.consumed(), c.x, c.r)
		}
	}
}
