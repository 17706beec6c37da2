package gpu

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/qpengine/qp/engine"
)

// TestCountingSort: countingSort orders like slices.SortStableFunc by the
// key, ascending and descending, equal keys in input order; it does not
// allocate once its scratch has grown. countingSortPar orders alike on 1,
// 2 and 5 goroutines, over one chunk and several.
func TestCountingSort(t *testing.T) {
	defer func(m int) { minScanWorkers = m }(minScanWorkers)
	minScanWorkers = 2
	rng := rand.New(rand.NewSource(7))
	for _, n := range []int{0, 1, 2, 17, 4500, 3*sortChunk + 5} {
		src := make([]*prep, n)
		for i := range src {
			src[i] = &prep{i: i, steps: rng.Intn(9), q: &engine.Query{}}
		}
		key := func(p *prep) int { return p.steps }
		var counts []int
		for _, desc := range []bool{false, true} {
			want := slices.Clone(src)
			slices.SortStableFunc(want, func(x, y *prep) int {
				if desc {
					return y.steps - x.steps
				}
				return x.steps - y.steps
			})
			got := make([]*prep, n)
			counts = countingSort(got, src, 8, desc, key, counts)
			if !slices.Equal(got, want) {
				t.Fatalf("n %d desc %v: order differs from the stable sort", n, desc)
			}
			if a := testing.AllocsPerRun(5, func() { counts = countingSort(got, src, 8, desc, key, counts) }); a != 0 {
				t.Errorf("n %d: %.1f allocations with grown scratch", n, a)
			}
			for _, workers := range []int{1, 2, 5} { // countingSortPar: the same order
				clear(got)
				counts = countingSortPar(got, src, 8, desc, key, workers, counts)
				if !slices.Equal(got, want) {
					t.Fatalf("countingSortPar, n %d desc %v workers %d: order differs from the stable sort", n, desc, workers)
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a key above maxKey did not panic")
		}
	}()
	countingSort(make([]*prep, 1), []*prep{{steps: 9}}, 8, false, func(p *prep) int { return p.steps }, nil)
}

// TestQuerySlotsParallel: querySlots' running sums (parallelScan) are the
// same on 1, 2 and 5 goroutines, over one chunk and several, with queries
// of k above 4,096 (top-k scratch) among them; the totals are the sums.
func TestQuerySlotsParallel(t *testing.T) {
	defer func(m int) { minScanWorkers = m }(minScanWorkers)
	minScanWorkers = 2
	rng := rand.New(rand.NewSource(11))
	for _, n := range []int{0, 1, 300, 2*sortChunk + 17} {
		qs := make([]*prep, n)
		wantRes, wantScr := 0, 0
		for i := range qs {
			k := 1 + rng.Intn(20)
			if rng.Intn(50) == 0 {
				k = 4097 + rng.Intn(5000)
			}
			qs[i] = &prep{i: i, q: &engine.Query{K: k}, terms: make([]qterm, 1+rng.Intn(6))}
			wantRes += k
			if k > 4096 {
				wantScr += pow2(k)
			}
		}
		var ref []querySlot
		for _, workers := range []int{1, 2, 5} {
			var buf, sums []querySlot
			slots, nres, scr := querySlots(&buf, &sums, workers, qs)
			if nres != wantRes || scr != wantScr {
				t.Fatalf("n %d workers %d: totals %d, %d; want %d, %d", n, workers, nres, scr, wantRes, wantScr)
			}
			if workers == 1 {
				ref = slices.Clone(slots)
				toff, res, sc := 0, 0, 0
				for a, p := range qs { // the serial definition
					want := querySlot{toff: toff, res: res}
					if p.q.K > 4096 {
						want.scr = sc
						sc += pow2(p.q.K)
					}
					if slots[a] != want {
						t.Fatalf("n %d: slot %d = %+v, want %+v", n, a, slots[a], want)
					}
					toff, res = toff+len(p.terms), res+p.q.K
				}
			} else if !slices.Equal(slots, ref) {
				t.Fatalf("n %d workers %d: slots differ from one goroutine's", n, workers)
			}
		}
	}
}

// TestKOffsetsParallel (gpuplan3): the result offsets of finishSet and
// finishOr (a running sum of k, parallelScan) and orsOf (the queries
// that need OR, in order) on several goroutines are the serial ones.
func TestKOffsetsParallel(t *testing.T) {
	defer func(m int) { minScanWorkers = m }(minScanWorkers)
	minScanWorkers = 2
	rng := rand.New(rand.NewSource(12))
	for _, n := range []int{0, 1, 300, 2*sortChunk + 17} {
		qs := make([]*prep, n)
		for i := range qs {
			qs[i] = &prep{i: i, q: &engine.Query{K: 1 + rng.Intn(5000)}, needOr: rng.Intn(3) == 0}
		}
		var pr pendingResults
		offs := pr.kOffsets(qs)
		var ors []*prep
		off := 0
		for a, p := range qs { // the serial definitions
			if offs[a] != off {
				t.Fatalf("n %d: query %d at result offset %d, want %d", n, a, offs[a], off)
			}
			off += p.q.K
			if p.needOr {
				ors = append(ors, p)
			}
		}
		if len(offs) != n {
			t.Fatalf("n %d: %d offsets", n, len(offs))
		}
		if got := (&Backend{}).orsOf(qs); !slices.Equal(got, ors) {
			t.Fatalf("n %d: orsOf gave %d queries, want the %d that need OR in order", n, len(got), len(ors))
		}
	}
}
