package kern

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/intersect"
)

// Differential tests of the batched intersection kernels against package
// intersect: every algorithm, boundary lengths, empty results, single-list
// and empty queries, many queries per batch.

func isectRandList(rng *rand.Rand, n, universe int) []uint32 {
	n = min(n, universe)
	seen := make(map[uint32]bool, n)
	out := make([]uint32, 0, n)
	if n*2 > universe {
		for _, p := range rng.Perm(universe)[:n] {
			out = append(out, uint32(p))
		}
	} else {
		for len(out) < n {
			d := uint32(rng.Intn(universe))
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// isectBatch builds nl lists and nq queries over them with lengths from
// lens (boundary lengths), random universes, shared and private lists.
func isectBatch(rng *rand.Rand, nl, nq int, lens []int) ([][]uint32, [][]int) {
	lists := make([][]uint32, nl)
	for i := range lists {
		n := lens[rng.Intn(len(lens))]
		u := max(1, n*(1+rng.Intn(4)))
		if rng.Intn(4) == 0 {
			u = 1<<32 - 1
			if n > 1<<16 {
				u = n * 3
			}
		}
		lists[i] = isectRandList(rng, n, u)
		if rng.Intn(10) == 0 && i > 0 { // a subset of another list: many results
			src := lists[rng.Intn(i)]
			var sub []uint32
			for _, v := range src {
				if rng.Intn(2) == 0 {
					sub = append(sub, v)
				}
			}
			lists[i] = sub
		}
	}
	queries := make([][]int, nq)
	for q := range queries {
		k := rng.Intn(6) // 0..5 lists; 0 = empty query
		for j := 0; j < k; j++ {
			queries[q] = append(queries[q], rng.Intn(nl))
		}
	}
	return lists, queries
}

func isectAlgos() []struct {
	a      IsectAlgo
	levels int
} {
	out := []struct {
		a      IsectAlgo
		levels int
	}{{IsectBinary, 0}, {IsectLR, 0}, {IsectHS, 0}}
	for lv := 1; lv <= intersect.PMFMaxLevels; lv++ {
		out = append(out, struct {
			a      IsectAlgo
			levels int
		}{IsectPMF, lv})
	}
	for _, a := range []IsectAlgo{IsectLRC, IsectLRCSeg, IsectSegLRC, IsectHSLRC} {
		out = append(out, struct {
			a      IsectAlgo
			levels int
		}{a, 0})
	}
	return out
}

func TestIntersectBatch(t *testing.T) {
	c := gpu(t)
	k, err := LoadIntersectKernels(c)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(7))
	big := 40000
	switch {
	case emuShort(c):
		big = 5000 // the long lists stay over 4096 elements
	case !qkEmulated(c):
		big = 400000
	}
	type cfg struct {
		nl, nq int
		lens   []int
	}
	cfgs := []cfg{
		{6, 20, []int{0, 1, 2, 3}},
		{30, 200, []int{0, 1, 2, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025}},
		{12, 40, []int{100, 2000, 33000, big}},
		{1, 1, []int{big}},
	}
	for ci, cf := range cfgs {
		lists, queries := isectBatch(rng, cf.nl, cf.nq, cf.lens)
		want := make([][]uint32, len(queries))
		for q, ids := range queries {
			var ls [][]uint32
			for _, id := range ids {
				ls = append(ls, lists[id])
			}
			want[q] = intersect.Merge(nil, ls)
			if len(ids) == 0 {
				want[q] = nil
			}
		}
		for _, al := range isectAlgos() {
			in := make([]IsectList, len(lists))
			for i, l := range lists {
				in[i] = IsectList{Docs: l}
				switch al.a {
				case IsectLR:
					in[i].LR = intersect.NewLR(l)
				case IsectHS:
					in[i].HS = intersect.NewHS(l, 16)
				}
				if cd := al.a.Codec(); cd != nil {
					in[i].Enc = cd.AppendEncode(nil, l)
				}
			}
			r, err := k.UploadLists(in)
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.Batch(queries)
			if err != nil {
				t.Fatal(err)
			}
			res, off, err := b.Run(al.a, al.levels, nil, nil)
			b.Free()
			r.Free()
			if err != nil {
				t.Fatalf("config %d %v/%d: %v", ci, al.a, al.levels, err)
			}
			if len(off) != len(queries)+1 || int(off[len(queries)]) != len(res) {
				t.Fatalf("config %d %v: %d offsets, last %v, %d results", ci, al.a, len(off), off[len(off)-1], len(res))
			}
			for q := range queries {
				got := res[off[q]:off[q+1]]
				if fmt.Sprint(got) != fmt.Sprint(want[q]) && !(len(got) == 0 && len(want[q]) == 0) {
					t.Fatalf("config %d %v levels %d query %d (lists %v): got %d results, want %d", ci, al.a, al.levels, q,
						queries[q], len(got), len(want[q]))
				}
			}
		}
	}
}

// TestIntersectCorrupt: a slot above its span is reported, not searched.
func TestIntersectCorrupt(t *testing.T) {
	c := gpu(t)
	k, err := LoadIntersectKernels(c)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(8))
	l := isectRandList(rng, 200, 100000)
	enc := IsectLRC.Codec().AppendEncode(nil, l)
	span := uint32(enc[4]) | uint32(enc[5])<<8 | uint32(enc[6])<<16 | uint32(enc[7])<<24
	if span < 2 || (span-1)&span == 0 { // need bitlen(span-1) == bitlen(span)
		t.Skipf("span %d unsuitable", span)
	}
	span--
	enc[4], enc[5], enc[6], enc[7] = byte(span), byte(span>>8), byte(span>>16), byte(span>>24)
	r, err := k.UploadLists([]IsectList{{Docs: l}, {Docs: append([]uint32{0}, l...), Enc: enc}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Free()
	b, err := r.Batch([][]int{{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	// List 1's Docs are longer, so it is the encoded one; its encoding is of
	// l (it only has to be searched).
	if _, _, err := b.Run(IsectLRC, 0, nil, nil); !errors.Is(err, compress.ErrCorrupt) {
		t.Fatalf("corrupt span: err = %v, want ErrCorrupt", err)
	}
}
