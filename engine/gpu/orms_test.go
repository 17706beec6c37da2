package gpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// msCollection is genCollection plus rare terms whose few documents repeat
// them often ("zrare0".."zrare3", df 3, 12, 40, 130): queries of one of
// them and common terms have a 10th score that the common terms' maxima
// cannot reach, so OrMaxScore certifies them (MaxScore with one essential
// list); with k past their df, or two rare terms, it cannot (fallback to
// the tiles). Synthetic: real rare terms are not this bursty everywhere.
func msCollection(rng *rand.Rand, n, bs int) *collection {
	col := genCollection(rng, n, 20, bs, false)
	for i, df := range []int{3, 12, 40, 130} {
		df = min(df, n)
		perm := rng.Perm(n)[:df]
		docs := make([]uint32, df)
		for j, d := range perm {
			docs[j] = uint32(d)
		}
		slices.Sort(docs)
		freqs := make([]uint32, df)
		for j, d := range docs {
			freqs[j] = uint32(5 + rng.Intn(40))
			col.lens[d] += freqs[j]
		}
		col.terms = append(col.terms, fmt.Sprintf("zrare%d", i))
		col.docs = append(col.docs, docs)
		col.freqs = append(col.freqs, freqs)
	}
	return col
}

// msQueries are OR and AND+OR queries for msCollection: a rare term with
// 1-4 common ones (certifiable at small k), two rare terms, one term
// alone, repeated terms (QTF), an unknown term, and random genQuery ones.
func msQueries(rng *rand.Rand, col *collection, nrand int) []engine.Query {
	common := col.terms[6:20]
	var terms [][]string
	for r := range 4 {
		rare := fmt.Sprintf("zrare%d", r)
		for m := 1; m <= 4; m++ {
			q := []string{rare}
			for range m {
				q = append(q, common[rng.Intn(len(common))])
			}
			terms = append(terms, q)
		}
		terms = append(terms, []string{rare}, []string{rare, rare, common[0]}, []string{common[1], rare, "zz-unknown"})
	}
	terms = append(terms, []string{"zrare0", "zrare2", common[0]}, []string{"zrare1", "zrare3"}, []string{common[0]},
		[]string{"zz-unknown"}, []string{common[2], common[2]})
	terms = randomQueries(rng, col.terms, nrand, terms)
	return orQueries(terms, []int{1, 10, 100, 10000})
}

// TestOrMaxScore compares OrMaxScore with the CPU engine (bit-identical
// scores, ties by docID) on collections where it prunes, and checks that
// it answered queries with one essential list (pass A, with candidates
// dropped by the seed threshold) and with two (pass B), and sent others
// to the tiles.
func TestOrMaxScore(t *testing.T) {
	c := testContext(t)
	emu := emulated(c)
	bp, _ := compress.ByName("bp128")
	for _, codec := range []compress.Codec{bp, gpuCodecs()[0]} {
		for _, bs := range []int{16, 128} {
			for _, n := range []int{300, 3000} {
				if emu && n > 300 && bs == 16 {
					continue
				}
				name := fmt.Sprintf("%s/B%d/N%d", codec.Name(), bs, n)
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewSource(int64(n + bs)))
					col := msCollection(rng, n, bs)
					x := col.write(t, codec)
					qs := msQueries(rng, col, 6)
					g := newBackend(t, x, Options{Or: OrMaxScore})
					g.SetProfile(true)
					compare(t, x, g, qs)
					pr := g.Profile()
					if pr.OrMSCertified == 0 || pr.OrMSCertified2 == 0 || pr.OrMSQueries == pr.OrMSCertified+pr.OrMSCertified2 {
						t.Fatalf("MaxScore ran %d queries, answered %d by the shortest list and %d by later passes: want some of each and some sent to the tiles",
							pr.OrMSQueries, pr.OrMSCertified, pr.OrMSCertified2)
					}
					if pr.OrMSKept >= pr.OrMSCandidates {
						t.Fatalf("MaxScore kept %d of %d candidates: want some dropped by their bounds", pr.OrMSKept, pr.OrMSCandidates)
					}
					t.Logf("MaxScore: %d queries routed, %d answered by pass A, %d later passes, %d queries answered by them; %d of %d candidates kept",
						pr.OrMSQueries, pr.OrMSCertified, pr.OrMSSecond, pr.OrMSCertified2, pr.OrMSKept, pr.OrMSCandidates)
					checkPruned(t, x, g, qs)
				})
			}
		}
	}
}

// checkPruned runs qs again and requires that some query answered by
// MaxScore kept fewer candidates than its shortest list holds (the seed
// threshold dropped the others).
func checkPruned(t *testing.T, x *index.Index, g *Backend, qs []engine.Query) {
	t.Helper()
	out := make([]engine.Response, len(qs))
	if err := g.SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
		t.Fatal(err)
	}
	answered, pruned := 0, 0
	for i, q := range qs {
		if out[i].Stats.OrAlgo != OrGPUMaxScore || q.Mode != engine.Or {
			continue
		}
		answered++
		terms, _ := engine.CanonicalTerms(nil, x, q)
		if len(terms) > 1 && out[i].Stats.Candidates < int64(terms[0].DF) {
			pruned++
		}
	}
	if answered == 0 || pruned == 0 {
		t.Fatalf("%d OR queries answered by MaxScore, %d of them pruned: want both > 0", answered, pruned)
	}
}

// TestOrMaxScoreStrategy checks Options.Or and SetOr take "maxscore".
func TestOrMaxScoreStrategy(t *testing.T) {
	testContext(t)
	rng := rand.New(rand.NewSource(3))
	x := msCollection(rng, 200, 16).bp128(t)
	g := newBackend(t, x, Options{Or: OrMaxScore})
	if err := g.SetOr(OrTiled); err != nil {
		t.Fatal(err)
	}
	if err := g.SetOr(OrMaxScore); err != nil {
		t.Fatal(err)
	}
	if err := g.SetOr("nope"); err == nil {
		t.Fatal(`SetOr("nope") succeeded`)
	}
	if _, err := New(x, Options{Or: "nope"}); err == nil || errors.Is(err, ErrUnsupported) {
		t.Fatalf(`New with Or "nope": %v, want an option error`, err)
	}
}

// TestOrMaxScoreCorrupt damages a block of a rare and of a common list:
// MaxScore queries over them fail with index.ErrCorrupt like the CPU's
// when the CPU meets the block, and every query without the damaged term
// is answered exactly.
func TestOrMaxScoreCorrupt(t *testing.T) {
	testContext(t)
	for _, victim := range []string{"zrare3", "t006"} {
		t.Run(victim, func(t *testing.T) {
			rng := rand.New(rand.NewSource(9))
			col := msCollection(rng, 2000, 16)
			x := col.bp128(t)
			tid, ok := x.Lookup(victim)
			if !ok {
				t.Fatalf("no term %s", victim)
			}
			l, err := x.List(tid)
			if err != nil {
				t.Fatal(err)
			}
			b := l.NBlocks / 2
			l.DocBlock(b)[0] = 0xff // the docID header: not the block's count
			qs := msQueries(rand.New(rand.NewSource(1)), col, 0)
			g := newBackend(t, x, Options{Or: OrMaxScore})
			got, want := searchBoth(t, x, g, qs)
			failed := 0
			for i, q := range qs {
				if slices.Contains(q.Terms, victim) {
					if got[i].Err != nil {
						failed++
						if !errors.Is(got[i].Err, index.ErrCorrupt) {
							t.Errorf("query %s %q: GPU error %v, want index.ErrCorrupt", q.ID, q.Terms, got[i].Err)
						}
					}
					if want[i].Err != nil && got[i].Err == nil && q.K > 1000 {
						t.Errorf("query %s %q: the CPU fails (%v), the GPU does not", q.ID, q.Terms, want[i].Err)
					}
					continue
				}
				if msg := sameResponse(got[i], want[i]); msg != "" {
					t.Errorf("query %s %q without the damaged term: %s", q.ID, q.Terms, msg)
				}
			}
			if failed == 0 {
				t.Fatalf("no query over %s failed", victim)
			}
		})
	}
}

// TestMSMerge checks pass B's merge: rank order, B's entries of documents
// A holds dropped (A's exact score kept), at most k.
func TestMSMerge(t *testing.T) {
	key := func(doc uint32, score float32) uint64 { return uint64(^math.Float32bits(score))<<32 | uint64(doc) }
	a := []uint64{key(7, 9), key(3, 5), key(1, 2)}
	b := []uint64{key(7, 8), key(4, 6), key(9, 5), key(2, 1)}
	for _, c := range []struct {
		k    int
		want []uint64
	}{
		{10, []uint64{key(7, 9), key(4, 6), key(3, 5), key(9, 5), key(1, 2), key(2, 1)}},
		{3, []uint64{key(7, 9), key(4, 6), key(3, 5)}},
		{1, []uint64{key(7, 9)}},
	} {
		got := msMerge(nil, a, b, c.k)
		if !slices.Equal(got, c.want) {
			t.Errorf("k = %d: got %x, want %x", c.k, got, c.want)
		}
	}
	if got := msMerge(nil, nil, b[:2], 5); !slices.Equal(got, b[:2]) {
		t.Errorf("A empty: got %x", got)
	}
}

// TestOrMaxScoreGen is TestGen's comparison with the CPU for OrMaxScore:
// OR and AND+OR queries of the TREC 2006 log on the gen index, k in {1,
// 10, 100}, with and without QTF.
func TestOrMaxScoreGen(t *testing.T) {
	c := testContext(t)
	x, queries := genIndex(t)
	nq := 300
	if emulated(c) {
		nq = 12
	}
	rng := rand.New(rand.NewSource(11))
	var terms [][]string
	for range nq {
		terms = append(terms, queries[rng.Intn(len(queries))])
	}
	qs := orQueries(terms, []int{1, 10, 100})
	g := newBackend(t, x, Options{Threshold: 200000, Or: OrMaxScore})
	g.SetProfile(true)
	results, empty := compare(t, x, g, qs)
	pr := g.Profile()
	t.Logf("%d queries, %d results, %d empty: GPU equals CPU; MaxScore: %d routed, %d answered by pass A, %d later passes, %d queries answered by them",
		len(qs), results, empty, pr.OrMSQueries, pr.OrMSCertified, pr.OrMSSecond, pr.OrMSCertified2)
}
