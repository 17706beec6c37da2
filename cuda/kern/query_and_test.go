package kern

import (
	"math"
	"math/rand"
	"testing"

	"github.com/qpengine/qp/cuda"
)

// TestAndCompact checks Compact (the flags' scan fused with the
// compaction) against a host reference at sizes around the tile
// boundaries, with flags all 0, all 1 and mixed, the tiles' sums scanned
// by each CTA (ScanFuseParts 512), by the partials launch first (0), and
// both in one run (4).
func TestAndCompact(t *testing.T) {
	c, q := qkLoad(t)
	a, err := LoadAndKernels(q)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{1, 2, 5, 1023, 1024, 1025, 2048, 4097, 70000}
	if !qkEmulated(c) {
		sizes = append(sizes, 512*1024, 512*1024+1, 3<<20+777)
	}
	defer func(f int) { ScanFuseParts = f }(ScanFuseParts)
	for _, fuse := range []int{512, 0, 4} {
		ScanFuseParts = fuse
		if err := a.Compact(nil, 0, 0, 0, 0, 0, 0, 0, 0, 0); err != nil {
			t.Fatalf("fuse %d: no candidates: %v", fuse, err)
		}
		rng := rand.New(rand.NewSource(3))
		for _, n := range sizes {
			for _, keep := range []int{0, 100, 50, 3} { // percent kept
				testCompactN(t, c, a, rng, fuse, n, keep)
			}
		}
	}
}

func testCompactN(t *testing.T, c *cuda.Context, a *AndKernels, rng *rand.Rand, fuse, n, keep int) {
	flag := make([]uint32, n+1)
	part := make([]uint32, ScanParts(n)+1)
	cdoc, cq, cscore := make([]uint32, n), make([]uint32, n), make([]uint32, n)
	var want [3][]uint32
	for i := 0; i < n; i++ {
		cdoc[i], cq[i], cscore[i] = rng.Uint32(), uint32(i/7), math.Float32bits(rng.Float32())
		if rng.Intn(100) < keep {
			flag[i] = 1
			part[i/ScanTile]++
			want[0], want[1], want[2] = append(want[0], cdoc[i]), append(want[1], cscore[i]), append(want[2], cq[i])
		}
	}
	flag[n] = 0xdeadbeef
	bufs := []*cuda.Buffer{qkU32(t, c, flag, 0), qkU32(t, c, part, 0), qkU32(t, c, cdoc, 0), qkU32(t, c, cscore, 0),
		qkU32(t, c, cq, 0)}
	out := make([]*cuda.Buffer, 3)
	for i := range out {
		out[i] = qkU32(t, c, make([]uint32, n), 0)
	}
	defer qkFree(append(bufs, out...)...)
	if err := a.Compact(nil, n, bufs[0].Ptr(), bufs[1].Ptr(), bufs[2].Ptr(), bufs[3].Ptr(), bufs[4].Ptr(), out[0].Ptr(),
		out[1].Ptr(), out[2].Ptr()); err != nil {
		t.Fatal(err)
	}
	gotFlag := make([]uint32, n+1)
	if err := cuda.CopyFromDevice(gotFlag, bufs[0], 0); err != nil {
		t.Fatal(err)
	}
	kept := len(want[0])
	if int(gotFlag[n]) != kept {
		t.Fatalf("fuse %d n %d keep %d%%: flag[n] = %d, want %d kept", fuse, n, keep, gotFlag[n], kept)
	}
	for i := 0; i < n; i++ {
		if gotFlag[i] != flag[i] {
			t.Fatalf("fuse %d n %d: flag[%d] changed to %d", fuse, n, i, gotFlag[i])
		}
	}
	for f, name := range []string{"doc", "score", "query"} {
		got := make([]uint32, n)
		if err := cuda.CopyFromDevice(got, out[f], 0); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < kept; i++ {
			if got[i] != want[f][i] {
				t.Fatalf("fuse %d n %d keep %d%%: %s[%d] = %#x, want %#x", fuse, n, keep, name, i, got[i], want[f][i])
			}
		}
		if f == 2 {
			for i := kept; i < n; i++ {
				if got[i] != AndNone {
					t.Fatalf("fuse %d n %d keep %d%%: query[%d] = %#x past %d kept, want AndNone", fuse, n, keep, i, got[i], kept)
				}
			}
		}
	}
}

// TestAndSelect checks Select (the scan of Locate's sel fused with the
// list of the selected blocks and the previous count) against a host
// reference at sizes around the tile boundaries, with no head, every
// candidate a head and a few, in both partials modes (ScanFuseParts 512
// and 0) and mixed (4).
func TestAndSelect(t *testing.T) {
	c, q := qkLoad(t)
	a, err := LoadAndKernels(q)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{1, 2, 1023, 1024, 1025, 4097, 70000}
	if !qkEmulated(c) {
		sizes = append(sizes, 512*1024+1, 3<<20+777)
	}
	defer func(f int) { ScanFuseParts = f }(ScanFuseParts)
	for _, fuse := range []int{512, 0, 4} {
		ScanFuseParts = fuse
		if err := a.Select(nil, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0); err != nil {
			t.Fatalf("fuse %d: no candidates: %v", fuse, err)
		}
		rng := rand.New(rand.NewSource(4))
		for _, n := range sizes {
			for _, heads := range []int{0, 100, 20} { // percent
				testSelectN(t, c, a, rng, fuse, n, heads)
			}
		}
	}
}

func testSelectN(t *testing.T, c *cuda.Context, a *AndKernels, rng *rand.Rand, fuse, n, heads int) {
	const nq, m, j = 50, 3, 2
	qmeta := make([]uint32, QMetaWords*nq)
	qterms := make([]uint32, QTermWords*nq*m)
	for x := 0; x < nq; x++ {
		PutQMeta(qmeta[QMetaWords*x:], m, uint32(m*x), 10, 0)
		for y := 0; y < m; y++ {
			PutQTerm(qterms[QTermWords*(m*x+y):], uint32(1000*x+y), 1, 1, 1)
		}
	}
	cq, blk := make([]uint32, n), make([]uint32, n)
	sel := make([]uint64, 4*(n+2))
	part := make([]uint64, 4*(ScanParts(n)+1))
	var wantTerm, wantIdx []uint32
	var wantOff [3][]uint64 // o, d, f
	var run [4]uint64
	ex := make([]uint64, 4*(n+1))
	for i := 0; i < n; i++ {
		cq[i], blk[i] = uint32(3+i*(nq-3)/n), uint32(rng.Intn(1000)) // by query from 3: cq[0] is not 0
		copy(ex[4*i:], run[:])
		if rng.Intn(100) < heads {
			v := [4]uint64{1, uint64(1 + rng.Intn(128)), uint64(rng.Intn(600)), uint64(rng.Intn(300))}
			copy(sel[4*i:], v[:])
			for f := range v {
				part[4*(i/ScanTile)+f] += v[f]
			}
			wantTerm, wantIdx = append(wantTerm, uint32(1000*cq[i]+j)), append(wantIdx, blk[i])
			for f := 0; f < 3; f++ {
				wantOff[f] = append(wantOff[f], run[f+1])
			}
			for f := range v {
				run[f] += v[f]
			}
		}
	}
	copy(ex[4*n:], run[:])
	for f := 0; f < 3; f++ {
		wantOff[f] = append(wantOff[f], run[f+1])
	}
	const prevCount = 12345
	bufs := []*cuda.Buffer{qkU32(t, c, qmeta, 0), qkU32(t, c, qterms, 0), qkU32(t, c, cq, 0), qkU32(t, c, blk, 0),
		qkU64(t, c, sel, 0), qkU64(t, c, part, 0), qkU32(t, c, []uint32{prevCount}, 0),
		qkU32(t, c, make([]uint32, n+1), 0), qkU32(t, c, make([]uint32, n+1), 0),
		qkU64(t, c, make([]uint64, n+1), 0), qkU64(t, c, make([]uint64, n+1), 0), qkU64(t, c, make([]uint64, n+1), 0)}
	defer qkFree(bufs...)
	p := func(i int) cuda.DevicePtr { return bufs[i].Ptr() }
	if err := a.Select(nil, p(0), p(1), j, n, p(2), p(3), p(4), p(5), p(6), p(7), p(8), p(9), p(10), p(11)); err != nil {
		t.Fatal(err)
	}
	got := make([]uint64, 4*(n+2))
	if err := cuda.CopyFromDevice(got, bufs[4], 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4*(n+1); i++ {
		if got[i] != ex[i] {
			t.Fatalf("fuse %d n %d heads %d%%: sel[%d].%d = %d, want %d", fuse, n, heads, i/4, i%4, got[i], ex[i])
		}
	}
	if got[4*(n+1)] != prevCount || got[4*(n+1)+1] != uint64(cq[0]) {
		t.Fatalf("fuse %d n %d: sel[n+1] = %d, %d, want the previous count %d and cq[0] = %d", fuse, n, got[4*(n+1)],
			got[4*(n+1)+1], prevCount, cq[0])
	}
	nsel := len(wantTerm)
	for f, w := range [][]uint32{wantTerm, wantIdx} {
		g := make([]uint32, n+1)
		if err := cuda.CopyFromDevice(g, bufs[7+f], 0); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < nsel; i++ {
			if g[i] != w[i] {
				t.Fatalf("fuse %d n %d heads %d%%: list %d [%d] = %d, want %d", fuse, n, heads, f, i, g[i], w[i])
			}
		}
	}
	for f, name := range []string{"o_off", "d_off", "f_off"} {
		g := make([]uint64, n+1)
		if err := cuda.CopyFromDevice(g, bufs[9+[]int{2, 0, 1}[f]], 0); err != nil {
			t.Fatal(err)
		}
		for i := 0; i <= nsel; i++ {
			if g[i] != wantOff[f][i] {
				t.Fatalf("fuse %d n %d heads %d%%: %s[%d] = %d, want %d", fuse, n, heads, name, i, g[i], wantOff[f][i])
			}
		}
	}
}

// TestAndBitmapAnd checks BitmapAnd (kernels/query_and_bmand.cu) against a
// host reference: columns of densities 0.9 to 0 over N rows (N around the
// 31-row group boundaries), queries of one to four terms, one with an
// empty column and one with a term without a column (both empty), the
// candidates grouped by ascending query and docID, the total in cnt[nq*D],
// the slots after it left AndNone; the scan fused (ScanFuseParts 512) and
// not (0).
func TestAndBitmapAnd(t *testing.T) {
	c, q := qkLoad(t)
	a, err := LoadAndKernels(q)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{1, 30, 31, 32, 1000, 70001}
	if !qkEmulated(c) {
		sizes = append(sizes, 3<<20+5)
	}
	defer func(f int) { ScanFuseParts = f }(ScanFuseParts)
	rng := rand.New(rand.NewSource(5))
	dens := []float64{0.9, 0.5, 0.3, 0.05, 0}
	queries := [][]uint32{{0, 1}, {1, 2, 3}, {0}, {4, 0}, {2, uint32(len(dens))}, {0, 1, 2, 3}, {3, 1}}
	for _, fuse := range []int{512, 0} {
		ScanFuseParts = fuse
		for _, N := range sizes {
			D := (N + 30) / 31
			mat := make([]uint32, len(dens)*D)
			for k, p := range dens {
				for d := 0; d < N; d++ {
					if rng.Float64() < p {
						mat[k*D+d/31] |= 1 << (d % 31)
					}
				}
			}
			col := []uint32{0, 1, 2, 3, 4, AndNoColumn}
			var qmeta, qterms []uint32
			var wantDoc, wantQ []uint32
			n := 0
			for qi, ts := range queries {
				qmeta = append(qmeta, uint32(len(ts)), uint32(len(qterms)/4), 10, 0)
				for _, tm := range ts {
					qterms = append(qterms, tm, 0, 0, 0)
				}
				for d := 0; d < N; d++ {
					in := true
					for _, tm := range ts {
						in = in && col[tm] != AndNoColumn && mat[int(col[tm])*D+d/31]>>(d%31)&1 != 0
					}
					if in {
						wantDoc, wantQ = append(wantDoc, uint32(d)), append(wantQ, uint32(qi))
					}
					if mat[int(col[ts[0]]%uint32(len(dens)))*D+d/31]>>(d%31)&1 != 0 {
						n++ // the first term's documents bound the query's
					}
				}
			}
			n++ // one slot more than any intersection needs
			nq := len(queries)
			cq := make([]uint32, n)
			for i := range cq {
				cq[i] = AndNone
			}
			bm := AndBitmaps{D: D}
			bufs := []*cuda.Buffer{qkU32(t, c, qmeta, 0), qkU32(t, c, qterms, 0), qkU32(t, c, col, 0), qkU32(t, c, mat, 0),
				qkU32(t, c, make([]uint32, nq*D+1), 0), qkU32(t, c, make([]uint32, BitmapAndParts(bm, nq)), 0),
				qkU32(t, c, make([]uint32, n), 0), qkU32(t, c, cq, 0)}
			bm.Col, bm.Mat = bufs[2].Ptr(), bufs[3].Ptr()
			if err := a.BitmapAnd(nil, bufs[0].Ptr(), bufs[1].Ptr(), bm, nq, bufs[4].Ptr(), bufs[5].Ptr(), n, bufs[6].Ptr(),
				bufs[7].Ptr()); err != nil {
				t.Fatal(err)
			}
			cnt, gotDoc, gotQ := make([]uint32, nq*D+1), make([]uint32, n), make([]uint32, n)
			for i, dst := range [][]uint32{cnt, gotDoc, gotQ} {
				if err := cuda.CopyFromDevice(dst, bufs[[]int{4, 6, 7}[i]], 0); err != nil {
					t.Fatal(err)
				}
			}
			qkFree(bufs...)
			if int(cnt[nq*D]) != len(wantDoc) {
				t.Fatalf("fuse %d N %d: total %d, want %d", fuse, N, cnt[nq*D], len(wantDoc))
			}
			for i := 0; i < n; i++ {
				if i < len(wantDoc) && (gotDoc[i] != wantDoc[i] || gotQ[i] != wantQ[i]) {
					t.Fatalf("fuse %d N %d: candidate %d = (%d, q%d), want (%d, q%d)", fuse, N, i, gotDoc[i], gotQ[i], wantDoc[i], wantQ[i])
				}
				if i >= len(wantDoc) && gotQ[i] != AndNone {
					t.Fatalf("fuse %d N %d: slot %d past %d candidates: query %#x, want AndNone", fuse, N, i, len(wantDoc), gotQ[i])
				}
			}
		}
	}
}
