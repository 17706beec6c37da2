// Package e2e holds end-to-end tests that run the whole pipeline (read,
// analyze, index, query, evaluate) on real collections.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/index/source"
)

const shared = "../../../shared/data"

type adapter struct{ r *source.Reader }

func (a adapter) Next() (*index.Document, error) {
	d, err := a.r.Next()
	if err != nil {
		return nil, err
	}
	return &index.Document{ID: d.ID, Text: d.Text}, nil
}

// runCollection indexes a collection with Porter + English stop words and
// returns the evaluation of its top-1000 OR run.
func runCollection(t *testing.T, name, qrels string, qtf bool) eval.Summary {
	t.Helper()
	dir := filepath.Join(shared, "collections", name)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("collection %s not available: %v", name, err)
	}
	aopt := analysis.Options{Stem: "english", Stopwords: "english"}
	an, err := analysis.New(aopt)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := source.Open(filepath.Join(dir, "docs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	out := filepath.Join(t.TempDir(), name+".qp")
	if _, err := index.Build(context.Background(), adapter{rd}, index.BuildOptions{
		Out: out, NewAnalyzer: func() index.Analyzer { return an.AppendTokens },
		Meta: index.Meta{Stem: "english", Stopwords: "english"},
	}); err != nil {
		t.Fatal(err)
	}
	x, err := index.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	qf, err := os.Open(filepath.Join(dir, "queries.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer qf.Close()
	fq, err := eval.ReadQueries(qf)
	if err != nil {
		t.Fatal(err)
	}
	qs := make([]engine.Query, len(fq))
	for i, q := range fq {
		qs[i] = engine.Query{ID: q.ID, Terms: an.Tokens(q.Text), Mode: engine.Or, K: 1000, QTF: qtf}
	}
	resp := make([]engine.Response, len(qs))
	if err := engine.NewCPU(x, 0).SearchBatch(context.Background(), qs, engine.Options{}, resp); err != nil {
		t.Fatal(err)
	}
	run := eval.Run{}
	for i, r := range resp {
		if r.Err != nil {
			t.Fatalf("query %s: %v", qs[i].ID, r.Err)
		}
		for j, res := range r.Results {
			run[qs[i].ID] = append(run[qs[i].ID], eval.RunEntry{DocID: x.ExternalID(res.Doc), Rank: j + 1, Score: float64(res.Score)})
		}
	}
	qr, err := os.Open(filepath.Join(dir, qrels))
	if err != nil {
		t.Fatal(err)
	}
	defer qr.Close()
	judg, err := eval.ReadQrels(qr)
	if err != nil {
		t.Fatal(err)
	}
	return eval.Evaluate(run, judg)
}

// TestCACMMatchesAnserini: BM25 (k1=0.9, b=0.4, Porter, stop words) on CACM
// lands within 0.01 MAP of Anserini's published 0.3123
// (../shared/data/reference/anserini-configs/cacm.yaml), with Lucene's
// query-term-frequency semantics.
func TestCACMMatchesAnserini(t *testing.T) {
	s := runCollection(t, "cacm", "qrels", true)
	const anserini = 0.3123
	if d := s.MAP - anserini; d > 0.01 || d < -0.01 {
		t.Fatalf("CACM MAP %.4f, Anserini %.4f: differs by more than 0.01", s.MAP, anserini)
	}
	if s.NumQ != 52 {
		t.Fatalf("evaluated %d queries, want 52", s.NumQ)
	}
	t.Logf("CACM MAP %.4f P@10 %.4f nDCG@10 %.4f", s.MAP, s.Precision(10), s.NDCGAt(10))
}

// TestNPLMatchesReferenceRun: on NPL (short, repetition-free queries) the
// default semantics match the published reference run's MAP 0.2858.
func TestNPLMatchesReferenceRun(t *testing.T) {
	s := runCollection(t, "npl", "qrels", false)
	if d := s.MAP - 0.2858; d > 0.002 || d < -0.002 {
		t.Fatalf("NPL MAP %.4f, reference run 0.2858", s.MAP)
	}
}
