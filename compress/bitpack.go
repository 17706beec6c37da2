package compress

import (
	"encoding/binary"
	"math/bits"
)

// LSB-first bit packing, the one implementation behind every codec that
// stores b-bit values (bp128, rice, pfordelta, parapfor, eliasfano's low
// bits and the slots of the LRC family).
//
// A packed array of m values of b bits (0 <= b <= 32) is a bit string of
// m·b bits, value j at bits [j·b, (j+1)·b), bit k of the string being bit
// k%8 of byte k/8 (so value j is also bits [j·b, (j+1)·b) of the string
// read as little-endian words). It takes exactly packBytes(m, b) =
// ceil(m·b/8) bytes, the padding bits of the last byte being zero.
//
// The formats build on it differently, and those differences stay in the
// codecs because the persisted bytes depend on them:
//
//   - ParaPFor appends fields of three widths (slots, exception indices,
//     overflows) to one string of a segment, so it writes with packWriter
//     and reads with packField at arbitrary bit offsets;
//   - the LRC family packs residuals computed while writing (packWriter),
//     and HS-LRC pads every bucket's string further, to a whole 32-bit word
//     (hsWords), so that its bucket table can address slots in words;
//   - Simple8b is not built on it: its payload is LSB-first too, but every
//     64-bit word carries a selector in its top 4 bits and widths up to 60,
//     and a word holds at most 60 payload bits, so it is decoded word by
//     word with constant shifts (simple8b.go);
//   - Elias-Fano's upper bits and rice's unary codes are unary bitmaps,
//     scanned as 64-bit words with packLoad, not b-bit fields.

// packWidth returns the bit width of the largest value of vals.
func packWidth(vals []uint32) uint {
	var or uint32
	for _, v := range vals {
		or |= v
	}
	return uint(bits.Len32(or))
}

// packBytes is the number of bytes of m values of b bits, ceil(m·b/8)
// (computed in 64 bits, so it does not overflow for m < 2^31 on any
// platform).
func packBytes(m int, b uint) int { return int((uint64(m)*uint64(b) + 7) / 8) }

// packAppend appends the low b bits (0..32) of every value of vals packed
// LSB-first, in exactly packBytes(len(vals), b) bytes.
func packAppend(dst []byte, vals []uint32, b uint) []byte {
	if b == 0 {
		return dst
	}
	w := packWriter{dst: dst}
	for _, v := range vals {
		w.put(v, b)
	}
	return w.flush()
}

// packWriter appends fields of any width 0..32 to an LSB-first bit string.
type packWriter struct {
	dst []byte
	acc uint64 // pending bits, n of them
	n   uint
}

// put appends the low b bits of v.
func (w *packWriter) put(v uint32, b uint) {
	w.acc |= (uint64(v) & (1<<b - 1)) << w.n
	w.n += b
	for w.n >= 8 {
		w.dst = append(w.dst, byte(w.acc))
		w.acc >>= 8
		w.n -= 8
	}
}

// flush pads the string with zero bits to a whole byte and returns it.
func (w *packWriter) flush() []byte {
	if w.n > 0 {
		w.dst = append(w.dst, byte(w.acc))
	}
	w.acc, w.n = 0, 0
	return w.dst
}

// packPadZero reports whether the bits of data past its first nbits are
// zero, data being packBytes-long for nbits (ceil(nbits/8) bytes).
func packPadZero(data []byte, nbits uint64) bool {
	r := nbits % 8
	return r == 0 || len(data) == 0 || data[len(data)-1]>>r == 0
}

// packLoad returns the little-endian uint64 at data[k:], zero-filled past
// the end of data.
func packLoad(data []byte, k uint64) uint64 {
	if k+8 <= uint64(len(data)) {
		return binary.LittleEndian.Uint64(data[k:])
	}
	var w uint64
	for s := uint(0); k < uint64(len(data)); k, s = k+1, s+8 {
		w |= uint64(data[k]) << s
	}
	return w
}

// packField returns the b-bit field (b <= 32) at bit offset off of the
// LSB-first string data; bits past the end of data read as zero. One
// 64-bit load holds it: at most 7+32 bits are needed.
func packField(data []byte, off uint64, b uint) uint32 {
	return uint32(packLoad(data, off>>3) >> (off & 7) & (1<<b - 1))
}

// packGet returns value j of the b-bit values packed in data; bits past the
// end of data read as zero.
func packGet(data []byte, j int, b uint) uint32 {
	return packField(data, uint64(j)*uint64(b), b)
}

// packUnpack decodes len(out) values of b bits (0..32) packed LSB-first in
// data, which holds at least packBytes(len(out), b) bytes (the bits after
// the last value are ignored). It works on groups of 8 values, which take
// exactly b bytes, with 64-bit little-endian loads; the groups whose loads
// would run past the end of data are decoded from a zero-padded copy on the
// stack.
func packUnpack(out []uint32, data []byte, b uint) {
	if b == 0 {
		clear(out)
		return
	}
	// A group g reads bytes [g·b, g·b+b+8) at most (see packGroups), so the
	// groups below g0 read only inside data.
	g0 := 0
	if len(data) >= int(b)+8 {
		g0 = (len(data)-int(b)-8)/int(b) + 1
	}
	g0 = min(g0, len(out)/8)
	packGroups(out[:8*g0], data, b)
	out = out[8*g0:]
	if len(out) == 0 {
		return
	}
	// Left: fewer than 8 values, or fewer than b+8 bytes of data, which
	// hold fewer than 8+64/b values: at most 2b+16 <= 80 bytes are read,
	// padding included.
	var buf [96]byte
	copy(buf[:], data[g0*int(b):])
	full := len(out) &^ 7
	packGroups(out[:full], buf[:], b)
	if r := len(out) - full; r > 0 {
		var tmp [8]uint32
		packGroups(tmp[:], buf[full/8*int(b):], b)
		copy(out[full:], tmp[:r])
	}
}

// packGroups decodes len(out)/8 groups of 8 b-bit values (1 <= b <= 32);
// group g starts at byte g·b of data, and data must hold at least g·b+b+8
// bytes for every group g.
func packGroups(out []uint32, data []byte, b uint) {
	mask := uint64(1)<<b - 1
	ng := len(out) / 8
	switch {
	case b <= 8:
		// 8 values in 8·b <= 64 bits: one load per group.
		s1, s2, s3, s4, s5, s6, s7 := b, 2*b, 3*b, 4*b, 5*b, 6*b, 7*b
		for g := 0; g < ng; g++ {
			w := binary.LittleEndian.Uint64(data[g*int(b):])
			o := out[8*g : 8*g+8 : 8*g+8]
			o[0] = uint32(w & mask)
			o[1] = uint32(w >> s1 & mask)
			o[2] = uint32(w >> s2 & mask)
			o[3] = uint32(w >> s3 & mask)
			o[4] = uint32(w >> s4 & mask)
			o[5] = uint32(w >> s5 & mask)
			o[6] = uint32(w >> s6 & mask)
			o[7] = uint32(w >> s7 & mask)
		}
	case b <= 16:
		// 4 values in 4·b <= 64 bits: two loads per group, the second at
		// byte b/2 (bit 4·b) with shift 4 when b is odd (then 4·b <= 60).
		s1, s2, s3 := b, 2*b, 3*b
		h, hs := int(b/2), (b&1)*4
		for g := 0; g < ng; g++ {
			d := data[g*int(b):]
			lo := binary.LittleEndian.Uint64(d)
			hi := binary.LittleEndian.Uint64(d[h:]) >> hs
			o := out[8*g : 8*g+8 : 8*g+8]
			o[0] = uint32(lo & mask)
			o[1] = uint32(lo >> s1 & mask)
			o[2] = uint32(lo >> s2 & mask)
			o[3] = uint32(lo >> s3 & mask)
			o[4] = uint32(hi & mask)
			o[5] = uint32(hi >> s1 & mask)
			o[6] = uint32(hi >> s2 & mask)
			o[7] = uint32(hi >> s3 & mask)
		}
	case b <= 28:
		// 2 values in 2·b + 6 <= 62 bits: four loads per group, pair j
		// at bit 2·j·b, i.e. byte j·b/4 with shift 2·(j·b mod 4).
		h1, h2, h3 := int(b/4), int(2*b/4), int(3*b/4)
		t1, t2, t3 := b&3*2, 2*b&3*2, 3*b&3*2
		for g := 0; g < ng; g++ {
			d := data[g*int(b):]
			w0 := binary.LittleEndian.Uint64(d)
			w1 := binary.LittleEndian.Uint64(d[h1:]) >> t1
			w2 := binary.LittleEndian.Uint64(d[h2:]) >> t2
			w3 := binary.LittleEndian.Uint64(d[h3:]) >> t3
			o := out[8*g : 8*g+8 : 8*g+8]
			o[0] = uint32(w0 & mask)
			o[1] = uint32(w0 >> b & mask)
			o[2] = uint32(w1 & mask)
			o[3] = uint32(w1 >> b & mask)
			o[4] = uint32(w2 & mask)
			o[5] = uint32(w2 >> b & mask)
			o[6] = uint32(w3 & mask)
			o[7] = uint32(w3 >> b & mask)
		}
	case b == 32:
		for i := range out {
			out[i] = binary.LittleEndian.Uint32(data[4*i:])
		}
	default:
		// 29..31 bits: one load per value, b+7 <= 38 bits.
		for i := range out {
			pos := uint(i) * b
			out[i] = uint32(binary.LittleEndian.Uint64(data[pos>>3:]) >> (pos & 7) & mask)
		}
	}
}
