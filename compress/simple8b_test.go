package compress_test

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func TestSimple8bRoundTrip(t *testing.T) {
	c, err := compress.ByID(compress.IDSimple8b)
	if err != nil {
		t.Fatal(err)
	}
	codectest.RoundTrip(t, c)
	codectest.Truncations(t, c)
	codectest.NoAllocs(t, c)
}

func FuzzSimple8bDecode(f *testing.F) {
	c, err := compress.ByID(compress.IDSimple8b)
	if err != nil {
		f.Fatal(err)
	}
	codectest.FuzzDecode(f, c)
}

// TestSimple8bGolden pins the persisted format.
func TestSimple8bGolden(t *testing.T) {
	c, err := compress.ByName("simple8b")
	if err != nil {
		t.Fatal(err)
	}
	in130 := make([]uint32, 130)
	for i := range in130 {
		in130[i] = uint32((i*i*7 + i*13) % 997)
	}
	in130[64] = 1 << 20
	zeros := make([]uint32, 240+120+60+1)
	for _, tc := range []struct {
		in   []uint32
		want string
	}{
		{nil, "00"},
		// Selector 10 (6 values of 10 bits), then selector 15.
		{[]uint32{0, 1, 2, 3, 1000, 7, 70000}, "0700042" + "0c000e81fa070110100000000f0"},
		// Selectors 0, 1, 2 (60 one-bit zeros) and 15.
		{zeros, "a503" + "0000000000000000" + "0000000000000010" + "0000000000000020" + "00000000000000f0"},
		{in130, "82010050608319a4c0a34ac98622ab3e7bafa78cd562c106e8a3fc315c445cab3aa064215b4575636ba4c45ed225132ee6a0377a81e72ef142a5a277688ac8c7e9a120bfc70ce79572a6b1e4ae6e8a7645a33a00cbc1c6c055c0000010807f0000e0bb19f695513bf9a44fb9b599751fdaa9db3afd7c1e1605a77a061d03450512ac2c1c05e7e90769a9bb17252c1a01a2ae78ed7c92c10e25ac2d114dd8ed13f6a1da8295fd9e2b39af9ad2c5c5cd3b36a56d00c001afc040c0"},
	} {
		enc := c.AppendEncode(nil, tc.in)
		if got := hex.EncodeToString(enc); got != tc.want {
			t.Errorf("encode %d values:\n got %s\nwant %s", len(tc.in), got, tc.want)
		}
		codectest.Check(t, c, tc.in)
	}
}

// TestSimple8bCorrupt checks that malformed encodings are rejected.
func TestSimple8bCorrupt(t *testing.T) {
	c, err := compress.ByName("simple8b")
	if err != nil {
		t.Fatal(err)
	}
	word := func(n int, w uint64) []byte {
		return binary.LittleEndian.AppendUint64(binary.AppendUvarint(nil, uint64(n)), w)
	}
	out := make([]uint32, 1024)
	for name, src := range map[string][]byte{
		"empty":            {},
		"partial word":     {1, 0, 0, 0, 0, 0, 0, 0xf0},
		"count too large":  word(241, 0),
		"word overflows":   word(100, 0),          // 240 zeros for a count of 100
		"too few values":   word(2, 15<<60|7),     // one value, count 2
		"60-bit value":     word(1, 15<<60|1<<40), // above 32 bits
		"unused bits":      word(7, 9<<60|1<<57),  // 7×8 bits, bit 57 set
		"zero-run payload": word(240, 1),
		"trailing word": append(word(1, 15<<60|7),
			0, 0, 0, 0, 0, 0, 0, 0xf0),
	} {
		if _, err := c.Decode(out, src); !errors.Is(err, compress.ErrCorrupt) {
			t.Errorf("%s: Decode(%x) err = %v, want ErrCorrupt", name, src, err)
		}
	}
}
