package compress_test

// Shared tests and helpers of the LRC family (lrc, lrcseg, seglrc, hslrc).

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

// lrcFamily are the codecs of the family.
var lrcFamily = []string{"lrc", "lrcseg", "seglrc", "hslrc"}

// lrcSearcher returns the registered codec name as a Searcher.
func lrcSearcher(tb testing.TB, name string) compress.Searcher {
	tb.Helper()
	c, err := compress.ByName(name)
	if err != nil {
		tb.Fatal(err)
	}
	return codectest.As[compress.Searcher](tb, codectest.Lookup(tb, c.ID(), name, compress.Sorted))
}

// lrcGoldenInputSmall and lrcGoldenInputBig are the inputs pinned by the golden tests.
func lrcGoldenInputSmall() []uint32 {
	return []uint32{0, 3, 3, 7, 20, 21, 22, 100, 1000, 1001}
}

// lrcGoldenInputBig is 600 values with a density change at 300 and a jump every
// 97 values, so that segments, buckets and lines all differ.
func lrcGoldenInputBig() []uint32 {
	out := make([]uint32, 600)
	s, v := uint32(12345), uint32(1000)
	for i := range out {
		s = s*1664525 + 1013904223
		g := (s >> 24) % 64
		if i >= 300 {
			g /= 8
		}
		if i%97 == 0 {
			g += 5000
		}
		v += g
		out[i] = v
	}
	return out
}

// lrcCheckGolden pins the exact encodings of the golden inputs (formats are
// persisted in index files) and checks that the pinned bytes decode back.
func lrcCheckGolden(t *testing.T, name, small, big string) {
	t.Helper()
	c := lrcSearcher(t, name)
	codectest.Golden(t, c, lrcGoldenInputSmall(), small)
	codectest.Golden(t, c, lrcGoldenInputBig(), big)
}

// lrcGen returns a sorted array of n values of the given shape.
func lrcGen(rng *rand.Rand, n, shape int) []uint32 {
	out := make([]uint32, n)
	var v uint64
	switch shape {
	case 3: // near the top of the range
		v = math.MaxUint32 - uint64(n)*uint64(rng.Intn(3000))
	case 4: // constant
		v = uint64(rng.Uint32())
	}
	for i := range out {
		var g uint64
		switch shape {
		case 0: // dense with duplicates
			g = uint64(rng.Intn(3))
		case 1: // sparse
			g = uint64(rng.Intn(2_000_000))
		case 2: // clustered: dense runs, rare huge jumps
			g = uint64(rng.Intn(4))
			if rng.Intn(50) == 0 {
				g = uint64(rng.Intn(50_000_000))
			}
		case 3:
			g = uint64(rng.Intn(3000))
		case 4:
			g = 0
		case 5: // density change halfway
			if i < n/2 {
				g = uint64(rng.Intn(10))
			} else {
				g = uint64(rng.Intn(1000))
			}
		default: // geometric gaps, mean 50
			g = uint64(rng.ExpFloat64() * 50)
		}
		v += g
		out[i] = uint32(min(v, math.MaxUint32))
	}
	return out
}

// lrcSearchArrays are the arrays of the search tests: lengths 0..2000 and
// every segment / bucket boundary, in all shapes.
func lrcSearchArrays(seed int64) [][]uint32 {
	rng := rand.New(rand.NewSource(seed))
	lens := []int{0, 1, 2, 3, 255, 256, 257, 511, 512, 513, 769, 1000, 2000}
	for i := 0; i < 10; i++ {
		lens = append(lens, rng.Intn(2001))
	}
	var out [][]uint32
	for i, n := range lens {
		out = append(out, lrcGen(rng, n, i%7))
	}
	out = append(out, lrcGen(rng, 1500, 0), lrcGen(rng, 1500, 1), lrcGen(rng, 1500, 2), lrcGen(rng, 300, 3))
	return out
}

// lrcXs returns the probe values for vals: both ends of the uint32 range,
// elements, their neighbours, and random values.
func lrcXs(rng *rand.Rand, vals []uint32) []uint32 {
	xs := []uint32{0, 1, math.MaxUint32 - 1, math.MaxUint32}
	if len(vals) == 0 {
		return append(xs, rng.Uint32())
	}
	hi := uint64(vals[len(vals)-1]) + 2
	for k := 0; k < 12; k++ {
		v := vals[rng.Intn(len(vals))]
		xs = append(xs, v, v-1, v+1)
		xs = append(xs, uint32(rng.Int63n(int64(hi))))
	}
	return append(xs, vals[0], vals[0]-1, vals[len(vals)-1], vals[len(vals)-1]+1)
}

// lrcCheckSearchOne checks Search(src, from, x) for every from in
// [−1, n+1] against a linear scan of vals, and Get for every index.
func lrcCheckSearchOne(t *testing.T, c compress.Searcher, src []byte, vals []uint32, xs []uint32) {
	t.Helper()
	n := len(vals)
	next := make([]int, n+1) // next[i]: first j >= i with vals[j] >= x, by linear scan
	for _, x := range xs {
		next[n] = n
		for i := n - 1; i >= 0; i-- {
			if vals[i] >= x {
				next[i] = i
			} else {
				next[i] = next[i+1]
			}
		}
		for from := -1; from <= n+1; from++ {
			want := next[min(max(from, 0), n)]
			wantV := uint32(0)
			if want < n {
				wantV = vals[want]
			}
			i, v, err := c.Search(src, from, x)
			if err != nil || i != want || v != wantV {
				t.Fatalf("%s: n=%d: Search(from=%d, x=%d) = %d, %d, %v; want %d, %d",
					c.Name(), n, from, x, i, v, err, want, wantV)
			}
		}
	}
	for i, want := range vals {
		if v, err := c.Get(src, i); err != nil || v != want {
			t.Fatalf("%s: n=%d: Get(%d) = %d, %v; want %d", c.Name(), n, i, v, err, want)
		}
	}
}

// lrcCheckSearch runs the search test of one codec.
func lrcCheckSearch(t *testing.T, name string) {
	c := lrcSearcher(t, name)
	rng := rand.New(rand.NewSource(42))
	for _, vals := range lrcSearchArrays(11) {
		src := c.AppendEncode(nil, vals)
		lrcCheckSearchOne(t, c, src, vals, lrcXs(rng, vals))
	}
	// Search and Get do not allocate.
	vals := lrcGen(rng, 1000, 6)
	codectest.AccessNoAllocs(t, c, c.AppendEncode(nil, vals), 700, 10, vals[500])
}

// lrcCheckCorrupt mutates valid encodings (byte changes, truncations,
// extensions): Decode, Count, Get and Search must not panic and must return
// ErrCorrupt-wrapped errors; and whenever Decode accepts the bytes, Get and
// Search must agree with the decoded array (Search's safe range must be
// sound on everything Decode accepts).
func lrcCheckCorrupt(t *testing.T, name string) {
	c := lrcSearcher(t, name)
	rng := rand.New(rand.NewSource(5))
	out := make([]uint32, 4096)
	isOK := codectest.Allowed
	for _, n := range []int{1, 2, 100, 256, 257, 600, 1100} {
		for shape := 0; shape < 7; shape++ {
			vals := lrcGen(rng, n, shape)
			enc := c.AppendEncode(nil, vals)
			for trial := 0; trial < 150; trial++ {
				b := append([]byte(nil), enc...)
				switch trial % 5 {
				case 0, 1, 2: // overwrite 1..3 bytes, biased to the headers
					for k := 0; k <= rng.Intn(3); k++ {
						p := rng.Intn(len(b))
						if rng.Intn(2) == 0 {
							p = rng.Intn(min(len(b), 64))
						}
						b[p] = byte(rng.Intn(256))
					}
				case 3:
					b = b[:rng.Intn(len(b))]
				case 4:
					b = append(b, byte(rng.Intn(256)))
				}
				m, err := c.Decode(out, b)
				if !isOK(err) {
					t.Fatalf("%s: Decode error does not wrap ErrCorrupt: %v", name, err)
				}
				if _, err := c.Count(b); !isOK(err) {
					t.Fatalf("%s: Count error does not wrap ErrCorrupt: %v", name, err)
				}
				for _, i := range []int{-1, 0, 1, n / 2, n - 1, n, 300} {
					if _, err := c.Get(b, i); !isOK(err) {
						t.Fatalf("%s: Get error does not wrap ErrCorrupt: %v", name, err)
					}
				}
				xs := []uint32{0, vals[n/2], vals[n-1] + 1, rng.Uint32()}
				for _, x := range xs {
					if _, _, err := c.Search(b, rng.Intn(n+1), x); !isOK(err) {
						t.Fatalf("%s: Search error does not wrap ErrCorrupt: %v", name, err)
					}
				}
				if err == nil {
					dec := append([]uint32(nil), out[:m]...)
					lrcCheckSearchOne(t, c, b, dec, xs)
				}
			}
		}
	}
}

// TestLRCFamilyOverflow checks that headers whose line would overflow are
// rejected by every entry point, with ErrCorrupt.
func TestLRCFamilyOverflow(t *testing.T) {
	vals := []uint32{5, 6, 9, 12, 13}
	for _, name := range []string{"lrc", "lrcseg", "seglrc"} {
		c := lrcSearcher(t, name)
		enc := c.AppendEncode(nil, vals)
		for k, mut := range []func(b []byte){
			func(b []byte) { binary.LittleEndian.PutUint64(b[8:], math.MaxUint64) },  // huge slope
			func(b []byte) { binary.LittleEndian.PutUint64(b[8:], 1<<62) },           // slope·(n−1) >= 2^64
			func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 1<<40) },          // base too big
			func(b []byte) { binary.LittleEndian.PutUint64(b[16:], uint64(1)<<63) },  // base too small
			func(b []byte) { binary.LittleEndian.PutUint32(b, math.MaxUint32) },      // count
			func(b []byte) { binary.LittleEndian.PutUint64(b[16:], math.MaxUint32) }, // values > 2^32−1
		} {
			b := append([]byte(nil), enc...)
			mut(b)
			if _, err := c.Decode(make([]uint32, 8), b); !errors.Is(err, compress.ErrCorrupt) {
				t.Errorf("%s: case %d: Decode: err = %v, want ErrCorrupt", name, k, err)
			}
			if _, err := c.Get(b, 4); !errors.Is(err, compress.ErrCorrupt) {
				t.Errorf("%s: case %d: Get: err = %v, want ErrCorrupt", name, k, err)
			}
			// (The last case leaves v[0] = 2^32−1 valid, so a search that
			// stops there legitimately succeeds.)
			if _, _, err := c.Search(b, 0, 12); k < 5 && !errors.Is(err, compress.ErrCorrupt) {
				t.Errorf("%s: case %d: Search: err = %v, want ErrCorrupt", name, k, err)
			}
		}
	}
	c := lrcSearcher(t, "hslrc")
	enc := c.AppendEncode(nil, vals)
	for _, mut := range []func(b []byte){
		func(b []byte) { binary.LittleEndian.PutUint32(b[4:], 33) },                // sh
		func(b []byte) { binary.LittleEndian.PutUint32(b[8:], 0) },                 // d
		func(b []byte) { binary.LittleEndian.PutUint32(b[8:], math.MaxUint32) },    // d
		func(b []byte) { binary.LittleEndian.PutUint64(b[24:], math.MaxUint64) },   // slope
		func(b []byte) { binary.LittleEndian.PutUint64(b[32:], 1<<40) },            // base
		func(b []byte) { binary.LittleEndian.PutUint64(b[32:], math.MaxUint32-2) }, // values > 2^32−1
		func(b []byte) { binary.LittleEndian.PutUint32(b[44:], 7) },                // slot offset
	} {
		b := append([]byte(nil), enc...)
		mut(b)
		if _, err := c.Decode(make([]uint32, 8), b); !errors.Is(err, compress.ErrCorrupt) {
			t.Errorf("hslrc: Decode: err = %v, want ErrCorrupt", err)
		}
		if _, err := c.Get(b, 4); !errors.Is(err, compress.ErrCorrupt) {
			t.Errorf("hslrc: Get: err = %v, want ErrCorrupt", err)
		}
	}
}

// TestLRCFamilyUnsortedPanics checks that unsorted input is a BUG panic.
func TestLRCFamilyUnsortedPanics(t *testing.T) {
	for _, name := range lrcFamily {
		c := lrcSearcher(t, name)
		func() {
			defer func() {
				r := recover()
				if s, ok := r.(string); !ok || !strings.HasPrefix(s, "BUG: ") {
					t.Errorf("%s: unsorted input: panic %v, want a BUG panic", name, r)
				}
			}()
			c.AppendEncode(nil, []uint32{1, 2, 3, 2})
		}()
	}
}

// TestLRCFamilySingleSegment checks that for n <= 256 LRCSeg and SegLRC
// take the LRC form, byte for byte.
func TestLRCFamilySingleSegment(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	lrc := lrcSearcher(t, "lrc")
	for _, n := range []int{0, 1, 2, 128, 255, 256} {
		vals := lrcGen(rng, n, 6)
		want := hex.EncodeToString(lrc.AppendEncode(nil, vals))
		for _, name := range []string{"lrcseg", "seglrc"} {
			if got := hex.EncodeToString(lrcSearcher(t, name).AppendEncode(nil, vals)); got != want {
				t.Errorf("%s: n=%d: encoding differs from lrc", name, n)
			}
		}
	}
}

// TestLRCFamilyBitsPerInt logs the compressed size of a random sorted
// array of 100k values with mean gap 50 (run with -v), and checks it
// against a loose bound (log2(50)+1.44 ≈ 7.1 bits is the entropy of
// geometric gaps; LRC stores deviations, which cost more).
func TestLRCFamilyBitsPerInt(t *testing.T) {
	rng := rand.New(rand.NewSource(100))
	vals := make([]uint32, 100_000)
	for i := range vals {
		vals[i] = uint32(rng.Int63n(int64(len(vals)) * 50))
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	out := make([]uint32, len(vals))
	for _, name := range lrcFamily {
		c := lrcSearcher(t, name)
		enc := c.AppendEncode(nil, vals)
		if n, err := c.Decode(out, enc); err != nil || n != len(vals) {
			t.Fatalf("%s: decode: %d, %v", name, n, err)
		}
		bpi := float64(8*len(enc)) / float64(len(vals))
		t.Logf("%-7s %8d bytes  %6.3f bits/int", name, len(enc), bpi)
		if bpi > 20 {
			t.Errorf("%s: %.2f bits per integer", name, bpi)
		}
	}
}

// FuzzLRCFamilySearch feeds arbitrary bytes to Search and Get of every
// codec of the family: they must not panic, must return ErrCorrupt-wrapped
// errors, and must agree with a linear scan of the decoded array whenever
// Decode accepts the bytes.
func FuzzLRCFamilySearch(f *testing.F) {
	rng := rand.New(rand.NewSource(8))
	for k, name := range lrcFamily {
		c := lrcSearcher(f, name)
		for _, n := range []int{0, 1, 5, 256, 300, 700} {
			vals := lrcGen(rng, n, (n+k)%7)
			f.Add(uint8(k), c.AppendEncode(nil, vals), uint16(n/3), rng.Uint32())
		}
	}
	out := make([]uint32, 1<<16)
	f.Fuzz(func(t *testing.T, k uint8, data []byte, from uint16, x uint32) {
		c := lrcSearcher(t, lrcFamily[int(k)%len(lrcFamily)])
		i, v, err := c.Search(data, int(from), x)
		if err != nil && !errors.Is(err, compress.ErrCorrupt) {
			t.Fatalf("Search error does not wrap ErrCorrupt: %v", err)
		}
		n, derr := c.Decode(out, data)
		if derr != nil {
			return
		}
		if err != nil {
			t.Fatalf("Search fails (%v) on bytes Decode accepts", err)
		}
		want, wantV := codectest.SearchRef(out[:n], int(from), x)
		if i != want || v != wantV {
			t.Fatalf("Search(%d, %d) = %d, %d; want %d, %d", from, x, i, v, want, wantV)
		}
		if n > 0 {
			j := int(x % uint32(n))
			if g, err := c.Get(data, j); err != nil || g != out[j] {
				t.Fatalf("Get(%d) = %d, %v; want %d", j, g, err, out[j])
			}
		}
	})
}
