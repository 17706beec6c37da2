package engine

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/qpengine/qp/index"
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

// TestQueryDict: a query that carries its terms looked up (Query.Dict, as
// qp serve sets it) is answered as the same query without, in every mode,
// with repeated and absent terms; a Dict of another index is ignored (here
// wrong IDs: not read); a Dict is what the engine reads (one naming other
// terms answers those); and a Dict whose length is not the query's, or
// with an ID outside the dictionary, is a bug (panic).
func TestQueryDict(t *testing.T) {
	x, col := smallIndex(t, "bp128", 2000, 32, 6)
	other, _ := smallIndex(t, "bp128", 2000, 32, 6)
	rng := rand.New(rand.NewSource(8))
	e := New(x)
	lookup := func(x *index.Index, q Query) *TermLookup {
		d := &TermLookup{X: x, IDs: make([]int, len(q.Terms)), DFs: make([]uint32, len(q.Terms))}
		x.LookupDictDF(q.Terms, d.IDs, d.DFs)
		return d
	}
	hits := 0
	for i := range 150 {
		q := Query{ID: fmt.Sprint(i), Terms: genQuery(rng, col.Terms), Mode: Mode(1 + i%3), K: 10, QTF: i%4 == 0}
		if i%7 == 0 {
			q.Terms = append(q.Terms, q.Terms[0])
		}
		if i%9 == 0 {
			q.Terms = append(q.Terms, "absent-term")
		}
		want, _, werr := e.Search(q, Options{})
		want = slices.Clone(want)
		q.Dict = lookup(x, q)
		got, _, err := e.Search(q, Options{})
		if fmt.Sprint(err) != fmt.Sprint(werr) || !slices.Equal(got, want) {
			t.Fatalf("query %d %q: with Dict %v %v, without %v %v", i, q.Terms, got, err, want, werr)
		}
		q.Dict = lookup(other, q)
		clear(q.Dict.IDs) // wrong, for another index: not read
		got, _, err = e.Search(q, Options{})
		if fmt.Sprint(err) != fmt.Sprint(werr) || !slices.Equal(got, want) {
			t.Fatalf("query %d %q: with another index's Dict %v %v, without %v %v", i, q.Terms, got, err, want, werr)
		}
		hits += len(want)
	}
	if hits == 0 {
		t.Fatal("no query found anything")
	}
	// A Dict naming another term answers that term.
	q := Query{Terms: []string{col.Terms[0]}, Mode: Or, K: 10}
	want, _, _ := e.Search(Query{Terms: []string{col.Terms[1]}, Mode: Or, K: 10}, Options{})
	want = slices.Clone(want)
	q.Dict = lookup(x, Query{Terms: []string{col.Terms[1]}})
	if got, _, err := e.Search(q, Options{}); err != nil || len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("a Dict of %q: %v %v, want %v", col.Terms[1], got, err, want)
	}
	for _, d := range []*TermLookup{
		{X: x, IDs: []int{0}, DFs: []uint32{1}},                  // 1 ID for 2 terms
		{X: x, IDs: []int{0, x.NumTerms()}, DFs: []uint32{1, 1}}, // past the dictionary
		{X: x, IDs: []int{-2, 0}, DFs: []uint32{1, 1}},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "BUG:") {
					t.Fatalf("a Dict %+v: recovered %v, want a BUG panic", d, r)
				}
			}()
			_, _, _ = e.Search(Query{Terms: []string{"a", "b"}, Mode: And, K: 10, Dict: d}, Options{})
		}()
	}
}

// TestCanonLists: Load gives CanonicalTerms' terms with each term's own
// list, reuses its slices, and reports no work (without reading lists)
// for a query with an absent term or none.
func TestCanonLists(t *testing.T) {
	x, _ := smallIndex(t, "bp128", 300, 16, 1)
	var c CanonLists
	var want []Term
	for _, terms := range [][]string{{"t003", "t001", "t003"}, {"t010"}, {"t002", "t005", "t007", "t001"}} {
		q := Query{Terms: terms, Mode: And, K: 10}
		ok, err := c.Load(x, q)
		if !ok || err != nil {
			t.Fatalf("%v: Load %v %v", terms, ok, err)
		}
		want, _ = CanonicalTerms(want, x, q)
		if !slices.Equal(c.Terms, want) || len(c.Lists) != len(want) {
			t.Fatalf("%v: terms %v and %d lists, want %v", terms, c.Terms, len(c.Lists), want)
		}
		for i, l := range c.Lists {
			if l.Term != want[i].ID || l.DF != want[i].DF {
				t.Errorf("%v: list %d is term %d (df %d), want %d (df %d)", terms, i, l.Term, l.DF, want[i].ID, want[i].DF)
			}
		}
	}
	for _, terms := range [][]string{{"t001", "absent-term"}, {"absent-term"}} {
		if ok, err := c.Load(x, Query{Terms: terms, Mode: And, K: 10}); ok || err != nil {
			t.Errorf("%v: Load %v %v, want no work and no error", terms, ok, err)
		}
	}
}

// TestSortCanonical: sortCanonical gives the order of the comparison
// canonicalOrder used before (ascending df, ties by ascending ID), on
// lists of every length around its insertion-sort bound, with repeated
// terms and equal document frequencies.
func TestSortCanonical(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for n := range 3 * sortSmall {
		for range 200 {
			terms := make([]Term, n)
			for i := range terms {
				id := rng.Intn(2 * n)
				terms[i] = Term{ID: id, DF: uint32(id % 5 * 1000), W: 1} // the df a function of the ID
			}
			want := slices.Clone(terms)
			slices.SortFunc(want, func(a, b Term) int {
				if a.DF != b.DF {
					if a.DF < b.DF {
						return -1
					}
					return 1
				}
				return a.ID - b.ID
			})
			sortCanonical(terms)
			if !slices.Equal(terms, want) {
				t.Fatalf("%d terms: %v, want %v", n, terms, want)
			}
		}
	}
}

// BenchmarkSortCanonical: sortCanonical against slices.SortFunc with the
// comparison canonicalOrder used before, on lists of 1-5 terms (a TREC'06
// query's); ns/op per list.
func BenchmarkSortCanonical(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	lists := make([][]Term, 4096)
	for i := range lists {
		for range 1 + rng.Intn(5) {
			lists[i] = append(lists[i], Term{ID: rng.Intn(100000), DF: uint32(rng.Intn(50000)), W: 1})
		}
	}
	buf := make([]Term, 0, 16)
	b.Run("insertion", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			buf = append(buf[:0], lists[i%len(lists)]...)
			sortCanonical(buf)
		}
	})
	b.Run("sortfunc", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			buf = append(buf[:0], lists[i%len(lists)]...)
			slices.SortFunc(buf, func(a, b Term) int {
				if a.DF != b.DF {
					if a.DF < b.DF {
						return -1
					}
					return 1
				}
				return a.ID - b.ID
			})
		}
	})
}
