package gen

import "math"

// zipf draws k in [0, n) with P(k) ∝ (k+1+q)^-s (Zipf–Mandelbrot; s > 0,
// q >= 0) by rejection-inversion (Hörmann & Derflinger, "Rejection-inversion
// to generate variates from monotone discrete distributions", ACM TOMACS
// 6(3), 1996; the formulation of Apache Commons RNG's
// RejectionInversionZipfSampler, with Mandelbrot's shift q): a continuous
// hat H over x in [0.5, n+0.5] is inverted and the integer k = round(x) is
// accepted when u falls in the part of k's interval of height h(k), so
// expected draws per sample are < 1.1 for any s. O(1) memory, no table.
type zipf struct {
	// The first zipfHead ranks are drawn from an alias table (one draw
	// in headMass of the cases), the rest by rejection-inversion over the
	// tail, a Zipf–Mandelbrot law itself (q shifted by zipfHead).
	head     alias
	headMass float64
	tail     *zipf
	s, q     float64
	n        int
	hx1      float64 // H(1.5) - h(1)
	hn       float64 // H(n + 0.5)
	oneMin   float64 // 1 - s
}

// zipfHead is the number of ranks drawn from zipf's alias table.
const zipfHead = 4096

func newZipf(n int, s, q float64) zipf {
	z := newZipfRaw(n, s, q)
	if n <= 2*zipfHead {
		return z
	}
	w := make([]float64, zipfHead)
	var hm float64
	for i := range w {
		w[i] = math.Exp(-s * math.Log(float64(i+1)+q))
		hm += w[i]
	}
	tm, _ := zipfSums(n, zipfHead, s, q, 0, 1)
	z.head = newAlias(w)
	z.headMass = hm / (hm + tm)
	tail := newZipfRaw(n-zipfHead, s, q+zipfHead)
	z.tail = &tail
	return z
}

func newZipfRaw(n int, s, q float64) zipf {
	z := zipf{s: s, q: q, n: n, oneMin: 1 - s}
	z.hx1 = z.hIntegral(1.5) - z.h(1)
	z.hn = z.hIntegral(float64(n) + 0.5)
	return z
}

// h(x) = (x+q)^-s.
func (z *zipf) h(x float64) float64 { return math.Exp(-z.s * math.Log(x+z.q)) }

// hIntegral(x) = ((x+q)^(1-s) - 1) / (1-s) (ln(x+q) for s = 1), an
// antiderivative of h.
func (z *zipf) hIntegral(x float64) float64 {
	lx := math.Log(x + z.q)
	return helper2(z.oneMin*lx) * lx
}

// hIntegralInverse is hIntegral's inverse.
func (z *zipf) hIntegralInverse(u float64) float64 {
	t := u * z.oneMin
	if t < -1 {
		t = -1 // numerical guard at the far tail
	}
	return math.Exp(helper1(t)*u) - z.q
}

// helper1(t) = ln(1+t)/t, helper2(t) = (e^t - 1)/t, accurate near 0.
func helper1(t float64) float64 {
	if math.Abs(t) > 1e-8 {
		return math.Log1p(t) / t
	}
	return 1 - t*(0.5-t*(1.0/3-0.25*t))
}

func helper2(t float64) float64 {
	if math.Abs(t) > 1e-8 {
		return math.Expm1(t) / t
	}
	return 1 + t*0.5*(1+t*(1.0/3)*(1+0.25*t))
}

// draw returns k in [0, n).
func (z *zipf) draw(r *rng) int {
	if z.tail != nil {
		if r.unit() < z.headMass {
			return z.head.draw(r)
		}
		return zipfHead + z.tail.draw(r)
	}
	for {
		u := z.hn + r.unit()*(z.hx1-z.hn)
		x := z.hIntegralInverse(u)
		k := math.Floor(x + 0.5)
		if k < 1 {
			k = 1
		} else if k > float64(z.n) {
			k = float64(z.n)
		}
		if u >= z.hIntegral(k+0.5)-z.h(k) {
			return int(k) - 1
		}
	}
}

// alias is Walker's alias table (Walker, ACM TOMS 3(3), 1977, with Vose's
// O(n) construction, IEEE TSE 17(9), 1991): draws index i with probability
// w[i]/Σw in O(1).
type alias struct {
	prob  []float64
	alias []int32
}

func newAlias(w []float64) alias {
	n := len(w)
	a := alias{prob: make([]float64, n), alias: make([]int32, n)}
	var sum float64
	for _, x := range w {
		sum += x
	}
	if n == 0 || !(sum > 0) {
		return a
	}
	scaled := make([]float64, n)
	small, large := make([]int32, 0, n), make([]int32, 0, n)
	for i, x := range w {
		scaled[i] = x * float64(n) / sum
		if scaled[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.prob[s], a.alias[s] = scaled[s], l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range large {
		a.prob[i], a.alias[i] = 1, i
	}
	for _, i := range small { // rounding leftovers
		a.prob[i], a.alias[i] = 1, i
	}
	return a
}

func (a *alias) draw(r *rng) int {
	i := r.below(uint64(len(a.prob)))
	if r.unit() <= a.prob[i] {
		return int(i)
	}
	return int(a.alias[i])
}
