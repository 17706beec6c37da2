package gen

import (
	"math"
	"slices"
	"testing"
)

// TestFitRecovers generates a collection with known parameters, fits an
// index of it and checks that the fit recovers them: documents, mean
// length and σ, postings per document, vocabulary, and query dfs.
func TestFitRecovers(t *testing.T) {
	want := TopicParams{Docs: 3000, MeanLen: 120, LenSigma: 0.7, PostingsPerDoc: 60, Topics: 64, Vocab: 40000}
	ql := queryLog(t)
	tp := newTopics(t, TopicsConfig{Params: want, Seed: 9, Log: ql, Workers: 2})
	x := buildTopicsIndex(t, tp)
	got, err := FitIndex(x, FitOptions{Log: ql, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	near := func(name string, g, w, tol float64) {
		if math.Abs(g/w-1) > tol {
			t.Errorf("%s: fitted %.4g, generated with %.4g", name, g, w)
		}
	}
	if got.Docs != want.Docs {
		t.Errorf("docs %d, want %d", got.Docs, want.Docs)
	}
	near("mean_len", got.MeanLen, want.MeanLen, 0.05)
	near("len_sigma", got.LenSigma, want.LenSigma, 0.1)
	near("postings_per_doc", got.PostingsPerDoc, want.PostingsPerDoc, 0.05)
	near("vocab", float64(got.Vocab), float64(x.NumTerms()), 0)
	if got.Discount < 0.1 || got.Discount > 0.9 {
		t.Errorf("discount %v out of [0.1, 0.9]", got.Discount)
	}
	// Query dfs: the index's own, and absentDF/N for the absent terms.
	for _, q := range ql.Terms[:200] {
		tid, ok := x.Lookup(q)
		wantDF := absentDF / float64(want.Docs)
		if ok {
			wantDF = float64(x.Record(tid).DF) / float64(want.Docs)
		}
		if got.QueryDF[q] != wantDF {
			t.Fatalf("query_df[%q] = %v, want %v", q, got.QueryDF[q], wantDF)
		}
	}
	// The fitted parameters generate a collection of the same size whose
	// lengths match.
	tp2 := newTopics(t, TopicsConfig{Params: got, Seed: 10, Log: ql, Workers: 2})
	var lens []float64
	var sc docScratch
	for d := range 2000 {
		lens = append(lens, float64(len(tp2.document(d, &sc))))
	}
	slices.Sort(lens)
	orig := slices.Clone(x.DocLens())
	slices.Sort(orig)
	near("median length", lens[len(lens)/2], float64(orig[len(orig)/2]), 0.1)
}

func TestFitErrors(t *testing.T) {
	tp := newTopics(t, TopicsConfig{Params: TopicParams{Docs: 1, MeanLen: 20, PostingsPerDoc: 10, Topics: 4}, Seed: 1})
	x := buildTopicsIndex(t, tp)
	if _, err := FitIndex(x, FitOptions{}); err == nil {
		t.Fatal("fitting a 1-document index: no error")
	}
}
