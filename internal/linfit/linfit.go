// Package linfit is the one weighted least-squares fit of a line
// y = b0 + b1·x that the scheduler's batch and host-share models and the
// server's batch cost model share. It keeps the five weighted sums of the
// normal equations, so observations are added (and old ones forgotten by a
// factor) in O(1) without storing them; callers choose the weights and the
// fallback for a fit the data do not determine.
package linfit

// Sums are the weighted sums Σw, Σw·x, Σw·x², Σw·y, Σw·x·y of the
// observations (x, y) with weights w. The zero value holds no observation.
type Sums struct {
	W, X, XX, Y, XY float64
}

// Add adds the observation (x, y) with weight w.
func (s *Sums) Add(x, y, w float64) {
	s.W += w
	s.X += w * x
	s.XX += w * x * x
	s.Y += w * y
	s.XY += w * x * y
}

// Decay multiplies the weight of every observation so far by f
// (exponential forgetting: with f < 1 and one Add per step, the sums
// follow about the last 1/(1-f) observations).
func (s *Sums) Decay(f float64) {
	s.W *= f
	s.X *= f
	s.XX *= f
	s.Y *= f
	s.XY *= f
}

// Solve returns the weighted least-squares line y = b0 + b1·x through the
// observations. ok is false when the line is not determined: no weight, or
// a determinant below 1e-9 of W·XX (all x about equal: the intercept is
// not identifiable). b0 and b1 may have any sign; callers that need a
// non-negative fixed part or slope apply their own fallback.
func (s Sums) Solve() (b0, b1 float64, ok bool) {
	if s.W <= 0 {
		return 0, 0, false
	}
	det := s.W*s.XX - s.X*s.X
	if !(det > 1e-9*s.W*s.XX) {
		return 0, 0, false
	}
	b1 = (s.W*s.XY - s.X*s.Y) / det
	b0 = (s.Y - b1*s.X) / s.W
	return b0, b1, true
}

// ThroughOrigin is the weighted least-squares slope of a line through the
// origin, y = b·x: Σw·x·y / Σw·x² (0 when XX is 0).
func (s Sums) ThroughOrigin() float64 {
	if s.XX <= 0 {
		return 0
	}
	return s.XY / s.XX
}

// MeanRatio is Σw·y / Σw·x, the weighted mean of y per unit of x (a mean
// time per query when x counts queries); 0 when X is 0.
func (s Sums) MeanRatio() float64 {
	if s.X == 0 {
		return 0
	}
	return s.Y / s.X
}
