package compress

import (
	"math/rand"
	"testing"
)

// TestPForDeltaExceptionBound checks the encoder's choice of b ("Choice of
// b" in pfordelta.go) against an exhaustive one: at levels 0 and 1 every
// array has at most pfdMaxExc of its values as exceptions, the bounded
// encoding is the smallest among those with that bound (the width of every
// level-0 array is compared with all others), never smaller than the
// unbounded (OptPFD) encoding, and inputs whose smallest encoding has more
// exceptions do get a different, larger one.
func TestPForDeltaExceptionBound(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	over := 0
	for r := 0; r < 400; r++ {
		n := []int{1, 2, 3, 4, 5, 8, 31, 32, 33, 127, 128, 129, 511, 512, 513, 1500}[r%16]
		vals := make([]uint32, n)
		mean := 1 + rng.Float64()*60
		for i := range vals {
			vals[i] = uint32(rng.ExpFloat64() * mean)
			if rng.Intn(50) == 0 {
				vals[i] = rng.Uint32() >> rng.Intn(32)
			}
		}
		enc := pfdEncode(nil, vals, true)
		var tr pfdTree
		if _, err := pfdLoad(enc, &tr); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		for node := 0; node < 3; node++ {
			if a, lv := tr[node], min(node, 1); a.m > 0 && a.e > pfdMaxExc(a.m, lv) {
				t.Fatalf("n=%d: node %d has %d exceptions of %d values, more than %d", n, node, a.e, a.m, pfdMaxExc(a.m, lv))
			}
			if node == 0 && tr[0].e == 0 {
				break // no level-1 arrays (tr[1], tr[2] are zero)
			}
		}
		// The bounded size is the smallest over the widths within the bound.
		b, size := pfdBest(vals, 0, true)
		if b != tr[0].b {
			t.Fatalf("n=%d: encoded at b=%d, pfdBest says %d", n, tr[0].b, b)
		}
		for w := uint(0); w <= 32; w++ {
			if e := pfdSplit(vals, w, make([]uint32, n), make([]uint32, n)); e <= pfdMaxExc(n, 0) {
				if sz := pfdSizeAt(vals, w); sz < size {
					t.Fatalf("n=%d: b=%d gives %d bytes within the bound, the encoder's b=%d %d", n, w, sz, b, size)
				}
			}
		}
		ub, usize := pfdBest(vals, 0, false)
		if usize > size {
			t.Fatalf("n=%d: unbounded encoding %d bytes, bounded %d", n, usize, size)
		}
		if e := pfdSplit(vals, ub, make([]uint32, n), make([]uint32, n)); e > pfdMaxExc(n, 0) {
			over++
			if ub == b {
				t.Fatalf("n=%d: b=%d has %d exceptions yet was kept", n, b, e)
			}
		}
		if got := len(pfdEncode(nil, vals, false)) - len(enc); got != usize-size {
			t.Fatalf("n=%d: encodings differ by %d bytes, pfdBest's sizes by %d", n, got, usize-size)
		}
	}
	if over == 0 {
		t.Fatal("no input had an unbounded choice over the bound: the test checks nothing")
	}
}

// pfdSizeAt is the level-0 size (pfdBest's measure) of vals at width b,
// with bounded level-1 arrays.
func pfdSizeAt(vals []uint32, b uint) int {
	m := len(vals)
	highs, gaps := make([]uint32, m), make([]uint32, m)
	e := pfdSplit(vals, b, highs, gaps)
	size := 1 + packBytes(m, b) + uvarintLen(uint64(e))
	if e > 0 {
		if nsb := pfdSubBlocks(m); nsb > 1 {
			size += 4 * (nsb - 1)
		}
		_, sh := pfdBest(highs[:e], 1, true)
		_, sg := pfdBest(gaps[:e], 1, true)
		size += sh + sg
	}
	return size
}
