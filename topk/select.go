package topk

import "math/bits"

// Select appends to dst[:0] the k best of the candidates (d, acc[d]) for d in
// cand, in rank order, and returns the slice. It is the selection step of
// term-at-a-time evaluation over a dense accumulator (Ding et al. WWW'09 §8):
// acc holds one score per document, cand the documents touched (each at most
// once; duplicates are a programmer bug and yield duplicate results).
//
// dst doubles as scratch: when k is a small fraction of the candidates Select
// keeps a k-element heap in dst (one comparison per rejected candidate);
// otherwise it copies all candidates into dst and partitions them
// nth_element-style (introselect) before sorting the first k. It allocates
// only when cap(dst) is too small (at most len(cand) elements).
func Select(dst []Result, acc []float32, cand []uint32, k int) []Result {
	return selectK(dst, acc, cand, k, false)
}

// SelectZero is Select that also sets acc[d] = 0 for every d in cand, each
// as it is read: a term-at-a-time engine's selection and the reset of its
// accumulator in one pass over the candidates' lines (engine.orTAAT; step
// 45 of docs/CPU-ENGINE.md).
func SelectZero(dst []Result, acc []float32, cand []uint32, k int) []Result {
	return selectK(dst, acc, cand, k, true)
}

// selectK is Select, and SelectZero when zero is set.
func selectK(dst []Result, acc []float32, cand []uint32, k int, zero bool) []Result {
	checkK(k)
	n := len(cand)
	if n > k && k <= n/8 {
		return heapSelect(dst, acc, cand, k, zero)
	}
	dst = dst[:0]
	for _, d := range cand {
		dst = append(dst, Result{d, acc[d]})
		if zero {
			acc[d] = 0
		}
	}
	if n > k {
		nthElement(dst, k)
		dst = dst[:k]
	}
	Sort(dst)
	return dst
}

// heapSelect is Select (SelectZero when zero is set) with a bounded heap
// held in dst[:k].
func heapSelect(dst []Result, acc []float32, cand []uint32, k int, zero bool) []Result {
	if cap(dst) < k {
		dst = make([]Result, 0, k)
	}
	h := dst[:k]
	for i, d := range cand[:k] {
		h[i] = Result{d, acc[d]}
		if zero {
			acc[d] = 0
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	th := h[0].Score
	for _, d := range cand[k:] {
		s := acc[d]
		if zero {
			acc[d] = 0
		}
		if s < th {
			continue
		}
		r := Result{d, s}
		if !Better(r, h[0]) {
			continue
		}
		h[0] = r
		siftDown(h, 0)
		th = h[0].Score
	}
	Sort(h)
	return h
}

// nthElement reorders rs so that rs[:k] holds the k best results (in no
// particular order). Quickselect with a median-of-three pivot; after
// 2·log2(n) unproductive rounds it falls back to a heap on the remaining
// range, so the worst case is O(n log n).
func nthElement(rs []Result, k int) {
	lo, hi := 0, len(rs) // the boundary k lies in [lo, hi)
	budget := 2 * bits.Len(uint(len(rs)))
	for hi-lo > 16 {
		if budget == 0 {
			partialHeap(rs[lo:hi], k-lo)
			return
		}
		budget--
		p := partition(rs[lo:hi]) + lo
		switch {
		case p == k:
			return
		case p < k:
			lo = p + 1
		default:
			hi = p
		}
	}
	// Insertion sort the small remainder.
	s := rs[lo:hi]
	for i := 1; i < len(s); i++ {
		x := s[i]
		j := i
		for j > 0 && Better(x, s[j-1]) {
			s[j] = s[j-1]
			j--
		}
		s[j] = x
	}
}

// partition places a median-of-three pivot at its final rank position p in
// s (better results before, worse after) and returns p.
func partition(s []Result) int {
	n := len(s)
	m := n / 2
	// Order s[0], s[m], s[n-1]; the median goes to s[n-1] as the pivot.
	if Better(s[m], s[0]) {
		s[0], s[m] = s[m], s[0]
	}
	if Better(s[n-1], s[0]) {
		s[0], s[n-1] = s[n-1], s[0]
	}
	if Better(s[m], s[n-1]) {
		s[m], s[n-1] = s[n-1], s[m]
	}
	pv := s[n-1]
	i := 0
	for j := 0; j < n-1; j++ {
		if Better(s[j], pv) {
			s[i], s[j] = s[j], s[i]
			i++
		}
	}
	s[i], s[n-1] = s[n-1], s[i]
	return i
}

// partialHeap moves the k best of s to s[:k] with a heap over s[:k].
func partialHeap(s []Result, k int) {
	if k <= 0 || k >= len(s) {
		return
	}
	h := s[:k]
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	for j := k; j < len(s); j++ {
		if Better(s[j], h[0]) {
			h[0], s[j] = s[j], h[0]
			siftDown(h, 0)
		}
	}
}
