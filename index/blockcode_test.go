package index

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/qpengine/qp/compress"
)

// boundedCodecs are the codecs whose blocks the index stores without count
// (and docID blocks without sum).
func boundedCodecs(t *testing.T) []compress.Codec {
	var out []compress.Codec
	for _, c := range compress.All() {
		if _, ok := c.(compress.Bounded); ok {
			out = append(out, c)
		}
	}
	if len(out) < 2 {
		t.Fatalf("%d Bounded codecs, want interpolative and bp128ip", len(out))
	}
	return out
}

// TestBoundedBlocksRoundTrip writes lists of every length class with each
// Bounded codec and block sizes that make bp128ip's full and partial
// sub-blocks appear, and checks that they decode (whole lists, cursors,
// block maxima) to the input; that the docID area is exactly the sum of
// the known-sum encodings (a list of one posting takes zero bytes), and the
// frequency area that of the known-count ones.
func TestBoundedBlocksRoundTrip(t *testing.T) {
	for _, c := range boundedCodecs(t) {
		b := c.(compress.Bounded)
		for _, bs := range []int{1, 7, 128, 300} {
			rng := rand.New(rand.NewSource(int64(bs)))
			terms, docs, freqs, lens := randomLists(rng, 2000, bs)
			terms, docs, freqs = append(terms, "zzsingle"), append(docs, []uint32{1999}), append(freqs, []uint32{3})
			path := filepath.Join(t.TempDir(), "x.qp")
			writeIndexMode(t, path, c, bs, BitmapsOff, terms, docs, freqs, lens)
			x, err := Open(path)
			if err != nil {
				t.Fatalf("%s bs=%d: %v", c.Name(), bs, err)
			}
			for i := range terms {
				l, err := x.List(i)
				if err != nil {
					t.Fatal(err)
				}
				gd, gf, err := l.Decode(nil, nil)
				if err != nil {
					t.Fatalf("%s bs=%d term %d: %v", c.Name(), bs, i, err)
				}
				assertEq(t, gd, docs[i], "docs")
				assertEq(t, gf, freqs[i], "freqs")
				wantD, wantF := 0, 0
				for s := 0; s < len(docs[i]); s += bs {
					e := min(s+bs, len(docs[i]))
					base := uint32(0)
					if s > 0 {
						base = docs[i][s-1] + 1
					}
					v := blockValues(c, make([]uint32, e-s), docs[i][s:e], base)
					wantD += len(b.AppendEncodeKnownSum(nil, v))
					for j := s; j < e; j++ {
						v[j-s] = freqs[i][j] - 1
					}
					wantF += len(b.AppendEncodeKnownN(nil, v))
				}
				if len(l.DocBytes()) != wantD || len(l.FreqBytes()) != wantF {
					t.Fatalf("%s bs=%d term %d: %d/%d docID/freq bytes, want %d/%d", c.Name(), bs, i, len(l.DocBytes()), len(l.FreqBytes()), wantD, wantF)
				}
				if len(docs[i]) == 1 && len(l.DocBytes()) != 0 {
					t.Fatalf("%s: a list of one posting has %d docID bytes, want 0", c.Name(), len(l.DocBytes()))
				}
				checkMaxima(t, x, &l, gd, gf)
			}
			checkAll(t, x)
			x.Close()
		}
	}
}

// TestBoundedBlocksCorrupt damages the docID and frequency areas and the
// skip tables' last docIDs of Bounded-coded lists behind valid checksums:
// Open or decoding fails with ErrCorrupt, or the list decodes consistently;
// never a panic.
func TestBoundedBlocksCorrupt(t *testing.T) {
	for _, c := range boundedCodecs(t) {
		rng := rand.New(rand.NewSource(3))
		terms, docs, freqs, lens := randomLists(rng, 3000, 128)
		path := filepath.Join(t.TempDir(), "x.qp")
		writeIndexMode(t, path, c, 128, BitmapsOff, terms, docs, freqs, lens)
		good, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		x, err := load(path, good)
		if err != nil {
			t.Fatal(err)
		}
		post := sectionOffset(t, good, secPostings)
		end := post + len(x.post)
		for trial := 0; trial < 400; trial++ {
			bad := append([]byte(nil), good...)
			i := post + rng.Intn(end-post)
			bad[i] ^= byte(1 + rng.Intn(255))
			fixCRCs(bad)
			y, err := load(path, bad)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: flip at %d: %v does not wrap ErrCorrupt", c.Name(), i, err)
				}
				continue
			}
			checkAll(t, y)
		}
	}
}

// sectionOffset is the file offset of section kind in data.
func sectionOffset(t *testing.T, data []byte, kind uint32) int {
	le := binary.LittleEndian
	tr := data[len(data)-trailerSize:]
	toc := data[le.Uint64(tr) : le.Uint64(tr)+le.Uint64(tr[8:])]
	for i := 0; i < int(le.Uint32(toc)); i++ {
		if e := toc[4+24*i:]; le.Uint32(e) == kind {
			return int(le.Uint64(e[4:]))
		}
	}
	t.Fatalf("no section %d", kind)
	return 0
}

// TestOldBoundedRefused: a version 2 file (the previous format, whose
// interpolative and bp128ip blocks held their count and sum) with such a
// codec, in META or in a term record only, is refused with ErrOldFormat
// naming the fix, never decoded; a version 2 file of another codec opens.
func TestOldBoundedRefused(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	terms, docs, freqs, lens := randomLists(rng, 1000, 128)
	for _, c := range boundedCodecs(t) {
		path := filepath.Join(t.TempDir(), "x.qp")
		writeIndexMode(t, path, c, 128, BitmapsOff, terms, docs, freqs, lens)
		data, _ := os.ReadFile(path)
		binary.LittleEndian.PutUint32(data[8:], 2)
		_, err := load(path, data)
		if !errors.Is(err, ErrOldFormat) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "rebuild the index") || !strings.Contains(err.Error(), c.Name()) {
			t.Fatalf("%s, version 2: %v; want ErrOldFormat naming the codec and the fix", c.Name(), err)
		}
	}
	bp, _ := compress.ByName("bp128")
	path := filepath.Join(t.TempDir(), "x.qp")
	writeIndexMode(t, path, bp, 128, BitmapsOff, terms, docs, freqs, lens)
	data, _ := os.ReadFile(path)
	binary.LittleEndian.PutUint32(data[8:], 2)
	x, err := load(path, data)
	if err != nil {
		t.Fatalf("bp128, version 2: %v", err)
	}
	checkAll(t, x)
	// A term record naming interpolative in a version 2 file whose META
	// says bp128.
	off := int(uintptr(unsafe.Pointer(&x.recs[0])) - uintptr(unsafe.Pointer(&data[0])))
	bad := append([]byte(nil), data...)
	bad[off+20] = byte(compress.IDInterpolative)
	fixCRCs(bad)
	if _, err := load(path, bad); !errors.Is(err, ErrOldFormat) {
		t.Fatalf("version 2 term record with interpolative: %v; want ErrOldFormat", err)
	}
	// The same record in a version 3 file is a list whose blocks do not
	// decode as interpolative: an error (ErrCorrupt) or consistent lists.
	binary.LittleEndian.PutUint32(bad[8:], formatVersion)
	if y, err := load(path, bad); err == nil {
		checkAll(t, y)
	} else if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("version 3: %v", err)
	}
}

// TestBoundedSkipRange: a skip table whose last docIDs leave a block too
// small a range for its postings (damage behind a valid checksum that
// Open's monotonicity checks let through) is an ErrCorrupt naming the
// block when the block is decoded, not a wrapped sum.
func TestBoundedSkipRange(t *testing.T) {
	ip, _ := compress.ByName("interpolative")
	rng := rand.New(rand.NewSource(5))
	terms, docs, freqs, lens := randomLists(rng, 500, 8)
	path := filepath.Join(t.TempDir(), "x.qp")
	writeIndexMode(t, path, ip, 8, BitmapsOff, terms, docs, freqs, lens)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	x, err := load(path, data)
	if err != nil {
		t.Fatal(err)
	}
	tm := -1
	for i := range terms {
		if len(docs[i]) >= 16 && docs[i][7] > 0 {
			tm = i
			break
		}
	}
	if tm < 0 {
		t.Fatal("no list of two blocks")
	}
	post := sectionOffset(t, data, secPostings)
	skip := post + int(x.Record(tm).Offset) // block 0's skip entry: lastDoc first
	bad := append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(bad[skip:], 6) // 8 postings cannot lie in [0, 6]
	fixCRCs(bad)
	y, err := load(path, bad)
	if err != nil {
		t.Fatalf("load: %v (Open does not check block ranges)", err)
	}
	l, err := y.List(tm)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.DecodeDocs(0, make([]uint32, 8))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "block 0") || !strings.Contains(err.Error(), "cannot lie in [0, 6]") {
		t.Fatalf("DecodeDocs: %v; want ErrCorrupt naming block 0 and its range", err)
	}
}
