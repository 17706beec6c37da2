package intersect

// BinarySearch appends the intersection of lists to dst[:0] by looking up
// every element of the shortest list in each longer list with a binary
// search. This is the "direct" algorithm of Ding et al. WWW'09 §7 (Parallel
// Merge Find with "one thread for each element Ai to do an independent binary
// search in list B"), run sequentially: each search covers the part of the
// longer list after the previous match, so the cost is O(m log n) for the
// shortest length m and the longest n. The lookups of different elements are
// independent, which is what makes the method data-parallel. lists is
// reordered by length.
func BinarySearch(dst []uint32, lists [][]uint32) []uint32 {
	orderByLength(lists)
	if d, done := fewLists(dst, lists); done {
		return d
	}
	dst = dst[:0]
	// One search start per longer list; a few terms fit on the stack.
	var posBuf [16]int
	var pos []int
	if len(lists)-1 <= len(posBuf) {
		pos = posBuf[:len(lists)-1]
	} else {
		pos = make([]int, len(lists)-1)
	}
outer:
	for _, x := range lists[0] {
		for j, l := range lists[1:] {
			p := pos[j] + lowerBound(l[pos[j]:], x)
			pos[j] = p
			if p == len(l) {
				break outer
			}
			if l[p] != x {
				continue outer
			}
		}
		dst = append(dst, x)
	}
	return dst
}
