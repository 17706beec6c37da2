package index

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/qpengine/qp/compress"
)

// TestOpensRoaringV1Index: testdata/roaring-v1.qp was written by qp built
// with roaring v1.9.4 (main 881909d: `qp index --in roaring-v1.jsonl --out
// roaring-v1.qp --bitmaps always --threads 1`), every list a bitmap. Its
// term "alpha" (docIDs 0, 1, 2) is a run container there: v1's RunOptimize
// takes a run where it ties with an array in size, v2 keeps the array, and
// the check that compared the bytes with this library's re-encoding refused
// such indexes ("not in canonical form"). It must open, and every list hold
// exactly the postings of roaring-v1.jsonl (docIDs in input order, tf = the
// word's count in the text).
func TestOpensRoaringV1Index(t *testing.T) {
	x, err := Open("testdata/roaring-v1.qp")
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	want := jsonlPostings(t, "testdata/roaring-v1.jsonl")
	if x.NumTerms() != len(want) || x.Meta.BitmapLists != uint64(len(want)) {
		t.Fatalf("%d terms, %d bitmap lists; the collection has %d terms", x.NumTerms(), x.Meta.BitmapLists, len(want))
	}
	for term, p := range want {
		id, ok := x.Lookup(term)
		if !ok {
			t.Fatalf("term %q missing", term)
		}
		l, err := x.List(id)
		if err != nil {
			t.Fatal(err)
		}
		docs, freqs, err := l.Decode(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		assertEq(t, docs, p[0], term+" docs")
		assertEq(t, freqs, p[1], term+" freqs")
		if !l.Bitmap().Equals(roaring.BitmapOf(p[0]...)) {
			t.Fatalf("%s: bitmap differs", term)
		}
	}
	id, _ := x.Lookup("alpha")
	l, _ := x.List(id)
	v1 := l.DocBytes()
	if cookie := binary.LittleEndian.Uint32(v1); cookie&0xffff != roaringCookieRuns || v1[4] != 1 {
		t.Fatalf("alpha is not a run container in the fixture (% x): it no longer tests v1's encoding", v1)
	}
	var now bytes.Buffer
	bm := roaring.BitmapOf(0, 1, 2)
	bm.RunOptimize()
	if _, err := bm.WriteTo(&now); err != nil {
		t.Fatal(err)
	}
	t.Logf("alpha: v1 wrote % x; this roaring writes % x", v1, now.Bytes())
}

// jsonlPostings reads a JSON Lines collection of {"id","text"} whose text is
// lower-case words separated by spaces: term -> [docIDs, tfs].
func jsonlPostings(t *testing.T, path string) map[string][2][]uint32 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][2][]uint32{}
	sc := bufio.NewScanner(f)
	for d := uint32(0); sc.Scan(); d++ {
		var doc struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		tf := map[string]uint32{}
		for _, w := range strings.Fields(doc.Text) {
			tf[w]++
		}
		for w, n := range tf {
			p := out[w]
			p[0], p[1] = append(p[0], d), append(p[1], n)
			out[w] = p
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBitmapBuildReproducible: with bitmap lists (auto and always) the
// builder writes byte-identical files for the same documents whatever the
// number of workers and the memory budget (in-memory or spilled runs): the
// roaring encoding of a docID set depends on the set only.
func TestBitmapBuildReproducible(t *testing.T) {
	c, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	texts := randomTexts(rand.New(rand.NewSource(21)), 4000)
	for i := range texts {
		if i < 3000 { // one run: a bitmap smaller than its blocks
			texts[i].Text = append([]byte("often "), texts[i].Text...)
		}
	}
	dir := t.TempDir()
	for _, mode := range []BitmapMode{BitmapsAuto, BitmapsAlways} {
		var first []byte
		for _, cfg := range []struct {
			workers int
			budget  int64
		}{{1, 1 << 30}, {4, 1 << 30}, {3, 20000}} {
			path := filepath.Join(dir, fmt.Sprintf("%s-%d-%d.qp", mode, cfg.workers, cfg.budget))
			_, err := Build(context.Background(), &sliceSource{docs: slices.Clone(texts)}, BuildOptions{
				Out: path, DocCodec: c, NewAnalyzer: fieldsAnalyzer, MemBudget: cfg.budget, Workers: cfg.workers,
				Bitmaps: mode, Meta: Meta{Created: "fixed"},
			})
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				x, err := Open(path)
				if err != nil {
					t.Fatal(err)
				}
				if x.Meta.BitmapLists == 0 {
					t.Fatalf("%s: no bitmap lists", mode)
				}
				x.Close()
				first = b
			} else if !bytes.Equal(b, first) {
				t.Errorf("bitmaps %s, %d workers, budget %d: index differs from 1 worker's", mode, cfg.workers, cfg.budget)
			}
		}
	}
}
