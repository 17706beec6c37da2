package eval

import "strconv"

// AppendScore appends s as FormatScore prints it: the bytes of
// strconv.AppendFloat(b, s, 'g', 6, 64), exactly. Run writers format a
// score per result line, and strconv's fixed-precision path (Ryū with a
// 192-bit multiply, then the 'g' rules over a digit slice) was most of the
// CPU time of writing a run (qp query: ~70% of its output's cost).
//
// The fast path takes the scores the engines produce: float32 values
// (widened to float64) in [1e-4, 999999.5), whose %g form is plain
// decimal without an exponent. For such s = m·2^e (m < 2^24) and
// p = 10^j with 0 <= j <= 10, the product s·p needs at most 24 + 24 bits
// (5^10 < 2^24) and is therefore exact in float64; rounding it half to
// even (as strconv rounds an exact decimal tie) gives the 6 significant
// digits exactly. Everything else goes to strconv.
// TestAppendScore compares the two on every float32 of several binades
// and on random ones; QP_SCORE_EXHAUSTIVE=1 on every float32 of the range.
func AppendScore(b []byte, s float64) []byte {
	if !(s >= 1e-4 && s < 999999.5) || float64(float32(s)) != s {
		return strconv.AppendFloat(b, s, 'g', 6, 64)
	}
	// j = 5 - floor(log10(s)): the scale that puts 6 digits before the
	// point. The table's negative powers are inexact, so the estimate is
	// checked against the exact product and corrected.
	j := 0
	for j < 9 && s < scoreBounds[j] {
		j++
	}
	x := s * pow10[j]
	if x < 1e5 {
		j++
		x = s * pow10[j]
	} else if x >= 1e6 {
		j--
		x = s * pow10[j]
	}
	d := uint64(x) // x is exact: its fraction too
	if f := x - float64(d); f > 0.5 || f == 0.5 && d&1 == 1 {
		d++
	}
	if d == 1e6 { // rounded up to the next power of ten
		d, j = 1e5, j-1
	}
	if j < 0 {
		return strconv.AppendFloat(b, s, 'g', 6, 64) // unreachable below 999999.5; kept for safety
	}
	// The 6 digits, then the decimal point after dp of them (dp = 6 - j,
	// from -4 to 6), trailing fractional zeros dropped as %g does.
	var dig [6]byte
	hi, mid, lo := d/10000, d/100%100, d%100
	dig[0], dig[1] = digitPairs[2*hi], digitPairs[2*hi+1]
	dig[2], dig[3] = digitPairs[2*mid], digitPairs[2*mid+1]
	dig[4], dig[5] = digitPairs[2*lo], digitPairs[2*lo+1]
	nd := 6
	for nd > 1 && dig[nd-1] == '0' {
		nd--
	}
	dp := 6 - j
	if dp <= 0 {
		b = append(b, '0', '.')
		for range -dp {
			b = append(b, '0')
		}
		return append(b, dig[:nd]...)
	}
	if nd <= dp { // an integer: its digits, then zeros up to the point
		b = append(b, dig[:nd]...)
		for range dp - nd {
			b = append(b, '0')
		}
		return b
	}
	b = append(b, dig[:dp]...)
	b = append(b, '.')
	return append(b, dig[dp:nd]...)
}

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// pow10[j] = 10^j, exact in float64.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11}

// scoreBounds[j] = 10^(5-j): s below it takes a scale above 10^j.
// Inexact for j > 5; AppendScore corrects the estimate.
var scoreBounds = [...]float64{1e5, 1e4, 1e3, 1e2, 1e1, 1, 1e-1, 1e-2, 1e-3, 1e-4}
