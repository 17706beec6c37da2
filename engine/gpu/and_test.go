package gpu

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/engine"
)

// TestAndSearches runs the differential tests of gpu_test.go for every
// Options.AndSearch and codec with a GPU decoder, with the bp128 frequency
// slots read directly and decoded (decodeFreqs), on collections with many
// blocks per list (block sizes 4 and 32 make Parallel Merge Find's
// splitters land in other blocks, queries and tiles than their
// neighbours), and checks one synchronization per AND step. On the
// emulator only bp128 runs every search (the other codecs two of them).
func TestAndSearches(t *testing.T) {
	c := testContext(t)
	nq := 16
	docs := 6000
	if emulated(c) {
		nq, docs = 6, 3000
	}
	for ci, codec := range gpuCodecs() {
		bs := []int{4, 32, 128}[ci%3]
		rng := rand.New(rand.NewSource(int64(40 + ci)))
		col := genCollection(rng, docs, 20, bs, ci%4 == 0)
		x := col.write(t, codec)
		var terms [][]string
		for range nq {
			terms = append(terms, genQuery(rng, col.terms))
		}
		qs := expand(terms, []int{1, 10, 1000})
		for _, search := range AndSearches {
			for _, decode := range []bool{false, true} {
				if decode && codec.Name() != "bp128" {
					continue
				}
				if emulated(c) && codec.Name() != "bp128" && search != "binsearch" && search != "pmf2" {
					continue // the emulator is slow; every search runs on bp128
				}
				name := fmt.Sprintf("%s/B%d/%s", codec.Name(), bs, search)
				if decode {
					name += "/decodeFreqs"
				}
				t.Run(name, func(t *testing.T) {
					g := newBackend(t, x, Options{AndSearch: search, BitmapDensity: -1}) // the list steps for every term
					g.and.decodeFreqs = decode
					results, _ := compare(t, x, g, qs)
					if results == 0 {
						t.Fatal("no results: the test checks nothing")
					}
					// Threshold 1: one query per set; AND-only batch to count
					// the synchronizations: at most one per step and one for
					// the results, per set.
					g.SetThreshold(1)
					var and []engine.Query
					steps := 0
					for _, q := range qs {
						if q.Mode == engine.And {
							and = append(and, q)
						}
					}
					for _, q := range and {
						steps += len(q.Terms) // >= the distinct known terms
					}
					g.ResetProfile()
					compare(t, x, g, and)
					p := g.Profile()
					if p.Syncs > int64(steps) {
						t.Errorf("%d synchronizations for %d AND queries of %d terms in all", p.Syncs, len(and), steps)
					}
				})
			}
		}
	}
}

// TestAndSearchOption checks Options.AndSearch's validation.
func TestAndSearchOption(t *testing.T) {
	for _, s := range append([]string{""}, AndSearches...) {
		if _, err := parseAndSearch(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"pmf0", "pmf5", "pmf", "binary", "PMF1"} {
		if _, err := parseAndSearch(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	col := genCollection(rand.New(rand.NewSource(1)), 10, 3, 4, false)
	x := col.write(t, compress.All()[0])
	if _, err := New(x, Options{AndSearch: "pmf9"}); err == nil {
		t.Error("New accepted AndSearch pmf9")
	}
}
