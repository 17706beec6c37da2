// Package cudatest gives the GPU tests of a test binary one shared CUDA
// Context on GPU 0 (packages cuda/kern, engine/gpu, bench/decode; package
// cuda's own tests keep theirs, since cuda cannot import this package).
package cudatest

import (
	"strings"
	"sync"
	"testing"

	"github.com/qpengine/qp/cuda"
)

var (
	once sync.Once
	ctx  *cuda.Context
	err  error
)

// Context returns the shared Context, opening it on first use. It skips
// the test (t.Skip, visible with -v) when cuda.Available says no GPU can
// be used, and fails it when Available says one can but Open(0) fails.
func Context(t testing.TB) *cuda.Context {
	t.Helper()
	if ok, why := cuda.Available(); !ok {
		t.Skip("no usable GPU: " + why)
	}
	once.Do(func() { ctx, err = cuda.Open(0) })
	if err != nil {
		t.Fatalf("cuda.Available() said a GPU is usable, but Open(0): %v", err)
	}
	return ctx
}

// Emulated reports whether c runs on the CPU emulator of cuda/emu (the
// tests then run the same code on smaller inputs).
func Emulated(c *cuda.Context) bool { return strings.Contains(c.Device().Name, "emulator") }

// Close closes the shared Context if a test opened it; a TestMain calls it
// after m.Run and fails the binary on its error.
func Close() error {
	if ctx == nil {
		return nil
	}
	return ctx.Close()
}
