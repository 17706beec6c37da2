package compress

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
//
// The codec is lrcSegmented (lrcfit.go), which serves LRCSeg and SegLRC.
var segLRCCodec = lrcSegmented{id: IDSegLRC, name: "seglrc", hsz: 24, local: true}

func init() { register(segLRCCodec) }
