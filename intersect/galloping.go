package intersect

// Gallop2 appends a ∩ b to dst[:0], stepping through the shorter list and
// galloping (exponential then binary search, GallopGEQ) in the longer one:
// O(m log(n/m)) comparisons for lengths m <= n, the SvS step of Demaine,
// López-Ortiz & Munro (2000/2001) and Culpepper & Moffat (2007).
func Gallop2(dst, a, b []uint32) []uint32 {
	if len(a) > len(b) {
		a, b = b, a
	}
	dst = dst[:0]
	j := 0
	for _, x := range a {
		j = GallopGEQ(b, j, x)
		if j == len(b) {
			break
		}
		if b[j] == x {
			dst = append(dst, x)
			j++
		}
	}
	return dst
}

// SvS appends the intersection of lists to dst[:0]: "small versus small",
// intersecting the shortest list with the next shortest by Gallop2, then the
// result with each longer list in turn (Ding et al. WWW'09 §7 order). lists
// is reordered by length.
func SvS(dst []uint32, lists [][]uint32) []uint32 {
	return smallVsSmall(dst, lists, Gallop2, gallopInPlace)
}

// gallopInPlace keeps the elements of a (the shorter, running result) that
// occur in b.
func gallopInPlace(a, b []uint32) []uint32 {
	n, j := 0, 0
	for _, x := range a {
		j = GallopGEQ(b, j, x)
		if j == len(b) {
			break
		}
		if b[j] == x {
			a[n] = x
			n++
			j++
		}
	}
	return a[:n]
}
