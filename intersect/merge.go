package intersect

// Merge2 appends a ∩ b to dst[:0] by a linear merge: one pass over both
// lists, O(len(a) + len(b)) comparisons. It is the baseline the other
// algorithms are measured against, and the right choice for lists of similar
// length. The loop is branch-free (conditional moves for the two advances
// and an unconditional store), since on random lists the three-way
// comparison is unpredictable.
func Merge2(dst, a, b []uint32) []uint32 {
	m := min(len(a), len(b))
	if cap(dst) < m {
		dst = make([]uint32, m)
	}
	out := dst[:m]
	n := mergeLoop(out, a, b)
	return dst[:n]
}

// mergeLoop writes a ∩ b to out (len(out) >= min(len(a), len(b)), which may
// alias a: the write index never passes the read index) and returns its
// length.
func mergeLoop(out, a, b []uint32) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		x, y := a[i], b[j]
		if n < len(out) { // always true; lets the compiler drop the bounds check
			out[n] = x
		}
		var di, dj, eq int
		if x <= y {
			di = 1
		}
		if y <= x {
			dj = 1
		}
		eq = di & dj
		n += eq
		i += di
		j += dj
	}
	return n
}

// Merge appends the intersection of lists to dst[:0] by linear merges,
// shortest list first (Ding et al. WWW'09 §7). lists is reordered by length.
func Merge(dst []uint32, lists [][]uint32) []uint32 {
	return smallVsSmall(dst, lists, Merge2, mergeInPlace)
}

// mergeInPlace keeps the elements of a that occur in b (writing never passes
// reading, so a is its own output).
func mergeInPlace(a, b []uint32) []uint32 { return a[:mergeLoop(a, a, b)] }
