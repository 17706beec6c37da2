package gen

import (
	"context"
	"slices"
	"testing"
)

// TestMeasureQueryCooccurExact: on identical documents every list is the
// whole sample, so every R ratio is 1 and every AND finds every document;
// a query with a term absent from the sample is not counted. logQueries
// keeps queries of 2..CooccurMaxTerms distinct mapped terms.
func TestMeasureQueryCooccurExact(t *testing.T) {
	same := make([][]uint32, 30)
	for i := range same {
		same[i] = []uint32{1, 2, 3, 4, 5}
	}
	st := measureQueryCooccur(same, [][]uint32{{1, 2}, {3, 1, 2}, {1, 2, 3, 4}, {9, 1}})
	if st.Queries != 3 || st.Docs != 30 || st.AndMedian != 30 {
		t.Fatalf("identical documents: %+v, want 3 queries, AND median 30", st)
	}
	for k := 2; k <= CooccurMaxTerms; k++ {
		for x := 1; x < k; x++ {
			if st.R[k][x] != 1 {
				t.Errorf("R k=%d x=%d = %v, want 1", k, x, st.R[k][x])
			}
		}
	}
	// Two halves that share only term 1: the pair {1, 2} has ℓ1 = 2's
	// half, ℓ2 = all (R = 15/30) and finds the half.
	half := make([][]uint32, 30)
	for i := range half {
		half[i] = []uint32{1, uint32(2 + i%2)}
	}
	st = measureQueryCooccur(half, [][]uint32{{1, 2}})
	if st.Queries != 1 || st.R[2][1] != 0.5 || st.AndMedian != 15 {
		t.Errorf("halves: %+v, want R k=2 x=1 0.5, AND median 15", st)
	}
	log := &QueryLog{Terms: []string{"a", "b", "c", "d", "e", "f"},
		Queries: [][]int32{{0, 1}, {0, 0, 1}, {0}, {0, 1, 2, 3, 4}, {0, 5}, {2, 3, 4}}}
	ids := map[int32]uint32{0: 10, 1: 11, 2: 12, 3: 13, 4: 14} // "f" has none
	got := logQueries(log, func(lt int32) (uint32, bool) { v, ok := ids[lt]; return v, ok })
	want := [][]uint32{{10, 11}, {10, 11}, {12, 13, 14}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("logQueries = %v, want %v", got, want)
	}
}

// TestFitQueryTopicalBounds: the fit searches upwards from φ0 only, is
// deterministic, and ends at its bounds when the target is the model's
// own sample at either end: at φ0 (score 0) it keeps φ0; at the top it
// returns MaxFitQueryTopical unless φ0 already co-occurs at least as
// much.
func TestFitQueryTopicalBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("generates samples of a collection (seconds)")
	}
	const n = 3000
	ql := queryLog(t)
	p := small(n)
	p.QueryTopical = 0.5
	cfg := TopicsConfig{Params: p, Seed: 4, Log: ql, Workers: 2}
	sample := func(phi float64) CooccurStats {
		c := cfg
		c.Params.QueryTopical = phi
		st, err := newTopics(t, c).sampleQueryCooccur(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		if st.Queries == 0 {
			t.Fatalf("no log query has all its terms in %d documents", n)
		}
		return st
	}
	low, top := sample(0.5), sample(MaxFitQueryTopical)
	fit := func(target CooccurStats) float64 {
		phi, _, err := FitQueryTopical(context.Background(), cfg, TopicalFitOptions{Target: target, SampleDocs: n, Steps: 2})
		if err != nil {
			t.Fatal(err)
		}
		if phi < 0.5 || phi > MaxFitQueryTopical {
			t.Fatalf("φ %v outside [0.5, %v]", phi, MaxFitQueryTopical)
		}
		return phi
	}
	if got := fit(low); got != 0.5 {
		t.Errorf("target = the sample at φ0: φ %v, want φ0 0.5", got)
	}
	want := MaxFitQueryTopical
	if low.Score(top) >= 0 {
		want = 0.5 // φ0 co-occurs as much already: kept
	}
	a, b := fit(top), fit(top)
	if a != want || a != b {
		t.Errorf("target = the sample at %v: φ %v then %v, want %v", MaxFitQueryTopical, a, b, want)
	}
	if _, _, err := FitQueryTopical(context.Background(), TopicsConfig{Params: p}, TopicalFitOptions{Target: top}); err == nil {
		t.Error("no query log: want an error")
	}
}
