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
