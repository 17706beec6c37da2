package compress_test

import (
	"math/rand"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func ppfCodec(tb testing.TB) compress.RandomAccess {
	tb.Helper()
	return codectest.As[compress.RandomAccess](tb, codectest.Lookup(tb, compress.IDParaPFor, "parapfor", compress.General))
}

func TestParaPForRoundTrip(t *testing.T) { codectest.Suite(t, ppfCodec(t)) }

func FuzzParaPForDecode(f *testing.F) { codectest.FuzzDecode(f, ppfCodec(f)) }

// TestParaPForExceptions covers exception-heavy segments, exceptions at the
// first and last index of segments (index width 0 and 7), and overflows up
// to 2^32-1 >> b.
func TestParaPForExceptions(t *testing.T) {
	c := ppfCodec(t)
	rng := rand.New(rand.NewSource(11))
	for _, n := range []int{1, 2, 127, 128, 129, 255, 256, 1000} {
		for _, every := range []int{2, 3, 5, 9, 40} {
			codectest.Check(t, c, codectest.Skewed(rng, n, every, 3, 28))
		}
	}
	vals := make([]uint32, 300)
	for _, i := range []int{0, 127, 128, 255, 256, 299} {
		vals[i] = 1<<32 - 1
	}
	codectest.Check(t, c, vals)
	codectest.Check(t, c, []uint32{1 << 31, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
}

// TestParaPForCorrupt checks hand-made invalid encodings.
func TestParaPForCorrupt(t *testing.T) {
	codectest.Corrupt(t, ppfCodec(t), []codectest.Bad{
		{"empty", ""},
		{"non-minimal count", "8000"},
		{"missing header", "01"},
		{"short header", "01000000"},
		{"width 33", "0121000000"},
		{"index width 8", "0101080000"},
		{"exceptions > values", "0100000102"},
		{"widths without exceptions", "0100010000"},
		{"zero overflow width", "0100000001"},
		{"overflow past 32 bits", "0120000101"},
		{"truncated body", "0108000000"},
		{"trailing byte", "01080000000500"},
		{"nonzero padding", "010100000003"},
		{"index past segment", "010001010103"},
		{"zero overflow", "010001010100"},
		{"indices not increasing", "02000101020f"},
		{"count zero with data", "0000"},
	})
}

// TestParaPForGolden pins the persisted format.
func TestParaPForGolden(t *testing.T) {
	c := ppfCodec(t)
	codectest.Golden(t, c, nil, "00")
	codectest.Golden(t, c, []uint32{0, 0, 0}, "0300000000")
	codectest.Golden(t, c, []uint32{3, 1, 4, 1, 5, 9, 2, 6}, "080400000013149562")
	codectest.Golden(t, c, []uint32{1, 2, 1, 1000, 3, 0, 1, 1 << 31}, "0803031d025130047b1f000000000080")
	// ~600 d-gap-like values: small gaps with occasional jumps, five
	// segments, crossing 512.
	codectest.Golden(t, c, codectest.GoldenGaps600(), "d80404070e0704070e0704070e0704070e0704070c038503920047631c488612"+
		"71c5bc50a912351b6213a973b0b23802119240b31b1214ac24166468c2a05b95"+
		"455444a4710b2654954a8094c368a671011c76ccac600e58d2aa45cb67baf484"+
		"6ba9fbc1c8ca41e605031c6bb126b1573211b3742486bb46764a2b59845b855c"+
		"656c419a80a61998751c2b1412173a1c923a0c00026c379b59b498149a31cb3a"+
		"aa10a559285139105009cb856605d35fd6d658c451b275a29700dc05b9ec70c2"+
		"899cb7a79319c69669a08c7632060221b45629214ca6a0893651653762b935a2"+
		"56b546ad2255a21436b7507c3198361c93a010b91c9b0048a415c55983cc4b36"+
		"73ae4bfaf4debe688157c41e6c860114b48b8470cb29410707b72a08a981ba84"+
		"7565019116ca5b9c9400b2314208a028c3ba0bb67cbb6836427532a37307cc4c"+
		"7700c7b7302a6230a3b6741c311b4499d24f982cf71d9b8bbba2b5aff6f74dde"+
		"ef02a7ac132257612516a280b970cb44ca09198256c0bbcb1bb21a40a92a5cb7"+
		"5c74770a96a1730202b63a507a4a3a23f30b94747000")
}

func TestParaPForMutations(t *testing.T) {
	c := ppfCodec(t)
	rng := rand.New(rand.NewSource(5))
	codectest.Mutations(t, c, [][]uint32{
		codectest.Skewed(rng, 7, 3, 3, 20),
		codectest.Skewed(rng, 130, 5, 4, 28),
		codectest.Skewed(rng, 600, 2, 3, 28),
	}, 1500)
}
