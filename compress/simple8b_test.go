package compress_test

import (
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func simple8bCodec(tb testing.TB) compress.Codec {
	tb.Helper()
	return codectest.Lookup(tb, compress.IDSimple8b, "simple8b", compress.General)
}

func TestSimple8bRoundTrip(t *testing.T) { codectest.Suite(t, simple8bCodec(t)) }

func FuzzSimple8bDecode(f *testing.F) { codectest.FuzzDecode(f, simple8bCodec(f)) }

// TestSimple8bGolden pins the persisted format.
func TestSimple8bGolden(t *testing.T) {
	c := simple8bCodec(t)
	zeros := make([]uint32, 240+120+60+1)
	codectest.Golden(t, c, nil, "00")
	// Selector 10 (6 values of 10 bits), then selector 15.
	codectest.Golden(t, c, []uint32{0, 1, 2, 3, 1000, 7, 70000}, "0700042"+"0c000e81fa070110100000000f0")
	// Selectors 0, 1, 2 (60 one-bit zeros) and 15.
	codectest.Golden(t, c, zeros, "a503"+"0000000000000000"+"0000000000000010"+"0000000000000020"+"00000000000000f0")
	codectest.Golden(t, c, codectest.Golden130(), "82010050608319a4c0a34ac98622ab3e7bafa78cd562c106e8a3fc315c445cab3aa064215b4575636ba4c45ed225132ee6a0377a81e72ef142a5a277688ac8c7e9a120bfc70ce79572a6b1e4ae6e8a7645a33a00cbc1c6c055c0000010807f0000e0bb19f695513bf9a44fb9b599751fdaa9db3afd7c1e1605a77a061d03450512ac2c1c05e7e90769a9bb17252c1a01a2ae78ed7c92c10e25ac2d114dd8ed13f6a1da8295fd9e2b39af9ad2c5c5cd3b36a56d00c001afc040c0")
}

// TestSimple8bCorrupt checks that malformed encodings are rejected.
func TestSimple8bCorrupt(t *testing.T) {
	// word is the hex of a count n and one word w.
	word := func(n int, w uint64) string {
		return hex.EncodeToString(binary.LittleEndian.AppendUint64(binary.AppendUvarint(nil, uint64(n)), w))
	}
	codectest.Corrupt(t, simple8bCodec(t), []codectest.Bad{
		{"empty", ""},
		{"partial word", "01" + "000000000000f0"},
		{"count too large", word(241, 0)},
		{"word overflows", word(100, 0)},        // 240 zeros for a count of 100
		{"too few values", word(2, 15<<60|7)},   // one value, count 2
		{"60-bit value", word(1, 15<<60|1<<40)}, // above 32 bits
		{"unused bits", word(7, 9<<60|1<<57)},   // 7×8 bits, bit 57 set
		{"zero-run payload", word(240, 1)},
		{"trailing word", word(1, 15<<60|7) + "00000000000000f0"},
	})
}
