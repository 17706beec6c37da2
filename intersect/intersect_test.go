package intersect_test

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/intersect"
)

// randomList returns n distinct sorted docIDs below universe.
func randomList(rng *rand.Rand, n, universe int) []uint32 {
	if n > universe {
		n = universe
	}
	var out []uint32
	if n*3 > universe {
		for _, p := range rng.Perm(universe)[:n] {
			out = append(out, uint32(p))
		}
	} else {
		seen := map[uint32]bool{}
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

type algo struct {
	name string
	f    func(dst []uint32, lists [][]uint32) []uint32
}

var algos = []algo{
	{"merge", intersect.Merge},
	{"svs", intersect.SvS},
	{"binary", intersect.BinarySearch},
	{"merge2", func(dst []uint32, l [][]uint32) []uint32 {
		if len(l) != 2 {
			return intersect.Merge(dst, l)
		}
		return intersect.Merge2(dst, l[0], l[1])
	}},
	{"gallop2", func(dst []uint32, l [][]uint32) []uint32 {
		if len(l) != 2 {
			return intersect.SvS(dst, l)
		}
		return intersect.Gallop2(dst, l[0], l[1])
	}},
}

// cases yields list tuples covering boundary lengths, identical, disjoint and
// skewed lists.
func cases(rng *rand.Rand, bs int) [][][]uint32 {
	lens := []int{0, 1, 2, bs - 1, bs, bs + 1}
	var out [][][]uint32
	for _, a := range lens {
		for _, b := range lens {
			if a < 0 || b < 0 {
				continue
			}
			for _, u := range []int{max(a, b, 1), 3 * max(a, b, 1), 1000} {
				out = append(out, [][]uint32{randomList(rng, a, u), randomList(rng, b, u)})
			}
		}
	}
	for i := 0; i < 40; i++ {
		u := 1 + rng.Intn(5000)
		x := randomList(rng, rng.Intn(u+1), u)
		// Identical lists.
		out = append(out, [][]uint32{x, append([]uint32(nil), x...)})
		out = append(out, [][]uint32{x, x, x})
		// Disjoint: evens and odds.
		var ev, od []uint32
		for _, d := range x {
			if d%2 == 0 {
				ev = append(ev, d)
			} else {
				od = append(od, d)
			}
		}
		out = append(out, [][]uint32{ev, od})
		// Skewed: a short list against long ones.
		m := 2 + rng.Intn(4)
		var ls [][]uint32
		for j := 0; j < m; j++ {
			n := 1 + rng.Intn(5)
			if j > 0 {
				n = u/2 + rng.Intn(u/2+1)
			}
			ls = append(ls, randomList(rng, n, u))
		}
		rng.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
		out = append(out, ls)
		out = append(out, [][]uint32{x})
	}
	out = append(out, nil)
	return out
}

func TestArraysAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, bs := range []int{1, 2, 8, 128} {
		for ci, lists := range cases(rng, bs) {
			want := ref.Intersect(lists)
			for _, a := range algos {
				cp := append([][]uint32(nil), lists...)
				dst := make([]uint32, 3) // stale contents must be overwritten
				got := a.f(dst, cp)
				if !slices.Equal(got, want) {
					t.Fatalf("B=%d case %d %s: got %v, want %v (lists %v)", bs, ci, a.name, trunc(got), trunc(want), len(lists))
				}
			}
		}
	}
}

func trunc(x []uint32) []uint32 {
	if len(x) > 20 {
		return x[:20]
	}
	return x
}

func TestGallopGEQ(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for trial := 0; trial < 2000; trial++ {
		a := randomList(rng, rng.Intn(100), 300)
		from := 0
		if len(a) > 0 {
			from = rng.Intn(len(a) + 1)
		}
		x := uint32(rng.Intn(310))
		want := from
		for want < len(a) && a[want] < x {
			want++
		}
		if got := intersect.GallopGEQ(a, from, x); got != want {
			t.Fatalf("GallopGEQ(%v, %d, %d) = %d, want %d", a, from, x, got, want)
		}
	}
}

func TestNoAllocWithCapacity(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	lists := [][]uint32{randomList(rng, 5000, 100000), randomList(rng, 20000, 100000), randomList(rng, 300, 100000)}
	dst := make([]uint32, 0, 300)
	for _, a := range algos {
		if n := testing.AllocsPerRun(10, func() { dst = a.f(dst, lists) }); n != 0 {
			t.Errorf("%s: %v allocations", a.name, n)
		}
	}
}

// TestCursorsAllCodecs intersects compressed lists of every registered codec
// and several block sizes against the reference.
func TestCursorsAllCodecs(t *testing.T) {
	for _, c := range compress.All() {
		for _, bs := range []int{1, 3, 16, 128} {
			t.Run(fmt.Sprintf("%s/B%d", c.Name(), bs), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(bs) + int64(c.ID())*1000))
				const n = 3000
				col := &ref.Collection{Lens: make([]uint32, n)}
				for i := range col.Lens {
					col.Lens[i] = 1
				}
				sizes := []int{1, 2, bs - 1, bs, bs + 1, 3*bs + 1, 50, 400, n / 3, n}
				for i, sz := range sizes {
					if sz < 1 {
						continue
					}
					d := randomList(rng, sz, n)
					f := make([]uint32, len(d))
					for j := range f {
						f[j] = 1
					}
					col.Terms = append(col.Terms, fmt.Sprintf("t%02d", i))
					col.Docs = append(col.Docs, d)
					col.Freqs = append(col.Freqs, f)
				}
				x, err := col.WriteIndex(filepath.Join(t.TempDir(), "x.qp"), c, bs)
				if err != nil {
					t.Fatal(err)
				}
				if err := col.CheckIndex(x); err != nil {
					t.Fatalf("codec %s does not round-trip (not an intersection bug): %v", c.Name(), err)
				}
				curs := make([]index.Cursor, len(col.Terms))
				var dst []uint32
				for trial := 0; trial < 60; trial++ {
					m := 1 + rng.Intn(4)
					var cs []*index.Cursor
					var lists [][]uint32
					for j := 0; j < m; j++ {
						ti := rng.Intn(len(col.Terms))
						l, err := x.List(ti)
						if err != nil {
							t.Fatal(err)
						}
						curs[j].Reset(l)
						cs = append(cs, &curs[j])
						lists = append(lists, col.Docs[ti])
					}
					dst, err = intersect.Cursors(dst, cs)
					if err != nil {
						t.Fatal(err)
					}
					if want := ref.Intersect(lists); !slices.Equal(dst, want) {
						t.Fatalf("trial %d: got %v, want %v", trial, trunc(dst), trunc(want))
					}
				}
			})
		}
	}
}

// Benchmarks: ns per element of the shorter list (and of both lists) for
// two-list intersections at several length ratios.
func BenchmarkIntersect(b *testing.B) {
	rng := rand.New(rand.NewSource(4))
	const universe = 1 << 24
	for _, ratio := range []int{1, 10, 100, 1000} {
		long := randomList(rng, 1<<20, universe)
		short := randomList(rng, (1<<20)/ratio, universe)
		dst := make([]uint32, 0, len(short))
		for _, a := range algos[:3] {
			b.Run(fmt.Sprintf("%s/ratio%d", a.name, ratio), func(b *testing.B) {
				lists := [][]uint32{short, long}
				for i := 0; i < b.N; i++ {
					dst = a.f(dst, lists)
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				b.ReportMetric(ns/float64(len(short)), "ns/short")
				b.ReportMetric(ns/float64(len(short)+len(long)), "ns/elem")
			})
		}
	}
}
