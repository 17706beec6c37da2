package compress

import "encoding/binary"

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

//go:generate go run ./internal/genunpack

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
		b := packWidth(vals[:m])
		dst = append(dst, byte(b))
		dst = packAppend(dst, vals[:m], b)
		vals = vals[m:]
	}
	return dst
}

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
		nb := packBytes(m, b)
		if nb > len(src)-p {
			return 0, corrupt("bp128", "block %d: %d data bytes, %d left", i/bpBlock, nb, len(src)-p)
		}
		data := src[p : p+nb]
		if m == bpBlock && b > 0 {
			// A full block is whole bytes (no padding): the generated
			// routine of its width.
			unpack128[b]((*[bpBlock]uint32)(out[i:i+bpBlock]), data)
			p += nb
			continue
		}
		if !packPadZero(data, uint64(m)*uint64(b)) {
			return 0, corrupt("bp128", "block %d: nonzero padding bits", i/bpBlock)
		}
		packUnpack(out[i:i+m], data, b)
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
		nb := packBytes(m, b)
		if nb > len(src)-p {
			return 0, corrupt("bp128", "block %d: %d data bytes, %d left", blk, nb, len(src)-p)
		}
		if blk == i/bpBlock {
			return packGet(src[p:p+nb], i%bpBlock, b), nil
		}
		p += nb
	}
}

// BP128Single parses a bp128 encoding of at most 128 values (one block, the
// frequency blocks of an index with B <= 128) and returns the block's packed
// data, bit width and count, checked exactly as Decode checks them (header,
// width, length, padding, no trailing bytes), so that BP128Get can then read
// any value without decoding the others. ok is false for an encoding of more
// than one block (the caller decodes it instead).
func BP128Single(src []byte) (data []byte, width uint, n int, ok bool, err error) {
	n, p, err := vbCount("bp128", src, bpBlock)
	if err != nil {
		return nil, 0, 0, false, err
	}
	if n > bpBlock {
		return nil, 0, 0, false, nil
	}
	if n == 0 {
		if p != len(src) {
			return nil, 0, 0, false, corrupt("bp128", "%d trailing bytes after 0 values", len(src)-p)
		}
		return nil, 0, 0, true, nil
	}
	if p >= len(src) {
		return nil, 0, 0, false, corrupt("bp128", "missing header of block 0")
	}
	b := uint(src[p])
	if b > 32 {
		return nil, 0, 0, false, corrupt("bp128", "block 0: bit width %d > 32", b)
	}
	p++
	nb := packBytes(n, b)
	if nb != len(src)-p {
		if nb > len(src)-p {
			return nil, 0, 0, false, corrupt("bp128", "block 0: %d data bytes, %d left", nb, len(src)-p)
		}
		return nil, 0, 0, false, corrupt("bp128", "%d trailing bytes after %d values", len(src)-p-nb, n)
	}
	data = src[p:]
	if !packPadZero(data, uint64(n)*uint64(b)) {
		return nil, 0, 0, false, corrupt("bp128", "block 0: nonzero padding bits")
	}
	return data, b, n, true, nil
}

// BP128Get returns value i (< the block's count) of a block parsed by
// BP128Single.
func BP128Get(data []byte, i int, width uint) uint32 { return packGet(data, i, width) }
