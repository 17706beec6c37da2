package andprune

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/qpengine/qp/bench/internal/testidx"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/gen"
	"github.com/qpengine/qp/index"
)

// run measures the first limit queries of the TREC 2006 efficiency log on
// x, on all cores (query i on worker i mod P, the reports merged), and
// checks the top k of the first checkN queries against the CPU engine's
// (docIDs and score bits), so that the thresholds measured are the
// engine's.
func run(t *testing.T, x *index.Index, k, limit, checkN int) *Measurer {
	t.Helper()
	qs, an := testidx.TREC06(t, x, limit)
	P := runtime.GOMAXPROCS(0)
	ms := make([]*Measurer, P)
	errs := make([]error, P)
	var wg sync.WaitGroup
	for w := range ms {
		ms[w] = New(x, k, []int{1, 2, 4, 8})
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			errs[w] = measure(ms[w], engine.New(x), an.Tokens, qs, k, w, P, checkN)
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	m := ms[0]
	for _, o := range ms[1:] {
		m.Report.Merge(&o.Report)
		m.Multi.Merge(&o.Multi)
		m.Rich.Merge(&o.Rich)
	}
	checkReport(t, &m.Multi)
	checkReport(t, &m.Report)
	return m
}

// measure adds queries w, w+P, ... of qs to m, checking those before
// checkN against e.
func measure(m *Measurer, e *engine.Engine, tokens func(string) []string, qs []eval.Query, k, w, P, checkN int) error {
	for i := w; i < len(qs); i += P {
		q := qs[i]
		terms := tokens(q.Text)
		if len(terms) == 0 || len(terms) > engine.MaxTerms {
			continue
		}
		before := m.Report.Queries
		if err := m.Add(terms); err != nil {
			return fmt.Errorf("query %s: %v", q.ID, err)
		}
		if i >= checkN || m.Report.Queries == before {
			continue
		}
		want, _, err := e.Search(engine.Query{ID: q.ID, Terms: terms, Mode: engine.And, K: k}, engine.Options{})
		if err != nil {
			return err
		}
		docs, scores := m.TopK()
		if len(docs) != len(want) {
			return fmt.Errorf("query %s: %d results, engine %d", q.ID, len(docs), len(want))
		}
		for j, r := range want {
			if docs[j] != r.Doc || math.Float32bits(scores[j]) != math.Float32bits(r.Score) {
				return fmt.Errorf("query %s rank %d: (%d, %v), engine (%d, %v)", q.ID, j, docs[j], scores[j], r.Doc, r.Score)
			}
		}
	}
	return nil
}

func checkReport(t *testing.T, r *Report) {
	t.Helper()
	if r.Unsafe != 0 || r.ThetaBad != 0 {
		t.Fatalf("unsafe bounds %d, θ_B above the k-th score %d", r.Unsafe, r.ThetaBad)
	}
	if r.Queries == 0 || r.Full.Cands == 0 {
		t.Fatalf("no AND query measured: %+v", r.Full)
	}
	for i, s := range r.Schemes {
		if s.Left.Cands > r.Full.Cands || s.Left.Blocks > r.Full.Blocks {
			t.Fatalf("scheme %s leaves more than the full work", s.Name)
		}
		// The true k-th score with block maxima prunes at least as much
		// as any other scheme with block maxima.
		if i >= 2 && i < 2+4 && s.Left.Cands < r.Schemes[0].Left.Cands {
			t.Fatalf("scheme %s prunes more than the true k-th score", s.Name)
		}
		// Candidate bounds are at most the block bounds, and the later
		// lists' block maxima at most their list maxima.
		if c := 2 + 4; i > c && s.Left.Lookups < r.Schemes[c].Left.Lookups {
			t.Fatalf("scheme %s prunes more lookups than %s", s.Name, r.Schemes[c].Name)
		}
	}
}

// TestCACM checks the measurement on a small real collection: bounds safe,
// θ_B never above the k-th score, the top k equal to the engine's.
func TestCACM(t *testing.T) {
	x := testidx.Build(t, "cacm", testidx.English)
	for _, k := range []int{1, 10} {
		m := run(t, x, k, 2000, 2000)
		t.Logf("CACM, first 2000 TREC'06 queries:\n%s\nof which ≥ 2 terms:\n%s", m.Report.Table(), m.Multi.Table())
	}
}

// TestIndex measures $QP_ANDPRUNE_INDEX on the first $QP_ANDPRUNE_QUERIES
// (default 10000) TREC 2006 queries, k = 10, checking the first 500
// against the engine, and prints the table (docs/GPU-QUERY.md, "Block-max
// pruning of AND candidates: the potential").
func TestIndex(t *testing.T) {
	path := os.Getenv("QP_ANDPRUNE_INDEX")
	if path == "" {
		t.Skip("QP_ANDPRUNE_INDEX not set")
	}
	x, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	limit := 10000
	if s := os.Getenv("QP_ANDPRUNE_QUERIES"); s != "" {
		limit = atoi(t, s)
	}
	m := run(t, x, 10, limit, 500)
	t.Logf("%s (%d documents), first %d TREC'06 queries:\n%s\nof which ≥ 2 terms:\n%s\nof which ≥ k results:\n%s", filepath.Base(path), x.NumDocs(), limit,
		m.Report.Table(), m.Multi.Table(), m.Rich.Table())
}

func atoi(t *testing.T, s string) int {
	n := 0
	for _, c := range strings.TrimSpace(s) {
		if c < '0' || c > '9' {
			t.Fatalf("bad number %q", s)
		}
		n = 10*n + int(c-'0')
	}
	return n
}

// TestGenSmallBlocks runs the measurement on a synthetic index (gen's
// independent model: lists drawn term by term, documents uniform, unlike
// real text's co-occurrence) of 20,000 documents with blocks of 8
// postings, so that lists span many blocks and the overlap search of the
// block bounds is exercised: bounds safe, θ_B never above the k-th score,
// the first 2000 queries' top k equal to the engine's, and the candidate
// bound with the true k-th score pruning something.
func TestGenSmallBlocks(t *testing.T) {
	dir := os.Getenv("QP_QUERIES")
	if dir == "" {
		dir = filepath.Join(testidx.DataDir, "queries")
	}
	qterms, err := gen.LoadQueryTerms(filepath.Join(dir, "05.efficiency_topics.txt"), filepath.Join(dir, "06.efficiency_topics.txt"))
	if err != nil {
		t.Skip(err)
	}
	g, err := gen.New(gen.Config{Docs: 20000, Seed: 1, QueryTerms: qterms})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gen.qp")
	w, err := index.NewWriter(path, index.WriterOptions{DocLens: g.DocLengths(), BlockSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	n, produce := g.Lists()
	if _, err := w.AddListsParallel(context.Background(), n, 0, produce, nil); err != nil {
		w.Abort()
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	x, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	m := run(t, x, 10, 2000, 2000)
	if m.Rich.Queries == 0 {
		t.Fatal("no query with at least k results")
	}
	c := m.Report.Schemes[2+4] // true k-th, candidate bounds
	if _, cands, _ := m.Report.Share(c); !(cands > 0) {
		t.Fatalf("%s pruned nothing", c.Name)
	}
	t.Logf("gen, 20000 documents, blocks of 8:\n%s", m.Report.Table())
}
