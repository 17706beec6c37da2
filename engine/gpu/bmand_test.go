package gpu

import (
	"testing"

	"github.com/qpengine/qp/compress"
)

// TestBitmapAndMode checks Options.BitmapAnd's three values: auto turns
// the bitmap AND on from BitmapAndMinDocs documents, on and off whatever
// the size; none runs without columns in use or without bp128
// frequencies. It needs no GPU (bitmapAndOn reads the options only).
func TestBitmapAndMode(t *testing.T) {
	bp, err := compress.ByID(compress.IDBP128)
	if err != nil {
		t.Fatal(err)
	}
	other, err := compress.ByID(compress.IDVByte)
	if err != nil {
		t.Fatal(err)
	}
	use := []uint32{0}
	for _, c := range []struct {
		mode BitmapAndMode
		n    uint32
		fc   compress.Codec
		use  []uint32
		want bool
	}{
		{BitmapAndAuto, BitmapAndMinDocs - 1, bp, use, false},
		{BitmapAndAuto, BitmapAndMinDocs, bp, use, true},
		{BitmapAndOn, 300, bp, use, true},
		{BitmapAndOff, 25_000_000, bp, use, false},
		{BitmapAndOn, 300, bp, nil, false},
		{BitmapAndAuto, 25_000_000, other, use, false},
	} {
		b := &Backend{opt: Options{BitmapAnd: c.mode}, n: c.n, freqCodec: c.fc}
		if got := b.bitmapAndOn(c.use); got != c.want {
			t.Errorf("mode %d, %d documents, codec %v, use %v: bitmapAndOn %v, want %v", c.mode, c.n, c.fc.ID(), c.use != nil, got, c.want)
		}
	}
}
