package kern

import (
	"errors"
	"math"
	"math/rand"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
)

// TestBP128Legacy runs the baseline kernel qp_bp128_docs (LaunchBP128Docs)
// on a random batch and on a corrupt block: it stays tested while it is
// kept as the speed baseline.
func TestBP128Legacy(t *testing.T) {
	c := gpu(t)
	codec := codecNamed(t, "bp128")
	rng := rand.New(rand.NewSource(7))
	values := 500_000
	if emulated(c) {
		values = 5_000
	}
	tb := randomBatch(t, codec, rng, Docs, values)
	run := func(b *Batch) ([]uint32, error) {
		k, err := Load(c)
		if err != nil {
			t.Fatal(err)
		}
		n := b.NBlocks()
		outOff := make([]uint64, n+1)
		for i, o := range b.OutOff {
			outOff[i] = o - b.OutOff[0]
		}
		a := BP128Args{NBlocks: n}
		for _, g := range []struct {
			dst   **cuda.Buffer
			bytes int
		}{{&a.Src, len(b.Src)}, {&a.SrcOff, 8 * (n + 1)}, {&a.OutOff, 8 * (n + 1)}, {&a.Base, 4 * n},
			{&a.Last, 4 * n}, {&a.Out, 4 * int(outOff[n])}, {&a.Status, 8}} {
			if *g.dst, err = c.Pool().Get(g.bytes); err != nil {
				t.Fatal(err)
			}
			defer (*g.dst).Free()
		}
		for _, err := range []error{cuda.CopyToDevice(a.Src, 0, b.Src), cuda.CopyToDevice(a.SrcOff, 0, b.SrcOff),
			cuda.CopyToDevice(a.OutOff, 0, outOff), cuda.CopyToDevice(a.Base, 0, b.Base), cuda.CopyToDevice(a.Last, 0, b.Last)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := k.LaunchBP128Docs(nil, a); err != nil {
			t.Fatal(err)
		}
		var status [1]uint64
		out := make([]uint32, outOff[n])
		if err := cuda.CopyFromDevice(status[:], a.Status, 0); err != nil {
			t.Fatal(err)
		}
		if err := cuda.CopyFromDevice(out, a.Out, 0); err != nil {
			t.Fatal(err)
		}
		return out, BP128StatusError(status[0])
	}
	got, err := run(&tb.Batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range tb.want {
		if got[i] != w {
			t.Fatalf("value %d = %d, CPU says %d", i, got[i], w)
		}
	}
	// Block 3 with a width of 33 (code 2), block 5 with a wrong last docID.
	bad := tb.Batch
	bad.Src = append([]byte(nil), tb.Src...)
	bad.Last = append([]uint32(nil), tb.Last...)
	hdr := 1
	if bad.OutOff[4]-bad.OutOff[3] == 128 {
		hdr = 2
	}
	bad.Src[bad.SrcOff[3]+uint64(hdr)] = 33
	bad.Last[5]++
	_, err = run(&bad)
	var be *BlockError
	if !errors.As(err, &be) || be.Block != 3 || be.Code != 2 || !errors.Is(err, compress.ErrCorrupt) {
		t.Fatalf("corrupt batch: %v, want block 3 code 2", err)
	}
	if BP128StatusError(math.MaxUint64) != nil {
		t.Fatal("all-ones status is an error")
	}
	t.Logf("%d blocks, %d docIDs: baseline kernel equals CPU", tb.NBlocks(), len(tb.want))
}
