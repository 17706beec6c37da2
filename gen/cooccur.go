package gen

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/qpengine/qp/bench/queryset"
	"github.com/qpengine/qp/index"
)

// Co-occurrence within a sample (docs/GEN.md, "--fit": the topic
// structure). What the topic structure controls is how much more often the
// terms of one document occur together elsewhere than independent lists
// would give: exactly what the R ratios of known-item queries measure
// (Ao et al., "Efficient parallel lists intersection and index
// compression algorithms using graphics processing units", VLDB 2011,
// Table 4: R = |ℓ1 ∩ … ∩ ℓx| / |ℓx+1|, lists by ascending length). A
// sample of n documents of the real collection and the first n documents
// of a generated one (random order: a uniform sample too) are measured
// the same way, in memory, so the thinning by the sample is the same on
// both sides and a candidate's parameters can be judged on a few
// thousand generated documents instead of a whole collection.

// CooccurStats are the known-item R ratios of a sample: R[k][x] is the
// mean over the sample's k-term known-item queries of |ℓ1 ∩ … ∩ ℓx| /
// |ℓx+1| (k = 2..CooccurMaxTerms, x = 1..k-1), lists being those of the
// sample; AndMedian is the median of the queries' AND counts (the source
// document included).
type CooccurStats struct {
	Docs      int
	Queries   int
	R         [CooccurMaxTerms + 1][CooccurMaxTerms]float64
	AndMedian float64
}

// CooccurMaxTerms is the longest known-item query of CooccurStats.
const CooccurMaxTerms = 4

// cooccurQueries is the number of in-sample known-item queries (a third
// of each length 2, 3, 4): enough for the mean R ratios to vary by a few
// per cent between seeds.
const cooccurQueries = 6000

// Score is the mean of ln(s.R/ref.R) over the ratios at stages x >= 2
// (the co-occurrence rows; stage 1 is list lengths): 0 when s
// co-occurs like ref, > 0 when more.
func (s CooccurStats) Score(ref CooccurStats) float64 {
	var sum float64
	var n int
	for k := 3; k <= CooccurMaxTerms; k++ {
		for x := 2; x < k; x++ {
			a, b := ref.R[k][x], s.R[k][x]
			if a > 0 && b > 0 {
				sum += math.Log(b / a)
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// String formats the ratios (in per cent) on one line.
func (s CooccurStats) String() string {
	b := fmt.Appendf(nil, "%d docs, %d queries: AND median %.0f, R%%", s.Docs, s.Queries, s.AndMedian)
	for k := 2; k <= CooccurMaxTerms; k++ {
		for x := 1; x < k; x++ {
			b = fmt.Appendf(b, " k%dx%d %.3g", k, x, 100*s.R[k][x])
		}
	}
	return string(b)
}

// measureCooccur computes CooccurStats over the forward view docs (each
// document's distinct term ids, any order): cooccurQueries known-item
// queries from a stream seeded by seed, query i of k = 2 + i mod 3
// distinct terms of a uniformly drawn document holding at least k.
func measureCooccur(docs [][]uint32, seed uint64) CooccurStats {
	st := CooccurStats{Docs: len(docs)}
	lists := map[uint32][]int32{}
	for d, ts := range docs {
		for _, t := range ts {
			lists[t] = append(lists[t], int32(d))
		}
	}
	r := rng{s: mix(seed ^ 0xc0cc)}
	var acc cooccurAcc
	var pick []uint32
	var ls [][]int32
	for i := range cooccurQueries {
		k := 2 + i%(CooccurMaxTerms-1)
		var ts []uint32
		for try := 0; try < 64 && len(ts) < k; try++ {
			ts = docs[r.below(uint64(len(docs)))]
		}
		if len(ts) < k {
			continue
		}
		pick = append(pick[:0], ts...)
		for j := range k { // partial Fisher–Yates
			o := j + int(r.below(uint64(len(pick)-j)))
			pick[j], pick[o] = pick[o], pick[j]
		}
		ls = ls[:0]
		for _, t := range pick[:k] {
			ls = append(ls, lists[t])
		}
		acc.add(&st, ls)
	}
	acc.finish(&st)
	return st
}

// cooccurAcc accumulates the R ratios (Ao et al. Table 4) and the AND
// result counts of queries given by their docID lists, for CooccurStats.
type cooccurAcc struct {
	n          [CooccurMaxTerms + 1]int // queries of each length
	ands       []float64                // AND result counts
	cand, keep []int32
}

// add intersects ls (2..CooccurMaxTerms lists; reordered shortest first)
// stage by stage, adding each stage's |candidates| / |next list| to st.R.
func (a *cooccurAcc) add(st *CooccurStats, ls [][]int32) {
	k := len(ls)
	slices.SortFunc(ls, func(a, b []int32) int { return len(a) - len(b) })
	a.cand = append(a.cand[:0], ls[0]...)
	for x := 1; x < k; x++ {
		st.R[k][x] += float64(len(a.cand)) / float64(len(ls[x]))
		a.keep = a.keep[:0]
		for _, d := range a.cand {
			if _, ok := slices.BinarySearch(ls[x], d); ok {
				a.keep = append(a.keep, d)
			}
		}
		a.cand = append(a.cand[:0], a.keep...)
	}
	a.n[k]++
	a.ands = append(a.ands, float64(len(a.cand)))
}

// finish turns st's summed ratios into means per query length and sets
// its query count and AND median.
func (a *cooccurAcc) finish(st *CooccurStats) {
	for k := 2; k <= CooccurMaxTerms; k++ {
		for x := 1; x < k; x++ {
			if a.n[k] > 0 {
				st.R[k][x] /= float64(a.n[k])
			}
		}
		st.Queries += a.n[k]
	}
	if len(a.ands) > 0 {
		slices.Sort(a.ands)
		st.AndMedian = a.ands[len(a.ands)/2]
	}
}

// MeasureIndexCooccur measures CooccurStats on a uniform random sample of
// n of x's documents (seeded by seed), their terms collected by one pass
// over the lists (queryset.DocTerms).
func MeasureIndexCooccur(x *index.Index, n int, seed uint64) (CooccurStats, error) {
	docs, err := sampleIndexDocs(x, n, seed)
	if err != nil {
		return CooccurStats{}, err
	}
	return measureCooccur(docs, seed), nil
}

// sampleIndexDocs returns the terms of a uniform random sample of n of x's
// documents (seeded by seed; n capped at x's documents), in docID order.
func sampleIndexDocs(x *index.Index, n int, seed uint64) ([][]uint32, error) {
	nd := x.NumDocs()
	n = min(n, nd)
	if n < 2 {
		return nil, fmt.Errorf("gen: co-occurrence: index has %d documents, want >= 2", nd)
	}
	r := rng{s: mix(seed ^ 0x5a3e)}
	// Floyd's sampling of n distinct docIDs.
	seen := make(map[uint32]bool, n)
	ids := make([]uint32, 0, n)
	for j := nd - n; j < nd; j++ {
		t := uint32(r.below(uint64(j + 1)))
		if seen[t] {
			t = uint32(j)
		}
		seen[t] = true
		ids = append(ids, t)
	}
	slices.Sort(ids)
	terms, err := queryset.DocTerms(x, ids)
	if err != nil {
		return nil, fmt.Errorf("gen: co-occurrence: %w", err)
	}
	docs := make([][]uint32, len(terms))
	for i, ts := range terms {
		docs[i] = make([]uint32, len(ts))
		for j, t := range ts {
			docs[i][j] = uint32(t)
		}
	}
	return docs, nil
}

// sampleCooccur generates documents 0..n-1 (n capped at N; random order
// makes them a uniform sample) on all workers and measures CooccurStats on
// them; the result does not depend on the workers.
func (t *Topics) sampleCooccur(ctx context.Context, n int, seed uint64) (CooccurStats, error) {
	docs, err := t.sampleDocs(ctx, n)
	if err != nil {
		return CooccurStats{}, err
	}
	return measureCooccur(docs, seed), nil
}

// sampleDocs generates documents 0..n-1 (n capped at N) on all workers and
// returns each one's distinct word ids; the result does not depend on the
// workers.
func (t *Topics) sampleDocs(ctx context.Context, n int) ([][]uint32, error) {
	n = min(n, t.p.Docs)
	docs := make([][]uint32, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range t.cfg.workers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc docScratch
			for ctx.Err() == nil {
				lo := int(next.Add(256) - 256)
				if lo >= n {
					return
				}
				for d := lo; d < min(lo+256, n); d++ {
					t.document(d, &sc)
					docs[d], _ = sc.counts(nil, nil)
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return docs, nil
}
