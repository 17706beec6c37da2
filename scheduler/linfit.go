package scheduler

import (
	"math"
	"time"

	"github.com/qpengine/qp/internal/linfit"
)

// linFit is an online least-squares fit of y = b0 + b1·x (internal/linfit's
// sums and solve, shared with serve's batch cost model) with exponential
// forgetting: every observation multiplies the weight of the earlier ones
// by forget, so the fit follows the last ~1/(1-forget) observations (a
// sliding window without storing it). A prior enters as two pseudo-
// observations of weight 1 that are forgotten like the rest. The fit keeps
// b0 >= 0 and b1 >= 0 (a time or a core count made of a fixed part and a
// part growing with x): where the free solution breaks one, it is a line
// through the origin. Not safe for concurrent use.
type linFit struct {
	forget float64
	sums   linfit.Sums // weighted sums of the normal equations
	b0, b1 float64
	n      int // real observations
	errSum float64
	errN   int
}

func newLinFit(forget float64) linFit { return linFit{forget: forget} }

// prior adds the pseudo-observations (x0, y0) and (x1, y1) and solves.
func (f *linFit) prior(x0, y0, x1, y1 float64) {
	f.sums.Add(x0, y0, 1)
	f.sums.Add(x1, y1, 1)
	f.solve()
}

// observe learns (x, y), recording the relative error of the prediction
// made before it.
func (f *linFit) observe(x, y float64) {
	if y > 0 && f.sums.W > 0 {
		f.errSum += math.Abs(f.at(x)-y) / y
		f.errN++
	}
	f.sums.Decay(f.forget)
	f.sums.Add(x, y, 1)
	f.n++
	f.solve()
}

// solve sets b0 and b1 from the sums.
func (f *linFit) solve() {
	if f.sums.W <= 0 {
		return
	}
	if b0, b1, ok := f.sums.Solve(); ok && b0 >= 0 && b1 >= 0 {
		f.b0, f.b1 = b0, b1
		return
	}
	// One x only (the fixed part is not identifiable), a negative
	// intercept or a negative slope (noise: times falling with size): a
	// line through the origin, whose slope is positive. (A slope of 0
	// would tell the GPU-first placement that a batch of any size costs
	// its fixed part: an unlimited batch, and no overflow; on the CUDA
	// emulator that made one batch of 36,000 queries.)
	if f.sums.XX > 0 {
		f.b0, f.b1 = 0, max(f.sums.ThroughOrigin(), 0)
	} else {
		f.b0, f.b1 = max(f.sums.Y/f.sums.W, 0), 0
	}
}

func (f *linFit) at(x float64) float64 { return f.b0 + f.b1*x }

// meanError is the mean relative error of the predictions made before each
// observation, and their number.
func (f *linFit) meanError() (float64, int) {
	if f.errN == 0 {
		return 0, 0
	}
	return f.errSum / float64(f.errN), f.errN
}

// BatchModel predicts the wall time of a batching processor's batch from
// its number of queries: Fixed + PerQuery·n, the measured batch time per
// query and fixed part (a GPU's launches and transfers), refitted online
// from every batch the processor ran (least squares over about the last
// batchWindow batches, exponentially forgotten). It replaces per-query cost
// models for the GPU-first placement: issue 24's device runs found the
// per-query GPU model 53-85% off, while a batch's time, the quantity the
// placement needs, is a sum over hundreds of queries whose errors average
// out. Without a prior and before any batch it predicts 0 (every query is
// deemed to make its deadline on the GPU: GPU-first until measured).
//
// A BatchModel is owned by one scheduler's dispatcher (the Experiment
// clones it per run); it is not safe for concurrent use.
type BatchModel struct {
	fit   linFit
	prior bool
}

// batchWindow is the number of batches a BatchModel mostly remembers.
const batchWindow = 64

// NewBatchModel returns a model with the prior fixed + perQuery·n (both 0:
// no prior). The prior weighs as two batches, of 1 and of 256 queries.
func NewBatchModel(fixed, perQuery time.Duration) *BatchModel {
	m := &BatchModel{fit: newLinFit(1 - 1.0/batchWindow)}
	if fixed > 0 || perQuery > 0 {
		f, q := fixed.Seconds(), perQuery.Seconds()
		m.fit.prior(1, f+q, 256, f+256*q)
		m.prior = true
	}
	return m
}

// Observe learns that a batch of n queries took wall.
func (m *BatchModel) Observe(n int, wall time.Duration) {
	if n <= 0 || wall < 0 {
		panic("BUG: scheduler: observing an empty batch or a negative time")
	}
	m.fit.observe(float64(n), wall.Seconds())
}

// Predict is the predicted wall time of a batch of n queries.
func (m *BatchModel) Predict(n int) time.Duration {
	return seconds(m.fit.at(float64(n)))
}

// Params returns the fixed part and the time per query.
func (m *BatchModel) Params() (fixed, perQuery time.Duration) {
	return seconds(m.fit.b0), seconds(m.fit.b1)
}

// ready says whether the model predicts from measurements: it has a
// prior or has observed batchReady batches (the first one fixes only a
// line through the origin, which overstates the time per query of a GPU
// with a fixed part and would send its queries to the CPU).
func (m *BatchModel) ready() bool { return m.prior || m.fit.n >= batchReady }

// batchReady is the number of batches a BatchModel without prior needs
// (more would leave a GPU that starts overloaded without overflow for
// that many batches: in the simulation, waiting for 8 lost a third of the
// hybrid's rate).
const batchReady = 2

// Batches is the number of batches observed.
func (m *BatchModel) Batches() int { return m.fit.n }

// MeanRelError is the mean relative error of the predictions made before
// each observed batch, and their number.
func (m *BatchModel) MeanRelError() (float64, int) { return m.fit.meanError() }

// Clone returns an independent copy.
func (m *BatchModel) Clone() *BatchModel {
	c := *m
	return &c
}

func seconds(s float64) time.Duration {
	if !(s > 0) {
		return 0
	}
	return time.Duration(min(s, maxTime.Seconds()) * 1e9)
}
