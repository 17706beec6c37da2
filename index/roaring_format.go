package index

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Reading a roaring bitmap from its portable serialization, independently
// of the roaring library's version.
//
// The format is the one every roaring implementation reads and writes
// (RoaringFormatSpec, "Standard 32-bit Roaring Bitmap"): a cookie, then
//
//   - cookie 12346 (no run containers): a uint32 container count n;
//   - cookie 12347 | (n-1)<<16: a bitset of ceil(n/8) bytes, bit i set when
//     container i is a run container;
//
// then n pairs (uint16 key, uint16 cardinality-1), then, unless the cookie is
// 12347 and n < 4, n uint32 byte offsets of the containers from the start,
// then the containers in key order: a run container is a uint16 run count
// and that many (uint16 start, uint16 length-1) pairs; any other container
// is an array of cardinality uint16 values when the cardinality is at most
// 4096, else a bitset of 1024 uint64 words. All integers are little-endian.
//
// Which container a writer picks for a given set is not part of the format:
// roaring v1 and v2 choose differently after RunOptimize, and an index
// written by either must open under the other. So the reader accepts every
// valid encoding and checks what the values depend on instead of the bytes
// of one library's re-encoding: keys strictly increasing, every container's
// values strictly increasing and as many as its header says (no empty
// container), runs in order, not overlapping and inside the container's
// 2^16 range, offsets pointing at the containers, and no byte left over.

const (
	roaringCookieNoRuns = 12346
	roaringCookieRuns   = 12347
	roaringNoOffsetMax  = 4    // with run containers, offsets only from 4 containers on
	roaringArrayMax     = 4096 // largest array container
	roaringBitsetBytes  = 8192 // a bitset container: 2^16 bits
)

// roaringHeader is the parsed header of a serialized bitmap.
type roaringHeader struct {
	n       int    // containers
	runs    []byte // run-container bitset (nil without run containers)
	desc    []byte // n (key, cardinality-1) pairs
	offsets []byte // n uint32 offsets, or nil
	pos     int    // where the first container starts
	card    uint64 // sum of the containers' cardinalities
}

// parseRoaringHeader reads the cookie, the run bitset, the descriptive
// header and the offset header of data.
func parseRoaringHeader(data []byte) (h roaringHeader, err error) {
	le := binary.LittleEndian
	if len(data) < 4 {
		return h, fmt.Errorf("%d bytes, no cookie", len(data))
	}
	cookie := le.Uint32(data)
	h.pos = 4
	switch {
	case cookie == roaringCookieNoRuns:
		if len(data) < 8 {
			return h, fmt.Errorf("no container count")
		}
		n := le.Uint32(data[4:])
		if n > 1<<16 {
			return h, fmt.Errorf("%d containers (at most 65536)", n)
		}
		h.n, h.pos = int(n), 8
	case cookie&0xffff == roaringCookieRuns:
		h.n = int(cookie>>16) + 1
		nb := (h.n + 7) / 8
		if len(data) < h.pos+nb {
			return h, fmt.Errorf("run bitset truncated")
		}
		h.runs, h.pos = data[h.pos:h.pos+nb], h.pos+nb
	default:
		return h, fmt.Errorf("cookie %#x is not a roaring bitmap's", cookie)
	}
	if len(data) < h.pos+4*h.n {
		return h, fmt.Errorf("descriptive header of %d containers truncated", h.n)
	}
	h.desc, h.pos = data[h.pos:h.pos+4*h.n], h.pos+4*h.n
	if h.runs == nil || h.n >= roaringNoOffsetMax {
		if len(data) < h.pos+4*h.n {
			return h, fmt.Errorf("offset header of %d containers truncated", h.n)
		}
		h.offsets, h.pos = data[h.pos:h.pos+4*h.n], h.pos+4*h.n
	}
	for i := 0; i < h.n; i++ {
		if i > 0 && le.Uint16(h.desc[4*i:]) <= le.Uint16(h.desc[4*i-4:]) {
			return h, fmt.Errorf("container %d: key %d not after %d", i, le.Uint16(h.desc[4*i:]), le.Uint16(h.desc[4*i-4:]))
		}
		h.card += uint64(le.Uint16(h.desc[4*i+2:])) + 1
	}
	return h, nil
}

// isRun reports whether container i is a run container.
func (h *roaringHeader) isRun(i int) bool { return h.runs != nil && h.runs[i/8]&(1<<(i%8)) != 0 }

// decodeRoaring appends the values of the serialized bitmap data to dst in
// increasing order, after checking the whole encoding (see above). A bitmap
// of more than maxCard values is rejected before any value is decoded (a
// 4-byte run can stand for 65536 values: the caller's bound, the list's df,
// keeps a damaged header from allocating).
func decodeRoaring(dst []uint32, data []byte, maxCard int) ([]uint32, error) {
	h, err := parseRoaringHeader(data)
	if err != nil {
		return dst, err
	}
	if h.card > uint64(maxCard) {
		return dst, fmt.Errorf("cardinality %d, more than %d", h.card, maxCard)
	}
	le := binary.LittleEndian
	pos := h.pos
	for i := 0; i < h.n; i++ {
		if h.offsets != nil && le.Uint32(h.offsets[4*i:]) != uint32(pos) {
			return dst, fmt.Errorf("container %d at byte %d, the offset header says %d", i, pos, le.Uint32(h.offsets[4*i:]))
		}
		key := uint32(le.Uint16(h.desc[4*i:])) << 16
		card := int(le.Uint16(h.desc[4*i+2:])) + 1
		start := len(dst)
		var used int
		switch {
		case h.isRun(i):
			dst, used, err = decodeRunContainer(dst, data[pos:], key)
		case card <= roaringArrayMax:
			dst, used, err = decodeArrayContainer(dst, data[pos:], key, card)
		default:
			dst, used, err = decodeBitsetContainer(dst, data[pos:], key)
		}
		if err != nil {
			return dst, fmt.Errorf("container %d (key %d): %v", i, key>>16, err)
		}
		if got := len(dst) - start; got != card {
			return dst, fmt.Errorf("container %d (key %d): %d values, the header says %d", i, key>>16, got, card)
		}
		pos += used
	}
	if pos != len(data) {
		return dst, fmt.Errorf("%d bytes after the last container", len(data)-pos)
	}
	return dst, nil
}

// decodeRunContainer appends a run container's values; runs must be in
// increasing order, not overlapping, and end below 2^16. It stops at the
// first bad run (so at most 65536 values are appended).
func decodeRunContainer(dst []uint32, b []byte, key uint32) ([]uint32, int, error) {
	le := binary.LittleEndian
	if len(b) < 2 {
		return dst, 0, fmt.Errorf("run count truncated")
	}
	nr := int(le.Uint16(b))
	if nr == 0 {
		return dst, 0, fmt.Errorf("empty run container")
	}
	if len(b) < 2+4*nr {
		return dst, 0, fmt.Errorf("%d runs truncated", nr)
	}
	next := 0 // the smallest value the next run may start at
	for r := 0; r < nr; r++ {
		s, l := int(le.Uint16(b[2+4*r:])), int(le.Uint16(b[4+4*r:]))
		if s < next || s+l > 0xffff {
			return dst, 0, fmt.Errorf("run %d [%d, %d] overlaps the previous run or leaves the container", r, s, s+l)
		}
		for v := s; v <= s+l; v++ {
			dst = append(dst, key|uint32(v))
		}
		next = s + l + 1
	}
	return dst, 2 + 4*nr, nil
}

// decodeArrayContainer appends an array container's card values, which
// must be strictly increasing.
func decodeArrayContainer(dst []uint32, b []byte, key uint32, card int) ([]uint32, int, error) {
	le := binary.LittleEndian
	if len(b) < 2*card {
		return dst, 0, fmt.Errorf("array of %d values truncated", card)
	}
	for j := 0; j < card; j++ {
		v := le.Uint16(b[2*j:])
		if j > 0 && v <= le.Uint16(b[2*j-2:]) {
			return dst, 0, fmt.Errorf("array value %d not after %d", v, le.Uint16(b[2*j-2:]))
		}
		dst = append(dst, key|uint32(v))
	}
	return dst, 2 * card, nil
}

// decodeBitsetContainer appends the set bits of a bitset container.
func decodeBitsetContainer(dst []uint32, b []byte, key uint32) ([]uint32, int, error) {
	if len(b) < roaringBitsetBytes {
		return dst, 0, fmt.Errorf("bitset truncated (%d of %d bytes)", len(b), roaringBitsetBytes)
	}
	for w := 0; w < roaringBitsetBytes/8; w++ {
		for x := binary.LittleEndian.Uint64(b[8*w:]); x != 0; x &= x - 1 {
			dst = append(dst, key|uint32(64*w+bits.TrailingZeros64(x)))
		}
	}
	return dst, roaringBitsetBytes, nil
}
