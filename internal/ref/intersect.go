package ref

import "sort"

// Intersect is the set-based reference intersection of sorted or unsorted
// docID lists: the documents present in every list, ascending. No lists
// intersect to nothing.
func Intersect(lists [][]uint32) []uint32 {
	if len(lists) == 0 {
		return nil
	}
	count := map[uint32]int{}
	for _, l := range lists {
		seen := map[uint32]bool{}
		for _, d := range l {
			if !seen[d] {
				seen[d] = true
				count[d]++
			}
		}
	}
	out := []uint32{}
	for d, c := range count {
		if c == len(lists) {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
