package compress

import (
	"math/rand"
	"sort"
	"testing"
)

// TestLRCSafeRangeContracts checks the point of §4.3: on a near-linear list
// the safe search range of every probe is sound and much shorter than the
// list (contraction ratio (L+R)/|ℓ| well below 1), for the global line of
// LRC and for the lines of SegLRC's segments and HS-LRC's buckets.
func TestLRCSafeRangeContracts(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	n := 100_000
	vals := make([]uint32, n)
	for i := range vals {
		vals[i] = uint32(rng.Int63n(int64(n) * 50))
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	_, p, err := lrcParse("lrc", lrcCodec{}.AppendEncode(nil, vals))
	if err != nil {
		t.Fatal(err)
	}
	widest := 0
	for k := 0; k < 2000; k++ {
		x := vals[rng.Intn(n)] + uint32(rng.Intn(3)) - 1
		lo, hi := p.bounds(x)
		first := sort.Search(n, func(i int) bool { return vals[i] >= x })
		if first < lo || first > hi {
			t.Fatalf("x=%d: first >= x at %d, outside safe range [%d, %d]", x, first, lo, hi)
		}
		widest = max(widest, hi-lo)
	}
	// Random lists deviate from their line by O(√n·gap) values, i.e.
	// O(√n) positions: a few hundred here.
	if widest > n/20 {
		t.Errorf("LRC safe range up to %d of %d positions: no contraction", widest, n)
	}
	t.Logf("LRC: widest safe range %d of %d (contraction ratio %.4f)", widest, n, float64(widest)/float64(n))

	for _, c := range []Searcher{segLRCCodec, hsLRCCodec{}} {
		src := c.AppendEncode(nil, vals)
		var maxW int
		for k := 0; k < 2000; k++ {
			x := vals[rng.Intn(n)]
			var p lrcPiece
			var ok bool
			if c.ID() == IDSegLRC {
				s, err := segLRCCodec.open(src)
				if err != nil {
					t.Fatal(err)
				}
				g := sort.Search(s.G, func(g int) bool { return s.first(g) >= x })
				p, ok = s.piece(max(g-1, 0))
			} else {
				s, err := hsOpen(src)
				if err != nil {
					t.Fatal(err)
				}
				p, ok = s.bucket(int(uint64(x) >> s.sh))
			}
			if !ok {
				t.Fatal("bad piece")
			}
			lo, hi := p.bounds(x)
			maxW = max(maxW, hi-lo)
		}
		if maxW > 64 {
			t.Errorf("%s: local safe range up to %d positions", c.Name(), maxW)
		}
		t.Logf("%s: widest local safe range %d positions", c.Name(), maxW)
	}
}
