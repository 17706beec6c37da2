package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// Measure runs every query of qs alone (a batch of one) on b, one after the
// other, and returns the features and wall time of each query that
// succeeded. The first warmup queries are run once before, unmeasured, to
// warm the backend (engines, buffers, lists a GPU keeps resident). Times
// are wall-clock times of the SearchBatch call, the cost the scheduler
// sees; a batching processor's per-query cost in a batch is lower, and the
// online refit learns it from the batches it runs.
func Measure(ctx context.Context, x *index.Index, b engine.Backend, opt engine.Options, qs []engine.Query, warmup int) ([]Sample, error) {
	out := make([]engine.Response, 1)
	for i := range min(warmup, len(qs)) {
		if err := b.SearchBatch(ctx, qs[i:i+1], opt, out); err != nil {
			return nil, fmt.Errorf("scheduler: warming up %s: %w", b.Name(), err)
		}
	}
	samples := make([]Sample, 0, len(qs))
	for i := range qs {
		start := time.Now()
		err := b.SearchBatch(ctx, qs[i:i+1], opt, out)
		t := time.Since(start)
		if err != nil {
			return nil, fmt.Errorf("scheduler: measuring %s: %w", b.Name(), err)
		}
		if out[0].Err != nil {
			continue // an invalid query: its cost says nothing about valid ones
		}
		samples = append(samples, Sample{Features: QueryFeatures(x, qs[i]), Time: t})
	}
	return samples, nil
}

// TrainResult describes how a cost model was trained.
type TrainResult struct {
	Samples int // training samples (all of them fit the returned model)
	// HeldOut is the number of samples (the last 20%) held out from a
	// first fit on the others, and HeldOutError that fit's mean relative
	// error on them (the prediction error to compare with Ding et al.'s
	// 22% on the GPU).
	HeldOut      int
	HeldOutError float64
	FitError     float64 // mean relative error of the returned model on all samples
}

// Train fits a cost model on samples: first on the first 80% to measure the
// error on the last 20%, then on all of them.
func Train(samples []Sample, opt ModelOptions) (*CostModel, TrainResult) {
	tr := TrainResult{Samples: len(samples)}
	cut := len(samples) * 4 / 5
	if len(samples)-cut > 0 && cut >= minSamples {
		m := FitModel(samples[:cut], opt)
		tr.HeldOut = len(samples) - cut
		tr.HeldOutError = m.Evaluate(samples[cut:])
	}
	m := FitModel(samples, opt)
	tr.FitError = m.Evaluate(samples)
	return m, tr
}

// MeasureBatches runs qs on b in consecutive batches formed the way a
// processor with policy pol forms them under load (each batch as full as
// the policy allows, in qs order; MaxWait plays no part) and returns one
// sample per successful query: its batch's wall time shared among the
// batch's queries in proportion to the costs m predicts for them, the
// attribution the scheduler makes online. A batching processor's cost per
// query depends on the batch it runs in (a GPU amortizes its launch and
// transfer overheads over the batch), so a model fitted on queries run
// alone (Measure) would overestimate it under load, and a scheduler
// trusting it would starve the GPU. The first warmup queries are run once
// before, unmeasured.
func MeasureBatches(ctx context.Context, x *index.Index, b engine.Backend, opt engine.Options, qs []engine.Query, pol BatchPolicy, m *CostModel, warmup int) ([]Sample, error) {
	s, _, err := measureBatches(ctx, x, b, opt, qs, pol, m, warmup)
	return s, err
}

// batchTime is a measured batch: its queries and wall time.
type batchTime struct {
	n    int
	wall time.Duration
}

// measureBatches is MeasureBatches, also returning each measured batch's
// size and wall time (for a BatchModel).
func measureBatches(ctx context.Context, x *index.Index, b engine.Backend, opt engine.Options, qs []engine.Query, pol BatchPolicy, m *CostModel, warmup int) ([]Sample, []batchTime, error) {
	if m == nil {
		panic("BUG: scheduler: MeasureBatches without a cost model")
	}
	batches, feats, costs := formBatches(x, qs, pol, m)
	var out []engine.Response
	run := func(s span) (time.Duration, error) {
		out = append(out[:0], make([]engine.Response, s.hi-s.lo)...)
		start := time.Now()
		err := b.SearchBatch(ctx, qs[s.lo:s.hi], opt, out)
		return time.Since(start), err
	}
	for _, s := range batches {
		if s.lo >= warmup {
			break
		}
		if _, err := run(s); err != nil {
			return nil, nil, fmt.Errorf("scheduler: warming up %s: %w", b.Name(), err)
		}
	}
	samples := make([]Sample, 0, len(qs))
	walls := make([]batchTime, 0, len(batches))
	for _, s := range batches {
		wall, err := run(s)
		if err != nil {
			return nil, nil, fmt.Errorf("scheduler: measuring %s: %w", b.Name(), err)
		}
		walls = append(walls, batchTime{s.hi - s.lo, wall})
		var pred time.Duration
		for i := s.lo; i < s.hi; i++ {
			pred += costs[i]
		}
		for i := s.lo; i < s.hi; i++ {
			if out[i-s.lo].Err != nil {
				continue
			}
			t := wall
			if s.hi-s.lo > 1 && pred > 0 {
				t = time.Duration(float64(wall) * float64(costs[i]) / float64(pred))
			}
			samples = append(samples, Sample{Features: feats[i], Time: t})
		}
	}
	return samples, walls, nil
}

// span is the batch qs[lo:hi].
type span struct{ lo, hi int }

// formBatches splits qs, in order, into the batches a processor with policy
// pol forms under load (each as full as the policy allows, the costs
// predicted by m), and returns them with the queries' features and
// predicted costs.
func formBatches(x *index.Index, qs []engine.Query, pol BatchPolicy, m *CostModel) ([]span, []Features, []time.Duration) {
	p := &proc{spec: Processor{Batch: pol}, maxQ: pol.maxQueries()}
	var batches []span
	feats := make([]Features, len(qs))
	costs := make([]time.Duration, len(qs))
	for lo := 0; lo < len(qs); {
		bb := builder{p: p}
		hi := lo
		for hi < len(qs) && !bb.full() {
			feats[hi] = QueryFeatures(x, qs[hi])
			costs[hi] = m.Predict(feats[hi])
			bb.add(&job{f: feats[hi], cost: [2]time.Duration{costs[hi], costs[hi]}}, false)
			hi++
		}
		batches = append(batches, span{lo, hi})
		lo = hi
	}
	return batches, feats, costs
}
