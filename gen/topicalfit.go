package gen

import (
	"context"
	"fmt"
	"io"
	"math"
)

// MaxFitQueryTopical is the largest φ (QueryTopical) FitQueryTopical
// returns: almost all of a query term's documents from its topics.
const MaxFitQueryTopical = 0.999

// TopicalFitOptions configure FitQueryTopical.
type TopicalFitOptions struct {
	// Target is the real collection's log-query CooccurStats on a uniform
	// sample of SampleDocs·N_real/N documents (MeasureIndexQueryCooccur).
	Target     CooccurStats
	SampleDocs int
	// Steps of bisection over [φ0, MaxFitQueryTopical] when neither end
	// decides (0 = 4).
	Steps int
	// Log, when not nil, receives one line per step.
	Log io.Writer
}

// FitQueryTopical returns the query terms' topical share φ (with cfg's
// other parameters) for which the log's queries co-occur on the first
// SampleDocs generated documents as on the real sample (CooccurStats.Score
// of measureQueryCooccur: the mean ln ratio of Ao's R at stages >= 2),
// searched upwards only, from cfg's φ0 (default 0.95) to
// MaxFitQueryTopical: a larger φ puts more of each query term's documents
// in the topics of its queries, and the queries' terms meet more. φ0 is
// kept when the stand-in's queries already co-occur as much or more (the
// score at φ0 >= 0): lowering φ on this statistic is not safe, the
// sample's stage-3 ratio being noisy (docs/GEN.md, Validation on 16,000
// generated queries: GCIDE with φ 0.6 lost a TREC'06 row). The bound is
// returned when it still scores <= 0; otherwise the evaluated φ of the
// smallest |score|. Each step generates SampleDocs documents (seconds).
func FitQueryTopical(ctx context.Context, cfg TopicsConfig, opt TopicalFitOptions) (phi, score float64, err error) {
	cfg.Locality = false // a uniform sample: random order
	if cfg.Log == nil {
		return 0, 0, fmt.Errorf("gen: fitting query_topical needs the query log")
	}
	p0, err := cfg.Params.withDefaults()
	if err != nil {
		return 0, 0, err
	}
	phi0 := p0.QueryTopical
	n := opt.SampleDocs
	if n <= 0 {
		n = CooccurSampleDocs
	}
	steps := opt.Steps
	if steps <= 0 {
		steps = 4
	}
	at := func(phi float64) (float64, error) {
		c := cfg
		c.Params.QueryTopical = phi
		t, err := NewTopics(c)
		if err != nil {
			return 0, err
		}
		st, err := t.sampleQueryCooccur(ctx, n)
		if err != nil {
			return 0, err
		}
		v := st.Score(opt.Target)
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "  query_topical %.4g: score %+.3f (%s)\n", phi, v, st)
		}
		return v, nil
	}
	v0, err := at(phi0)
	if err != nil || v0 >= 0 || phi0 >= MaxFitQueryTopical {
		return phi0, v0, err
	}
	v1, err := at(MaxFitQueryTopical)
	if err != nil || v1 <= 0 {
		return MaxFitQueryTopical, v1, err
	}
	best, bestV := phi0, v0
	if math.Abs(v1) < math.Abs(bestV) {
		best, bestV = MaxFitQueryTopical, v1
	}
	lo, hi := phi0, MaxFitQueryTopical
	for range steps {
		mid := (lo + hi) / 2
		v, err := at(mid)
		if err != nil {
			return 0, 0, err
		}
		if math.Abs(v) < math.Abs(bestV) {
			best, bestV = mid, v
		}
		if v < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return best, bestV, nil
}
