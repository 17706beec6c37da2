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
