package engine

import "math/bits"

// flattenBits writes the positions of the set bits of bs, ascending, to
// dst, zeroes bs (each nonzero word as it is read: no pass of its own for
// orTAATMaxScore's cleanup, step 42 of docs/CPU-ENGINE.md) and returns how
// many there are. dst must hold one more than that
// count: each iteration extracts two set bits of a word (the second write
// is a harmless store past the last bit when the word held only one), so
// that a word's bits cost half as many dependent loop trips and branches.
// orTAATMaxScore uses it to turn the TAAT prefix's touched documents into
// a sorted candidate list walked by probeLong.
func flattenBits(dst []uint32, bs []uint64) int {
	n := 0
	for w, word := range bs {
		base := uint32(w) << 6
		for word != 0 {
			bs[w] = 0
			t0 := uint32(bits.TrailingZeros64(word))
			word &= word - 1
			t1 := uint32(bits.TrailingZeros64(word)) // 64 when word == 0
			more := 0
			if word != 0 {
				more = 1
			}
			word &= word - 1
			dst[n] = base | t0
			dst[n+1] = base | (t1 & 63)
			n += 1 + more
		}
	}
	return n
}
