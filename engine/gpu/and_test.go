package gpu

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
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
// emulator only bp128 runs every search (the other codecs three of them);
// in short mode there (make test-emu) the collections are smaller, the
// other codecs run one of the three each (in turn, so each search still
// runs on several codecs) and decodeFreqs runs with pmf2 only.
func TestAndSearches(t *testing.T) {
	c := testContext(t)
	nq := 16
	docs := 6000
	if emulated(c) {
		nq, docs = 6, 3000
	}
	short := emulated(c) && testing.Short()
	if short {
		nq, docs = 4, 2000
	}
	for ci, codec := range gpuCodecs() {
		bs := []int{4, 32, 128}[ci%3]
		rng := rand.New(rand.NewSource(int64(40 + ci)))
		col := genCollection(rng, docs, 20, bs, ci%4 == 0)
		x := col.write(t, codec)
		terms := randomQueries(rng, col.terms, nq, nil)
		qs := expand(terms, []int{1, 10, 1000})
		for _, search := range AndSearches {
			for _, decode := range []bool{false, true} {
				if decode && codec.Name() != "bp128" {
					continue
				}
				if emulated(c) && codec.Name() != "bp128" && search != "binsearch" && search != "lr" && search != "pmf2" {
					continue // the emulator is slow; every search runs on bp128
				}
				if short && codec.Name() != "bp128" && search != []string{"binsearch", "lr", "pmf2"}[(ci+ci/3)%3] { // not tied to bs
					continue
				}
				if short && decode && search != "pmf2" {
					continue
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

// TestLRBlockRange checks the claim behind the "lr" search
// (query_and_step.cu lr_range, mirrored here): for a model of a list of
// block lastDocs, the first block whose lastDoc is >= d lies in the range
// for every d, not only for the lastDocs themselves (d past the last block:
// the range ends at nb), on random, clustered and evenly spaced lists.
func TestLRBlockRange(t *testing.T) {
	lrRange := func(m [4]uint32, d, nb uint32) (lo, hi uint32) { // lr_range
		p := int64((uint64(d)*uint64(m[0]))>>32) - int64(int32(m[1]))
		a, c := p-int64(m[2]), p+int64(m[3])+2
		hi = nb
		if c < int64(nb) {
			hi = min(uint32(max(c, 1)), nb)
		}
		if a > 0 {
			lo = uint32(min(a, int64(hi)))
		}
		return lo, hi
	}
	rng := rand.New(rand.NewSource(7))
	checked, narrowed := 0, 0
	for trial := 0; trial < 300; trial++ {
		nb := 1 + rng.Intn(400)
		last := make([]uint32, nb)
		d := uint32(rng.Intn(50))
		for i := range last {
			switch trial % 3 {
			case 0: // random gaps
				d += 1 + uint32(rng.Intn(1000))
			case 1: // clustered: long jumps now and then
				d += 1 + uint32(rng.Intn(10))
				if rng.Intn(20) == 0 {
					d += uint32(rng.Intn(1 << 20))
				}
			default: // evenly spaced
				d += 128
			}
			last[i] = d
		}
		m := lrFit(last, nb)
		probe := func(x uint32) {
			want := uint32(sort.Search(nb, func(i int) bool { return last[i] >= x }))
			lo, hi := lrRange(m, x, uint32(nb))
			if want < lo || want > hi || (want == hi && hi < uint32(nb)) {
				t.Fatalf("trial %d, %d blocks, d %d: block %d outside [%d, %d) (model %v)", trial, nb, x, want, lo, hi, m)
			}
			checked++
			if hi-lo < uint32(nb) {
				narrowed++
			}
		}
		for i, v := range last {
			probe(v)
			probe(v + 1)
			if i == 0 || last[i-1] < v-1 {
				probe(v - 1)
			}
		}
		probe(0)
		probe(math.MaxUint32)
		for range 50 {
			probe(uint32(rng.Int63n(int64(d) + 2)))
		}
	}
	if narrowed < checked/2 {
		t.Errorf("only %d of %d ranges narrower than the whole table", narrowed, checked)
	}
}
