package gen

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/qpengine/qp/eval"
)

// queryLogs returns the TREC 2005/2006 efficiency logs, ../../shared/data
// from this package, or skips.
func queryLogs(t testing.TB) (paths []string) {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "data", "queries")
	for _, f := range []string{"05.efficiency_topics.txt", "06.efficiency_topics.txt"} {
		p := filepath.Join(dir, f)
		if _, err := os.Stat(p); err != nil {
			t.Skipf("query logs not available: %v", err)
		}
		paths = append(paths, p)
	}
	return paths
}

var cachedTerms []string

func queryTerms(t testing.TB) []string {
	t.Helper()
	paths := queryLogs(t)
	if cachedTerms == nil {
		var err error
		if cachedTerms, err = LoadQueryTerms(paths...); err != nil {
			t.Fatal(err)
		}
	}
	return cachedTerms
}

func checkList(t *testing.T, docs []uint32, n, N int) {
	t.Helper()
	if len(docs) != n {
		t.Fatalf("list has %d docs, want df = %d", len(docs), n)
	}
	for i, d := range docs {
		if int(d) >= N {
			t.Fatalf("doc %d >= N = %d", d, N)
		}
		if i > 0 && d <= docs[i-1] {
			t.Fatalf("docs not strictly increasing at %d: %d after %d", i, d, docs[i-1])
		}
	}
}

// TestSampleExactAndUniform covers every branch of sample (all, Floyd,
// dense Bernoulli, sparse skipping, with fix-ups both ways) for exact size,
// order and range, and checks that every document is picked equally often.
func TestSampleExactAndUniform(t *testing.T) {
	cases := []struct{ n, N int }{
		{1, 1}, {7, 7}, {1, 100}, {64, 64}, {64, 1000}, {65, 66}, // all / Floyd
		{500, 1000}, {990, 1000}, {999, 1000}, {100, 3200}, // dense
		{65, 100000}, {3000, 100000}, {99, 3200}, // sparse
	}
	for _, c := range cases {
		for seed := range 200 {
			r := termRNG(int64(seed), c.n)
			docs := sample(nil, c.n, c.N, &r)
			checkList(t, docs, c.n, c.N)
		}
	}
	// Uniformity: each document's inclusion count ~ Binomial(T, n/N).
	for _, c := range []struct{ n, N int }{{20, 100}, {300, 600}, {100, 5000}, {597, 600}} {
		const trials = 4000
		count := make([]int, c.N)
		var buf []uint32
		for seed := range trials {
			r := termRNG(99, seed)
			buf = sample(buf[:0], c.n, c.N, &r)
			for _, d := range buf {
				count[d]++
			}
		}
		p := float64(c.n) / float64(c.N)
		mean, sd := trials*p, math.Sqrt(trials*p*(1-p))
		var chi2 float64
		for d, k := range count {
			if math.Abs(float64(k)-mean) > 5.5*sd {
				t.Errorf("n=%d N=%d: doc %d picked %d times, want %.0f ± %.0f", c.n, c.N, d, k, mean, sd)
			}
			chi2 += (float64(k) - mean) * (float64(k) - mean) / (sd * sd)
		}
		// chi2 ~ N degrees of freedom (approximately): mean N, sd sqrt(2N).
		if z := (chi2 - float64(c.N)) / math.Sqrt(2*float64(c.N)); math.Abs(z) > 5 {
			t.Errorf("n=%d N=%d: chi-square %.0f for %d docs (z = %.1f)", c.n, c.N, chi2, c.N, z)
		}
	}
}

func TestFixups(t *testing.T) {
	// Both fix-ups on a Bernoulli sample: removal keeps a subset, addition
	// a superset, both sorted and of the exact size.
	for seed := range 50 {
		r := termRNG(int64(seed), 1)
		base := bernoulliDense(nil, 10000, 65536/2, &r)
		k := len(base)
		less := slices.Clone(base)
		less = less[:removeRandom(less, 100, &r)]
		checkList(t, less, k-100, 10000)
		for _, d := range less {
			if _, ok := slices.BinarySearch(base, d); !ok {
				t.Fatalf("removeRandom invented doc %d", d)
			}
		}
		more := addRandom(slices.Clone(base), 0, 100, 10000, &r)
		checkList(t, more, k+100, 10000)
		for _, d := range base {
			if _, ok := slices.BinarySearch(more, d); !ok {
				t.Fatalf("addRandom lost doc %d", d)
			}
		}
	}
}

func TestTFSampler(t *testing.T) {
	for _, mean := range []float64{0, 0.3, 1, 2.5, 20} {
		for _, n := range []int{10, 1000} { // inversion / table
			ts := newTFSampler(mean, n)
			r := termRNG(5, n)
			const draws = 200000
			var sum float64
			for range draws {
				tf := ts.draw(&r)
				if tf < 1 {
					t.Fatalf("tf %d < 1", tf)
				}
				sum += float64(tf - 1)
			}
			got := sum / draws
			sd := math.Sqrt(mean*(1+mean)) / math.Sqrt(draws) // geometric variance m(1+m)
			if math.Abs(got-mean) > 6*sd+1e-9 {
				t.Errorf("mean excess tf (n=%d) = %.4f, want %.4f ± %.4f", n, got, mean, sd)
			}
		}
	}
}

func TestPostingsDeterministic(t *testing.T) {
	cfg := Config{Docs: 30000, Seed: 7}
	g1, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g2, _ := New(cfg)
	ranks := []int{0, 1, 5, 40, 200, 1000, 20000, g1.Terms() - 1}
	var d1, f1 []uint32
	for _, r := range ranks {
		d1, f1 = g1.Postings(r, d1, f1)
		_, df := g1.Term(r)
		checkList(t, d1, df, cfg.Docs)
		d1c, f1c := slices.Clone(d1), slices.Clone(f1)
		// Regenerated later, after other lists, by another generator.
		g2.Postings(ranks[0], nil, nil)
		d2, f2 := g2.Postings(r, nil, nil)
		if !slices.Equal(d1c, d2) || !slices.Equal(f1c, f2) {
			t.Fatalf("rank %d: lists differ between runs", r)
		}
		for _, f := range f1c {
			if f < 1 || f > maxTF {
				t.Fatalf("rank %d: tf %d", r, f)
			}
		}
	}
	// Another seed gives other lists.
	g3, _ := New(Config{Docs: 30000, Seed: 8})
	a, _ := g1.Postings(300, nil, nil)
	b, _ := g3.Postings(300, nil, nil)
	if slices.Equal(a, b) {
		t.Error("seeds 7 and 8 give the same list")
	}
}

func TestDocLengthsAndEach(t *testing.T) {
	cfg := Config{Docs: 10000, Seed: 3, Workers: 1}
	g1, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workers = 3
	g3, _ := New(cfg)
	l1, l3 := g1.DocLengths(), g3.DocLengths()
	if !slices.Equal(l1, l3) {
		t.Fatal("DocLengths differ between 1 and 3 workers")
	}
	// Each in term order: lengths and totals agree with Stats.
	order := g3.SortedRanks()
	if len(order) != g3.Terms() {
		t.Fatalf("SortedRanks has %d ranks, want %d", len(order), g3.Terms())
	}
	lens := make([]uint32, cfg.Docs)
	var postings int64
	prev, i := "", 0
	err = g3.Each(order, func(rank int, docs, freqs []uint32) error {
		if rank != int(order[i]) {
			t.Fatalf("Each delivered rank %d at %d, want %d", rank, i, order[i])
		}
		term, df := g3.Term(rank)
		if i > 0 && term <= prev {
			t.Fatalf("terms out of byte order: %q after %q", term, prev)
		}
		checkList(t, docs, df, cfg.Docs)
		prev = term
		i++
		postings += int64(len(docs))
		for j, d := range docs {
			lens[d] += freqs[j]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lens, l1) {
		t.Fatal("lengths summed from Each differ from DocLengths")
	}
	st := g3.Stats()
	if postings != st.Postings {
		t.Fatalf("generated %d postings, Stats says %d", postings, st.Postings)
	}
	var tokens float64
	for _, l := range lens {
		tokens += float64(l)
	}
	if math.Abs(tokens/st.Tokens-1) > 0.01 {
		t.Errorf("tokens %.0f, expected %.0f", tokens, st.Tokens)
	}

	// Stopping early and errors.
	n := 0
	if err := g3.Each(nil, func(int, []uint32, []uint32) error {
		n++
		if n == 10 {
			return ErrStop
		}
		return nil
	}); err != nil || n != 10 {
		t.Fatalf("ErrStop: err %v after %d lists", err, n)
	}
	boom := errors.New("boom")
	if err := g3.Each([]int32{5, 4, 3}, func(rank int, _, _ []uint32) error {
		if rank == 4 {
			return boom
		}
		return nil
	}); err != boom {
		t.Fatalf("Each returned %v, want fn's error", err)
	}
}

// TestTotals100k checks the calibration at 100k documents from the exact
// totals (Stats; every list has exactly its df, see
// TestDocLengthsAndEach): postings per document near GOV2's 233, Heaps'
// vocabulary, most postings in long lists. QP_GEN_FULL=1 also generates
// every list (23M postings, a few seconds) and checks the mean tf; with
// QP_GEN_FULL=2 the same at 1M documents too (233M postings), with
// QP_GEN_FULL=gov2 at GOV2's 24.6M (5.74G postings; minutes, and
// Workers·98 MB of memory).
func TestTotals100k(t *testing.T) {
	var terms []string
	if _, err := os.Stat(filepath.Join("..", "..", "shared", "data", "queries")); err == nil {
		terms = queryTerms(t)
	}
	sizes := []int{100_000}
	switch os.Getenv("QP_GEN_FULL") {
	case "2":
		sizes = append(sizes, 1_000_000)
	case "gov2":
		sizes = []int{GOV2Docs}
	}
	for _, n := range sizes {
		start := time.Now()
		g, err := New(Config{Docs: n, Seed: 1, QueryTerms: terms})
		if err != nil {
			t.Fatal(err)
		}
		st := g.Stats()
		t.Logf("%d docs: %d terms, %d postings (%.1f/doc), s %.3f q %.1f, df=1 terms %.1f%%, lists with df > 4096 hold %.1f%% of postings (df > %.0f, the threshold scaled to N: %.1f%%), model in %.2fs",
			n, st.Terms, st.Postings, st.PerDoc, st.S, st.Q, 100*float64(st.DF1Terms)/float64(st.Terms),
			100*st.LongFraction, LongList*float64(n)/GOV2Docs, 100*st.ScaledLongFraction, time.Since(start).Seconds())
		if math.Abs(st.PerDoc/233.3-1) > 0.10 {
			t.Errorf("postings/doc = %.1f, want 233 ± 10%%", st.PerDoc)
		}
		// At 100k documents few lists exceed 4096 postings; with the
		// threshold scaled to the collection (4096·N/24.6M) most postings
		// are in long lists, as in GOV2.
		if st.LongFraction < 0.2 || st.ScaledLongFraction < 0.7 {
			t.Errorf("long-list fractions %.2f / %.2f", st.LongFraction, st.ScaledLongFraction)
		}
		if st.Terms != max(heapsVocab(n, DefaultHeapsBeta), len(terms)) {
			t.Errorf("vocabulary %d, Heaps' law gives %d", st.Terms, heapsVocab(n, DefaultHeapsBeta))
		}
		if os.Getenv("QP_GEN_FULL") == "" {
			continue
		}
		start = time.Now()
		lens := g.DocLengths()
		secs := time.Since(start).Seconds()
		var tokens float64
		minLen, maxLen := uint32(math.MaxUint32), uint32(0)
		for _, l := range lens {
			tokens += float64(l)
			minLen, maxLen = min(minLen, l), max(maxLen, l)
		}
		t.Logf("%d docs generated in %.2fs with %d workers (%.1fM postings/s): mean tf %.3f, doc length %d..%d",
			n, secs, g.Config().Workers, float64(st.Postings)/secs/1e6, tokens/float64(st.Postings), minLen, maxLen)
		if math.Abs(tokens/float64(st.Postings)/DefaultMeanTF-1) > 0.02 {
			t.Errorf("mean tf = %.3f, want %.2f ± 2%%", tokens/float64(st.Postings), DefaultMeanTF)
		}
	}
}

// TestCalibrationGOV2 fits the model at GOV2's size without generating it.
func TestCalibrationGOV2(t *testing.T) {
	for _, pure := range []bool{false, true} {
		g, err := New(Config{Docs: GOV2Docs, PureZipf: pure})
		if err != nil {
			t.Fatal(err)
		}
		p := g.m.sum()
		h := g.m.sumOver(func(df int) float64 {
			if df > LongList {
				return float64(df)
			}
			return 0
		})
		hapax := g.m.sumOver(func(df int) float64 {
			if df == 1 {
				return 1
			}
			return 0
		})
		t.Logf("GOV2 pure=%v: V %d, postings %.4g (%.1f/doc), s %.4f q %.2f, df(top) %d, df=1 terms %.1f%%, lists > 4096 hold %.1f%%",
			pure, g.Terms(), p, p/GOV2Docs, g.m.s, g.m.q, g.DF(0), 100*hapax/float64(g.Terms()), 100*h/p)
		if g.Terms() != GOV2Terms || math.Abs(p/GOV2Postings-1) > 0.001 {
			t.Errorf("V %d postings %.4g, want %d %d", g.Terms(), p, GOV2Terms, int64(GOV2Postings))
		}
		if h/p < 0.8 || hapax/float64(g.Terms()) < 0.3 {
			t.Errorf("long lists hold %.2f of postings, df=1 terms %.2f", h/p, hapax/float64(g.Terms()))
		}
		if !pure && (g.DF(0) != int(0.9*GOV2Docs) || g.DF(100) >= g.DF(0)) {
			t.Errorf("df(0) %d, want %d", g.DF(0), int(0.9*GOV2Docs))
		}
	}
}

// TestQueryTerms checks that every query-log term is in the vocabulary, at
// a distinct rank, function words on top, and that names are unique.
func TestQueryTerms(t *testing.T) {
	terms := queryTerms(t)
	if len(terms) < 50000 || terms[0] != "of" {
		t.Fatalf("%d query terms, first %q", len(terms), terms[0])
	}
	for _, w := range []string{"pierson", "marina", "woodbridge", "commissioner", "arsenic", "kentucky"} {
		if !slices.Contains(terms, w) {
			t.Errorf("query term %q missing", w)
		}
	}
	g, err := New(Config{Docs: 50_000, QueryTerms: terms})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for r := range g.Terms() {
		name, _ := g.Term(r)
		if prev, dup := byName[name]; dup {
			t.Fatalf("ranks %d and %d are both %q", prev, r, name)
		}
		byName[name] = r
	}
	for _, w := range terms {
		if _, ok := byName[w]; !ok {
			t.Fatalf("query term %q has no rank", w)
		}
	}
	for i, w := range []string{"of", "in", "and", "for", "the"} {
		if byName[w] != i {
			t.Errorf("%q at rank %d, want %d", w, byName[w], i)
		}
	}
	if r := byName["county"]; r < 33 || g.DF(r) < g.DF(byName["pierson"]) {
		t.Errorf("county at rank %d df %d", r, g.DF(r))
	}
	// Synthetic names are "t" + the rank padded to the width of V-1.
	width := len(strconv.Itoa(g.Terms() - 1))
	for _, r := range []int{33, 1000, g.Terms() - 1} {
		if g.vc.queryIndex(r) >= 0 {
			continue
		}
		if name, _ := g.Term(r); name != fmt.Sprintf("t%0*d", width, r) {
			t.Errorf("rank %d is %q", r, name)
		}
	}
}

func TestSyntheticNameCollision(t *testing.T) {
	// V = 1000: synthetic names t000..t999; "t005" is a query term.
	g, err := New(Config{Docs: 1000, Vocab: 1000, QueryTerms: []string{"t005", "alpha", "t999", "t5"}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var names []string
	for _, r := range g.SortedRanks() {
		name, _ := g.Term(int(r))
		if seen[name] {
			t.Fatalf("duplicate name %q", name)
		}
		seen[name] = true
		names = append(names, name)
	}
	if !slices.IsSorted(names) || len(names) != 1000 {
		t.Fatalf("SortedRanks not in byte order or incomplete (%d)", len(names))
	}
	if !seen["t005"] || !seen["t005_"] || !seen["alpha"] {
		t.Errorf("collision not resolved: t005 %v t005_ %v", seen["t005"], seen["t005_"])
	}
	if _, err := New(Config{Docs: 1000, QueryTerms: []string{"a", "a"}}); err == nil {
		t.Error("duplicate query term accepted")
	}
	if _, err := New(Config{Docs: 10, QueryTerms: make([]string, 5000)}); err == nil {
		t.Error("5000 query terms in 10 documents accepted")
	}
}

// TestQueryCalibration checks the query-term placement against Ding, He &
// Suel (WWW 2009): about 3.74M postings per query (the lists of its terms)
// on GOV2's 25.2M pages, Σ df ≈ 0.148·N, over random TREC efficiency-log
// queries, stop words excluded.
func TestQueryCalibration(t *testing.T) {
	terms := queryTerms(t)
	f, err := os.Open(queryLogs(t)[1])
	if err != nil {
		t.Fatal(err)
	}
	qs, err := eval.ReadQueries(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	stop := map[string]bool{}
	for _, w := range FunctionWords {
		stop[w] = true
	}
	for _, c := range []struct {
		n   int
		tol float64
	}{{GOV2Docs, 0.05}, {1_000_000, 0.08}, {100_000, 0.15}} {
		g, err := New(Config{Docs: c.n, QueryTerms: terms})
		if err != nil {
			t.Fatal(err)
		}
		rank := map[string]int{}
		for i, w := range g.vc.qterms {
			rank[w] = int(g.vc.qranks[i])
		}
		var content, all float64
		for _, q := range qs {
			for _, w := range Tokenize(q.Text) {
				df := float64(g.DF(rank[w]))
				all += df
				if !stop[w] {
					content += df
				}
			}
		}
		content /= float64(len(qs)) * float64(c.n)
		all /= float64(len(qs)) * float64(c.n)
		t.Logf("N=%d: TREC 2006 queries touch %.3f·N postings without stop words (Ding et al.: 0.148·N), %.3f·N with", c.n, content, all)
		if math.Abs(content/0.148-1) > c.tol {
			t.Errorf("N=%d: %.3f·N postings per query, want 0.148·N ± %.0f%%", c.n, content, 100*c.tol)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Docs: 0}, {Docs: 10, MeanTF: 0.5}, {Docs: 10, HeapsBeta: 2}, {Docs: 10, TopDF: 1.5},
		{Docs: 10, Vocab: -1}, {Docs: 100, Vocab: 100000},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// BenchmarkPostings reports the generation rate (one goroutine) on the
// lists of a 1M-document collection by list length: dense (df >= N/32,
// per-document trials), mid (sparse, geometric skips) and tail (df <= 64,
// Floyd; per-list overhead dominates).
func BenchmarkPostings(b *testing.B) {
	g, err := New(Config{Docs: 1_000_000, Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		lo, hi int
	}{{"dense", 0, 1000}, {"mid", 1000, 100_000}, {"tail", 1_000_000, 6_000_000}} {
		b.Run(c.name, func(b *testing.B) {
			var docs, freqs []uint32
			var postings int64
			rank := c.lo
			for range b.N {
				docs, freqs = g.Postings(rank, docs, freqs)
				postings += int64(len(docs))
				if rank++; rank == c.hi {
					rank = c.lo
				}
			}
			b.ReportMetric(float64(postings)/b.Elapsed().Seconds(), "postings/s")
		})
	}
}

// BenchmarkDocLengths is a full generation pass (every list, Config.Workers
// = all cores) over a 100k-document collection: 23.3M postings per op.
func BenchmarkDocLengths(b *testing.B) {
	g, err := New(Config{Docs: 100_000})
	if err != nil {
		b.Fatal(err)
	}
	p := g.Stats().Postings
	b.ResetTimer()
	for range b.N {
		g.DocLengths()
	}
	b.ReportMetric(float64(p)*float64(b.N)/b.Elapsed().Seconds(), "postings/s")
}
