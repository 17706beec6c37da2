package score

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTermsTwins compares Terms (the AVX2 routine where the CPU has it)
// with Term value by value, bit for bit, on every length up to 130 and at
// frequencies and norms at the edges: tf 0, 1, 2^24+1 (not a float32),
// 2^31-1 and >= 2^31 (left to the scalar path), norms 0 and huge; also
// with dst aliasing norms.
func TestTermsTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	edgeTF := []uint32{0, 1, 2, 1<<24 + 1, 1<<31 - 1, 1 << 31, math.MaxUint32}
	edgeNorm := []float32{0, 1e-30, 0.54, 1, 3.7, 1e30}
	params := [][3]float32{{1.3, 1.9, 1}, {0.0001, 1, 1}, {12.5, 2.2, 3}, {7, 1.9, 0.5}}
	for n := 0; n <= 130; n++ {
		for trial := 0; trial < 8; trial++ {
			freqs := make([]uint32, n)
			norms := make([]float32, n)
			for j := range freqs {
				switch r.IntN(10) {
				case 0:
					freqs[j] = edgeTF[r.IntN(len(edgeTF))]
				default:
					freqs[j] = 1 + uint32(r.IntN(1+r.IntN(3000)))
				}
				switch r.IntN(10) {
				case 0:
					norms[j] = edgeNorm[r.IntN(len(edgeNorm))]
				default:
					norms[j] = 0.3 + 3*r.Float32()
				}
			}
			if trial < 4 { // a frequency >= 2^31 only in the odd trials
				for j := range freqs {
					freqs[j] &= 1<<31 - 1
				}
			}
			p := params[trial%len(params)]
			got := make([]float32, n)
			Terms(got, freqs, norms, p[0], p[1], p[2])
			alias := append([]float32(nil), norms...)
			Terms(alias, freqs, alias, p[0], p[1], p[2])
			for j := range got {
				want := float32(p[2] * Term(p[0], p[1], freqs[j], norms[j]))
				if math.Float32bits(got[j]) != math.Float32bits(want) || math.Float32bits(alias[j]) != math.Float32bits(want) {
					t.Fatalf("n=%d trial %d j=%d tf=%d norm=%v: got %v (%#x), aliased %#x, want %v (%#x)",
						n, trial, j, freqs[j], norms[j], got[j], math.Float32bits(got[j]), math.Float32bits(alias[j]), want, math.Float32bits(want))
				}
			}
		}
	}
}

// TestTermsAVX2Stops checks that termsAVX2 covers the full groups and stops
// at the first group holding a frequency >= 2^31.
func TestTermsAVX2Stops(t *testing.T) {
	if !haveTermsSIMD {
		t.Skip("no AVX2")
	}
	freqs := make([]uint32, 37)
	norms := make([]float32, 37)
	dst := make([]float32, 37)
	for j := range freqs {
		freqs[j], norms[j] = uint32(j+1), 1
	}
	if got := termsAVX2(&dst[0], &freqs[0], &norms[0], 37, 1, 2, 1); got != 32 {
		t.Fatalf("37 values: wrote %d, want 32", got)
	}
	freqs[19] = 1 << 31
	if got := termsAVX2(&dst[0], &freqs[0], &norms[0], 37, 1, 2, 1); got != 16 {
		t.Fatalf("tf >= 2^31 at 19: wrote %d, want 16", got)
	}
}

// BenchmarkTerms times a block of 128 values through Terms and through the
// scalar twin.
func BenchmarkTerms(b *testing.B) {
	freqs := make([]uint32, 128)
	norms := make([]float32, 128)
	dst := make([]float32, 128)
	for j := range freqs {
		freqs[j], norms[j] = uint32(1+j%7), 0.5+float32(j%13)/8
	}
	b.Run("Terms", func(b *testing.B) {
		for range b.N {
			Terms(dst, freqs, norms, 1.5, 1.9, 1)
		}
	})
	b.Run("scalar", func(b *testing.B) {
		for range b.N {
			termsScalar(dst, freqs, norms, 1.5, 1.9, 1)
		}
	})
}
