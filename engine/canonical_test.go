package engine

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// TestCanonicalTermsDict: CanonicalTermsDict (no list touched) and
// CanonicalTermsIDs (the IDs looked up by the caller) give
// CanonicalTerms's terms, order, weights and unknown flag, for queries with
// repeated, absent and many (over a lookup chunk) terms, with and without
// QTF; and the terms are in canonical order (df, then ID), distinct.
func TestCanonicalTermsDict(t *testing.T) {
	x, _ := smallIndex(t, "bp128", 300, 16, 1)
	rng := rand.New(rand.NewSource(5))
	var a, b, c []Term
	var ids []int
	var dfs []uint32
	found := 0 // the most terms of one query found
	for n := range 200 {
		q := Query{Mode: And, K: 10, QTF: n%2 == 0}
		for range 1 + rng.Intn(40) {
			q.Terms = append(q.Terms, fmt.Sprintf("t%03d", rng.Intn(30))) // t024-t029: absent (24 terms)
		}
		if n%5 == 0 {
			q.Terms = append(q.Terms, "absent-term")
		}
		var ua, ub bool
		a, ua = CanonicalTerms(a, x, q)
		b, ub = CanonicalTermsDict(b, x, q)
		if !slices.Equal(a, b) || ua != ub {
			t.Fatalf("%v: CanonicalTermsDict %v %v, CanonicalTerms %v %v", q.Terms, b, ub, a, ua)
		}
		ids = slices.Grow(ids[:0], len(q.Terms))[:len(q.Terms)]
		x.LookupDict(q.Terms, ids)
		var uc bool
		c, uc = CanonicalTermsIDs(c, x, q, ids, nil)
		if !slices.Equal(a, c) || ua != uc {
			t.Fatalf("%v: CanonicalTermsIDs %v %v, CanonicalTerms %v %v", q.Terms, c, uc, a, ua)
		}
		dfs = slices.Grow(dfs[:0], len(q.Terms))[:len(q.Terms)]
		x.LookupDictDF(q.Terms, ids, dfs)
		for i, id := range ids {
			if (id < 0 && dfs[i] != 0) || (id >= 0 && dfs[i] != x.Record(id).DF) {
				t.Fatalf("%v: LookupDictDF term %d: id %d, df %d", q.Terms, i, id, dfs[i])
			}
		}
		c, uc = CanonicalTermsIDs(c, x, q, ids, dfs)
		if !slices.Equal(a, c) || ua != uc {
			t.Fatalf("%v: CanonicalTermsIDs with dfs %v %v, CanonicalTerms %v %v", q.Terms, c, uc, a, ua)
		}
		if n%5 == 0 && !ua {
			t.Fatalf("%v: unknown %v", q.Terms, ua)
		}
		found = max(found, len(a))
		for i := 1; i < len(a); i++ {
			if a[i-1].DF > a[i].DF || (a[i-1].DF == a[i].DF && a[i-1].ID >= a[i].ID) {
				t.Fatalf("%v: not in canonical order: %v", q.Terms, a)
			}
		}
	}
	if found < 10 {
		t.Fatalf("at most %d terms of a query found", found)
	}
}
