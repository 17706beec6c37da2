package kern

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/cudatest"
)

// The batch decoders are tested against the CPU, codec by codec and mode by
// mode: cpuDecode is exactly what index.List.DecodeDocs / DecodeFreqs do
// with one block (compress Decode, the block-length check, the prefix sum
// or base, the last-docID check), and every GPU result must equal it bit
// for bit, or both must reject the block.

func codecNamed(t testing.TB, name string) compress.Codec {
	t.Helper()
	c, err := compress.ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// allCodecs is every codec with a GPU decoder, in ID order.
func allCodecs() []compress.Codec {
	var out []compress.Codec
	for _, c := range compress.All() {
		if Supported(c.ID()) {
			out = append(out, c)
		}
	}
	return out
}

// cpuOnly are the codecs that have no GPU decoder on purpose: an index
// using them is served by the CPU (engine/gpu refuses it with
// ErrUnsupported). Binary interpolative coding decodes recursively, value
// by value (compress/interpolative.go), and bp128ip codes its partial
// blocks with it.
var cpuOnly = map[compress.ID]bool{compress.IDInterpolative: true, compress.IDBP128IP: true}

// cpuDecode decodes one block on the CPU as the index does. last (Docs
// only) may be nil.
func cpuDecode(codec compress.Codec, block []byte, count int, mode Mode, base uint32, last *uint32) ([]uint32, error) {
	out := make([]uint32, max(count, MaxBlockValues))
	n, err := codec.Decode(out, block)
	if err != nil {
		return nil, err
	}
	if n != count {
		return nil, fmt.Errorf("%d values, want %d", n, count)
	}
	out = out[:n]
	sorted := codec.Kind() == compress.Sorted
	switch mode {
	case Docs:
		if n == 0 {
			return out, nil
		}
		if sorted {
			for i := range out {
				out[i] += base
			}
		} else {
			d := base + out[0]
			out[0] = d
			for i := 1; i < n; i++ {
				d += out[i] + 1
				out[i] = d
			}
		}
		if last != nil && out[n-1] != *last {
			return nil, fmt.Errorf("last docID %d, want %d", out[n-1], *last)
		}
	case Freqs:
		prev := uint32(0)
		for i, v := range out {
			if sorted {
				out[i] = v - prev + 1
				prev = v
			} else {
				out[i] = v + 1
			}
		}
	}
	return out, nil
}

// Value distributions of a block of m values whose largest has exactly w
// bits (w = 0: all zero).
const (
	distUniform  = iota // random values of at most w bits
	distOutliers        // mostly small, a few of w bits: exceptions, long unary codes
	distRuns            // runs of zeros and of equal values
	nDists
)

func valuesOfWidth(rng *rand.Rand, m int, w uint, dist int) []uint32 {
	v := make([]uint32, m)
	if w == 0 || m == 0 {
		return v
	}
	mask := uint32(1<<w - 1)
	for i := range v {
		switch dist {
		case distUniform:
			v[i] = rng.Uint32() & mask
			if rng.Intn(4) == 0 {
				v[i] >>= rng.Intn(int(w)) // some small ones too
			}
		case distOutliers:
			v[i] = rng.Uint32() & mask >> (w - w/4)
			if rng.Intn(16) == 0 {
				v[i] = rng.Uint32() & mask
			}
		case distRuns:
			if i > 0 && rng.Intn(8) != 0 {
				v[i] = v[i-1]
			} else if rng.Intn(2) == 0 {
				v[i] = rng.Uint32() & mask
			}
		}
	}
	v[rng.Intn(m)] |= 1 << (w - 1)
	return v
}

// blockValues returns the values a block of the codec encodes for width w:
// any values for General codecs, non-decreasing ones for Sorted codecs.
func blockValues(codec compress.Codec, rng *rand.Rand, m int, w uint, dist int) []uint32 {
	v := valuesOfWidth(rng, m, w, dist)
	if codec.Kind() == compress.Sorted {
		sort.Slice(v, func(a, b int) bool { return v[a] < v[b] })
	}
	return v
}

// testBatch is a batch with its CPU decoding.
type testBatch struct {
	Batch
	want []uint32 // CPU result of every block, in order
}

// addBlock appends one encoded block and its CPU decoding.
func (tb *testBatch) addBlock(t testing.TB, codec compress.Codec, enc []byte, m int, mode Mode, base uint32) []uint32 {
	t.Helper()
	docs, err := cpuDecode(codec, enc, m, mode, base, nil)
	if err != nil {
		t.Fatalf("%s: CPU decode of a fresh block (%d values): %v", codec.Name(), m, err)
	}
	tb.Add(enc, m, base)
	var last uint32
	if mode == Docs && m > 0 {
		last = docs[m-1]
	}
	tb.Last = append(tb.Last, last)
	tb.want = append(tb.want, docs...)
	return docs
}

// addList encodes a list of n values (0: one empty block) cut into blocks of
// 128, in mode's index representation, the first block decoding from base.
func (tb *testBatch) addList(t testing.TB, codec compress.Codec, rng *rand.Rand, n int, w uint, dist int, mode Mode, base uint32) {
	for start := 0; start == 0 || start < n; start += MaxBlockValues {
		m := min(n-start, MaxBlockValues)
		enc := codec.AppendEncode(nil, blockValues(codec, rng, m, w, dist))
		docs := tb.addBlock(t, codec, enc, m, mode, base)
		if mode == Docs && m > 0 {
			base = docs[m-1] + 1
		}
	}
}

// gpuCompare decodes tb on the GPU with kernel kname (with the last-docID
// check in Docs mode when withLast), with the kernel's chunk size and with
// chunks of 32 and 7 blocks, and compares out[OutOff[0]:] bit for bit with
// tb.want; out[:OutOff[0]] must stay untouched.
func gpuCompare(t *testing.T, c *cuda.Context, kname string, codec compress.Codec, tb *testBatch, mode Mode, withLast bool) {
	t.Helper()
	for _, chunk := range []int{0, 32, 7} {
		gpuCompareChunk(t, c, kname, codec, tb, mode, withLast, chunk)
	}
}

func gpuCompareChunk(t *testing.T, c *cuda.Context, kname string, codec compress.Codec, tb *testBatch, mode Mode, withLast bool, chunk int) {
	t.Helper()
	const canary = 0x5a5a5a5a
	b := tb.Batch
	if mode != Docs || !withLast {
		b.Last = nil
	}
	got := make([]uint32, b.Values())
	for i := range got {
		got[i] = canary
	}
	if err := decodeBlocks(c, kname, codec.Name(), &b, mode, got, decodeOpts{poison: testPoison(), chunk: chunk}); err != nil {
		t.Fatalf("%s %v (last check %v, chunk %d): %v", kname, mode, withLast, chunk, err)
	}
	first := int(b.OutOff[0])
	for i := 0; i < first; i++ {
		if got[i] != canary {
			t.Fatalf("%s: value %d before the batch's output overwritten", kname, i)
		}
	}
	if len(got)-first != len(tb.want) {
		t.Fatalf("%s: %d values decoded, want %d", kname, len(got)-first, len(tb.want))
	}
	for i, w := range tb.want {
		if got[first+i] != w {
			blk := sort.Search(b.NBlocks(), func(k int) bool { return b.OutOff[k+1] > uint64(first+i) })
			t.Fatalf("%s %v (last check %v, chunk %d): value %d (block %d, index %d) = %d, CPU says %d", kname, mode, withLast,
				chunk, i, blk, first+i-int(b.OutOff[blk]), got[first+i], w)
		}
	}
}

// testPoison is a fresh nonzero value to fill outputs with before a launch.
func testPoison() uint32 { return rand.Uint32() | 1 }

func kernelOf(codec compress.Codec) string { return decodeKernels[codec.ID()].name }

// emulated reports whether the tests run on the CPU emulator (cuda/emu),
// where they use smaller batches.
var emulated = cudatest.Emulated

// TestDecodeWidths decodes, per codec and mode, in one launch, lists of
// every boundary length {0, 1, 2, 127, 128, 129} for every bit width 0..32
// and three value distributions, from bases that make some docIDs wrap
// around 2^32 like the CPU's uint32 arithmetic does.
func TestDecodeWidths(t *testing.T) {
	c := gpu(t)
	for _, codec := range allCodecs() {
		for _, mode := range []Mode{Docs, Freqs} {
			t.Run(codec.Name()+"/"+mode.String(), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(codec.ID())*10 + int64(mode)))
				var tb testBatch
				lists := 0
				for _, n := range []int{0, 1, 2, 127, 128, 129} {
					for w := uint(0); w <= 32; w++ {
						for dist := 0; dist < nDists; dist++ {
							tb.addList(t, codec, rng, n, w, dist, mode, rng.Uint32()>>rng.Intn(32))
							lists++
						}
					}
				}
				gpuCompare(t, c, kernelOf(codec), codec, &tb, mode, false)
				if mode == Docs {
					gpuCompare(t, c, kernelOf(codec), codec, &tb, mode, true)
				}
				t.Logf("%d lists, %d blocks, %d values: GPU equals CPU", lists, tb.NBlocks(), len(tb.want))
			})
		}
	}
}

// randomBatch is a batch of many lists of random lengths, widths and
// distributions, preceded by 5 values outside the batch (OutOff[0] = 5),
// so that most blocks' outputs are not 16-byte aligned.
func randomBatch(t testing.TB, codec compress.Codec, rng *rand.Rand, mode Mode, values int) *testBatch {
	tb := &testBatch{Batch: Batch{Src: []byte{1, 2, 3}, SrcOff: []uint64{3}, OutOff: []uint64{5}}}
	for len(tb.want) < values {
		n := 1 + rng.Intn(3000)
		if rng.Intn(10) == 0 {
			n = 1 + rng.Intn(300)
		}
		tb.addList(t, codec, rng, n, uint(rng.Intn(25)), rng.Intn(nDists), mode, uint32(rng.Intn(1000)))
	}
	return tb
}

// TestDecodeRandom decodes many lists of random lengths and widths per
// codec and mode in one launch, with a nonzero first output offset, with
// each codec's kernel.
func TestDecodeRandom(t *testing.T) {
	c := gpu(t)
	values := 1_000_000
	if emulated(c) {
		values = 20_000
	}
	for _, codec := range allCodecs() {
		k := kernelOf(codec)
		for _, mode := range []Mode{Docs, Freqs} {
			t.Run(codec.Name()+"/"+mode.String(), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(codec.ID())*100 + int64(mode)))
				tb := randomBatch(t, codec, rng, mode, values)
				gpuCompare(t, c, k, codec, tb, mode, true)
				t.Logf("%d blocks, %d values: GPU equals CPU (%s)", tb.NBlocks(), len(tb.want), k)
			})
		}
	}
}

// TestDecodeUnusual decodes valid encodings the index's encoders never
// write but the CPU decoders accept, which take the kernels' rarer paths:
// Rice with a forced parameter (unary arrays of many 1024-bit rounds, and
// blocks too long to stage), Simple8b with one value per word (128 words),
// HS-LRC with many hash buckets (binary search of the bucket pointers),
// PForDelta with forced slot widths (up to 128 exceptions, level-1 arrays
// with exceptions of their own).
func TestDecodeUnusual(t *testing.T) {
	c := gpu(t)
	rng := rand.New(rand.NewSource(99))
	gens := unusualEncoders(rng)
	for _, g := range gens {
		codec := codecNamed(t, g.codec)
		for _, mode := range []Mode{Docs, Freqs} {
			var tb testBatch
			for _, n := range []int{1, 2, 3, 31, 64, 100, 127, 128} {
				for _, w := range []uint{0, 1, 5, 9, 13, 17, 24, 31, 32} {
					v := blockValues(codec, rng, n, w, rng.Intn(nDists))
					tb.addBlock(t, codec, g.enc(v, w), n, mode, rng.Uint32())
				}
			}
			gpuCompare(t, c, kernelOf(codec), codec, &tb, mode, mode == Docs)
			t.Logf("%s %v: %d unusual blocks (%d bytes): GPU equals CPU", g.codec, mode, tb.NBlocks(), len(tb.Src))
		}
	}
}

type unusualEncoder struct {
	codec string
	enc   func(v []uint32, w uint) []byte
}

// unusualEncoders are encoders of valid non-canonical blocks.
func unusualEncoders(rng *rand.Rand) []unusualEncoder {
	return []unusualEncoder{
		// Quotients of up to 2^11: unary arrays of up to 2^18 bits.
		{"rice", func(v []uint32, w uint) []byte { return riceEncode(v, uint(max(0, int(w)-11+rng.Intn(3)))) }},
		{"rice", func(v []uint32, w uint) []byte { return riceEncode(v, uint(20+rng.Intn(13))) }},
		{"simple8b", func(v []uint32, _ uint) []byte { return s8bEncodeSingles(v) }},
		{"hslrc", func(v []uint32, _ uint) []byte { return hslrcEncode(v, uint(rng.Intn(33))) }},
		// Level 0 narrower than the values (up to 128 exceptions), level 1
		// at most 5 bits (exceptions of the high parts and gaps too).
		{"pfordelta", func(v []uint32, w uint) []byte {
			return pfdEncodeForced(v, uint(rng.Intn(int(w)+1)), [2]uint{uint(rng.Intn(6)), uint(rng.Intn(6))})
		}},
	}
}

// riceEncode is compress's Rice format with parameter b chosen by the
// caller instead of from the mean.
func riceEncode(vals []uint32, b uint) []byte {
	dst := binary.AppendUvarint(nil, uint64(len(vals)))
	if len(vals) == 0 {
		return dst
	}
	dst = append(dst, byte(b))
	var u uint64
	for _, v := range vals {
		u += uint64(v)>>b + 1
	}
	dst = binary.AppendUvarint(dst, u)
	u = 0
	for i, v := range vals {
		if i > 0 && i%128 == 0 {
			dst = binary.AppendUvarint(dst, u)
		}
		u += uint64(v)>>b + 1
	}
	dst = packLSB(dst, vals, b)
	unary := make([]byte, (u+7)/8)
	pos := uint64(0)
	for _, v := range vals {
		pos += uint64(v) >> b
		unary[pos>>3] |= 1 << (pos & 7)
		pos++
	}
	return append(dst, unary...)
}

// packLSB appends the low b bits (b <= 32) of every value, LSB-first, the
// last byte zero-padded: compress's packed arrays.
func packLSB(dst []byte, vals []uint32, b uint) []byte {
	var acc uint64
	var nacc uint
	for _, v := range vals {
		acc |= uint64(v) & (1<<b - 1) << nacc
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

// pfdEncodeForced is compress's PForDelta format for one sub-block (at most
// 512 values) with the slot widths chosen by the caller instead of by size:
// b0 at level 0, b1[0] and b1[1] for the level-1 arrays of high parts and
// gaps. Narrow widths give blocks of many exceptions, up to one per value,
// and level-1 arrays with exceptions of their own, which the encoder
// rarely writes: the GPU decoder's general paths.
func pfdEncodeForced(vals []uint32, b0 uint, b1 [2]uint) []byte {
	dst := binary.AppendUvarint(nil, uint64(len(vals)))
	if len(vals) == 0 {
		return dst
	}
	if len(vals) > 512 {
		panic("BUG: pfdEncodeForced: more than one sub-block")
	}
	var patched func(dst []byte, vals []uint32, b uint, level int) []byte
	patched = func(dst []byte, vals []uint32, b uint, level int) []byte {
		var highs, gaps []uint32
		prev := -1
		for j, v := range vals {
			if b < 32 && v>>b != 0 {
				highs = append(highs, v>>b)
				gaps = append(gaps, uint32(j-prev-1))
				prev = j
			}
		}
		dst = append(dst, byte(b))
		dst = binary.AppendUvarint(dst, uint64(len(highs)))
		dst = packLSB(dst, vals, b)
		for a, arr := range [][]uint32{highs, gaps} {
			if len(arr) == 0 {
				break
			}
			if level == 0 {
				dst = patched(dst, arr, b1[a], 1)
				continue
			}
			w := uint(0) // FLAT: the width of the largest value
			for _, v := range arr {
				w = max(w, uint(bits.Len32(v)))
			}
			dst = packLSB(append(dst, byte(w)), arr, w)
		}
		return dst
	}
	return patched(dst, vals, b0, 0)
}

// s8bEncodeSingles is Simple8b with every value in a selector-15 word.
func s8bEncodeSingles(vals []uint32) []byte {
	dst := binary.AppendUvarint(nil, uint64(len(vals)))
	for _, v := range vals {
		dst = binary.LittleEndian.AppendUint64(dst, 15<<60|uint64(v))
	}
	return dst
}

// hslrcEncode is compress's HS-LRC format with the hash shift sh chosen by
// the caller (sh = 32: one bucket) and each bucket's line the chord of its
// first and last values.
func hslrcEncode(vals []uint32, sh uint) []byte {
	n := len(vals)
	dst := binary.LittleEndian.AppendUint32(nil, uint32(n))
	if n == 0 {
		return dst
	}
	vmax := vals[n-1]
	d := int(uint64(vmax)>>sh) + 1
	for d > n { // d <= n: coarser hashing
		sh++
		d = int(uint64(vmax)>>sh) + 1
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(sh))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(d))
	ptr := make([]int, d+1)
	for h, i := 0, 0; h <= d; h++ {
		for i < n && uint64(vals[i])>>sh < uint64(h) {
			i++
		}
		ptr[h] = i
		dst = binary.LittleEndian.AppendUint32(dst, uint32(i))
	}
	for len(dst)%8 != 0 {
		dst = append(dst, 0)
	}
	type line struct {
		slope uint64
		base  int64
		span  uint32
	}
	lines := make([]line, d)
	off := 0
	var hdrs []byte
	var area []byte
	for h := 0; h < d; h++ {
		a, b := ptr[h], ptr[h+1]
		var l line
		if a < b {
			if b-a > 1 {
				l.slope = (uint64(vals[b-1]-vals[a]) << 32) / uint64(b-a-1)
			}
			lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
			for j, v := range vals[a:b] {
				r := int64(v) - int64(l.slope*uint64(j)>>32)
				lo, hi = min(lo, r), max(hi, r)
			}
			l.base, l.span = lo, uint32(hi-lo)
		}
		lines[h] = l
		hdrs = binary.LittleEndian.AppendUint64(hdrs, l.slope)
		hdrs = binary.LittleEndian.AppendUint64(hdrs, uint64(l.base))
		hdrs = binary.LittleEndian.AppendUint32(hdrs, l.span)
		hdrs = binary.LittleEndian.AppendUint32(hdrs, uint32(off))
		w := uint(bits.Len32(l.span))
		var acc uint64
		var nacc uint
		start := len(area)
		for j, v := range vals[a:b] {
			s := uint64(int64(v) - l.base - int64(l.slope*uint64(j)>>32))
			acc |= s << nacc
			nacc += w
			for nacc >= 8 {
				area = append(area, byte(acc))
				acc >>= 8
				nacc -= 8
			}
		}
		if nacc > 0 {
			area = append(area, byte(acc))
		}
		for (len(area)-start)%4 != 0 {
			area = append(area, 0)
		}
		off += (len(area) - start) / 4
	}
	dst = append(dst, hdrs...)
	return append(dst, area...)
}

// mutate damages a copy of enc in one of several ways (or not at all).
func mutate(rng *rand.Rand, enc []byte) ([]byte, string) {
	b := append([]byte(nil), enc...)
	switch op := rng.Intn(9); {
	case op == 0 || len(b) == 0:
		return b, "none"
	case op <= 2:
		k := 1 + rng.Intn(3)
		for i := 0; i < k; i++ {
			p := rng.Intn(len(b))
			b[p] ^= 1 << rng.Intn(8)
		}
		return b, fmt.Sprintf("flip %d bits", k)
	case op == 3:
		p := rng.Intn(len(b))
		b[p] = byte(rng.Intn(256))
		return b, fmt.Sprintf("byte %d", p)
	case op == 4:
		p := rng.Intn(min(len(b), 12))
		b[p] = byte(rng.Intn(256))
		return b, fmt.Sprintf("header byte %d", p)
	case op == 5:
		return b[:rng.Intn(len(b))], "truncate"
	case op == 6:
		for k := 1 + rng.Intn(8); k > 0; k-- {
			b = append(b, byte(rng.Intn(256)))
		}
		return b, "append"
	case op == 7:
		p := rng.Intn(min(len(b), 12))
		b[p]++
		return b, fmt.Sprintf("increment byte %d", p)
	default:
		b[len(b)-1] ^= 1 << rng.Intn(8)
		return b, "flip a last-byte bit"
	}
}

// TestDecodeFuzz damages thousands of valid blocks at random (bit flips,
// bytes, truncation, extra bytes, headers) and checks, block by block
// (DecodeArgs.Codes), that the GPU rejects exactly the blocks the CPU
// rejects and decodes the others to the CPU's values.
func TestDecodeFuzz(t *testing.T) {
	c := gpu(t)
	nblocks := 5000
	if emulated(c) {
		nblocks = 1500
	}
	seed := int64(0)
	if s := os.Getenv("QP_FUZZ_BLOCKS"); s != "" { // heavier local runs
		nblocks, _ = strconv.Atoi(s)
		seed, _ = strconv.ParseInt(os.Getenv("QP_FUZZ_SEED"), 10, 64)
	}
	for _, codec := range allCodecs() {
		for _, run := range []struct {
			mode     Mode
			withLast bool
			name     string
		}{{Docs, false, "docs"}, {Docs, true, "docs+last"}, {Freqs, false, "freqs"}} {
			mode := run.mode
			t.Run(codec.Name()+"/"+run.name, func(t *testing.T) {
				rng := rand.New(rand.NewSource(seed*1_000_003 + int64(codec.ID())*1000 + int64(mode)*10 + int64(len(run.name))))
				unusual := unusualEncoders(rng)
				var b Batch
				var want [][]uint32 // nil: the CPU rejects the block
				var how []string
				for i := 0; i < nblocks; i++ {
					m := 1 + rng.Intn(MaxBlockValues)
					if rng.Intn(4) == 0 {
						m = MaxBlockValues
					}
					w := uint(rng.Intn(33))
					v := blockValues(codec, rng, m, w, rng.Intn(nDists))
					enc := codec.AppendEncode(nil, v)
					if rng.Intn(3) == 0 {
						for _, u := range unusual {
							if u.codec == codec.Name() && rng.Intn(2) == 0 {
								enc = u.enc(v, w)
							}
						}
					}
					base := rng.Uint32()
					ok, _ := cpuDecode(codec, enc, m, mode, base, nil)
					var last uint32
					if mode == Docs {
						last = ok[m-1]
					}
					bad, what := mutate(rng, enc)
					lastp := &last
					if !run.withLast {
						lastp = nil
					}
					got, err := cpuDecode(codec, bad, m, mode, base, lastp)
					if err != nil {
						got = nil
					}
					b.Add(bad, m, base)
					b.Last = append(b.Last, last)
					want = append(want, got)
					how = append(how, what)
				}
				if !run.withLast {
					b.Last = nil
				}
				out := make([]uint32, b.Values())
				codes := make([]uint32, b.NBlocks())
				chunk := []int{0, 32, 5}[(seed+int64(len(run.name)))%3]
				err := decodeBlocks(c, kernelOf(codec), codec.Name(), &b, mode, out, decodeOpts{codes: codes, poison: testPoison(), chunk: int(chunk)})
				if err != nil && !errors.Is(err, compress.ErrCorrupt) {
					t.Fatal(err)
				}
				mismatches, rejected := 0, 0
				for i := range want {
					var why string
					switch {
					case want[i] == nil && codes[i] == 0:
						why = "GPU accepts a block the CPU rejects"
					case want[i] != nil && codes[i] != 0:
						why = fmt.Sprintf("GPU rejects (code %d: %s) a block the CPU accepts", codes[i], decodeReasons[min(int(codes[i]), len(decodeReasons)-1)])
					case want[i] != nil:
						for j, w := range want[i] {
							if g := out[int(b.OutOff[i])+j]; g != w {
								why = fmt.Sprintf("value %d = %d, CPU says %d", j, g, w)
								break
							}
						}
					}
					if want[i] == nil {
						rejected++
					}
					if why != "" {
						mismatches++
						if mismatches <= 10 {
							_, cerr := cpuDecode(codec, b.Src[b.SrcOff[i]:b.SrcOff[i+1]], int(b.OutOff[i+1]-b.OutOff[i]), mode, b.Base[i], nil)
							t.Errorf("block %d (%s, %d values, %d bytes % x): %s (CPU: %v)", i, how[i], b.OutOff[i+1]-b.OutOff[i],
								b.SrcOff[i+1]-b.SrcOff[i], head(b.Src[b.SrcOff[i]:b.SrcOff[i+1]], 16), why, cerr)
						}
					}
				}
				if mismatches > 0 {
					t.Fatalf("%d of %d blocks differ", mismatches, len(want))
				}
				// The status word names the lowest rejected block.
				var be *BlockError
				if rejected > 0 && (!errors.As(err, &be) || codes[be.Block] == 0 || lowestNonzero(codes) != be.Block) {
					t.Fatalf("status error %v does not name the lowest rejected block %d", err, lowestNonzero(codes))
				}
				t.Logf("%d blocks, %d rejected by both: GPU verdicts and values equal the CPU's", len(want), rejected)
			})
		}
	}
}

func head(b []byte, n int) []byte { return b[:min(len(b), n)] }

func lowestNonzero(codes []uint32) int {
	for i, c := range codes {
		if c != 0 {
			return i
		}
	}
	return -1
}

// TestDecodeCorrupt damages block 3 of six valid blocks in ways every codec
// must reject (the CPU agrees), and checks that the GPU names block 3 and
// an error wrapping compress.ErrCorrupt; a block of more than 128 values is
// unsupported (ErrUnsupported), not corrupt.
func TestDecodeCorrupt(t *testing.T) {
	c := gpu(t)
	for _, codec := range allCodecs() {
		t.Run(codec.Name(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(codec.ID())))
			type blk struct {
				enc   []byte
				count int
				base  uint32
				last  uint32
			}
			mk := func(count int, w uint) blk {
				enc := codec.AppendEncode(nil, blockValues(codec, rng, count, w, distUniform))
				base := uint32(rng.Intn(1 << 20))
				docs, err := cpuDecode(codec, enc, count, Docs, base, nil)
				if err != nil {
					t.Fatal(err)
				}
				b := blk{enc: enc, count: count, base: base}
				if count > 0 {
					b.last = docs[count-1]
				}
				return b
			}
			valid := []blk{mk(128, 7), mk(128, 32), mk(100, 13), mk(5, 3), mk(0, 0), mk(128, 9)}
			const k = 3
			cases := []struct {
				name   string
				damage func(b []blk)
				block  int
				code   int // 0: any corrupt code
			}{
				{"truncated", func(b []blk) { b[k].enc = b[k].enc[:len(b[k].enc)-1] }, k, 0},
				{"trailing byte", func(b []blk) { b[k].enc = append(b[k].enc, 0) }, k, 0},
				{"block length mismatch", func(b []blk) { b[k].count = 6 }, k, 0},
				{"empty input", func(b []blk) { b[k].enc = nil }, k, 0},
				{"empty block with data", func(b []blk) { b[4].enc = append(b[4].enc, 0) }, 4, 0},
				{"last docID", func(b []blk) { b[k].last++ }, k, 6},
				{"lowest of two", func(b []blk) { b[5].enc = b[5].enc[:1]; b[2].enc = b[2].enc[:2] }, 2, 0},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					bs := make([]blk, len(valid))
					for i, b := range valid {
						b.enc = append([]byte(nil), b.enc...)
						bs[i] = b
					}
					tc.damage(bs)
					var batch Batch
					for i, b := range bs {
						batch.Add(b.enc, b.count, b.base)
						batch.Last = append(batch.Last, b.last)
						_, cerr := cpuDecode(codec, b.enc, b.count, Docs, b.base, &b.last)
						if (cerr != nil) != (i == tc.block || (tc.name == "lowest of two" && i == 5)) {
							t.Fatalf("CPU verdict on block %d: %v", i, cerr)
						}
					}
					out := make([]uint32, batch.Values())
					err := DecodeBlocks(c, codec, &batch, Docs, out)
					var be *BlockError
					if !errors.As(err, &be) || be.Block != tc.block || (tc.code != 0 && be.Code != tc.code) ||
						!errors.Is(err, compress.ErrCorrupt) || be.Code == codeTooLong {
						t.Fatalf("GPU error %v, want block %d (code %d) wrapping compress.ErrCorrupt", err, tc.block, tc.code)
					}
				})
			}
			t.Run("more values than MaxBlock", func(t *testing.T) {
				m := MaxBlock(codec.ID()) + 1
				enc := codec.AppendEncode(nil, blockValues(codec, rng, m, 5, distUniform))
				var batch Batch
				batch.Add(enc, m, 0)
				err := DecodeBlocks(c, codec, &batch, Freqs, make([]uint32, m))
				var be *BlockError
				if !errors.As(err, &be) || be.Block != 0 || !errors.Is(err, ErrUnsupported) || errors.Is(err, compress.ErrCorrupt) {
					t.Fatalf("GPU error %v, want block 0 wrapping ErrUnsupported", err)
				}
			})
		})
	}
}

// TestDecodeAPI checks the host-side contract: unknown codecs, bad batches,
// empty batches.
func TestDecodeAPI(t *testing.T) {
	for _, codec := range compress.All() {
		if Supported(codec.ID()) == cpuOnly[codec.ID()] {
			t.Errorf("codec %s: GPU decoder %v, CPU-only %v", codec.Name(), Supported(codec.ID()), cpuOnly[codec.ID()])
		}
	}
	if Supported(0) {
		t.Error("codec ID 0 supported")
	}
	if err := DecodeStatusError("x", math.MaxUint64); err != nil {
		t.Errorf("all-ones status: %v", err)
	}
	err := DecodeStatusError("eliasfano", 12<<8|3)
	var be *BlockError
	if !errors.As(err, &be) || be.Block != 12 || be.Code != 3 || !errors.Is(err, compress.ErrCorrupt) ||
		err.Error() != "cuda eliasfano: block 12: truncated block" {
		t.Errorf("status error %v", err)
	}
	if err := DecodeStatusError("x", 1<<8|codeTooLong); !errors.Is(err, ErrUnsupported) {
		t.Errorf("too-long status error %v", err)
	}
	c := gpu(t)
	codec := codecNamed(t, "bp128")
	if err := DecodeBlocks(c, codec, &Batch{}, Docs, nil); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	b := Batch{Src: []byte{1}, SrcOff: []uint64{0, 2}, OutOff: []uint64{0, 1}, Base: []uint32{0}}
	if err := DecodeBlocks(c, codec, &b, Docs, make([]uint32, 1)); err == nil {
		t.Error("a source offset past the bytes accepted")
	}
}
