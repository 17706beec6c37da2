package kern

import (
	"fmt"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
)

// Kernels are the decoding kernels of the embedded fatbin (the BP128
// baseline and the batch decoders of decode.go) in one Context, and the
// handle the other kernel families (LoadQueryKernels, ...) are looked up
// from. Load returns a new value each call over the Context's one loaded
// cuda.Fatbin (whose kernel lookups and occupancy are cached); it is
// cheap, and safe for concurrent use.
type Kernels struct {
	fb *cuda.Fatbin
}

// kernelNames lists the decoding kernels: the BP128 baseline and the
// batch decoders of decode.go.
func kernelNames() []string {
	names := []string{"qp_bp128_docs"}
	seen := map[string]bool{}
	for _, id := range compress.All() {
		if k, ok := decodeKernels[id.ID()]; ok && !seen[k.name] {
			seen[k.name] = true
			names = append(names, k.name)
		}
	}
	return names
}

// Load loads c's embedded fatbin on first use and returns its decoding
// kernels; it fails when the fatbin lacks one (run `make kernels`).
func Load(c *cuda.Context) (*Kernels, error) {
	fb, err := c.Fatbin()
	if err != nil {
		return nil, err
	}
	for _, name := range kernelNames() {
		if _, err := fb.Function(name); err != nil {
			return nil, err
		}
	}
	return &Kernels{fb: fb}, nil
}

// Context is the Context the kernels are loaded into.
func (k *Kernels) Context() *cuda.Context { return k.fb.Context() }

// fn returns a kernel that Load or a Load* function of a kernel family
// has checked.
func (k *Kernels) fn(name string) *cuda.Function {
	f, err := k.fb.Function(name)
	if err != nil {
		panic(fmt.Sprintf("BUG: kern: kernel %s not checked at load: %v", name, err))
	}
	return f
}

// Functions lists the decoding kernels (for resource reports).
func (k *Kernels) Functions() []*cuda.Function {
	var fs []*cuda.Function
	for _, name := range kernelNames() {
		fs = append(fs, k.fn(name))
	}
	return fs
}

// ResidentCTAs returns how many CTAs of blockSize threads of f fit on one
// SM at once (at least 1; cuda.Fatbin.ResidentCTAs).
func (k *Kernels) ResidentCTAs(f *cuda.Function, blockSize int) int {
	return k.fb.ResidentCTAs(f, blockSize)
}
