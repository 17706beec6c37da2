package eval

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// checkScore fails t when AppendScore and strconv differ on s.
func checkScore(t *testing.T, s float64) bool {
	t.Helper()
	var a, b [32]byte
	got := AppendScore(a[:0], s)
	want := strconv.AppendFloat(b[:0], s, 'g', 6, 64)
	if string(got) != string(want) {
		t.Errorf("AppendScore(%v) = %q, strconv gives %q", s, got, want)
		return false
	}
	return true
}

// TestAppendScore: AppendScore writes strconv's bytes (FormatScore) on
// every float32 of the binades where BM25 scores fall and where its fast
// path changes scale, on random float32 and float64 values of every
// magnitude, on ties, and on the values beside the fast path's bounds.
func TestAppendScore(t *testing.T) {
	for _, s := range []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1e-4, 1e-5, 9.999999747e-05, 0.0009765625,
		0.0029296875, 1234565, 999999.5, 999999.4375, 99999.95, 100000, 1e6, 1e7, 19.7514, math.Inf(1), math.Inf(-1),
		math.NaN(), math.MaxFloat32, math.SmallestNonzeroFloat32, math.MaxFloat64, 1.0 / 3} {
		checkScore(t, s)
		checkScore(t, float64(float32(s)))
		checkScore(t, float64(math.Nextafter32(float32(s), 0)))
		checkScore(t, float64(math.Nextafter32(float32(s), math.MaxFloat32)))
	}
	// Every float32 of some binades: [1, 2) and [16, 32) (typical BM25
	// scores), [0.0625, 0.125) (below 0.1: a scale change inside), and
	// the binade holding 1e-4 (the fast path's lower bound). Short mode:
	// every 17th.
	step := uint32(1)
	if testing.Short() {
		step = 17
	}
	for _, lo := range []float32{1, 16, 0.0625, 6.103515625e-05} {
		bits := math.Float32bits(lo)
		for i := uint32(0); i < 1<<23; i += step {
			if !checkScore(t, float64(math.Float32frombits(bits+i))) {
				return
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		f := math.Float32frombits(rng.Uint32())
		if !checkScore(t, float64(f)) || !checkScore(t, math.Float64frombits(rng.Uint64())) {
			return
		}
	}
}

// TestAppendScoreExhaustive (QP_SCORE_EXHAUSTIVE=1; a few minutes): every
// positive float32 of the fast path's range [1e-4, 999999.5).
func TestAppendScoreExhaustive(t *testing.T) {
	if os.Getenv("QP_SCORE_EXHAUSTIVE") == "" {
		t.Skip("QP_SCORE_EXHAUSTIVE not set")
	}
	lo, hi := math.Float32bits(math.Nextafter32(1e-4, 0)), math.Float32bits(1e6)
	for b := lo; b <= hi; b++ {
		if !checkScore(t, float64(math.Float32frombits(b))) {
			return
		}
	}
}

func BenchmarkAppendScore(b *testing.B) {
	scores := make([]float64, 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range scores {
		scores[i] = float64(float32(30 * rng.Float64()))
	}
	buf := make([]byte, 0, 32)
	b.Run("AppendScore", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			buf = AppendScore(buf[:0], scores[i&1023])
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			buf = strconv.AppendFloat(buf[:0], scores[i&1023], 'g', 6, 64)
		}
	})
}
