package scheduler

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
)

func lnSeconds(d time.Duration) float64 { return math.Log(d.Seconds()) }

func TestQueryFeatures(t *testing.T) {
	x := testIndex(t)
	df := func(term string) uint64 {
		id, ok := x.Lookup(term)
		if !ok {
			t.Fatalf("%s not in the index", term)
		}
		return uint64(x.Record(id).DF)
	}
	q := engine.Query{Terms: []string{"t020", "t005", "t020", "nope", "t090", "nope"}, Mode: engine.Or, QTF: true}
	f := QueryFeatures(x, q)
	a, b, c := df("t005"), df("t020"), df("t090") // descending
	want := Features{Mode: engine.Or, Terms: 3, Missing: 1, Min: c, Second: b, Max: a, Sum: a + b + c}
	if f != want {
		t.Fatalf("features %+v, want %+v", f, want)
	}
	if f.Empty() {
		t.Fatal("an OR query with lists is not empty")
	}
	q.Mode = engine.And
	if f := QueryFeatures(x, q); !f.Empty() || Basis(f) != [NumBasis]float64{1} {
		t.Fatalf("AND with a missing term: %+v", f)
	}
	if f := QueryFeatures(x, engine.Query{Terms: []string{"t005"}, Mode: engine.Or}); f.Min != a || f.Second != 0 || f.Sum != a {
		t.Fatalf("one term: %+v", f)
	}
	if f := QueryFeatures(x, engine.Query{Mode: engine.Or}); !f.Empty() || f != (Features{Mode: engine.Or}) {
		t.Fatalf("no terms: %+v", f)
	}
}

// syntheticSamples draws n queries of 1 to 6 terms with list lengths
// log-uniform in [1, 10^6] and times exp(θ·Basis + ε), ε ~ N(0, σ²).
func syntheticSamples(n int, theta [NumBasis]float64, sigma float64, mode engine.Mode, seed uint64) []Sample {
	rng := rand.New(rand.NewPCG(seed, 11))
	out := make([]Sample, n)
	for i := range out {
		f := Features{Mode: mode, Terms: 1 + rng.IntN(6)}
		for range f.Terms {
			l := uint64(math.Exp(rng.Float64() * math.Log(1e6)))
			f.Sum += l
			f.Max = max(f.Max, l)
			switch {
			case f.Min == 0 || l < f.Min:
				f.Second, f.Min = f.Min, l
			case f.Second == 0 || l < f.Second:
				f.Second = l
			}
		}
		x := Basis(f)
		var y float64
		for j := range x {
			y += theta[j] * x[j]
		}
		y += sigma * rng.NormFloat64()
		out[i] = Sample{Features: f, Time: time.Duration(math.Exp(y) * 1e9)}
	}
	return out
}

var trueTheta = [NumBasis]float64{-11, 0.55, 0.15, 0.3, 0.4, 0.012, 0.1, -0.05}

// TestFitRecoversCoefficients fits noiseless and noisy synthetic data with
// known coefficients.
func TestFitRecoversCoefficients(t *testing.T) {
	// Noiseless: exact recovery (up to the nanosecond rounding of times).
	m := FitModel(syntheticSamples(2000, trueTheta, 0, engine.And, 1), ModelOptions{})
	got, ok := m.Coefficients(engine.And)
	if !ok {
		t.Fatal("model not fitted")
	}
	for i := range got {
		if math.Abs(got[i]-trueTheta[i]) > 1e-3 {
			t.Fatalf("noiseless fit θ = %v, want %v", got, trueTheta)
		}
	}
	if e := m.Evaluate(syntheticSamples(500, trueTheta, 0, engine.And, 2)); e > 1e-3 {
		t.Fatalf("noiseless relative error %v", e)
	}

	// Log-normal noise σ = 0.1: coefficients within a few standard errors,
	// and a held-out mean relative error of E|e^ε - 1| ≈ σ·sqrt(2/π) ≈ 0.080.
	m = FitModel(syntheticSamples(4000, trueTheta, 0.1, engine.And, 3), ModelOptions{})
	got, _ = m.Coefficients(engine.And)
	tol := [NumBasis]float64{0.15, 0.03, 0.01, 0.03, 0.03, 0.002, 0.01, 0.03}
	for i := range got {
		if math.Abs(got[i]-trueTheta[i]) > tol[i] {
			t.Fatalf("noisy fit θ = %v, want %v ± %v", got, trueTheta, tol)
		}
	}
	e := m.Evaluate(syntheticSamples(4000, trueTheta, 0.1, engine.And, 4))
	if e < 0.07 || e > 0.09 {
		t.Fatalf("noisy held-out relative error %v, want about 0.080", e)
	}
	// Train reports the same kind of error on its held-out fifth.
	_, tr := Train(syntheticSamples(3000, trueTheta, 0.1, engine.And, 5), ModelOptions{})
	if tr.Samples != 3000 || tr.HeldOut != 600 || tr.HeldOutError < 0.07 || tr.HeldOutError > 0.09 {
		t.Fatalf("train %+v", tr)
	}
}

// TestOnlineRefit: a model trained on one cost law follows a change (every
// query twice as slow) within one window of observations, and its online
// error reflects the change.
func TestOnlineRefit(t *testing.T) {
	const window = 512
	m := FitModel(syntheticSamples(window, trueTheta, 0, engine.Or, 1), ModelOptions{Window: window})
	slower := trueTheta
	slower[0] += math.Ln2
	for _, s := range syntheticSamples(window, slower, 0, engine.Or, 2) {
		m.Observe(s.Features, s.Time)
	}
	got, _ := m.Coefficients(engine.Or)
	for i := range got {
		if math.Abs(got[i]-slower[i]) > 1e-3 {
			t.Fatalf("after the change θ = %v, want %v", got, slower)
		}
	}
	e, n := m.MeanRelError()
	// The first predictions are half the truth (error 0.5), the last exact.
	if n != window || e <= 0 || e >= 0.5 {
		t.Fatalf("online error %v over %d", e, n)
	}
	// A frozen model does not learn.
	f := FitModel(syntheticSamples(window, trueTheta, 0, engine.Or, 1), ModelOptions{Window: window, Frozen: true})
	for _, s := range syntheticSamples(100, slower, 0, engine.Or, 3) {
		f.Observe(s.Features, s.Time)
	}
	if got, _ := f.Coefficients(engine.Or); math.Abs(got[0]-trueTheta[0]) > 1e-3 {
		t.Fatalf("frozen model moved: %v", got)
	}
}

// TestModelPerMode: AND and OR samples fit separate regressions; a mode
// without samples uses the pooled one; an empty model predicts the prior.
func TestModelPerMode(t *testing.T) {
	orTheta := trueTheta
	orTheta[0], orTheta[3] = -15, 0.8
	s := append(syntheticSamples(1000, trueTheta, 0, engine.And, 1), syntheticSamples(1000, orTheta, 0, engine.Or, 2)...)
	m := FitModel(s, ModelOptions{})
	for _, tc := range []struct {
		mode engine.Mode
		want [NumBasis]float64
	}{{engine.And, trueTheta}, {engine.Or, orTheta}} {
		got, _ := m.Coefficients(tc.mode)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-3 {
				t.Fatalf("%v: θ = %v, want %v", tc.mode, got, tc.want)
			}
		}
	}
	if _, ok := m.Coefficients(engine.AndOr); !ok {
		t.Fatal("no pooled fallback for AndOr")
	}
	c := m.Clone()
	c.Fit(nil)
	if _, ok := m.Coefficients(engine.And); !ok {
		t.Fatal("refitting a clone changed the original")
	}
	f := Features{Mode: engine.Or, Terms: 2, Min: 10, Second: 20, Sum: 1000}
	if got := c.Predict(f); got != time.Microsecond+1000 {
		t.Fatalf("prior %v", got)
	}
	if got := constModel(3 * time.Millisecond).Predict(f); got < 2999*time.Microsecond || got > 3001*time.Microsecond {
		t.Fatalf("fixed model predicts %v", got)
	}
}

// TestCollinearWindow: when every query has the same number of terms the
// inputs are collinear; the ridge keeps the fit solvable and its
// predictions exact.
func TestCollinearWindow(t *testing.T) {
	s := syntheticSamples(500, trueTheta, 0, engine.And, 7)
	for i := range s {
		f := &s[i].Features
		f.Terms = 2
		if f.Second == 0 {
			f.Second = f.Min
		}
		f.Sum = f.Min + f.Second + 1
		f.Max = f.Second + 1
		x := Basis(*f)
		var y float64
		for j := range x {
			y += trueTheta[j] * x[j]
		}
		s[i].Time = time.Duration(math.Exp(y) * 1e9)
	}
	m := FitModel(s, ModelOptions{})
	if e := m.Evaluate(s); e > 1e-3 {
		t.Fatalf("relative error %v on collinear data", e)
	}
}

// TestPredictLockFree: Predict (which takes no lock) runs while another
// goroutine observes (the race detector checks the publication), and
// afterwards every prediction is exp(θ·Basis(f)) of the coefficients the
// regressions hold, for a mode with its own fit, one using the pooled fit
// and, in a fresh model, the prior.
func TestPredictLockFree(t *testing.T) {
	m := FitModel(syntheticSamples(64, trueTheta, 0, engine.Or, 1), ModelOptions{Window: 256})
	probe := syntheticSamples(50, trueTheta, 0, engine.And, 9)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, s := range syntheticSamples(600, trueTheta, 0.2, engine.Or, 2) {
			m.Observe(s.Features, s.Time)
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
		default:
			if p := m.Predict(probe[i%len(probe)].Features); p < MinTime {
				t.Fatalf("prediction %v below MinTime", p)
			}
			continue
		}
		break
	}
	for _, mode := range []engine.Mode{engine.Or, engine.And} {
		theta, ok := m.Coefficients(mode)
		if !ok {
			t.Fatalf("%v: no usable fit after 664 samples", mode)
		}
		for _, s := range probe {
			f := s.Features
			f.Mode = mode
			x := Basis(f)
			var y float64
			for j := range x {
				y += theta[j] * x[j]
			}
			want := time.Duration(math.Exp(y) * 1e9)
			if got := m.Predict(f); got != want {
				t.Fatalf("%v: Predict %v, want %v from the held coefficients", mode, got, want)
			}
		}
	}
	f := probe[0].Features
	if got, want := NewCostModel(ModelOptions{}).Predict(f), time.Microsecond+time.Duration(f.Sum); got != want {
		t.Fatalf("untrained model: %v, want the prior %v", got, want)
	}
}

// TestObserveAllocs: a cost-model update allocates nothing but, on every
// refit, the published coefficients (one refit per refitEvery samples once
// the window has a full start: under one allocation per update).
func TestObserveAllocs(t *testing.T) {
	m := NewCostModel(ModelOptions{})
	f := Features{Mode: engine.And, Terms: 2, Min: 100, Second: 1000, Max: 1000, Sum: 1100}
	for i := range 20 * minSamples {
		m.Observe(f, time.Duration(1000+i)*time.Nanosecond)
	}
	if a := testing.AllocsPerRun(800, func() { m.Observe(f, 5*time.Microsecond) }); a >= 1 {
		t.Errorf("%v allocations per Observe, want under 1", a)
	}
}

// TestObserveBatch: ObserveBatch learns the samples whose ok is true as
// many Observe calls do (the same window and, once solved, the same
// coefficients of every regression), records their errors with the fit
// from before the batch, and allocates nothing but the published
// coefficients (once per batch; n Observe calls publish every refitEvery).
func TestObserveBatch(t *testing.T) {
	train := syntheticSamples(600, trueTheta, 0.2, engine.And, 1)
	batch := append(syntheticSamples(300, trueTheta, 0.2, engine.Or, 2), syntheticSamples(200, trueTheta, 0.3, engine.And, 3)...)
	skip := func(i int) bool { return i%7 == 3 }
	a, b := FitModel(train, ModelOptions{Window: 512}), FitModel(train, ModelOptions{Window: 512})
	before := a.cur.Load()
	var wantErr float64
	var wantN int64
	for i, s := range batch {
		if skip(i) {
			continue
		}
		a.Observe(s.Features, s.Time)
		wantErr += RelError(before.predict(s.Features), s.Time)
		wantN++
	}
	b.ObserveBatch(len(batch), func(i int) (Features, *[NumBasis]float64, time.Duration, bool) {
		var x *[NumBasis]float64
		if i%2 == 0 { // the basis given, or not: the same samples
			b := Basis(batch[i].Features)
			x = &b
		}
		return batch[i].Features, x, batch[i].Time, !skip(i)
	})
	if b.errN != wantN || math.Abs(b.errSum-wantErr) > 1e-9*wantErr {
		t.Fatalf("error record: %d samples, sum %v; want %d, %v", b.errN, b.errSum, wantN, wantErr)
	}
	a.mu.Lock()
	a.pooled.flush()
	for md := range a.modes {
		a.modes[md].flush()
	}
	a.publish()
	a.mu.Unlock()
	for _, md := range []engine.Mode{0, engine.And, engine.Or, engine.AndOr} {
		ra, rb := &a.pooled, &b.pooled
		if md != 0 {
			ra, rb = &a.modes[md], &b.modes[md]
		}
		if ra.n != rb.n || ra.coef != rb.coef || ra.xtx != rb.xtx {
			t.Fatalf("mode %v: %d samples, coefficients %v; want %d, %v", md, rb.n, rb.coef, ra.n, ra.coef)
		}
	}
	for _, s := range batch[:20] {
		if pa, pb := a.Predict(s.Features), b.Predict(s.Features); pa != pb {
			t.Fatalf("Predict %v after ObserveBatch, %v after Observe", pb, pa)
		}
	}
	at := func(i int) (Features, *[NumBasis]float64, time.Duration, bool) {
		return batch[i].Features, nil, batch[i].Time, true
	}
	if n := testing.AllocsPerRun(50, func() { b.ObserveBatch(len(batch), at) }); n > 1 {
		t.Errorf("%v allocations per ObserveBatch", n)
	}
}

// basisLog1p is Basis as computed before log1pInt: six math.Log1p calls
// (the reference of TestBasisTable and BenchmarkBasis).
func basisLog1p(f Features) [NumBasis]float64 {
	if f.Empty() {
		return [NumBasis]float64{1}
	}
	a := math.Log1p(float64(f.Min))
	b := math.Log1p(float64(f.Second))
	s := math.Log1p(float64(f.Sum))
	m := math.Log1p(float64(f.Terms))
	r := math.Log1p(float64(f.Sum - f.Max))
	x := math.Log1p(float64(f.Max))
	return [NumBasis]float64{1, a, b, s, m, a * s, r, x}
}

// TestBasisTable: Basis with its table of logarithms is bit for bit the
// Basis of six math.Log1p calls, on and around the table's end.
func TestBasisTable(t *testing.T) {
	n := uint64(len(log1pTable))
	for _, v := range []uint64{0, 1, 2, 3, 100, n - 2, n - 1, n, n + 1, 3 * n, 113187, 1 << 32, 1<<53 + 1, math.MaxUint64} {
		if got, want := log1pInt(v), math.Log1p(float64(v)); got != want {
			t.Fatalf("log1pInt(%d) = %v, want %v", v, got, want)
		}
	}
	for i := range 20000 {
		u := uint64(i)
		f := Features{Mode: engine.Or, Terms: 1 + i%5, Min: u % 50, Second: u, Max: 3 * u, Sum: 5*u + u%50}
		if got, want := Basis(f), basisLog1p(f); got != want {
			t.Fatalf("Basis(%+v) = %v, want %v", f, got, want)
		}
	}
}

// TestReplaceAccumulate: replace (a full window's oldest sample swapped
// for a new one in one pass) leaves the normal equations bit for bit as
// accumulate's two passes (remove, then add) do, over many random samples
// of mixed scales.
func TestReplaceAccumulate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sample := func() ([NumBasis]float64, float64) {
		var x [NumBasis]float64
		for i := range x {
			x[i] = (rng.Float64() - 0.3) * math.Exp2(float64(rng.IntN(20)-10))
		}
		return x, rng.NormFloat64() * 5
	}
	var a, b regressor
	for range 64 {
		x, y := sample()
		a.accumulate(x, y, 1)
		b.accumulate(x, y, 1)
	}
	for n := range 10000 {
		o, oy := sample()
		x, y := sample()
		a.accumulate(o, oy, -1)
		a.accumulate(x, y, 1)
		b.replace(&o, oy, &x, y)
		if a.xtx != b.xtx || a.xty != b.xty {
			t.Fatalf("sample %d: replace %v %v, accumulate %v %v", n, b.xtx, b.xty, a.xtx, a.xty)
		}
	}
}
