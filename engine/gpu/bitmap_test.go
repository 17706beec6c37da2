package gpu

import (
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
)

// TestBitmapLists: an index whose lists are all stored as roaring bitmaps
// (index.BitmapsAlways) is uploaded through index.BlockCodedList, and the
// GPU's AND/OR/AND+OR results equal the CPU engine's bit for bit.
func TestBitmapLists(t *testing.T) {
	c := testContext(t)
	nq := 12
	if emulated(c) {
		nq = 4
	}
	for _, name := range []string{"bp128", "vbyte"} {
		codec, err := compress.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(17))
			col := genCollection(rng, 3000, 24, 32, false)
			path := filepath.Join(t.TempDir(), "x.qp")
			w, err := index.NewWriter(path, index.WriterOptions{BlockSize: col.blockSize, DocCodec: codec, DocLens: col.lens, Bitmaps: index.BitmapsAlways})
			if err != nil {
				t.Fatal(err)
			}
			for i, term := range col.terms {
				if err := w.AddList(term, col.docs[i], col.freqs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			x, err := index.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if x.Meta.BitmapLists != uint64(x.NumTerms()) {
				t.Fatalf("%d of %d lists are bitmaps", x.Meta.BitmapLists, x.NumTerms())
			}
			var terms [][]string
			for range nq {
				terms = append(terms, genQuery(rng, col.terms))
			}
			if res, _ := compare(t, x, newBackend(t, x, Options{}), expand(terms, []int{1, 10, 1000})); res == 0 {
				t.Fatal("no query had results")
			}
		})
	}
}
