package gpu

// countingSort writes src into dst ordered by key (ascending; descending
// with desc), stably: queries of equal keys keep their order in src. Keys
// lie in [0, maxKey]; a key outside is a programmer bug (panics). counts is
// scratch, returned grown for reuse. O(len(src) + maxKey), no comparisons:
// it replaces slices.SortStableFunc for the two orders of a batch, by term
// count (prepareBatch) and by descending list steps (planAnd), whose keys
// are small (a query's terms), on 4,500-query batches. dst and src must
// not overlap and len(dst) == len(src).
func countingSort(dst, src []*prep, maxKey int, desc bool, key func(*prep) int, counts []int) []int {
	if len(dst) != len(src) {
		panic("BUG: gpu: countingSort into a slice of another length")
	}
	if cap(counts) < maxKey+2 {
		counts = make([]int, maxKey+2)
	}
	counts = counts[:maxKey+2]
	clear(counts)
	slot := func(p *prep) int {
		k := key(p)
		if k < 0 || k > maxKey {
			panic("BUG: gpu: countingSort key out of range")
		}
		if desc {
			return maxKey - k
		}
		return k
	}
	for _, p := range src {
		counts[slot(p)+1]++
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	for _, p := range src {
		s := slot(p)
		dst[counts[s]] = p
		counts[s]++
	}
	return counts
}
