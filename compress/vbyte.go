package compress

import (
	"encoding/binary"
	"math/bits"
)

// VByte is the baseline variable-byte codec (a.k.a. varint; see Zobel &
// Moffat, "Inverted files for text search engines", ACM Computing Surveys
// 38(2), 2006): the reference point every other codec here is compared with,
// not a GPU codec.
//
// Format (ID IDVByte, name "vbyte", kind General):
//
//	uvarint(n)        number of values
//	n × uvarint(v)    each value, 7 bits per byte, low groups first; the high
//	                  bit of a byte is set when another byte follows
//
// This is exactly encoding/binary's uvarint. A value takes 1 to 5 bytes; the
// decoder rejects (ErrCorrupt) a value that does not fit in 32 bits, a
// non-minimal encoding (a multi-byte varint whose last byte is 0x00), a
// truncated array and trailing bytes after the n-th value, so every array has
// exactly one encoding.
type vbyteCodec struct{}

func init() { register(vbyteCodec{}) }

func (vbyteCodec) ID() ID       { return IDVByte }
func (vbyteCodec) Name() string { return "vbyte" }
func (vbyteCodec) Kind() Kind   { return General }

// AppendEncode implements Codec.
func (vbyteCodec) AppendEncode(dst []byte, vals []uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	for _, v := range vals {
		for v >= 0x80 {
			dst = append(dst, byte(v)|0x80)
			v >>= 7
		}
		dst = append(dst, byte(v))
	}
	return dst
}

// Count implements Codec.
func (vbyteCodec) Count(src []byte) (int, error) {
	n, _, err := vbCount("vbyte", src, 1)
	return n, err
}

// Decode implements Codec.
func (vbyteCodec) Decode(out []uint32, src []byte) (int, error) {
	n, p, err := vbCount("vbyte", src, 1)
	if err != nil {
		return 0, err
	}
	if n > len(out) {
		return 0, ErrShortBuffer
	}
	out = out[:n]
	for i := 0; i < len(out); {
		// Fast path: 8 single-byte values at once.
		if i+8 <= len(out) && p+8 <= len(src) {
			w := binary.LittleEndian.Uint64(src[p:])
			if w&0x8080808080808080 == 0 {
				o := out[i : i+8 : i+8]
				o[0] = uint32(w & 0x7f)
				o[1] = uint32(w >> 8 & 0x7f)
				o[2] = uint32(w >> 16 & 0x7f)
				o[3] = uint32(w >> 24 & 0x7f)
				o[4] = uint32(w >> 32 & 0x7f)
				o[5] = uint32(w >> 40 & 0x7f)
				o[6] = uint32(w >> 48 & 0x7f)
				o[7] = uint32(w >> 56 & 0x7f)
				i += 8
				p += 8
				continue
			}
		}
		if p >= len(src) {
			return 0, corrupt("vbyte", "truncated at value %d of %d", i, n)
		}
		if c := src[p]; c < 0x80 {
			out[i] = uint32(c)
			i++
			p++
			continue
		}
		v, k := vbUvarint32(src[p:])
		if k <= 0 {
			return 0, corrupt("vbyte", "value %d of %d: bad varint at byte %d", i, n, p)
		}
		out[i] = v
		i++
		p += k
	}
	if p != len(src) {
		return 0, corrupt("vbyte", "%d trailing bytes after %d values", len(src)-p, n)
	}
	return n, nil
}

// vbUvarint32 decodes one minimal varint of at most 32 bits from the start of
// src. It returns the value and the number of bytes read, or k <= 0 when src
// is truncated, the value overflows 32 bits, or the encoding is not minimal.
func vbUvarint32(src []byte) (v uint32, k int) {
	var x uint32
	for i := 0; i < len(src) && i < 5; i++ {
		c := src[i]
		if i == 4 && c > 0x0f {
			return 0, -1 // overflow or a sixth byte
		}
		x |= uint32(c&0x7f) << (7 * uint(i))
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, -1 // non-minimal
			}
			return x, i + 1
		}
	}
	return 0, 0 // truncated
}

// vbCount reads the uvarint count that starts every array of the vbyte,
// bp128, simple8b and rice formats. It returns the count and the offset of
// the first byte after it. maxPerByte bounds how many values one byte of the
// rest of src can encode in the calling format (so that a forged count is
// rejected before anything is decoded or any buffer is sized by it).
func vbCount(codec string, src []byte, maxPerByte uint64) (n, p int, err error) {
	c, k := binary.Uvarint(src)
	if k == 0 {
		return 0, 0, corrupt(codec, "missing count")
	}
	if k < 0 {
		return 0, 0, corrupt(codec, "count overflows 64 bits")
	}
	if k > 1 && src[k-1] == 0 {
		return 0, 0, corrupt(codec, "non-minimal count varint")
	}
	hi, lo := bits.Mul64(uint64(len(src)-k), maxPerByte)
	if hi == 0 && c > lo || c > 1<<31-1 {
		return 0, 0, corrupt(codec, "count %d too large for %d bytes", c, len(src))
	}
	return int(c), k, nil
}

// vbUvarint reads a minimal uvarint header field (not a count) of at most
// max from src at p and returns it and the offset after it.
func vbUvarint(codec, what string, src []byte, p int, max uint64) (uint64, int, error) {
	if p > len(src) {
		return 0, 0, corrupt(codec, "missing %s", what)
	}
	v, k := binary.Uvarint(src[p:])
	if k == 0 {
		return 0, 0, corrupt(codec, "missing %s", what)
	}
	if k < 0 || (k > 1 && src[p+k-1] == 0) || v > max {
		return 0, 0, corrupt(codec, "bad %s varint at byte %d", what, p)
	}
	return v, p + k, nil
}
