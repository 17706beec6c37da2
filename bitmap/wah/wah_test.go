package wah

import (
	"errors"
	"math/rand"
	"slices"
	"testing"
)

// The trivial reference: a bitset of n rows as a []bool.
func refBits(docs []uint32, n uint32) []bool {
	b := make([]bool, n)
	for _, d := range docs {
		b[d] = true
	}
	return b
}

func randDocs(rng *rand.Rand, n uint32, density float64) []uint32 {
	var docs []uint32
	switch {
	case density < 0: // runs: alternating blocks of ones and zeros
		on := false
		for r := uint32(0); r < n; {
			k := uint32(1 + rng.Intn(200))
			for j := r; j < min(n, r+k); j++ {
				if on {
					docs = append(docs, j)
				}
			}
			r += k
			on = !on
		}
	default:
		for r := uint32(0); r < n; r++ {
			if rng.Float64() < density {
				docs = append(docs, r)
			}
		}
	}
	return docs
}

var testLens = []uint32{0, 1, 2, 30, 31, 32, 61, 62, 63, 64, 92, 93, 94, 127, 128, 1000, 31 * 64, 31*64 + 1, 10007}
var testDensities = []float64{0, 0.0005, 0.01, 0.1, 0.5, 0.9, 0.999, 1, -1}

func toDocs(b []bool) []uint32 {
	var d []uint32
	for i, v := range b {
		if v {
			d = append(d, uint32(i))
		}
	}
	return d
}

func checkBitmap(t *testing.T, bm Bitmap, want []bool) {
	t.Helper()
	n := uint32(len(want))
	if bm.N != n {
		t.Fatalf("N = %d, want %d", bm.N, n)
	}
	if err := bm.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	docs, err := bm.DecodeDocs(nil)
	if err != nil {
		t.Fatal(err)
	}
	if wd := toDocs(want); !slices.Equal(docs, wd) && !(len(docs) == 0 && len(wd) == 0) {
		t.Fatalf("DecodeDocs: %d docs, want %d", len(docs), len(wd))
	}
	if bm.Count() != len(docs) {
		t.Fatalf("Count %d, want %d", bm.Count(), len(docs))
	}
	bs, err := bm.Decode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != int((n+63)/64) {
		t.Fatalf("Decode: %d words", len(bs))
	}
	for r := uint32(0); r < uint32(len(bs))*64; r++ {
		got := bs[r/64]>>(r%64)&1 == 1
		if got != (r < n && want[r]) {
			t.Fatalf("Decode: row %d = %v", r, got)
		}
	}
	gr, err := bm.DecodeGroups(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(gr) != Groups(n) {
		t.Fatalf("DecodeGroups: %d groups, want %d", len(gr), Groups(n))
	}
	for g, v := range gr {
		for j := uint32(0); j < 32; j++ {
			r := uint32(g)*31 + j
			if got, w := v>>j&1 == 1, j < 31 && r < n && want[r]; got != w {
				t.Fatalf("DecodeGroups: group %d bit %d = %v", g, j, got)
			}
		}
	}
	if !slices.Equal(GroupsToBitset(nil, gr, n), bs) && n > 0 {
		t.Fatalf("GroupsToBitset differs from Decode")
	}
	// Canonical: re-encoding the decoded bitset gives the same words, and
	// no two adjacent fills of one kind, no homogeneous literal.
	re := EncodeBitset(nil, bs, n)
	if !slices.Equal(re.Words, bm.Words) {
		t.Fatalf("EncodeBitset words differ from Encode: %x vs %x", re.Words, bm.Words)
	}
	for i, w := range bm.Words {
		if w&FillFlag == 0 && (w == 0 || w == LitMask) {
			t.Fatalf("word %d: homogeneous literal %x", i, w)
		}
		if i > 0 && w&FillFlag != 0 && w&(FillFlag|FillBit) == bm.Words[i-1]&(FillFlag|FillBit) && bm.Words[i-1]&MaxRun != MaxRun {
			t.Fatalf("word %d: unmerged fills", i)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, n := range testLens {
		for _, d := range testDensities {
			docs := randDocs(rng, n, d)
			bm, err := Encode(nil, docs, n)
			if err != nil {
				t.Fatal(err)
			}
			checkBitmap(t, bm, refBits(docs, n))
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, c := range []struct {
		docs []uint32
		n    uint32
	}{{[]uint32{5}, 5}, {[]uint32{3, 3}, 10}, {[]uint32{4, 2}, 10}, {[]uint32{1, 40, 39}, 100}, {[]uint32{1, 2, 200}, 100}} {
		if _, err := Encode(nil, c.docs, c.n); err == nil {
			t.Errorf("Encode(%v, %d): no error", c.docs, c.n)
		}
	}
}

func TestLongRuns(t *testing.T) {
	// N < 2^32 rows are < 2^30 groups, so a bitmap never needs a split
	// run; the encoder still splits (and merges up to) MaxRun.
	var e encoder
	e.run(0, MaxRun-3)
	e.run(0, 5)
	e.run(LitMask, 2)
	e.run(5, 2)
	if want := []uint32{FillFlag | MaxRun, FillFlag | 2, FillFlag | FillBit | 2, 5, 5}; !slices.Equal(e.w, want) {
		t.Fatalf("words %x, want %x", e.w, want)
	}
	n := uint32(1<<32 - 1)
	bm, err := Encode(nil, []uint32{n - 1}, n)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := bm.DecodeDocs(nil)
	if err != nil || !slices.Equal(docs, []uint32{n - 1}) || len(bm.Words) != 2 {
		t.Fatalf("DecodeDocs = %v, %v (%x)", docs, err, bm.Words)
	}
	o, err := Or(bm, bm)
	if err != nil || !slices.Equal(o.Words, bm.Words) {
		t.Fatalf("Or = %x, %v", o.Words, err)
	}
}

func TestCorrupt(t *testing.T) {
	for _, c := range []Bitmap{
		{Words: []uint32{FillFlag}, N: 31},              // fill of length 0
		{Words: []uint32{FillFlag | 2}, N: 31},          // too many groups
		{Words: []uint32{1}, N: 62},                     // too few
		{Words: nil, N: 1},                              // none
		{Words: []uint32{FillFlag | FillBit | 1}, N: 5}, // padding set by a fill
		{Words: []uint32{1 << 5}, N: 5},                 // padding set by a literal
		{Words: []uint32{0}, N: 0},                      // words for no rows
	} {
		if err := c.Validate(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%x/%d: Validate = %v", c.Words, c.N, err)
		}
		if _, err := c.DecodeDocs(nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%x/%d: DecodeDocs = %v", c.Words, c.N, err)
		}
		if _, err := c.Decode(nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%x/%d: Decode = %v", c.Words, c.N, err)
		}
		if _, err := c.DecodeGroups(nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%x/%d: DecodeGroups = %v", c.Words, c.N, err)
		}
	}
	// Non-canonical but valid: homogeneous literals, split fills.
	nc := Bitmap{Words: []uint32{0, LitMask, FillFlag | 1, FillFlag | 1, 7}, N: 5 * 31}
	docs, err := nc.DecodeDocs(nil)
	if err != nil || len(docs) != 34 {
		t.Fatalf("non-canonical: %d docs, %v", len(docs), err)
	}
}

func TestReduce(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, n := range testLens {
		for _, m := range []int{1, 2, 3, 5, 8, 13} {
			bms := make([]Bitmap, m)
			or := make([]bool, n)
			and := make([]bool, n)
			for i := range and {
				and[i] = true
			}
			for i := range bms {
				docs := randDocs(rng, n, testDensities[rng.Intn(len(testDensities))])
				var err error
				if bms[i], err = Encode(nil, docs, n); err != nil {
					t.Fatal(err)
				}
				b := refBits(docs, n)
				for r := range b {
					or[r] = or[r] || b[r]
					and[r] = and[r] && b[r]
				}
			}
			o, err := Or(bms...)
			if err != nil {
				t.Fatal(err)
			}
			checkBitmap(t, o, or)
			a, err := And(bms...)
			if err != nil {
				t.Fatal(err)
			}
			checkBitmap(t, a, and)
		}
	}
	if _, err := Or(); err == nil {
		t.Error("Or(): no error")
	}
	if _, err := Or(Bitmap{N: 0}, Bitmap{Words: []uint32{0}, N: 1}); err == nil {
		t.Error("Or of different N: no error")
	}
	if _, err := Or(Bitmap{Words: []uint32{FillFlag}, N: 31}, Bitmap{Words: []uint32{0}, N: 31}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Or of a corrupt bitmap: %v", err)
	}
}

// FuzzDecode: decoding garbage never panics; what decodes is consistent
// across the decoders and re-encodes to an equivalent bitmap.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0x80, 1, 0, 0, 0}, uint32(62))
	f.Add([]byte{1, 0, 0, 0xc0}, uint32(31))
	f.Add([]byte{}, uint32(0))
	f.Fuzz(func(t *testing.T, raw []byte, n uint32) {
		n %= 1 << 16
		w := make([]uint32, len(raw)/4)
		for i := range w {
			w[i] = uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24
			if w[i]&FillFlag != 0 {
				w[i] = w[i]&^MaxRun | w[i]&MaxRun%4096 // keep runs small enough to decode
			}
		}
		bm := Bitmap{Words: w, N: n}
		docs, err := bm.DecodeDocs(nil)
		_, err2 := bm.Decode(nil)
		_, err3 := bm.DecodeGroups(nil)
		if (err == nil) != (err2 == nil) || (err == nil) != (err3 == nil) {
			t.Fatalf("decoders disagree: %v / %v / %v", err, err2, err3)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		re, err := Encode(nil, docs, n)
		if err != nil {
			t.Fatal(err)
		}
		checkBitmap(t, re, refBits(docs, n))
		if bm.Count() != len(docs) {
			t.Fatalf("Count %d, want %d", bm.Count(), len(docs))
		}
	})
}
