package engine

import (
	"fmt"
	"slices"

	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/topk"
)

// Term is a distinct query term present in the index, with its query weight.
type Term struct {
	ID int     // term ID in the index
	DF uint32  // document frequency
	W  float32 // 1, or the term's count in the query with Query.QTF
}

// Validate checks q the way every Backend must, returning errors wrapping
// ErrEmptyQuery, ErrTooManyTerms, ErrBadK or ErrBadMode; prefix names the
// backend in the message ("engine", "gpu").
func Validate(q Query, prefix string) error {
	switch {
	case len(q.Terms) == 0:
		return fmt.Errorf("%s: query %q: %w", prefix, q.ID, ErrEmptyQuery)
	case len(q.Terms) > MaxTerms:
		return fmt.Errorf("%s: query %q: %w: %d terms, at most %d", prefix, q.ID, ErrTooManyTerms, len(q.Terms), MaxTerms)
	case q.K < 1 || q.K > topk.MaxK:
		return fmt.Errorf("%s: query %q: %w: k = %d, want 1..%d", prefix, q.ID, ErrBadK, q.K, topk.MaxK)
	case q.Mode < And || q.Mode > AndOr:
		return fmt.Errorf("%s: query %q: %w: %d", prefix, q.ID, ErrBadMode, q.Mode)
	}
	return nil
}

// CanonicalTerms fills dst[:0] with the distinct terms of q found in x, in
// the canonical order of score/bm25.go (ascending df, ties by ascending term
// ID), each weighted by its count under QTF and 1 otherwise, and reports
// whether some term is absent from x. Every backend sums scores in this
// order, which is what makes their results bit-identical.
func CanonicalTerms(dst []Term, x *index.Index, q Query) ([]Term, bool) {
	return canonicalTerms(dst, x, q, true)
}

// CanonLists is an AND query's distinct terms in canonical order with
// their posting lists, for code that reads the lists itself (the
// measurers of bench/bmand and bench/andprune); Load reuses its slices.
type CanonLists struct {
	Terms []Term       // CanonicalTerms
	Lists []index.List // Lists[i] is Terms[i]'s
	ids   []int
}

// Load sets c to q's canonical terms and their lists. ok is false, and
// no list is read, when q has no term in x or a term absent from x (an
// AND query without work); a list that cannot be read is an error.
func (c *CanonLists) Load(x *index.Index, q Query) (ok bool, err error) {
	var unknown bool
	c.Terms, unknown = CanonicalTerms(c.Terms, x, q)
	if unknown || len(c.Terms) == 0 {
		return false, nil
	}
	c.ids = c.ids[:0]
	for _, t := range c.Terms {
		c.ids = append(c.ids, t.ID)
	}
	c.Lists = slices.Grow(c.Lists[:0], len(c.ids))[:len(c.ids)]
	if err := x.ListsInto(c.Lists, c.ids); err != nil {
		return false, err
	}
	return true, nil
}

// CanonicalTermsDict is CanonicalTerms for a backend that does not read
// the posting lists on the host (the GPU's are in device memory): the
// dictionary lookups do not touch the lists' heads (index.LookupDict).
// The terms are the same.
func CanonicalTermsDict(dst []Term, x *index.Index, q Query) ([]Term, bool) {
	return canonicalTerms(dst, x, q, false)
}

// CanonicalTermsIDs is CanonicalTerms from the dictionary IDs of q's
// terms, ids[i] for q.Terms[i] as index.LookupDict or LookupAll give them
// (-1: absent), and their document frequencies dfs[i] as
// index.LookupDictDF gives them (nil: read here from the records): a
// backend that prepares many queries looks their terms up together,
// several queries' terms in one call, so that the dictionary's cache
// misses of different queries overlap (issue 24: the GPU's batch
// preparation). The terms and the flag are CanonicalTerms'.
func CanonicalTermsIDs(dst []Term, x *index.Index, q Query, ids []int, dfs []uint32) ([]Term, bool) {
	if len(ids) != len(q.Terms) || (dfs != nil && len(dfs) != len(ids)) {
		panic(fmt.Sprintf("BUG: engine.CanonicalTermsIDs: %d ids and %d dfs for %d terms", len(ids), len(dfs), len(q.Terms)))
	}
	dst = dst[:0]
	unknown := false
	for i, id := range ids {
		if id < 0 {
			unknown = true
			continue
		}
		var df uint32
		if dfs != nil {
			df = dfs[i]
		}
		dst = append(dst, Term{ID: id, DF: df, W: 1})
	}
	return canonicalOrder(dst, x, q.QTF, dfs == nil), unknown
}

func canonicalTerms(dst []Term, x *index.Index, q Query, lists bool) ([]Term, bool) {
	dst = dst[:0]
	unknown := false
	var ids [32]int // LookupAll's output, a chunk of the query at a time
	for terms := q.Terms; len(terms) > 0; {
		n := min(len(terms), len(ids))
		if lists {
			x.LookupAll(terms[:n], ids[:n])
		} else {
			x.LookupDict(terms[:n], ids[:n])
		}
		for _, id := range ids[:n] {
			if id < 0 {
				unknown = true
				continue
			}
			dst = append(dst, Term{ID: id, W: 1})
		}
		terms = terms[n:]
	}
	return canonicalOrder(dst, x, q.QTF, true), unknown
}

// canonicalOrder reads the document frequencies of dst's terms (IDs, W
// 1) when readDF (otherwise dst has them), sorts the terms into the
// canonical order and merges repeated terms (their weights summed under
// qtf).
func canonicalOrder(dst []Term, x *index.Index, qtf, readDF bool) []Term {
	// The records' reads are independent: a loop of its own lets their
	// cache misses overlap.
	if readDF {
		for i := range dst {
			dst[i].DF = x.Record(dst[i].ID).DF
		}
	}
	sortCanonical(dst)
	u := 0
	for i := range dst {
		if u > 0 && dst[u-1].ID == dst[i].ID {
			if qtf {
				dst[u-1].W++
			}
			continue
		}
		dst[u] = dst[i]
		u++
	}
	return dst[:u]
}

// canonicalLess is the canonical order of terms: ascending df, ties by
// ascending term ID (repeated terms, equal in both, are merged after).
func canonicalLess(a, b Term) bool { return a.DF < b.DF || (a.DF == b.DF && a.ID < b.ID) }

// sortSmall is the longest term list sortCanonical sorts by insertion.
const sortSmall = 12

// sortCanonical sorts terms into the canonical order: by insertion with
// the comparison inlined for a query's usual few terms (TREC'06: about
// three), where slices.SortFunc calls its comparison function for each
// step (BenchmarkSortCanonical, lists of 1-5 terms: 8-13 against 16-28 ns
// a list; a few percent of the GPU backend's preparation of a GCIDE query,
// issue 24, hostq); by slices.SortFunc beyond. Terms equal in the order
// are the same term, so the result is the one any sort gives.
func sortCanonical(t []Term) {
	if len(t) > sortSmall {
		slices.SortFunc(t, func(a, b Term) int {
			switch {
			case canonicalLess(a, b):
				return -1
			case canonicalLess(b, a):
				return 1
			}
			return 0
		})
		return
	}
	for i := 1; i < len(t); i++ {
		v, j := t[i], i
		for ; j > 0 && canonicalLess(v, t[j-1]); j-- {
			t[j] = t[j-1]
		}
		t[j] = v
	}
}
