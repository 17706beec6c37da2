package compress

import (
	"encoding/binary"
	"math/bits"
)

// ParaPFor ("Parallel PFor") of Ao, Zhang, Wu, Stones, Wang, Liu, Liu & Lin,
// "Efficient parallel lists intersection and index compression algorithms
// using graphics processing units", PVLDB 4(8), 2011, §5.1 and Appendix D.
// PFor (Zukowski et al.) chains the exceptions of a segment through their
// slots as a linked list, which a GPU must walk serially; ParaPFor instead
// stores, per segment of s values,
//
//   - l_j: the low b bits of EVERY value g_j (exceptions included), in
//     b-bit slots;
//   - i_x: the index in the segment of the x-th exception, in ib-bit fields;
//   - h_x: the x-th exception's overflow g_{i_x} >> b, in hb-bit fields;
//   - a header holding b, ib, hb and en (the number of exceptions),
//
// so that (Appendix D.2, Algorithm 2) thread j writes l_j to shared memory,
// and, after a barrier, the first en threads each read one i_x and h_x and
// patch g_{i_x} |= h_x << b, all in parallel.
//
// Parameters. Ao et al. take s = the number of threads of a GPU block; qp
// uses s = 128 (a 128-thread block per segment, and one segment per block of
// qp's index at its default block size). Ao et al. pick b per segment "such
// that most integers in a (e.g. 90%) are less than 2^b" and tune the
// proportion of exceptions; qp picks, per segment, the b in 0..32 that
// minimises the segment's byte size (ties to the larger b, i.e. fewer
// exceptions). Appendix D gives ib = ceil(log(max i_x)) and hb =
// ceil(log(max g_{i_x})) - b; those undercount by one bit when the maximum is
// a power of two, so qp uses the bit lengths ib = bitlen(max i_x) and
// hb = bitlen(max h_x) (bitlen(v) = floor(log2 v) + 1, bitlen(0) = 0).
//
// Segment headers come first, all together, so that segment k's body offset
// is a prefix sum of body sizes computed from the headers alone: on a GPU,
// one thread per header computes a size and a block-wide exclusive scan
// gives every thread block its segment, with no stored offset table.
//
// Format (ID IDParaPFor, name "parapfor", kind General). Bit strings are
// LSB-first: bit k of a string is bit k%8 of its byte k/8, i.e. a field at
// bit offset o of width w is bits [o, o+w) of the string read as
// little-endian words.
//
//	uvarint(n)                 number of values (minimal); nothing follows if 0
//	S = ceil(n/128) headers, 4 bytes each; segment k holds values
//	[128k, 128k+s_k), s_k = min(128, n-128k):
//	  byte b                   slot width, 0..32
//	  byte ib                  exception index width, 0..7
//	  byte hb                  overflow width, 0..32-b
//	  byte en                  number of exceptions, 0..s_k
//	S bodies, body k an LSB-first bit string of s_k·b + en·(ib+hb) bits,
//	zero-padded to a whole byte:
//	  l_j at bit j·b                 j < s_k: low b bits of value j
//	  i_x at bit s_k·b + x·ib        x < en: strictly increasing, < s_k
//	  h_x at bit s_k·b + en·ib + x·hb  x < en: overflow, >= 1
//
// Value j of segment k is l_j | h_x << b if j = i_x, else l_j. en = 0
// requires ib = hb = 0; en > 0 requires hb >= 1. Decode checks all of it
// (and that no bytes follow the last body); Get reads all headers (S·4
// bytes) and then one slot plus a binary search of the segment's indices.
type paraPForCodec struct{}

func init() { register(paraPForCodec{}) }

const (
	ppfSeg  = 128 // values per segment (s)
	ppfName = "parapfor"
)

func (paraPForCodec) ID() ID       { return IDParaPFor }
func (paraPForCodec) Name() string { return ppfName }
func (paraPForCodec) Kind() Kind   { return General }

// ppfHdr is a parsed segment header.
type ppfHdr struct {
	b, ib, hb uint
	en        int
}

// size is the byte size of the body of a segment of sk values.
func (h ppfHdr) size(sk int) int {
	return int((uint64(sk)*uint64(h.b) + uint64(h.en)*uint64(h.ib+h.hb) + 7) / 8)
}

// AppendEncode implements Codec.
func (paraPForCodec) AppendEncode(dst []byte, vals []uint32) []byte {
	if uint64(len(vals)) > 1<<31-1 {
		panic("BUG: parapfor: more than 2^31-1 values")
	}
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	nseg := (len(vals) + ppfSeg - 1) / ppfSeg
	hdrs := make([]ppfHdr, nseg)
	for k := range hdrs {
		seg := vals[k*ppfSeg : min(len(vals), (k+1)*ppfSeg)]
		h := ppfChoose(seg)
		hdrs[k] = h
		dst = append(dst, byte(h.b), byte(h.ib), byte(h.hb), byte(h.en))
	}
	for k, h := range hdrs {
		seg := vals[k*ppfSeg : min(len(vals), (k+1)*ppfSeg)]
		w := packWriter{dst: dst}
		for _, v := range seg {
			w.put(v, h.b)
		}
		if h.en > 0 {
			for j, v := range seg {
				if v>>h.b != 0 {
					w.put(uint32(j), h.ib)
				}
			}
			for _, v := range seg {
				if v>>h.b != 0 {
					w.put(v>>h.b, h.hb)
				}
			}
		}
		dst = w.flush()
	}
	return dst
}

// ppfChoose returns the header of the smallest body for seg.
func ppfChoose(seg []uint32) ppfHdr {
	mb := packWidth(seg)
	best := ppfHdr{b: mb}
	bestSize := best.size(len(seg))
	for b := uint(0); b < mb; b++ {
		h := ppfHdr{b: b}
		var maxIdx int
		var or uint32
		for j, v := range seg {
			if v>>b != 0 {
				h.en++
				maxIdx = j
				or |= v >> b
			}
		}
		h.ib = uint(bits.Len(uint(maxIdx)))
		h.hb = uint(bits.Len32(or))
		if sz := h.size(len(seg)); sz < bestSize || sz == bestSize && b > best.b {
			best, bestSize = h, sz
		}
	}
	return best
}

// ppfCount reads the count and checks that the headers are present; it
// returns n, the number of segments and the offset of the first header.
func ppfCount(src []byte) (n, nseg, p int, err error) {
	c, p, ok := uvField(src, 0, 1<<31-1)
	if !ok {
		return 0, 0, 0, corrupt(ppfName, "bad or missing count")
	}
	n = int(c)
	nseg = (n + ppfSeg - 1) / ppfSeg
	if uint64(nseg)*4 > uint64(len(src)-p) {
		return 0, 0, 0, corrupt(ppfName, "%d values need %d header bytes, %d left", n, 4*nseg, len(src)-p)
	}
	return n, nseg, p, nil
}

// ppfHeader parses and checks the header of segment k (sk values) at hdr.
func ppfHeader(hdr []byte, k, sk int) (ppfHdr, error) {
	h := ppfHdr{b: uint(hdr[0]), ib: uint(hdr[1]), hb: uint(hdr[2]), en: int(hdr[3])}
	switch {
	case h.b > 32:
		return h, corrupt(ppfName, "segment %d: bit width %d > 32", k, h.b)
	case h.ib > 7:
		return h, corrupt(ppfName, "segment %d: index width %d > 7", k, h.ib)
	case h.en > sk:
		return h, corrupt(ppfName, "segment %d: %d exceptions in %d values", k, h.en, sk)
	case h.en == 0 && (h.ib != 0 || h.hb != 0):
		return h, corrupt(ppfName, "segment %d: widths without exceptions", k)
	case h.en > 0 && (h.hb == 0 || h.b+h.hb > 32):
		return h, corrupt(ppfName, "segment %d: overflow width %d at bit width %d", k, h.hb, h.b)
	}
	return h, nil
}

// ppfLayout checks all headers and returns the offset of the first body;
// the bodies must end exactly at len(src).
func ppfLayout(src []byte, n, nseg, p int) (int, error) {
	body := p + 4*nseg
	q := body
	for k := 0; k < nseg; k++ {
		sk := min(ppfSeg, n-k*ppfSeg)
		h, err := ppfHeader(src[p+4*k:], k, sk)
		if err != nil {
			return 0, err
		}
		q += h.size(sk)
		if q > len(src) {
			return 0, corrupt(ppfName, "segment %d: body truncated", k)
		}
	}
	if q != len(src) {
		return 0, corrupt(ppfName, "%d trailing bytes after %d values", len(src)-q, n)
	}
	return body, nil
}

// Count implements Codec.
func (paraPForCodec) Count(src []byte) (int, error) {
	n, _, _, err := ppfCount(src)
	return n, err
}

// Decode implements Codec: Algorithm 2 of Ao et al., one segment at a time.
func (paraPForCodec) Decode(out []uint32, src []byte) (int, error) {
	n, nseg, p, err := ppfCount(src)
	if err != nil {
		return 0, err
	}
	q, err := ppfLayout(src, n, nseg, p)
	if err != nil {
		return 0, err
	}
	if n > len(out) {
		return 0, ErrShortBuffer
	}
	for k := 0; k < nseg; k++ {
		sk := min(ppfSeg, n-k*ppfSeg)
		h, _ := ppfHeader(src[p+4*k:], k, sk) // checked by ppfLayout
		sz := h.size(sk)
		body := src[q : q+sz]
		q += sz
		nbits := uint64(sk)*uint64(h.b) + uint64(h.en)*uint64(h.ib+h.hb)
		if !packPadZero(body, nbits) {
			return 0, corrupt(ppfName, "segment %d: nonzero padding bits", k)
		}
		seg := out[k*ppfSeg : k*ppfSeg+sk]
		// Stage 1: every slot.
		packUnpack(seg, body, h.b)
		// Stages 2 and 3: the exceptions.
		io := uint64(sk) * uint64(h.b)
		ho := io + uint64(h.en)*uint64(h.ib)
		prev := -1
		for x := 0; x < h.en; x++ {
			idx := int(packField(body, io+uint64(x)*uint64(h.ib), h.ib))
			hi := packField(body, ho+uint64(x)*uint64(h.hb), h.hb)
			if idx <= prev || idx >= sk {
				return 0, corrupt(ppfName, "segment %d: exception %d at index %d (previous %d, length %d)", k, x, idx, prev, sk)
			}
			if hi == 0 {
				return 0, corrupt(ppfName, "segment %d: exception %d has zero overflow", k, x)
			}
			seg[idx] |= hi << h.b
			prev = idx
		}
	}
	return n, nil
}

// Get implements RandomAccess: the slot of value i, patched with its
// overflow if a binary search finds i among its segment's exception indices.
func (paraPForCodec) Get(src []byte, i int) (uint32, error) {
	n, nseg, p, err := ppfCount(src)
	if err != nil {
		return 0, err
	}
	if i < 0 || i >= n {
		return 0, corrupt(ppfName, "index %d out of range [0,%d)", i, n)
	}
	q, err := ppfLayout(src, n, nseg, p)
	if err != nil {
		return 0, err
	}
	k := i / ppfSeg
	for kk := 0; kk < k; kk++ {
		h, _ := ppfHeader(src[p+4*kk:], kk, ppfSeg) // checked by ppfLayout
		q += h.size(ppfSeg)
	}
	sk := min(ppfSeg, n-k*ppfSeg)
	h, _ := ppfHeader(src[p+4*k:], k, sk)
	body := src[q : q+h.size(sk)]
	r := i - k*ppfSeg
	v := packGet(body, r, h.b)
	io := uint64(sk) * uint64(h.b)
	lo, hi := 0, h.en // binary search for r in i_0 < i_1 < ... < i_{en-1}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if int(packField(body, io+uint64(mid)*uint64(h.ib), h.ib)) < r {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < h.en && int(packField(body, io+uint64(lo)*uint64(h.ib), h.ib)) == r {
		ho := io + uint64(h.en)*uint64(h.ib)
		over := packField(body, ho+uint64(lo)*uint64(h.hb), h.hb)
		if over == 0 {
			return 0, corrupt(ppfName, "segment %d: exception %d has zero overflow", k, lo)
		}
		v |= over << h.b
	}
	return v, nil
}
