package topk_test

import (
	"math"
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/topk"
)

// randomScores returns n candidates with many ties (scores drawn from a few
// values) or distinct scores.
func randomScores(rng *rand.Rand, n, distinct int) (acc []float32, cand []uint32) {
	acc = make([]float32, 3*n+1)
	perm := rng.Perm(len(acc))[:n]
	for _, d := range perm {
		cand = append(cand, uint32(d))
		if distinct > 0 {
			acc[d] = float32(1 + rng.Intn(distinct))
		} else {
			acc[d] = rng.Float32() * 10
		}
	}
	return acc, cand
}

func want(acc []float32, cand []uint32, k int) []topk.Result {
	var rs []topk.Result
	for _, d := range cand {
		rs = append(rs, topk.Result{Doc: d, Score: acc[d]})
	}
	return ref.TopK(rs, k)
}

func same(t *testing.T, got, want []topk.Result, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: result %d = %+v, want %+v", what, i, got[i], want[i])
		}
	}
}

func TestHeapAndSelectAgainstFullSort(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var h topk.Heap
	var dst, sel []topk.Result
	for _, n := range []int{0, 1, 2, 9, 10, 11, 100, 999, 1000, 1001, 5000, 20000} {
		for _, distinct := range []int{0, 1, 3, 50} {
			acc, cand := randomScores(rng, n, distinct)
			for _, k := range []int{1, 2, 10, 100, 1000, 10000} {
				w := want(acc, cand, k)
				h.Reset(k)
				for _, d := range cand {
					h.Push(d, acc[d])
				}
				if h.Len() != min(n, k) || h.Full() != (n >= k) {
					t.Fatalf("n=%d k=%d: Len %d Full %v", n, k, h.Len(), h.Full())
				}
				if h.Full() && h.Threshold() != w[k-1].Score {
					t.Fatalf("threshold %v want %v", h.Threshold(), w[k-1].Score)
				}
				if !h.Full() && !math.IsInf(float64(h.Threshold()), -1) {
					t.Fatalf("threshold of a non-full heap = %v", h.Threshold())
				}
				dst = h.Results(dst)
				same(t, dst, w, "heap")
				sel = topk.Select(sel, acc, cand, k)
				same(t, sel, w, "select")
				checkSelectZero(t, acc, cand, k, w)
			}
		}
	}
}

// checkSelectZero checks that SelectZero returns w (Select's result) and
// zeroes the candidates' accumulators and no other, on a copy of acc.
func checkSelectZero(t *testing.T, acc []float32, cand []uint32, k int, w []topk.Result) {
	t.Helper()
	z := slices.Clone(acc)
	same(t, topk.SelectZero(nil, z, cand, k), w, "select zero")
	in := make(map[uint32]bool, len(cand))
	for _, d := range cand {
		in[d] = true
	}
	for d := range z {
		if want := acc[d]; in[uint32(d)] && z[d] != 0 || !in[uint32(d)] && z[d] != want {
			t.Fatalf("SelectZero k=%d: acc[%d] = %v (was %v, candidate %v)", k, d, z[d], want, in[uint32(d)])
		}
	}
}

// TestSelectAdversarial exercises the quickselect path on sorted, reversed
// and all-equal inputs.
func TestSelectAdversarial(t *testing.T) {
	n := 30000
	acc := make([]float32, n)
	cand := make([]uint32, n)
	for i := range cand {
		cand[i] = uint32(i)
	}
	var sel []topk.Result
	for name, f := range map[string]func(i int) float32{
		"ascending":  func(i int) float32 { return float32(i) },
		"descending": func(i int) float32 { return float32(n - i) },
		"equal":      func(i int) float32 { return 1 },
		"organ":      func(i int) float32 { return float32(min(i, n-i)) },
	} {
		for i := range acc {
			acc[i] = f(i)
		}
		for _, k := range []int{1, 3000, 4000, 10000} {
			sel = topk.Select(sel, acc, cand, k)
			same(t, sel, want(acc, cand, k), name)
			checkSelectZero(t, acc, cand, k, sel)
		}
		// Reversed candidate order.
		rc := make([]uint32, n)
		for i := range rc {
			rc[i] = cand[n-1-i]
		}
		sel = topk.Select(sel, acc, rc, 5000)
		same(t, sel, want(acc, rc, 5000), name+"/reversed")
	}
}

// TestHeapSignedScores checks the heap's integer keys against Better on
// negative, zero, infinite and tied scores.
func TestHeapSignedScores(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1e-30, -1e-30, 3.5, -3.5,
		float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32}
	acc := make([]float32, 5000)
	cand := make([]uint32, len(acc))
	for i := range acc {
		acc[i] = vals[rng.Intn(len(vals))]
		cand[i] = uint32(i)
	}
	rng.Shuffle(len(cand), func(i, j int) { cand[i], cand[j] = cand[j], cand[i] })
	var h topk.Heap
	for _, k := range []int{1, 7, 100, 4999, 5000} {
		h.Reset(k)
		for _, d := range cand {
			h.Push(d, acc[d])
		}
		w := want(acc, cand, k)
		got := h.Results(nil)
		for i := range w {
			if got[i].Doc != w[i].Doc || got[i].Score != w[i].Score {
				t.Fatalf("k=%d rank %d: %+v want %+v", k, i, got[i], w[i])
			}
		}
		if h.Worst() != got[k-1] && !(h.Worst().Score == 0 && got[k-1].Score == 0) {
			t.Fatalf("Worst %+v, want %+v", h.Worst(), got[k-1])
		}
	}
}

func TestHeapNoAlloc(t *testing.T) {
	var h topk.Heap
	h.Reset(100)
	rng := rand.New(rand.NewSource(2))
	scores := make([]float32, 4096)
	for i := range scores {
		scores[i] = rng.Float32()
	}
	dst := make([]topk.Result, 0, 100)
	allocs := testing.AllocsPerRun(20, func() {
		h.Reset(100)
		for i, s := range scores {
			h.Push(uint32(i), s)
		}
		dst = h.Results(dst)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run", allocs)
	}
}

func TestResetPanicsOnBadK(t *testing.T) {
	for _, k := range []int{0, -1, topk.MaxK + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("Reset(%d) did not panic", k)
				}
			}()
			var h topk.Heap
			h.Reset(k)
		}()
	}
}

// BenchmarkHeapPush pushes random scores, restarting every 65536 pushes.
func BenchmarkHeapPush(b *testing.B) {
	rng := rand.New(rand.NewSource(3))
	scores := make([]float32, 1<<16)
	for i := range scores {
		scores[i] = rng.Float32()
	}
	for _, k := range []int{10, 1000} {
		b.Run("k"+strconv.Itoa(k), func(b *testing.B) {
			var h topk.Heap
			for i := 0; i < b.N; i++ {
				if i&(1<<16-1) == 0 {
					h.Reset(k)
				}
				h.Push(uint32(i), scores[i&(1<<16-1)])
			}
		})
	}
}

func BenchmarkSelect(b *testing.B) {
	for _, k := range []int{10, 1000} {
		rng := rand.New(rand.NewSource(4))
		acc, cand := randomScores(rng, 100000, 0)
		var sel []topk.Result
		b.Run("k"+strconv.Itoa(k), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				sel = topk.Select(sel, acc, cand, k)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(cand)), "ns/cand")
		})
	}
}
