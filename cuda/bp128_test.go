package cuda

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/qpengine/qp/compress"
)

func bp128Codec(t testing.TB) compress.Codec {
	c, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cpuDocs decodes one block on the CPU exactly as index.List.DecodeDocs does
// for a General codec: compress Decode, the count check, the d-gap prefix
// sum from base, and (when last != nil) the last-docID check.
func cpuDocs(codec compress.Codec, block []byte, count int, base uint32, last *uint32) ([]uint32, error) {
	out := make([]uint32, max(count, bp128BlockValues))
	n, err := codec.Decode(out, block)
	if err != nil {
		return nil, err
	}
	if n != count {
		return nil, fmt.Errorf("%d values, want %d", n, count)
	}
	out = out[:n]
	if n == 0 {
		return out, nil
	}
	d := base + out[0]
	out[0] = d
	for i := 1; i < n; i++ {
		d += out[i] + 1
		out[i] = d
	}
	if last != nil && out[n-1] != *last {
		return nil, fmt.Errorf("last docID %d, want %d", out[n-1], *last)
	}
	return out, nil
}

// gapsOfWidth returns m random values whose largest has exactly w bits.
func gapsOfWidth(rng *rand.Rand, m int, w uint) []uint32 {
	v := make([]uint32, m)
	if w == 0 || m == 0 {
		return v
	}
	mask := uint32(1<<w - 1)
	for i := range v {
		v[i] = rng.Uint32() & mask
		if rng.Intn(4) == 0 {
			v[i] >>= rng.Intn(int(w)) // some small gaps too
		}
	}
	v[rng.Intn(m)] |= 1 << (w - 1)
	return v
}

// testList is a posting list cut into index blocks, with its CPU decoding.
type testList struct {
	blocks [][]byte
	counts []int
	bases  []uint32
	docs   []uint32 // CPU result, all blocks
}

// addList encodes a list of length n (0: one empty block) whose gaps have
// width w into blocks of 128, the first decoding from base, and decodes it
// on the CPU.
func addList(t testing.TB, codec compress.Codec, rng *rand.Rand, n int, w uint, base uint32) testList {
	var l testList
	for start := 0; start == 0 || start < n; start += bp128BlockValues {
		m := min(n-start, bp128BlockValues)
		g := gapsOfWidth(rng, m, w)
		enc := codec.AppendEncode(nil, g)
		hdr := 1
		if m == bp128BlockValues {
			hdr = 2
		}
		if m > 0 && uint(enc[hdr]) != w {
			t.Fatalf("encoder chose width %d for width-%d gaps", enc[hdr], w)
		}
		docs, err := cpuDocs(codec, enc, m, base, nil)
		if err != nil {
			t.Fatalf("CPU decode of a fresh block: %v", err)
		}
		l.blocks = append(l.blocks, enc)
		l.counts = append(l.counts, m)
		l.bases = append(l.bases, base)
		l.docs = append(l.docs, docs...)
		if m > 0 {
			base = docs[m-1] + 1
		}
	}
	return l
}

// gpuCheck decodes batch on the GPU, with and without the last-docID check,
// and compares out[OutOff[0]:] bit for bit with want; out[:OutOff[0]] must
// stay untouched.
func gpuCheck(t *testing.T, c *Context, batch *BP128Batch, last []uint32, want []uint32) {
	t.Helper()
	const canary = 0x5a5a5a5a
	first := int(batch.OutOff[0])
	for _, withLast := range []bool{false, true} {
		batch.Last = nil
		if withLast {
			batch.Last = last
		}
		got := make([]uint32, batch.Values())
		for i := range got {
			got[i] = canary
		}
		if err := DecodeBP128Blocks(c, batch, got); err != nil {
			t.Fatalf("DecodeBP128Blocks (last check %v): %v", withLast, err)
		}
		for i := 0; i < first; i++ {
			if got[i] != canary {
				t.Fatalf("value %d before the batch's output overwritten", i)
			}
		}
		if len(got)-first != len(want) {
			t.Fatalf("%d values decoded, want %d", len(got)-first, len(want))
		}
		for i := range want {
			if got[first+i] != want[i] {
				t.Fatalf("last check %v: value %d = %d, CPU says %d", withLast, i, got[first+i], want[i])
			}
		}
	}
}

// TestBP128Widths decodes, in one launch, lists of every boundary length
// {0, 1, 2, 127, 128, 129} for every bit width 0..32, from bases that make
// some docIDs wrap around 2^32 like the CPU's uint32 arithmetic does.
func TestBP128Widths(t *testing.T) {
	c := gpu(t)
	codec := bp128Codec(t)
	rng := rand.New(rand.NewSource(128))
	var batch BP128Batch
	var want []uint32
	lists := 0
	for _, n := range []int{0, 1, 2, 127, 128, 129} {
		for w := uint(0); w <= 32; w++ {
			base := rng.Uint32() >> rng.Intn(32)
			l := addList(t, codec, rng, n, w, base)
			for i, b := range l.blocks {
				batch.Add(b, l.counts[i], l.bases[i])
			}
			want = append(want, l.docs...)
			lists++
		}
	}
	// The expected last docIDs, from the CPU result (0 for empty blocks).
	last := make([]uint32, batch.NBlocks())
	for i := range last {
		if e := batch.OutOff[i+1]; e > batch.OutOff[i] {
			last[i] = want[e-1]
		}
	}
	gpuCheck(t, c, &batch, last, want)
	t.Logf("%d lists, %d blocks, %d docIDs: GPU equals CPU", lists, batch.NBlocks(), len(want))
}

// TestBP128Random decodes many lists of random lengths and widths in one
// launch, with a nonzero first output offset.
func TestBP128Random(t *testing.T) {
	c := gpu(t)
	codec := bp128Codec(t)
	rng := rand.New(rand.NewSource(7))
	batch := BP128Batch{Src: []byte{1, 2, 3}, SrcOff: []uint64{3}, OutOff: []uint64{5}}
	want := make([]uint32, 5)
	for len(want) < 3_000_000 {
		n := 1 + rng.Intn(5000)
		if rng.Intn(10) == 0 {
			n = 1 + rng.Intn(300)
		}
		l := addList(t, codec, rng, n, uint(rng.Intn(24)), uint32(rng.Intn(1000)))
		for i, b := range l.blocks {
			batch.Add(b, l.counts[i], l.bases[i])
		}
		want = append(want, l.docs...)
	}
	last := make([]uint32, batch.NBlocks())
	for i := range last {
		last[i] = want[batch.OutOff[i+1]-1] // want[:5] stands for the 5 values before the batch
	}
	gpuCheck(t, c, &batch, last, want[5:])
	t.Logf("%d blocks, %d docIDs: GPU equals CPU", batch.NBlocks(), len(want)-5)
}

// TestBP128Corrupt damages one block of a valid batch in each way the CPU
// rejects and checks that the GPU reports that block, and that the CPU
// rejects it too.
func TestBP128Corrupt(t *testing.T) {
	c := gpu(t)
	codec := bp128Codec(t)
	rng := rand.New(rand.NewSource(3))
	// Six blocks; block 3 has 5 values of width 3 (15 bits: one padding bit).
	type blk struct {
		enc   []byte
		count int
		base  uint32
		last  uint32
	}
	mk := func(count int, w uint, base uint32) blk {
		enc := codec.AppendEncode(nil, gapsOfWidth(rng, count, w))
		docs, err := cpuDocs(codec, enc, count, base, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := blk{enc: enc, count: count, base: base}
		if count > 0 {
			b.last = docs[count-1]
		}
		return b
	}
	valid := []blk{mk(128, 7, 0), mk(128, 32, 10), mk(100, 13, 99), mk(5, 3, 1000), mk(0, 0, 0), mk(128, 9, 5)}
	const k = 3
	cases := []struct {
		name   string
		damage func(b []blk)
		block  int
		code   int
	}{
		{"width 33", func(b []blk) { b[k].enc[1] = 33 }, k, 2},
		{"truncated", func(b []blk) { b[k].enc = b[k].enc[:len(b[k].enc)-1] }, k, 3},
		{"trailing byte", func(b []blk) { b[k].enc = append(b[k].enc, 0) }, k, 4},
		{"padding bit", func(b []blk) { b[k].enc[len(b[k].enc)-1] |= 0x80 }, k, 5},
		{"count header too small", func(b []blk) { b[k].enc[0] = 4 }, k, 1},
		{"block length mismatch", func(b []blk) { b[k].count = 6 }, k, 1},
		{"non-minimal count", func(b []blk) { b[k].enc = append([]byte{0x85, 0x00}, b[k].enc[1:]...) }, k, 1},
		{"more than 128 values", func(b []blk) { b[0].count = 129 }, 0, 1},
		{"empty block with data", func(b []blk) { b[4].enc = append(b[4].enc, 0) }, 4, 4},
		{"empty input", func(b []blk) { b[4].enc = nil }, 4, 1},
		{"last docID", func(b []blk) { b[k].last++ }, k, 6},
		{"lowest of two", func(b []blk) { b[5].enc[2] = 40; b[2].enc[1] = 40 }, 2, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bs := make([]blk, len(valid))
			for i, b := range valid {
				b.enc = append([]byte(nil), b.enc...)
				bs[i] = b
			}
			tc.damage(bs)
			var batch BP128Batch
			for i, b := range bs {
				batch.Add(b.enc, b.count, b.base)
				batch.Last = append(batch.Last, b.last)
				// The CPU must agree on which blocks are corrupt.
				_, cerr := cpuDocs(codec, b.enc, b.count, b.base, &b.last)
				if (cerr != nil) != (i == tc.block || (tc.name == "lowest of two" && i == 5)) {
					t.Fatalf("CPU verdict on block %d: %v", i, cerr)
				}
			}
			out := make([]uint32, batch.Values())
			err := DecodeBP128Blocks(c, &batch, out)
			var be *BlockError
			if !errors.As(err, &be) || be.Block != tc.block || be.Code != tc.code || !errors.Is(err, compress.ErrCorrupt) {
				t.Fatalf("GPU error %v, want block %d code %d wrapping compress.ErrCorrupt", err, tc.block, tc.code)
			}
		})
	}
}

// BenchmarkBP128Docs measures the kernel alone (device-resident input, CUDA
// events) on 2^18 blocks (33.5M docIDs) of random widths 1..20.
func BenchmarkBP128Docs(b *testing.B) {
	c := gpu(b)
	codec := bp128Codec(b)
	rng := rand.New(rand.NewSource(1))
	var batch BP128Batch
	enc := make([][]byte, 64)
	for i := range enc {
		enc[i] = codec.AppendEncode(nil, gapsOfWidth(rng, bp128BlockValues, uint(1+i%20)))
	}
	for i := 0; i < 1<<18; i++ {
		batch.Add(enc[rng.Intn(len(enc))], bp128BlockValues, uint32(i))
	}
	n := batch.NBlocks()
	k, err := c.Kernels()
	if err != nil {
		b.Fatal(err)
	}
	a := BP128Args{NBlocks: n}
	for _, g := range []struct {
		dst   **Buffer
		bytes int
	}{{&a.Src, len(batch.Src)}, {&a.SrcOff, 8 * (n + 1)}, {&a.OutOff, 8 * (n + 1)}, {&a.Base, 4 * n}, {&a.Out, 4 * batch.Values()}, {&a.Status, 8}} {
		if *g.dst, err = c.Pool().Get(g.bytes); err != nil {
			b.Fatal(err)
		}
		defer (*g.dst).Free()
	}
	for _, err := range []error{CopyToDevice(a.Src, 0, batch.Src), CopyToDevice(a.SrcOff, 0, batch.SrcOff),
		CopyToDevice(a.OutOff, 0, batch.OutOff), CopyToDevice(a.Base, 0, batch.Base)} {
		if err != nil {
			b.Fatal(err)
		}
	}
	s, err := c.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Destroy()
	e0, _ := c.NewEvent()
	e1, _ := c.NewEvent()
	defer e0.Destroy()
	defer e1.Destroy()
	if err := c.Synchronize(); err != nil { // uploads done before the stream starts
		b.Fatal(err)
	}
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, err := range []error{e0.Record(s), k.LaunchBP128Docs(s, a), e1.Record(s), e1.Synchronize()} {
			if err != nil {
				b.Fatal(err)
			}
		}
		el, err := Elapsed(e0, e1)
		if err != nil {
			b.Fatal(err)
		}
		total += el
	}
	b.StopTimer()
	var status [1]uint64
	if err := CopyFromDevice(status[:], a.Status, 0); err != nil || BP128StatusError(status[0]) != nil {
		b.Fatalf("status %#x, %v", status[0], err)
	}
	per := total.Seconds() / float64(b.N)
	vals := float64(batch.Values())
	bytes := float64(len(batch.Src)) + 4*vals + float64(20*n)
	b.ReportMetric(vals/per/1e9, "Gint/s")
	b.ReportMetric(bytes/per/1e9, "GB/s")
	b.ReportMetric(per*1e6, "µs/launch")
}
