package eval

import (
	"encoding/binary"
	"math"
	"strconv"
)

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
	var w [16]byte
	if n := scoreBytes(&w, s); n > 0 {
		return append(b, w[:n]...)
	}
	return strconv.AppendFloat(b, s, 'g', 6, 64)
}

// ScoreBytes writes the bytes AppendScore appends for s into w and
// returns their count (at most 12), or 0 where s is outside the fast path
// (AppendScore's strconv case). For writers that store w in words
// (cmd/qp's run lines).
func ScoreBytes(w *[16]byte, s float64) int { return scoreBytes(w, s) }

// scoreBytes is ScoreBytes. The scale comes from s's binary exponent
// (scaleOf: at most one too large, corrected with the exact product), and
// the digits and the decimal point are placed in one 8-byte word, with no
// branch on the digit count in the common case (1 <= s < 999999.5).
func scoreBytes(w *[16]byte, s float64) int {
	if !(s >= 1e-4 && s < 999999.5) || float64(float32(s)) != s {
		return 0
	}
	// j = 5 - floor(log10(s)): the scale that puts 6 digits before the
	// point; scaleOf[e] is it for the binade's smallest value, one too
	// large where the binade crosses a power of ten above that.
	j := int(scaleOf[int(math.Float64bits(s)>>52&0x7ff)-scaleBias])
	// One too large where x >= 1e6: j -= 1 then, without a branch (a
	// binade crossing a power of ten, e.g. [8, 16), takes either way at
	// random), and the product again.
	j -= 1 - int(math.Float64bits(s*pow10[j]-1e6)>>63)
	x := s * pow10[j]
	d := uint64(math.RoundToEven(x)) // x is exact: half to even as strconv rounds an exact tie
	if d == 1e6 {                    // rounded up to the next power of ten
		d, j = 1e5, j-1
	}
	if j < 0 {
		return 0 // unreachable below 999999.5; kept for safety
	}
	// The 6 digits in the low 6 bytes of dig (first digit lowest), then
	// the decimal point after dp of them (dp = 6 - j, from -4 to 6),
	// trailing fractional zeros dropped as %g does.
	hi, mid, lo := d/10000, d/100%100, d%100
	dig := uint64(digitPairs[2*hi]) | uint64(digitPairs[2*hi+1])<<8 |
		uint64(digitPairs[2*mid])<<16 | uint64(digitPairs[2*mid+1])<<24 |
		uint64(digitPairs[2*lo])<<32 | uint64(digitPairs[2*lo+1])<<40
	nd := 6
	for nd > 1 && byte(dig>>(8*(nd-1))) == '0' {
		nd--
	}
	dp := 6 - j
	if dp <= 0 {
		w[0], w[1] = '0', '.'
		n := 2
		for range -dp {
			w[n] = '0'
			n++
		}
		binary.LittleEndian.PutUint64(w[n:], dig)
		return n + nd
	}
	// dig[:dp] '.' dig[dp:]: an integer (nd <= dp) keeps dp digits, its
	// dropped zeros included, and no point.
	mask := uint64(1)<<(8*dp) - 1
	binary.LittleEndian.PutUint64(w[:], dig&mask|uint64('.')<<(8*dp)|(dig&^mask)<<8)
	if nd <= dp {
		return dp
	}
	return nd + 1
}

// scaleBias is the biased float64 exponent of scaleOf[0]: the binade
// [2^-14, 2^-13), which holds 1e-4 (the fast path's lowest score).
const scaleBias = 1023 - 14

// scaleOf[e] is 5 - floor(log10(2^(e-14))) for the binades from 2^-14 to
// 2^19 (above 999999.5): j for the smallest s of the binade, so at most one
// too large for its other values (a binade spans less than a power of ten).
var scaleOf = func() (t [34]int8) {
	for e := range t {
		t[e] = int8(5 - int(math.Floor(math.Log10(math.Ldexp(1, e-14)))))
	}
	return t
}()

// digitPairs holds "00" to "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// pow10[j] = 10^j, exact in float64.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11}
