package gen

import (
	"context"
	"math"
	"testing"
)

// TestMeasureCooccurExact: on documents that all hold the same terms,
// every list is the whole sample, so every R ratio is 1 and every AND
// finds every document; on documents with no term in common but one, a
// pair's AND finds only its source.
func TestMeasureCooccurExact(t *testing.T) {
	same := make([][]uint32, 50)
	for i := range same {
		same[i] = []uint32{7, 3, 9, 1, 4}
	}
	st := measureCooccur(same, 1)
	ref := st
	if st.Queries != cooccurQueries || st.Docs != 50 || st.AndMedian != 50 {
		t.Fatalf("identical documents: %+v", st)
	}
	for k := 2; k <= CooccurMaxTerms; k++ {
		for x := 1; x < k; x++ {
			if st.R[k][x] != 1 {
				t.Errorf("identical documents: R k=%d x=%d = %v, want 1", k, x, st.R[k][x])
			}
		}
	}
	if s := st.Score(st); s != 0 {
		t.Errorf("score against itself %v, want 0", s)
	}
	// Disjoint documents but for a common term 0: a query's rarest lists
	// are its source's own terms (df 1), so stage 1 is 1 (k=2: 1/1 or
	// 1/n) and the AND is the source alone.
	disj := make([][]uint32, 40)
	for i := range disj {
		disj[i] = []uint32{0, uint32(3*i + 1), uint32(3*i + 2), uint32(3*i + 3)}
	}
	st = measureCooccur(disj, 2)
	if st.AndMedian != 1 {
		t.Errorf("disjoint documents: AND median %v, want 1", st.AndMedian)
	}
	if got := st.R[3][2]; got <= 0 || got > 1 {
		t.Errorf("disjoint documents: R k=3 x=2 = %v, want in (0, 1]", got)
	}
	if s := st.Score(ref); s >= 0 {
		t.Errorf("disjoint against identical: score %v, want < 0", s)
	}
	// Deterministic by seed.
	if a, b := measureCooccur(disj, 5), measureCooccur(disj, 5); a != b {
		t.Errorf("same seed, different stats: %v vs %v", a, b)
	}
}

// TestFitTopicSpreadRecovers generates a collection with a known topic
// spread, indexes it, measures its co-occurrence from the index and fits
// the spread from the other parameters: the fit must land within a factor
// of 2 of the truth (the search's resolution is 9%; the rest is the
// samples' noise at this size), and a spread far off must score
// accordingly.
func TestFitTopicSpreadRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and fits a collection (seconds)")
	}
	const docs, sample = 8000, 4000
	want := TopicParams{Docs: docs, MeanLen: 80, LenSigma: 0.6, PostingsPerDoc: 40, Topics: 256, Vocab: 30000, TopicSpread: 128}
	tp := newTopics(t, TopicsConfig{Params: want, Seed: 3, Workers: 2})
	if d := tp.Fit.SampleDistinct / want.PostingsPerDoc; math.Abs(d-1) > maxSpreadDistinctErr {
		t.Fatalf("the generating model is not calibrated: %.1f distinct terms per document for %v", tp.Fit.SampleDistinct, want.PostingsPerDoc)
	}
	x := buildTopicsIndex(t, tp)
	target, err := MeasureIndexCooccur(x, sample, 1)
	if err != nil {
		t.Fatal(err)
	}
	fitted, err := FitIndex(x, FitOptions{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	fitted.Topics = want.Topics // FitIndex leaves the topic count at its default
	cfg := TopicsConfig{Params: fitted, Seed: 11, Workers: 2}
	s, sc, err := FitTopicSpread(context.Background(), cfg, SpreadFitOptions{Target: target, SampleDocs: sample, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("target %s; fitted topic_spread %d (score %+.3f), generated with %d", target, s, sc, want.TopicSpread)
	if r := float64(s) / float64(want.TopicSpread); r < 1/2.0 || r > 2.0 {
		t.Errorf("fitted topic_spread %d, generated with %d", s, want.TopicSpread)
	}
	if math.Abs(sc) > 0.25 {
		t.Errorf("fitted score %+.3f, want near 0", sc)
	}
	// The default spread co-occurs less than the generating one.
	cfg.Params.TopicSpread = DefaultTopicSpread
	low, err := newTopics(t, cfg).sampleCooccur(context.Background(), sample, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v := low.Score(target); v >= 0 {
		t.Errorf("topic_spread %d scores %+.3f against %d's collection, want < 0", DefaultTopicSpread, v, want.TopicSpread)
	}
}
