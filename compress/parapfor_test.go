package compress_test

import (
	"encoding/hex"
	"errors"
	"math/rand"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func ppfCodec(tb testing.TB) compress.Codec {
	tb.Helper()
	c, err := compress.ByID(compress.IDParaPFor)
	if err != nil {
		tb.Fatal(err)
	}
	if c.Name() != "parapfor" || c.Kind() != compress.General {
		tb.Fatalf("parapfor registered as %q kind %d", c.Name(), c.Kind())
	}
	if _, ok := c.(compress.RandomAccess); !ok {
		tb.Fatal("parapfor does not implement RandomAccess")
	}
	return c
}

func TestParaPForRoundTrip(t *testing.T) {
	c := ppfCodec(t)
	codectest.RoundTrip(t, c)
	codectest.Truncations(t, c)
	codectest.NoAllocs(t, c)
}

func FuzzParaPForDecode(f *testing.F) {
	codectest.FuzzDecode(f, ppfCodec(f))
}

// ppfSkewed returns n values of which about one in `every` is large (up to
// `big` bits, sometimes 2^32-1) and the rest small (up to `small` bits).
func ppfSkewed(rng *rand.Rand, n, every, small, big int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		if rng.Intn(every) == 0 {
			out[i] = uint32(rng.Int63n(1 << big))
			if rng.Intn(20) == 0 {
				out[i] = 1<<32 - 1 - uint32(rng.Intn(3))
			}
		} else {
			out[i] = uint32(rng.Intn(1 << small))
		}
	}
	return out
}

// TestParaPForExceptions covers exception-heavy segments, exceptions at the
// first and last index of segments (index width 0 and 7), and overflows up
// to 2^32-1 >> b.
func TestParaPForExceptions(t *testing.T) {
	c := ppfCodec(t)
	rng := rand.New(rand.NewSource(11))
	for _, n := range []int{1, 2, 127, 128, 129, 255, 256, 1000} {
		for _, every := range []int{2, 3, 5, 9, 40} {
			codectest.Check(t, c, ppfSkewed(rng, n, every, 3, 28))
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
	c := ppfCodec(t)
	out := make([]uint32, 1024)
	for _, tc := range []struct{ name, hex string }{
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
	} {
		src, err := hex.DecodeString(tc.hex)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Decode(out, src); !errors.Is(err, compress.ErrCorrupt) {
			t.Errorf("%s (%s): Decode err = %v, want ErrCorrupt", tc.name, tc.hex, err)
		}
	}
}

// TestParaPForGolden pins the persisted format.
func TestParaPForGolden(t *testing.T) {
	c := ppfCodec(t)
	// ~600 d-gap-like values: small gaps with occasional jumps, five
	// segments, crossing 512.
	in600 := make([]uint32, 600)
	x := uint32(2463534242)
	for i := range in600 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		in600[i] = x % 13
		if x%17 == 0 {
			in600[i] = x >> 14
		}
	}
	for _, tc := range []struct {
		in   []uint32
		want string
	}{
		{nil, "00"},
		{[]uint32{0, 0, 0}, "0300000000"},
		{[]uint32{3, 1, 4, 1, 5, 9, 2, 6}, "080400000013149562"},
		{[]uint32{1, 2, 1, 1000, 3, 0, 1, 1 << 31}, "0803031d025130047b1f000000000080"},
		{in600, "d80404070e0704070e0704070e0704070e0704070c038503920047631c488612" +
			"71c5bc50a912351b6213a973b0b23802119240b31b1214ac24166468c2a05b95" +
			"455444a4710b2654954a8094c368a671011c76ccac600e58d2aa45cb67baf484" +
			"6ba9fbc1c8ca41e605031c6bb126b1573211b3742486bb46764a2b59845b855c" +
			"656c419a80a61998751c2b1412173a1c923a0c00026c379b59b498149a31cb3a" +
			"aa10a559285139105009cb856605d35fd6d658c451b275a29700dc05b9ec70c2" +
			"899cb7a79319c69669a08c7632060221b45629214ca6a0893651653762b935a2" +
			"56b546ad2255a21436b7507c3198361c93a010b91c9b0048a415c55983cc4b36" +
			"73ae4bfaf4debe688157c41e6c860114b48b8470cb29410707b72a08a981ba84" +
			"7565019116ca5b9c9400b2314208a028c3ba0bb67cbb6836427532a37307cc4c" +
			"7700c7b7302a6230a3b6741c311b4499d24f982cf71d9b8bbba2b5aff6f74dde" +
			"ef02a7ac132257612516a280b970cb44ca09198256c0bbcb1bb21a40a92a5cb7" +
			"5c74770a96a1730202b63a507a4a3a23f30b94747000"},
	} {
		enc := c.AppendEncode(nil, tc.in)
		if got := hex.EncodeToString(enc); got != tc.want {
			t.Errorf("encode %d values:\n got %s\nwant %s", len(tc.in), got, tc.want)
		}
		codectest.Check(t, c, tc.in)
	}
}

func TestParaPForMutations(t *testing.T) {
	c := ppfCodec(t)
	rng := rand.New(rand.NewSource(5))
	mutCheckCodec(t, c, [][]uint32{
		ppfSkewed(rng, 7, 3, 3, 20),
		ppfSkewed(rng, 130, 5, 4, 28),
		ppfSkewed(rng, 600, 2, 3, 28),
	}, 1500)
}
