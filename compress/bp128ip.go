package compress

import "encoding/binary"

// BP128IP is bp128 whose partial block is coded with binary interpolative
// coding, as PISA's block codecs do (pisa-engine/pisa,
// codec/block_codecs.hpp: block_optpfor and block_varintg8iu hand a block
// shorter than 128 values to interpolative_block; the paper behind it:
// Moffat & Stuiver, Information Retrieval 3(1), 2000). In an index every
// list shorter than a block, and the last block of every other list, is
// such a partial block: 23% of GCIDE's postings are in lists shorter than a
// block, and bp128 packs them at the width of their first value, an
// absolute docID offset. Full blocks keep bp128's fast layout. This is a
// CPU codec of its own name and ID: bp128's on-disk layout, which the GPU
// kernels decode, is unchanged, and the GPU has no decoder for this one.
//
// Format (ID IDBP128IP, name "bp128ip", kind General):
//
//	uvarint(n)                 number of values (AppendEncode only)
//	floor(n/128) full blocks   each as in bp128: 1 byte b (0..32), then
//	                           16·b bytes, value j at bits [j·b, (j+1)·b)
//	                           LSB-first
//	if n mod 128 > 0:          the last n mod 128 values as the body of an
//	                           interpolative encoding (interpolative.go:
//	                           uvarint(S), then the bit string), which runs
//	                           to the end of the encoding; without
//	                           uvarint(S) in AppendEncodeKnownSum's
//	                           encoding, whose decoder takes S as the given
//	                           sum minus the full blocks' values
//
// The decoder rejects (ErrCorrupt) a width > 32, truncation, trailing bytes
// and everything the interpolative decoder rejects in the tail, and
// DecodeKnownSum full blocks whose values exceed the given sum or, without
// a tail, do not add up to it. As a Bounded codec (codec.go) it serves the
// index's docID blocks without count and sum: with the default block of
// 128 values a full block is one bp128 block, the partial last block of a
// list is the interpolative bit string alone.
type bp128ipCodec struct{}

func init() { register(bp128ipCodec{}) }

func (bp128ipCodec) ID() ID       { return IDBP128IP }
func (bp128ipCodec) Name() string { return "bp128ip" }
func (bp128ipCodec) Kind() Kind   { return General }

// AppendEncode implements Codec.
func (bp128ipCodec) AppendEncode(dst []byte, vals []uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	return bpipAppend(dst, vals, true)
}

// AppendEncodeKnownN implements Bounded.
func (bp128ipCodec) AppendEncodeKnownN(dst []byte, vals []uint32) []byte {
	return bpipAppend(dst, vals, true)
}

// AppendEncodeKnownSum implements Bounded.
func (bp128ipCodec) AppendEncodeKnownSum(dst []byte, vals []uint32) []byte {
	return bpipAppend(dst, vals, false)
}

// bpipAppend appends the full blocks of vals and its interpolative tail,
// whose sum it writes when withSum.
func bpipAppend(dst []byte, vals []uint32, withSum bool) []byte {
	for len(vals) >= bpBlock {
		b := packWidth(vals[:bpBlock])
		dst = append(dst, byte(b))
		dst = packAppend(dst, vals[:bpBlock], b)
		vals = vals[bpBlock:]
	}
	if len(vals) > 0 {
		dst = ipAppendBody(dst, vals, withSum)
	}
	return dst
}

// Count implements Codec.
func (bp128ipCodec) Count(src []byte) (int, error) {
	n, _, err := vbCount("bp128ip", src, bpBlock)
	return n, err
}

// Decode implements Codec.
func (bp128ipCodec) Decode(out []uint32, src []byte) (int, error) {
	n, p, err := vbCount("bp128ip", src, bpBlock)
	if err != nil {
		return 0, err
	}
	if n > len(out) {
		return 0, ErrShortBuffer
	}
	i, p, _, err := bpipFull(out[:n], src, p, false)
	if err != nil {
		return 0, err
	}
	if i < n {
		return n, ipDecodeBody("bp128ip", out[i:n], src[p:])
	}
	if p != len(src) {
		return 0, corrupt("bp128ip", "%d trailing bytes after %d values", len(src)-p, n)
	}
	return n, nil
}

// DecodeKnownN implements Bounded.
func (bp128ipCodec) DecodeKnownN(out []uint32, src []byte) error {
	i, p, _, err := bpipFull(out, src, 0, false)
	if err != nil {
		return err
	}
	if i < len(out) {
		if err := ipKnownCount("bp128ip", len(out)-i); err != nil {
			return err
		}
		return ipDecodeBody("bp128ip", out[i:], src[p:])
	}
	if p != len(src) {
		return corrupt("bp128ip", "%d trailing bytes after %d values", len(src)-p, len(out))
	}
	return nil
}

// DecodeKnownSum implements Bounded.
func (bp128ipCodec) DecodeKnownSum(out []uint32, src []byte, sum uint64) error {
	i, p, full, err := bpipFull(out, src, 0, true)
	if err != nil {
		return err
	}
	if full > sum {
		return corrupt("bp128ip", "full blocks sum to %d, above the block's sum %d", full, sum)
	}
	if i < len(out) {
		return ipDecodeBits("bp128ip", out[i:], src[p:], sum-full)
	}
	if full != sum {
		return corrupt("bp128ip", "values sum to %d, want %d", full, sum)
	}
	if p != len(src) {
		return corrupt("bp128ip", "%d trailing bytes after %d values", len(src)-p, len(out))
	}
	return nil
}

// bpipFull decodes the full bp128 blocks of out (floor(len(out)/128) of
// them) from src at p; it returns the number of values decoded, the offset
// after them and, when wantSum, their sum.
func bpipFull(out []uint32, src []byte, p int, wantSum bool) (int, int, uint64, error) {
	var sum uint64
	i := 0
	for ; i+bpBlock <= len(out); i += bpBlock {
		if p >= len(src) {
			return 0, 0, 0, corrupt("bp128ip", "missing header of block %d", i/bpBlock)
		}
		b := uint(src[p])
		if b > 32 {
			return 0, 0, 0, corrupt("bp128ip", "block %d: bit width %d > 32", i/bpBlock, b)
		}
		p++
		nb := 16 * int(b)
		if nb > len(src)-p {
			return 0, 0, 0, corrupt("bp128ip", "block %d: %d data bytes, %d left", i/bpBlock, nb, len(src)-p)
		}
		blk := (*[bpBlock]uint32)(out[i : i+bpBlock])
		if b == 0 {
			clear(blk[:])
		} else {
			unpack128[b](blk, src[p:p+nb])
			if wantSum {
				for _, v := range blk {
					sum += uint64(v)
				}
			}
		}
		p += nb
	}
	return i, p, sum, nil
}
