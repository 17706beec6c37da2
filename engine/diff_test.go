package engine

import (
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"sort"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/score"
	"github.com/qpengine/qp/topk"
)

// genCollection makes a random collection of n documents. Lists have
// assorted lengths, including the block boundaries {1, 2, B-1, B, B+1} and
// Zipfian lengths up to n. With ties, every document has the same length and
// every tf is 1, so documents matching the same terms score identically
// (adversarial for tie-breaking and for pruning at the threshold).
func genCollection(rng *rand.Rand, n, nterms, bs int, ties bool) *ref.Collection {
	c := &ref.Collection{Lens: make([]uint32, n)}
	sizes := []int{1, 2, bs - 1, bs, bs + 1, 2*bs + 1}
	for t := 0; t < nterms; t++ {
		var df int
		if t < len(sizes) {
			df = sizes[t]
		} else {
			df = int(float64(n) / math.Pow(float64(t-len(sizes)+1), 0.8))
			df = max(1, df-rng.Intn(df/2+1))
		}
		df = min(max(df, 1), n)
		var docs []uint32
		if df*3 > n {
			for _, d := range rng.Perm(n)[:df] {
				docs = append(docs, uint32(d))
			}
		} else {
			seen := map[uint32]bool{}
			for len(docs) < df {
				d := uint32(rng.Intn(n))
				if !seen[d] {
					seen[d] = true
					docs = append(docs, d)
				}
			}
		}
		sort.Slice(docs, func(i, j int) bool { return docs[i] < docs[j] })
		freqs := make([]uint32, df)
		for i, d := range docs {
			if ties {
				freqs[i] = 1
			} else {
				freqs[i] = uint32(1 + rng.Intn(3)*rng.Intn(4))
				if rng.Intn(50) == 0 {
					freqs[i] = uint32(1 + rng.Intn(200))
				}
			}
			c.Lens[d] += freqs[i]
		}
		c.Terms = append(c.Terms, fmt.Sprintf("t%03d", t))
		c.Docs = append(c.Docs, docs)
		c.Freqs = append(c.Freqs, freqs)
	}
	for d := range c.Lens {
		if ties {
			c.Lens[d] = 10
		} else {
			c.Lens[d] += uint32(rng.Intn(30))
		}
	}
	return c
}

// genQuery draws 1–8 terms, some repeated, some absent from the index.
func genQuery(rng *rand.Rand, terms []string) []string {
	m := 1 + rng.Intn(8)
	var q []string
	for len(q) < m {
		switch r := rng.Intn(20); {
		case r == 0:
			q = append(q, "zz-unknown")
		case r <= 2 && len(q) > 0:
			q = append(q, q[rng.Intn(len(q))])
		case r <= 10:
			q = append(q, terms[rng.Intn(min(len(terms), 8))]) // frequent terms
		default:
			q = append(q, terms[rng.Intn(len(terms))])
		}
	}
	return q
}

// oracle holds the reference rankings of one query (all documents, sorted)
// so that every k is a prefix.
type oracle struct {
	and, or []topk.Result
	qtf     bool    // the rankings weight repeated terms (Query.QTF)
	withQTF *oracle // the QTF rankings, when the query repeats a term
}

func newOracle(p ref.Postings, params score.Params, norms []float32, n int, terms []string) oracle {
	o := oracle{
		and: ref.Search(p, params, norms, n, terms, ref.And, topk.MaxK),
		or:  ref.Search(p, params, norms, n, terms, ref.Or, topk.MaxK),
	}
	seen := map[string]bool{}
	for _, t := range terms {
		if seen[t] {
			o.withQTF = &oracle{
				and: ref.SearchQTF(p, params, norms, n, terms, ref.And, topk.MaxK, true),
				or:  ref.SearchQTF(p, params, norms, n, terms, ref.Or, topk.MaxK, true),
				qtf: true,
			}
			break
		}
		seen[t] = true
	}
	return o
}

func (o oracle) want(mode Mode, k int) []topk.Result {
	pre := func(r []topk.Result) []topk.Result { return r[:min(k, len(r))] }
	switch mode {
	case And:
		return pre(o.and)
	case Or:
		return pre(o.or)
	}
	if len(o.and) >= k {
		return pre(o.and)
	}
	return pre(o.or)
}

func sameResults(got, want []topk.Result) (int, bool) {
	if len(got) != len(want) {
		return -1, false
	}
	for i := range want {
		if got[i].Doc != want[i].Doc || math.Float32bits(got[i].Score) != math.Float32bits(want[i].Score) {
			return i, false
		}
	}
	return 0, true
}

// allOptions is every (AND algorithm, OR strategy) pair, MaxScore and
// BlockMax-WAND kept from switching to TAAT on short queries (NoTAAT: the
// test collections' lists are all short), plus the switch at four limits.
func allOptions() []Options {
	var out []Options
	for _, a := range AndAlgorithms {
		for _, o := range OrStrategies {
			out = append(out, Options{AndAlgo: a, OrAlgo: o, OrTAATPostings: NoTAAT})
		}
		// The default switch, TAAT-then-MaxScore over the lists of up
		// to 40 and 400 postings, and at 2 postings, where most queries
		// have no short list (the TAAT plan from the first list, then
		// absorbing lists of up to 16 postings).
		out = append(out, Options{AndAlgo: a, OrAlgo: OrMaxScore}, Options{AndAlgo: a, OrAlgo: OrMaxScore, OrTAATPostings: 40},
			Options{AndAlgo: a, OrAlgo: OrBMW, OrTAATPostings: 400}, Options{AndAlgo: a, OrAlgo: OrMaxScore, OrTAATPostings: 2})
	}
	return out
}

// pairedOptions covers every AND algorithm and every OR strategy with five
// pairs (for AND+OR, where the AND algorithm only decides whether OR runs).
func pairedOptions() []Options {
	return []Options{{AndAlgo: AndMerge, OrAlgo: OrTAAT}, {AndAlgo: AndGalloping, OrAlgo: OrDAAT},
		{AndAlgo: AndSkip, OrAlgo: OrMaxScore, OrTAATPostings: NoTAAT}, {AndAlgo: AndSkip, OrAlgo: OrBMW, OrTAATPostings: NoTAAT},
		{AndAlgo: AndSkip, OrAlgo: OrBMW}}
}

// checkQuery runs terms in every mode, algorithm and k and compares with the
// oracle. AND runs every AND algorithm, OR every OR strategy, and AND+OR
// every pair (full) or pairedOptions (!full).
func checkQuery(t *testing.T, e *Engine, o oracle, terms []string, ks []int, full bool, what string) {
	t.Helper()
	if o.withQTF != nil {
		checkQuery(t, e, *o.withQTF, terms, ks, full, what+" (QTF)")
	}
	for _, mode := range []Mode{And, Or, AndOr} {
		for _, k := range ks {
			want := o.want(mode, k)
			opts := allOptions()
			if mode == AndOr && !full {
				opts = pairedOptions()
			}
			for _, opt := range opts {
				// And and Or need each of their algorithms once.
				if mode == And && opt.OrAlgo != OrStrategies[0] || mode == Or && opt.AndAlgo != AndAlgorithms[0] {
					continue
				}
				opt.AndBitmapDensity, opt.OrBitmapDensity = testBitmapDensity, testBitmapDensity
				if testBitmapDensity != 0 {
					opt.AndBitmapMaxDensity = NoBitmaps
				}
				got, st, err := e.Search(Query{ID: what, Terms: terms, Mode: mode, K: k, QTF: o.qtf}, opt)
				if err != nil {
					t.Fatalf("%s %v k=%d %+v: %v", what, mode, k, opt, err)
				}
				if i, ok := sameResults(got, want); !ok {
					msg := fmt.Sprintf("%s terms %q mode %v k=%d %+v: %d results, want %d", what, terms, mode, k, opt, len(got), len(want))
					if i >= 0 {
						msg += fmt.Sprintf("; first difference at rank %d: got %+v, want %+v", i, got[i], want[i])
					}
					t.Fatal(msg)
				}
				ranAnd, ranOr := st.AndAlgo != "", st.OrAlgo != ""
				if ranAnd != (mode != Or) || ranOr != (mode == Or || mode == AndOr && len(o.and) < k) {
					t.Fatalf("%s mode %v k=%d: stats say AND %q OR %q", what, mode, k, st.AndAlgo, st.OrAlgo)
				}
			}
		}
	}
}

// TestDifferentialRandom compares every mode × AND algorithm × OR strategy ×
// k with the brute-force reference on random collections, for every
// registered codec and block sizes from 1 to 128.
func TestDifferentialRandom(t *testing.T) {
	blockSizes := []int{1, 2, 3, 7, 16, 64, 128}
	docCounts := []int{1, 2, 37, 400, 1500}
	ks := []int{1, 10, 100, 1000}
	combo := 0
	for _, codec := range compress.All() {
		for _, bs := range blockSizes {
			combo++
			n := docCounts[combo%len(docCounts)]
			ties := combo%3 == 0
			name := fmt.Sprintf("%s/B%d/N%d", codec.Name(), bs, n)
			if ties {
				name += "/ties"
			}
			t.Run(name, func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(combo)))
				col := genCollection(rng, n, 24, bs, ties)
				x, err := col.WriteIndex(filepath.Join(t.TempDir(), "x.qp"), codec, bs)
				if err != nil {
					t.Fatal(err)
				}
				if err := col.CheckIndex(x); err != nil {
					t.Fatalf("codec %s does not round-trip its lists (a codec bug, not an engine bug): %v", codec.Name(), err)
				}
				runDifferential(t, x, col, rng, 12, ks)
			})
		}
	}
}

// TestDifferentialLarge uses a larger collection with many blocks per list,
// where pruning (block-max AND, MaxScore, BMW) skips most of the work.
func TestDifferentialLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, ties := range []bool{false, true} {
		t.Run(fmt.Sprintf("ties=%v", ties), func(t *testing.T) {
			rng := rand.New(rand.NewSource(99))
			col := genCollection(rng, 20000, 40, 32, ties)
			codec, _ := compress.ByName("bp128")
			x, err := col.WriteIndex(filepath.Join(t.TempDir(), "x.qp"), codec, 32)
			if err != nil {
				t.Fatal(err)
			}
			runDifferential(t, x, col, rng, 25, []int{1, 10, 100, 1000})
		})
	}
}

func runDifferential(t *testing.T, x *index.Index, col *ref.Collection, rng *rand.Rand, queries int, ks []int) {
	t.Helper()
	p := col.Postings()
	params := x.Params()
	norms := params.Norms(nil, col.Lens, score.AvgDL(col.Lens))
	e := New(x)
	for qi := 0; qi < queries; qi++ {
		terms := genQuery(rng, col.Terms)
		o := newOracle(p, params, norms, len(col.Lens), terms)
		checkQuery(t, e, o, terms, ks, true, fmt.Sprintf("q%d", qi))
		checkTAATClean(t, e)
	}
}
