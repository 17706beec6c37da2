package kern

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/qpengine/qp/cuda"
)

// TestQueryTopKOnePass covers query_topk.cu's one-pass path (sparse, k <=
// kLocalK = 16, at least kOnePassItems = 16384 items of one query) and its
// edges: item counts just below and at the threshold, k just above kLocalK
// (radix path), scores tied on few levels, ascending scores (every item
// enters its thread's list) and descending ones, the k best items all read by
// one thread (its own k-th then matters), queries of both paths in one
// launch. Expected: the k smallest rank keys, ascending, and the item count.
func TestQueryTopKOnePass(t *testing.T) {
	c, q := qkLoad(t)
	rng := rand.New(rand.NewSource(7))
	type query struct {
		k     int
		docs  []uint32
		sc    []float32
		order string
	}
	var qs []query
	for _, k := range []int{1, 2, 10, 16, 17} {
		for _, n := range []int{16383, 16384, 40000} {
			for _, order := range []string{"random", "levels", "ascending", "descending", "onethread", "onethread-asc"} {
				docs := make([]uint32, n)
				d := uint32(rng.Intn(100))
				for i := range docs {
					d += 1 + uint32(rng.Intn(20))
					docs[i] = d
				}
				sc := make([]float32, n)
				for i := range sc {
					switch order {
					case "random":
						sc[i] = rng.Float32()*20 + 1e-6
					case "levels":
						sc[i] = float32(1+rng.Intn(3)) * 0.37
					case "ascending":
						sc[i] = float32(i+1) * 0.001
					case "descending":
						sc[i] = float32(n-i) * 0.001
					case "onethread", "onethread-asc":
						// the best items all read by the same thread (stride 256),
						// arriving best-first or worst-first
						sc[i] = rng.Float32()
						if i%256 == 0 {
							sc[i] = 100 + float32(n-i)*0.01
							if order == "onethread-asc" {
								sc[i] = 100 + float32(i)*0.01
							}
						}
					}
				}
				qs = append(qs, query{k: k, docs: docs, sc: sc, order: order})
			}
		}
	}
	nq := len(qs)
	meta := make([]uint32, QMetaWords*nq)
	var cdoc, cq []uint32
	var cscore []float32
	res := 0
	for a, qq := range qs {
		PutQMeta(meta[QMetaWords*a:], 0, 0, uint32(qq.k), uint32(res))
		res += qq.k
		cdoc = append(cdoc, qq.docs...)
		cscore = append(cscore, qq.sc...)
		for range qq.docs {
			cq = append(cq, uint32(a))
		}
	}
	bufs := []*cuda.Buffer{
		qkU32(t, c, meta, 0), qkU32(t, c, cdoc, 0), qkU32(t, c, qkF32(cscore), 0), qkU32(t, c, cq, 0),
		qkU32(t, c, []uint32{0}, 0), qkU64(t, c, make([]uint64, res), 0), qkU32(t, c, make([]uint32, nq), 0),
		qkU32(t, c, make([]uint32, nq), 0), qkU64(t, c, make([]uint64, 1), 0), qkU64(t, c, make([]uint64, nq), 0),
	}
	defer qkFree(bufs...)
	if err := q.TopK(nil, false, nq, bufs[0].Ptr(), bufs[1].Ptr(), bufs[2].Ptr(), bufs[3].Ptr(), len(cdoc),
		bufs[4].Ptr(), 0, bufs[5].Ptr(), bufs[6].Ptr(), bufs[7].Ptr(), bufs[8].Ptr(), bufs[9].Ptr()); err != nil {
		t.Fatal(err)
	}
	gotRes := make([]uint64, res)
	gotCnt := make([]uint32, nq)
	gotTot := make([]uint32, nq)
	for _, e := range []error{cuda.CopyFromDevice(gotRes, bufs[5], 0), cuda.CopyFromDevice(gotCnt, bufs[6], 0), cuda.CopyFromDevice(gotTot, bufs[7], 0)} {
		if e != nil {
			t.Fatal(e)
		}
	}
	off := 0
	for a, qq := range qs {
		keys := make([]uint64, len(qq.docs))
		for i, d := range qq.docs {
			keys[i] = qkKey(d, qq.sc[i])
		}
		slices.Sort(keys)
		want := keys[:qq.k]
		if int(gotCnt[a]) != qq.k || int(gotTot[a]) != len(keys) {
			t.Fatalf("query %d (k=%d, %d items, %s): cnt %d total %d, want %d %d", a, qq.k, len(keys), qq.order, gotCnt[a], gotTot[a], qq.k, len(keys))
		}
		for r, w := range want {
			if gotRes[off+r] != w {
				t.Fatalf("query %d (k=%d, %d items, %s): result %d = %#x, want %#x", a, qq.k, len(keys), qq.order, r, gotRes[off+r], w)
			}
		}
		off += qq.k
	}
}
