package gpu

import "slices"

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
	slot := sortSlot(key, maxKey, desc, "countingSort")
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

// sortChunk is the queries of one chunk of countingSortPar.
const sortChunk = 4096

// minScanWorkers is the fewest goroutines on which countingSortPar and
// parallelScan split their work: each reads its items twice (counts or
// sums, then outputs), which on 2 busy cores cost more than the serial
// pass (a 1M-query GCIDE planBatch: wall 1.05-1.38x, paired, on this
// project's 2-core machine); on 4 or more, half the serial pass or less.
// A variable for the tests (which run on 2 cores).
var minScanWorkers = 4

// countingSortPar is countingSort on up to workers goroutines, to the same
// order (gpuhost5: planHost's order by descending steps was a serial pass
// over a launch set of up to MaxSetQueries queries, on the batch's
// critical path, and its key a cache miss per query). Each chunk of
// sortChunk queries of src counts its keys (counts holds a row of
// maxKey+1 per chunk); one serial pass over the rows, key major and chunk
// minor, turns the counts into positions; each chunk then places its
// queries, in src order. A src of one chunk, or fewer than
// minScanWorkers goroutines, sorts serially.
func countingSortPar(dst, src []*prep, maxKey int, desc bool, key func(*prep) int, workers int, counts []int) []int {
	nch := (len(src) + sortChunk - 1) / sortChunk
	if workers < minScanWorkers || nch <= 1 {
		return countingSort(dst, src, maxKey, desc, key, counts)
	}
	if len(dst) != len(src) {
		panic("BUG: gpu: countingSortPar into a slice of another length")
	}
	w := maxKey + 1
	counts = slices.Grow(counts[:0], nch*w)[:nch*w]
	slot := sortSlot(key, maxKey, desc, "countingSortPar")
	// parallelWorkers hands out whole chunks: at least two goroutines.
	parallelWorkers(workers, len(src), sortChunk, func(lo, hi int) {
		row := counts[lo/sortChunk*w : (lo/sortChunk+1)*w]
		clear(row)
		for _, p := range src[lo:hi] {
			row[slot(p)]++
		}
	})
	chunkPositions(counts, nch, w, w)
	parallelWorkers(workers, len(src), sortChunk, func(lo, hi int) {
		row := counts[lo/sortChunk*w : (lo/sortChunk+1)*w]
		for _, p := range src[lo:hi] {
			s := slot(p)
			dst[row[s]] = p
			row[s]++
		}
	})
	return counts
}

// chunkPositions turns the per-chunk counts of a parallel counting sort
// (nch rows of w, the count of key k in chunk c at counts[c*w+k]) of keys
// [0, keys) into each chunk's first position per key: key major, chunk
// minor, the order a stable counting sort places them in. It returns the
// total count.
func chunkPositions[T int | int32](counts []T, nch, w, keys int) T {
	var total T
	for k := range keys {
		for c := range nch {
			x := &counts[c*w+k]
			total, *x = total+*x, total
		}
	}
	return total
}

// parallelScan is a running sum over the items [0, n) on up to workers
// goroutines, for the passes of a launch set that give each query the
// offsets of the ones before it (gpuhost5: serial passes over sets of up
// to MaxSetQueries queries, on the batch's critical path). pass(lo, hi,
// start, write) walks [lo, hi) from the running value start, writes its
// outputs only with write, and returns the value after hi; add sums two
// values. In chunks of sortChunk items: each chunk's total (write off),
// one serial prefix over the chunks, each chunk's outputs from its
// start; sums is that scratch, grown. A range of one chunk, or fewer
// than minScanWorkers goroutines, is one serial pass. It returns the
// total.
func parallelScan[S any](workers, n int, sums *[]S, add func(S, S) S, pass func(lo, hi int, start S, write bool) S) S {
	var zero S
	nch := (n + sortChunk - 1) / sortChunk
	if workers < minScanWorkers || nch <= 1 {
		return pass(0, n, zero, true)
	}
	*sums = slices.Grow((*sums)[:0], nch)[:nch]
	s := *sums
	parallelWorkers(workers, n, sortChunk, func(lo, hi int) { s[lo/sortChunk] = pass(lo, hi, zero, false) })
	acc := zero
	for c := range s {
		s[c], acc = acc, add(acc, s[c])
	}
	parallelWorkers(workers, n, sortChunk, func(lo, hi int) { pass(lo, hi, s[lo/sortChunk], true) })
	return acc
}

// sortSlot maps a query to its counting sort slot: key(p) in [0, maxKey],
// reversed when desc; a key out of range is a bug of the caller (name).
func sortSlot(key func(*prep) int, maxKey int, desc bool, name string) func(*prep) int {
	return func(p *prep) int {
		k := key(p)
		if k < 0 || k > maxKey {
			panic("BUG: gpu: " + name + " key out of range")
		}
		if desc {
			return maxKey - k
		}
		return k
	}
}
