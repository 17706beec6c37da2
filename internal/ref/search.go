package ref

import (
	"fmt"
	"sort"

	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/score"
	"github.com/qpengine/qp/topk"
)

// Postings is the brute-force view of an index: term → docID → tf.
type Postings map[string]map[uint32]uint32

// PostingsFromLists builds Postings from parallel term / docs / freqs slices.
func PostingsFromLists(terms []string, docs, freqs [][]uint32) Postings {
	p := Postings{}
	for i, t := range terms {
		if len(docs[i]) == 0 {
			continue
		}
		m := map[uint32]uint32{}
		for j, d := range docs[i] {
			m[d] = freqs[i][j]
		}
		p[t] = m
	}
	return p
}

// PostingsFromIndex decodes every list of x.
func PostingsFromIndex(x *index.Index) (Postings, error) {
	p := Postings{}
	for t := 0; t < x.NumTerms(); t++ {
		l, err := x.List(t)
		if err != nil {
			return nil, err
		}
		docs, freqs, err := l.Decode(nil, nil)
		if err != nil {
			return nil, err
		}
		p[x.Term(t)] = PostingsFromLists([]string{"x"}, [][]uint32{docs}, [][]uint32{freqs})["x"]
	}
	return p, nil
}

// Mode is the query mode of the reference (mirrors engine.Mode without
// importing it).
type Mode int

const (
	And   Mode = iota // every term must occur
	Or                // any term may occur
	AndOr             // And; when it finds fewer than k results, Or (Ding et al. WWW'09 §8)
)

// Search ranks every document by BM25 exactly as score/bm25.go defines it:
// the distinct known query terms in canonical order (ascending df, ties by
// ascending term ID, i.e. ascending byte order of the terms),
// per document the float32 sum of score.Term in that order, then a full sort
// by (score desc, docID asc) cut to k. Unknown terms make an And query empty
// and are ignored by Or. norms are the per-document BM25 length norms, n the
// number of documents.
func Search(p Postings, params score.Params, norms []float32, n int, terms []string, mode Mode, k int) []topk.Result {
	return SearchQTF(p, params, norms, n, terms, mode, k, false)
}

// SearchQTF is Search where, with qtf, a term occurring m times in terms
// contributes float32(m × its score) (engine.Query.QTF).
func SearchQTF(p Postings, params score.Params, norms []float32, n int, terms []string, mode Mode, k int, qtf bool) []topk.Result {
	if mode == AndOr {
		r := SearchQTF(p, params, norms, n, terms, And, k, qtf)
		if len(r) >= k {
			return r
		}
		return SearchQTF(p, params, norms, n, terms, Or, k, qtf)
	}
	var qt []string
	seen := map[string]bool{}
	weight := map[string]float32{}
	for _, t := range terms {
		if qtf {
			weight[t]++
		} else {
			weight[t] = 1
		}
		if seen[t] {
			continue
		}
		seen[t] = true
		if _, ok := p[t]; !ok {
			if mode == And {
				return nil
			}
			continue
		}
		qt = append(qt, t)
	}
	sort.Slice(qt, func(i, j int) bool {
		a, b := len(p[qt[i]]), len(p[qt[j]])
		if a != b {
			return a < b
		}
		return qt[i] < qt[j] // term IDs are ranks in byte order
	})
	k1p1 := params.K1p1()
	var out []topk.Result
	for d := 0; d < n; d++ {
		var s float32
		matched := 0
		for _, t := range qt {
			tf, ok := p[t][uint32(d)]
			if !ok {
				continue
			}
			matched++
			// The conversion forbids fusing the multiply into the add (Go spec,
			// floating-point operators), as the engine does.
			s += float32(weight[t] * score.Term(score.IDF(uint64(n), uint64(len(p[t]))), k1p1, tf, norms[d]))
		}
		switch mode {
		case And:
			if len(qt) == 0 || matched < len(qt) {
				continue
			}
		case Or:
			if matched == 0 {
				continue
			}
		default:
			panic(fmt.Sprintf("BUG: ref: mode %d", mode))
		}
		out = append(out, topk.Result{Doc: uint32(d), Score: s})
	}
	return TopK(out, k)
}

// TopK fully sorts rs by (score desc, docID asc) and keeps the first k.
func TopK(rs []topk.Result, k int) []topk.Result {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Score != rs[j].Score {
			return rs[i].Score > rs[j].Score
		}
		return rs[i].Doc < rs[j].Doc
	})
	if len(rs) > k {
		rs = rs[:k]
	}
	return rs
}
