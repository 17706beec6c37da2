package kern

import (
	"testing"

	"github.com/qpengine/qp/cuda"
)

// TestLaunchAllocs (emulator or GPU): a typed launch (cuda.LaunchFields of
// a layout.go struct) allocates no more on the host than the untyped
// Function.Launch of the same arguments it replaced (issue 21: the GPU AND
// ran 3-7% slower after the launchers moved; the host's launch path is not
// why). The kernel is qp_query_and_init over no values (it reads and writes
// nothing), with its 13 parameters: 9 device addresses, 4 numbers.
func TestLaunchAllocs(t *testing.T) {
	c, q := qkLoad(t)
	buf, err := c.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	f, one, p := q.andInit, cuda.Dim3{X: 1, Y: 1, Z: 1}, buf.Ptr()
	typed := testing.AllocsPerRun(50, func() {
		if err := launch(f, one, nil, &AndInitParams{Segs: p, NSeg: 1, QTerms: p, Norms: p, NDocs: 1000, K1p1: 2.2,
			Docs: p, Freqs: p, NVal: 0, CDoc: p, CScore: p, CQ: p, Errs: p}); err != nil {
			t.Fatal(err)
		}
	})
	untyped := testing.AllocsPerRun(50, func() {
		if err := f.Launch(one, block256, 0, nil, p, uint32(1), p, p, uint32(1000), float32(2.2), p, p, uint32(0),
			p, p, p, p); err != nil {
			t.Fatal(err)
		}
	})
	if err := c.Synchronize(); err != nil {
		t.Fatal(err)
	}
	t.Logf("allocations per launch: typed %.1f, untyped %.1f", typed, untyped)
	if typed > untyped {
		t.Errorf("a typed launch allocates %.1f times, the untyped one %.1f", typed, untyped)
	}
}
