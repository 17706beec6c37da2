package compress

import (
	"encoding/binary"
	"math/bits"
)

// PForDelta in the GPU form of Ding, He, Yan & Suel, "Using graphics
// processors for high performance IR query processing", WWW 2009, §6
// ("Decompressing PForDelta"). Unlike the CPU PForDelta it builds on
// (Zukowski et al., ICDE 2006, and successors: "[25, 13, 23]" there), which
// chains the exceptions through their slots as a linked list and picks a bit
// width per block, Ding's GPU variant
//
//   - uses ONE slot width b for the whole array, so every value i sits in a
//     fixed b-bit slot at bit i·b and the 512-value sub-block k (Ding: "a
//     block size of 512 elements for our GPU-based PForDelta") starts at byte
//     k·64·b of the slot area: a GPU thread block finds its sub-block, and a
//     thread its slot, by arithmetic alone;
//   - stores the low b bits of EVERY value (exceptions included) in its slot,
//     and the exceptions' high bits (value >> b) and positions in two
//     separate arrays;
//   - compresses those two arrays again with PForDelta (Ding: "We then
//     recursively apply PForDelta to compress these two arrays"; the
//     positions as "the gaps between the offsets").
//
// Recursion depth. Ding reports that one level of recursion beats per-block
// PForDelta and that more levels "give only slight extra benefits", and uses
// one level. qp does the same: the top array (level 0) and its two exception
// arrays (level 1) are patched arrays; the exception arrays of a level-1
// array (level 2) are flat, exception-free binary packing at the width of
// their largest value. Every array therefore has at most 7 parts (1 + 2 + 4).
//
// Choice of b. Ding (after [25]) picks b "such that most of the gaps in the
// list (say, 90%) are less than 2^b". qp picks, at levels 0 and 1, among the
// widths b in 0..32 that leave at most pfdMaxExc(m, L) = max(m/4, 32 >> L)
// of an array's m values as exceptions, the one that minimises the exact
// encoded size of the array including its recursively encoded exception
// arrays (the criterion of OptPFD, Yan, Ding & Suel, WWW 2009, there per
// block, here applied to Ding's single list-wide b); ties go to the larger b
// (fewer exceptions). The bound keeps "most" (a quarter of a long array at
// most) and is the GPU decoder's: an index block of up to 128 values gets at
// most 32 exceptions and level-1 arrays of at most 16, which
// cuda/kernels/pfordelta.cu decodes with 16 lanes per block, while blocks
// with more take a whole warp, several times longer. Unbounded, 1.6-3.0% of
// the decode benchmark's blocks had more than 32; the bound costs 0.05-0.07%
// of their size there, and at most 0.5% of the docID bits of the CACM, CISI,
// LISA and NPL indexes (docs/GPU-DECODE.md, seventh round). One long array
// (compress/bench_test.go's list1M) grows by 2.9% and decodes about 1.5
// times faster on the CPU (docs/BENCHMARKS.md). Encoding is offline; the
// exhaustive search costs O(33²·n) at worst. The decoders accept any
// exception count (0..m).
//
// Block bases. Ding stores one uncompressed docID per 512-block so that the
// prefix sum can restart per block. qp's index keeps every block's base docID
// in its skip table and hands the codec d-gaps (minus one), so the codec
// stores no bases and returns the gaps themselves; the prefix sum is the
// caller's.
//
// Format (ID IDPForDelta, name "pfordelta", kind General). All bit strings
// are LSB-first: bit k of a string is bit k%8 of its byte k/8, so value j of
// a b-bit packed array occupies bits [j·b, (j+1)·b), i.e. the same bits of
// the little-endian 32-bit words of the array; padding bits up to the next
// byte are zero. Multi-byte integers are little-endian; uvarints are
// minimal.
//
//	uvarint(n)                      number of values; nothing follows if n = 0
//	PATCHED(n values, level 0)
//
// PATCHED(m values, level L), L = 0 or 1, m >= 1 (m is known from the
// context: n at level 0, the parent's e at level 1):
//
//	1 byte   b                      slot width, 0..32
//	uvarint  e                      number of exceptions, 0..m (0 if b = 32)
//	(S-1) × uint32 offs[1..S-1]     only if e > 0 and S > 1, where
//	                                S = ceil(m/512) sub-blocks: offs[k] is the
//	                                number of exceptions in sub-blocks < k
//	                                (offs[0] = 0 and offs[S] = e implied),
//	                                so sub-block k owns exceptions
//	                                [offs[k], offs[k+1])
//	ceil(m·b/8) bytes slots         the low b bits of every value, value j
//	                                at bits [j·b, (j+1)·b); sub-block k's
//	                                slots are the 64·b bytes from byte k·64·b
//	                                (fewer for a short last sub-block)
//	if e > 0:
//	  H: L = 0 ? PATCHED(e, 1) : FLAT(e)   high parts: exception x's value is
//	                                slot | H[x] << b, with 1 <= H[x] < 2^(32-b)
//	  G: L = 0 ? PATCHED(e, 1) : FLAT(e)   position gaps: the x-th exception of
//	                                a sub-block sits at relative position
//	                                pos[x] = pos[x-1] + 1 + G[x], with
//	                                pos[-1] = -1 at each sub-block's start,
//	                                and pos < the sub-block's length
//
// FLAT(m values) (level 2):
//
//	1 byte   b                      width, 0..32
//	ceil(m·b/8) bytes               the m values, b bits each
//
// The offsets table is qp's: Ding does not say how a 512-block finds its
// exceptions; with it every sub-block is independent (its gaps restart too).
//
// GPU decoding (one thread per value): decode H and G of level 0 completely
// first (Ding: "we always decompress the complete arrays for the
// exceptions"; they are small, and decode the same way, their own
// exceptions coming from FLAT arrays); then thread block k (512 threads)
// reads its slots at byte k·64·b, an exclusive scan of G[x]+1 over
// x in [offs[k], offs[k+1]) gives the positions, and thread x - offs[k] ORs
// H[x] << b into its position's value.
//
// Decode (CPU) unpacks all slots, then walks the exceptions, decoding H and
// G one level-1 sub-block at a time into stack buffers. It validates
// everything above (widths, counts, offsets, positions, high parts, zero
// padding, no trailing bytes). Get reads one slot and scans the position
// gaps of its sub-block up to the wanted position, streaming H and G without
// decoding them; it costs O(exceptions of one sub-block) at each level and
// validates only what it reads.
type pforDeltaCodec struct{}

func init() { register(pforDeltaCodec{}) }

const (
	pfdSub  = 512 // values per sub-block (Ding §6)
	pfdFlat = 2   // level of the flat (unpatched) arrays
	pfdName = "pfordelta"
)

func (pforDeltaCodec) ID() ID       { return IDPForDelta }
func (pforDeltaCodec) Name() string { return pfdName }
func (pforDeltaCodec) Kind() Kind   { return General }

// AppendEncode implements Codec.
func (pforDeltaCodec) AppendEncode(dst []byte, vals []uint32) []byte {
	return pfdEncode(dst, vals, true)
}

// pfdEncode appends the encoding of vals (pfdAppend says what bounded is).
func pfdEncode(dst []byte, vals []uint32, bounded bool) []byte {
	if uint64(len(vals)) > 1<<31-1 {
		panic("BUG: pfordelta: more than 2^31-1 values")
	}
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	if len(vals) == 0 {
		return dst
	}
	return pfdAppend(dst, vals, 0, bounded)
}

// pfdAppend appends the level-`level` encoding of vals (len >= 1); bounded
// says whether the widths leave at most pfdMaxExc exceptions (AppendEncode)
// or any number (tests: the unbounded OptPFD choice, which the decoders must
// accept too).
func pfdAppend(dst []byte, vals []uint32, level int, bounded bool) []byte {
	if level == pfdFlat {
		b := packWidth(vals)
		dst = append(dst, byte(b))
		return packAppend(dst, vals, b)
	}
	b, _ := pfdBest(vals, level, bounded)
	highs := make([]uint32, len(vals))
	gaps := make([]uint32, len(vals))
	e := pfdSplit(vals, b, highs, gaps)
	dst = append(dst, byte(b))
	dst = binary.AppendUvarint(dst, uint64(e))
	if nsb := pfdSubBlocks(len(vals)); e > 0 && nsb > 1 {
		// offs[k] = exceptions in sub-blocks < k, k = 1..nsb-1.
		cnt := 0
		for k := 1; k < nsb; k++ {
			for _, v := range vals[(k-1)*pfdSub : k*pfdSub] {
				if b < 32 && v>>b != 0 {
					cnt++
				}
			}
			dst = binary.LittleEndian.AppendUint32(dst, uint32(cnt))
		}
	}
	dst = packAppend(dst, vals, b)
	if e > 0 {
		dst = pfdAppend(dst, highs[:e], level+1, bounded)
		dst = pfdAppend(dst, gaps[:e], level+1, bounded)
	}
	return dst
}

// pfdSubBlocks is the number of 512-value sub-blocks of m values.
func pfdSubBlocks(m int) int { return (m + pfdSub - 1) / pfdSub }

// pfdSplit writes the exceptions of vals at slot width b (the values >= 2^b)
// to highs (value >> b) and gaps (position gaps restarting per sub-block, as
// in the format) and returns their number. highs and gaps must be as long as
// vals.
func pfdSplit(vals []uint32, b uint, highs, gaps []uint32) int {
	if b >= 32 {
		return 0
	}
	e := 0
	for s := 0; s < len(vals); s += pfdSub {
		prev := -1
		for j, v := range vals[s:min(s+pfdSub, len(vals))] {
			if v>>b != 0 {
				highs[e] = v >> b
				gaps[e] = uint32(j - prev - 1)
				prev = j
				e++
			}
		}
	}
	return e
}

// pfdMaxExc is the most exceptions the encoder leaves in an array of m
// values at level 0 or 1 (see "Choice of b").
func pfdMaxExc(m, level int) int { return max(32>>level, m/4) }

// pfdBest returns the slot width minimising the encoded size of vals at
// level `level` (0 or 1; for pfdFlat the only width) among those leaving
// at most pfdMaxExc(len(vals), level) exceptions when bounded (else among
// all), and that size in bytes (the count field of level 0 excluded).
func pfdBest(vals []uint32, level int, bounded bool) (uint, int) {
	m := len(vals)
	mb := packWidth(vals)
	if level == pfdFlat {
		return mb, 1 + packBytes(m, mb)
	}
	nsb := pfdSubBlocks(m)
	var highs, gaps []uint32
	bestB, bestSize := mb, 0
	for b := int(mb); b >= 0; b-- {
		size := 1 + packBytes(m, uint(b))
		e := 0
		if uint(b) < mb {
			if highs == nil {
				highs = make([]uint32, m)
				gaps = make([]uint32, m)
			}
			e = pfdSplit(vals, uint(b), highs, gaps)
		}
		if bounded && e > pfdMaxExc(m, level) {
			break // and more at every smaller b (b = mb has none)
		}
		size += uvarintLen(uint64(e))
		if uint(b) < mb && size >= bestSize {
			continue // the exceptions can only add to it
		}
		if e > 0 {
			if nsb > 1 {
				size += 4 * (nsb - 1)
			}
			_, sh := pfdBest(highs[:e], level+1, bounded)
			_, sg := pfdBest(gaps[:e], level+1, bounded)
			size += sh + sg
		}
		if uint(b) == mb || size < bestSize {
			bestB, bestSize = uint(b), size
		}
	}
	return bestB, bestSize
}

// Count implements Codec.
func (pforDeltaCodec) Count(src []byte) (int, error) {
	n, _, err := pfdCount(src)
	return n, err
}

// pfdCount reads the value count and returns it with the offset after it.
// A PForDelta array of zeros at b = 0 takes no slot bytes, so the count is
// bounded by 2^31-1 only, not by len(src).
func pfdCount(src []byte) (int, int, error) {
	n, p, ok := uvField(src, 0, 1<<31-1)
	if !ok {
		return 0, 0, corrupt(pfdName, "bad or missing count")
	}
	return int(n), p, nil
}

// pfdPart is one parsed array of the format: PATCHED at levels 0 and 1
// (nodes 0, 1-2), FLAT at level 2 (nodes 3-6); node x's H and G are nodes
// 2x+1 and 2x+2.
type pfdPart struct {
	m     int    // number of values
	b     uint   // slot width
	e     int    // number of exceptions (0 for FLAT)
	offs  []byte // (S-1)·4 bytes of offsets, nil if e = 0 or S = 1
	slots []byte // ceil(m·b/8) bytes
}

type pfdTree [7]pfdPart

// off returns offs[k] for 0 <= k <= S (unvalidated; callers check it).
func (a *pfdPart) off(k int) int {
	if k == 0 || a.e == 0 {
		return 0
	}
	if a.offs == nil || 4*k > len(a.offs) {
		return a.e // k = S
	}
	v := binary.LittleEndian.Uint32(a.offs[4*(k-1):])
	if uint64(v) > uint64(a.e) {
		return a.e + 1 // out of range: the caller's range check fails
	}
	return int(v)
}

// exRange returns the exception range [lo, hi) of sub-block k of length sbLen
// and checks it.
func (a *pfdPart) exRange(k, sbLen int) (int, int, error) {
	lo, hi := a.off(k), a.off(k+1)
	if lo > hi || hi > a.e || hi-lo > sbLen {
		return 0, 0, corrupt(pfdName, "sub-block %d: bad exception range [%d,%d) of %d", k, lo, hi, a.e)
	}
	return lo, hi, nil
}

// pfdParse parses the array of m >= 1 values at src[p:] at level `level`
// into t[node] (and its H and G into the children) and returns the offset
// after it. It checks the widths, counts, lengths and zero padding; offsets,
// positions and high parts are checked by the decoders.
func pfdParse(src []byte, p, m, level, node int, t *pfdTree) (int, error) {
	if p >= len(src) {
		return 0, corrupt(pfdName, "level %d: missing bit width", level)
	}
	a := &t[node]
	*a = pfdPart{m: m, b: uint(src[p])}
	p++
	if a.b > 32 {
		return 0, corrupt(pfdName, "level %d: bit width %d > 32", level, a.b)
	}
	if level < pfdFlat {
		e, q, ok := uvField(src, p, uint64(m))
		if !ok {
			return 0, corrupt(pfdName, "level %d: bad exception count (m=%d)", level, m)
		}
		p = q
		a.e = int(e)
		if a.e > 0 && a.b == 32 {
			return 0, corrupt(pfdName, "level %d: exceptions at bit width 32", level)
		}
		if nsb := pfdSubBlocks(m); a.e > 0 && nsb > 1 {
			no := 4 * (nsb - 1)
			if no > len(src)-p {
				return 0, corrupt(pfdName, "level %d: truncated exception offsets", level)
			}
			a.offs = src[p : p+no]
			p += no
		}
	}
	nbits := uint64(m) * uint64(a.b)
	if nb := (nbits + 7) / 8; nb > uint64(len(src)-p) {
		return 0, corrupt(pfdName, "level %d: %d slot bytes, %d left", level, nb, len(src)-p)
	} else {
		a.slots = src[p : p+int(nb)]
		p += int(nb)
	}
	if !packPadZero(a.slots, nbits) {
		return 0, corrupt(pfdName, "level %d: nonzero padding bits", level)
	}
	if a.e > 0 {
		var err error
		if p, err = pfdParse(src, p, a.e, level+1, 2*node+1, t); err != nil {
			return 0, err
		}
		if p, err = pfdParse(src, p, a.e, level+1, 2*node+2, t); err != nil {
			return 0, err
		}
	}
	return p, nil
}

// pfdLoad parses a whole encoding; it returns n and, for n > 0, the parts.
func pfdLoad(src []byte, t *pfdTree) (int, error) {
	n, p, err := pfdCount(src)
	if err != nil {
		return 0, err
	}
	if n > 0 {
		if p, err = pfdParse(src, p, n, 0, 0, t); err != nil {
			return 0, err
		}
	}
	if p != len(src) {
		return 0, corrupt(pfdName, "%d trailing bytes after %d values", len(src)-p, n)
	}
	return n, nil
}

// Decode implements Codec.
func (pforDeltaCodec) Decode(out []uint32, src []byte) (int, error) {
	var t pfdTree
	n, err := pfdLoad(src, &t)
	if err != nil || n == 0 {
		return 0, err
	}
	if n > len(out) {
		return 0, ErrShortBuffer
	}
	out = out[:n]
	top := &t[0]
	packUnpack(out, top.slots, top.b)
	if top.e == 0 {
		return n, nil
	}
	// The exception arrays are decoded one level-1 sub-block (512 values)
	// at a time into stack buffers.
	var hbuf, gbuf [pfdSub]uint32
	lim := uint64(1) << (32 - top.b)
	c := 0
	for s := 0; s < n; s += pfdSub {
		sbLen := min(pfdSub, n-s)
		_, hi, err := top.exRange(s/pfdSub, sbLen)
		if err != nil {
			return 0, err
		}
		sb := out[s : s+sbLen]
		prev := -1
		for ; c < hi; c++ {
			if c%pfdSub == 0 {
				if err := pfdFill(&t, 1, c/pfdSub, &hbuf); err != nil {
					return 0, err
				}
				if err := pfdFill(&t, 2, c/pfdSub, &gbuf); err != nil {
					return 0, err
				}
			}
			h, g := hbuf[c%pfdSub], gbuf[c%pfdSub]
			if h == 0 || uint64(h) >= lim {
				return 0, corrupt(pfdName, "exception %d: high part %d out of range [1,2^%d)", c, h, 32-top.b)
			}
			if uint64(g) >= uint64(sbLen-1-prev) {
				return 0, corrupt(pfdName, "exception %d: position gap %d past sub-block end", c, g)
			}
			prev += 1 + int(g)
			sb[prev] |= h << top.b
		}
	}
	return n, nil
}

// pfdFill decodes sub-block k of the level-1 array t[node] into dst, and
// checks it.
func pfdFill(t *pfdTree, node, k int, dst *[pfdSub]uint32) error {
	a, h, g := &t[node], &t[2*node+1], &t[2*node+2]
	m := min(pfdSub, a.m-k*pfdSub)
	sb := dst[:m]
	packUnpack(sb, a.slots[k*(pfdSub/8)*int(a.b):], a.b)
	if a.e == 0 {
		return nil
	}
	lo, hi, err := a.exRange(k, m)
	if err != nil {
		return err
	}
	lim := uint64(1) << (32 - a.b) // a.b < 32 as a.e > 0
	prev := -1
	for c := lo; c < hi; c++ {
		gv := packGet(g.slots, c, g.b)
		if uint64(gv) >= uint64(m-1-prev) {
			return corrupt(pfdName, "level 1 exception %d: position gap %d past sub-block end", c, gv)
		}
		prev += 1 + int(gv)
		hv := packGet(h.slots, c, h.b)
		if hv == 0 || uint64(hv) >= lim {
			return corrupt(pfdName, "level 1 exception %d: high part %d out of range [1,2^%d)", c, hv, 32-a.b)
		}
		sb[prev] |= hv << a.b
	}
	return nil
}

// Get implements RandomAccess.
func (pforDeltaCodec) Get(src []byte, i int) (uint32, error) {
	var t pfdTree
	n, err := pfdLoad(src, &t)
	if err != nil {
		return 0, err
	}
	if i < 0 || i >= n {
		return 0, corrupt(pfdName, "index %d out of range [0,%d)", i, n)
	}
	top := &t[0]
	v := packGet(top.slots, i, top.b)
	if top.e == 0 {
		return v, nil
	}
	k, r := i/pfdSub, i%pfdSub
	sbLen := min(pfdSub, n-k*pfdSub)
	lo, hi, err := top.exRange(k, sbLen)
	if err != nil || lo == hi {
		return v, err
	}
	gs := pfdIterOf(&t, 2)
	if err := gs.seek(lo); err != nil {
		return 0, err
	}
	prev := -1
	for c := lo; c < hi; c++ {
		g, err := gs.next()
		if err != nil {
			return 0, err
		}
		if uint64(g) >= uint64(sbLen-1-prev) {
			return 0, corrupt(pfdName, "exception %d: position gap %d past sub-block end", c, g)
		}
		prev += 1 + int(g)
		if prev < r {
			continue
		}
		if prev > r {
			break
		}
		hs := pfdIterOf(&t, 1)
		if err := hs.seek(c); err != nil {
			return 0, err
		}
		h, err := hs.next()
		if err != nil {
			return 0, err
		}
		if h == 0 || uint64(h) >= uint64(1)<<(32-top.b) {
			return 0, corrupt(pfdName, "exception %d: high part %d out of range [1,2^%d)", c, h, 32-top.b)
		}
		return v | h<<top.b, nil
	}
	return v, nil
}

// pfdIter (for Get) streams the values of a level-1 PATCHED array (t[node]),
// patching its exceptions from its two FLAT children, without a buffer.
type pfdIter struct {
	a, h, g *pfdPart
	lim     uint64 // 2^(32-b): bound on high parts
	j       int    // index of the next value
	c       int    // index of the next exception
	cEnd    int    // end of the current sub-block's exceptions
	sbStart int    // first index of the current sub-block
	sbLen   int    // its length
	prev    int    // relative position of the last exception reached, or -1
	exc     int    // absolute index of exception c, or -1 if c == cEnd
}

// pfdIterOf returns an iterator over t[node] (node 1 or 2). It returns the
// iterator by value: stored through a pointer, the pointers into t would make
// t escape to the heap.
func pfdIterOf(t *pfdTree, node int) pfdIter {
	it := pfdIter{a: &t[node], h: &t[2*node+1], g: &t[2*node+2], exc: -1}
	if it.a.b < 32 {
		it.lim = uint64(1) << (32 - it.a.b)
	}
	return it
}

// enter moves the iterator to the start of the sub-block of value j: its
// exception cursor to the sub-block's first exception. (When next crosses
// into a sub-block, the cursor is already there: the previous sub-block's
// exceptions all lie at positions below its length and were all consumed,
// and its range ends where this one's begins.)
func (it *pfdIter) enter(j int) error {
	k := j / pfdSub
	it.sbStart = k * pfdSub
	it.sbLen = min(pfdSub, it.a.m-it.sbStart)
	lo, hi, err := it.a.exRange(k, it.sbLen)
	if err != nil {
		return err
	}
	it.c, it.cEnd, it.prev = lo, hi, -1
	return it.locate()
}

// locate sets exc to the position of exception c.
func (it *pfdIter) locate() error {
	if it.c >= it.cEnd {
		it.exc = -1
		return nil
	}
	g := packGet(it.g.slots, it.c, it.g.b)
	if uint64(g) >= uint64(it.sbLen-1-it.prev) {
		return corrupt(pfdName, "level 1 exception %d: position gap %d past sub-block end", it.c, g)
	}
	it.prev += 1 + int(g)
	it.exc = it.sbStart + it.prev
	return nil
}

// seek positions the iterator so that next returns value j0 (0 <= j0 < m).
func (it *pfdIter) seek(j0 int) error {
	if j0 < 0 || j0 >= it.a.m {
		return corrupt(pfdName, "level 1 index %d out of range [0,%d)", j0, it.a.m)
	}
	it.j = j0
	if err := it.enter(j0); err != nil {
		return err
	}
	for it.exc >= 0 && it.exc < j0 {
		it.c++
		if err := it.locate(); err != nil {
			return err
		}
	}
	return nil
}

// next returns the next value.
func (it *pfdIter) next() (uint32, error) {
	a := it.a
	if it.j >= a.m {
		return 0, corrupt(pfdName, "level 1 array of %d values overrun", a.m)
	}
	if it.j%pfdSub == 0 && it.j != it.sbStart || it.j == 0 && it.sbLen == 0 {
		if err := it.enter(it.j); err != nil {
			return 0, err
		}
	}
	v := packGet(a.slots, it.j, a.b)
	if it.j == it.exc {
		h := packGet(it.h.slots, it.c, it.h.b)
		if h == 0 || uint64(h) >= it.lim {
			return 0, corrupt(pfdName, "level 1 exception %d: high part %d out of range [1,2^%d)", it.c, h, 32-a.b)
		}
		v |= h << a.b
		it.c++
		if err := it.locate(); err != nil {
			return 0, err
		}
	}
	it.j++
	return v, nil
}

// ---- Varint fields shared by pfordelta, parapfor and eliasfano ----

// uvField reads a minimal uvarint of at most max at src[p:] and returns it
// and the offset after it; ok is false if it is missing, truncated,
// non-minimal or too large.
func uvField(src []byte, p int, max uint64) (v uint64, q int, ok bool) {
	if p < 0 || p >= len(src) {
		return 0, 0, false
	}
	v, k := binary.Uvarint(src[p:])
	if k <= 0 || (k > 1 && src[p+k-1] == 0) || v > max {
		return 0, 0, false
	}
	return v, p + k, true
}

// uvarintLen is the length of the uvarint of v.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }
