package intersect_test

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/intersect"
)

// Differential tests of PMF, LR, HS and the LRC-direct search against
// internal/ref.

// newAlgos are the algorithms of pmf.go, lr.go and hs.go behind the common
// signature (models and tables built from the lists, as an index would).
var newAlgos = func() []algo {
	var out []algo
	for lv := 1; lv <= intersect.PMFMaxLevels; lv++ {
		out = append(out, algo{fmt.Sprintf("pmf%d", lv), func(dst []uint32, l [][]uint32) []uint32 {
			return intersect.PMF(dst, l, lv)
		}})
	}
	out = append(out, algo{"lr", func(dst []uint32, l [][]uint32) []uint32 {
		ms := make([]intersect.LR, len(l))
		for i := range l {
			ms[i] = intersect.NewLR(l[i])
		}
		return intersect.LRSearch(dst, l, ms)
	}})
	for _, div := range []int{1, 16, 256} {
		out = append(out, algo{fmt.Sprintf("hs%d", div), func(dst []uint32, l [][]uint32) []uint32 {
			ts := make([]intersect.HS, len(l))
			for i := range l {
				ts[i] = intersect.NewHS(l[i], div)
			}
			return intersect.HSSearch(dst, l, ts)
		}})
	}
	return out
}()

// bigCases adds lists long enough for every PMF level (strides 32^1..32^4
// need > 32^3 elements), clustered (non-linear) lists for LR and HS, and
// lists near the top of the docID range.
func bigCases(rng *rand.Rand) [][][]uint32 {
	var out [][][]uint32
	for _, n := range []int{1000, 33000, 70000} {
		u := n * (1 + rng.Intn(8))
		a := randomList(rng, n, u)
		b := randomList(rng, n/(1+rng.Intn(20)), u)
		c := randomList(rng, n*2, 3*u)
		out = append(out, [][]uint32{a, b}, [][]uint32{a, b, c}, [][]uint32{c, a})
	}
	// Clustered: dense runs separated by large gaps.
	var cl []uint32
	d := uint32(0)
	for len(cl) < 20000 {
		if rng.Intn(500) == 0 {
			d += uint32(rng.Intn(1 << 22))
		}
		d += 1 + uint32(rng.Intn(3))
		cl = append(cl, d)
	}
	out = append(out, [][]uint32{cl, randomList(rng, 3000, int(d)+1)}, [][]uint32{cl, append([]uint32(nil), cl...)})
	// Top of the range: docIDs near 2^32-1 (k = 32, shifts of 32 bits).
	hi := []uint32{0, 1, 1 << 31, 1<<32 - 3, 1<<32 - 2, 1<<32 - 1}
	out = append(out, [][]uint32{hi, hi}, [][]uint32{hi[3:], hi}, [][]uint32{{1<<32 - 1}, hi})
	return out
}

func TestNewAlgosAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	var all [][][]uint32
	for _, bs := range []int{1, 2, 32, 33, 1024} {
		all = append(all, cases(rng, bs)...)
	}
	all = append(all, bigCases(rng)...)
	for ci, lists := range all {
		want := ref.Intersect(lists)
		for _, a := range newAlgos {
			cp := append([][]uint32(nil), lists...)
			got := a.f(make([]uint32, 3), cp)
			if !slices.Equal(got, want) {
				t.Fatalf("case %d %s: got %d elements %v, want %d %v", ci, a.name, len(got), trunc(got), len(want), trunc(want))
			}
		}
	}
}

// TestLRSafeRange checks the §4.3 guarantee element by element: the
// position of every element lies in its safe range, also after a
// persistence round trip, and the range never leaves [0, N].
func TestLRSafeRange(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	lists := bigCases(rng)
	var flat [][]uint32
	for _, ls := range lists {
		flat = append(flat, ls...)
	}
	for n := 0; n < 40; n++ {
		flat = append(flat, randomList(rng, n, 1+rng.Intn(100)+n))
	}
	for li, l := range flat {
		m := intersect.NewLR(l)
		p, err := intersect.ParseLR(m.AppendBinary(nil), len(l))
		if err != nil {
			t.Fatal(err)
		}
		for _, mm := range []intersect.LR{m, p} {
			for i, v := range l {
				lo, hi := mm.Range(v)
				if i < lo || i >= hi || hi > len(l) {
					t.Fatalf("list %d (n=%d): element %d (%d) outside its safe range [%d,%d)", li, len(l), i, v, lo, hi)
				}
			}
			for trial := 0; trial < 50; trial++ {
				lo, hi := mm.Range(rng.Uint32())
				if lo < 0 || lo > hi || hi > len(l) {
					t.Fatalf("list %d: range [%d,%d) outside [0,%d]", li, lo, hi, len(l))
				}
			}
		}
		if len(l) > 1000 && m.Contraction() > 1 {
			t.Errorf("list %d: contraction ratio %.3f > 1", li, m.Contraction())
		}
	}
	// A uniform random list is nearly linear: the range is a small fraction.
	u := randomList(rng, 100000, 1<<24)
	if c := intersect.NewLR(u); c.Contraction() > 0.05 {
		t.Errorf("uniform list: contraction ratio %.4f, want < 0.05 (Table 1 GOV2R: 0.001..0.1)", c.Contraction())
	}
	if _, err := intersect.ParseLR(make([]byte, 23), 1); err == nil {
		t.Error("ParseLR accepted a short record")
	}
	bad := binary.LittleEndian.AppendUint64(nil, 1<<32)
	if _, err := intersect.ParseLR(append(bad, make([]byte, 16)...), 1); err == nil {
		t.Error("ParseLR accepted gamma >= 2^32")
	}
}

// TestHSBuckets checks the §4.4 table: every element lies in the bucket of
// its hash, the pointers are non-decreasing, d = h(max)+1, and m follows
// the HSxx rule (buckets of about div elements on uniform lists).
func TestHSBuckets(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	for _, div := range []int{1, 16, 32, 256} {
		for _, l := range append(bigCases(rng)[0], randomList(rng, 50000, 1<<26), nil, []uint32{0}, []uint32{1<<32 - 1}) {
			tb := intersect.NewHS(l, div)
			if len(l) == 0 {
				if tb.Buckets() != 0 {
					t.Fatal("empty list with buckets")
				}
				continue
			}
			if want := int(uint64(l[len(l)-1])>>tb.Shift) + 1; tb.Buckets() != want {
				t.Fatalf("d = %d, want %d", tb.Buckets(), want)
			}
			for h := 0; h < tb.Buckets(); h++ {
				if tb.Ptr[h] > tb.Ptr[h+1] {
					t.Fatal("pointers decrease")
				}
			}
			if tb.Ptr[tb.Buckets()] != uint32(len(l)) {
				t.Fatal("last pointer is not n")
			}
			for i, v := range l {
				lo, hi := tb.Bucket(v)
				if i < lo || i >= hi {
					t.Fatalf("div %d: element %d (%d) outside its bucket [%d,%d)", div, i, v, lo, hi)
				}
			}
			if len(l) >= 50000 {
				avg := float64(len(l)) / float64(tb.Buckets())
				if avg > float64(div) || avg < float64(div)/4 {
					t.Errorf("div %d: %.1f elements per bucket", div, avg)
				}
			}
		}
	}
}

// TestSearchEncoded intersects through the LRC family's Search without
// decoding, against the reference.
func TestSearchEncoded(t *testing.T) {
	rng := rand.New(rand.NewSource(14))
	all := append(cases(rng, 256), bigCases(rng)...)
	for _, name := range []string{"lrc", "lrcseg", "seglrc", "hslrc", "eliasfano"} {
		c, err := compress.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := c.(compress.Searcher)
		if !ok {
			t.Fatalf("%s is not a Searcher", name)
		}
		for ci, lists := range all {
			if len(lists) == 0 {
				continue
			}
			cp := append([][]uint32(nil), lists...)
			sort.SliceStable(cp, func(i, j int) bool { return len(cp[i]) < len(cp[j]) })
			var encs [][]byte
			for _, l := range cp[1:] {
				encs = append(encs, s.AppendEncode(nil, l))
			}
			got, err := intersect.SearchEncoded(nil, cp[0], encs, s)
			if err != nil {
				t.Fatal(err)
			}
			if want := ref.Intersect(lists); !slices.Equal(got, want) {
				t.Fatalf("%s case %d: got %v, want %v", name, ci, trunc(got), trunc(want))
			}
		}
	}
	// Corrupt input: an error, not a panic or a wrong answer.
	c, _ := compress.ByName("lrc")
	enc := c.AppendEncode(nil, []uint32{1, 5, 9})
	if _, err := intersect.SearchEncoded(nil, []uint32{5}, [][]byte{enc[:len(enc)-1]}, c.(compress.Searcher)); err == nil {
		t.Error("truncated encoding accepted")
	}
}

func TestNewAlgosNoAlloc(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	lists := [][]uint32{randomList(rng, 5000, 100000), randomList(rng, 40000, 100000), randomList(rng, 300, 100000)}
	ms := []intersect.LR{intersect.NewLR(lists[0]), intersect.NewLR(lists[1]), intersect.NewLR(lists[2])}
	ts := []intersect.HS{intersect.NewHS(lists[0], 16), intersect.NewHS(lists[1], 16), intersect.NewHS(lists[2], 16)}
	dst := make([]uint32, 0, 300)
	other := append([][]uint32(nil), lists...) // PMF reorders its lists, not the models
	fs := map[string]func(){
		"pmf1": func() { dst = intersect.PMF(dst, other, 1) },
		"pmf4": func() { dst = intersect.PMF(dst, other, 4) },
		"lr":   func() { dst = intersect.LRSearch(dst, lists, ms) },
		"hs":   func() { dst = intersect.HSSearch(dst, lists, ts) },
	}
	for name, f := range fs {
		if n := testing.AllocsPerRun(10, f); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

func TestPMFLevelsPanics(t *testing.T) {
	for _, lv := range []int{0, 5} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("PMF levels %d did not panic", lv)
				}
			}()
			intersect.PMF(nil, [][]uint32{{1}, {1}}, lv)
		}()
	}
}

// FuzzIntersectNew feeds arbitrary lists (sorted or not, duplicates
// included): no algorithm may panic, and on strictly increasing lists every
// one equals the reference.
func FuzzIntersectNew(f *testing.F) {
	f.Add([]byte{3, 1, 2, 3, 2, 2, 3}, uint8(2))
	f.Add([]byte{0, 0, 1, 255, 255, 255, 255}, uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, k uint8) {
		nl := int(k%5) + 1
		lists := make([][]uint32, nl)
		for i := 0; len(data) >= 2; i++ {
			v := uint32(data[0]) | uint32(data[1])<<8
			if data[0]&1 == 1 && len(data) >= 4 {
				v = binary.LittleEndian.Uint32(data)
				data = data[2:]
			}
			data = data[2:]
			lists[i%nl] = append(lists[i%nl], v)
		}
		strict := true
		for _, l := range lists {
			for i := 1; i < len(l); i++ {
				if l[i] <= l[i-1] {
					strict = false
				}
			}
		}
		want := ref.Intersect(lists)
		for _, a := range newAlgos {
			got := a.f(nil, append([][]uint32(nil), lists...))
			if strict && !slices.Equal(got, want) {
				t.Fatalf("%s: got %v, want %v", a.name, got, want)
			}
		}
		if strict && len(lists) > 1 {
			c, _ := compress.ByName("hslrc")
			s := c.(compress.Searcher)
			cp := append([][]uint32(nil), lists...)
			sort.SliceStable(cp, func(i, j int) bool { return len(cp[i]) < len(cp[j]) })
			var encs [][]byte
			for _, l := range cp[1:] {
				encs = append(encs, s.AppendEncode(nil, l))
			}
			got, err := intersect.SearchEncoded(nil, cp[0], encs, s)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("hslrc search: got %v (%v), want %v", got, err, want)
			}
		}
	})
}

// BenchmarkIntersectNew: ns per shortest-list element of PMF, LR and HS
// against merge and binary search, two lists at several length ratios
// (models and tables built outside the timing, as an index stores them).
func BenchmarkIntersectNew(b *testing.B) {
	rng := rand.New(rand.NewSource(16))
	const universe = 1 << 24
	long := randomList(rng, 1<<20, universe)
	for _, ratio := range []int{1, 10, 100, 1000} {
		short := randomList(rng, (1<<20)/ratio, universe)
		lists := [][]uint32{short, long}
		ms := []intersect.LR{intersect.NewLR(short), intersect.NewLR(long)}
		ts := []intersect.HS{intersect.NewHS(short, 16), intersect.NewHS(long, 16)}
		dst := make([]uint32, 0, len(short))
		fs := []struct {
			name string
			f    func()
		}{
			{"merge", func() { dst = intersect.Merge(dst, lists) }},
			{"binsearch", func() { dst = intersect.BinarySearch(dst, lists) }},
			{"pmf1", func() { dst = intersect.PMF(dst, lists, 1) }},
			{"pmf2", func() { dst = intersect.PMF(dst, lists, 2) }},
			{"lr", func() { dst = intersect.LRSearch(dst, lists, ms) }},
			{"hs16", func() { dst = intersect.HSSearch(dst, lists, ts) }},
		}
		for _, f := range fs {
			b.Run(fmt.Sprintf("%s/ratio%d", f.name, ratio), func(b *testing.B) {
				for b.Loop() {
					f.f()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(short)), "ns/short")
			})
		}
	}
}
