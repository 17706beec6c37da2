package gen

import (
	"slices"

	"github.com/qpengine/qp/index"
)

// AndStats are AND statistics of a query set on an index: result counts
// and Ao et al.'s (VLDB 2011, Table 4) length ratios R per stage: for a
// k-term query with lists sorted by length ℓ1 <= ... <= ℓk, stage x has
// R = |ℓ1 ∩ ... ∩ ℓx| / |ℓx+1|, averaged over the queries of each k.
type AndStats struct {
	Queries, Empty int         // queries with every term in the index; with no result
	Counts         []int       // AND result count of each such query
	R              [][]float64 // R[k][x-1]: mean R at stage x over k-term queries
	N              []int       // N[k]: k-term queries averaged
}

// MeasureAnd computes AndStats for queries given as term lists (distinct
// terms; queries with a term missing from the index are skipped, as AND
// finds nothing for them).
func MeasureAnd(x *index.Index, queries [][]string, maxK int) (AndStats, error) {
	st := AndStats{R: make([][]float64, maxK+1), N: make([]int, maxK+1)}
	cache := map[int][]uint32{}
	get := func(t int) ([]uint32, error) {
		if d, ok := cache[t]; ok {
			return d, nil
		}
		l, err := x.List(t)
		if err != nil {
			return nil, err
		}
		d, _, err := l.Decode(nil, nil)
		if err == nil && len(cache) < 4096 {
			cache[t] = d
		}
		return d, err
	}
	for _, q := range queries {
		var lists [][]uint32
		ok := true
		for _, w := range q {
			t, found := x.Lookup(w)
			if !found {
				ok = false
				break
			}
			d, err := get(t)
			if err != nil {
				return st, err
			}
			lists = append(lists, d)
		}
		if !ok || len(lists) == 0 {
			continue
		}
		slices.SortFunc(lists, func(a, b []uint32) int { return len(a) - len(b) })
		k := len(lists)
		cur := lists[0]
		var rs []float64
		for i := 1; i < k; i++ {
			rs = append(rs, float64(len(cur))/float64(len(lists[i])))
			cur = intersect(cur, lists[i])
		}
		st.Queries++
		st.Counts = append(st.Counts, len(cur))
		if len(cur) == 0 {
			st.Empty++
		}
		if k <= maxK && k >= 2 {
			if st.R[k] == nil {
				st.R[k] = make([]float64, k-1)
			}
			for i, r := range rs {
				st.R[k][i] += r
			}
			st.N[k]++
		}
	}
	for k := range st.R {
		for i := range st.R[k] {
			st.R[k][i] /= float64(st.N[k])
		}
	}
	return st, nil
}

func intersect(a, b []uint32) []uint32 {
	out := make([]uint32, 0, min(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}
