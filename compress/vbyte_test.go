package compress_test

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func TestVByteRoundTrip(t *testing.T) {
	c, err := compress.ByID(compress.IDVByte)
	if err != nil {
		t.Fatal(err)
	}
	codectest.RoundTrip(t, c)
	codectest.Truncations(t, c)
	codectest.NoAllocs(t, c)
}

func FuzzVByteDecode(f *testing.F) {
	c, err := compress.ByID(compress.IDVByte)
	if err != nil {
		f.Fatal(err)
	}
	codectest.FuzzDecode(f, c)
}

// TestVByteGolden pins the persisted format.
func TestVByteGolden(t *testing.T) {
	c, err := compress.ByName("vbyte")
	if err != nil {
		t.Fatal(err)
	}
	in130 := make([]uint32, 130)
	for i := range in130 {
		in130[i] = uint32((i*i*7 + i*13) % 997)
	}
	in130[64] = 1 << 20
	for _, tc := range []struct {
		in   []uint32
		want string
	}{
		{nil, "00"},
		{[]uint32{0, 1, 2, 3, 1000, 7, 70000}, "0700010203e80707f0a204"},
		{[]uint32{1<<32 - 1}, "01ffffffff0f"},
		{in130, "820100143666a401f001ca02b203a804ac05be06de07a701e302ad04850606fa01fc038c0645f102ab050ee402c80555d503e3069a02c4059701dd044cae0439b7045ef804bb01f105d002a2079d04a601a206c7037aa006ef03cc019c0795059c03b101b907ea05a904f602d1013a96079b06ae05808040fe03bb038603df02c602bb02be02cf02ee029b03d6039f04f604db05ce06cf07799602c103fa04c106319402850484062cc702f004a7078702da04bb07c502c205688104a807f802bb06a70286068e028906ad02c4068403b70793047dda05e002d907fb04ab02ce079a05f4025cb706bb04cd026d8007bc058604"},
	} {
		enc := c.AppendEncode(nil, tc.in)
		if got := hex.EncodeToString(enc); got != tc.want {
			t.Errorf("encode %d values:\n got %s\nwant %s", len(tc.in), got, tc.want)
		}
		codectest.Check(t, c, tc.in)
	}
}

// TestVByteCorrupt checks that malformed encodings are rejected.
func TestVByteCorrupt(t *testing.T) {
	c, err := compress.ByName("vbyte")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, 16)
	for _, hexIn := range []string{
		"",                 // no count
		"01",               // count 1, no value
		"0201",             // count 2, one value
		"0101" + "00",      // trailing byte
		"01ffffffff10",     // 33-bit value
		"01ffffffff8f01",   // 6-byte varint
		"018000",           // non-minimal value
		"8000",             // non-minimal count
		"ffffffffffffffff", // huge count
		"05010203",         // count larger than the bytes
	} {
		src, _ := hex.DecodeString(hexIn)
		if _, err := c.Decode(out, src); !errors.Is(err, compress.ErrCorrupt) {
			t.Errorf("Decode(%s) err = %v, want ErrCorrupt", hexIn, err)
		}
	}
}
