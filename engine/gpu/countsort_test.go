package gpu

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/qpengine/qp/engine"
)

// TestCountingSort: countingSort orders like slices.SortStableFunc by the
// key, ascending and descending, equal keys in input order; it does not
// allocate once its scratch has grown.
func TestCountingSort(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, n := range []int{0, 1, 2, 17, 4500} {
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
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a key above maxKey did not panic")
		}
	}()
	countingSort(make([]*prep, 1), []*prep{{steps: 9}}, 8, false, func(p *prep) int { return p.steps }, nil)
}
