package compress

import (
	"encoding/binary"
	"math/bits"
)

// HS-LRC combines Hash Segmentation (Ao et al., VLDB'11 §4.4) with Linear
// Regression Compression (§5.2): "While compressing, we apply LRC to the hash
// buckets ... During lists intersection, we can locate the segment by the
// docID's hash value, and then we use a local linear regression to narrow the
// search range" (§5.3, "HS.LRC").
//
// Hashing (§4.4): with k the smallest integer such that U <= 2^k, where the
// universe U is taken as max(v)+1 (so k = bits.Len32(max v)), h(x) is the
// leading m of the k binary digits of x, h(x) = ⌊x/2^(k−m)⌋. m is chosen as
// in the paper's HS256: the minimum m with n/256 <= 2^m, capped at k. Bucket
// B_h holds the elements with h(v) = h; there are d = h(max v) + 1 buckets
// (1 <= d <= 2^m), and d+1 pointers: ptr[h] is the index of the first
// element of B_h, or of the next non-empty bucket when B_h is empty. Each
// non-empty bucket is one LRC piece with its own least-squares line (model,
// fit, packing and safe range in lrcfit.go).
//
// Format (ID IDHSLRC, name "hslrc", kind Sorted; integers little-endian):
//
//	offset       size    field
//	0            4       n      uint32, number of values, <= 2^31−1
//	                            (n = 0: the encoding is these 4 bytes)
//	4            4       sh     uint32, k − m, 0..32: h(x) = x >> sh, computed
//	                            on a 64-bit x (sh may be 32)
//	8            4       d      uint32, number of buckets, 1 <= d <= n,
//	                            (d−1)·2^sh <= 2^32−1
//	12           4(d+1)  ptr    uint32 ptr[0..d]: ptr[0] = 0, ptr[d] = n,
//	                            non-decreasing, ptr[d−1] < n
//	16+4d        0 or 4  zero padding to T = (16 + 4d + 7) &^ 7
//	T + 24h      24      bucket header h (0 <= h < d):
//	                       +0  slope  uint64, bucket α in Q32.32
//	                       +8  base   int64, bucket β − M, |base| <= 2^32−1
//	                       +16 span   uint32, max slot; w_h = bits.Len32(span)
//	                       +20 off    uint32, Σ_{g<h} ⌈|B_g|·w_g/32⌉: the
//	                                  bucket's slots start at word off of the
//	                                  slot area (4-byte aligned)
//	                     (an empty bucket has slope = base = span = 0)
//	S = T + 24d          slot area: bucket h's |B_h| = ptr[h+1] − ptr[h] slots
//	                     of w_h bits at byte S + 4·off_h, padded with zero bits
//	                     to a whole 32-bit word; the last bucket's words end
//	                     the encoding.
//
//	v[ptr[h] + j] = base_h + ⌊slope_h·j/2^32⌋ + slot_h(j),  slot_h(j) <= span_h,
//	and every value of B_h satisfies v >> sh = h.
//
// Decoders check n, sh, d, ptr[0], ptr[d] and the exact length (O(1), from
// the last bucket); Get additionally the bucket it reads (its pointers, line
// and slot words); Decode everything: pointers, offsets, every value
// (range, order, slot <= span, hash), empty buckets zeroed.
//
// Search(from, x): h = x >> sh; if h >= d no element is >= x. Otherwise the
// first element >= x lies in [ptr[h], ptr[h+1]] (elements before B_h hash
// lower, elements after it hash higher), and the bucket's safe range
// contracts that interval before a binary search. Get(i) finds the bucket of
// index i by a binary search of ptr (O(log d)): HS-LRC is built for search by
// value, not by position.
//
// Deviations from the paper: the slots are fixed-width without ParaPFor
// exceptions (as §5.3 Algorithm 1 assumes); lines are exact integers with
// slopes clamped to [0, chord]; U is max(v)+1 of the encoded array (the
// index feeds docID − block base), so k adapts to the array; the bucket
// table stores one line per bucket next to the d+1 pointers of §4.4.
type hsLRCCodec struct{}

func init() { register(hsLRCCodec{}) }

const (
	// hsDiv is the 256 of HS256: m is the minimum with n/256 <= 2^m.
	hsDiv    = 256
	hsHdrLen = 24
)

func (hsLRCCodec) ID() ID       { return IDHSLRC }
func (hsLRCCodec) Name() string { return "hslrc" }
func (hsLRCCodec) Kind() Kind   { return Sorted }

// hsTableOff returns T, the 8-aligned offset of the bucket table.
func hsTableOff(d int) int { return (16 + 4*d + 7) &^ 7 }

// hsWords is the number of 32-bit words holding n slots of w bits.
func hsWords(n int, w uint) int { return (n*int(w) + 31) >> 5 }

// AppendEncode implements Codec. It panics if vals is not non-decreasing.
func (hsLRCCodec) AppendEncode(dst []byte, vals []uint32) []byte {
	const name = "hslrc"
	lrcCheckSorted(name, vals)
	n := len(vals)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	if n == 0 {
		return dst
	}
	vmax := vals[n-1]
	k := bits.Len32(vmax)
	m := 0
	for m < k && n > hsDiv<<m {
		m++
	}
	sh := uint(k - m)
	d := int(uint64(vmax)>>sh) + 1
	dst = binary.LittleEndian.AppendUint32(dst, uint32(sh))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(d))
	ptrOff := len(dst)
	for h, i := 0, 0; h <= d; h++ {
		for i < n && uint64(vals[i])>>sh < uint64(h) {
			i++
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(i))
	}
	if d%2 == 1 {
		dst = append(dst, 0, 0, 0, 0)
	}
	ptr := func(h int) int { return int(binary.LittleEndian.Uint32(dst[ptrOff+4*h:])) }
	tab := len(dst)
	off := 0
	for h := 0; h < d; h++ {
		a, b := ptr(h), ptr(h+1)
		var l lrcLine
		if a < b {
			l = lrcFit(name, vals[a:b], lrcFitSlope(vals[a:b]), 0)
		}
		dst = binary.LittleEndian.AppendUint64(dst, l.slope)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(l.base))
		dst = binary.LittleEndian.AppendUint32(dst, l.span)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(off))
		off += hsWords(b-a, uint(bits.Len32(l.span)))
	}
	for h := 0; h < d; h++ {
		a, b := ptr(h), ptr(h+1)
		hd := dst[tab+h*hsHdrLen:]
		slope := binary.LittleEndian.Uint64(hd)
		base := int64(binary.LittleEndian.Uint64(hd[8:]))
		w := uint(bits.Len32(binary.LittleEndian.Uint32(hd[16:])))
		start := len(dst)
		dst = lrcAppendSlots(dst, vals[a:b], slope, 0, base, w)
		for (len(dst)-start)%4 != 0 {
			dst = append(dst, 0)
		}
	}
	return dst
}

// hsView is a parsed HS-LRC encoding of n >= 1 values.
type hsView struct {
	n, d int
	sh   uint
	ptrs []byte // d+1 uint32
	tab  []byte // d bucket headers
	area []byte // slot area
}

func (s *hsView) ptr(h int) int { return int(binary.LittleEndian.Uint32(s.ptrs[4*h:])) }

// hsOpen parses the header and checks the exact length; n = 0 returns a
// zero view.
func hsOpen(src []byte) (hsView, error) {
	const name = "hslrc"
	n, err := lrcCount(name, src)
	if err != nil {
		return hsView{}, err
	}
	if n == 0 {
		if len(src) != 4 {
			return hsView{}, corrupt(name, "%d trailing bytes", len(src)-4)
		}
		return hsView{}, nil
	}
	if len(src) < 16 {
		return hsView{}, corrupt(name, "truncated header (%d bytes)", len(src))
	}
	sh := binary.LittleEndian.Uint32(src[4:])
	d64 := binary.LittleEndian.Uint32(src[8:])
	if sh > 32 || d64 < 1 || int64(d64) > int64(n) || (sh == 32 && d64 != 1) ||
		(sh < 32 && uint64(d64-1)<<sh > 1<<32-1) {
		return hsView{}, corrupt(name, "bad hash parameters (sh %d, d %d, n %d)", sh, d64, n)
	}
	d := int(d64)
	T := hsTableOff(d)
	S := T + hsHdrLen*d
	if len(src) < S {
		return hsView{}, corrupt(name, "truncated bucket table (%d bytes, want >= %d)", len(src), S)
	}
	s := hsView{n: n, d: d, sh: uint(sh), ptrs: src[12 : 16+4*d], tab: src[T:S], area: src[S:]}
	last := s.ptr(d - 1)
	if s.ptr(0) != 0 || s.ptr(d) != n || last >= n {
		return hsView{}, corrupt(name, "bad bucket pointers")
	}
	hd := s.tab[(d-1)*hsHdrLen:]
	w := uint(bits.Len32(binary.LittleEndian.Uint32(hd[16:])))
	words := int(binary.LittleEndian.Uint32(hd[20:])) + hsWords(n-last, w)
	if len(s.area) != 4*words {
		return hsView{}, corrupt(name, "length %d, want %d", len(src), S+4*words)
	}
	return s, nil
}

// bucket returns the piece of bucket h; ok is false when its pointers, line
// or slot words are out of range.
func (s *hsView) bucket(h int) (lrcPiece, bool) {
	a, b := s.ptr(h), s.ptr(h+1)
	if a > b || b > s.n {
		return lrcPiece{}, false
	}
	hd := s.tab[h*hsHdrLen:]
	l := lrcLine{
		slope: binary.LittleEndian.Uint64(hd),
		base:  int64(binary.LittleEndian.Uint64(hd[8:])),
		span:  binary.LittleEndian.Uint32(hd[16:]),
	}
	off := 4 * int(binary.LittleEndian.Uint32(hd[20:]))
	if off > len(s.area) {
		return lrcPiece{}, false
	}
	return lrcMakePiece(s.area[off:], l, a, a, b)
}

// get returns v[i], 0 <= i < n: the bucket is the last h with ptr[h] <= i.
func (s *hsView) get(i int) (uint32, error) {
	lo, hi := 1, s.d
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s.ptr(mid) > i {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	p, ok := s.bucket(lo - 1)
	if !ok || i < p.a || i >= p.b {
		return 0, corrupt("hslrc", "bucket %d: header out of range", lo-1)
	}
	v, ok := p.value(i)
	if !ok {
		return 0, corrupt("hslrc", "value %d out of range", i)
	}
	return v, nil
}

// Decode implements Codec.
func (hsLRCCodec) Decode(out []uint32, src []byte) (int, error) {
	const name = "hslrc"
	s, err := hsOpen(src)
	if err != nil || s.n == 0 {
		return 0, err
	}
	if s.n > len(out) {
		return 0, ErrShortBuffer
	}
	prev := int64(0)
	words := 0
	for h := 0; h < s.d; h++ {
		hd := s.tab[h*hsHdrLen:]
		if int(binary.LittleEndian.Uint32(hd[20:])) != words {
			return 0, corrupt(name, "bucket %d: slot offset mismatch", h)
		}
		p, ok := s.bucket(h)
		if !ok {
			return 0, corrupt(name, "bucket %d: header out of range", h)
		}
		if p.a == p.b {
			if p.slope != 0 || p.base != 0 || p.span != 0 {
				return 0, corrupt(name, "bucket %d: empty bucket with a line", h)
			}
			continue
		}
		var bad int
		if prev, bad = p.decode(out[p.a:p.b], prev); bad >= 0 {
			return 0, corrupt(name, "value %d out of range or decreasing", bad)
		}
		if uint64(out[p.a])>>s.sh != uint64(h) || uint64(out[p.b-1])>>s.sh != uint64(h) {
			return 0, corrupt(name, "bucket %d: value of another bucket", h)
		}
		words += hsWords(p.b-p.a, p.w)
	}
	return s.n, nil
}

// Count implements Codec; it checks the header and the length.
func (hsLRCCodec) Count(src []byte) (int, error) {
	s, err := hsOpen(src)
	return s.n, err
}

// Get implements RandomAccess in O(log d).
func (hsLRCCodec) Get(src []byte, i int) (uint32, error) {
	s, err := hsOpen(src)
	if err != nil {
		return 0, err
	}
	if i < 0 || i >= s.n {
		return 0, corrupt("hslrc", "index %d out of range [0, %d)", i, s.n)
	}
	return s.get(i)
}

// Search implements Searcher: the bucket by hash (§4.4), then the bucket's
// safe range and a binary search (§5.3, HS.LRC).
func (hsLRCCodec) Search(src []byte, from int, x uint32) (int, uint32, error) {
	s, err := hsOpen(src)
	if err != nil {
		return 0, 0, err
	}
	from = max(from, 0)
	if from >= s.n {
		return s.n, 0, nil
	}
	h := uint64(x) >> s.sh
	if h >= uint64(s.d) {
		return s.n, 0, nil // x > max v
	}
	p, ok := s.bucket(int(h))
	if !ok {
		return 0, 0, corrupt("hslrc", "bucket %d: header out of range", h)
	}
	i := from
	if from < p.b {
		// The first element >= x lies in [a, b]: those before B_h hash
		// lower, those from b on hash higher.
		if i, ok = p.search(max(from, p.a), p.b, x); !ok {
			return 0, 0, corrupt("hslrc", "corrupt slot while searching")
		}
	}
	if i >= s.n {
		return s.n, 0, nil
	}
	if i < p.b {
		v, ok := p.value(i)
		if !ok {
			return 0, 0, corrupt("hslrc", "value %d out of range", i)
		}
		return i, v, nil
	}
	v, err := s.get(i)
	if err != nil {
		return 0, 0, err
	}
	return i, v, nil
}
