package queryset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/qpengine/qp/bench/internal/testidx"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/topk"
)

func cacm(t *testing.T) (*index.Index, Analyzer) {
	t.Helper()
	x := testidx.Build(t, "cacm", testidx.English)
	an, err := analysis.New(analysis.Options{Stem: x.Meta.Stem, Stopwords: x.Meta.Stopwords})
	if err != nil {
		t.Fatal(err)
	}
	return x, an.Tokens
}

func TestDeterministicBySeed(t *testing.T) {
	x, an := cacm(t)
	opt := Options{Seed: 7, N: 60}
	a, _, err := Generate(x, an, opt)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := Generate(x, an, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(a, b, func(p, q Query) bool { return p.ID == q.ID && slices.Equal(p.Terms, q.Terms) && p.Doc == q.Doc }) {
		t.Fatal("two runs with the same seed differ")
	}
	if len(a) != 3*60 {
		t.Fatalf("%d queries, want 180", len(a))
	}
	opt.Seed = 8
	c, _, err := Generate(x, an, opt)
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for i := range a {
		if slices.Equal(a[i].Terms, c[i].Terms) {
			same++
		}
	}
	if same > len(a)/10 {
		t.Errorf("seeds 7 and 8 share %d of %d queries", same, len(a))
	}
	// A kind's queries do not depend on which other kinds are drawn.
	k, _, err := Generate(x, an, Options{Seed: 7, N: 60, Kinds: []Kind{KindKnown}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range k {
		if !slices.Equal(k[i].Terms, a[120+i].Terms) {
			t.Fatalf("known-item query %d differs when drawn alone: %q vs %q", i, k[i].Terms, a[120+i].Terms)
		}
	}
}

func TestBucketsHonoured(t *testing.T) {
	x, an := cacm(t)
	b := DefaultBuckets
	qs, st, err := Generate(x, an, Options{Seed: 1, N: 400, Kinds: []Kind{KindAnd, KindOr}})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range st.Pool {
		if n == 0 {
			t.Fatalf("bucket %c empty on CACM: %+v", "hml"[i], st)
		}
	}
	counts := map[int]int{}
	letters := map[byte]int{}
	for _, q := range qs {
		counts[len(q.Terms)]++
		var got []byte
		seen := map[string]bool{}
		for _, term := range q.Terms {
			if seen[term] {
				t.Fatalf("%s repeats %q", q.ID, term)
			}
			seen[term] = true
			id, ok := x.Lookup(term)
			if !ok {
				t.Fatalf("%s: term %q not in the index", q.ID, term)
			}
			c := b.Bucket(x.Record(id).DF, x.NumDocs())
			if c == 0 {
				t.Fatalf("%s: term %q (df %d) in no bucket", q.ID, term, x.Record(id).DF)
			}
			got = append(got, c)
			letters[c]++
		}
		slices.SortFunc(got, func(a, b byte) int { return strings.IndexByte("hml", a) - strings.IndexByte("hml", b) })
		want := fmt.Sprintf("%s-%s-%d-", q.Kind, got, len(q.Terms))
		if !strings.HasPrefix(q.ID, want) || q.Pattern != string(got) {
			t.Fatalf("qid %s pattern %q, terms' buckets say %s", q.ID, q.Pattern, want)
		}
		if !slices.Equal(an(q.Text()), q.Terms) {
			t.Fatalf("%s: %q does not analyze back to its terms", q.ID, q.Text())
		}
	}
	for m := 2; m <= 5; m++ {
		if counts[m] != 200 {
			t.Errorf("%d queries of %d terms, want 200 (equal shares)", counts[m], m)
		}
	}
	for _, c := range []byte("hml") {
		if letters[c] < 300 {
			t.Errorf("bucket %c drawn %d times of %d terms", c, letters[c], 2800)
		}
	}
	// The bounds themselves.
	n := 100000
	for _, tc := range []struct {
		df   uint32
		want byte
	}{{1000, 'h'}, {999, 'm'}, {100, 'm'}, {99, 'l'}, {10, 'l'}, {9, 0}, {1, 0}} {
		if got := b.Bucket(tc.df, n); got != tc.want {
			t.Errorf("Bucket(%d, %d) = %q, want %q", tc.df, n, got, tc.want)
		}
	}
}

// TestKnownItemAndFindsSource: the AND of a known-item query's terms,
// evaluated by the engine from the query text, contains its source document.
func TestKnownItemAndFindsSource(t *testing.T) {
	x, an := cacm(t)
	qs, _, err := Generate(x, an, Options{Seed: 3, N: 200, Kinds: []Kind{KindKnown}})
	if err != nil {
		t.Fatal(err)
	}
	if x.NumDocs() >= topk.MaxK {
		t.Fatalf("%d documents: K = %d no longer covers the whole conjunction", x.NumDocs(), topk.MaxK)
	}
	be := engine.NewCPU(x, 2)
	eqs := make([]engine.Query, len(qs))
	for i, q := range qs {
		if q.Doc < 0 || q.Doc >= x.NumDocs() {
			t.Fatalf("%s: source doc %d", q.ID, q.Doc)
		}
		eqs[i] = engine.Query{ID: q.ID, Terms: an(q.Text()), Mode: engine.And, K: topk.MaxK} // > N: the whole conjunction
	}
	out := make([]engine.Response, len(qs))
	if err := be.SearchBatch(context.Background(), eqs, engine.Options{}, out); err != nil {
		t.Fatal(err)
	}
	for i, r := range out {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		found := false
		for _, res := range r.Results {
			found = found || int(res.Doc) == qs[i].Doc
		}
		if !found {
			t.Fatalf("%s %q: AND (%d results) misses source doc %d", qs[i].ID, qs[i].Text(), len(r.Results), qs[i].Doc)
		}
	}
}

// TestDocTerms compares the sampled forward view with a full inversion.
func TestDocTerms(t *testing.T) {
	x, _ := cacm(t)
	fwd := make([][]int, x.NumDocs())
	for tid := 0; tid < x.NumTerms(); tid++ {
		l, err := x.List(tid)
		if err != nil {
			t.Fatal(err)
		}
		docs, _, err := l.Decode(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			fwd[d] = append(fwd[d], tid)
		}
	}
	sample := []uint32{0, 1, 2, 500, 501, 1999, uint32(x.NumDocs() - 1)}
	got, err := DocTerms(x, sample)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range sample {
		if !slices.Equal(got[i], fwd[d]) {
			t.Errorf("doc %d: %d terms, want %d", d, len(got[i]), len(fwd[d]))
		}
	}
}

// TestStemmedTermsRoundTrip: pools hold only terms whose analysis gives
// them back, and on a stemmed index some indexed terms do not (they are
// counted, not written).
func TestStemmedTermsRoundTrip(t *testing.T) {
	x, an := cacm(t)
	_, st, err := Generate(x, an, Options{Seed: 1, N: 10, Kinds: []Kind{KindAnd}})
	if err != nil {
		t.Fatal(err)
	}
	for _, term := range st.Skipped {
		if Eligible(an, term) {
			t.Errorf("skipped term %q is eligible", term)
		}
	}
	if !Eligible(an, "comput") || Eligible(an, "the") || Eligible(an, "computers") {
		t.Error("Eligible: want comput yes, the (stop word) and computers (stems to comput) no")
	}
	t.Logf("pools %v, %d ineligible, e.g. %q", st.Pool, st.Ineligible, st.Skipped)
}

func TestBadOptions(t *testing.T) {
	x, an := cacm(t)
	for _, o := range []Options{
		{N: 0},
		{N: 5, MinTerms: 4, MaxTerms: 3},
		{N: 5, Buckets: Buckets{High: 0.001, Medium: 0.01, Low: 0.0001}},
	} {
		if _, _, err := Generate(x, an, o); err == nil {
			t.Errorf("Generate(%+v) accepted", o)
		}
	}
	if _, err := ParseKinds("and,xor"); err == nil {
		t.Error("ParseKinds accepted xor")
	}
	if k, err := ParseKinds("known, and,known"); err != nil || !slices.Equal(k, []Kind{KindKnown, KindAnd}) {
		t.Errorf("ParseKinds = %v, %v", k, err)
	}
	// Buckets too narrow to hold 5 distinct terms.
	_, _, err := Generate(x, an, Options{N: 10, Buckets: Buckets{High: 1, Medium: 0.999, Low: 0.998, MinDF: 2}, Kinds: []Kind{KindAnd}})
	if err == nil || !strings.Contains(err.Error(), "distinct eligible terms") {
		t.Errorf("empty buckets: err = %v", err)
	}
}
