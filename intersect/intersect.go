// Package intersect holds qp's list intersection algorithms: over decoded,
// strictly increasing []uint32 docID lists (linear merge, SvS with galloping,
// binary search per element of the shortest list) and over compressed lists
// through block-skipping cursors.
//
// Every algorithm intersects lists from shortest to longest, as Ding et al.
// WWW'09 §7 do ("we order the lists from shortest to longest, and then first
// intersect the shortest with the second-shortest list ... in each step we
// intersect the output of the previous intersection with the next longer
// list"), and appends the result to a caller-owned dst[:0], which it returns;
// dst is grown only when its capacity is smaller than the shortest list. dst
// must not share memory with the input lists. Inputs must be strictly
// increasing (as posting lists are); duplicates or disorder make the output
// unspecified but never cause a panic.
//
// The intersection of zero lists is empty.
package intersect

// orderByLength sorts lists in place by ascending length (stable insertion
// sort: queries have few terms, and it does not allocate).
func orderByLength(lists [][]uint32) {
	for i := 1; i < len(lists); i++ {
		x := lists[i]
		j := i
		for j > 0 && len(lists[j-1]) > len(x) {
			lists[j] = lists[j-1]
			j--
		}
		lists[j] = x
	}
}

// GallopGEQ returns the smallest i >= from with a[i] >= x, or len(a) when
// there is none: an exponential search from a[from] (steps 1, 2, 4, ...)
// followed by a binary search in the last step's range (Bentley & Yao 1976;
// the "galloping" of SvS). Its cost is O(log(i - from)).
func GallopGEQ(a []uint32, from int, x uint32) int {
	n := len(a)
	if from >= n || a[from] >= x {
		return from
	}
	// Invariant: a[lo] < x.
	lo, step := from, 1
	for lo+step < n && a[lo+step] < x {
		lo += step
		step <<= 1
	}
	hi := min(lo+step, n) // a[hi] >= x or hi == n
	return lo + 1 + lowerBound(a[lo+1:hi], x)
}

// lowerBound is the smallest i with a[i] >= x, or len(a).
func lowerBound(a []uint32, x uint32) int {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// single copies the only list into dst.
func single(dst, a []uint32) []uint32 { return append(dst[:0], a...) }

// fewLists answers the intersection of no list (empty) and of one list (a
// copy of it) in dst[:0]; done is false for two or more lists, which the
// caller intersects itself.
func fewLists(dst []uint32, lists [][]uint32) (out []uint32, done bool) {
	switch len(lists) {
	case 0:
		return dst[:0], true
	case 1:
		return single(dst, lists[0]), true
	}
	return dst, false
}

// smallVsSmall is the order Merge and SvS share (Ding et al. WWW'09 §7):
// lists are reordered by length, the two shortest intersected by pair into
// dst[:0], and the result filtered in place by each longer list in turn
// (filter), until it is empty. pair and filter are the method's own steps.
func smallVsSmall(dst []uint32, lists [][]uint32, pair func(dst, a, b []uint32) []uint32, filter func(res, l []uint32) []uint32) []uint32 {
	orderByLength(lists)
	if d, done := fewLists(dst, lists); done {
		return d
	}
	dst = pair(dst, lists[0], lists[1])
	for _, l := range lists[2:] {
		if len(dst) == 0 {
			break
		}
		dst = filter(dst, l)
	}
	return dst
}

// containsIn reports whether x is in list[lo:hi], the range a model or
// hash table says x can only be in (clamped to the list: a model of another
// list gives a wrong answer, never a panic).
func containsIn(list []uint32, x uint32, lo, hi int) bool {
	hi = min(hi, len(list))
	lo = min(lo, hi)
	p := lo + lowerBound(list[lo:hi], x)
	return p < hi && list[p] == x
}
