package compress

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Interpolative is binary interpolative coding (Moffat & Stuiver, "Binary
// Interpolative Coding for Effective Index Compression", Information
// Retrieval 3(1):25-47, 2000): a sorted list is coded by coding its middle
// element within the range its two neighbours already known allow, then
// both halves recursively within the narrowed ranges, so that a run of
// clustered values (the dense runs document reordering makes, Dhulipala et
// al. KDD'16) costs almost nothing: a range that holds a single possible
// value costs no bits at all. Each value is written with a centred minimal
// binary code (the paper's choice: the shorter codewords of a range whose
// size is not a power of two go to its middle, where the middle element of
// a sub-list most likely falls).
//
// Like PISA's block_interpolative (pisa-engine/pisa, codec/block_codecs.hpp,
// interpolative_block) the codec is of kind General and codes prefix sums:
// the index feeds it d-gaps minus one (the first relative to the block's
// base) and tf minus one (format.go), and it codes their prefix sums P[i] =
// v[0]+...+v[i], which are non-decreasing; for docIDs P[i] = d[i] - base - i,
// which is exactly the position-narrowed range of the paper for a strictly
// increasing list. PISA takes the docID blocks' last prefix sum from its
// skip data; so does the index through Bounded (codec.go): a docID block is
// written by AppendEncodeKnownSum (the bit string only), a frequency block
// by AppendEncodeKnownN (no count); Codec's self-delimiting AppendEncode
// stores both. PISA's minimal binary codes give the short codewords to the
// smallest values; this codec centres them, as the paper does.
//
// Format (ID IDInterpolative, name "interpolative", kind General):
//
//	uvarint(n)          number of values (AppendEncode only)
//	uvarint(S)          only when n > 0: the sum of all values, at most
//	                    n·(2^32-1) (AppendEncode and AppendEncodeKnownN)
//	ceil(L/8) bytes     the L-bit string coding P[0..n-2] within [0, S]:
//	                    code(P[a..b), lo, hi) with m = a + (b-a)/2 writes
//	                    P[m]-lo in the centred minimal binary code of the
//	                    range size hi-lo+1, then code(P[a..m), lo, P[m]) and
//	                    code(P[m+1..b), P[m], hi); bit k of the string is bit
//	                    k%8 of byte k/8 (LSB-first); padding bits are zero
//
// Centred minimal binary code of x in [0, r): with b = ceil(log2 r) and
// s = 2^b - r, the s middle values x in [o, o+s), o = (r-s)/2, take b-1
// bits and the others b bits (r = 1: no bits). x is rotated to x' = x - o
// (x >= o) or x + r - o (x < o); x' < s is written in b-1 bits, else x'+s
// is written as its top b-1 bits followed by its lowest bit, so that the
// reader knows from the first b-1 bits whether a last bit follows.
//
// So a block of n values costs ceil(L/8) bytes with its count and sum
// known (zero bytes for n = 1 or for n consecutive docIDs), the varint of S
// more with its count known, and the varint of n more with neither.
//
// Every bit string decodes to values within their ranges; the decoder
// rejects (ErrCorrupt) a string that ends before the last code, nonzero
// padding bits, trailing bytes, non-minimal varints, S above n·(2^32-1),
// and a decoded value (a difference of consecutive prefix sums) above
// 2^32-1. Decode works on 64-bit bounds and never allocates.
type interpolativeCodec struct{}

func init() { register(interpolativeCodec{}) }

func (interpolativeCodec) ID() ID       { return IDInterpolative }
func (interpolativeCodec) Name() string { return "interpolative" }
func (interpolativeCodec) Kind() Kind   { return General }

// ipStack is the largest array whose prefix sums the encoder keeps on the
// stack (the index's default block is 128).
const ipStack = 256

// AppendEncode implements Codec.
func (interpolativeCodec) AppendEncode(dst []byte, vals []uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	if len(vals) == 0 {
		return dst
	}
	return ipAppendBody(dst, vals, true)
}

// AppendEncodeKnownN implements Bounded: uvarint(S) and the bit string
// (nothing for no values).
func (interpolativeCodec) AppendEncodeKnownN(dst []byte, vals []uint32) []byte {
	if len(vals) == 0 {
		return dst
	}
	return ipAppendBody(dst, vals, true)
}

// AppendEncodeKnownSum implements Bounded: the bit string alone.
func (interpolativeCodec) AppendEncodeKnownSum(dst []byte, vals []uint32) []byte {
	if len(vals) == 0 {
		return dst
	}
	return ipAppendBody(dst, vals, false)
}

// ipAppendBody appends the body of the format of the non-empty vals: the
// bit string, after uvarint(S) when withSum.
func ipAppendBody(dst []byte, vals []uint32, withSum bool) []byte {
	var buf [ipStack]uint64
	p := buf[:0]
	if len(vals) > ipStack {
		p = make([]uint64, 0, len(vals))
	}
	var s uint64
	for _, v := range vals {
		s += uint64(v)
		p = append(p, s)
	}
	if withSum {
		dst = binary.AppendUvarint(dst, s)
	}
	w := ipWriter{dst: dst}
	w.code(p[:len(p)-1], 0, s)
	return w.flush()
}

// Count implements Codec.
func (interpolativeCodec) Count(src []byte) (int, error) {
	n, _, err := ipHeader(src)
	return int(n), err
}

// ipHeader reads the count n and returns it and the offset after it.
func ipHeader(src []byte) (uint64, int, error) {
	n, k := binary.Uvarint(src)
	if k == 0 {
		return 0, 0, corrupt("interpolative", "missing count")
	}
	if k < 0 || (k > 1 && src[k-1] == 0) || n > math.MaxInt32 {
		return 0, 0, corrupt("interpolative", "bad count varint")
	}
	return n, k, nil
}

// Decode implements Codec.
func (interpolativeCodec) Decode(out []uint32, src []byte) (int, error) {
	n, p, err := ipHeader(src)
	if err != nil {
		return 0, err
	}
	if n > uint64(len(out)) {
		return 0, ErrShortBuffer
	}
	if n == 0 {
		if p != len(src) {
			return 0, corrupt("interpolative", "%d trailing bytes after 0 values", len(src)-p)
		}
		return 0, nil
	}
	return int(n), ipDecodeBody("interpolative", out[:n], src[p:])
}

// DecodeKnownN implements Bounded.
func (interpolativeCodec) DecodeKnownN(out []uint32, src []byte) error {
	if err := ipKnownCount("interpolative", len(out)); err != nil {
		return err
	}
	if len(out) == 0 {
		if len(src) != 0 {
			return corrupt("interpolative", "%d trailing bytes after 0 values", len(src))
		}
		return nil
	}
	return ipDecodeBody("interpolative", out, src)
}

// DecodeKnownSum implements Bounded.
func (interpolativeCodec) DecodeKnownSum(out []uint32, src []byte, sum uint64) error {
	if err := ipKnownCount("interpolative", len(out)); err != nil {
		return err
	}
	if len(out) == 0 {
		if len(src) != 0 || sum != 0 {
			return corrupt("interpolative", "%d bytes and sum %d for 0 values", len(src), sum)
		}
		return nil
	}
	return ipDecodeBits("interpolative", out, src, sum)
}

// ipKnownCount checks a count given to a Bounded decoder against the
// format's limit (as ipHeader checks a stored one): the decoder's explicit
// stack holds the right halves of counts below 2^31.
func ipKnownCount(codec string, n int) error {
	if uint64(n) > math.MaxInt32 {
		return corrupt(codec, "count %d above 2^31-1", n)
	}
	return nil
}

// ipDecodeBody decodes the len(vals) (> 0) values of a body written by
// ipAppendBody with withSum, which must be all of src; codec names the
// codec in errors.
func ipDecodeBody(codec string, vals []uint32, src []byte) error {
	n := uint64(len(vals))
	s, p, err := vbUvarint(codec, "sum", src, 0, n*math.MaxUint32)
	if err != nil {
		return err
	}
	return ipDecodeBits(codec, vals, src[p:], s)
}

// ipDecodeBits decodes the len(vals) (> 0, < 2^31) values of sum s from
// the bit string src, which must be all of src.
func ipDecodeBits(codec string, vals []uint32, src []byte, s uint64) error {
	n := uint64(len(vals))
	if s > n*math.MaxUint32 {
		return corrupt(codec, "sum %d of %d values above %d·(2^32-1)", s, n, n)
	}
	r := ipReader{src: src}
	r.decode(vals[:n-1], 0, s)
	nbits := r.consumed()
	if nbits > 8*uint64(len(r.src)) {
		return corrupt(codec, "bit string ends before the last code")
	}
	if r.big {
		return corrupt(codec, "a value exceeds 2^32-1")
	}
	if used := (nbits + 7) / 8; used != uint64(len(r.src)) {
		return corrupt(codec, "%d trailing bytes after %d values", uint64(len(r.src))-used, n)
	}
	if !packPadZero(r.src, nbits) {
		return corrupt(codec, "nonzero padding bits")
	}
	// The prefix sums are exact modulo 2^32 and every difference was
	// checked to fit 32 bits, so the modular differences are the values.
	vals[n-1] = uint32(s)
	for i := len(vals) - 1; i > 0; i-- {
		vals[i] -= vals[i-1]
	}
	return nil
}

// ipWriter appends an LSB-first bit string to dst.
type ipWriter struct {
	dst  []byte
	acc  uint64 // pending bits, the oldest in bit 0
	nacc uint   // number of pending bits, < 8 between writes
}

// write appends the k (<= 32) low bits of v.
func (w *ipWriter) write(v uint64, k uint) {
	w.acc |= v << w.nacc
	w.nacc += k
	for w.nacc >= 8 {
		w.dst = append(w.dst, byte(w.acc))
		w.acc >>= 8
		w.nacc -= 8
	}
}

// writeLong appends the k (<= 64) low bits of v.
func (w *ipWriter) writeLong(v uint64, k uint) {
	if k > 32 {
		w.write(v&math.MaxUint32, 32)
		v, k = v>>32, k-32
	}
	w.write(v, k)
}

// flush appends the pending bits, zero-padded to a byte, and returns dst.
func (w *ipWriter) flush() []byte {
	if w.nacc > 0 {
		w.dst = append(w.dst, byte(w.acc))
	}
	return w.dst
}

// centred writes x in [0, r) in the centred minimal binary code of r.
func (w *ipWriter) centred(x, r uint64) {
	if r <= 1 {
		return
	}
	b := uint(bits.Len64(r - 1)) // 2^(b-1) < r <= 2^b
	s := (uint64(1) << b) - r    // short codewords (wraps correctly for b = 64)
	o := (r - s) / 2
	if x >= o {
		x -= o
	} else {
		x += r - o
	}
	if x < s {
		w.writeLong(x, b-1)
		return
	}
	x += s
	w.writeLong(x>>1, b-1)
	w.write(x&1, 1)
}

// code writes the non-decreasing p, every value in [lo, hi], by the
// interpolative recursion (middle first, then the left and right halves).
func (w *ipWriter) code(p []uint64, lo, hi uint64) {
	for len(p) > 0 && lo < hi {
		m := len(p) / 2
		w.centred(p[m]-lo, hi-lo+1)
		w.code(p[:m], lo, p[m])
		p, lo = p[m+1:], p[m]
	}
}

// ipReader reads the bit string of an interpolative block through a 64-bit
// buffer refilled a word at a time. Reading past the end of the string
// reads zeros (refills count virtual bytes past the end), so that the
// recursion runs to its end with bounded work; the caller then checks once
// that no more bits were consumed than the string holds.
type ipReader struct {
	src  []byte
	p    int    // next byte to load (may pass len(src): virtual zero bytes)
	buf  uint64 // unread bits, the next in bit 0
	nbuf uint   // number of valid bits in buf
	big  bool   // a difference of consecutive prefix sums exceeds 2^32-1
}

// refill tops buf up to at least 56 bits.
func (r *ipReader) refill() {
	if r.p+8 <= len(r.src) {
		r.buf |= binary.LittleEndian.Uint64(r.src[r.p:]) << r.nbuf
		adv := (63 - r.nbuf) >> 3
		r.p += int(adv)
		r.nbuf += 8 * adv
		return
	}
	for r.nbuf <= 56 {
		if r.p < len(r.src) {
			r.buf |= uint64(r.src[r.p]) << r.nbuf
		}
		r.p++
		r.nbuf += 8
	}
}

// consumed is the number of bits read so far.
func (r *ipReader) consumed() uint64 { return 8*uint64(r.p) - uint64(r.nbuf) }

// read returns the next k (<= 63) bits.
func (r *ipReader) read(k uint) uint64 {
	if k > 56 {
		lo := r.read(32)
		return lo | r.read(k-32)<<32
	}
	if r.nbuf < k {
		r.refill()
	}
	v := r.buf & (uint64(1)<<k - 1)
	r.buf >>= k
	r.nbuf -= k
	return v
}

// centred reads a value of the centred minimal binary code of rng
// (2 <= rng <= 2^63): it peeks b bits, of which the low b-1 are a short
// codeword or the top of a long one whose last bit is the b-th.
func (r *ipReader) centred(rng uint64) uint64 {
	b := uint(bits.Len64(rng - 1))
	s := (uint64(1) << b) - rng
	var x uint64
	if b <= 56 {
		if r.nbuf < b {
			r.refill()
		}
		x = r.buf & (uint64(1)<<(b-1) - 1)
		if x < s {
			r.buf >>= b - 1
			r.nbuf -= b - 1
		} else {
			x = (x<<1 | r.buf>>(b-1)&1) - s
			r.buf >>= b
			r.nbuf -= b
		}
	} else {
		x = r.read(b - 1)
		if x >= s {
			x = (x<<1 | r.read(1)) - s
		}
	}
	if o := (rng - s) / 2; x < rng-o {
		return x + o
	} else {
		return x - (rng - o)
	}
}

// ipFrame is a pending right half of the decoding recursion: out[a:b]
// with bounds lo, hi.
type ipFrame struct {
	a, b   int
	lo, hi uint64
}

// ipMaxDepth bounds the pending right halves: each halves the count, and
// counts are below 2^31 (ipHeader).
const ipMaxDepth = 40

// decode reads the prefix sums of out (every one in [lo, hi]) in the
// order code wrote them (middle, left half, right half), storing them
// modulo 2^32. The recursion runs on an explicit stack of right halves (a
// call per value cost more than the code in profiles). It checks that the
// difference between each value and its left and right neighbours (lo for
// the first, hi for the last) fits 32 bits: every pair of consecutive
// prefix sums is checked when the later-decoded one is read, since the
// other is then its nearest bound. The centred code is read inline (as
// centred does) for codes of at most 56 bits.
func (r *ipReader) decode(out []uint32, lo, hi uint64) {
	var stack [ipMaxDepth]ipFrame
	sp := 0
	a, b := 0, len(out)
	for {
		if a == b || lo == hi {
			v := uint32(lo) // a range of one value: no bits
			for i := a; i < b; i++ {
				out[i] = v
			}
			if sp == 0 {
				return
			}
			sp--
			f := stack[sp]
			a, b, lo, hi = f.a, f.b, f.lo, f.hi
			continue
		}
		rng := hi - lo + 1
		w := uint(bits.Len64(rng - 1))
		s := (uint64(1) << w) - rng
		var x uint64
		if w <= 56 {
			if r.nbuf < w {
				r.refill()
			}
			// Branch-free selects (conditional moves): whether a code is
			// short and on which side of the rotation it falls are data,
			// and mispredicted branches on them cost more than the code.
			x = r.buf & (uint64(1)<<(w-1) - 1)
			xl := (x<<1 | r.buf>>(w-1)&1) - s
			k := w - 1
			if x >= s {
				x, k = xl, w
			}
			r.buf >>= k
			r.nbuf -= k
			x += (rng - s) / 2 // undo the rotation: x' + o, modulo rng
			if x >= rng {
				x -= rng
			}
		} else {
			x = r.centred(rng)
		}
		v := lo + x // in [lo, hi]
		m := a + (b-a)/2
		if (m == a && x > math.MaxUint32) || (m == b-1 && hi-v > math.MaxUint32) {
			r.big = true
		}
		out[m] = uint32(v)
		if m+1 < b {
			stack[sp] = ipFrame{m + 1, b, v, hi}
			sp++
		}
		b, hi = m, v
	}
}
