package compress

// Shared machinery of the Linear Regression Compression family: LRC, LRCSeg,
// SegLRC and HS-LRC (Ao, Zhang, Wu, Zhang, Xu, Yu, Yu, Xiong, "Efficient
// Parallel Lists Intersection and Index Compression Algorithms using Graphics
// Processing Units", VLDB 2011, §4.3, §4.4, §5.2, §5.3).
//
// # The linear model
//
// §5.2 writes the i-th element of a list as f(i) + δ(i), where f(i) = αi + β
// is the least-squares regression line and δ(i) the vertical deviation, and
// stores the normalized deviation λ(i) = M + ⌈δ(i)⌉ >= 0 next to α, β and M.
// Floating-point α and β would let an encoder and a (CUDA) decoder disagree by
// one ulp (nvcc contracts a*b+c into an FMA by default; Go may fuse on arm64),
// so every codec of the family stores instead one exact integer model per
// "piece" (the whole array, a segment or a hash bucket):
//
//	v[i] = base + ⌊slope·(i−o) / 2^32⌋ + slot(i)        for a <= i < b
//
// where
//   - slope is α in unsigned Q32.32 fixed point (a uint64): P(j) := ⌊slope·j/2^32⌋
//     is computed as (slope*j)>>32 with an exact 64-bit product. Every format
//     guarantees slope·(b−1−o) < 2^64 (decoders reject anything else as
//     corrupt), so the product never wraps and P is non-decreasing;
//   - base = β − M folds the paper's intercept and normalizing constant into
//     one signed integer, |base| <= 2^32−1;
//   - slot(i) = λ(i) is the normalized deviation, 0 <= slot(i) <= span, stored
//     in a fixed-width slot of w = bits.Len32(span) bits (0..32): the paper's
//     Algorithm 1 forbids ParaPFor exceptions "for simplicity" (§5.3), and a
//     fixed width is what makes element i addressable by arithmetic;
//   - o is the index origin of the line: o = a for a local line (LRC, SegLRC,
//     HS-LRC), o = 0 for LRCSeg's segments, which share the global line.
//
// A decoder evaluates the formula in int64 (no term exceeds 2^34 in absolute
// value) and rejects any result outside [0, 2^32−1] as corrupt. On a GPU the
// same value is obtained with wrapping 32-bit adds,
// (uint32)base + (uint32)((slope*j)>>32) + slot, for every encoding that Decode
// accepts.
//
// # The encoder's line
//
// The encoder fits α by least squares (§4.3) in float64 with every product
// explicitly rounded (so the result does not depend on FMA fusion), converts
// it to Q32.32 and clamps it to [0, chord], chord = ⌊(v[b−1]−v[a])·2^32/(b−a−1)⌋.
// The clamp keeps P(b−1−o) <= v[b−1]−v[a] < 2^32, and for any slope in that
// interval every deviation range is at most v[b−1]−v[a] (for j < k:
// r_j − r_k <= P(k)−P(j) <= P(b−1) and r_k − r_j <= v_k − v_j), so slots
// always fit in 32 bits and LRC never needs more bits than frame-of-reference
// packing. base is then the minimum residual v[i] − P(i−o) and span the
// maximum residual minus base. Only the stored integers define the values:
// decoders never refit.
//
// # Slot packing
//
// The slots of a piece form one bit string, slot j (j = i − a) at bits
// [j·w, (j+1)·w), bit k of the string being bit k%8 of byte k/8 (LSB-first,
// little-endian: a GPU extracts slot j from the two 32-bit words around bit
// j·w with a funnel shift). This is the packing of bitpack.go, which writes
// and reads the slots. Padding bits up to the end of the piece's last byte
// (or 32-bit word, for HS-LRC, whose bucket table counts slots in words)
// are written as zero and ignored by decoders.
//
// # Safe search range (§4.3, §5.3 Algorithm 1 line 4)
//
// The paper bounds the index of x by f⁻¹(x) − L <= i <= f⁻¹(x) + R with the
// maximum left and right deviations L and R. Here the deviations are kept in
// value space: base + P(i−o) <= v[i] <= base + P(i−o) + span, so with
// inv(t) := the smallest i in [a, b) with P(i−o) >= t (b if none), computed
// exactly as o + ⌈t·2^32/slope⌉,
//
//	every i <  inv(x − base − span) has v[i] < x,
//	every i >= inv(x − base)        has v[i] >= x,
//
// and the first element >= x lies in [inv(x−base−span), inv(x−base)], an
// interval of about span/α positions: the paper's L + R. Integer inversion
// avoids the rounding errors §4.3 warns about. The search then binary-searches
// inside that interval, reading single slots (random access, §5.3).

import (
	"encoding/binary"
	"math"
	"math/bits"
)

const (
	// lrcMaxCount is the largest number of values an LRC-family encoding may
	// record (so that counts fit an int on every platform).
	lrcMaxCount = 1<<31 - 1
	// lrcMaxBase bounds |base|: the residual minimum lies in
	// [v_min − (v_max − v_min), v_max] ⊂ [−(2^32−1), 2^32−1].
	lrcMaxBase = 1<<32 - 1
	// lrcHeaderLen is the length of the header shared by LRC, LRCSeg and
	// SegLRC: n, span, slope, base.
	lrcHeaderLen = 24
	// lrcSegLen is the segment length s of LRCSeg and SegLRC, the value the
	// paper uses in its experiments (§6.2: "the segment length in LRC,
	// LRCseg, SegLRC, and HS.LRC will be 256"). A segment of 256 slots of w
	// bits is exactly 32·w bytes, so segments start at byte offsets that
	// are multiples of 32.
	lrcSegLen   = 256
	lrcSegShift = 8
	// lrcChunk is the number of slots lrcPiece.decode unpacks before it
	// adds the line (a multiple of 8).
	lrcChunk = 256
)

// lrcLine is one stored linear model: v[i] = base + P(i−o) + slot(i), with
// 0 <= slot(i) <= span.
type lrcLine struct {
	span  uint32
	slope uint64
	base  int64
}

// lrcLineAt reads the 20-byte line record span(u32) slope(u64) base(i64) at
// the start of b (len(b) >= 20).
func lrcLineAt(b []byte) lrcLine {
	_ = b[19]
	return lrcLine{
		span:  binary.LittleEndian.Uint32(b),
		slope: binary.LittleEndian.Uint64(b[4:]),
		base:  int64(binary.LittleEndian.Uint64(b[12:])),
	}
}

// appendTo appends the 20-byte line record.
func (l lrcLine) appendTo(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, l.span)
	dst = binary.LittleEndian.AppendUint64(dst, l.slope)
	return binary.LittleEndian.AppendUint64(dst, uint64(l.base))
}

// lrcLineOK reports whether a line may be evaluated at every j in
// [0, maxJ]: slope·maxJ < 2^64 and |base| <= 2^32−1.
func lrcLineOK(slope uint64, base int64, maxJ int) bool {
	if base < -lrcMaxBase || base > lrcMaxBase || maxJ < 0 {
		return false
	}
	hi, _ := bits.Mul64(slope, uint64(maxJ))
	return hi == 0
}

// lrcP is P(j) = ⌊slope·j/2^32⌋; the caller guarantees slope·j < 2^64.
func lrcP(slope uint64, j int) int64 {
	return int64((slope * uint64(j)) >> 32)
}

// lrcCount reads the uint32 count at the start of every LRC-family encoding.
func lrcCount(name string, src []byte) (int, error) {
	if len(src) < 4 {
		return 0, corrupt(name, "truncated count (%d bytes)", len(src))
	}
	n := binary.LittleEndian.Uint32(src)
	if n > lrcMaxCount {
		return 0, corrupt(name, "count %d out of range", n)
	}
	return int(n), nil
}

// lrcCheckSorted panics on a decreasing input: Sorted codecs are only ever
// fed non-decreasing arrays, so anything else is a programmer bug.
func lrcCheckSorted(name string, vals []uint32) {
	if len(vals) > lrcMaxCount {
		panic("BUG: compress: " + name + ": too many values to encode")
	}
	for i := 1; i < len(vals); i++ {
		if vals[i] < vals[i-1] {
			panic("BUG: compress: " + name + ": input is not non-decreasing")
		}
	}
}

// lrcFitSlope returns the least-squares slope of vals (index j versus value
// vals[j], §4.3) in Q32.32, clamped to [0, chord] as described in the file
// comment. vals must be non-decreasing.
func lrcFitSlope(vals []uint32) uint64 {
	n := len(vals)
	if n < 2 {
		return 0
	}
	v0 := vals[0]
	rng := uint64(vals[n-1] - v0)
	if rng == 0 {
		return 0
	}
	chord := (rng << 32) / uint64(n-1)
	// α = Σ(j−x̄)(v_j−v̄) / Σ(j−x̄)², x̄ = (n−1)/2, Σ(j−x̄)² = n(n²−1)/12.
	// Explicit float64 conversions round every product, which forbids FMA
	// fusion and keeps the encoder's output identical on every platform.
	xbar := float64(n-1) / 2
	var sxy float64
	for j, v := range vals {
		t := float64(j) - xbar
		sxy += float64(t * float64(v-v0))
	}
	fn := float64(n)
	sxx := float64(fn*float64(float64(fn*fn)-1)) / 12
	fixed := float64(sxy/sxx) * (1 << 32)
	if !(fixed > 0) { // also NaN
		return 0
	}
	if fixed >= float64(chord) {
		return chord
	}
	return min(uint64(fixed+0.5), chord)
}

// lrcResiduals returns the minimum and maximum of vals[j] − P(j+shift), the
// residuals of vals against the line of slope whose origin lies shift
// positions before vals[0].
func lrcResiduals(vals []uint32, slope uint64, shift int) (lo, hi int64) {
	lo, hi = math.MaxInt64, math.MinInt64
	acc := slope * uint64(shift)
	for _, v := range vals {
		r := int64(v) - int64(acc>>32)
		lo = min(lo, r)
		hi = max(hi, r)
		acc += slope
	}
	return lo, hi
}

// lrcFit fits one piece whose line origin lies shift positions before
// vals[0] (shift = 0 for a local line) with the given slope, and returns the
// line (base = minimum residual, span = residual range).
func lrcFit(name string, vals []uint32, slope uint64, shift int) lrcLine {
	lo, hi := lrcResiduals(vals, slope, shift)
	if hi-lo > math.MaxUint32 || lo < -lrcMaxBase || lo > lrcMaxBase {
		panic("BUG: compress: " + name + ": residual range exceeds 32 bits")
	}
	return lrcLine{span: uint32(hi - lo), slope: slope, base: lo}
}

// lrcAppendSlots appends the slots vals[j] − base − P(j+shift) of one piece,
// w bits each, LSB-first (bitpack.go), in exactly packBytes(len(vals), w)
// bytes.
func lrcAppendSlots(dst []byte, vals []uint32, slope uint64, shift int, base int64, w uint) []byte {
	if w == 0 {
		return dst
	}
	pw := packWriter{dst: dst}
	p := slope * uint64(shift)
	for _, v := range vals {
		pw.put(uint32(int64(v)-base-int64(p>>32)), w)
		p += slope
	}
	return pw.flush()
}

// lrcPiece is a decoded view of one piece: v[i] = base + P(i−o) + slot(i−a)
// for a <= i < b, slots of w bits in slots. Constructors check that slots
// holds the piece's slot bytes and that the line may be evaluated on
// [a−o, b−1−o], so no method reads out of range or overflows.
type lrcPiece struct {
	slots   []byte
	slope   uint64
	base    int64
	span    uint32
	w       uint
	o, a, b int
}

// lrcMakePiece builds and checks a piece; ok is false when the slot bytes
// are missing or the line parameters are out of range (corrupt input).
func lrcMakePiece(slots []byte, l lrcLine, o, a, b int) (lrcPiece, bool) {
	w := uint(bits.Len32(l.span))
	p := lrcPiece{slots: slots, slope: l.slope, base: l.base, span: l.span, w: w, o: o, a: a, b: b}
	if a > b || o > a || len(slots) < packBytes(b-a, w) {
		return p, false
	}
	if b > a && !lrcLineOK(l.slope, l.base, b-1-o) {
		return p, false
	}
	return p, true
}

// value returns v[i] for a <= i < b; ok is false when the slot exceeds span
// or the value falls outside [0, 2^32−1].
func (p *lrcPiece) value(i int) (uint32, bool) {
	s := packGet(p.slots, i-p.a, p.w)
	if s > p.span {
		return 0, false
	}
	v := p.base + lrcP(p.slope, i-p.o) + int64(s)
	if uint64(v) > math.MaxUint32 { // negative values wrap to huge
		return 0, false
	}
	return uint32(v), true
}

// decode writes v[a..b) to out (len(out) == b−a) and checks every value:
// slot <= span, value in [0, 2^32−1], and non-decreasing starting from prev
// (prev = 0 for no predecessor). It returns the last value, and the index
// of the first bad value (or −1).
//
// The slots are bulk-unpacked (packUnpack) a chunk at a time into out, and
// the line added in a second loop over the chunk while it is in L1. That
// loop is branch-free: the sign bits of span − slot and v − prev are or-ed
// into bad; with the order checked, v[a] >= prev >= 0 and v[b−1] <= 2^32−1
// bound every value. Only a bad piece is decoded again, by decodeSlow, to
// name the first bad value.
func (p *lrcPiece) decode(out []uint32, prev int64) (int64, int) {
	out = out[:p.b-p.a]
	if len(out) == 0 {
		return prev, -1
	}
	start := prev
	span := int64(p.span)
	acc := p.slope * uint64(p.a-p.o)
	var bad int64
	// lrcChunk is a multiple of 8, so every chunk starts on a byte.
	for c := 0; c < len(out); c += lrcChunk {
		chunk := out[c:min(c+lrcChunk, len(out))]
		packUnpack(chunk, p.slots[c/8*int(p.w):], p.w)
		for j, s := range chunk {
			v := p.base + int64(acc>>32) + int64(s)
			acc += p.slope
			bad |= (span - int64(s)) | (v - prev)
			chunk[j] = uint32(v)
			prev = v
		}
	}
	if bad < 0 || prev > math.MaxUint32 {
		return p.decodeSlow(start)
	}
	return prev, -1
}

// decodeSlow finds the first bad value of a piece that decode rejected.
func (p *lrcPiece) decodeSlow(prev int64) (int64, int) {
	for i := p.a; i < p.b; i++ {
		s := packGet(p.slots, i-p.a, p.w)
		v := p.base + lrcP(p.slope, i-p.o) + int64(s)
		if s > p.span || v > math.MaxUint32 || v < prev {
			return prev, i
		}
		prev = v
	}
	return prev, p.b - 1 // unreachable when decode's checks fail
}

// inv returns the smallest i in [a, b) with P(i−o) >= t, or b if none.
func (p *lrcPiece) inv(t int64) int {
	if t <= lrcP(p.slope, p.a-p.o) {
		return p.a
	}
	if p.b <= p.a || t > lrcP(p.slope, p.b-1-p.o) {
		return p.b
	}
	// 0 < t <= P(b−1−o) < 2^32, so t<<32 fits and slope > 0. P(j) >= t
	// ⟺ slope·j >= t·2^32 ⟺ j >= ⌈t·2^32/slope⌉.
	num := uint64(t) << 32
	q := num / p.slope
	if q*p.slope != num {
		q++
	}
	i := p.o + int(q)
	return min(max(i, p.a), p.b)
}

// bounds returns the safe search range [lo, hi] of x in the piece: every
// i < lo has v[i] < x and every hi <= i < b has v[i] >= x.
func (p *lrcPiece) bounds(x uint32) (lo, hi int) {
	t := int64(x) - p.base
	return p.inv(t - int64(p.span)), p.inv(t)
}

// lrcNarrow intersects the candidate interval [A, B] of the answer with a
// safe range [lo, hi] computed over a piece containing [A, B).
func lrcNarrow(A, B, lo, hi int) (int, int) {
	A = max(A, lo)
	B = min(B, max(hi, A))
	return A, B
}

// search returns the first i in [A, B) with v[i] >= x, or B; [A, B) lies in
// [a, b]. It contracts [A, B] with the safe range and binary-searches the
// rest. ok is false on a corrupt slot.
func (p *lrcPiece) search(A, B int, x uint32) (int, bool) {
	lo, hi := p.bounds(x)
	A, B = lrcNarrow(A, B, lo, hi)
	for A < B {
		mid := int(uint(A+B) >> 1)
		v, ok := p.value(mid)
		if !ok {
			return 0, false
		}
		if v >= x {
			B = mid
		} else {
			A = mid + 1
		}
	}
	return A, true
}

// lrcHeaderParse parses the 24-byte header n, span, slope, base shared by
// LRC, LRCSeg and SegLRC (n >= 1 already read) and checks the line against
// all n values.
func lrcHeaderParse(name string, src []byte, n int) (lrcLine, error) {
	if len(src) < lrcHeaderLen {
		return lrcLine{}, corrupt(name, "truncated header (%d bytes)", len(src))
	}
	l := lrcLineAt(src[4:])
	if !lrcLineOK(l.slope, l.base, n-1) {
		return lrcLine{}, corrupt(name, "line out of range (slope %#x, base %d, n %d)", l.slope, l.base, n)
	}
	return l, nil
}

// lrcParse parses an LRC encoding (also the form LRCSeg and SegLRC take for
// n <= lrcSegLen) and returns the count and the whole-array piece.
func lrcParse(name string, src []byte) (int, lrcPiece, error) {
	n, err := lrcCount(name, src)
	if err != nil {
		return 0, lrcPiece{}, err
	}
	if n == 0 {
		if len(src) != 4 {
			return 0, lrcPiece{}, corrupt(name, "%d trailing bytes", len(src)-4)
		}
		return 0, lrcPiece{}, nil
	}
	l, err := lrcHeaderParse(name, src, n)
	if err != nil {
		return 0, lrcPiece{}, err
	}
	w := uint(bits.Len32(l.span))
	if want := lrcHeaderLen + packBytes(n, w); len(src) != want {
		return 0, lrcPiece{}, corrupt(name, "length %d, want %d", len(src), want)
	}
	p, _ := lrcMakePiece(src[lrcHeaderLen:], l, 0, 0, n) // checked above
	return n, p, nil
}

// lrcAppendWhole appends the LRC encoding of vals (after the count check):
// header and slots of one global line.
func lrcAppendWhole(name string, dst []byte, vals []uint32) []byte {
	n := len(vals)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	if n == 0 {
		return dst
	}
	l := lrcFit(name, vals, lrcFitSlope(vals), 0)
	dst = l.appendTo(dst)
	return lrcAppendSlots(dst, vals, l.slope, 0, l.base, uint(bits.Len32(l.span)))
}

// lrcWholeDecode, lrcWholeGet and lrcWholeSearch implement Decode, Get and
// Search on the LRC form.
func lrcWholeDecode(name string, out []uint32, src []byte) (int, error) {
	n, p, err := lrcParse(name, src)
	if err != nil {
		return 0, err
	}
	if n > len(out) {
		return 0, ErrShortBuffer
	}
	if n == 0 {
		return 0, nil
	}
	if _, bad := p.decode(out[:n], 0); bad >= 0 {
		return 0, corrupt(name, "value %d out of range or decreasing", bad)
	}
	return n, nil
}

func lrcWholeGet(name string, src []byte, i int) (uint32, error) {
	n, p, err := lrcParse(name, src)
	if err != nil {
		return 0, err
	}
	if i < 0 || i >= n {
		return 0, corrupt(name, "index %d out of range [0, %d)", i, n)
	}
	v, ok := p.value(i)
	if !ok {
		return 0, corrupt(name, "value %d out of range", i)
	}
	return v, nil
}

func lrcWholeSearch(name string, src []byte, from int, x uint32) (int, uint32, error) {
	n, p, err := lrcParse(name, src)
	if err != nil {
		return 0, 0, err
	}
	from = max(from, 0)
	if from >= n {
		return n, 0, nil
	}
	i, ok := p.search(from, n, x)
	if ok && i < n {
		var v uint32
		if v, ok = p.value(i); ok {
			return i, v, nil
		}
	}
	if !ok {
		return 0, 0, corrupt(name, "corrupt slot while searching")
	}
	return n, 0, nil
}

// lrcSegCount is the number of segments of n values.
func lrcSegCount(n int) int { return (n + lrcSegLen - 1) >> lrcSegShift }

// Segment-header fields shared by LRCSeg (16-byte headers) and SegLRC
// (24-byte headers): both start with first(u32) d(u32) span(u32) W(u32);
// SegLRC's add the segment's slope(u64).
const (
	lrcSegFirstOff = 0
	lrcSegDOff     = 4
	lrcSegSpanOff  = 8
	lrcSegWOff     = 12
	lrcSegSlopeOff = 16
)

// lrcSegView is a parsed segmented encoding (LRCSeg or SegLRC, n > 256):
// the 24-byte header, G segment headers of hsz bytes, then the slot area,
// segment g's slots at byte 32·W_g of it.
type lrcSegView struct {
	name  string
	n, G  int
	line  lrcLine // global line: the model (LRCSeg) or search only (SegLRC)
	hdr   []byte  // G·hsz bytes of segment headers
	hsz   int
	area  []byte // slot area
	local bool   // SegLRC: segment g has its own line (slope at header +16)
}

// lrcSegParse parses a segmented encoding of n > lrcSegLen values and
// checks its exact length, which follows from the last segment header.
func lrcSegParse(name string, src []byte, n, hsz int, local bool) (lrcSegView, error) {
	l, err := lrcHeaderParse(name, src, n)
	if err != nil {
		return lrcSegView{}, err
	}
	G := lrcSegCount(n)
	s := lrcSegView{name: name, n: n, G: G, line: l, hsz: hsz, local: local}
	areaOff := lrcHeaderLen + G*hsz
	if len(src) < areaOff {
		return lrcSegView{}, corrupt(name, "truncated segment table (%d bytes, want >= %d)", len(src), areaOff)
	}
	s.hdr = src[lrcHeaderLen:areaOff]
	s.area = src[areaOff:]
	last := s.hdr[(G-1)*hsz:]
	w := uint(bits.Len32(binary.LittleEndian.Uint32(last[lrcSegSpanOff:])))
	W := int(binary.LittleEndian.Uint32(last[lrcSegWOff:]))
	if want := 32*W + packBytes(n-(G-1)<<lrcSegShift, w); len(s.area) != want {
		return lrcSegView{}, corrupt(name, "length %d, want %d", len(src), areaOff+want)
	}
	return s, nil
}

// first returns H_g, the first value of segment g (the auxiliary list of
// §5.3 Algorithm 1).
func (s *lrcSegView) first(g int) uint32 {
	return binary.LittleEndian.Uint32(s.hdr[g*s.hsz+lrcSegFirstOff:])
}

// model returns the line of segment g as its header states it, and the
// line's origin. LRCSeg: v[i] = (base + d_g) + P(i) + slot, with the global
// line (origin 0). SegLRC: v[i] = (H_g − d_g) + P_g(i − 256g) + slot, with
// the segment's own line (origin 256g).
func (s *lrcSegView) model(g int) (lrcLine, int) {
	h := s.hdr[g*s.hsz : (g+1)*s.hsz]
	d := binary.LittleEndian.Uint32(h[lrcSegDOff:])
	l := lrcLine{span: binary.LittleEndian.Uint32(h[lrcSegSpanOff:])}
	if s.local {
		l.slope = binary.LittleEndian.Uint64(h[lrcSegSlopeOff:])
		l.base = int64(binary.LittleEndian.Uint32(h[lrcSegFirstOff:])) - int64(d)
		return l, g << lrcSegShift
	}
	l.slope = s.line.slope
	l.base = s.line.base + int64(d)
	return l, 0
}

// piece returns the model of segment g; ok is false when the header is out
// of range (LRCSeg: d_g + span_g > span; both: the slots or the line).
func (s *lrcSegView) piece(g int) (lrcPiece, bool) {
	l, o := s.model(g)
	if !s.local && uint64(l.base-s.line.base)+uint64(l.span) > uint64(s.line.span) {
		return lrcPiece{}, false
	}
	off := 32 * int(binary.LittleEndian.Uint32(s.hdr[g*s.hsz+lrcSegWOff:]))
	if off > len(s.area) {
		return lrcPiece{}, false
	}
	a := g << lrcSegShift
	return lrcMakePiece(s.area[off:], l, o, a, min(s.n, a+lrcSegLen))
}

// decode decodes all n values into out (len(out) >= n) and checks the whole
// encoding: the W_g chain, every segment model, H_g = v[256g], and (SegLRC)
// that every value lies within the global search line's band.
func (s *lrcSegView) decode(out []uint32) error {
	prev := int64(0)
	W := uint64(0)
	for g := 0; g < s.G; g++ {
		h := s.hdr[g*s.hsz:]
		if uint64(binary.LittleEndian.Uint32(h[lrcSegWOff:])) != W {
			return corrupt(s.name, "segment %d: slot offset mismatch", g)
		}
		p, ok := s.piece(g)
		if !ok {
			return corrupt(s.name, "segment %d: header out of range", g)
		}
		W += uint64(p.w)
		var bad int
		if prev, bad = p.decode(out[p.a:p.b], prev); bad >= 0 {
			return corrupt(s.name, "value %d out of range or decreasing", bad)
		}
		if out[p.a] != s.first(g) {
			return corrupt(s.name, "segment %d: header value %d, decoded %d", g, s.first(g), out[p.a])
		}
		if s.local {
			// Every value must lie in the global band, or Search's safe
			// range would be unsound.
			acc := s.line.slope * uint64(p.a)
			span := int64(s.line.span)
			var bad int64
			for _, v := range out[p.a:p.b] {
				r := int64(v) - s.line.base - int64(acc>>32)
				acc += s.line.slope
				bad |= r | (span - r)
			}
			if bad < 0 {
				return corrupt(s.name, "segment %d: value outside the search line's band", g)
			}
		}
	}
	return nil
}

// get returns v[i], 0 <= i < n.
func (s *lrcSegView) get(i int) (uint32, error) {
	p, ok := s.piece(i >> lrcSegShift)
	if !ok {
		return 0, corrupt(s.name, "segment %d: header out of range", i>>lrcSegShift)
	}
	v, ok := p.value(i)
	if !ok {
		return 0, corrupt(s.name, "value %d out of range", i)
	}
	return v, nil
}

// search implements Searcher on a segmented encoding, following §5.3
// Algorithm 1: the global safe range (line 4), a binary search of the
// header list H restricted to the segments of that range (line 5), and a
// binary search inside the segment (line 6), itself first contracted by the
// segment's safe range (§5.3, SegLRC: "the search range can be reduced by
// applying the linear regression technique to the segment").
func (s *lrcSegView) search(from int, x uint32) (int, uint32, error) {
	from = max(from, 0)
	if from >= s.n {
		return s.n, 0, nil
	}
	gp := lrcPiece{slope: s.line.slope, base: s.line.base, span: s.line.span, b: s.n}
	lo, hi := gp.bounds(x)
	A, B := lrcNarrow(from, s.n, lo, hi)
	if A < B {
		gA := A >> lrcSegShift
		// First segment in (gA, gB] whose first value is >= x.
		g, gEnd := gA+1, (B-1)>>lrcSegShift+1
		for g < gEnd {
			mid := int(uint(g+gEnd) >> 1)
			if s.first(mid) >= x {
				gEnd = mid
			} else {
				g = mid + 1
			}
		}
		if g <= (B-1)>>lrcSegShift {
			B = g << lrcSegShift // v[256g] >= x
		}
		seg := g - 1
		if seg > gA {
			A = max(A, seg<<lrcSegShift+1) // v[256·seg] < x
		}
		p, ok := s.piece(seg)
		if !ok {
			return 0, 0, corrupt(s.name, "segment %d: header out of range", seg)
		}
		if A, ok = p.search(A, B, x); !ok {
			return 0, 0, corrupt(s.name, "corrupt slot while searching")
		}
	}
	if A >= s.n {
		return s.n, 0, nil
	}
	v, err := s.get(A)
	if err != nil {
		return 0, 0, err
	}
	return A, v, nil
}

// lrcSegmented is the codec of both segmented formats, LRCSeg (lrcseg.go,
// local = false) and SegLRC (seglrc.go, local = true). They differ only in
// a segment's model (the global line and the segment's own minimum, or the
// segment's own line) and in its header (16 bytes, or 24 with the slope):
// the layout, the LRC form for n <= 256, parsing, decoding and search are
// the same.
type lrcSegmented struct {
	id    ID
	name  string
	hsz   int  // segment header length
	local bool // every segment has its own line (SegLRC)
}

func (c lrcSegmented) ID() ID       { return c.id }
func (c lrcSegmented) Name() string { return c.name }
func (lrcSegmented) Kind() Kind     { return Sorted }

// AppendEncode implements Codec. It panics if vals is not non-decreasing.
func (c lrcSegmented) AppendEncode(dst []byte, vals []uint32) []byte {
	lrcCheckSorted(c.name, vals)
	n := len(vals)
	if n <= lrcSegLen {
		return lrcAppendWhole(c.name, dst, vals)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	gl := lrcFit(c.name, vals, lrcFitSlope(vals), 0)
	dst = gl.appendTo(dst)
	G := lrcSegCount(n)
	hdr := len(dst)
	W := uint32(0)
	for g := 0; g < G; g++ {
		a := g << lrcSegShift
		seg := vals[a:min(n, a+lrcSegLen)]
		var l lrcLine
		var d int64
		if c.local {
			// The segment's own line; d = first − its base (so slot 0 is d).
			l = lrcFit(c.name, seg, lrcFitSlope(seg), 0)
			d = int64(seg[0]) - l.base
		} else {
			// The global line, whose origin lies a values before seg; d =
			// the segment's minimum residual − the global one.
			l = lrcFit(c.name, seg, gl.slope, a)
			d = l.base - gl.base
		}
		dst = binary.LittleEndian.AppendUint32(dst, seg[0])
		dst = binary.LittleEndian.AppendUint32(dst, uint32(d))
		dst = binary.LittleEndian.AppendUint32(dst, l.span)
		dst = binary.LittleEndian.AppendUint32(dst, W)
		if c.local {
			dst = binary.LittleEndian.AppendUint64(dst, l.slope)
		}
		W += uint32(bits.Len32(l.span))
	}
	// The slots, from the models as the headers state them (the decoders'
	// view). The headers are not written again, so s.hdr may keep pointing
	// into the array dst grows out of.
	s := lrcSegView{n: n, G: G, line: gl, hdr: dst[hdr:], hsz: c.hsz, local: c.local}
	for g := 0; g < G; g++ {
		l, o := s.model(g)
		a := g << lrcSegShift
		dst = lrcAppendSlots(dst, vals[a:min(n, a+lrcSegLen)], l.slope, a-o, l.base, uint(bits.Len32(l.span)))
	}
	return dst
}

// open parses an encoding; G = 0 means the LRC form.
func (c lrcSegmented) open(src []byte) (lrcSegView, error) {
	n, err := lrcCount(c.name, src)
	if err != nil || n <= lrcSegLen {
		return lrcSegView{n: n}, err
	}
	return lrcSegParse(c.name, src, n, c.hsz, c.local)
}

// Decode implements Codec.
func (c lrcSegmented) Decode(out []uint32, src []byte) (int, error) {
	s, err := c.open(src)
	if err != nil {
		return 0, err
	}
	if s.G == 0 {
		return lrcWholeDecode(c.name, out, src)
	}
	if s.n > len(out) {
		return 0, ErrShortBuffer
	}
	if err := s.decode(out); err != nil {
		return 0, err
	}
	return s.n, nil
}

// Count implements Codec; it checks the header and the length.
func (c lrcSegmented) Count(src []byte) (int, error) {
	s, err := c.open(src)
	if err != nil {
		return 0, err
	}
	if s.G == 0 {
		n, _, err := lrcParse(c.name, src)
		return n, err
	}
	return s.n, nil
}

// Get implements RandomAccess in O(1).
func (c lrcSegmented) Get(src []byte, i int) (uint32, error) {
	s, err := c.open(src)
	if err != nil {
		return 0, err
	}
	if s.G == 0 {
		return lrcWholeGet(c.name, src, i)
	}
	if i < 0 || i >= s.n {
		return 0, corrupt(c.name, "index %d out of range [0, %d)", i, s.n)
	}
	return s.get(i)
}

// Search implements Searcher (§5.3 Algorithm 1, lines 4–6; see
// lrcSegView.search).
func (c lrcSegmented) Search(src []byte, from int, x uint32) (int, uint32, error) {
	s, err := c.open(src)
	if err != nil {
		return 0, 0, err
	}
	if s.G == 0 {
		return lrcWholeSearch(c.name, src, from, x)
	}
	return s.search(from, x)
}
