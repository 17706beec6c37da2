package index

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/score"
)

// Container kinds of the test encoder.
const (
	kArray = iota
	kBitset
	kRun
)

// encodeRoaringAs serializes vals (strictly increasing) in the portable
// format with the container kind kind(key, card) chooses for each 2^16
// range, written independently of the roaring library: with runCookie the
// 12347 cookie (run bitset; offsets only from 4 containers on), else 12346
// (always offsets; no run containers allowed). An array is written only for
// at most 4096 values and a bitset only for more (the format infers the
// kind of a non-run container from its cardinality).
func encodeRoaringAs(t testing.TB, vals []uint32, runCookie bool, kind func(key uint16, card int) int) []byte {
	t.Helper()
	type cont struct {
		key  uint16
		lows []uint16
	}
	var cs []cont
	for _, v := range vals {
		if len(cs) == 0 || cs[len(cs)-1].key != uint16(v>>16) {
			cs = append(cs, cont{key: uint16(v >> 16)})
		}
		cs[len(cs)-1].lows = append(cs[len(cs)-1].lows, uint16(v))
	}
	le := binary.LittleEndian
	n := len(cs)
	var b []byte
	kinds := make([]int, n)
	for i, c := range cs {
		kinds[i] = kind(c.key, len(c.lows))
		if k := kinds[i]; (k == kRun && !runCookie) || (k == kArray && len(c.lows) > roaringArrayMax) || (k == kBitset && len(c.lows) <= roaringArrayMax) {
			t.Fatalf("BUG: container kind %d cannot hold %d values here", k, len(c.lows))
		}
	}
	if runCookie {
		b = le.AppendUint32(b, roaringCookieRuns|uint32(n-1)<<16)
		bs := make([]byte, (n+7)/8)
		for i, k := range kinds {
			if k == kRun {
				bs[i/8] |= 1 << (i % 8)
			}
		}
		b = append(b, bs...)
	} else {
		b = le.AppendUint32(b, roaringCookieNoRuns)
		b = le.AppendUint32(b, uint32(n))
	}
	for _, c := range cs {
		b = le.AppendUint16(b, c.key)
		b = le.AppendUint16(b, uint16(len(c.lows)-1))
	}
	var body [][]byte
	for i, c := range cs {
		var cb []byte
		switch kinds[i] {
		case kArray:
			for _, l := range c.lows {
				cb = le.AppendUint16(cb, l)
			}
		case kBitset:
			words := make([]uint64, 1024)
			for _, l := range c.lows {
				words[l/64] |= 1 << (l % 64)
			}
			for _, w := range words {
				cb = le.AppendUint64(cb, w)
			}
		case kRun:
			var runs [][2]uint16
			for j, l := range c.lows {
				if j > 0 && l == c.lows[j-1]+1 {
					runs[len(runs)-1][1]++
				} else {
					runs = append(runs, [2]uint16{l, 0})
				}
			}
			cb = le.AppendUint16(cb, uint16(len(runs)))
			for _, r := range runs {
				cb = le.AppendUint16(cb, r[0])
				cb = le.AppendUint16(cb, r[1])
			}
		}
		body = append(body, cb)
	}
	if !runCookie || n >= roaringNoOffsetMax {
		off := len(b) + 4*n
		for _, cb := range body {
			b = le.AppendUint32(b, uint32(off))
			off += len(cb)
		}
	}
	for _, cb := range body {
		b = append(b, cb...)
	}
	return b
}

// roaringValues parses data with the roaring library (the reference the
// format reader is checked against).
func roaringValues(t testing.TB, data []byte) []uint32 {
	t.Helper()
	bm := roaring.New()
	if _, err := bm.FromBuffer(data); err != nil {
		t.Fatalf("roaring rejects an encoding the reader accepted: %v", err)
	}
	return bm.ToArray()
}

// testSets are docID sets that need every kind of container: sparse,
// dense, runs, several 2^16 ranges (key 0, 1, 3, 4, 5).
func testSets() [][]uint32 {
	rng := rand.New(rand.NewSource(5))
	var sparse, dense, runs, mixed []uint32
	for v := uint32(0); v < 6<<16; v += 1 + uint32(rng.Intn(400)) {
		sparse = append(sparse, v)
	}
	for v := uint32(1 << 16); v < 2<<16; v++ {
		if rng.Intn(3) > 0 {
			dense = append(dense, v)
		}
	}
	for v := uint32(0); v < 5<<16; v++ {
		if (v/1000)%2 == 0 {
			runs = append(runs, v)
		}
	}
	mixed = append(mixed, 0, 2, 4, 65535)
	for v := uint32(3 << 16); v < 3<<16+9000; v++ {
		mixed = append(mixed, v)
	}
	mixed = append(mixed, 5<<16+1, 5<<16+3)
	return [][]uint32{{7}, sparse, dense, runs, mixed}
}

// TestDecodeRoaringEncodings: every valid encoding of a set (each container
// as an array or bitset by cardinality, or as runs; either cookie; the
// roaring library's own output before and after RunOptimize) decodes to the
// set, and the roaring library reads the same values from it.
func TestDecodeRoaringEncodings(t *testing.T) {
	byCard := func(_ uint16, card int) int {
		if card <= roaringArrayMax {
			return kArray
		}
		return kBitset
	}
	allRuns := func(uint16, int) int { return kRun }
	alternate := func(key uint16, card int) int {
		if key%2 == 1 {
			return kRun
		}
		return byCard(key, card)
	}
	for si, set := range testSets() {
		lib := roaring.BitmapOf(set...)
		var plain, opt bytes.Buffer
		if _, err := lib.WriteTo(&plain); err != nil {
			t.Fatal(err)
		}
		lib.RunOptimize()
		if _, err := lib.WriteTo(&opt); err != nil {
			t.Fatal(err)
		}
		encodings := map[string][]byte{
			"no-run cookie":        encodeRoaringAs(t, set, false, byCard),
			"run cookie, no runs":  encodeRoaringAs(t, set, true, byCard),
			"all runs":             encodeRoaringAs(t, set, true, allRuns),
			"odd keys runs":        encodeRoaringAs(t, set, true, alternate),
			"library":              plain.Bytes(),
			"library RunOptimized": opt.Bytes(),
		}
		for name, data := range encodings {
			got, err := decodeRoaring(nil, data, len(set))
			if err != nil {
				t.Fatalf("set %d, %s: %v", si, name, err)
			}
			assertEq(t, got, set, name)
			assertEq(t, roaringValues(t, data), set, name+" (roaring)")
			if _, err := decodeRoaring(nil, data, len(set)-1); err == nil {
				t.Fatalf("set %d, %s: more values than the bound accepted", si, name)
			}
		}
	}
}

// TestDecodeRoaringRejects: each kind of damage is reported, naming it.
func TestDecodeRoaringRejects(t *testing.T) {
	le := binary.LittleEndian
	// Three containers (keys 0, 1, 2): an array {1, 5}, a run [10, 12], an
	// array {9}; run cookie, so no offset header (n < 4).
	good := encodeRoaringAs(t, []uint32{1, 5, 1<<16 + 10, 1<<16 + 11, 1<<16 + 12, 2<<16 + 9}, true, func(key uint16, _ int) int {
		if key == 1 {
			return kRun
		}
		return kArray
	})
	if _, err := decodeRoaring(nil, good, 100); err != nil {
		t.Fatal(err)
	}
	// Layout: cookie 0-3, run bitset 4, header 5-16 (key, card-1 per
	// container), array 17-20, run container 21-26, array 27-28.
	noRuns := encodeRoaringAs(t, []uint32{1, 5, 2<<16 + 9}, false, func(uint16, int) int { return kArray })
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "no cookie"},
		{"cookie", []byte{1, 2, 3, 4}, "cookie"},
		{"container count", func() []byte { b := slices.Clone(noRuns); le.PutUint32(b[4:], 1<<16+1); return b }(), "at most 65536"},
		{"truncated header", good[:10], "descriptive header"},
		{"truncated offsets", noRuns[:18], "offset header"},
		{"key order", func() []byte { b := slices.Clone(good); le.PutUint16(b[9:], 0); return b }(), "not after"},
		{"array order", func() []byte { b := slices.Clone(good); le.PutUint16(b[19:], 1); return b }(), "not after"},
		{"card too small", func() []byte { b := slices.Clone(good); le.PutUint16(b[11:], 1); return b }(), "the header says"},
		{"empty run container", func() []byte { b := slices.Clone(good); le.PutUint16(b[21:], 0); return b }(), "empty run container"},
		{"run beyond the container", func() []byte { b := slices.Clone(good); le.PutUint16(b[25:], 0xfffa); return b }(), "leaves the container"},
		{"truncated run", good[:24], "truncated"},
		{"truncated array", good[:28], "truncated"},
		{"trailing byte", append(slices.Clone(good), 0), "after the last container"},
		{"offset", func() []byte { b := slices.Clone(noRuns); le.PutUint32(b[20:], 99); return b }(), "offset header says"},
		{"bitset truncated", func() []byte {
			b := slices.Clone(noRuns)
			le.PutUint16(b[10:], 5000) // card 5001: a bitset container
			return b
		}(), "bitset truncated"},
	}
	for _, c := range cases {
		_, err := decodeRoaring(nil, c.data, 1<<20)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	overlap := encodeRoaringAs(t, []uint32{10, 11, 20, 21}, true, func(uint16, int) int { return kRun })
	le.PutUint16(overlap[13:], 11) // the first run [10, 21] covers the second's start
	if _, err := decodeRoaring(nil, overlap, 100); err == nil || !strings.Contains(err.Error(), "overlaps") {
		t.Errorf("overlapping runs: %v", err)
	}
}

// TestOpenNonCanonicalBitmaps: an index whose bitmaps are valid but not what
// this roaring version writes (run containers where RunOptimize keeps
// arrays, the no-run cookie with bitsets, as another roaring version or
// implementation may write them) opens, and its lists decode, walk and
// rebuild their blocks exactly as the canonical index's.
func TestOpenNonCanonicalBitmaps(t *testing.T) {
	c, _ := compress.ByName("vbyte")
	rng := rand.New(rand.NewSource(12))
	terms, docs, freqs, lens := randomLists(rng, 70000, 16)
	dir := t.TempDir()
	canonPath := filepath.Join(dir, "canon.qp")
	writeIndexMode(t, canonPath, c, 16, BitmapsAlways, terms, docs, freqs, lens)
	styles := map[string]func([]uint32) []byte{
		"runs": func(d []uint32) []byte {
			return encodeRoaringAs(t, d, true, func(uint16, int) int { return kRun })
		},
		"no-run cookie": func(d []uint32) []byte {
			return encodeRoaringAs(t, d, false, func(_ uint16, card int) int {
				if card <= roaringArrayMax {
					return kArray
				}
				return kBitset
			})
		},
	}
	canon, err := Open(canonPath)
	if err != nil {
		t.Fatal(err)
	}
	defer canon.Close()
	for name, enc := range styles {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".qp")
		writeWithBitmaps(t, path, c, 16, terms, docs, freqs, lens, enc)
		x, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		differ := 0
		for i := range terms {
			l, _ := x.List(i)
			p, _ := canon.List(i)
			if !l.IsBitmap() {
				t.Fatalf("%s, term %d: not a bitmap list", name, i)
			}
			if string(l.DocBytes()) != string(p.DocBytes()) {
				differ++
			}
			gd, gf, err := l.Decode(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			assertEq(t, gd, docs[i], name+" docs")
			assertEq(t, gf, freqs[i], name+" freqs")
			bl, err := x.BlockCodedList(i)
			if err != nil {
				t.Fatal(err)
			}
			pl, _ := canon.BlockCodedList(i)
			if string(bl.DocBytes()) != string(pl.DocBytes()) {
				t.Fatalf("%s, term %d: rebuilt docID blocks differ", name, i)
			}
			if !l.Bitmap().Equals(p.Bitmap()) {
				t.Fatalf("%s, term %d: bitmaps differ", name, i)
			}
		}
		if differ == 0 {
			t.Fatalf("%s: every bitmap is encoded as the writer encodes it", name)
		}
		x.Close()
	}
}

// writeWithBitmaps writes an index of the lists as bitmap lists whose
// bitmaps are enc's encodings instead of the writer's.
func writeWithBitmaps(t testing.TB, path string, c compress.Codec, bs int, terms []string, docs, freqs [][]uint32, lens []uint32, enc func([]uint32) []byte) {
	t.Helper()
	w, err := NewWriter(path, WriterOptions{BlockSize: bs, DocCodec: c, DocLens: lens, Bitmaps: BitmapsAlways})
	if err != nil {
		t.Fatal(err)
	}
	e := NewListEncoder(bs, c, c, score.Default, lens)
	e.SetBitmaps(BitmapsAlways)
	for i, term := range terms {
		list, err := e.Encode(nil, docs[i], freqs[i])
		if err != nil {
			t.Fatal(err)
		}
		nb := (len(docs[i]) + bs - 1) / bs
		skips, frqs := list[:skipEntrySize*nb], list[skipEntrySize*nb+int(e.Rec.BitmapBytes):]
		bm := enc(docs[i])
		rec := e.Rec
		rec.BitmapBytes = uint32(len(bm))
		if err := w.AddEncoded(term, slices.Concat(skips, bm, frqs), rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// FuzzDecodeRoaring: arbitrary bytes never panic, and whatever the reader
// accepts the roaring library reads to the same values.
func FuzzDecodeRoaring(f *testing.F) {
	for _, set := range testSets()[:1] {
		f.Add(encodeRoaringAs(f, set, true, func(uint16, int) int { return kRun }))
		f.Add(encodeRoaringAs(f, set, false, func(uint16, int) int { return kArray }))
	}
	f.Add(encodeRoaringAs(f, []uint32{1, 2, 3, 1 << 16, 3 << 16}, true, func(k uint16, _ int) int { return int(k%2) * kRun }))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeRoaring(nil, data, 1<<20)
		if err != nil {
			return
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("values not strictly increasing: %v", got)
		}
		want := roaringValues(t, data)
		if len(got) == 0 && len(want) == 0 {
			return
		}
		assertEq(t, got, want, "values")
	})
}
