package compress

import (
	"encoding/binary"
	"math/bits"
)

// SegLRC is the second segmented variant of Linear Regression Compression
// (Ao et al., VLDB'11 §5.2): "Performing segmentation first, then performing
// linear regression compression for each segment (SegLRC)". The array is cut
// into segments of s = 256 values (§6.2) and each segment gets its own
// least-squares line, normalizing constant and slot width, so a list whose
// density changes is followed by local lines (Figure 4: "the two local
// regression lines of SegLRC have much better goodness of fit than the global
// regression line of LRC and LRCSeg"). The model, fit, packing and safe range
// are described in lrcfit.go.
//
// A global line is stored as well, for search only: §5.3 locates the
// segment by a binary search of the header list H restricted by the global
// contraction ratio ("(t_a + t_c)⌈log(cr·|ℓ|/s)⌉"), which needs the global
// α, β, L and R of §4.3.
//
// Format (ID IDSegLRC, name "seglrc", kind Sorted; integers little-endian).
// For n <= 256 (one segment) the encoding is byte for byte the LRC encoding
// (lrc.go). For n > 256, with G = ⌈n/256⌉ segments:
//
//	offset      size   field
//	0           4      n      uint32, number of values, <= 2^31−1
//	4           4      span   uint32 \  global search line: every value
//	8           8      slope  uint64  > satisfies 0 <= v[i] − base − P(i) <= span,
//	16          8      base   int64  /  P(i) = ⌊slope·i/2^32⌋ (not used to decode)
//	24 + 24g    24     segment header g (0 <= g < G):
//	                     +0  first   uint32, v[256g]: the auxiliary header list
//	                                 H of §5.3 Algorithm 1
//	                     +4  d       uint32, first − base_g, where base_g is the
//	                                 segment's β − M (so slot 0 equals d)
//	                     +8  span_g  uint32, max slot of the segment; slot width
//	                                 w_g = bits.Len32(span_g)
//	                     +12 W_g     uint32, Σ_{h<g} w_h
//	                     +16 slope_g uint64, segment α in Q32.32
//	S = 24 + 24G       slot area: segment g's slots at S + 32·W_g (256 slots
//	                   of w_g bits are exactly 32·w_g bytes); the last segment
//	                   holds n − 256(G−1) slots in ⌈(n−256(G−1))·w/8⌉ bytes,
//	                   which ends the encoding.
//
//	v[256g + j] = first_g − d_g + ⌊slope_g·j/2^32⌋ + slot_g(j),  slot_g(j) <= span_g
//
// Decoders check the global line (slope·(n−1) < 2^64, |base| <= 2^32−1) and
// the exact length (O(1), from the last header); Get additionally the
// segment's line (slope_g·(len_g−1) < 2^64) and slot bytes; Decode
// everything: the W_g chain, every value (range, order, slot <= span_g),
// first = v[256g] and every value inside the global band.
//
// Search (§5.3): the global safe range, a binary search of H over the
// segments of that range, then the segment's own safe range ("again the
// search range can be reduced by applying the linear regression technique to
// the segment") and a binary search inside it.
//
// Deviations from the paper, shared by the family: fixed-width slots without
// ParaPFor exceptions (as Algorithm 1 assumes), exact integer lines, slopes
// clamped to [0, chord]; the global line's L and R are stored as one
// value-space band (base, span); H lives inside the 24-byte segment headers,
// addressable by arithmetic.
type segLRCCodec struct{}

func init() { register(segLRCCodec{}) }

const segLRCHdrLen = 24

func (segLRCCodec) ID() ID       { return IDSegLRC }
func (segLRCCodec) Name() string { return "seglrc" }
func (segLRCCodec) Kind() Kind   { return Sorted }

// AppendEncode implements Codec. It panics if vals is not non-decreasing.
func (segLRCCodec) AppendEncode(dst []byte, vals []uint32) []byte {
	const name = "seglrc"
	lrcCheckSorted(name, vals)
	n := len(vals)
	if n <= lrcSegLen {
		return lrcAppendWhole(name, dst, vals)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	dst = lrcFit(name, vals, lrcFitSlope(vals), 0).appendTo(dst)
	G := lrcSegCount(n)
	hdr := len(dst)
	W := uint32(0)
	for g := 0; g < G; g++ {
		a := g << lrcSegShift
		seg := vals[a:min(n, a+lrcSegLen)]
		l := lrcFit(name, seg, lrcFitSlope(seg), 0)
		dst = binary.LittleEndian.AppendUint32(dst, seg[0])
		dst = binary.LittleEndian.AppendUint32(dst, uint32(int64(seg[0])-l.base))
		dst = binary.LittleEndian.AppendUint32(dst, l.span)
		dst = binary.LittleEndian.AppendUint32(dst, W)
		dst = binary.LittleEndian.AppendUint64(dst, l.slope)
		W += uint32(bits.Len32(l.span))
	}
	for g := 0; g < G; g++ {
		a := g << lrcSegShift
		h := dst[hdr+g*segLRCHdrLen:]
		base := int64(binary.LittleEndian.Uint32(h)) - int64(binary.LittleEndian.Uint32(h[lrcSegDOff:]))
		w := uint(bits.Len32(binary.LittleEndian.Uint32(h[lrcSegSpanOff:])))
		slope := binary.LittleEndian.Uint64(h[16:])
		dst = lrcAppendSlots(dst, vals[a:min(n, a+lrcSegLen)], slope, 0, base, w)
	}
	return dst
}

// segLRCOpen parses a SegLRC encoding; G = 0 means the LRC form.
func segLRCOpen(src []byte) (lrcSegView, error) {
	n, err := lrcCount("seglrc", src)
	if err != nil || n <= lrcSegLen {
		return lrcSegView{n: n}, err
	}
	return lrcSegParse("seglrc", src, n, segLRCHdrLen, true)
}

// Decode implements Codec.
func (segLRCCodec) Decode(out []uint32, src []byte) (int, error) {
	s, err := segLRCOpen(src)
	if err != nil {
		return 0, err
	}
	if s.G == 0 {
		return lrcWholeDecode("seglrc", out, src)
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
func (segLRCCodec) Count(src []byte) (int, error) {
	s, err := segLRCOpen(src)
	if err != nil {
		return 0, err
	}
	if s.G == 0 {
		n, _, err := lrcParse("seglrc", src)
		return n, err
	}
	return s.n, nil
}

// Get implements RandomAccess in O(1).
func (segLRCCodec) Get(src []byte, i int) (uint32, error) {
	s, err := segLRCOpen(src)
	if err != nil {
		return 0, err
	}
	if s.G == 0 {
		return lrcWholeGet("seglrc", src, i)
	}
	if i < 0 || i >= s.n {
		return 0, corrupt("seglrc", "index %d out of range [0, %d)", i, s.n)
	}
	return s.get(i)
}

// Search implements Searcher (§5.3).
func (segLRCCodec) Search(src []byte, from int, x uint32) (int, uint32, error) {
	s, err := segLRCOpen(src)
	if err != nil {
		return 0, 0, err
	}
	if s.G == 0 {
		return lrcWholeSearch("seglrc", src, from, x)
	}
	return s.search(from, x)
}
