package gen

import (
	"context"
	"fmt"
	"io"
	"math"
)

// CooccurSampleDocs is the sample on which FitTopicSpread compares the
// real and the generated collection (CooccurStats): enough documents for
// the ratios at stage 3 to be non-zero, a few seconds to generate.
const CooccurSampleDocs = 20000

// SpreadFitOptions configure FitTopicSpread.
type SpreadFitOptions struct {
	// Target is the real collection's CooccurStats on a uniform sample of
	// SampleDocs·N_real/N of its documents (MeasureIndexCooccur), Seed
	// the seed of its queries.
	Target     CooccurStats
	SampleDocs int
	Seed       uint64
	// Steps of bisection over log2 TopicSpread in [0, 16] (0 = 7: a
	// resolution of 2^(16/128), 9%).
	Steps int
	// Log, when not nil, receives one line per step.
	Log io.Writer
}

// maxFitSpreadLog2 bounds the fitted TopicSpread at 2^16.
const maxFitSpreadLog2 = 16

// maxSpreadDistinctErr is how much a candidate spread may add to the
// relative error of the calibrated distinct terms per document (against
// PostingsPerDoc) that the default spread leaves.
const maxSpreadDistinctErr = 0.02

// FitTopicSpread returns the TopicSpread (with cfg's other parameters)
// whose generated documents (in random order, even when cfg asks for
// Locality) co-occur as the real collection's: the first
// SampleDocs generated documents (a uniform sample in random order) give
// the same mean known-item R ratios at stages >= 2 (CooccurStats.Score
// = 0), measured exactly as on the real sample. The ratios grow with the
// spread (a topic's rarer words belong to fewer topics, so the words of
// one document meet again in the few other documents of its topics), so
// the fit bisects on log2 S and returns the evaluated S of the smallest
// |score|, with its score. A spread whose calibration misses
// PostingsPerDoc by 2 points more than the default spread's counts as too
// high; when every spread tried does, the default is returned, score NaN.
// Each step generates SampleDocs documents
// (seconds).
func FitTopicSpread(ctx context.Context, cfg TopicsConfig, opt SpreadFitOptions) (spread int, score float64, err error) {
	// The sample must be uniform: measure in random order (the spread
	// acts on words, not on the order).
	cfg.Locality = false
	steps := opt.Steps
	if steps <= 0 {
		steps = 7
	}
	n := opt.SampleDocs
	if n <= 0 {
		n = CooccurSampleDocs
	}
	// The calibration error the default spread leaves (sites, for one,
	// leave some): a candidate may add at most maxSpreadDistinctErr to it.
	c0 := cfg
	c0.Params.TopicSpread = DefaultTopicSpread
	t0, err := NewTopics(c0)
	if err != nil {
		return 0, 0, err
	}
	e0 := math.Abs(t0.Fit.SampleDistinct/t0.p.PostingsPerDoc - 1)
	seen := map[int]float64{}
	at := func(l2 float64) (int, float64, error) {
		s := max(1, int(math.Round(math.Exp2(l2))))
		if v, ok := seen[s]; ok {
			return s, v, nil
		}
		c := cfg
		c.Params.TopicSpread = s
		t, err := NewTopics(c)
		if err != nil {
			return 0, 0, err
		}
		if d := t.Fit.SampleDistinct / t.p.PostingsPerDoc; math.Abs(d-1) > e0+maxSpreadDistinctErr {
			// Too specific to calibrate: a document's topic draws repeat
			// its topics' top words so often that no urn concentration
			// gives PostingsPerDoc (and the vocabulary fit drives zipf_s
			// up): treated as too high.
			seen[s] = math.Inf(1)
			if opt.Log != nil {
				fmt.Fprintf(opt.Log, "  topic_spread %d: %.1f distinct terms per document for %.1f: not calibrated, too high\n", s, t.Fit.SampleDistinct, t.p.PostingsPerDoc)
			}
			return s, math.Inf(1), nil
		}
		st, err := t.sampleCooccur(ctx, n, opt.Seed)
		if err != nil {
			return 0, 0, err
		}
		v := st.Score(opt.Target)
		seen[s] = v
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "  topic_spread %d: score %+.3f (%s)\n", s, v, st)
		}
		return s, v, nil
	}
	best, bestV := 0, math.Inf(1)
	lo, hi := 0.0, float64(maxFitSpreadLog2)
	for range steps {
		mid := (lo + hi) / 2
		s, v, err := at(mid)
		if err != nil {
			return 0, 0, err
		}
		if !math.IsInf(v, 1) && math.Abs(v) < math.Abs(bestV) {
			best, bestV = s, v
		}
		if v < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	if best == 0 {
		// No spread tried calibrated: keep the default.
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "  no topic_spread tried calibrates: the default %d\n", DefaultTopicSpread)
		}
		return DefaultTopicSpread, math.NaN(), nil
	}
	return best, bestV, nil
}
