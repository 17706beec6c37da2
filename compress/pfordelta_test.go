package compress_test

import (
	"encoding/hex"
	"errors"
	"math/rand"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func pfdCodec(tb testing.TB) compress.Codec {
	tb.Helper()
	c, err := compress.ByID(compress.IDPForDelta)
	if err != nil {
		tb.Fatal(err)
	}
	if c.Name() != "pfordelta" || c.Kind() != compress.General {
		tb.Fatalf("pfordelta registered as %q kind %d", c.Name(), c.Kind())
	}
	if _, ok := c.(compress.RandomAccess); !ok {
		tb.Fatal("pfordelta does not implement RandomAccess")
	}
	return c
}

func TestPForDeltaRoundTrip(t *testing.T) {
	c := pfdCodec(t)
	codectest.RoundTrip(t, c)
	codectest.Truncations(t, c)
	codectest.NoAllocs(t, c)
}

func FuzzPForDeltaDecode(f *testing.F) {
	codectest.FuzzDecode(f, pfdCodec(f))
}

// pfdSkewed returns n values of which about one in `every` is large (up to
// `big` bits) and the rest small (up to `small` bits): many exceptions,
// several sub-blocks, and exception arrays long enough to have sub-blocks
// and exceptions of their own.
func pfdSkewed(rng *rand.Rand, n, every, small, big int) []uint32 {
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

// TestPForDeltaExceptions covers exception-heavy arrays: more than 512
// exceptions (level-1 arrays with sub-blocks and offsets), level-1 arrays
// with exceptions of their own, exceptions at sub-block edges, runs of
// adjacent exceptions, and high parts up to 2^32-1 >> b.
func TestPForDeltaExceptions(t *testing.T) {
	c := pfdCodec(t)
	rng := rand.New(rand.NewSource(11))
	for _, n := range []int{511, 512, 513, 1024, 1025, 3000, 9000} {
		for _, every := range []int{2, 3, 5, 9, 40} {
			codectest.Check(t, c, pfdSkewed(rng, n, every, 3, 28))
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

// TestPForDeltaCorrupt checks hand-made invalid encodings.
func TestPForDeltaCorrupt(t *testing.T) {
	c := pfdCodec(t)
	out := make([]uint32, 1024)
	for _, tc := range []struct{ name, hex string }{
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

// TestPForDeltaGolden pins the persisted format.
func TestPForDeltaGolden(t *testing.T) {
	c := pfdCodec(t)
	// ~600 d-gap-like values: small gaps with occasional jumps, crossing the
	// 512-value sub-block boundary.
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
		{[]uint32{0, 0, 0}, "030000"},
		{[]uint32{3, 1, 4, 1, 5, 9, 2, 6}, "08040013149562"},
		{[]uint32{1, 2, 1, 1000, 3, 0, 1, 1 << 31}, "08020219131e00fa0000000000000802000f"},
		{in600, "d804041f1c0000008503920047631c48861271c5bc50a912351b6213a973b0b2" +
			"3802119240b31b1214ac24166468c2a05b95455444a4710b2654954a8094c368" +
			"a671011c76ccac60031c6bb126b1573211b3742486bb46764a2b59845b855c65" +
			"6c419a80a61998751c2b1412173a1c923a0c00026c379b59b498149a31cb3aaa" +
			"10a5592851391050b9ec70c2899cb7a79319c69669a08c7632060221b4562921" +
			"4ca6a0893651653762b935a256b546ad2255a21436b7507c3198361c93a010b9" +
			"1c9b0048a415c55914b48b8470cb29410707b72a08a981ba847565019116ca5b" +
			"9c9400b2314208a028c3ba0bb67cbb6836427532a37307cc4c7700c7b7302a62" +
			"30a3b6741c311b44a7ac132257612516a280b970cb44ca09198256c0bbcb1bb2" +
			"1a40a92a5cb75c74770a96a1730202b63a507a4a0e00335d7ac2b5d4fd6064e5" +
			"20f3beacadb188a364eb442f01b85bd2a7f7f6450bbc22f660338c63737157b4" +
			"f6d5febec9fb5d5f809232380006004e88314393580cc085c9e4549500685cbb" +
			"6482b15dfa5200"},
	} {
		enc := c.AppendEncode(nil, tc.in)
		if got := hex.EncodeToString(enc); got != tc.want {
			t.Errorf("encode %d values:\n got %s\nwant %s", len(tc.in), got, tc.want)
		}
		codectest.Check(t, c, tc.in)
	}
}

func TestPForDeltaMutations(t *testing.T) {
	c := pfdCodec(t)
	rng := rand.New(rand.NewSource(5))
	mutCheckCodec(t, c, [][]uint32{
		pfdSkewed(rng, 7, 3, 3, 20),
		pfdSkewed(rng, 130, 5, 4, 28),
		pfdSkewed(rng, 1100, 2, 3, 28),
		pfdSkewed(rng, 3000, 40, 3, 28),
	}, 1500)
}

// mutCheckCodec checks random mutations (bit flips, byte overwrites,
// truncations, extensions) of the encodings of each array: Decode, Count,
// Get and Search never panic and return ErrCorrupt-wrapped errors, and
// whenever Decode accepts a mutation, Get and Search agree with its output.
func mutCheckCodec(t *testing.T, c compress.Codec, arrays [][]uint32, rounds int) {
	t.Helper()
	rng := rand.New(rand.NewSource(99))
	out := make([]uint32, 1<<16)
	ra, _ := c.(compress.RandomAccess)
	se, _ := c.(compress.Searcher)
	okErr := func(err error) bool {
		return err == nil || errors.Is(err, compress.ErrCorrupt) || errors.Is(err, compress.ErrShortBuffer)
	}
	for _, vals := range arrays {
		enc := c.AppendEncode(nil, vals)
		for r := 0; r < rounds; r++ {
			m := append([]byte(nil), enc...)
			switch k := rng.Intn(len(m)); rng.Intn(5) {
			case 0, 1:
				m[k] ^= 1 << rng.Intn(8)
			case 2:
				m[k] = byte(rng.Intn(256))
				m[rng.Intn(len(m))] = byte(rng.Intn(256))
			case 3:
				m = m[:k]
			case 4:
				m = append(m[:k], append([]byte{byte(rng.Intn(256))}, m[k:]...)...)
			}
			n, err := c.Decode(out, m)
			if !okErr(err) {
				t.Fatalf("Decode: error does not wrap ErrCorrupt: %v", err)
			}
			if _, cerr := c.Count(m); !okErr(cerr) {
				t.Fatalf("Count: error does not wrap ErrCorrupt: %v", cerr)
			}
			valid := err == nil
			for k := 0; k < 16; k++ {
				i := rng.Intn(len(vals) + 2)
				if ra != nil {
					v, gerr := ra.Get(m, i)
					if !okErr(gerr) {
						t.Fatalf("Get: error does not wrap ErrCorrupt: %v", gerr)
					}
					if valid && i < n && (gerr != nil || v != out[i]) {
						t.Fatalf("mutation accepted by Decode: Get(%d) = %d, %v; Decode says %d", i, v, gerr, out[i])
					}
				}
				if se != nil {
					x := uint32(rng.Int63n(int64(vals[len(vals)-1]) + 2))
					si, sv, serr := se.Search(m, i, x)
					if !okErr(serr) {
						t.Fatalf("Search: error does not wrap ErrCorrupt: %v", serr)
					}
					if valid {
						wi, wv := efLinear(out[:n], i, x)
						if serr != nil || si != wi || sv != wv {
							t.Fatalf("mutation accepted by Decode: Search(%d, %d) = %d, %d, %v; want %d, %d", i, x, si, sv, serr, wi, wv)
						}
					}
				}
			}
		}
	}
}
