package linfit

import (
	"math"
	"testing"
)

// TestSolveExact: points on a line give the line back, whatever the
// weights.
func TestSolveExact(t *testing.T) {
	var s Sums
	for i, x := range []float64{1, 4, 9, 16, 256} {
		s.Add(x, 0.003+0.0002*x, float64(i+1))
	}
	b0, b1, ok := s.Solve()
	if !ok || math.Abs(b0-0.003) > 1e-12 || math.Abs(b1-0.0002) > 1e-15 {
		t.Fatalf("Solve = %v, %v, %v; want 0.003, 0.0002, true", b0, b1, ok)
	}
}

// TestSolveLeastSquares: off-line points give the least-squares line
// (worked by hand: (0,0), (1,1), (2,1) -> y = 1/6 + x/2), and a weight of
// 2 counts as the observation twice.
func TestSolveLeastSquares(t *testing.T) {
	var s Sums
	s.Add(0, 0, 1)
	s.Add(1, 1, 1)
	s.Add(2, 1, 1)
	b0, b1, ok := s.Solve()
	if !ok || math.Abs(b0-1.0/6) > 1e-12 || math.Abs(b1-0.5) > 1e-12 {
		t.Fatalf("Solve = %v, %v, %v; want 1/6, 1/2", b0, b1, ok)
	}
	var w, d Sums
	w.Add(1, 2, 2)
	w.Add(3, 3, 1)
	d.Add(1, 2, 1)
	d.Add(1, 2, 1)
	d.Add(3, 3, 1)
	if w != d {
		t.Fatalf("weight 2 %+v differs from two observations %+v", w, d)
	}
}

// TestSolveUndetermined: no observation, or all at one x, has no line;
// the fallbacks then give the slope through the origin and the mean ratio.
func TestSolveUndetermined(t *testing.T) {
	var s Sums
	if _, _, ok := s.Solve(); ok {
		t.Fatal("an empty fit must not solve")
	}
	if s.ThroughOrigin() != 0 || s.MeanRatio() != 0 {
		t.Fatal("an empty fit's fallbacks must be 0")
	}
	s.Add(10, 0.020, 1)
	s.Add(10, 0.030, 1)
	if _, _, ok := s.Solve(); ok {
		t.Fatal("one x only must not solve")
	}
	if r := s.MeanRatio(); math.Abs(r-0.0025) > 1e-15 {
		t.Fatalf("MeanRatio = %v, want 0.0025", r)
	}
	if b := s.ThroughOrigin(); math.Abs(b-0.0025) > 1e-15 {
		t.Fatalf("ThroughOrigin = %v, want 0.0025", b)
	}
}

// TestDecay: decaying by f and adding is the same as weighting the older
// observation by f, and an old regime is forgotten: after 200 observations
// of a new line at f = 0.95 the fit is the new line within 1e-3 (the old one keeps 0.95^200 ≈ 4e-5 of its weight).
func TestDecay(t *testing.T) {
	var a, b Sums
	a.Add(1, 1, 1)
	a.Decay(0.5)
	a.Add(2, 3, 1)
	b.Add(1, 1, 0.5)
	b.Add(2, 3, 1)
	if a != b {
		t.Fatalf("decayed %+v, weighted %+v", a, b)
	}
	var s Sums
	for i := range 100 {
		s.Decay(0.95)
		s.Add(float64(1+i%7), 5+float64(1+i%7), 1)
	}
	for i := range 200 {
		s.Decay(0.95)
		s.Add(float64(1+i%7), 1+2*float64(1+i%7), 1)
	}
	b0, b1, ok := s.Solve()
	if !ok || math.Abs(b0-1) > 1e-3 || math.Abs(b1-2) > 1e-3 {
		t.Fatalf("after the change: %v + %v·x (ok %v), want 1 + 2x", b0, b1, ok)
	}
}
