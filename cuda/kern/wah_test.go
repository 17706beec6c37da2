package kern

import (
	"errors"
	"math/rand"
	"slices"
	"testing"

	"github.com/qpengine/qp/bitmap/wah"
	"github.com/qpengine/qp/cuda"
)

// WAH on the GPU against the CPU reference bitmap/wah: decompression of a
// batch of bitmaps, each reduction pattern for OR and AND, candidates and
// bitsets, corrupt input.

func wahLoad(t *testing.T) *WAHKernels {
	t.Helper()
	c := gpu(t)
	k, err := LoadWAHKernels(c)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// wahRandom makes m bitmaps of n rows of mixed densities (runs included).
func wahRandom(t *testing.T, rng *rand.Rand, m int, n uint32) ([]wah.Bitmap, [][]uint32) {
	t.Helper()
	bms := make([]wah.Bitmap, m)
	docs := make([][]uint32, m)
	for i := range bms {
		var d []uint32
		switch x := rng.Intn(6); x {
		case 0: // runs of ones
			on := rng.Intn(2) == 0
			for r := uint32(0); r < n; {
				k := uint32(1 + rng.Intn(300))
				for j := r; j < min(n, r+k) && on; j++ {
					d = append(d, j)
				}
				r += k
				on = !on
			}
		case 1: // empty or full
			if rng.Intn(2) == 0 {
				for j := uint32(0); j < n; j++ {
					d = append(d, j)
				}
			}
		default:
			p := []float64{0.001, 0.02, 0.3, 0.9}[x-2]
			for j := uint32(0); j < n; j++ {
				if rng.Float64() < p {
					d = append(d, j)
				}
			}
		}
		var err error
		if bms[i], err = wah.Encode(nil, d, n); err != nil {
			t.Fatal(err)
		}
		docs[i] = d
	}
	return bms, docs
}

func TestWAHDecompress(t *testing.T) {
	k := wahLoad(t)
	rng := rand.New(rand.NewSource(1))
	for _, n := range []uint32{0, 1, 30, 31, 32, 62, 63, 93, 500, 3001} {
		for _, m := range []int{1, 2, 7, 40} {
			bms, _ := wahRandom(t, rng, m, n)
			cols, err := k.Upload(bms)
			if err != nil {
				t.Fatal(err)
			}
			if err := cols.Decompress(nil); err != nil {
				t.Fatal(err)
			}
			if err := cols.Check(nil); err != nil {
				t.Fatalf("n=%d m=%d: %v", n, m, err)
			}
			for i, b := range bms {
				want, err := b.DecodeGroups(nil)
				if err != nil {
					t.Fatal(err)
				}
				got, err := cols.ReadColumn(i)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) && len(want) > 0 {
					t.Fatalf("n=%d m=%d column %d differs", n, m, i)
				}
			}
			cols.Free()
		}
	}
}

func TestWAHDecompressCorrupt(t *testing.T) {
	k := wahLoad(t)
	good, err := wah.Encode(nil, []uint32{1, 40, 41}, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []wah.Bitmap{
		{Words: []uint32{wah.FillFlag, 1, 2, 3}, N: 100},                            // zero-length fill
		{Words: []uint32{1, 2}, N: 100},                                             // too few groups
		{Words: []uint32{wah.FillFlag | 9}, N: 100},                                 // too many
		{Words: nil, N: 100},                                                        // none
		{Words: []uint32{wah.FillFlag | 3, wah.FillFlag | wah.FillBit | 1}, N: 100}, // ones in the padding
		{Words: []uint32{wah.FillFlag | 3, 1 << 10}, N: 100},                        // literal padding
		{Words: []uint32{wah.FillFlag | 0x3fffffff, 5}, N: 100},                     // huge run
	} {
		if bad.Validate() == nil {
			t.Fatalf("%x: the CPU accepts it", bad.Words)
		}
		cols, err := k.Upload([]wah.Bitmap{good, bad, good})
		if err != nil {
			t.Fatal(err)
		}
		if err := cols.Decompress(nil); err != nil {
			t.Fatal(err)
		}
		if err := cols.Check(nil); !errors.Is(err, wah.ErrCorrupt) {
			t.Errorf("%x: Check = %v, want ErrCorrupt", bad.Words, err)
		}
		cols.Free()
	}
}

func TestWAHReduce(t *testing.T) {
	k := wahLoad(t)
	rng := rand.New(rand.NewSource(2))
	ns := []uint32{1, 31, 62, 1000, 4099}
	if emuShort(gpu(t)) {
		ns = []uint32{1, 62, 4099} // one row, two 31-bit groups, the largest
	}
	for _, n := range ns {
		bms, _ := wahRandom(t, rng, 40, n)
		cols, err := k.Upload(bms)
		if err != nil {
			t.Fatal(err)
		}
		if err := cols.Decompress(nil); err != nil {
			t.Fatal(err)
		}
		if err := cols.Check(nil); err != nil {
			t.Fatal(err)
		}
		// Queries of 1..40 columns, shared and repeated columns included.
		var queries [][]uint32
		for _, m := range []int{1, 2, 3, 4, 5, 8, 9, 17, 33, 40} {
			q := make([]uint32, m)
			for i := range q {
				q[i] = uint32(rng.Intn(len(bms)))
			}
			queries = append(queries, q)
		}
		plan, err := cols.NewPlan(queries)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range []wah.Op{wah.OpOr, wah.OpAnd} {
			want := make([][]uint32, len(queries))
			wantBits := make([][]uint64, len(queries))
			for i, q := range queries {
				in := make([]wah.Bitmap, len(q))
				for j, c := range q {
					in[j] = bms[c]
				}
				r, err := wah.Reduce(op, in...)
				if err != nil {
					t.Fatal(err)
				}
				if want[i], err = r.DecodeDocs(nil); err != nil {
					t.Fatal(err)
				}
				if wantBits[i], err = r.Decode(nil); err != nil {
					t.Fatal(err)
				}
			}
			for _, pat := range WAHPatterns {
				hks := []int{0}
				if pat == WAHHybrid {
					hks = []int{1, 2, 4, 16}
				}
				for _, hk := range hks {
					// Poison the results so stale data cannot pass.
					if err := (*cuda.Stream)(nil).Fill32(plan.Result(), 0, 0xdeadbeef, plan.NQ*cols.D); err != nil {
						t.Fatal(err)
					}
					if err := plan.Reduce(nil, pat, op, hk); err != nil {
						t.Fatal(err)
					}
					if err := plan.Candidates(nil); err != nil {
						t.Fatal(err)
					}
					got, err := plan.ReadDocs(nil)
					if err != nil {
						t.Fatal(err)
					}
					for i := range queries {
						if !slices.Equal(got[i], want[i]) && len(got[i])+len(want[i]) > 0 {
							t.Fatalf("n=%d %v %v k=%d query %d (%d cols): %d docs, want %d", n, op, pat, hk, i,
								len(queries[i]), len(got[i]), len(want[i]))
						}
					}
					if err := plan.Bitset(nil); err != nil {
						t.Fatal(err)
					}
					W := int((n + 31) / 32)
					b32 := make([]uint32, plan.NQ*W)
					if err := cols.ctx.Synchronize(); err != nil {
						t.Fatal(err)
					}
					if err := cuda.CopyFromDevice(b32, plan.Bits(), 0); err != nil {
						t.Fatal(err)
					}
					for i := range queries {
						for w := 0; w < W; w++ {
							ref := uint32(wantBits[i][w/2] >> (32 * (w % 2)))
							if b32[i*W+w] != ref {
								t.Fatalf("n=%d %v %v query %d: bitset word %d = %x, want %x", n, op, pat, i, w, b32[i*W+w], ref)
							}
						}
					}
				}
			}
		}
		plan.Free()
		cols.Free()
	}
}

func TestWAHFilter(t *testing.T) {
	k := wahLoad(t)
	rng := rand.New(rand.NewSource(3))
	bms, docs := wahRandom(t, rng, 6, 2500)
	cols, err := k.Upload(bms)
	if err != nil {
		t.Fatal(err)
	}
	defer cols.Free()
	if err := cols.Decompress(nil); err != nil {
		t.Fatal(err)
	}
	queries := [][]uint32{{0, 1, 2}, {3}, {4, 5, 0, 1}}
	p, err := WAHFilter(nil, cols, queries, wah.OpOr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.ReadDocs(nil)
	p.Free()
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range queries { // reference: union of the doc lists
		var u []uint32
		for _, c := range q {
			u = append(u, docs[c]...)
		}
		slices.Sort(u)
		u = slices.Compact(u)
		if !slices.Equal(got[i], u) && len(u)+len(got[i]) > 0 {
			t.Fatalf("query %d: %d candidates, want %d", i, len(got[i]), len(u))
		}
	}
	if _, err := cols.NewPlan([][]uint32{{7}}); err == nil {
		t.Error("NewPlan with a column out of range: no error")
	}
	if _, err := cols.NewPlan([][]uint32{{}}); err == nil {
		t.Error("NewPlan with an empty query: no error")
	}
}

// TestSplitWAHQueries checks the batch split of the plans (no GPU): every
// query is in exactly one batch or skipped, in order; each batch's bound
// sum is <= maxCand unless it is one query alone; query and group caps.
func TestSplitWAHQueries(t *testing.T) {
	const hard = WAHMaxCandidates
	check := func(name string, bounds []int, D, maxCand, maxGroups int, wantBatches [][]int, wantSkipped []int) {
		t.Helper()
		batches, skipped := SplitWAHQueries(bounds, D, maxCand, maxGroups)
		if wantBatches != nil || len(batches) == 0 {
			if len(batches) != len(wantBatches) {
				t.Fatalf("%s: batches %v, want %v", name, batches, wantBatches)
			}
			for i := range batches {
				if !slices.Equal(batches[i], wantBatches[i]) {
					t.Fatalf("%s: batches %v, want %v", name, batches, wantBatches)
				}
			}
		}
		if !slices.Equal(skipped, wantSkipped) {
			t.Fatalf("%s: skipped %v, want %v", name, skipped, wantSkipped)
		}
		// Invariants.
		mc := maxCand
		if mc <= 0 || mc > hard {
			mc = hard
		}
		mg := maxGroups
		if mg <= 0 {
			mg = WAHMaxPlanGroups
		}
		var seen []int
		for _, b := range batches {
			if len(b) == 0 || len(b) > 65535 || (len(b) > 1 && D > 0 && len(b)*D > mg) {
				t.Fatalf("%s: batch of %d queries (D=%d, maxGroups=%d)", name, len(b), D, mg)
			}
			sum := 0
			for _, q := range b {
				sum += bounds[q]
				if bounds[q] > hard {
					t.Fatalf("%s: query %d of bound %d > %d planned", name, q, bounds[q], hard)
				}
			}
			if sum > mc && len(b) > 1 {
				t.Fatalf("%s: batch %v bound %d > %d", name, b, sum, mc)
			}
			seen = append(seen, b...)
		}
		seen = append(seen, skipped...)
		slices.Sort(seen)
		for i, q := range seen {
			if q != i {
				t.Fatalf("%s: queries covered %v, want 0..%d once each", name, seen, len(bounds)-1)
			}
		}
		if len(seen) != len(bounds) {
			t.Fatalf("%s: %d queries covered, want %d", name, len(seen), len(bounds))
		}
	}
	check("empty", nil, 10, 100, 0, nil, nil)
	check("one batch", []int{10, 20, 30}, 10, 100, 0, [][]int{{0, 1, 2}}, nil)
	check("exact fit", []int{50, 50, 1}, 10, 100, 0, [][]int{{0, 1}, {2}}, nil)
	check("split", []int{60, 50, 40, 30, 0, 70, 1}, 10, 100, 0, [][]int{{0}, {1, 2}, {3, 4, 5}, {6}}, nil)
	check("alone", []int{10, 150, 20, 101, 100}, 10, 100, 0, [][]int{{0}, {1}, {2}, {3}, {4}}, nil)
	check("skipped", []int{10, hard + 1, 20, hard, 5}, 10, 100, 0, [][]int{{0, 2}, {3}, {4}}, []int{1})
	check("default limit", []int{hard / 2, hard / 2, 1}, 10, 0, 0, [][]int{{0, 1}, {2}}, nil)
	check("limit above hard", []int{hard, 1}, 10, 2*hard, 0, [][]int{{0}, {1}}, nil)
	check("groups", []int{1, 1, 1, 1, 1}, 10, 100, 25, [][]int{{0, 1}, {2, 3}, {4}}, nil)
	check("groups < D", []int{1, 1}, 10, 100, 5, [][]int{{0}, {1}}, nil)
	check("D = 0", []int{0, 0, 0}, 0, 100, 0, [][]int{{0, 1, 2}}, nil)
	many := make([]int, 70000)
	check("65535 queries", many, 1, 100, 0, nil, nil)
	if b, _ := SplitWAHQueries(many, 1, 100, 0); len(b) != 2 || len(b[0]) != 65535 {
		t.Fatalf("70000 queries: batches of %d, %d", len(b[0]), len(b[len(b)-1]))
	}
	// Random: invariants only (the bench's case: the sum far above the limit).
	rng := rand.New(rand.NewSource(9))
	for it := 0; it < 200; it++ {
		bounds := make([]int, rng.Intn(300))
		for i := range bounds {
			bounds[i] = rng.Intn(2000)
		}
		check("random", bounds, 1+rng.Intn(20), 1+rng.Intn(3000), rng.Intn(500), nil, nil)
	}
	defer func() {
		if recover() == nil {
			t.Error("negative bound: no panic")
		}
	}()
	SplitWAHQueries([]int{-1}, 1, 1, 1)
}

// TestWAHSplitPlans runs a batch whose bound sum is far above a low
// candidate limit as the plans SplitWAHQueries makes (singletons above the
// limit included) and checks every query's OR and AND candidates.
func TestWAHSplitPlans(t *testing.T) {
	k := wahLoad(t)
	rng := rand.New(rand.NewSource(4))
	const n = 3000
	bms, _ := wahRandom(t, rng, 12, n)
	cols, err := k.Upload(bms)
	if err != nil {
		t.Fatal(err)
	}
	defer cols.Free()
	if err := cols.Decompress(nil); err != nil {
		t.Fatal(err)
	}
	if err := cols.Check(nil); err != nil {
		t.Fatal(err)
	}
	queries := make([][]uint32, 50)
	bounds := make([]int, len(queries))
	total := 0
	for i := range queries {
		for j := 0; j < 1+rng.Intn(5); j++ {
			queries[i] = append(queries[i], uint32(rng.Intn(len(bms))))
		}
		bounds[i] = cols.Bound(queries[i])
		total += bounds[i]
	}
	const limit = 2 * n
	batches, skipped := SplitWAHQueries(bounds, cols.D, limit, 0)
	if len(skipped) != 0 || len(batches) < 3 {
		t.Fatalf("bound sum %d, limit %d: %d batches, skipped %v", total, limit, len(batches), skipped)
	}
	for _, op := range []wah.Op{wah.OpOr, wah.OpAnd} {
		for _, b := range batches {
			qs := make([][]uint32, len(b))
			for i, qi := range b {
				qs[i] = queries[qi]
			}
			p, err := cols.NewPlan(qs)
			if err != nil {
				t.Fatal(err)
			}
			if p.bound > limit && len(b) > 1 {
				t.Fatalf("batch %v: plan bound %d > %d", b, p.bound, limit)
			}
			err = p.Reduce(nil, WAHIdealHybrid, op, 0)
			if err == nil {
				err = p.Candidates(nil)
			}
			var got [][]uint32
			if err == nil {
				got, err = p.ReadDocs(nil)
			}
			p.Free()
			if err != nil {
				t.Fatal(err)
			}
			for i, qi := range b {
				in := make([]wah.Bitmap, len(queries[qi]))
				for j, c := range queries[qi] {
					in[j] = bms[c]
				}
				r, err := wah.Reduce(op, in...)
				if err != nil {
					t.Fatal(err)
				}
				want, err := r.DecodeDocs(nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got[i], want) && len(got[i])+len(want) > 0 {
					t.Fatalf("%v query %d: %d docs, want %d", op, qi, len(got[i]), len(want))
				}
			}
		}
	}
}
