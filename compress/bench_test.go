package compress_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/qpengine/qp/compress"
)

// benchShape is one benchmark input: the arrays fed to General codecs
// (d-gaps minus one) and to Sorted codecs (their prefix sums).
type benchShape struct {
	name    string
	general [][]uint32
	sorted  [][]uint32
}

// benchGaps returns n d-gaps minus one: every run of 128 is geometric with
// a mean drawn log-uniformly from [1, 2048], a Zipf-like mix of dense lists
// (gaps of 0) and sparse ones, as in a real index's blocks.
func benchGaps(rng *rand.Rand, n int) []uint32 {
	out := make([]uint32, n)
	for i := 0; i < n; i += 128 {
		mean := math.Exp2(rng.Float64() * 11) // mean of gap+1
		logq := math.Log1p(-1 / mean)         // geometric: P(gap >= k) = q^k
		for j := i; j < n && j < i+128; j++ {
			if mean <= 1 {
				continue
			}
			out[j] = uint32(math.Log(1-rng.Float64()) / logq)
		}
	}
	return out
}

// benchPrefix returns the docIDs minus the block base that the index feeds
// Sorted codecs: v[i] = Σ_{j<=i} (g[j]+1) - 1.
func benchPrefix(tb testing.TB, g []uint32) []uint32 {
	out := make([]uint32, len(g))
	var s uint64
	for i, x := range g {
		s += uint64(x) + 1
		if s-1 > math.MaxUint32 {
			tb.Fatalf("prefix sum overflows 32 bits at %d", i)
		}
		out[i] = uint32(s - 1)
	}
	return out
}

func benchShapes(tb testing.TB) []benchShape {
	rng := rand.New(rand.NewSource(42))
	blocks := benchShape{name: "block128-gaps"}
	for range 4096 {
		g := benchGaps(rng, 128)
		blocks.general = append(blocks.general, g)
		blocks.sorted = append(blocks.sorted, benchPrefix(tb, g))
	}
	g := benchGaps(rng, 1<<20)
	list := benchShape{
		name:    "list1M",
		general: [][]uint32{g},
		sorted:  [][]uint32{benchPrefix(tb, g)},
	}
	return []benchShape{blocks, list}
}

// BenchmarkDecode decodes every shape with every registered codec and
// reports decoded integers per second and the compressed size in bits per
// integer.
func BenchmarkDecode(b *testing.B) {
	shapes := benchShapes(b)
	for _, c := range compress.All() {
		for _, sh := range shapes {
			arrays := sh.general
			if c.Kind() == compress.Sorted {
				arrays = sh.sorted
			}
			enc := make([][]byte, len(arrays))
			total, size, maxLen := 0, 0, 0
			for i, a := range arrays {
				enc[i] = c.AppendEncode(nil, a)
				total += len(a)
				size += len(enc[i])
				maxLen = max(maxLen, len(a))
			}
			out := make([]uint32, maxLen)
			b.Run(c.Name()+"/"+sh.name, func(b *testing.B) {
				for i, e := range enc {
					n, err := c.Decode(out, e)
					if err != nil {
						b.Fatalf("%s: decode: %v", c.Name(), err)
					}
					if n != len(arrays[i]) || out[n-1] != arrays[i][n-1] || out[0] != arrays[i][0] {
						b.Fatalf("%s: decoded array %d differs", c.Name(), i)
					}
				}
				b.SetBytes(int64(4 * total))
				b.ResetTimer()
				for range b.N {
					for _, e := range enc {
						if _, err := c.Decode(out, e); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "ints/s")
				b.ReportMetric(8*float64(size)/float64(total), "bits/int")
			})
		}
	}
}
