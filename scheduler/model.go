package scheduler

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qpengine/qp/engine"
)

// NumBasis is the number of regression inputs (and coefficients) of a cost
// model; see Basis.
const NumBasis = 8

// Basis maps features to the inputs of the cost regression:
//
//	φ = [1, a, b, s, m, a·s, r, x]  with  a = ln(1+Min), b = ln(1+Second),
//	                                      s = ln(1+Sum), m = ln(1+Terms),
//	                                      r = ln(1+Sum-Max), x = ln(1+Max)
//
// and the model predicts ln(seconds) = θ·φ, i.e. a power law in the list
// lengths (t = e^θ0 · Min^θ1 · Second^θ2 · Sum^θ3 · ...) whose exponent of
// Min may grow with Sum (the a·s term: an intersection driven by the
// shortest list that searches longer lists costs more per posting). Ding et
// al. (WWW'09 §9) fit M5 rules on the first four features; a log-linear
// least squares fit is the smallest model that tracks costs over the five
// orders of magnitude list lengths span, and fitting in log space minimizes
// relative rather than absolute error, which is the error that matters to
// the scheduler's cost ratios. r and x split Sum into the longest list and
// the rest: MaxScore and BMW (OR, and AND+OR's OR part) soon skip most of
// the longest, lowest-scoring list, so the rest predicts their cost
// better than the sum (held-out error of the CPU model on GCIDE with
// TREC'06, one thread, 4,000 queries: OR 25.7% → 23.7%, AND+OR 28.2% →
// 23.1%, AND 22.1% → 21.7%; about the timing noise of the 2-core
// development machine, where two passes over the same queries differ by
// more). A query that reads no postings (Features.Empty) has every input
// but the intercept 0: its fixed overhead.
func Basis(f Features) [NumBasis]float64 {
	if f.Empty() {
		return [NumBasis]float64{1}
	}
	a := log1pInt(f.Min)
	b := log1pInt(f.Second)
	s := log1pInt(f.Sum)
	m := log1pInt(uint64(f.Terms))
	r := log1pInt(f.Sum - f.Max)
	x := log1pInt(f.Max)
	return [NumBasis]float64{1, a, b, s, m, a * s, r, x}
}

// log1pTable holds math.Log1p(n) for n < len(log1pTable): 32 KB, which
// covers 93% of the list lengths Basis takes on GCIDE with the TREC'06
// efficiency queries.
var log1pTable = func() (t [4096]float64) {
	for i := range t {
		t[i] = math.Log1p(float64(i))
	}
	return t
}()

// log1pInt is math.Log1p(float64(n)), bit for bit: from a table for small
// n. Basis is computed once per arriving query (the scheduler's initJob),
// and its six logarithms were 2.6% of the CPU of a 2M q/s GPU-only GCIDE
// AND run on the H100 host (issue 24).
func log1pInt(n uint64) float64 {
	if n < uint64(len(log1pTable)) {
		return log1pTable[n]
	}
	return math.Log1p(float64(n))
}

// Limits of measured and predicted times: measured times are raised to
// MinTime before their logarithm is taken (a clock may report 0 for the
// cheapest queries), predictions are clamped to [MinTime, maxTime].
const (
	MinTime = 100 * time.Nanosecond
	maxTime = time.Hour
)

// Sample is one measured execution: the query's features and the time it
// took on one processor.
type Sample struct {
	Features Features
	Time     time.Duration
}

// ModelOptions configure a CostModel.
type ModelOptions struct {
	// Window is the number of most recent samples each regression is fitted
	// on (default 4096). Fit loads the last Window training samples; every
	// Observe then replaces the oldest, so the model follows drifting costs
	// (a warmed-up cache, another load on the machine) at the pace of
	// Window queries.
	Window int
	// Frozen disables online refitting: Observe only records the
	// prediction error.
	Frozen bool
}

// DefaultWindow is the default ModelOptions.Window.
const DefaultWindow = 4096

// CostModel predicts a query's execution time on one processor from its
// Features (Ding et al. WWW'09 §9). It holds one least-squares regression
// per query mode and one pooled over all modes (used for a mode with fewer
// than minSamples samples); each is fitted on a sliding window of samples
// and refitted online, after every sample while it has few and every
// refitEvery samples after that (the normal equations of the window are
// kept as running sums, so a refit costs O(NumBasis³), not O(Window)).
// Without any sample the model predicts the prior 1 µs + 1 ns per posting
// of Sum, the same on every processor, so an untrained scheduler sends
// every query to the "either" queue until measurements arrive.
//
// It also records the mean relative prediction error of every Observe, made
// before the observation is learned (the online, "prequential" error; Ding
// et al. report 22% for their GPU cost model).
//
// A CostModel is safe for concurrent use.
type CostModel struct {
	mu     sync.Mutex
	opt    ModelOptions
	pooled regressor
	modes  [4]regressor // by engine.Mode (index 0 unused)
	errSum float64
	errN   int64
	// cur is the fit the regressions gave last, republished whenever a
	// coefficient or a regression's usability changes (rarely: every
	// refitEvery samples), so that Predict takes no lock. The scheduler's
	// submitting goroutine predicts twice per query while CPU slots
	// observe on the same model; under the mutex the two contended (issue
	// 24: the scheduler's own per-query work bounds its rates).
	cur atomic.Pointer[fit]
	gen uint64 // the regressions' generations at the last publish
}

// fit is an immutable copy of a CostModel's coefficients.
type fit struct {
	pooled fitCoef
	modes  [4]fitCoef // by engine.Mode (index 0 unused)
}

type fitCoef struct {
	coef   [NumBasis]float64
	usable bool
}

// publish makes the regressions' current coefficients the model's fit
// (m.mu held, or m not yet shared).
func (m *CostModel) publish() {
	f := &fit{pooled: fitCoef{m.pooled.coef, m.pooled.usable()}}
	for i := range m.modes {
		f.modes[i] = fitCoef{m.modes[i].coef, m.modes[i].usable()}
	}
	m.cur.Store(f)
	m.gen = m.generation()
}

// generation sums the regressions' generations (m.mu held).
func (m *CostModel) generation() uint64 {
	g := m.pooled.gen
	for i := range m.modes {
		g += m.modes[i].gen
	}
	return g
}

// minSamples is the number of samples a regression needs before it is used.
const minSamples = 2 * NumBasis

// NewCostModel returns an untrained model.
func NewCostModel(opt ModelOptions) *CostModel {
	if opt.Window <= 0 {
		opt.Window = DefaultWindow
	}
	if opt.Window < minSamples {
		opt.Window = minSamples
	}
	m := &CostModel{opt: opt}
	m.publish()
	return m
}

// FixedCostModel returns a frozen model predicting exp(θ·Basis(f)) seconds
// for every mode. It is meant for tests and for costs known in advance.
func FixedCostModel(theta [NumBasis]float64) *CostModel {
	m := NewCostModel(ModelOptions{Frozen: true})
	m.pooled.coef, m.pooled.fixed = theta, true
	m.publish()
	return m
}

// FitModel returns a model fitted on samples (see CostModel.Fit).
func FitModel(samples []Sample, opt ModelOptions) *CostModel {
	m := NewCostModel(opt)
	m.Fit(samples)
	return m
}

// Fit discards what the model learned and fits it on samples (the last
// Window of them per regression). The error record is reset too.
func (m *CostModel) Fit(samples []Sample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pooled = regressor{}
	m.modes = [4]regressor{}
	m.errSum, m.errN = 0, 0
	for _, s := range samples {
		m.learn(s.Features, s.Time)
	}
	m.pooled.flush()
	for i := range m.modes {
		m.modes[i].flush()
	}
	m.publish()
}

// learn adds one sample to the pooled and the mode regressions (m.mu held).
func (m *CostModel) learn(f Features, t time.Duration) { m.learnBasis(f, Basis(f), t) }

// learnBasis is learn with f's Basis given.
func (m *CostModel) learnBasis(f Features, x [NumBasis]float64, t time.Duration) {
	y := math.Log(max(t, MinTime).Seconds())
	m.pooled.add(x, y, m.opt.Window)
	if r := m.mode(f.Mode); r != nil {
		r.add(x, y, m.opt.Window)
	}
	if m.generation() != m.gen {
		m.publish()
	}
}

func (m *CostModel) mode(md engine.Mode) *regressor {
	if md >= engine.And && md <= engine.AndOr {
		return &m.modes[md]
	}
	return nil
}

// Predict returns the predicted execution time of a query with features f.
// It takes no lock (see CostModel.cur).
func (m *CostModel) Predict(f Features) time.Duration {
	return m.cur.Load().predict(f)
}

// PredictBasis is Predict with f's Basis given: a caller that predicts one
// query on several models computes its Basis (six logarithms) once (the
// scheduler: once per job for both processors, issue 24).
func (m *CostModel) PredictBasis(f Features, x *[NumBasis]float64) time.Duration {
	return m.cur.Load().predictBasis(f, *x)
}

func (p *fit) predict(f Features) time.Duration { return p.predictBasis(f, Basis(f)) }

// predictBasis is predict with f's Basis given.
func (p *fit) predictBasis(f Features, x [NumBasis]float64) time.Duration {
	r := &p.pooled
	if md := f.Mode; md >= engine.And && md <= engine.AndOr && p.modes[md].usable {
		r = &p.modes[md]
	}
	if !r.usable {
		return time.Microsecond + time.Duration(min(f.Sum, uint64(maxTime))) // the prior
	}
	var y float64
	for i, c := range r.coef {
		y += c * x[i]
	}
	sec := math.Exp(y)
	if !(sec >= MinTime.Seconds()) { // also NaN
		return MinTime
	}
	if sec > maxTime.Seconds() {
		return maxTime
	}
	return time.Duration(sec * 1e9)
}

// Observe records that a query with features f took t: it returns the
// prediction made before learning t, adds |prediction - t| / t to the error
// record and, unless the model is frozen, refits on the sample.
func (m *CostModel) Observe(f Features, t time.Duration) (predicted time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.observe(f, t)
}

// observe is Observe with m.mu held.
func (m *CostModel) observe(f Features, t time.Duration) (predicted time.Duration) {
	x := Basis(f) // once for the prediction and the update
	return m.observeBasis(f, &x, t)
}

// observeBasis is observe with f's Basis given.
func (m *CostModel) observeBasis(f Features, xp *[NumBasis]float64, t time.Duration) (predicted time.Duration) {
	x := *xp
	predicted = m.cur.Load().predictBasis(f, x)
	m.errSum += RelError(predicted, t)
	m.errN++
	if !m.opt.Frozen {
		m.learnBasis(f, x, t)
	}
	return predicted
}

// ObserveBatch is Observe for the n samples at(0), ..., at(n-1) (those
// whose ok is false are skipped; x is f's Basis, nil: computed here: the
// scheduler gives the one it predicted with) under one lock, with the regressions
// solved once after the last rather than every refitEvery samples: each
// prediction of the error record is then made with the fit from before
// the batch. The scheduler learns a GPU batch's answers through it (a
// batch of a thousand is a thousand samples: 1.95 of the 27.3 s of CPU of
// a 3M q/s GPU-only run on the H100 host, issue 24, through Observe).
// The window keeps every sample, as n Observe calls would.
func (m *CostModel) ObserveBatch(n int, at func(i int) (f Features, x *[NumBasis]float64, t time.Duration, ok bool)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.cur.Load()
	for i := range n {
		f, xp, t, ok := at(i)
		if !ok {
			continue
		}
		var x [NumBasis]float64
		if xp != nil {
			x = *xp
		} else {
			x = Basis(f)
		}
		m.errSum += RelError(p.predictBasis(f, x), t)
		m.errN++
		if m.opt.Frozen {
			continue
		}
		y := math.Log(max(t, MinTime).Seconds())
		m.pooled.addDeferred(x, y, m.opt.Window)
		if r := m.mode(f.Mode); r != nil {
			r.addDeferred(x, y, m.opt.Window)
		}
	}
	m.pooled.flush()
	for md := range m.modes {
		m.modes[md].flush()
	}
	if m.generation() != m.gen {
		m.publish()
	}
}

// TryObserve is Observe unless another goroutine holds the model (an
// Observe, a Fit or a read of the error record in progress): then it
// drops the sample and returns false instead of waiting. The scheduler's
// one-query CPU slots observe through it: at a million answers a second
// on 16 cores, one Observe per answer under one mutex serialized the
// slots behind it (issue 24), while a sample dropped now and then costs
// the model nothing it cannot learn from the next one. Without contention
// (a single goroutine, the simulation) it learns every sample, as Observe.
func (m *CostModel) TryObserve(f Features, t time.Duration) bool {
	if !m.mu.TryLock() {
		return false
	}
	defer m.mu.Unlock()
	m.observe(f, t)
	return true
}

// RelError is |predicted - actual| / actual, with actual raised to MinTime.
func RelError(predicted, actual time.Duration) float64 {
	a := max(actual, MinTime).Seconds()
	return math.Abs(predicted.Seconds()-a) / a
}

// MeanRelError returns the mean relative error of the predictions made by
// Observe since the last Fit or ResetError, and their number.
func (m *CostModel) MeanRelError() (float64, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.errN == 0 {
		return 0, 0
	}
	return m.errSum / float64(m.errN), m.errN
}

// ResetError clears the error record.
func (m *CostModel) ResetError() {
	m.mu.Lock()
	m.errSum, m.errN = 0, 0
	m.mu.Unlock()
}

// Evaluate returns the mean relative error of m's predictions on samples
// (without learning them), e.g. on a held-out slice.
func (m *CostModel) Evaluate(samples []Sample) float64 {
	if len(samples) == 0 {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var s float64
	for _, x := range samples {
		s += RelError(m.Predict(x.Features), x.Time)
	}
	return s / float64(len(samples))
}

// Coefficients returns the coefficients used for mode (θ of Basis, in
// ln-seconds), and false when the model would predict the prior.
func (m *CostModel) Coefficients(mode engine.Mode) ([NumBasis]float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.mode(mode)
	if r == nil || !r.usable() {
		r = &m.pooled
	}
	return r.coef, r.usable()
}

// Samples returns the number of samples in the pooled window.
func (m *CostModel) Samples() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pooled.n
}

// Clone returns an independent copy of m (with its error record), so that
// several runs can start from the same trained state.
func (m *CostModel) Clone() *CostModel {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &CostModel{opt: m.opt, errSum: m.errSum, errN: m.errN}
	c.pooled = m.pooled.clone()
	for i := range m.modes {
		c.modes[i] = m.modes[i].clone()
	}
	c.publish()
	return c
}

// String describes the model's coefficients.
func (m *CostModel) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := fmt.Sprintf("pooled(n=%d)=%.3g", m.pooled.n, m.pooled.coef)
	for md := engine.And; md <= engine.AndOr; md++ {
		if r := &m.modes[md]; r.usable() {
			s += fmt.Sprintf(" %v(n=%d)=%.3g", md, r.n, r.coef)
		}
	}
	return s
}

// regressor is a least-squares fit of y on x over a sliding window of
// samples. xtx (its lower triangle) and xty are the window's normal equations, maintained
// incrementally and recomputed from the window every window-size updates
// so that rounding from subtractions cannot accumulate.
type regressor struct {
	xs    [][NumBasis]float64 // ring buffer
	ys    []float64
	head  int // index of the oldest sample when the ring is full
	n     int
	adds  int    // since the last recomputation
	stale int    // samples added since the last solve
	gen   uint64 // counts the changes of coef and of usable()
	xtx   [NumBasis][NumBasis]float64
	xty   [NumBasis]float64
	coef  [NumBasis]float64
	fixed bool // coefficients set by FixedCostModel
}

func (r *regressor) usable() bool { return r.fixed || r.n >= minSamples }

func (r *regressor) clone() regressor {
	c := *r
	c.xs = append([][NumBasis]float64(nil), r.xs...)
	c.ys = append([]float64(nil), r.ys...)
	return c
}

func (r *regressor) add(x [NumBasis]float64, y float64, window int) {
	r.addDeferred(x, y, window)
	if r.n >= minSamples && (r.n < 8*minSamples || r.stale >= refitEvery) {
		r.solve()
	}
}

// addDeferred is add without the refit: the sample is in the window and
// the normal equations, counted stale until the next solve (flush).
func (r *regressor) addDeferred(x [NumBasis]float64, y float64, window int) {
	if r.fixed {
		panic("BUG: scheduler: learning into a fixed regression")
	}
	if r.n < window {
		r.xs = append(r.xs, x)
		r.ys = append(r.ys, y)
		r.n++
		if r.n == minSamples {
			r.gen++ // usable from now on
		}
		r.accumulate(x, y, 1)
	} else {
		r.replace(&r.xs[r.head], r.ys[r.head], &x, y)
		r.xs[r.head], r.ys[r.head] = x, y
		r.head = (r.head + 1) % window
	}
	r.adds++
	r.stale++
	if r.adds >= window {
		r.recompute()
	}
}

// refitEvery is how many samples a regression with a full start takes
// between refits (solving costs about as much as the rest of a query's
// bookkeeping in the scheduler, and one sample barely moves the fit).
const refitEvery = 8

// flush solves for samples not yet solved for.
func (r *regressor) flush() {
	if r.stale > 0 && r.n >= minSamples {
		r.solve()
	}
}

// accumulate adds sign times sample (x, y) to the normal equations. XᵀX is
// symmetric and solve reads only its lower triangle (and diagonal), so only
// that is kept: the same values, in 36 products instead of 64 (Observe runs
// it twice per regression for every query the scheduler answers).
func (r *regressor) accumulate(x [NumBasis]float64, y, sign float64) {
	for i := range NumBasis {
		sx := sign * x[i]
		row := &r.xtx[i]
		for j := range i + 1 {
			row[j] += sx * x[j]
		}
		r.xty[i] += sx * y
	}
}

// replace is accumulate(o, oy, -1) then accumulate(x, y, 1), a full
// window's oldest sample (o, oy) replaced by (x, y), in one pass over the
// normal equations: each element gets the same two roundings in the same
// order (the same values, bit for bit: TestReplaceAccumulate), with one
// load and one store instead of two (issue 24: the GPU batch's model
// update, a quarter of the scheduler's own CPU per query with instant
// backends).
func (r *regressor) replace(o *[NumBasis]float64, oy float64, x *[NumBasis]float64, y float64) {
	for i := range NumBasis {
		so, sx := -o[i], x[i]
		row := &r.xtx[i]
		for j := range i + 1 {
			v := row[j]
			v += so * o[j]
			v += sx * x[j]
			row[j] = v
		}
		v := r.xty[i]
		v += so * oy
		v += sx * y
		r.xty[i] = v
	}
}

func (r *regressor) recompute() {
	r.xtx, r.xty, r.adds = [NumBasis][NumBasis]float64{}, [NumBasis]float64{}, 0
	for i := range r.xs {
		r.accumulate(r.xs[i], r.ys[i], 1)
	}
}

// solve sets coef to the ridge solution of (XᵀX + λI)θ = Xᵀy by Cholesky
// factorization. The ridge λ = 1e-10 · trace(XᵀX)/NumBasis is far below the
// data's own scale, so it does not bias a well-posed fit, but it makes
// collinear inputs solvable: a window in which every query has two terms
// determines only the sum of the intercept and m's coefficient, and the
// ridge splits it instead of failing.
func (r *regressor) solve() {
	r.stale = 0
	var a [NumBasis][NumBasis]float64
	var tr float64
	for i := range NumBasis {
		tr += r.xtx[i][i]
	}
	lambda := 1e-10*tr/NumBasis + 1e-12
	a = r.xtx
	for i := range NumBasis {
		a[i][i] += lambda
	}
	// Cholesky: a = L Lᵀ, L stored in the lower triangle of a.
	for j := range NumBasis {
		d := a[j][j]
		for k := range j {
			d -= a[j][k] * a[j][k]
		}
		if !(d > 0) {
			return // numerically singular even with the ridge: keep the last fit
		}
		d = math.Sqrt(d)
		a[j][j] = d
		for i := j + 1; i < NumBasis; i++ {
			s := a[i][j]
			for k := range j {
				s -= a[i][k] * a[j][k]
			}
			a[i][j] = s / d
		}
	}
	// Forward (L z = xty) and back (Lᵀ θ = z) substitution.
	var z, th [NumBasis]float64
	for i := range NumBasis {
		s := r.xty[i]
		for k := range i {
			s -= a[i][k] * z[k]
		}
		z[i] = s / a[i][i]
	}
	for i := NumBasis - 1; i >= 0; i-- {
		s := z[i]
		for k := i + 1; k < NumBasis; k++ {
			s -= a[k][i] * th[k]
		}
		th[i] = s / a[i][i]
	}
	for _, v := range th {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
	}
	r.coef = th
	r.gen++
}
