package compress

import (
	"encoding/binary"
	"math/bits"
)

// BP128 is binary packing (Lemire & Boytsov, "Decoding billions of integers
// per second through vectorization", Software: Practice & Experience 45(1),
// 2015, their BP128 scheme; the "Binary Packing" of Mallia's GPU
// integer-encoding proposal): values are cut into blocks of 128 and every
// block is stored with the smallest bit width b that holds its largest value.
// Unlike Lemire's SIMD layout (4-way interleaved lanes) the values are packed
// sequentially, which is what a GPU thread per value (or a CPU 64-bit load
// per value) wants.
//
// Format (ID IDBP128, name "bp128", kind General):
//
//	uvarint(n)                     number of values
//	ceil(n/128) blocks, each:
//	  1 byte  b                    bit width, 0..32
//	  ceil(m·b/8) bytes            the block's m values (m = 128, or n mod 128
//	                               for a shorter last block), value j at bits
//	                               [j·b, (j+1)·b) of the block's bit string,
//	                               bit k of the string being bit k%8 of byte
//	                               k/8 (LSB-first); padding bits are zero
//
// The encoder uses the minimal b of each block; the decoder accepts any b in
// 0..32 but rejects a width > 32, truncation, nonzero padding bits and
// trailing bytes after the last block (ErrCorrupt).
type bp128Codec struct{}

func init() { register(bp128Codec{}) }

// bpBlock is the number of values per BP128 block.
const bpBlock = 128

func (bp128Codec) ID() ID       { return IDBP128 }
func (bp128Codec) Name() string { return "bp128" }
func (bp128Codec) Kind() Kind   { return General }

// AppendEncode implements Codec.
func (bp128Codec) AppendEncode(dst []byte, vals []uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	for len(vals) > 0 {
		m := min(len(vals), bpBlock)
		var or uint32
		for _, v := range vals[:m] {
			or |= v
		}
		b := uint(bits.Len32(or))
		dst = append(dst, byte(b))
		dst = bpPack(dst, vals[:m], b)
		vals = vals[m:]
	}
	return dst
}

// bpPack appends the low b bits (0..32) of each of vals packed LSB-first in
// exactly ceil(len(vals)·b/8) bytes.
func bpPack(dst []byte, vals []uint32, b uint) []byte {
	if b == 0 {
		return dst
	}
	mask := uint64(1)<<b - 1
	var acc uint64
	var nacc uint
	for _, v := range vals {
		acc |= uint64(v) & mask << nacc
		nacc += b
		for nacc >= 8 {
			dst = append(dst, byte(acc))
			acc >>= 8
			nacc -= 8
		}
	}
	if nacc > 0 {
		dst = append(dst, byte(acc))
	}
	return dst
}

// bpBytes is the number of bytes of m values packed at b bits.
func bpBytes(m int, b uint) int { return (m*int(b) + 7) >> 3 }

// Count implements Codec.
func (bp128Codec) Count(src []byte) (int, error) {
	n, _, err := vbCount("bp128", src, bpBlock)
	return n, err
}

// Decode implements Codec.
func (bp128Codec) Decode(out []uint32, src []byte) (int, error) {
	n, p, err := vbCount("bp128", src, bpBlock)
	if err != nil {
		return 0, err
	}
	if n > len(out) {
		return 0, ErrShortBuffer
	}
	for i := 0; i < n; i += bpBlock {
		m := min(n-i, bpBlock)
		if p >= len(src) {
			return 0, corrupt("bp128", "missing header of block %d", i/bpBlock)
		}
		b := uint(src[p])
		if b > 32 {
			return 0, corrupt("bp128", "block %d: bit width %d > 32", i/bpBlock, b)
		}
		p++
		nb := bpBytes(m, b)
		if nb > len(src)-p {
			return 0, corrupt("bp128", "block %d: %d data bytes, %d left", i/bpBlock, nb, len(src)-p)
		}
		data := src[p : p+nb]
		if pad := uint(nb*8 - m*int(b)); pad > 0 && data[nb-1]>>(8-pad) != 0 {
			return 0, corrupt("bp128", "block %d: nonzero padding bits", i/bpBlock)
		}
		bpUnpack(out[i:i+m], data, b)
		p += nb
	}
	if p != len(src) {
		return 0, corrupt("bp128", "%d trailing bytes after %d values", len(src)-p, n)
	}
	return n, nil
}

// Get implements RandomAccess: it walks the block headers up to the block of
// value i (one step for the index's one-block arrays) and extracts b bits.
// It validates what it reads (headers, lengths) but, unlike Decode, does not
// look at the blocks after value i.
func (bp128Codec) Get(src []byte, i int) (uint32, error) {
	n, p, err := vbCount("bp128", src, bpBlock)
	if err != nil {
		return 0, err
	}
	if i < 0 || i >= n {
		return 0, corrupt("bp128", "index %d out of range [0,%d)", i, n)
	}
	for blk := 0; ; blk++ {
		m := min(n-blk*bpBlock, bpBlock)
		if p >= len(src) {
			return 0, corrupt("bp128", "missing header of block %d", blk)
		}
		b := uint(src[p])
		if b > 32 {
			return 0, corrupt("bp128", "block %d: bit width %d > 32", blk, b)
		}
		p++
		nb := bpBytes(m, b)
		if nb > len(src)-p {
			return 0, corrupt("bp128", "block %d: %d data bytes, %d left", blk, nb, len(src)-p)
		}
		if blk == i/bpBlock {
			return bpGet(src[p:p+nb], i%bpBlock, b), nil
		}
		p += nb
	}
}

// bpGet extracts value j of b-bit values packed LSB-first in data, which must
// hold at least ceil((j+1)·b/8) bytes.
func bpGet(data []byte, j int, b uint) uint32 {
	if b == 0 {
		return 0
	}
	pos := uint(j) * b
	return uint32(bpLoad(data, pos>>3)>>(pos&7)) & uint32(1<<b-1)
}

// bpLoad returns the little-endian uint64 at data[k:], zero-filled past the
// end of data.
func bpLoad(data []byte, k uint) uint64 {
	if k+8 <= uint(len(data)) {
		return binary.LittleEndian.Uint64(data[k:])
	}
	var w uint64
	for s := uint(0); k < uint(len(data)); k, s = k+1, s+8 {
		w |= uint64(data[k]) << s
	}
	return w
}

// bpUnpack decodes len(out) values of b bits (0..32) packed LSB-first in
// data, which holds exactly ceil(len(out)·b/8) bytes. It works on groups of
// 8 values, which take exactly b bytes, with 64-bit little-endian loads; the
// groups whose loads would run past the end of data are decoded from a
// zero-padded copy on the stack.
func bpUnpack(out []uint32, data []byte, b uint) {
	if b == 0 {
		clear(out)
		return
	}
	// A group g reads bytes [g·b, g·b+b+8) at most (see bpGroups), so the
	// groups below g0 read only inside data.
	g0 := 0
	if len(data) >= int(b)+8 {
		g0 = (len(data)-int(b)-8)/int(b) + 1
	}
	g0 = min(g0, len(out)/8)
	bpGroups(out[:8*g0], data, b)
	out = out[8*g0:]
	if len(out) == 0 {
		return
	}
	// Fewer than b+8 bytes, or fewer than 8 values, are left: at most
	// b+7 < 40 bytes, plus b+8 bytes of padding for the last group's reads.
	var buf [96]byte
	copy(buf[:], data[g0*int(b):])
	full := len(out) &^ 7
	bpGroups(out[:full], buf[:], b)
	if r := len(out) - full; r > 0 {
		var tmp [8]uint32
		bpGroups(tmp[:], buf[full/8*int(b):], b)
		copy(out[full:], tmp[:r])
	}
}

// bpGroups decodes len(out)/8 groups of 8 b-bit values (1 <= b <= 32);
// group g starts at byte g·b of data, and data must hold at least g·b+b+8
// bytes for every group g.
func bpGroups(out []uint32, data []byte, b uint) {
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
