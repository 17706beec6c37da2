package gpu

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// TestOrWhole checks the OR queries answered whole (orwhole.go,
// query_orwhole.cu) against the CPU engine: blocks of 32 and 128
// postings, with and without ties (equal scores, ranked by docID), k from
// 1 to 1000 beyond the results, one term, repeated terms with and without
// QTF, unknown terms, queries just under and over kern.OrWholeMax
// postings (the latter on the tiles, in the same batch), lists that
// share most documents (sums of up to 8 terms). Some queries
// must run whole and some on the tiles, and the whole ones must decode
// every block of their lists once.
func TestOrWhole(t *testing.T) {
	c := testContext(t)
	nq := 24
	if emulated(c) {
		nq = 8
	}
	for _, bs := range []int{32, 128} {
		for _, ties := range []bool{false, true} {
			t.Run(fmt.Sprintf("B%d/ties=%v", bs, ties), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(41 + bs)))
				col := genCollection(rng, 5000, 40, bs, ties)
				// Eight lists over the same 256 documents: most of their
				// documents hold several of them (sums of up to 8 terms).
				var over []string
				for i := range 8 {
					docs := rng.Perm(256)[:150+10*i]
					slices.Sort(docs)
					d32, f32 := make([]uint32, len(docs)), make([]uint32, len(docs))
					for j, d := range docs {
						d32[j], f32[j] = uint32(d), 1
						if !ties { // (with ties every length stays 10)
							f32[j] = uint32(1 + rng.Intn(5))
							col.lens[d] += f32[j]
						}
					}
					over = append(over, fmt.Sprintf("u%d", i))
					col.terms, col.docs, col.freqs = append(col.terms, over[i]), append(col.docs, d32), append(col.freqs, f32)
				}
				x := col.bp128(t)
				byDF := slices.Clone(col.terms)
				df := map[string]int{}
				for i, term := range col.terms {
					df[term] = len(col.docs[i])
				}
				slices.SortFunc(byDF, func(a, b string) int { return df[a] - df[b] })
				// Two lists of at most OrWholeMax postings together, and the
				// densest list (more than OrWholeMax: the tiles).
				var a, b string
				for i := len(byDF) - 1; i > 0 && a == ""; i-- {
					for j := i - 1; j >= 0; j-- {
						if df[byDF[i]]+df[byDF[j]] <= 2048 && df[byDF[i]] > 256 {
							a, b = byDF[i], byDF[j]
							break
						}
					}
				}
				dense := byDF[len(byDF)-1]
				if a == "" || df[dense] <= 2048 {
					t.Fatalf("no pair of lists under 2048 postings (%q) or no dense list (%d)", a, df[dense])
				}
				terms := randomQueries(rng, col.terms, nq, [][]string{
					{col.terms[0]}, {col.terms[2], col.terms[3]}, {a, b}, {a, b, a}, {a, "zz-unknown", b},
					{dense}, {a, dense}, byDF[:10], over, over[2:6], {over[7], over[0], over[3], over[3]},
				})
				qs := orQueries(terms, []int{1, 10, 1000})
				g := newBackend(t, x, Options{})
				compare(t, x, g, qs)
				p := g.Profile()
				if p.OrWholeQueries == 0 || p.OrTilesRun == 0 {
					t.Fatalf("%d queries whole, %d tiles run: want both", p.OrWholeQueries, p.OrTilesRun)
				}
				if p.OrWholeBlocks == 0 {
					t.Fatalf("%d queries whole decoded no blocks", p.OrWholeQueries)
				}
				t.Logf("%d of %d queries whole (%d blocks), %d tiles run", p.OrWholeQueries, len(qs), p.OrWholeBlocks, p.OrTilesRun)
			})
		}
	}
}

// TestOrWholeCorrupt damages one block of a list that queries answered
// whole hold (a docID header, a frequency header, one gap): those OR
// queries fail with index.ErrCorrupt, as on the CPU, the others are exact.
func TestOrWholeCorrupt(t *testing.T) {
	testContext(t)
	for _, what := range []string{"docID header", "frequency header", "docID values"} {
		t.Run(what, func(t *testing.T) {
			rng := rand.New(rand.NewSource(7))
			col := genCollection(rng, 3000, 40, 32, false)
			x := col.bp128(t)
			tid := damageMiddleBlock(t, x, 1000, what)
			term := x.Term(tid)
			var others []string
			for i := range x.NumTerms() {
				if l, _ := x.List(i); i != tid && l.DF <= 300 && len(others) < 2 {
					others = append(others, x.Term(i))
				}
			}
			var qs []engine.Query
			for i, ts := range [][]string{{term}, {term, others[0]}, {others[1], term}, others} {
				qs = append(qs, engine.Query{ID: fmt.Sprint(i), Terms: ts, Mode: engine.Or, K: 10})
			}
			g := newBackend(t, x, Options{})
			checkDamaged(t, x, g, qs, term)
			if g.Profile().OrWholeQueries == 0 {
				t.Error("no query ran whole")
			}
		})
	}
}

// checkDamaged runs qs on g and on the CPU engine: the queries holding
// the damaged term must fail with index.ErrCorrupt on both, the others
// must equal the CPU's responses.
func checkDamaged(t *testing.T, x *index.Index, g engine.Backend, qs []engine.Query, term string) {
	t.Helper()
	got, want := searchBoth(t, x, g, qs)
	for i, q := range qs {
		if slices.Contains(q.Terms, term) {
			if !errors.Is(got[i].Err, index.ErrCorrupt) || !errors.Is(want[i].Err, index.ErrCorrupt) {
				t.Errorf("query %s %q: GPU error %v, CPU error %v, want index.ErrCorrupt", q.ID, q.Terms, got[i].Err, want[i].Err)
			}
		} else if msg := sameResponse(got[i], want[i]); msg != "" {
			t.Errorf("query %s %q without the damaged term: %s", q.ID, q.Terms, msg)
		}
	}
}
