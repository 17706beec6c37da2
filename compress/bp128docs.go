package compress

// BP128Docs turns a bp128 block of n d-gaps (1 <= n <= 128; its packed
// data, exactly packBytes(n, width) bytes, and bit width, as the index
// stores a docID block: the first value relative to base, every other one a
// gap minus one; index/format.go) into docIDs in out[:n], and returns the
// last docID computed in 64 bits (so that a caller comparing it with the
// block's known last docID detects every corruption the scalar path
// detects: the docIDs then strictly increase and none wraps). out must hold
// n rounded up to a multiple of 8 (the values past n are overwritten). ok
// is false when no fast routine covers the block (no AVX2, a width outside
// 1..bp128DocsMaxWidth, nonzero padding bits, or data without the readable
// bytes past the block that the vector loads take, bp128SIMDRead, which
// must lie within cap(data)): the caller then decodes it with Decode
// (which reports bad padding) and a scalar prefix sum. The result equals
// the scalar unpacking followed by that prefix sum (bp128DocsGo, which the
// tests compare it with).
//
// The AVX2 routine (bp128docs_amd64.s) decodes 8 values at a time: the
// group's first 16 bytes are loaded into the low 128-bit lane and the 16
// from value 4's byte (4·w/8) into the high one, a per-width byte shuffle
// puts each value's 4 bytes in its dword, a per-lane variable shift and a
// mask extract it (the sequential layout's analogue of Lemire & Boytsov's
// SIMD unpacking, SP&E 2015), then a log-step in-register prefix
// sum (Hillis-Steele within lanes, one cross-lane add) and the running
// carry give the docIDs: one vector add on the carry's dependency chain
// per 8 values.
func BP128Docs(out []uint32, data []byte, n int, width uint, base uint32) (last uint64, ok bool) {
	g := (n + 7) / 8
	if !haveDocsSIMD || n < 1 || n > bpBlock || len(out) < 8*g || width == 0 || width > bp128DocsMaxWidth ||
		len(data) != packBytes(n, width) || cap(data) < bp128SIMDRead(width, g) || !packPadZero(data, uint64(n)*uint64(width)) {
		return 0, false
	}
	t := &docsTables[width]
	bp128Docs(&out[0], &data[:cap(data)][0], uintptr(width), uintptr(g), &t.shuf, &t.shift, uint32(1)<<width-1, base-1)
	// out[n-1] = base-1 + T mod 2^32, T = the sum of (value+1) over the
	// first n values < 128·2^24: T is exact.
	total := out[n-1] - (base - 1)
	return uint64(base) + uint64(total) - 1, true
}

// BP128Plus1 decodes a bp128 block of n values (as BP128Docs takes it)
// into out[:n], each plus one (the index's frequency blocks store tf-1),
// and reports whether it covered it (width 0 always, else the vector
// routine under BP128Docs's conditions; no value can overflow at these
// widths). When ok is false the caller decodes it with Decode.
func BP128Plus1(out []uint32, data []byte, n int, width uint) bool {
	g := (n + 7) / 8
	if n < 1 || n > bpBlock || len(out) < 8*g || len(data) != packBytes(n, width) {
		return false
	}
	if width == 0 { // every value 0: frequency blocks of tf = 1 only
		for i := range out[:n] {
			out[i] = 1
		}
		return true
	}
	if !haveDocsSIMD || width > bp128DocsMaxWidth || cap(data) < bp128SIMDRead(width, g) || !packPadZero(data, uint64(n)*uint64(width)) {
		return false
	}
	t := &docsTables[width]
	bp128Plus1(&out[0], &data[:cap(data)][0], uintptr(width), uintptr(g), &t.shuf, &t.shift, uint32(1)<<width-1)
	return true
}

// bp128DocsMaxWidth is the largest width the vector routines decode: each
// value's bits then lie in the 4 bytes from its first one (shift <= 7,
// 7+24 <= 32), and the sum of 128 values plus one stays below 2^32.
const bp128DocsMaxWidth = 24

// bp128SIMDRead is the number of bytes from a block's start that the
// vector routines read for g groups of 8 values: the last group loads 16
// bytes at (g-1)·w and 16 at (g-1)·w + w/2.
func bp128SIMDRead(w uint, g int) int { return (g-1)*int(w) + int(w)/2 + 16 }

// docsTable is the byte shuffle and the shift counts of one width: value k
// of a group (dword k) takes the 4 bytes of its lane's load from its first
// bit's byte and shifts them right by that bit's offset in the byte. The
// low lane (k < 4) is loaded from the group's first byte, the high lane
// (k >= 4) from byte w/2, bit 4·w - 8·(w/2) (0, or 4 for an odd w).
type docsTable struct {
	shuf  [32]byte
	shift [8]uint32
}

var docsTables = func() (t [bp128DocsMaxWidth + 1]docsTable) {
	for w := 1; w <= bp128DocsMaxWidth; w++ {
		for k := 0; k < 8; k++ {
			bit := k * w
			if k >= 4 {
				bit -= 8 * (w / 2)
			}
			for i := 0; i < 4; i++ {
				t[w].shuf[4*k+i] = byte(bit/8 + i) // within the lane's 16 bytes
			}
			t[w].shift[k] = uint32(bit % 8)
		}
	}
	return t
}()

// bp128DocsGo is BP128Docs's scalar twin (the tests' reference): the
// scalar unpacking, then the prefix sum in 64 bits.
func bp128DocsGo(out []uint32, data []byte, n int, width uint, base uint32) uint64 {
	packUnpack(out[:n], data, width)
	d := uint64(base) + uint64(out[0])
	out[0] = uint32(d)
	for i := 1; i < n; i++ {
		d += uint64(out[i]) + 1
		out[i] = uint32(d)
	}
	return d
}
