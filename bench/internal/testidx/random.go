package testidx

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/ref"
)

// Random describes a random collection for the bench packages' tests: N
// documents and Terms terms named w00, w01, ...; term i is in about
// N/(2+DFStep*i) documents drawn uniformly, each with a frequency of 1 (or
// 1..MaxFreq when MaxFreq > 1); a document's length is the sum of its
// frequencies (at least 1). Unlike text, docIDs are uniform and terms
// independent: the tests check tables and CSV against the reference, not
// pruning behaviour.
type Random struct {
	Seed    uint64
	N       int
	Terms   int
	DFStep  int // default 3
	MaxFreq int // default 1
	Block   int // bp128 block size; default 16
}

// Build writes the collection as a bp128 index in a temporary folder and
// opens it (closed when the test ends); it returns the index and the
// reference collection.
func (r Random) Build(t testing.TB) (*index.Index, *ref.Collection) {
	t.Helper()
	step, block := r.DFStep, r.Block
	if step <= 0 {
		step = 3
	}
	if block <= 0 {
		block = 16
	}
	rng := rand.New(rand.NewPCG(r.Seed, r.Seed+1))
	c := &ref.Collection{Lens: make([]uint32, r.N)}
	for i := range r.Terms {
		perm := rng.Perm(r.N)[:max(1, r.N/(2+step*i))]
		slices.Sort(perm)
		var docs, freqs []uint32
		for _, d := range perm {
			f := uint32(1)
			if r.MaxFreq > 1 {
				f += uint32(rng.IntN(r.MaxFreq))
			}
			docs, freqs = append(docs, uint32(d)), append(freqs, f)
			c.Lens[d] += f
		}
		c.Terms = append(c.Terms, fmt.Sprintf("w%02d", i))
		c.Docs, c.Freqs = append(c.Docs, docs), append(c.Freqs, freqs)
	}
	for d := range c.Lens {
		c.Lens[d] = max(c.Lens[d], 1)
	}
	bp, err := compress.ByName("bp128")
	if err != nil {
		t.Skip(err)
	}
	x, err := c.WriteIndex(filepath.Join(t.TempDir(), "x.qp"), bp, block)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x, c
}
