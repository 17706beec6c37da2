package compress

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Elias-Fano in the quasi-succinct form of Vigna ("Quasi-succinct indices",
// WSDM 2013, §3-§4), laid out for the block-based parallel decoding of Li's
// Parallel-QS (Li, "Decompressing inverted indexes using a GPU-based
// Parallel-QS method", M.S. thesis, NYU Poly 2014, ch. 4-5).
//
// A non-decreasing array x_0 <= ... <= x_{n-1} with universe u = x_{n-1}+1
// is split at l = max(0, floor(log2(u/n))) bits (Vigna §3; Li ch. 2 with his
// parameter c = 1): the low l bits of every x_i go, packed, into the
// lower-bits array (LBA); the high part h_i = x_i >> l is written in unary
// into the upper-bits array (UBA) by setting bit h_i + i. The UBA thus holds
// exactly n ones and max>>l < 2n zeros before its last one: fewer than 3n
// bits, so fewer than l + 3 bits per value, plus the block counts and the
// padding of the last 64-bit word.
//
// Block counts. Parallel-QS decodes the UBA with a block-based prefix sum
// (Li §5.2, "block structure"): count the ones of every block, scan the
// counts to get each block's first element index, then scan within the
// block. qp stores those counts (Li recounts them on the GPU; storing them
// also gives the CPU its select): the UBA is cut into blocks of 8 64-bit
// words (512 bits; Li uses one 32-bit word per block), and block k's first
// one is element number c_0 + ... + c_{k-1}, where c_k is the number of ones
// of block k. The last block's count is implied (n minus the others) and not
// stored.
//
// Format (ID IDEliasFano, name "eliasfano", kind Sorted):
//
//	uvarint(n)                number of values (minimal); nothing follows if 0
//	uvarint(max)              x_{n-1}, <= 2^32-1 (minimal); u = max+1
//	                          derived: l = max(0, floor(log2(u/n))) (0..32),
//	                          H = max >> l, N = n + H UBA bits,
//	                          W = ceil(N/64) UBA words, B = ceil(W/8) blocks
//	(B-1) × uint16 c_k        ones in UBA words [8k, 8k+8), k < B-1
//	ceil(n·l/8) bytes LBA     low l bits of x_i at bits [i·l, (i+1)·l),
//	                          LSB-first (bit k is bit k%8 of byte k/8),
//	                          zero-padded to a byte
//	W × uint64 UBA            little-endian words; bit p of the UBA is bit
//	                          p%64 of word p/64; bit h_i + i is set for every
//	                          i and no other; bits >= N are zero
//
// GPU decoding (Li §5.1-5.2, with the kernels merged as in his final
// version): thread block k takes UBA block k; an exclusive scan of the
// counts c_0..c_{k-1} gives its first element index, each thread popcounts
// one word and a scan over the block's 8 popcounts gives that word's first
// element index i0; the thread then walks its word's ones (the one at bit p
// of element i gives h_i = p - i) and writes x_i = h_i << l | LBA field i.
//
// All multi-byte integers are little-endian. Li takes u = the largest value
// (b = floor(log2(c·u/n))); qp takes Vigna's exclusive bound u = max+1, so
// that l = 0 exactly when the values are too dense for low bits to pay off
// (max+1 < 2n). Unlike Li, whose unary codes
// write gaps as ones ended by a zero, the UBA follows Vigna: ones are
// elements and zeros are bucket ends, so decoding iterates set bits
// (bits.TrailingZeros64) and select1(i) - i is h_i.
//
// Decode checks the layout, every block count, that the UBA has exactly n
// ones with the last at bit N-1, that the values are non-decreasing and that
// the last equals max. Get and Search check what they read (a corrupt
// encoding yields an error or a wrong value, never a panic).
type eliasFanoCodec struct{}

func init() { register(eliasFanoCodec{}) }

const (
	efBlockWords = 8                 // UBA words per counted block
	efBlockBits  = 64 * efBlockWords // 512
	efName       = "eliasfano"
)

func (eliasFanoCodec) ID() ID       { return IDEliasFano }
func (eliasFanoCodec) Name() string { return efName }
func (eliasFanoCodec) Kind() Kind   { return Sorted }

// efLowBits returns l = max(0, floor(log2((max+1)/n))) for n >= 1.
func efLowBits(n int, max uint32) uint {
	q := (uint64(max) + 1) / uint64(n)
	if q == 0 {
		return 0
	}
	return uint(bits.Len64(q) - 1)
}

// AppendEncode implements Codec. vals must be non-decreasing.
func (eliasFanoCodec) AppendEncode(dst []byte, vals []uint32) []byte {
	n := len(vals)
	if uint64(n) > 1<<31-1 {
		panic("BUG: eliasfano: more than 2^31-1 values")
	}
	for i := 1; i < n; i++ {
		if vals[i] < vals[i-1] {
			panic(fmt.Sprintf("BUG: eliasfano: input not non-decreasing at index %d (%d after %d)", i, vals[i], vals[i-1]))
		}
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	if n == 0 {
		return dst
	}
	last := vals[n-1]
	dst = binary.AppendUvarint(dst, uint64(last))
	l := efLowBits(n, last)
	nbits := uint64(n) + uint64(last)>>l
	w := int((nbits + 63) / 64)
	uba := make([]uint64, w)
	for i, v := range vals {
		p := uint64(v)>>l + uint64(i)
		uba[p/64] |= 1 << (p % 64)
	}
	for k := 0; k+efBlockWords < w; k += efBlockWords {
		c := 0
		for _, x := range uba[k : k+efBlockWords] {
			c += bits.OnesCount64(x)
		}
		dst = binary.LittleEndian.AppendUint16(dst, uint16(c))
	}
	dst = packAppend(dst, vals, l)
	for _, x := range uba {
		dst = binary.LittleEndian.AppendUint64(dst, x)
	}
	return dst
}

// efView is a parsed encoding.
type efView struct {
	n      int
	max    uint32
	l      uint
	hmax   uint64 // max >> l
	nbits  uint64 // UBA bits before the padding: n + hmax
	w      int    // UBA words
	nb     int    // UBA blocks
	counts []byte // (nb-1)·2 bytes
	lba    []byte
	uba    []byte // 8·w bytes
}

// efParse parses and checks the layout of src in O(1).
func efParse(src []byte) (efView, error) {
	var v efView
	n, p, ok := uvField(src, 0, 1<<31-1)
	if !ok {
		return v, corrupt(efName, "bad or missing count")
	}
	if n == 0 {
		if p != len(src) {
			return v, corrupt(efName, "%d trailing bytes after 0 values", len(src)-p)
		}
		return v, nil
	}
	// Each value takes at least one UBA bit: bound n before sizing by it.
	if n > 8*uint64(len(src)) {
		return v, corrupt(efName, "count %d too large for %d bytes", n, len(src))
	}
	top, p, ok := uvField(src, p, 1<<32-1)
	if !ok {
		return v, corrupt(efName, "bad or missing max")
	}
	v.n, v.max = int(n), uint32(top)
	v.l = efLowBits(v.n, v.max)
	v.hmax = top >> v.l
	v.nbits = n + v.hmax
	v.w = int((v.nbits + 63) / 64)
	v.nb = (v.w + efBlockWords - 1) / efBlockWords
	nc := 2 * uint64(v.nb-1)
	nl := (n*uint64(v.l) + 7) / 8
	nu := 8 * uint64(v.w)
	if need := nc + nl + nu; need != uint64(len(src)-p) {
		return v, corrupt(efName, "n=%d max=%d needs %d bytes after the header, have %d", n, top, need, len(src)-p)
	}
	v.counts = src[p : p+int(nc)]
	p += int(nc)
	v.lba = src[p : p+int(nl)]
	p += int(nl)
	v.uba = src[p:]
	if !packPadZero(v.lba, n*uint64(v.l)) {
		return v, corrupt(efName, "nonzero LBA padding bits")
	}
	last := v.word(v.w - 1)
	if r := v.nbits % 64; r != 0 && last>>r != 0 {
		return v, corrupt(efName, "nonzero UBA padding bits")
	}
	if last>>((v.nbits-1)%64)&1 == 0 {
		return v, corrupt(efName, "last UBA bit %d not set", v.nbits-1)
	}
	return v, nil
}

// word returns UBA word k (0 <= k < w).
func (v *efView) word(k int) uint64 {
	return binary.LittleEndian.Uint64(v.uba[8*k:])
}

// count returns the stored one count of block k < nb-1.
func (v *efView) count(k int) (int, error) {
	c := int(binary.LittleEndian.Uint16(v.counts[2*k:]))
	if c > efBlockBits {
		return 0, corrupt(efName, "block %d: count %d > %d", k, c, efBlockBits)
	}
	return c, nil
}

// Count implements Codec.
func (eliasFanoCodec) Count(src []byte) (int, error) {
	n, _, ok := uvField(src, 0, 1<<31-1)
	if !ok {
		return 0, corrupt(efName, "bad or missing count")
	}
	if n > 8*uint64(len(src)) {
		return 0, corrupt(efName, "count %d too large for %d bytes", n, len(src))
	}
	return int(n), nil
}

// Decode implements Codec: unpack the LBA, then OR in the high part of
// every one of the UBA, iterating its set bits word by word.
func (eliasFanoCodec) Decode(out []uint32, src []byte) (int, error) {
	v, err := efParse(src)
	if err != nil || v.n == 0 {
		return 0, err
	}
	n := v.n
	if n > len(out) {
		return 0, ErrShortBuffer
	}
	out = out[:n]
	packUnpack(out, v.lba, v.l)
	l := v.l
	uba := v.uba
	i := 0
	var prev uint32
	for k := 0; k < v.nb; k++ {
		first := i
		for wi := k * efBlockWords; wi < min((k+1)*efBlockWords, v.w); wi++ {
			w := binary.LittleEndian.Uint64(uba[8*wi:])
			if i+bits.OnesCount64(w) > n {
				return 0, corrupt(efName, "more than %d ones in the UBA", n)
			}
			// The high part of the one at bit 64·wi+t that is element i
			// is 64·wi + t - i.
			base := uint64(64 * wi)
			for w != 0 {
				x := uint32((base+uint64(bits.TrailingZeros64(w))-uint64(i))<<l) | out[i]
				if x < prev {
					return 0, corrupt(efName, "value %d decreases (%d after %d)", i, x, prev)
				}
				out[i], prev = x, x
				i++
				w &= w - 1
			}
		}
		if k < v.nb-1 {
			if c, err := v.count(k); err != nil {
				return 0, err
			} else if c != i-first {
				return 0, corrupt(efName, "block %d: count %d, has %d ones", k, c, i-first)
			}
		}
	}
	if i != n {
		return 0, corrupt(efName, "%d ones in the UBA, want %d", i, n)
	}
	if out[n-1] != v.max {
		return 0, corrupt(efName, "last value %d, header says %d", out[n-1], v.max)
	}
	return n, nil
}

// Get implements RandomAccess: x_i = (select1(i) - i) << l | low_i.
func (eliasFanoCodec) Get(src []byte, i int) (uint32, error) {
	v, err := efParse(src)
	if err != nil {
		return 0, err
	}
	if i < 0 || i >= v.n {
		return 0, corrupt(efName, "index %d out of range [0,%d)", i, v.n)
	}
	pos, err := v.select1(i)
	if err != nil {
		return 0, err
	}
	return v.value(i, pos)
}

// value returns x_i given the UBA position pos of its one.
func (v *efView) value(i int, pos uint64) (uint32, error) {
	h := pos - uint64(i)
	if pos < uint64(i) || h > v.hmax {
		return 0, corrupt(efName, "element %d: one at bit %d", i, pos)
	}
	return uint32(h<<v.l) | packGet(v.lba, i, v.l), nil
}

// select1 returns the position of the one of element i (0 <= i < n): the
// block by the prefix sums of the counts, the word by popcounts, the bit by
// efSelect64.
func (v *efView) select1(i int) (uint64, error) {
	cum, k := 0, 0
	for ; k < v.nb-1; k++ {
		c, err := v.count(k)
		if err != nil {
			return 0, err
		}
		if cum+c > i {
			break
		}
		cum += c
	}
	for wi := k * efBlockWords; wi < min((k+1)*efBlockWords, v.w); wi++ {
		w := v.word(wi)
		if c := bits.OnesCount64(w); cum+c > i {
			return uint64(64*wi + efSelect64(w, i-cum)), nil
		} else {
			cum += c
		}
	}
	return 0, corrupt(efName, "element %d not in UBA block %d", i, k)
}

// select0 returns the position of the zero of rank r (the (r+1)-th zero),
// i.e. the end of bucket r; the ones before it are the elements whose high
// part is at most r.
func (v *efView) select0(r uint64) (uint64, error) {
	cum, k := uint64(0), 0
	for ; k < v.nb-1; k++ {
		c, err := v.count(k)
		if err != nil {
			return 0, err
		}
		z := uint64(efBlockBits - c)
		if cum+z > r {
			break
		}
		cum += z
	}
	for wi := k * efBlockWords; wi < min((k+1)*efBlockWords, v.w); wi++ {
		w := ^v.word(wi)
		if c := uint64(bits.OnesCount64(w)); cum+c > r {
			return uint64(64*wi + efSelect64(w, int(r-cum))), nil
		} else {
			cum += c
		}
	}
	return 0, corrupt(efName, "zero %d not in UBA block %d", r, k)
}

// nextOne returns the position of the first one at or after bit p, or
// false if there is none.
func (v *efView) nextOne(p uint64) (uint64, bool) {
	wi := p / 64
	if wi >= uint64(v.w) {
		return 0, false
	}
	w := v.word(int(wi)) & (^uint64(0) << (p % 64))
	for w == 0 {
		wi++
		if wi >= uint64(v.w) {
			return 0, false
		}
		w = v.word(int(wi))
	}
	return 64*wi + uint64(bits.TrailingZeros64(w)), true
}

// efSelect64 returns the position of the set bit of rank r (0-based) of w;
// w must have more than r set bits.
func efSelect64(w uint64, r int) int {
	off := 0
	for {
		c := bits.OnesCount8(uint8(w))
		if r < c {
			break
		}
		r -= c
		w >>= 8
		off += 8
	}
	for ; r > 0; r-- {
		w &= w - 1
	}
	return off + bits.TrailingZeros64(w)
}

// Search implements Searcher (Vigna §4 skipping): the elements with high
// part < h = x>>l are the ones before the zero of rank h-1, found with
// select0 through the block counts; the scan then starts at the first
// element of bucket h (or at from, if later) and stops at the first value
// >= x, which is at the latest the first element of a later bucket.
func (eliasFanoCodec) Search(src []byte, from int, x uint32) (int, uint32, error) {
	v, err := efParse(src)
	if err != nil {
		return 0, 0, err
	}
	from = max(from, 0)
	if from >= v.n || x > v.max {
		return v.n, 0, nil
	}
	h := uint64(x) >> v.l
	i, start := 0, uint64(0) // first element of bucket h and where its one may be
	if h > 0 {
		p, err := v.select0(h - 1)
		if err != nil {
			return 0, 0, err
		}
		if p < h-1 || p-(h-1) > uint64(v.n) {
			return 0, 0, corrupt(efName, "zero %d at bit %d", h-1, p)
		}
		i, start = int(p-(h-1)), p+1
	}
	var pos uint64
	if from > i {
		if pos, err = v.select1(from); err != nil {
			return 0, 0, err
		}
		i = from
	} else {
		var ok bool
		if pos, ok = v.nextOne(start); !ok && i < v.n {
			return 0, 0, corrupt(efName, "no one after bit %d", start)
		}
	}
	for ; i < v.n; i++ {
		val, err := v.value(i, pos)
		if err != nil {
			return 0, 0, err
		}
		if val >= x {
			return i, val, nil
		}
		next, ok := v.nextOne(pos + 1)
		if !ok && i+1 < v.n {
			return 0, 0, corrupt(efName, "element %d: no one after bit %d", i+1, pos)
		}
		pos = next
	}
	return 0, 0, corrupt(efName, "no value >= %d though max is %d", x, v.max)
}
