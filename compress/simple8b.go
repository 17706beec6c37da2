package compress

import (
	"encoding/binary"
	"math/bits"
)

// Simple8b (Anh & Moffat, "Index compression using 64-bit words", Software:
// Practice & Experience 40(2), 2010; the "Simple" family of Mallia's GPU
// integer-encoding proposal) packs as many values as fit into each 64-bit
// word: a 4-bit selector picks one of 16 (count × width) layouts of the 60
// payload bits.
//
// Format (ID IDSimple8b, name "simple8b", kind General):
//
//	uvarint(n)          number of values
//	words               64-bit little-endian words, each:
//	  bits 60..63       selector s
//	  bits 0..59        N[s] values of W[s] bits, value k at bits
//	                    [k·W[s], (k+1)·W[s]); unused high payload bits are 0
//
//	s    0   1   2  3  4  5  6  7  8  9 10 11 12 13 14 15
//	N  240 120  60 30 20 15 12 10  8  7  6  5  4  3  2  1
//	W    0   0   1  2  3  4  5  6  7  8 10 12 15 20 30 60
//
// Selectors 0 and 1 are runs of 240 and 120 zeros with an all-zero payload:
// the index codes d-gaps and tf minus one, so zeros are common (Anh & Moffat
// code raw d-gaps, whose runs are of ones). A word never
// holds more values than remain: the encoder picks, greedily, the selector
// with the most values among those whose N[s] values all fit and with N[s]
// <= the number of values left (selector 15 always qualifies), so the last
// word is as full as its selector says. The decoder rejects (ErrCorrupt) a
// word whose N[s] exceeds the values left, nonzero unused bits, a selector-15
// value above 2^32-1, truncation, and trailing bytes after the n-th value.
type simple8bCodec struct{}

func init() { register(simple8bCodec{}) }

var (
	s8bN = [16]int{240, 120, 60, 30, 20, 15, 12, 10, 8, 7, 6, 5, 4, 3, 2, 1}
	s8bW = [16]uint{0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 30, 60}
)

func (simple8bCodec) ID() ID       { return IDSimple8b }
func (simple8bCodec) Name() string { return "simple8b" }
func (simple8bCodec) Kind() Kind   { return General }

// AppendEncode implements Codec.
func (simple8bCodec) AppendEncode(dst []byte, vals []uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	var width [60]uint8 // width[k] = bit width of max(vals[0..k])
	for len(vals) > 0 {
		zeros := 0
		for zeros < 240 && zeros < len(vals) && vals[zeros] == 0 {
			zeros++
		}
		var s int
		switch {
		case zeros == 240:
			s = 0
		case zeros >= 120:
			s = 1
		default:
			m := min(len(vals), 60)
			w := uint8(0)
			for k, v := range vals[:m] {
				w = max(w, uint8(bits.Len32(v)))
				width[k] = w
			}
			for s = 2; s < 15; s++ {
				if n := s8bN[s]; n <= m && uint(width[n-1]) <= s8bW[s] {
					break
				}
			}
		}
		n, w := s8bN[s], s8bW[s]
		word := uint64(s) << 60
		if w > 0 {
			for k, v := range vals[:n] {
				word |= uint64(v) << (uint(k) * w)
			}
		}
		dst = binary.LittleEndian.AppendUint64(dst, word)
		vals = vals[n:]
	}
	return dst
}

// Count implements Codec.
func (simple8bCodec) Count(src []byte) (int, error) {
	n, _, err := s8bHeader(src)
	return n, err
}

// s8bHeader reads the count and checks that the rest of src is whole words
// that could hold that many values.
func s8bHeader(src []byte) (n, p int, err error) {
	// At most 240 values per 8 bytes: 30 per byte bounds the count.
	n, p, err = vbCount("simple8b", src, 30)
	if err != nil {
		return 0, 0, err
	}
	if r := len(src) - p; r%8 != 0 {
		return 0, 0, corrupt("simple8b", "%d bytes after the count is not a whole number of words", r)
	} else if n > r/8*240 {
		return 0, 0, corrupt("simple8b", "count %d too large for %d words", n, r/8)
	}
	return n, p, nil
}

// Decode implements Codec.
func (simple8bCodec) Decode(out []uint32, src []byte) (int, error) {
	n, p, err := s8bHeader(src)
	if err != nil {
		return 0, err
	}
	if n > len(out) {
		return 0, ErrShortBuffer
	}
	out = out[:n]
	j := 0
	for ; p+8 <= len(src) && j < n; p += 8 {
		w := binary.LittleEndian.Uint64(src[p:])
		s := w >> 60
		cnt := s8bN[s]
		if cnt > n-j {
			return 0, corrupt("simple8b", "word at byte %d holds %d values, %d left", p, cnt, n-j)
		}
		if w<<4>>4>>(uint(cnt)*s8bW[s]) != 0 {
			return 0, corrupt("simple8b", "word at byte %d: nonzero unused bits", p)
		}
		o := out[j : j+cnt : j+cnt]
		// One case per selector, with its width and mask as constants and
		// the short ones unrolled, on purpose: one loop over s8bW[s]
		// (variable shifts) made BenchmarkDecode 11-24% slower, and
		// packUnpack (bitpack.go) works on byte strings of widths <= 32,
		// not on one 64-bit word with a selector and widths up to 60.
		switch s {
		case 0, 1:
			clear(o)
		case 2:
			o = o[:60]
			for k := range o {
				o[k] = uint32(w>>uint(k)) & 1
			}
		case 3:
			o = o[:30]
			for k := range o {
				o[k] = uint32(w>>(2*uint(k))) & 3
			}
		case 4:
			o = o[:20]
			for k := range o {
				o[k] = uint32(w>>(3*uint(k))) & 7
			}
		case 5:
			o = o[:15]
			for k := range o {
				o[k] = uint32(w>>(4*uint(k))) & 15
			}
		case 6:
			o = o[:12]
			for k := range o {
				o[k] = uint32(w>>(5*uint(k))) & 31
			}
		case 7:
			o = o[:10]
			for k := range o {
				o[k] = uint32(w>>(6*uint(k))) & 63
			}
		case 8:
			o = o[:8]
			o[0] = uint32(w) & 127
			o[1] = uint32(w>>7) & 127
			o[2] = uint32(w>>14) & 127
			o[3] = uint32(w>>21) & 127
			o[4] = uint32(w>>28) & 127
			o[5] = uint32(w>>35) & 127
			o[6] = uint32(w>>42) & 127
			o[7] = uint32(w>>49) & 127
		case 9:
			o = o[:7]
			o[0] = uint32(w) & 255
			o[1] = uint32(w>>8) & 255
			o[2] = uint32(w>>16) & 255
			o[3] = uint32(w>>24) & 255
			o[4] = uint32(w>>32) & 255
			o[5] = uint32(w>>40) & 255
			o[6] = uint32(w>>48) & 255
		case 10:
			o = o[:6]
			o[0] = uint32(w) & 1023
			o[1] = uint32(w>>10) & 1023
			o[2] = uint32(w>>20) & 1023
			o[3] = uint32(w>>30) & 1023
			o[4] = uint32(w>>40) & 1023
			o[5] = uint32(w>>50) & 1023
		case 11:
			o = o[:5]
			o[0] = uint32(w) & 4095
			o[1] = uint32(w>>12) & 4095
			o[2] = uint32(w>>24) & 4095
			o[3] = uint32(w>>36) & 4095
			o[4] = uint32(w>>48) & 4095
		case 12:
			o = o[:4]
			o[0] = uint32(w) & 32767
			o[1] = uint32(w>>15) & 32767
			o[2] = uint32(w>>30) & 32767
			o[3] = uint32(w>>45) & 32767
		case 13:
			o = o[:3]
			o[0] = uint32(w) & (1<<20 - 1)
			o[1] = uint32(w>>20) & (1<<20 - 1)
			o[2] = uint32(w>>40) & (1<<20 - 1)
		case 14:
			o = o[:2]
			o[0] = uint32(w) & (1<<30 - 1)
			o[1] = uint32(w>>30) & (1<<30 - 1)
		case 15:
			if w<<4>>36 != 0 {
				return 0, corrupt("simple8b", "word at byte %d: value above 32 bits", p)
			}
			o[0] = uint32(w)
		}
		j += cnt
	}
	if j != n {
		return 0, corrupt("simple8b", "words hold %d values, count is %d", j, n)
	}
	if p != len(src) {
		return 0, corrupt("simple8b", "%d trailing bytes after %d values", len(src)-p, n)
	}
	return n, nil
}
