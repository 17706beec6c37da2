package compress_test

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func pfdCodec(tb testing.TB) compress.RandomAccess {
	tb.Helper()
	return codectest.As[compress.RandomAccess](tb, codectest.Lookup(tb, compress.IDPForDelta, "pfordelta", compress.General))
}

func TestPForDeltaRoundTrip(t *testing.T) { codectest.Suite(t, pfdCodec(t)) }

// pfdHeavy is exception-heavy input (a third to a half of the values
// large, boundary lengths of the index block and the sub-block) whose
// unbounded encodings (compress.PForDeltaUnbounded) have more exceptions
// than PForDelta's encoder leaves: those qp wrote before the bound.
func pfdHeavy() [][]uint32 {
	rng := rand.New(rand.NewSource(17))
	var out [][]uint32
	for _, n := range []int{1, 2, 3, 127, 128, 129, 511, 512, 513} {
		for _, every := range []int{2, 3} {
			out = append(out, codectest.Skewed(rng, n, every, 3, 28))
		}
	}
	return out
}

// TestPForDeltaUnbounded checks the decoders on encodings with more
// exceptions than the encoder's bound (compress.PForDeltaUnbounded), which
// they must accept: round trips, Get, and Decode and Get without
// allocating. (The suite's inputs, about one large value in ten, encode the
// same either way.)
func TestPForDeltaUnbounded(t *testing.T) {
	c, u := pfdCodec(t), compress.PForDeltaUnbounded{}
	heavy, differ := pfdHeavy(), 0
	for _, vals := range heavy {
		codectest.Check(t, u, vals)
		if !bytes.Equal(u.AppendEncode(nil, vals), c.AppendEncode(nil, vals)) {
			differ++
		}
	}
	if differ < 8 {
		t.Fatalf("only %d of %d inputs encode differently without the bound: the test checks little", differ, len(heavy))
	}
	// An index block of 128 values, half of them large.
	vals := codectest.Skewed(rand.New(rand.NewSource(3)), 128, 2, 3, 28)
	enc := u.AppendEncode(nil, vals)
	if bytes.Equal(enc, c.AppendEncode(nil, vals)) {
		t.Fatal("the 128-value block encodes the same without the bound")
	}
	out := make([]uint32, len(vals))
	if a := testing.AllocsPerRun(100, func() { _, _ = c.Decode(out, enc) }); a != 0 {
		t.Fatalf("Decode allocates %.1f times per run", a)
	}
	codectest.AccessNoAllocs(t, c, enc, 77, 10, vals[64])
}

// FuzzPForDeltaDecode is seeded with the codec's encodings and with
// exception-heavy unbounded ones.
func FuzzPForDeltaDecode(f *testing.F) {
	for _, vals := range pfdHeavy() {
		f.Add(compress.PForDeltaUnbounded{}.AppendEncode(nil, vals))
	}
	codectest.FuzzDecode(f, pfdCodec(f))
}

// TestPForDeltaExceptions covers exception-heavy arrays: more than 512
// exceptions (level-1 arrays with sub-blocks and offsets), level-1 arrays
// with exceptions of their own, exceptions at sub-block edges, runs of
// adjacent exceptions, and high parts up to 2^32-1 >> b.
// Both encoders: the bounded one (AppendEncode) keeps at most a quarter of
// the values as exceptions, the unbounded one writes as many as the
// smallest encoding has (up to half of them here).
func TestPForDeltaExceptions(t *testing.T) {
	for _, c := range []compress.Codec{pfdCodec(t), compress.PForDeltaUnbounded{}} {
		rng := rand.New(rand.NewSource(11))
		for _, n := range []int{511, 512, 513, 1024, 1025, 3000, 9000} {
			for _, every := range []int{2, 3, 5, 9, 40} {
				codectest.Check(t, c, codectest.Skewed(rng, n, every, 3, 28))
			}
		}
		// Exceptions exactly at sub-block edges, and a long run of them.
		vals := make([]uint32, 2000)
		for _, i := range []int{0, 511, 512, 1023, 1024, 1535, 1536, 1999} {
			vals[i] = 1 << 31
		}
		for i := 600; i < 700; i++ {
			vals[i] = uint32(i) << 12
		}
		codectest.Check(t, c, vals)
	}
}

// TestPForDeltaCorrupt checks hand-made invalid encodings.
func TestPForDeltaCorrupt(t *testing.T) {
	codectest.Corrupt(t, pfdCodec(t), []codectest.Bad{
		{"empty", ""},
		{"non-minimal count", "8000"},
		{"missing width", "01"},
		{"width 33", "0121"},
		{"missing exception count", "0101"},
		{"exceptions > n", "01010200"},
		{"exceptions at width 32", "0120010000000000"},
		{"trailing byte", "0100000000"},
		{"nonzero padding", "0101000300"},
		{"missing exception arrays", "01010101"},
		{"zero high part", "0200010100000000"},
		{"position past end", "020001010001020002"},
		{"count zero with data", "0000"},
	})
}

// TestPForDeltaGolden pins the persisted format.
func TestPForDeltaGolden(t *testing.T) {
	c := pfdCodec(t)
	codectest.Golden(t, c, nil, "00")
	codectest.Golden(t, c, []uint32{0, 0, 0}, "030000")
	codectest.Golden(t, c, []uint32{3, 1, 4, 1, 5, 9, 2, 6}, "08040013149562")
	codectest.Golden(t, c, []uint32{1, 2, 1, 1000, 3, 0, 1, 1 << 31}, "08020219131e00fa0000000000000802000f")
	// ~600 d-gap-like values: small gaps with occasional jumps, crossing the
	// 512-value sub-block boundary.
	codectest.Golden(t, c, codectest.GoldenGaps600(), "d804041f1c0000008503920047631c48861271c5bc50a912351b6213a973b0b2"+
		"3802119240b31b1214ac24166468c2a05b95455444a4710b2654954a8094c368"+
		"a671011c76ccac60031c6bb126b1573211b3742486bb46764a2b59845b855c65"+
		"6c419a80a61998751c2b1412173a1c923a0c00026c379b59b498149a31cb3aaa"+
		"10a5592851391050b9ec70c2899cb7a79319c69669a08c7632060221b4562921"+
		"4ca6a0893651653762b935a256b546ad2255a21436b7507c3198361c93a010b9"+
		"1c9b0048a415c55914b48b8470cb29410707b72a08a981ba847565019116ca5b"+
		"9c9400b2314208a028c3ba0bb67cbb6836427532a37307cc4c7700c7b7302a62"+
		"30a3b6741c311b44a7ac132257612516a280b970cb44ca09198256c0bbcb1bb2"+
		"1a40a92a5cb75c74770a96a1730202b63a507a4a0e00335d7ac2b5d4fd6064e5"+
		"20f3beacadb188a364eb442f01b85bd2a7f7f6450bbc22f660338c63737157b4"+
		"f6d5febec9fb5d5f809232380006004e88314393580cc085c9e4549500685cbb"+
		"6482b15dfa5200")
}

func TestPForDeltaMutations(t *testing.T) {
	c := pfdCodec(t)
	rng := rand.New(rand.NewSource(5))
	arrays := [][]uint32{
		codectest.Skewed(rng, 7, 3, 3, 20),
		codectest.Skewed(rng, 130, 5, 4, 28),
		codectest.Skewed(rng, 1100, 2, 3, 28),
		codectest.Skewed(rng, 3000, 40, 3, 28),
	}
	codectest.Mutations(t, c, arrays, 1500)
	codectest.Mutations(t, compress.PForDeltaUnbounded{}, arrays, 1500)
}
