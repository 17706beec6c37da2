package compress

// LRC is Linear Regression Compression (Ao et al., VLDB'11 §5.2): one
// regression line f(i) = αi + β for the whole array, and every element stored
// as its normalized vertical deviation λ(i) = M + ⌈δ(i)⌉ from the line, so any
// element is recovered alone (random access, §5.3) and the line bounds where
// a value can be (the safe search range of §4.3). The model, the fit, the
// slot packing and the search are described in lrcfit.go.
//
// Format (ID IDLRC, name "lrc", kind Sorted; integers little-endian):
//
//	offset  size          field
//	0       4             n      uint32, number of values, <= 2^31−1
//	                             (n = 0: the encoding is these 4 bytes)
//	4       4             span   uint32, max λ; slot width w = bits.Len32(span)
//	8       8             slope  uint64, α in Q32.32 fixed point
//	16      8             base   int64, β − M, in [−(2^32−1), 2^32−1]
//	24      ⌈n·w/8⌉       slots  λ(0..n−1), w bits each, LSB-first
//
//	v[i] = base + ⌊slope·i/2^32⌋ + slot(i),  slot(i) <= span
//
// Constraints checked by every decoder: slope·(n−1) < 2^64, |base| <= 2^32−1,
// and the encoding is exactly 24 + ⌈n·w/8⌉ bytes. Decode also checks every
// value (slot <= span, value in [0, 2^32−1], non-decreasing); Get checks the
// value it reads; Search checks what it reads and is exact on every encoding
// Decode accepts (it relies on the order).
//
// Search: the safe range of x is [inv(x−base−span), inv(x−base)] (lrcfit.go),
// then a binary search inside it; without the auxiliary header list, which
// is the §5.3 variant "lists intersection with LRC without the auxiliary
// lists", cost (2t_a + t_c)⌈log(cr·|ℓ|)⌉.
//
// Deviations from the paper: λ is bit-packed in one fixed width with no
// exceptions (the paper compresses λ with ParaPFor, but §5.3 Algorithm 1
// forbids exceptions); α is a Q32.32 integer and β − M one integer, so all
// decoders agree bit for bit; the slope is clamped to [0, chord].
type lrcCodec struct{}

func init() { register(lrcCodec{}) }

func (lrcCodec) ID() ID       { return IDLRC }
func (lrcCodec) Name() string { return "lrc" }
func (lrcCodec) Kind() Kind   { return Sorted }

// AppendEncode implements Codec. It panics if vals is not non-decreasing.
func (lrcCodec) AppendEncode(dst []byte, vals []uint32) []byte {
	lrcCheckSorted("lrc", vals)
	return lrcAppendWhole("lrc", dst, vals)
}

// Decode implements Codec.
func (lrcCodec) Decode(out []uint32, src []byte) (int, error) {
	return lrcWholeDecode("lrc", out, src)
}

// Count implements Codec; it checks the header and the length.
func (lrcCodec) Count(src []byte) (int, error) {
	n, _, err := lrcParse("lrc", src)
	return n, err
}

// Get implements RandomAccess in O(1).
func (lrcCodec) Get(src []byte, i int) (uint32, error) {
	return lrcWholeGet("lrc", src, i)
}

// Search implements Searcher.
func (lrcCodec) Search(src []byte, from int, x uint32) (int, uint32, error) {
	return lrcWholeSearch("lrc", src, from, x)
}
