package compress_test

import (
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func vbyteCodec(tb testing.TB) compress.Codec {
	tb.Helper()
	return codectest.Lookup(tb, compress.IDVByte, "vbyte", compress.General)
}

func TestVByteRoundTrip(t *testing.T) { codectest.Suite(t, vbyteCodec(t)) }

func FuzzVByteDecode(f *testing.F) { codectest.FuzzDecode(f, vbyteCodec(f)) }

// TestVByteGolden pins the persisted format.
func TestVByteGolden(t *testing.T) {
	c := vbyteCodec(t)
	codectest.Golden(t, c, nil, "00")
	codectest.Golden(t, c, []uint32{0, 1, 2, 3, 1000, 7, 70000}, "0700010203e80707f0a204")
	codectest.Golden(t, c, []uint32{1<<32 - 1}, "01ffffffff0f")
	codectest.Golden(t, c, codectest.Golden130(), "820100143666a401f001ca02b203a804ac05be06de07a701e302ad04850606fa01fc038c0645f102ab050ee402c80555d503e3069a02c4059701dd044cae0439b7045ef804bb01f105d002a2079d04a601a206c7037aa006ef03cc019c0795059c03b101b907ea05a904f602d1013a96079b06ae05808040fe03bb038603df02c602bb02be02cf02ee029b03d6039f04f604db05ce06cf07799602c103fa04c106319402850484062cc702f004a7078702da04bb07c502c205688104a807f802bb06a70286068e028906ad02c4068403b70793047dda05e002d907fb04ab02ce079a05f4025cb706bb04cd026d8007bc058604")
}

// TestVByteCorrupt checks that malformed encodings are rejected.
func TestVByteCorrupt(t *testing.T) {
	codectest.Corrupt(t, vbyteCodec(t), []codectest.Bad{
		{"no count", ""},
		{"count 1, no value", "01"},
		{"count 2, one value", "0201"},
		{"trailing byte", "0101" + "00"},
		{"33-bit value", "01ffffffff10"},
		{"6-byte varint", "01ffffffff8f01"},
		{"non-minimal value", "018000"},
		{"non-minimal count", "8000"},
		{"huge count", "ffffffffffffffff"},
		{"count larger than the bytes", "05010203"},
	})
}
