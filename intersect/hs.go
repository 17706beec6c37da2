package intersect

import "math/bits"

// HS is the Hash Segmentation table of one list (Ao et al. VLDB'11 §4.4).
// With k the smallest integer such that U <= 2^k (here U = max(ℓ)+1, so
// k = bits.Len32(max ℓ)), the hash h(x) is the leading m of the k binary
// digits of x, h(x) = ⌊x/2^(k−m)⌋ = x >> Shift. Bucket B_h holds the
// elements with h(v) = h, and the table stores d+1 pointers for the
// d = h(max ℓ)+1 buckets: Ptr[h] is the position of the first element of
// B_h, or of the next non-empty bucket when B_h is empty, Ptr[d] = |ℓ|.
// Looking x up is then: h = h(x); if h >= d, x is not in ℓ; else a binary
// search of ℓ[Ptr[h]:Ptr[h+1]].
//
// m is chosen per list by the paper's HSxx rule: HS<div> takes "the minimum
// m such that |ℓ(t)|/div <= 2^m" (capped at k), so buckets hold about div
// elements on a uniform list (HS16, HS32 and HS256 in §6).
//
// Persistence: Shift and the d+1 uint32 pointers (4(d+2) bytes, about
// 4·2|ℓ|/div), computed once per list; an index would store them after
// the list's skip table. The benchmark rebuilds them at load (one pass).
type HS struct {
	Shift uint     // k − m, 0..32 (h(x) = x >> Shift on a 64-bit x)
	Ptr   []uint32 // d+1 bucket pointers; empty for an empty list
}

// NewHS builds the HS<div> table of a non-decreasing list (div >= 1;
// a programmer bug otherwise).
func NewHS(list []uint32, div int) HS {
	if div < 1 {
		panic("BUG: intersect.NewHS: div < 1")
	}
	n := len(list)
	if n == 0 {
		return HS{}
	}
	k := bits.Len32(list[n-1])
	m := 0
	for m < k && n > div<<m {
		m++
	}
	sh := uint(k - m)
	d := int(uint64(list[n-1])>>sh) + 1
	ptr := make([]uint32, d+1)
	i := 0
	for h := 0; h <= d; h++ {
		for i < n && uint64(list[i])>>sh < uint64(h) {
			i++
		}
		ptr[h] = uint32(i)
	}
	return HS{Shift: sh, Ptr: ptr}
}

// Buckets is d, the number of buckets.
func (t *HS) Buckets() int { return max(len(t.Ptr)-1, 0) }

// Bucket returns the range [lo, hi) of list positions where x can be.
func (t *HS) Bucket(x uint32) (lo, hi int) {
	h := uint64(x) >> t.Shift
	if h >= uint64(t.Buckets()) {
		return 0, 0
	}
	return int(t.Ptr[h]), int(t.Ptr[h+1])
}

// Contains reports whether x is in list (the list t was built from).
func (t *HS) Contains(list []uint32, x uint32) bool {
	lo, hi := t.Bucket(x)
	return containsIn(list, x, lo, hi)
}

// HSSearch appends the intersection of lists to dst[:0]: every element of
// the shortest list is looked up in each longer list within its hash bucket
// (Ao et al. VLDB'11 §4.4). tables[i] must be built from lists[i]; lists and
// tables are reordered together by length.
func HSSearch(dst []uint32, lists [][]uint32, tables []HS) []uint32 {
	if len(tables) != len(lists) {
		panic("BUG: intersect.HSSearch: one table per list")
	}
	orderWith(lists, tables)
	if d, done := fewLists(dst, lists); done {
		return d
	}
	dst = append(dst[:0], lists[0]...)
	for j := 1; j < len(lists) && len(dst) > 0; j++ {
		l, t := lists[j], &tables[j]
		n := 0
		for _, x := range dst {
			if t.Contains(l, x) {
				dst[n] = x
				n++
			}
		}
		dst = dst[:n]
	}
	return dst
}
