package queryset

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/qpengine/qp/index"
)

// knownItems draws opt.N known-item queries: query i wants
// m = MinTerms + i mod (MaxTerms-MinTerms+1) distinct terms of one document.
//
// The index has no forward view (document → terms), and building one costs
// memory proportional to all postings. Instead candidate documents are
// sampled first, uniformly, and their terms collected in one pass over the
// lists (DocTerms): each list is probed with a block-skipping cursor only at
// the candidates' docIDs, so a pass decodes at most one block per
// (list, candidate) pair and never more than the list, and memory is
// proportional to the candidates' terms. A candidate with fewer than m
// eligible terms is passed over (so documents too short for m terms are
// not represented at that m); when the candidates run out a new round is
// sampled.
func knownItems(x *index.Index, an Analyzer, opt Options, rng *rand.Rand) ([]Query, error) {
	n := x.NumDocs()
	if n == 0 {
		return nil, fmt.Errorf("queryset: known-item queries from an empty index")
	}
	span := opt.MaxTerms - opt.MinTerms + 1
	elig := map[int]bool{}
	eligible := func(t int) bool {
		e, ok := elig[t]
		if !ok {
			e = Eligible(an, x.Term(t))
			elig[t] = e
		}
		return e
	}
	qs := make([]Query, 0, opt.N)
	var cand []uint32
	var terms [][]int
	next, barren := 0, 0
	for len(qs) < opt.N {
		if next == len(cand) {
			if barren >= 8 {
				return nil, fmt.Errorf("queryset: no known-item document found with %d eligible terms after %d sampling rounds (documents too short?)",
					opt.MinTerms+len(qs)%span, barren)
			}
			cand = sampleDocs(rng, n, 2*(opt.N-len(qs))+16)
			var err error
			if terms, err = DocTerms(x, cand); err != nil {
				return nil, err
			}
			// Keep the draw order random: candidates were sorted to scan.
			perm := rng.Perm(len(cand))
			c2, t2 := make([]uint32, len(cand)), make([][]int, len(cand))
			for i, p := range perm {
				c2[i], t2[i] = cand[p], terms[p]
			}
			cand, terms, next = c2, t2, 0
			barren++
		}
		m := opt.MinTerms + len(qs)%span
		d, ts := cand[next], terms[next]
		next++
		ts = slices.DeleteFunc(ts, func(t int) bool { return !eligible(t) })
		if len(ts) < m {
			continue
		}
		barren = 0
		// Partial Fisher-Yates: the first m of ts become a uniform sample.
		for j := 0; j < m; j++ {
			r := j + rng.IntN(len(ts)-j)
			ts[j], ts[r] = ts[r], ts[j]
		}
		qs = append(qs, Query{
			ID: fmt.Sprintf("%s-%d-%06d", KindKnown, m, len(qs)), Kind: KindKnown,
			Doc: int(d), Terms: termsOf(x, ts[:m]),
		})
	}
	return qs, nil
}

// sampleDocs draws min(k, n) distinct docIDs uniformly and returns them
// sorted.
func sampleDocs(rng *rand.Rand, n, k int) []uint32 {
	k = min(k, n)
	seen := make(map[uint32]bool, k)
	out := make([]uint32, 0, k)
	for len(out) < k {
		d := uint32(rng.IntN(n))
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// DocTerms returns, for each of the sorted distinct docIDs docs, the IDs of
// the terms it contains, ascending: a forward view of a few documents,
// built by probing every list with a block-skipping cursor at those docIDs
// only (the cursor jumps to the next candidate at or after the posting it
// lands on, so a list costs O(min(df, len(docs))) probes). Lists are split
// among all cores by contiguous term ranges, so the result does not depend
// on scheduling.
func DocTerms(x *index.Index, docs []uint32) ([][]int, error) {
	if !slices.IsSorted(docs) {
		panic("BUG: DocTerms needs sorted docIDs")
	}
	nt := x.NumTerms()
	workers := max(1, min(runtime.GOMAXPROCS(0), nt/1024+1))
	parts := make([][][]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := nt*w/workers, nt*(w+1)/workers
			parts[w], errs[w] = scanTerms(x, docs, lo, hi)
		}()
	}
	wg.Wait()
	out := make([][]int, len(docs))
	for w := range workers {
		if errs[w] != nil {
			return nil, errs[w]
		}
		for i, ts := range parts[w] {
			out[i] = append(out[i], ts...)
		}
	}
	return out, nil
}

// scanTerms collects, for terms [lo, hi), which of docs each list holds.
func scanTerms(x *index.Index, docs []uint32, lo, hi int) ([][]int, error) {
	out := make([][]int, len(docs))
	var c index.Cursor
	for t := lo; t < hi; t++ {
		l, err := x.List(t)
		if err != nil {
			return nil, err
		}
		c.Reset(l)
		i := 0
		for i < len(docs) {
			d := c.NextGEQ(docs[i])
			if d == index.Terminated {
				break
			}
			if d == docs[i] {
				out[i] = append(out[i], t)
				i++
				continue
			}
			// Jump to the first candidate >= d.
			i += sort.Search(len(docs)-i, func(j int) bool { return docs[i+j] >= d })
		}
		if err := c.Err(); err != nil {
			return nil, fmt.Errorf("queryset: scanning term %q: %w", x.Term(t), err)
		}
	}
	return out, nil
}
