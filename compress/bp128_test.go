package compress_test

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func bp128Codec(tb testing.TB) compress.RandomAccess {
	tb.Helper()
	return codectest.As[compress.RandomAccess](tb, codectest.Lookup(tb, compress.IDBP128, "bp128", compress.General))
}

func TestBP128RoundTrip(t *testing.T) { codectest.Suite(t, bp128Codec(t)) }

func FuzzBP128Decode(f *testing.F) { codectest.FuzzDecode(f, bp128Codec(f)) }

// TestBP128Golden pins the persisted format.
func TestBP128Golden(t *testing.T) {
	c := bp128Codec(t)
	codectest.Golden(t, c, nil, "00")
	codectest.Golden(t, c, []uint32{0, 0, 0}, "0300")
	codectest.Golden(t, c, []uint32{0, 1, 2, 3, 1000, 7, 70000}, "07110000020008001800803ee000005c44")
	codectest.Golden(t, c, []uint32{5, 1<<32 - 1}, "022005000000ffffffff")
	codectest.Golden(t, c, codectest.Golden130(), "8201150000800200d800003300400a00e001805200900d002802805500f80c00ef01700a00c602408b002818000600401f00f007008601500400e202c0aa007000006401005900540180ea00303600340200b100b804005d02800900b808801c00702300bc00009e00d80500f102002a00880e800e01600a004406c07100d003002003e03d00300300ce015029003803402c00c81d00ea02204500d805806800a003002c07c0c6007015000000d03f00ec0600c300f015008c02c04e00f009004f01c02d006c0600eb00f02100ec04c0b600701a00cf03200f00580480e000a027008206400c00a008000502806000b00080a3000027004e07c04100d01200bb03a02800080b0034001020005007005e00d819002701c060003804808401d012008806006100b81d001302a00f00680b00b000903d00f604c04a00701e009a02802e007001809b01b023009a02401b00001c000abc1a08")
}

// TestBP128Widths decodes every width at every length up to three blocks,
// covering each unpacking kernel and its padded tail.
func TestBP128Widths(t *testing.T) {
	c := bp128Codec(t)
	vals := make([]uint32, 3*128+1)
	for b := 0; b <= 32; b++ {
		max := uint32(uint64(1)<<b - 1)
		x := uint32(2463534242)
		for i := range vals {
			x = codectest.XorShift(x)
			vals[i] = x & max
		}
		for n := 0; n <= len(vals); n++ {
			if n > 40 && n%17 != 0 && n%128 > 2 && n%128 < 126 {
				continue
			}
			codectest.Check(t, c, vals[:n])
		}
	}
}

// TestBP128Corrupt checks that malformed encodings are rejected.
func TestBP128Corrupt(t *testing.T) {
	c := bp128Codec(t)
	codectest.Corrupt(t, c, []codectest.Bad{
		{"no count", ""},
		{"no block header", "01"},
		{"width 33", "0121"},
		{"missing data byte", "0108"},
		{"trailing byte after the block", "01080500"},
		{"nonzero padding bit", "0101fe"},
		{"huge count", "ffffffffff0f"},
		{"129 values, one zero-width block, second block missing", "810100"},
	})
	src, _ := hex.DecodeString("810100")
	if _, err := c.Get(src, 128); !errors.Is(err, compress.ErrCorrupt) {
		t.Errorf("Get in a missing block: err = %v, want ErrCorrupt", err)
	}
	if _, err := c.Get(src, -1); !errors.Is(err, compress.ErrCorrupt) {
		t.Errorf("Get(-1): err = %v, want ErrCorrupt", err)
	}
}
