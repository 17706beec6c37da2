package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/qpengine/qp/compress"
)

func writeIndexMode(t testing.TB, path string, c compress.Codec, bs int, mode BitmapMode, terms []string, docs, freqs [][]uint32, lens []uint32) {
	t.Helper()
	w, err := NewWriter(path, WriterOptions{BlockSize: bs, DocCodec: c, DocLens: lens, Bitmaps: mode})
	if err != nil {
		t.Fatal(err)
	}
	for i, term := range terms {
		if err := w.AddList(term, docs[i], freqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBitmapListsRoundTrip: with bitmaps forced, every codec and block size
// decodes, walks (Next, NextGEQ, Freq) and bounds exactly as the block-coded
// list; BlockCodedList rebuilds the very bytes of the block-coded index.
func TestBitmapListsRoundTrip(t *testing.T) {
	for _, c := range compress.All() {
		for _, bs := range []int{1, 3, 128} {
			t.Run(fmt.Sprintf("%s/B%d", c.Name(), bs), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(bs) + 77))
				terms, docs, freqs, lens := randomLists(rng, 70000, bs) // > 65536: two roaring containers
				dir := t.TempDir()
				writeIndexMode(t, filepath.Join(dir, "b.qp"), c, bs, BitmapsAlways, terms, docs, freqs, lens)
				writeIndexMode(t, filepath.Join(dir, "p.qp"), c, bs, BitmapsOff, terms, docs, freqs, lens)
				x, err := Open(filepath.Join(dir, "b.qp"))
				if err != nil {
					t.Fatal(err)
				}
				y, err := Open(filepath.Join(dir, "p.qp"))
				if err != nil {
					t.Fatal(err)
				}
				if x.Meta.BitmapLists != uint64(len(terms)) || y.Meta.BitmapLists != 0 {
					t.Fatalf("bitmap lists %d and %d", x.Meta.BitmapLists, y.Meta.BitmapLists)
				}
				buf := make([]uint32, bs)
				for i := range terms {
					l, _ := x.List(i)
					p, _ := y.List(i)
					if !l.IsBitmap() || p.IsBitmap() || l.Bitmap().GetCardinality() != uint64(len(docs[i])) {
						t.Fatalf("term %d: representations %v %v", i, l.IsBitmap(), p.IsBitmap())
					}
					gd, gf, err := l.Decode(nil, nil)
					if err != nil {
						t.Fatal(err)
					}
					assertEq(t, gd, docs[i], "docs")
					assertEq(t, gf, freqs[i], "freqs")
					checkMaxima(t, x, &l, docs[i], freqs[i])
					checkCursor(t, rng, l, docs[i], freqs[i])
					// Blocks in random order (DecodeDocs re-seeks).
					for _, b := range rng.Perm(l.NBlocks) {
						n, err := l.DecodeDocs(b, buf)
						if err != nil {
							t.Fatal(err)
						}
						assertEq(t, buf[:n], docs[i][b*bs:b*bs+n], "block")
					}
					bc, err := x.BlockCodedList(i)
					if err != nil {
						t.Fatal(err)
					}
					if bc.IsBitmap() || string(bc.DocBytes()) != string(p.DocBytes()) ||
						string(bc.SkipBytes()) != string(p.SkipBytes()) || string(bc.FreqBytes()) != string(p.FreqBytes()) {
						t.Fatalf("term %d: BlockCodedList differs from the block-coded list", i)
					}
					if pc, _ := y.BlockCodedList(i); string(pc.DocBytes()) != string(p.DocBytes()) {
						t.Fatal("BlockCodedList of a block-coded list changed it")
					}
				}
			})
		}
	}
}

// TestBitmapAutoChoosesSmaller: auto stores exactly the lists whose bitmap
// is smaller than their docID blocks.
func TestBitmapAutoChoosesSmaller(t *testing.T) {
	c, _ := compress.ByName("bp128")
	rng := rand.New(rand.NewSource(3))
	n := 3 << 16 // whole roaring containers (a bitmap container costs 8 KiB per 2^16 docIDs)
	lens := make([]uint32, n)
	var terms []string
	var docs, freqs [][]uint32
	for i, p := range []float64{0.001, 0.01, 0.1, 0.3, 0.6, 0.95} {
		var d, f []uint32
		for j := 0; j < n; j++ {
			if rng.Float64() < p {
				d, f = append(d, uint32(j)), append(f, 1)
				lens[j]++
			}
		}
		terms, docs, freqs = append(terms, fmt.Sprintf("p%d", i)), append(docs, d), append(freqs, f)
	}
	dir := t.TempDir()
	writeIndexMode(t, filepath.Join(dir, "a.qp"), c, 128, BitmapsAuto, terms, docs, freqs, lens)
	writeIndexMode(t, filepath.Join(dir, "p.qp"), c, 128, BitmapsOff, terms, docs, freqs, lens)
	x, _ := Open(filepath.Join(dir, "a.qp"))
	y, _ := Open(filepath.Join(dir, "p.qp"))
	nb := 0
	for i := range terms {
		l, _ := x.List(i)
		p, _ := y.List(i)
		if l.IsBitmap() != (len(l.DocBytes()) < len(p.DocBytes())) || (!l.IsBitmap() && len(l.DocBytes()) != len(p.DocBytes())) {
			t.Fatalf("list %d: bitmap %v with %d bytes, blocks %d bytes", i, l.IsBitmap(), len(l.DocBytes()), len(p.DocBytes()))
		}
		if l.IsBitmap() {
			nb++
		}
	}
	if nb == 0 || nb == len(terms) || x.Meta.BitmapLists != uint64(nb) || x.Meta.Bitmaps != "auto" {
		t.Fatalf("%d of %d lists are bitmaps (meta %d %q): the densities should split", nb, len(terms), x.Meta.BitmapLists, x.Meta.Bitmaps)
	}
}

// fixCRCs recomputes every section checksum and the TOC's, so that damage
// reaches the structural checks behind them.
func fixCRCs(data []byte) {
	le := binary.LittleEndian
	tr := data[len(data)-trailerSize:]
	tocOff, tocLen := le.Uint64(tr), le.Uint64(tr[8:])
	toc := data[tocOff : tocOff+tocLen]
	n := int(le.Uint32(toc))
	for i := 0; i < n; i++ {
		e := toc[4+24*i:]
		off, ln := le.Uint64(e[4:]), le.Uint64(e[12:])
		le.PutUint32(e[20:], crc32.Checksum(data[off:off+ln], castagnoli))
	}
	le.PutUint32(tr[16:], crc32.Checksum(toc, castagnoli))
}

// bitmapAreas returns the file offsets of every bitmap list's bitmap.
func bitmapAreas(t testing.TB, x *Index, data []byte) [][2]int {
	postOff := len(data) - len(data[len(data)-trailerSize:]) // placeholder, recomputed below
	le := binary.LittleEndian
	tr := data[len(data)-trailerSize:]
	toc := data[le.Uint64(tr) : le.Uint64(tr)+le.Uint64(tr[8:])]
	for i := 0; i < int(le.Uint32(toc)); i++ {
		if e := toc[4+24*i:]; le.Uint32(e) == secPostings {
			postOff = int(le.Uint64(e[4:]))
		}
	}
	var out [][2]int
	for tm := 0; tm < x.NumTerms(); tm++ {
		r := x.Record(tm)
		if !r.Bitmap() {
			continue
		}
		nb := (int(r.DF) + x.Meta.BlockSize - 1) / x.Meta.BlockSize
		a := postOff + int(r.Offset) + skipEntrySize*nb
		out = append(out, [2]int{a, a + int(r.BitmapBytes)})
	}
	if len(out) == 0 {
		t.Fatal("no bitmap lists")
	}
	return out
}

// checkAll decodes every list of a loaded index; errors must wrap ErrCorrupt.
func checkAll(t testing.TB, x *Index) {
	for tm := 0; tm < x.NumTerms(); tm++ {
		l, err := x.List(tm)
		if err == nil {
			_, _, err = l.Decode(nil, nil)
		}
		if err == nil {
			var c Cursor
			for c.Reset(l); c.DocID() != Terminated; c.NextGEQ(c.DocID() + 7) {
				c.Freq()
			}
			err = c.Err()
		}
		if err == nil {
			_, err = x.BlockCodedList(tm)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("term %d: %v does not wrap ErrCorrupt", tm, err)
		}
	}
}

func bitmapTestFile(t testing.TB) (string, []byte) {
	c, _ := compress.ByName("vbyte")
	rng := rand.New(rand.NewSource(11))
	terms, docs, freqs, lens := randomLists(rng, 70000, 16)
	path := filepath.Join(t.TempDir(), "x.qp")
	writeIndexMode(t, path, c, 16, BitmapsAlways, terms, docs, freqs, lens)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, good
}

// TestBitmapCorruptionDetected damages bitmaps behind valid checksums: every
// damage is an error wrapping ErrCorrupt at Open (the bitmap is verified
// completely), never a panic; and a version-1 file may not hold bitmaps.
func TestBitmapCorruptionDetected(t *testing.T) {
	path, good := bitmapTestFile(t)
	x, err := load(path, good)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	for _, ar := range bitmapAreas(t, x, good) {
		for trial := 0; trial < 200; trial++ {
			bad := append([]byte(nil), good...)
			i := ar[0] + rng.Intn(ar[1]-ar[0])
			bad[i] ^= byte(1 + rng.Intn(255))
			fixCRCs(bad)
			y, err := load(path, bad)
			if err == nil {
				checkAll(t, y) // a flip may yield another valid bitmap? then it decodes consistently
				continue
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip at %d: %v does not wrap ErrCorrupt", i, err)
			}
		}
	}
	v1 := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(v1[8:], 1)
	if _, err := load(path, v1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("version 1 file with bitmap lists: %v", err)
	}
	v3 := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(v3[8:], formatVersion+1)
	if _, err := load(path, v3); err == nil || errors.Is(err, ErrCorrupt) {
		t.Fatalf("future version: %v", err)
	}
}

// TestReadsVersion1: a file written before bitmaps (version 1, reserved
// fields zero) opens and decodes.
func TestReadsVersion1(t *testing.T) {
	c, _ := compress.ByName("bp128")
	rng := rand.New(rand.NewSource(2))
	terms, docs, freqs, lens := randomLists(rng, 1000, 128)
	path := filepath.Join(t.TempDir(), "x.qp")
	writeIndexMode(t, path, c, 128, BitmapsOff, terms, docs, freqs, lens)
	data, _ := os.ReadFile(path)
	binary.LittleEndian.PutUint32(data[8:], 1)
	x, err := load(path, data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range terms {
		l, _ := x.List(i)
		gd, _, err := l.Decode(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		assertEq(t, gd, docs[i], "docs")
	}
}

// FuzzBitmapOpen: arbitrary bytes in a bitmap (checksums fixed) never
// panic; Open either rejects them with ErrCorrupt or yields lists that
// decode consistently.
func FuzzBitmapOpen(f *testing.F) {
	path, good := bitmapTestFile(f)
	x, err := load(path, good)
	if err != nil {
		f.Fatal(err)
	}
	areas := bitmapAreas(f, x, good)
	f.Add(uint16(0), uint32(0), []byte{0xff})
	f.Add(uint16(1), uint32(4), []byte{0, 0, 0, 0})
	f.Add(uint16(2), uint32(12), []byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, which uint16, at uint32, patch []byte) {
		ar := areas[int(which)%len(areas)]
		bad := append([]byte(nil), good...)
		for j, p := range patch {
			if k := ar[0] + (int(at)+j)%(ar[1]-ar[0]); k < ar[1] {
				bad[k] = p
			}
		}
		fixCRCs(bad)
		y, err := load(path, bad)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v does not wrap ErrCorrupt", err)
			}
			return
		}
		checkAll(t, y)
	})
}
