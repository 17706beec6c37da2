package reorder

import (
	"fmt"
	"math"
)

// LogGapCost returns the mean of log2(gap) over the postings of g's lists
// when documents are numbered by order (order[new] = old): for each term,
// the gaps are its first new docID + 1 and the differences between its
// consecutive new docIDs. This is the quantity BP minimises (Dhulipala et
// al. KDD 2016 §3, "LogGap") and the "bits per gap" of Mackenzie et al.
// (ECIR 2019, Table 2).
func LogGapCost(g *Graph, order []uint32) float64 {
	if len(order) != g.NumDocs() {
		panic(fmt.Sprintf("BUG: order of %d documents for a graph of %d", len(order), g.NumDocs()))
	}
	last := make([]int64, g.NumTerms)
	for i := range last {
		last[i] = -1
	}
	var tab [1 << 12]float64 // log2 of small gaps, the common case
	for i := 1; i < len(tab); i++ {
		tab[i] = math.Log2(float64(i))
	}
	sum := 0.0
	for nw, old := range order {
		for _, t := range g.DocTerms(old) {
			if gap := int64(nw) - last[t]; gap < int64(len(tab)) {
				sum += tab[gap]
			} else {
				sum += math.Log2(float64(gap))
			}
			last[t] = int64(nw)
		}
	}
	if len(g.Terms) == 0 {
		return 0
	}
	return sum / float64(len(g.Terms))
}

// Identity returns the order 0, 1, ..., n-1.
func Identity(n int) []uint32 {
	o := make([]uint32, n)
	for i := range o {
		o[i] = uint32(i)
	}
	return o
}

// Inverse turns order (order[new] = old) into perm (perm[old] = new), and
// back. It panics if order is not a permutation.
func Inverse(order []uint32) []uint32 {
	perm := make([]uint32, len(order))
	seen := make([]bool, len(order))
	for nw, old := range order {
		if int(old) >= len(order) || seen[old] {
			panic(fmt.Sprintf("BUG: not a permutation: %d at %d", old, nw))
		}
		seen[old] = true
		perm[old] = uint32(nw)
	}
	return perm
}
