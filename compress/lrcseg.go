package compress

// LRCSeg is the first segmented variant of Linear Regression Compression
// (Ao et al., VLDB'11 §5.2): "Performing linear regression globally and then
// performing segmentation to obtain better local fluctuation ranges
// (LRCSeg)". One least-squares line covers the whole array, as in LRC; the
// deviations from it are cut into segments of s = 256 values (§6.2), and each
// segment is normalized and packed with its own minimum and width, so a
// segment whose points hug the line costs fewer bits (Figure 4, segment 2).
// The model, fit, packing and safe range are described in lrcfit.go.
//
// Format (ID IDLRCSeg, name "lrcseg", kind Sorted; integers little-endian).
// For n <= 256 (one segment) the encoding is byte for byte the LRC encoding
// (lrc.go). For n > 256, with G = ⌈n/256⌉ segments:
//
//	offset      size   field
//	0           4      n      uint32, number of values, <= 2^31−1
//	4           4      span   uint32, max over i of v[i] − base − P(i)
//	8           8      slope  uint64, global α in Q32.32, P(i) = ⌊slope·i/2^32⌋
//	16          8      base   int64, global minimum residual, |base| <= 2^32−1
//	24 + 16g    16     segment header g (0 <= g < G):
//	                     +0  first  uint32, v[256g]: the auxiliary header list
//	                                H of §5.3 Algorithm 1
//	                     +4  d      uint32, segment minimum residual − base
//	                     +8  span_g uint32, segment residual range; the
//	                                segment's slot width is w_g = bits.Len32(span_g)
//	                     +12 W_g    uint32, Σ_{h<g} w_h
//	S = 24 + 16G       slot area: segment g's slots at S + 32·W_g (256 slots
//	                   of w_g bits are exactly 32·w_g bytes); the last segment
//	                   holds n − 256(G−1) slots in ⌈(n−256(G−1))·w/8⌉ bytes,
//	                   which ends the encoding.
//
//	v[i] = base + d_g + ⌊slope·i/2^32⌋ + slot(i),  g = i>>8,  slot(i) <= span_g
//
// Decoders check slope·(n−1) < 2^64, |base| <= 2^32−1 and the exact length
// (O(1), from the last header); Get additionally d_g + span_g <= span and
// the segment's slot bytes; Decode everything: the W_g chain, every value
// (range, order, slot <= span_g) and first = v[256g].
//
// Search follows §5.3 Algorithm 1: the global safe range (line 4), a binary
// search of H over the segments of that range (line 5), then a binary search
// in the segment (line 6). Deviation: the paper searches the whole segment
// (log s steps); here the segment's own band [base+d_g, base+d_g+span_g]
// around the global line contracts that search first, which costs nothing
// extra to store.
//
// Other deviations from the paper, shared by the family: fixed-width slots
// without ParaPFor exceptions (as Algorithm 1 assumes), exact integer line,
// slope clamped to [0, chord]; and H is stored inside the segment headers,
// one 16-byte record per segment addressable by arithmetic.
//
// The codec is lrcSegmented (lrcfit.go), which serves LRCSeg and SegLRC.
var lrcSegCodec = lrcSegmented{id: IDLRCSeg, name: "lrcseg", hsz: 16}

func init() { register(lrcSegCodec) }
