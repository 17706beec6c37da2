package gen

import (
	"context"
	"slices"

	"github.com/qpengine/qp/index"
)

// Co-occurrence of the query log's queries within a sample (docs/GEN.md,
// "--fit": the query terms' topical share). Known-item queries
// (cooccur.go) measure how the words of one document meet again; the log's
// queries measure how the terms that users put together meet: Ao et al.'s
// R ratios of the TREC efficiency queries (VLDB 2011, Table 4), which the
// query terms' placement in topics (placeQueries: φ, QueryTopical) sets.
// Measured on the same uniform sample of documents on both sides (the real
// index's, the generated collection's first documents): for fixed terms,
// both |ℓ1 ∩ … ∩ ℓx| and |ℓx+1| thin with the sample alike, so the ratios
// keep their expectation.

// maxQueryCooccur bounds the log queries measured (the first ones of 2 to
// CooccurMaxTerms distinct terms, in log order).
const maxQueryCooccur = 50000

// logQueries returns the log's queries of 2..CooccurMaxTerms distinct
// terms (at most maxQueryCooccur, in log order) as term ids given by id
// (a log term id → an id of the sample, ok false when the term has none:
// the query is then left out).
func logQueries(log *QueryLog, id func(lt int32) (uint32, bool)) [][]uint32 {
	var out [][]uint32
	var q []uint32
	for _, lq := range log.Queries {
		q = q[:0]
		ok := true
		for _, lt := range lq {
			t, has := id(lt)
			if !has {
				ok = false
				break
			}
			if !slices.Contains(q, t) {
				q = append(q, t)
			}
		}
		if !ok || len(q) < 2 || len(q) > CooccurMaxTerms {
			continue
		}
		out = append(out, slices.Clone(q))
		if len(out) == maxQueryCooccur {
			break
		}
	}
	return out
}

// measureQueryCooccur computes CooccurStats (R ratios, AND median) of the
// queries (distinct term ids of docs' id space, 2..CooccurMaxTerms each)
// over the forward view docs, counting the queries whose terms all occur
// in docs, as Ao's ratios count those whose terms are all in the index.
func measureQueryCooccur(docs [][]uint32, queries [][]uint32) CooccurStats {
	st := CooccurStats{Docs: len(docs)}
	want := map[uint32]bool{}
	for _, q := range queries {
		for _, t := range q {
			want[t] = true
		}
	}
	lists := map[uint32][]int32{}
	for d, ts := range docs {
		for _, t := range ts {
			if want[t] {
				lists[t] = append(lists[t], int32(d))
			}
		}
	}
	var acc cooccurAcc
	var ls [][]int32
	for _, q := range queries {
		k := len(q)
		ls = ls[:0]
		for _, t := range q {
			if l := lists[t]; len(l) > 0 {
				ls = append(ls, l)
			}
		}
		if len(ls) < k {
			continue
		}
		acc.add(&st, ls)
	}
	acc.finish(&st)
	return st
}

// MeasureIndexQueryCooccur measures the log's queries' CooccurStats on the
// same uniform sample of n of x's documents as MeasureIndexCooccur (same
// seed), each log term looked up as it is (the fit assumes an index of
// the default analysis, as FitIndex's query dfs do).
func MeasureIndexQueryCooccur(x *index.Index, n int, seed uint64, log *QueryLog) (CooccurStats, error) {
	docs, err := sampleIndexDocs(x, n, seed)
	if err != nil {
		return CooccurStats{}, err
	}
	ids := make([]int, len(log.Terms))
	for i, q := range log.Terms {
		t, ok := x.Lookup(q)
		if !ok {
			t = -1
		}
		ids[i] = t
	}
	qs := logQueries(log, func(lt int32) (uint32, bool) { return uint32(ids[lt]), ids[lt] >= 0 })
	return measureQueryCooccur(docs, qs), nil
}

// sampleQueryCooccur generates documents 0..n-1 and measures the log's
// queries' CooccurStats on them (the query terms are word ids
// 0..len(qterms)-1).
func (t *Topics) sampleQueryCooccur(ctx context.Context, n int) (CooccurStats, error) {
	docs, err := t.sampleDocs(ctx, n)
	if err != nil {
		return CooccurStats{}, err
	}
	return measureQueryCooccur(docs, t.logQueryIDs()), nil
}

// logQueryIDs maps the log's queries to word ids (the kept query terms).
func (t *Topics) logQueryIDs() [][]uint32 {
	if t.cfg.Log == nil {
		return nil
	}
	ids := t.logToKept()
	return logQueries(t.cfg.Log, func(lt int32) (uint32, bool) { return uint32(ids[lt]), ids[lt] >= 0 })
}
