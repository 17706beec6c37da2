package compress_test

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func riceCodec(tb testing.TB) compress.RandomAccess {
	tb.Helper()
	return codectest.As[compress.RandomAccess](tb, codectest.Lookup(tb, compress.IDRice, "rice", compress.General))
}

func TestRiceRoundTrip(t *testing.T) { codectest.Suite(t, riceCodec(t)) }

func FuzzRiceDecode(f *testing.F) { codectest.FuzzDecode(f, riceCodec(f)) }

// TestRiceGolden pins the persisted format.
func TestRiceGolden(t *testing.T) {
	c := riceCodec(t)
	codectest.Golden(t, c, nil, "00")
	// b = 0: all-unary.
	codectest.Golden(t, c, []uint32{0, 0, 2}, "030005"+"13")
	// n=7, b=12, U=24: 11 binary bytes, then 3f 00 80: six
	// one-bit codes, then 17 zeros and a one for 70000>>12.
	codectest.Golden(t, c, []uint32{0, 1, 2, 3, 1000, 7, 70000}, "070c18"+"0010000230"+"00e8730070"+"01"+"3f0080")
	// U=386, block 1 at unary bit 384.
	codectest.Golden(t, c, codectest.Golden130(), "82010c82038003004001366006a4000f4a211b28c22a3ee33da730162d523006a00ffcc130451017abe20064812c55501d63a311c472095dc2042e920337e20578b20bf10215a2d321a62032c7a10720f31eccc03995c219b1903bea922276110d3a60391be32a00e01fbb61185f61143be1134fe1169b611d1f6227dbe234cf930716111c7a12343140110542302c701470723a07a125bb5314c2820601823a78b1332761300e91302d413484713b13d207da0216d9b3272be13c9a42175c70333bd2146d0038bc6220ffffffffffffffff0000000000000000000000000000000000000000000000000000000000000000ffffffffffffffff03")
}

// TestRiceParam checks b = max(0, floor(log2(0.69·mean))) at its edges.
func TestRiceParam(t *testing.T) {
	c := riceCodec(t)
	check := func(in []uint32, b byte) {
		t.Helper()
		enc := c.AppendEncode(nil, in)
		if got := enc[1]; got != b {
			t.Errorf("b(%v) = %d, want %d", in, got, b)
		}
		codectest.Check(t, c, in)
	}
	check([]uint32{1}, 0)                // 0.69
	check([]uint32{2}, 0)                // 1.38
	check([]uint32{3}, 1)                // 2.07
	check([]uint32{100, 100}, 6)         // 69
	check([]uint32{1<<32 - 1}, 31)       // 0.69·(2^32-1)
	check([]uint32{0, 0, 0, 0, 0, 6}, 0) // 0.69
	check([]uint32{2968, 0, 0, 0, 0}, 8) // 409.6
	check([]uint32{1484, 0, 0, 0, 0}, 7) // 204.8
	check([]uint32{1483, 0, 0, 0, 0}, 7) // 204.65
	check([]uint32{1856, 0, 0, 0, 0}, 8) // 256.13
	check([]uint32{1855, 0, 0, 0, 0}, 7) // 255.99
	// 0.69·mean is exactly 4 for 69 values summing to 400; floating point
	// computes 0.69·(400/69) as 3.9999999999999996: b is computed in
	// integers, so it is 2.
	at4 := make([]uint32, 69)
	at4[0] = 400
	check(at4, 2)
	at4[0]--
	check(at4, 1)
}

// TestRiceCorrupt checks that malformed encodings are rejected.
func TestRiceCorrupt(t *testing.T) {
	c := riceCodec(t)
	codectest.Corrupt(t, c, []codectest.Bad{
		{"empty", ""},
		{"trailing after zero", "0000"},
		{"no b", "01"},
		{"b > 32", "012101" + "01"},
		{"no unary length", "0100"},
		{"U < n", "020001" + "01"},
		{"U too long", "0100ff01" + "01"},
		{"missing unary", "010001"},
		{"trailing", "010001" + "0100"},
		{"unary padding", "010001" + "03"},
		{"too few codes", "020002" + "02"},
		{"too many codes", "010002" + "03"},
		{"binary padding", "010101" + "fe" + "01"},
		// b = 0, a 33-bit quotient can not be: the value 2^32 needs 2^32
		// zeros; b = 31, quotient 2 overflows.
		{"quotient overflow", "011f03" + "00000000" + "04"},
		{"b=32 quotient", "012002" + "00000000" + "02"},
		// 129 values, offset of block 1 below 128, or disagreeing.
		{"offset < 128", "810100810105" + "ffffffffffffffffffffffffffffffff" + "01"},
		{"offset wrong", "810100820180" + "01" + "feffffffffffffffffffffffffffffff" + "03"},
	})
	src, _ := hex.DecodeString("011f03" + "00000000" + "04")
	if _, err := c.Get(src, 0); !errors.Is(err, compress.ErrCorrupt) {
		t.Errorf("Get with a quotient overflow: err = %v, want ErrCorrupt", err)
	}
}
