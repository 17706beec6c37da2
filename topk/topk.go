// Package topk selects the k best documents of a query under qp's one total
// order on results: score descending, then docID ascending. Every backend
// (CPU DAAT and TAAT, the CUDA kernels) ranks with this order, so two
// backends that compute bit-identical scores return identical result lists.
//
// Heap is the bounded selection used by document-at-a-time algorithms
// (candidates arrive one by one); Select is the partial selection over a
// term-at-a-time accumulator (Ding et al. WWW'09 §8: after the lists are
// accumulated, the top k of the touched documents are selected).
package topk

import (
	"fmt"
	"math"
	"slices"
)

// MaxK is the largest k qp supports.
const MaxK = 10000

// Result is one ranked document.
type Result struct {
	Doc   uint32
	Score float32
}

// Better reports whether a ranks strictly before b: a higher score, or the
// same score and a smaller docID. Scores are never NaN (BM25 term scores are
// finite and positive); a NaN would make the order partial.
func Better(a, b Result) bool {
	return a.Score > b.Score || (a.Score == b.Score && a.Doc < b.Doc)
}

// Compare is the three-way form of Better, for slices.SortFunc: negative
// when a ranks first.
func Compare(a, b Result) int {
	switch {
	case Better(a, b):
		return -1
	case Better(b, a):
		return 1
	}
	return 0
}

// Sort sorts rs into rank order.
func Sort(rs []Result) { slices.SortFunc(rs, Compare) }

func checkK(k int) {
	if k < 1 || k > MaxK {
		panic(fmt.Sprintf("BUG: topk: k = %d outside 1..%d", k, MaxK))
	}
}

// Heap keeps the k best results pushed so far. Its zero value is unusable:
// call Reset first. A Heap reuses its storage across Reset calls and does not
// allocate in Push; it is not safe for concurrent use.
//
// Internally it is a binary min-heap of 64-bit keys whose integer order is
// the rank order (key), so every comparison is one integer compare; the root
// is the worst kept result (the k-th best once full), and Push rejects a
// hopeless candidate with one float comparison against a cached threshold.
type Heap struct {
	h  []uint64
	k  int
	th float32 // score of the root when full; -Inf otherwise
}

// key maps a result to a uint64 whose unsigned order is the rank order: the
// score's bits made order-preserving (sign flipped for positives, all bits
// for negatives) above the complemented docID (smaller docs rank higher).
func key(doc uint32, score float32) uint64 {
	if score == 0 {
		score = 0 // -0 ranks like +0, as Better says
	}
	b := math.Float32bits(score)
	if b&(1<<31) != 0 {
		b = ^b
	} else {
		b |= 1 << 31
	}
	return uint64(b)<<32 | uint64(^doc)
}

// unkey inverts key.
func unkey(k uint64) Result {
	b := uint32(k >> 32)
	if b&(1<<31) != 0 {
		b &^= 1 << 31
	} else {
		b = ^b
	}
	return Result{Doc: ^uint32(k), Score: math.Float32frombits(b)}
}

// Reset empties h and sets its capacity to k (1 <= k <= MaxK; other values
// are a programmer bug and panic).
func (h *Heap) Reset(k int) {
	checkK(k)
	if cap(h.h) < k {
		h.h = make([]uint64, 0, k)
	}
	h.h = h.h[:0]
	h.k = k
	h.th = float32(math.Inf(-1))
}

// K is the capacity set by Reset.
func (h *Heap) K() int { return h.k }

// Len is the number of results held (at most K).
func (h *Heap) Len() int { return len(h.h) }

// Full reports whether h holds K results.
func (h *Heap) Full() bool { return len(h.h) == h.k }

// Threshold is the score of the k-th best result once the heap is full, and
// -Inf before. A candidate whose score is below Threshold cannot enter; one
// whose score equals it enters only with a docID smaller than the k-th
// result's. Pruning algorithms must therefore discard a document only when an
// upper bound of its score is strictly below Threshold. -Inf (rather than 0)
// before the heap fills means "nothing may be pruned", whatever the scores.
func (h *Heap) Threshold() float32 { return h.th }

// Worst is the k-th best result; valid only when Full.
func (h *Heap) Worst() Result { return unkey(h.h[0]) }

// Push offers (doc, score) and reports whether it was kept. Scores must not
// be NaN. It does not allocate.
func (h *Heap) Push(doc uint32, score float32) bool {
	if len(h.h) < h.k {
		h.h = append(h.h, key(doc, score))
		keyUp(h.h, len(h.h)-1)
		if len(h.h) == h.k {
			h.th = unkey(h.h[0]).Score
		}
		return true
	}
	if score < h.th {
		return false
	}
	kk := key(doc, score)
	if kk <= h.h[0] {
		return false
	}
	h.h[0] = kk
	keyDown(h.h)
	h.th = unkey(h.h[0]).Score
	return true
}

// Results appends the held results to dst[:0] in rank order and returns the
// slice (grown only when cap(dst) < Len). The heap is left unchanged.
func (h *Heap) Results(dst []Result) []Result {
	dst = dst[:0]
	for _, k := range h.h {
		dst = append(dst, unkey(k))
	}
	Sort(dst)
	return dst
}

func keyUp(h []uint64, i int) {
	x := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if x >= h[p] {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

// keyDown restores the heap after h[0] grew.
func keyDown(h []uint64) {
	n := len(h)
	x := h[0]
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1] < h[c] {
			c++
		}
		if h[c] >= x {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}

// worse is the order of the Result heaps used by Select: the root is the
// worst element.
func worse(a, b Result) bool { return Better(b, a) }

func siftDown(h []Result, i int) {
	n := len(h)
	x := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && worse(h[c+1], h[c]) {
			c++
		}
		if !worse(h[c], x) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}
