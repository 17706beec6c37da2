package compress

// BP128Docs128 turns a full bp128 block of 128 d-gaps (its packed data and
// bit width, as the index stores a docID block: the first value relative to
// base, every other one a gap minus one; index/format.go) into docIDs in
// out, and returns the last docID computed in 64 bits (so that a caller
// comparing it with the block's known last docID detects every corruption
// the scalar path detects: the docIDs then strictly increase and none
// wraps). ok is false when no fast routine covers the block (no AVX2, a
// width outside 1..bp128DocsMaxWidth, or data without the 16 readable bytes
// past the last group that the vector loads take, which must lie within
// cap(data)): the caller then decodes it with Decode and a scalar prefix
// sum. The result equals unpack128 followed by that prefix sum
// (bp128Docs128Go, which the tests compare it with).
//
// The AVX2 routine (bp128docs_amd64.s) decodes 8 values at a time: the
// group's w bytes are broadcast to both 128-bit lanes, a per-width byte
// shuffle puts each value's 4 bytes in its lane, a per-lane variable shift
// and a mask extract it (the sequential layout's analogue of Lemire &
// Boytsov's SIMD unpacking, SP&E 2015), then a log-step in-register prefix
// sum (Hillis-Steele within lanes, one cross-lane add) and the running
// carry give the docIDs: one vector add on the carry's dependency chain
// per 8 values.
func BP128Docs128(out *[128]uint32, data []byte, width uint, base uint32) (last uint64, ok bool) {
	if !haveDocsSIMD || width == 0 || width > bp128DocsMaxWidth || cap(data) < 15*int(width)+16 {
		return 0, false
	}
	t := &docsTables[width]
	total := bp128Docs128(&out[0], &data[:cap(data)][0], uintptr(width), &t.shuf, &t.shift, uint32(1)<<width-1, base-1)
	// total = sum of (value+1) over the block < 128·2^14 (no wrap).
	return uint64(base) + uint64(total) - 1, true
}

// bp128DocsMaxWidth is the largest width the vector routine decodes: a
// group of 8 values then lies in the 16 bytes one load broadcasts (the
// last value's 4 bytes start at byte 7·w/8 <= 12).
const bp128DocsMaxWidth = 14

// docsTable is the byte shuffle and the shift counts of one width: lane k
// (value k of a group) takes bytes [k·w/8, k·w/8+4) of the group and
// shifts them right by k·w mod 8.
type docsTable struct {
	shuf  [32]byte
	shift [8]uint32
}

var docsTables = func() (t [bp128DocsMaxWidth + 1]docsTable) {
	for w := 1; w <= bp128DocsMaxWidth; w++ {
		for k := 0; k < 8; k++ {
			off := k * w / 8
			for i := 0; i < 4; i++ {
				t[w].shuf[4*k+i] = byte(off + i) // lanes 4..7 index the high copy
			}
			t[w].shift[k] = uint32(k * w % 8)
		}
	}
	return t
}()

// bp128Docs128Go is BP128Docs128's scalar twin (the tests' reference): the
// generated unpacking routine, then the prefix sum in 64 bits.
func bp128Docs128Go(out *[128]uint32, data []byte, width uint, base uint32) uint64 {
	if width == 0 {
		clear(out[:])
	} else {
		unpack128[width](out, data)
	}
	d := uint64(base) + uint64(out[0])
	out[0] = uint32(d)
	for i := 1; i < 128; i++ {
		d += uint64(out[i]) + 1
		out[i] = uint32(d)
	}
	return d
}
