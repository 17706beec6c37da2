package gen

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/index/source"
	"github.com/qpengine/qp/score"
)

var cachedLog *QueryLog

func queryLog(t testing.TB) *QueryLog {
	t.Helper()
	paths := queryLogs(t)
	if cachedLog == nil {
		var err error
		if cachedLog, err = LoadQueryLog(paths...); err != nil {
			t.Fatal(err)
		}
	}
	return cachedLog
}

// small is a fast test configuration: short documents, few topics.
// small are test parameters: short documents, few topics, and no sites
// (the tests of sites set SiteShare).
func small(docs int) TopicParams {
	return TopicParams{Docs: docs, MeanLen: 150, PostingsPerDoc: 70, Topics: 32}
}

func bp128(t testing.TB) compress.Codec {
	c, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newTopics(t testing.TB, cfg TopicsConfig) *Topics {
	t.Helper()
	tp, err := NewTopics(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// collect returns every document of a stream, with Terms filled with the
// names of TermIDs (ascending by id, as TFs) for the tests' convenience.
func collect(t testing.TB, tp *Topics, text func([]byte) error) []*index.Document {
	t.Helper()
	s := tp.NewStream(text)
	defer s.Close()
	var out []*index.Document
	for {
		d, err := s.Next()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatal(err)
			}
			return out
		}
		d.Terms = make([]string, len(d.TermIDs))
		for i, id := range d.TermIDs {
			d.Terms[i] = tp.Name(id)
		}
		out = append(out, d)
	}
}

func TestTopicsDeterministicAcrossWorkers(t *testing.T) {
	ql := queryLog(t)
	var ref []*index.Document
	var refParams TopicParams
	for _, w := range []int{1, 3, 8} {
		tp := newTopics(t, TopicsConfig{Params: small(1500), Seed: 7, Log: ql, Workers: w, Locality: true})
		docs := collect(t, tp, nil)
		if len(docs) != 1500 {
			t.Fatalf("workers %d: %d docs, want 1500", w, len(docs))
		}
		if ref == nil {
			ref, refParams = docs, tp.Params()
			continue
		}
		if !equalParams(refParams, tp.Params()) {
			t.Fatalf("workers %d: fitted params differ: %+v vs %+v", w, tp.Params(), refParams)
		}
		for i := range docs {
			if docs[i].ID != ref[i].ID || !slices.Equal(docs[i].TermIDs, ref[i].TermIDs) || !slices.Equal(docs[i].TFs, ref[i].TFs) {
				t.Fatalf("workers %d: document %d differs", w, i)
			}
		}
	}
	// Another seed gives another collection.
	tp := newTopics(t, TopicsConfig{Params: small(1500), Seed: 8, Log: ql, Workers: 2, Locality: true})
	other := collect(t, tp, nil)
	same := 0
	for i := range other {
		if slices.Equal(other[i].Terms, ref[i].Terms) {
			same++
		}
	}
	if same > 10 {
		t.Fatalf("seeds 7 and 8 share %d of 1500 documents", same)
	}
}

func equalParams(a, b TopicParams) bool {
	return reflect.DeepEqual(a, b)
}

// buildTopicsIndex builds tp's collection into a temporary bp128 index and
// opens it (closed when the test ends).
func buildTopicsIndex(t testing.TB, tp *Topics) *index.Index {
	t.Helper()
	out := filepath.Join(t.TempDir(), "g.idx")
	if _, err := tp.Build(context.Background(), BuildOptions{Index: index.BuildOptions{Out: out, DocCodec: bp128(t), FreqCodec: bp128(t), Params: score.Default}}); err != nil {
		t.Fatal(err)
	}
	x, err := index.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// buildIndex builds an index from a DocSource with the text analyzer.
func buildIndex(t *testing.T, src index.DocSource, out string) {
	t.Helper()
	_, err := index.Build(context.Background(), src, index.BuildOptions{
		Out: out, DocCodec: bp128(t), FreqCodec: bp128(t), Params: score.Default,
		NewAnalyzer: func() index.Analyzer {
			a, _ := analysis.New(TextAnalysis)
			return a.AppendTokens
		},
		MemBudget: 1 << 20, Workers: 2, // spill: runs are part of the path under test
	})
	if err != nil {
		t.Fatal(err)
	}
}

type jsonlSource struct{ r *source.Reader }

func (j jsonlSource) Next() (*index.Document, error) {
	d, err := j.r.Next()
	if err != nil {
		return nil, err
	}
	return &index.Document{ID: d.ID, Text: d.Text}, nil
}

// TestTopicsTextRoundTrip: the index built from the pre-tokenized stream
// equals the index `qp index` builds from the --text file (same terms,
// lists, frequencies, lengths and ids).
func TestTopicsTextRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tp := newTopics(t, TopicsConfig{Params: small(1200), Seed: 3, Log: queryLog(t), Workers: 2})
	textPath := filepath.Join(dir, "c.jsonl.gz")
	direct := filepath.Join(dir, "direct.idx")
	st, err := tp.Build(context.Background(), BuildOptions{Text: textPath, Index: index.BuildOptions{
		Out: direct, DocCodec: bp128(t), FreqCodec: bp128(t), Params: score.Default, MemBudget: 1 << 20,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Runs == 0 {
		t.Fatalf("expected spilled runs with a 1 MiB budget")
	}
	rd, err := source.Options{Format: "jsonl"}.Open(textPath)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	viaText := filepath.Join(dir, "text.idx")
	buildIndex(t, jsonlSource{rd}, viaText)
	a, err := index.Open(direct)
	if err != nil {
		t.Fatal(err)
	}
	b, err := index.Open(viaText)
	if err != nil {
		t.Fatal(err)
	}
	compareIndexes(t, a, b)
	// Build refuses to overwrite an existing text file.
	if _, err := tp.Build(context.Background(), BuildOptions{Text: textPath}); err == nil || !os.IsExist(errorsUnwrapAll(err)) {
		t.Fatalf("second --text to the same file: err = %v, want exists", err)
	}
}

func errorsUnwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func compareIndexes(t *testing.T, a, b *index.Index) {
	t.Helper()
	if a.NumDocs() != b.NumDocs() || a.NumTerms() != b.NumTerms() {
		t.Fatalf("docs %d/%d, terms %d/%d", a.NumDocs(), b.NumDocs(), a.NumTerms(), b.NumTerms())
	}
	if !slices.Equal(a.DocLens(), b.DocLens()) {
		t.Fatal("document lengths differ")
	}
	for d := range a.NumDocs() {
		if a.ExternalID(uint32(d)) != b.ExternalID(uint32(d)) {
			t.Fatalf("doc %d: id %q vs %q", d, a.ExternalID(uint32(d)), b.ExternalID(uint32(d)))
		}
	}
	var d1, f1, d2, f2 []uint32
	for i := range a.NumTerms() {
		if a.Term(i) != b.Term(i) {
			t.Fatalf("term %d: %q vs %q", i, a.Term(i), b.Term(i))
		}
		l1, err := a.List(i)
		if err != nil {
			t.Fatal(err)
		}
		l2, err := b.List(i)
		if err != nil {
			t.Fatal(err)
		}
		if d1, f1, err = l1.Decode(d1[:0], f1[:0]); err != nil {
			t.Fatal(err)
		}
		if d2, f2, err = l2.Decode(d2[:0], f2[:0]); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(d1, d2) || !slices.Equal(f1, f2) {
			t.Fatalf("term %q: lists differ", a.Term(i))
		}
	}
}

// TestTopicsLengthsHeapsZipf checks the length law (mean, median, heavy
// tail), the vocabulary against its Heaps target and a Zipf-like df law.
func TestTopicsLengthsHeapsZipf(t *testing.T) {
	p := small(4000)
	p.Vocab = 60000
	// Many topics: each background rank is then shared by many topics, as
	// expectedVocab's even spreading assumes (32 topics leave it uneven).
	p.Topics = 2048
	tp := newTopics(t, TopicsConfig{Params: p, Seed: 1, Log: queryLog(t), Workers: 2})
	docs := collect(t, tp, nil)
	var lens []float64
	df := map[string]int{}
	var sum float64
	for _, d := range docs {
		var l uint32
		for i, f := range d.TFs {
			l += f
			df[d.Terms[i]]++
		}
		lens = append(lens, float64(l))
		sum += float64(l)
	}
	slices.Sort(lens)
	mean, median := sum/float64(len(lens)), lens[len(lens)/2]
	wantMedian := p.MeanLen * math.Exp(-DefaultLenSigma*DefaultLenSigma/2)
	if math.Abs(mean/p.MeanLen-1) > 0.08 || math.Abs(median/wantMedian-1) > 0.08 {
		t.Fatalf("length mean %.1f (want %.1f), median %.1f (want %.1f)", mean, p.MeanLen, median, wantMedian)
	}
	// Log-normal σ = 1: P(L > 3·mean) = P(Z > (ln 3 + 0.5)) ≈ 5.4%.
	over := len(lens) - sort3(lens, 3*p.MeanLen)
	if f := float64(over) / float64(len(lens)); f < 0.035 || f > 0.08 {
		t.Fatalf("share of documents longer than 3·mean = %.3f, want ≈ 0.054", f)
	}
	want := tp.Params().Vocab
	if v := len(df); math.Abs(float64(v)/float64(want)-1) > 0.15 {
		t.Fatalf("vocabulary %d, Heaps target %d", v, want)
	}
	// df against rank, log-log slope over ranks 10..3000: Zipf-like.
	dfs := make([]float64, 0, len(df))
	for _, c := range df {
		dfs = append(dfs, float64(c))
	}
	slices.Sort(dfs)
	slices.Reverse(dfs)
	var sx, sy, sxx, sxy, c float64
	for r := 10; r <= 3000; r++ {
		x, y := math.Log(float64(r)), math.Log(dfs[r-1])
		sx, sy, sxx, sxy, c = sx+x, sy+y, sxx+x*x, sxy+x*y, c+1
	}
	slope := (sxy - sx*sy/c) / (sxx - sx*sx/c)
	if slope > -0.4 || slope < -2 {
		t.Fatalf("df ~ rank^%.2f, want a Zipf-like slope in (-2, -0.4)", slope)
	}
}

func sort3(sorted []float64, x float64) int {
	i, _ := slices.BinarySearch(sorted, x)
	return i
}

// repeatRate is the share of postings with tf >= 2 among words of df below
// 2% of the documents (content words).
func repeatRate(docs []*index.Document) float64 {
	df := map[string]int{}
	for _, d := range docs {
		for _, w := range d.Terms {
			df[w]++
		}
	}
	var rep, all float64
	for _, d := range docs {
		for i, w := range d.Terms {
			if df[w]*50 < len(docs) {
				all++
				if d.TFs[i] >= 2 {
					rep++
				}
			}
		}
	}
	return rep / all
}

// TestTopicsBurstiness: the urn makes a word that occurs once likely to
// recur: far more repeats than with the urn switched off (Alpha huge, so
// every token is a fresh draw) at the same lengths.
func TestTopicsBurstiness(t *testing.T) {
	p := small(1500)
	bursty := repeatRate(collect(t, newTopics(t, TopicsConfig{Params: p, Seed: 2, Workers: 2}), nil))
	p.Alpha = 1e7
	flat := repeatRate(collect(t, newTopics(t, TopicsConfig{Params: p, Seed: 2, Workers: 2}), nil))
	if bursty < 3*flat || bursty < 0.1 {
		t.Fatalf("repeat rate %.4f with the urn, %.4f without: want >= 3×", bursty, flat)
	}
}

// TestTopicsLocality: under Locality, consecutive documents share their
// main topic (site runs), so the postings of content words (df < 5%)
// cluster: the mean log gap between consecutive postings falls.
func TestTopicsLocality(t *testing.T) {
	gapBits := func(loc bool) float64 {
		p := small(3000)
		p.Topics = 2048 // specific topics: their words mark a site
		tp := newTopics(t, TopicsConfig{Params: p, Seed: 4, Workers: 2, Locality: loc})
		docs := collect(t, tp, nil)
		df := map[string]int{}
		for _, d := range docs {
			for _, w := range d.Terms {
				df[w]++
			}
		}
		last := map[string]int{}
		var bits, cnt float64
		for i, d := range docs {
			for _, w := range d.Terms {
				if df[w]*20 > len(docs) {
					continue // content words only
				}
				if j, ok := last[w]; ok {
					bits += math.Log2(float64(i - j))
					cnt++
				}
				last[w] = i
			}
		}
		return bits / cnt
	}
	on, off := gapBits(true), gapBits(false)
	if on > off-0.2 {
		t.Fatalf("mean log2 gap %.2f with locality, %.2f without: want >= 0.2 bit less", on, off)
	}
}

func TestTopicsConfigErrors(t *testing.T) {
	bad := []TopicParams{
		{Docs: 0},
		{Docs: 10, MeanLen: -1},
		{Docs: 10, LenSigma: 9},
		{Docs: 10, Discount: 1},
		{Docs: 10, Background: 1.5},
		{Docs: 10, Topics: -2},
		{Docs: 10, ZipfS: 0.1},
		{Docs: 10, MeanLen: 50, PostingsPerDoc: 60},
		{Docs: 10, QueryTopical: 1},
		{Docs: 10, MeanLen: 100, MaxLen: 50},
		{Docs: 10, QueryDF: map[string]float64{"x": 2}},
		{Docs: 10, SiteShare: 1},
		{Docs: 10, SiteShare: -0.1},
		{Docs: 10, SiteVocab: -1},
	}
	for _, p := range bad {
		if _, err := NewTopics(TopicsConfig{Params: p}); err == nil || !strings.HasPrefix(err.Error(), "gen: ") {
			t.Errorf("%+v: err = %v, want a gen: error", p, err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.json")
	p := TopicParams{Docs: 123, Topics: 9, QueryDF: map[string]float64{"a": 0.5}}
	if err := SaveParams(path, p); err != nil {
		t.Fatal(err)
	}
	if err := SaveParams(path, p); err == nil {
		t.Fatal("SaveParams overwrote an existing file")
	}
	q, err := LoadParams(path)
	if err != nil || q.Docs != 123 || q.Topics != 9 || q.QueryDF["a"] != 0.5 {
		t.Fatalf("LoadParams = %+v, %v", q, err)
	}
	for name, body := range map[string]string{
		"unknown.json":  `{"docs": 5, "nope": 1}`,
		"trailing.json": `{"docs": 5} {}`,
		"broken.json":   `{"docs": `,
		"type.json":     `{"docs": "many"}`,
	} {
		f := filepath.Join(dir, name)
		os.WriteFile(f, []byte(body), 0o644)
		if _, err := LoadParams(f); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v, want an error naming the file", name, err)
		}
	}
}

func TestZipfSampler(t *testing.T) {
	for _, c := range []struct {
		n    int
		s, q float64
	}{{50, 1.3, 10}, {100000, 1.1, 5}, {20000, 0.8, 2}} {
		z := newZipf(c.n, c.s, c.q)
		r := rng{s: 42}
		const draws = 400000
		cnt := make([]int, c.n)
		for range draws {
			cnt[z.draw(&r)]++
		}
		var norm float64
		for k := range c.n {
			norm += math.Pow(float64(k+1)+c.q, -c.s)
		}
		for _, k := range []int{0, 1, 5, 40, min(5000, c.n-1)} {
			want := draws * math.Pow(float64(k+1)+c.q, -c.s) / norm
			if want < 50 {
				continue
			}
			if d := math.Abs(float64(cnt[k]) - want); d > 5*math.Sqrt(want) {
				t.Errorf("n=%d s=%v q=%v: rank %d drawn %d times, want %.0f", c.n, c.s, c.q, k, cnt[k], want)
			}
		}
	}
}
