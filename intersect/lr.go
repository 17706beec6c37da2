package intersect

import (
	"encoding/binary"
	"fmt"
	"math"
)

// LR is the Linear Regression search range of one list (Ao et al. VLDB'11
// §4.3): the list ℓ is approximated by the least-squares line
// f(i) = α·i + β (docID against position), so a docID x is predicted at
// position f⁻¹(x) = (x − β)/α, and with the maximum left and right
// deviations L = max_i (f⁻¹(ℓ[i]) − i) and R = max_i (i − f⁻¹(ℓ[i])),
//
//	x = ℓ[i]  ⇒  f⁻¹(x) − L <= i <= f⁻¹(x) + R,
//
// the paper's "safe search range", in which a binary search then runs.
//
// "Care needs to be taken to avoid rounding errors" (§4.3): here f⁻¹ is not
// evaluated in floating point but as an exact integer function
//
//	Pred(x) = ⌊x·Gamma / 2^32⌋ − Beta      (Gamma < 2^32, so x·Gamma < 2^64)
//
// with Gamma ≈ 2^32/α (Q32.32) and Beta ≈ β/α, rounded once from the fit,
// and L and R are then computed exactly from Pred over the stored list. The
// range is therefore safe by construction, whatever the rounding of the fit:
// for every i, Pred(ℓ[i]) − L <= i <= Pred(ℓ[i]) + R, and a CUDA kernel
// evaluating the same integer formula gets the same range bit for bit. The
// fit only decides how narrow the range is (the contraction ratio
// (L+R)/|ℓ|, Table 1).
//
// Persistence: the model is four integers, 24 bytes (AppendBinary /
// ParseLR: Gamma u64, Beta i64, L u32, R u32, little-endian), computed once
// per list at indexing time; an index would keep them in a per-term side
// table next to the term records (or recompute them at load in one pass over
// each list, which is what the benchmark does). Alpha and BetaF, the
// float64 fit, are kept for reports only.
type LR struct {
	Gamma uint64 // ≈ 2^32/α, < 2^32
	Beta  int64  // ≈ β/α
	L, R  uint32 // maximum left and right deviations, in positions
	N     int    // list length (not persisted: the list knows it)

	Alpha, BetaF float64 // the least-squares line docID = α·i + β
}

// LRBytes is the length of a persisted LR model.
const LRBytes = 24

// Pred returns the predicted position of x (may be negative or >= N).
func (m *LR) Pred(x uint32) int64 { return int64((uint64(x)*m.Gamma)>>32) - m.Beta }

// Range returns the safe search range [lo, hi) of x: if x is in the list,
// its position is in [lo, hi); 0 <= lo <= hi <= N.
func (m *LR) Range(x uint32) (lo, hi int) {
	p := m.Pred(x)
	l := max(p-int64(m.L), 0)
	h := min(p+int64(m.R)+1, int64(m.N))
	if l >= h {
		return 0, 0
	}
	return int(l), int(h)
}

// NewLR fits the model of a strictly increasing list (any list: a
// non-increasing one gets a valid, merely wide, range).
func NewLR(list []uint32) LR {
	n := len(list)
	m := LR{N: n}
	if n == 0 {
		return m
	}
	// Least squares of docID on position, in float64 (centered sums).
	mi := float64(n-1) / 2
	var my float64
	for _, v := range list {
		my += float64(v)
	}
	my /= float64(n)
	var sxy, sxx float64
	for i, v := range list {
		dx := float64(i) - mi
		sxy += dx * (float64(v) - my)
		sxx += dx * dx
	}
	alpha := 0.0
	if sxx > 0 {
		alpha = sxy / sxx
	}
	m.Alpha, m.BetaF = alpha, my-alpha*mi
	if b := m.BetaF / alpha; alpha > 0 && math.Abs(b) < 1<<40 {
		g := math.Round(math.Ldexp(1/alpha, 32))
		m.Gamma = uint64(min(max(g, 0), math.MaxUint32))
		m.Beta = int64(math.Round(b))
	}
	// Exact deviations of the integer predictor.
	var lmax, rmax int64
	for i, v := range list {
		d := m.Pred(v) - int64(i)
		lmax = max(lmax, d)
		rmax = max(rmax, -d)
	}
	if lmax > math.MaxUint32 || rmax > math.MaxUint32 {
		// Only for absurd fits: fall back to no prediction (range [0, N)).
		m.Gamma, m.Beta = 0, 0
		lmax, rmax = 0, int64(n)
	}
	m.L, m.R = uint32(lmax), uint32(rmax)
	return m
}

// AppendBinary appends the persisted form (LRBytes bytes).
func (m *LR) AppendBinary(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, m.Gamma)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(m.Beta))
	dst = binary.LittleEndian.AppendUint32(dst, m.L)
	return binary.LittleEndian.AppendUint32(dst, m.R)
}

// ParseLR reads a persisted model of a list of n elements. The range is
// safe only for the list it was computed from; a corrupt Gamma is rejected.
func ParseLR(b []byte, n int) (LR, error) {
	if len(b) != LRBytes {
		return LR{}, fmt.Errorf("intersect: LR model of %d bytes, want %d", len(b), LRBytes)
	}
	m := LR{
		Gamma: binary.LittleEndian.Uint64(b),
		Beta:  int64(binary.LittleEndian.Uint64(b[8:])),
		L:     binary.LittleEndian.Uint32(b[16:]),
		R:     binary.LittleEndian.Uint32(b[20:]),
		N:     n,
	}
	if m.Gamma > math.MaxUint32 {
		return LR{}, fmt.Errorf("intersect: corrupt LR model: gamma %#x >= 2^32", m.Gamma)
	}
	return m, nil
}

// Contraction is the paper's contraction ratio (L+R)/|ℓ| (Table 1).
func (m *LR) Contraction() float64 {
	if m.N == 0 {
		return 0
	}
	return float64(uint64(m.L)+uint64(m.R)) / float64(m.N)
}

// Contains reports whether x is in list (the list m was fitted on), by a
// binary search restricted to the safe range.
func (m *LR) Contains(list []uint32, x uint32) bool {
	lo, hi := m.Range(x)
	return containsIn(list, x, lo, hi)
}

// LRSearch appends the intersection of lists to dst[:0]: every element of
// the shortest list is looked up in each longer list by a binary search
// restricted to that list's LR safe range (Ao et al. VLDB'11 §4.3; on the
// GPU one thread per element, §4.1). models[i] must be NewLR(lists[i]);
// lists and models are reordered together by length. The running result is
// filtered in place against each longer list in turn.
func LRSearch(dst []uint32, lists [][]uint32, models []LR) []uint32 {
	if len(models) != len(lists) {
		panic("BUG: intersect.LRSearch: one model per list")
	}
	orderWith(lists, models)
	if d, done := fewLists(dst, lists); done {
		return d
	}
	dst = append(dst[:0], lists[0]...)
	for j := 1; j < len(lists) && len(dst) > 0; j++ {
		l, m := lists[j], &models[j]
		n := 0
		for _, x := range dst {
			if m.Contains(l, x) {
				dst[n] = x
				n++
			}
		}
		dst = dst[:n]
	}
	return dst
}

// orderWith sorts lists by ascending length (stable) and applies the same
// permutation to aux.
func orderWith[T any](lists [][]uint32, aux []T) {
	for i := 1; i < len(lists); i++ {
		x, y := lists[i], aux[i]
		j := i
		for j > 0 && len(lists[j-1]) > len(x) {
			lists[j], aux[j] = lists[j-1], aux[j-1]
			j--
		}
		lists[j], aux[j] = x, y
	}
}
