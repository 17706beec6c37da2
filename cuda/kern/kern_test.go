package kern

import (
	"fmt"
	"os"
	"testing"

	"github.com/qpengine/qp/cuda/cudatest"
)

// The GPU tests share one Context on GPU 0 (cudatest.Context: skipped
// without a usable GPU).
var gpu = cudatest.Context

func TestMain(m *testing.M) {
	code := m.Run()
	if err := cudatest.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "kern: Close: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// TestKernelAttrs: every decoding kernel loads, and none spills to local
// memory.
func TestKernelAttrs(t *testing.T) {
	c := gpu(t)
	k, err := Load(c)
	if err != nil {
		t.Fatal(err)
	}
	fs := k.Functions()
	if len(fs) != len(kernelNames()) {
		t.Fatalf("%d kernels loaded, want %d", len(fs), len(kernelNames()))
	}
	for _, f := range fs {
		a, err := f.Attrs()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kernel %s on %s: %d registers, %d B static shared, %d B local, max %d threads/block",
			f.Name(), c.Device().Name, a.Registers, a.StaticSharedBytes, a.LocalBytes, a.MaxThreadsPerBlock)
		if a.LocalBytes != 0 {
			t.Errorf("kernel %s uses %d bytes of local memory (spills)", f.Name(), a.LocalBytes)
		}
	}
}
