package kern

import (
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/qpengine/qp/cuda"
)

// The query kernels' building blocks checked in isolation against Go
// references; engine/gpu checks whole queries against the CPU engine.

func qkLoad(t *testing.T) (*cuda.Context, *QueryKernels) {
	t.Helper()
	c := gpu(t)
	q, err := LoadQueryKernels(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, q
}

func qkEmulated(c *cuda.Context) bool { return strings.Contains(c.Device().Name, "emulator") }

// emuShort reports whether the tests run on the CUDA emulator in short mode
// (`make test-emu`: go test -short), where the slowest tests take smaller
// inputs. Each keeps its boundary cases; on a GPU -short changes nothing.
func emuShort(c *cuda.Context) bool { return testing.Short() && qkEmulated(c) }

func qkU32(t *testing.T, c *cuda.Context, v []uint32, extra int) *cuda.Buffer {
	t.Helper()
	b, err := c.Alloc(4*(len(v)+extra) + 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := cuda.CopyToDevice(b, 0, v); err != nil {
		t.Fatal(err)
	}
	return b
}

func qkU64(t *testing.T, c *cuda.Context, v []uint64, extra int) *cuda.Buffer {
	t.Helper()
	b, err := c.Alloc(8*(len(v)+extra) + 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := cuda.CopyToDevice(b, 0, v); err != nil {
		t.Fatal(err)
	}
	return b
}

func qkFree(bs ...*cuda.Buffer) {
	for _, b := range bs {
		_ = b.Free()
	}
}

// TestQueryScan checks ScanU32 and ScanS4 against a host reference at sizes
// around the tile boundaries, with the partials summed by every apply CTA
// (ScanFuseParts 512), by the partials launch (0), and both in one run (4:
// sizes up to 4 tiles fused, larger ones not).
func TestQueryScan(t *testing.T) {
	c, q := qkLoad(t)
	sizes := []int{1, 2, 5, 255, 1023, 1024, 1025, 2047, 2048, 2049, 4096, 4097, 70000}
	if !qkEmulated(c) {
		sizes = append(sizes, 512*1024, 512*1024+1, 1<<20+3, 3<<20+777) // more than 512 and 1024 partial sums
	}
	defer func(f int) { ScanFuseParts = f }(ScanFuseParts)
	for _, fuse := range []int{512, 0, 4} {
		ScanFuseParts = fuse
		if err := q.ScanU32(nil, 0, 0, 0, 0); err != nil {
			t.Fatalf("fuse %d: empty scan: %v", fuse, err)
		}
		if ScanLaunches(0) != 0 {
			t.Fatalf("fuse %d: ScanLaunches(0) = %d", fuse, ScanLaunches(0))
		}
		rng := rand.New(rand.NewSource(1))
		for _, n := range sizes {
			testScanN(t, c, q, rng, fuse, n)
		}
	}
}

func testScanN(t *testing.T, c *cuda.Context, q *QueryKernels, rng *rand.Rand, fuse, n int) {
	// uint32, in place.
	in := make([]uint32, n)
	for i := range in {
		in[i] = uint32(rng.Intn(3))
		if rng.Intn(100) == 0 {
			in[i] = rng.Uint32() >> 8
		}
	}
	buf := qkU32(t, c, in, 1)
	part := qkU32(t, c, make([]uint32, ScanParts(n)+1), 0)
	if err := q.ScanU32(nil, buf.Ptr(), buf.Ptr(), part.Ptr(), n); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, n+1)
	if err := cuda.CopyFromDevice(got, buf, 0); err != nil {
		t.Fatal(err)
	}
	var run uint32
	for i := 0; i <= n; i++ {
		if got[i] != run {
			t.Fatalf("fuse %d: u32 scan n=%d: out[%d] = %d, want %d", fuse, n, i, got[i], run)
		}
		if i < n {
			run += in[i]
		}
	}
	qkFree(buf, part)

	// S4, out of place.
	in4 := make([]uint64, S4Words/2*n)
	for i := range in4 {
		in4[i] = uint64(rng.Intn(1000))
		if rng.Intn(50) == 0 {
			in4[i] = rng.Uint64() >> 24
		}
	}
	src := qkU64(t, c, in4, 0)
	dst := qkU64(t, c, make([]uint64, S4Words/2*(n+1)), 0)
	part4 := qkU64(t, c, make([]uint64, S4Words/2*(ScanParts(n)+1)), 0)
	if err := q.ScanS4(nil, src.Ptr(), dst.Ptr(), part4.Ptr(), n); err != nil {
		t.Fatal(err)
	}
	got4 := make([]uint64, S4Words/2*(n+1))
	if err := cuda.CopyFromDevice(got4, dst, 0); err != nil {
		t.Fatal(err)
	}
	var r4 [4]uint64
	for i := 0; i <= n; i++ {
		for f := 0; f < 4; f++ {
			if got4[4*i+f] != r4[f] {
				t.Fatalf("fuse %d: S4 scan n=%d: out[%d].%d = %d, want %d", fuse, n, i, f, got4[4*i+f], r4[f])
			}
			if i < n {
				r4[f] += in4[4*i+f]
			}
		}
	}
	qkFree(src, dst, part4)
}

// refKey is the kernels' rank key.
func qkKey(doc uint32, s float32) uint64 { return uint64(^math.Float32bits(s))<<32 | uint64(doc) }

func TestQueryTopK(t *testing.T) {
	c, q := qkLoad(t)
	rng := rand.New(rand.NewSource(2))
	ks := []int{1, 2, 3, 10, 100, 1000, 4096, 4097, 10000}
	type query struct {
		k    int
		docs []uint32
		sc   []float32
	}
	for _, dense := range []bool{false, true} {
		ndocs := 9000
		var qs []query
		for _, k := range ks {
			for _, n := range []int{0, 1, k - 1, k, k + 1, 3*k + 5, 8000} {
				if n < 0 || n > ndocs {
					continue
				}
				// n distinct documents with tied scores drawn from a few values,
				// or many distinct ones.
				docs := rng.Perm(ndocs)[:n]
				slices.Sort(docs)
				qq := query{k: k}
				levels := 1 + rng.Intn(50)
				for _, d := range docs {
					qq.docs = append(qq.docs, uint32(d))
					s := float32(1+rng.Intn(levels)) * 0.37
					if rng.Intn(2) == 0 {
						s = rng.Float32()*10 + 1e-6
					}
					qq.sc = append(qq.sc, s)
				}
				qs = append(qs, qq)
			}
		}
		nq := len(qs)
		meta := make([]uint32, QMetaWords*nq)
		var cdoc, cq []uint32
		var cscore []float32
		acc := make([]float32, nq*ndocs)
		scratchOff := make([]uint64, nq)
		var res, scratch int
		for a, qq := range qs {
			PutQMeta(meta[QMetaWords*a:], 0, 0, uint32(qq.k), uint32(res))
			res += qq.k
			if qq.k > 4096 {
				p := 1
				for p < qq.k {
					p <<= 1
				}
				scratchOff[a] = uint64(scratch)
				scratch += p
			}
			for i, d := range qq.docs {
				cdoc = append(cdoc, d)
				cscore = append(cscore, qq.sc[i])
				cq = append(cq, uint32(a))
				acc[a*ndocs+int(d)] = qq.sc[i]
			}
		}
		bufs := []*cuda.Buffer{
			qkU32(t, c, meta, 0), qkU32(t, c, cdoc, 0), qkU32(t, c, qkF32(cscore), 0), qkU32(t, c, cq, 0),
			qkU32(t, c, qkF32(acc), 0), qkU64(t, c, make([]uint64, res), 0), qkU32(t, c, make([]uint32, nq), 0),
			qkU32(t, c, make([]uint32, nq), 0), qkU64(t, c, make([]uint64, scratch+1), 0), qkU64(t, c, scratchOff, 0),
		}
		if err := q.TopK(nil, dense, nq, bufs[0].Ptr(), bufs[1].Ptr(), bufs[2].Ptr(), bufs[3].Ptr(), len(cdoc),
			bufs[4].Ptr(), uint32(ndocs), bufs[5].Ptr(), bufs[6].Ptr(), bufs[7].Ptr(), bufs[8].Ptr(), bufs[9].Ptr()); err != nil {
			t.Fatal(err)
		}
		gotRes := make([]uint64, res)
		gotCnt := make([]uint32, nq)
		gotTot := make([]uint32, nq)
		for _, e := range []error{cuda.CopyFromDevice(gotRes, bufs[5], 0), cuda.CopyFromDevice(gotCnt, bufs[6], 0), cuda.CopyFromDevice(gotTot, bufs[7], 0)} {
			if e != nil {
				t.Fatal(e)
			}
		}
		qkFree(bufs...)
		off := 0
		for a, qq := range qs {
			keys := make([]uint64, len(qq.docs))
			for i, d := range qq.docs {
				keys[i] = qkKey(d, qq.sc[i])
			}
			slices.Sort(keys)
			want := keys[:min(qq.k, len(keys))]
			if int(gotCnt[a]) != len(want) || int(gotTot[a]) != len(keys) {
				t.Fatalf("dense=%v query %d (k=%d, %d items): cnt %d total %d, want %d %d", dense, a, qq.k, len(keys), gotCnt[a], gotTot[a], len(want), len(keys))
			}
			for r, w := range want {
				if gotRes[off+r] != w {
					t.Fatalf("dense=%v query %d (k=%d, %d items): result %d = %#x, want %#x", dense, a, qq.k, len(keys), r, gotRes[off+r], w)
				}
			}
			off += qq.k
		}
	}
}

func qkF32(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, f := range v {
		out[i] = math.Float32bits(f)
	}
	return out
}
