package compress

import (
	"encoding/binary"
	"math/bits"
)

// Rice is Rice coding in the GPU-friendly layout of Ding, He, Yan & Suel,
// "Using graphics processors for high performance IR query processing",
// WWW 2009, §6 (after Zhang, Long & Suel WWW'08 [23]): one parameter b per
// array, each value v = q·2^b + r stored as r in a fixed-width binary array
// and q in unary in a separate bit array, plus the unary base offset of every
// block of 128 values, so that a GPU thread block decodes its block alone
// with a localized prefix sum (Ding §6 "localized prefix sum").
//
// Format (ID IDRice, name "rice", kind General):
//
//	uvarint(n)                number of values; n = 0 ends the array
//	1 byte  b                 0..32; the encoder writes
//	                          b = max(0, floor(log2(0.69·mean))) <= 31,
//	                          computed exactly as floor(log2(q)) for
//	                          q = floor(69·Σv / (100·n)) >= 1, else 0
//	uvarint(U)                length of the unary array in bits: n + Σq
//	uvarint(off[k])           for each block k = 1..ceil(n/128)-1: the number
//	                          of unary bits before block k (block 0's is 0
//	                          and not stored)
//	ceil(n·b/8) bytes         binary array: r_i = v_i mod 2^b at bits
//	                          [i·b, (i+1)·b)
//	ceil(U/8) bytes           unary array: for each i, q_i = v_i >> b as q_i
//	                          zero bits followed by a one bit
//
// Bit k of a bit array is bit k%8 of byte k/8 (LSB-first), padding bits are
// zero. The unary convention is the complement of Ding's "q 1s followed by a
// 0": with a one-bit terminator LSB-first a CPU finds each code with one
// trailing-zero count, and a GPU's bit-wise prefix sum counts zeros at the
// positions of ones instead of ones at zeros — the same algorithm.
//
// Deviations from Ding §6: Ding's decoder sums gaps into docIDs and stores,
// for every 128 bits of the unary array and every 128 binary codes, the sum
// of the elements before them, as 32-bit integers. This codec returns the
// values themselves, like every General codec (the index does the prefix
// sum), so the base it stores is the one a block needs to start decoding: the
// unary bit offset of every block of 128 values, as a uvarint (a GPU loader
// expands the offsets to an array once per list); the binary array needs no
// base, block k's codes starting at bit k·128·b.
//
// The decoder rejects (ErrCorrupt) b > 32, a quotient that makes the value
// overflow 32 bits, a block offset that disagrees with the unary array, a
// unary array with too few or too many terminators, nonzero padding,
// truncation and trailing bytes.
type riceCodec struct{}

func init() { register(riceCodec{}) }

// riceBlock is the number of values per block offset.
const riceBlock = 128

func (riceCodec) ID() ID       { return IDRice }
func (riceCodec) Name() string { return "rice" }
func (riceCodec) Kind() Kind   { return General }

// riceParam returns b = max(0, floor(log2(0.69·mean(vals)))) computed
// exactly: floor(log2(x)) = floor(log2(floor(x))) for x >= 1.
func riceParam(vals []uint32) uint {
	var sum uint64
	for _, v := range vals {
		sum += uint64(v)
	}
	hi, lo := bits.Mul64(sum, 69)
	// hi < 69 <= 100·n, so the division cannot overflow.
	q, _ := bits.Div64(hi, lo, 100*uint64(len(vals)))
	if q == 0 {
		return 0
	}
	return uint(bits.Len64(q) - 1)
}

// AppendEncode implements Codec.
func (riceCodec) AppendEncode(dst []byte, vals []uint32) []byte {
	n := len(vals)
	dst = binary.AppendUvarint(dst, uint64(n))
	if n == 0 {
		return dst
	}
	b := riceParam(vals)
	if b > 31 {
		panic("BUG: rice parameter above 31")
	}
	dst = append(dst, byte(b))
	var u uint64
	for _, v := range vals {
		u += uint64(v>>b) + 1
	}
	dst = binary.AppendUvarint(dst, u)
	u = 0
	for i, v := range vals {
		if i > 0 && i%riceBlock == 0 {
			dst = binary.AppendUvarint(dst, u)
		}
		u += uint64(v>>b) + 1
	}
	dst = packAppend(dst, vals, b)
	start := len(dst)
	dst = append(dst, make([]byte, (u+7)/8)...)
	unary := dst[start:]
	pos := uint64(0)
	for _, v := range vals {
		pos += uint64(v >> b)
		unary[pos>>3] |= 1 << (pos & 7)
		pos++
	}
	return dst
}

// Count implements Codec.
func (riceCodec) Count(src []byte) (int, error) {
	// Every value takes at least one unary bit.
	n, _, err := vbCount("rice", src, 8)
	return n, err
}

// riceHdr is the parsed header of a rice array.
type riceHdr struct {
	n      int
	b      uint
	u      int // unary bits
	offs   int // offset in src of off[1]
	bin    []byte
	unary  []byte
	maxQ   uint64 // largest quotient that keeps a value within 32 bits
	blocks int
}

// riceParse reads and checks the header and the array lengths of src. With
// upto >= 0 it stops checking offsets after block upto and returns that
// block's offset.
func riceParse(src []byte, h *riceHdr, upto int) (off int, err error) {
	n, p, err := vbCount("rice", src, 8)
	if err != nil {
		return 0, err
	}
	*h = riceHdr{n: n}
	if n == 0 {
		if p != len(src) {
			return 0, corrupt("rice", "%d trailing bytes after an empty array", len(src)-p)
		}
		return 0, nil
	}
	if p >= len(src) {
		return 0, corrupt("rice", "missing parameter b")
	}
	h.b = uint(src[p])
	if h.b > 32 {
		return 0, corrupt("rice", "parameter b = %d > 32", h.b)
	}
	h.maxQ = uint64(1<<32-1) >> h.b
	p++
	u, p, err := vbUvarint("rice", "unary length", src, p, 8*uint64(len(src)))
	if err != nil {
		return 0, err
	}
	if u < uint64(n) {
		return 0, corrupt("rice", "unary length %d < count %d", u, n)
	}
	h.u = int(u)
	h.blocks = (n + riceBlock - 1) / riceBlock
	h.offs = p
	prev := uint64(0)
	for k := 1; k < h.blocks; k++ {
		var o uint64
		o, p, err = vbUvarint("rice", "block offset", src, p, u)
		if err != nil {
			return 0, err
		}
		if o < prev+riceBlock {
			return 0, corrupt("rice", "block %d offset %d < %d + %d", k, o, prev, riceBlock)
		}
		prev = o
		if k == upto {
			off = int(o)
		}
	}
	nb := packBytes(n, h.b)
	if nb > len(src)-p {
		return 0, corrupt("rice", "binary array of %d bytes, %d left", nb, len(src)-p)
	}
	h.bin = src[p : p+nb]
	p += nb
	if want := (h.u + 7) / 8; len(src)-p != want {
		return 0, corrupt("rice", "unary array of %d bytes, %d left", want, len(src)-p)
	}
	h.unary = src[p:]
	return off, nil
}

// Decode implements Codec. The binary parts are bit-unpacked into out first
// (as in BP128), then the unary array is scanned one 64-bit word at a time,
// each terminator found with a trailing-zero count.
func (riceCodec) Decode(out []uint32, src []byte) (int, error) {
	var h riceHdr
	if _, err := riceParse(src, &h, -1); err != nil {
		return 0, err
	}
	n, b := h.n, h.b
	if n > len(out) {
		return 0, ErrShortBuffer
	}
	if n == 0 {
		return 0, nil
	}
	if !packPadZero(h.bin, uint64(n)*uint64(b)) {
		return 0, corrupt("rice", "nonzero padding in the binary array")
	}
	if !packPadZero(h.unary, uint64(h.u)) {
		return 0, corrupt("rice", "nonzero padding in the unary array")
	}
	out = out[:n]
	packUnpack(out, h.bin, b)

	unary := h.unary
	offs := h.offs // off[k] of the next block boundary, parsed as we go
	next := riceBlock
	pos := 0 // first bit of the current value's unary code
	i := 0
	// qor accumulates the quotients: since maxQ is 2^k-1, every quotient
	// is <= maxQ iff their OR is, which is checked once at the end.
	var qor uint64
	for wi := 0; wi < len(unary); wi += 8 {
		w := packLoad(unary, uint64(wi))
		base := wi * 8
		for w != 0 {
			end := base + bits.TrailingZeros64(w)
			w &= w - 1
			q := uint64(end - pos)
			qor |= q
			if i == next {
				o, k := binary.Uvarint(src[offs:]) // validated by riceParse
				offs += k
				if int(o) != pos {
					return 0, corrupt("rice", "block %d offset %d, unary codes give %d", i/riceBlock, o, pos)
				}
				next += riceBlock
			}
			out[i] |= uint32(q) << b
			pos = end + 1
			i++
			if i == n {
				if pos != h.u {
					return 0, corrupt("rice", "unary length %d, codes end at bit %d", h.u, pos)
				}
				if qor > h.maxQ {
					return 0, corrupt("rice", "a quotient overflows 32 bits with b = %d", b)
				}
				return n, nil
			}
		}
	}
	return 0, corrupt("rice", "unary array holds %d codes, count is %d", i, n)
}

// Get implements RandomAccess through the block offsets: it reads the low
// bits of value i directly and scans the unary array from the offset of i's
// block only. It checks the header and the lengths, and what it reads, but
// not the other blocks.
func (riceCodec) Get(src []byte, i int) (uint32, error) {
	var h riceHdr
	off, err := riceParse(src, &h, i/riceBlock)
	if err != nil {
		return 0, err
	}
	if i < 0 || i >= h.n {
		return 0, corrupt("rice", "index %d out of range [0,%d)", i, h.n)
	}
	start := off
	if j := i % riceBlock; j > 0 {
		t := riceSelect(h.unary, off, h.u, j-1)
		if t < 0 {
			return 0, corrupt("rice", "block %d: fewer than %d unary codes", i/riceBlock, j)
		}
		start = t + 1
	}
	end := riceSelect(h.unary, start, h.u, 0)
	if end < 0 {
		return 0, corrupt("rice", "value %d: unterminated unary code", i)
	}
	q := uint64(end - start)
	if q > h.maxQ {
		return 0, corrupt("rice", "value %d: quotient %d overflows 32 bits with b = %d", i, q, h.b)
	}
	return uint32(q)<<h.b | packGet(h.bin, i, h.b), nil
}

// riceSelect returns the position of the k-th (from 0) one bit of u in bit
// positions [from, limit), or -1 when there are not that many.
func riceSelect(u []byte, from, limit, k int) int {
	for from < limit {
		w := packLoad(u, uint64(from>>3)) >> uint(from&7)
		span := 64 - from&7 // bits of w that come from u
		if span > limit-from {
			span = limit - from
			w &= 1<<uint(span) - 1
		}
		if c := bits.OnesCount64(w); k >= c {
			k -= c
			from += span
			continue
		}
		for ; k > 0; k-- {
			w &= w - 1
		}
		return from + bits.TrailingZeros64(w)
	}
	return -1
}
