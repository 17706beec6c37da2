package kern

import (
	"math/rand"
	"testing"

	"github.com/qpengine/qp/compress"
)

// longBlockSizes are the block sizes (values per index block) of the
// long-block tests: the boundaries around one and several 128-value
// segments, and the index's largest block.
var longBlockSizes = []int{1, 2, 127, 128, 129, 200, 255, 256, 257, 384, 511, 512, 513, 1000, 4096}

// TestDecodeLongBlocks decodes, for every codec whose GPU decoder takes
// blocks longer than 128 values (MaxBlock), with every kernel and in both
// modes, lists cut into blocks of each of longBlockSizes (as an index built
// with that --block would), for several bit widths and distributions, and
// compares with the CPU bit for bit; codecs limited to 128 values must
// report such blocks as unsupported (TestDecodeCorrupt).
func TestDecodeLongBlocks(t *testing.T) {
	c := gpu(t)
	rng := rand.New(rand.NewSource(11))
	for _, codec := range allCodecs() {
		if MaxBlock(codec.ID()) <= MaxBlockValues {
			continue
		}
		for _, mode := range []Mode{Docs, Freqs} {
			for _, bs := range append(longBlockSizes, MaxBlock(codec.ID())) {
				if bs > MaxBlock(codec.ID()) {
					continue
				}
				var tb testBatch
				for _, w := range []uint{0, 1, 3, 8, 9, 13, 31, 32} {
					n := bs*2 + 1 + rng.Intn(bs) // two full blocks and a partial one
					if bs > 4096 {
						n = bs
						if w != 8 && w != 32 {
							continue
						}
					}
					base := rng.Uint32()
					for start := 0; start < n; start += bs {
						m := min(n-start, bs)
						enc := codec.AppendEncode(nil, blockValues(codec, rng, m, w, rng.Intn(3)))
						docs := tb.addBlock(t, codec, enc, m, mode, base)
						if mode == Docs {
							base = docs[m-1] + 1
						}
					}
				}
				gpuCompare(t, c, kernelOf(codec), codec, &tb, mode, true)
			}
		}
	}
}

// TestDecodeLongBlocksFuzz damages long blocks at random and checks that
// the GPU rejects exactly the blocks the CPU rejects (block by block) and
// decodes the others to the CPU's values.
func TestDecodeLongBlocksFuzz(t *testing.T) {
	c := gpu(t)
	rng := rand.New(rand.NewSource(12))
	for _, codec := range allCodecs() {
		if MaxBlock(codec.ID()) <= MaxBlockValues {
			continue
		}
		k := kernelOf(codec)
		var b Batch
		var want [][]uint32
		var wantErr []bool
		for i := 0; i < 400; i++ {
			m := min(MaxBlock(codec.ID()), []int{129, 256, 300, 512, 1000}[rng.Intn(5)])
			enc := codec.AppendEncode(nil, blockValues(codec, rng, m, uint(rng.Intn(33)), rng.Intn(3)))
			bad, _ := mutate(rng, enc)
			base := rng.Uint32()
			d, err := cpuDecode(codec, bad, m, Docs, base, nil)
			b.Add(bad, m, base)
			var last uint32
			if err == nil {
				last = d[m-1]
			}
			b.Last = append(b.Last, last)
			want = append(want, d)
			wantErr = append(wantErr, err != nil)
		}
		codes := make([]uint32, b.NBlocks())
		out := make([]uint32, b.Values())
		_ = decodeBlocks(c, k, codec.Name(), &b, Docs, out, decodeOpts{codes: codes, poison: testPoison()})
		rejected := 0
		for i := range codes {
			if (codes[i] != 0) != wantErr[i] {
				t.Fatalf("%s: block %d (%d values): GPU code %d, CPU rejects: %v", k, i, b.OutOff[i+1]-b.OutOff[i], codes[i], wantErr[i])
			}
			if codes[i] == codeTooLong {
				t.Fatalf("%s: block %d reported unsupported", k, i)
			}
			if wantErr[i] {
				rejected++
				continue
			}
			for j, w := range want[i] {
				if g := out[int(b.OutOff[i])+j]; g != w {
					t.Fatalf("%s: block %d value %d = %d, CPU says %d", k, i, j, g, w)
				}
			}
		}
		if rejected == 0 || rejected == len(codes) {
			t.Fatalf("%s: %d of %d damaged blocks rejected: the fuzz test does not test", k, rejected, len(codes))
		}
		t.Logf("%s: %d of %d damaged long blocks rejected by both, the rest decoded equal", k, rejected, len(codes))
	}
}

// TestMaxBlock checks MaxBlock against the kernels' limits.
func TestMaxBlock(t *testing.T) {
	for _, codec := range compress.All() {
		want := MaxBlockValues
		switch codec.ID() {
		case compress.IDBP128, compress.IDVByte, compress.IDLRC, compress.IDParaPFor:
			want = 1 << 16
		case compress.IDLRCSeg, compress.IDSegLRC:
			want = 256
		case compress.IDInterpolative, compress.IDBP128IP:
			want = 0 // no GPU decoder (cpuOnly)
		}
		if got := MaxBlock(codec.ID()); got != want {
			t.Errorf("MaxBlock(%s) = %d, want %d", codec.Name(), got, want)
		}
	}
	if MaxBlock(compress.ID(250)) != 0 {
		t.Error("MaxBlock of an unknown codec is not 0")
	}
}
