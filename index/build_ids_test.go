package index

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/qpengine/qp/compress"
)

// idDocs converts texts into documents pre-tokenized by term ids. Ids are
// given in order of first occurrence, so that id order and name order
// differ (the name-range merge must restore name order).
func idDocs(texts []Document) (docs []Document, names []string) {
	vocab := map[string]uint32{}
	for _, d := range texts {
		counts := map[uint32]uint32{}
		for _, w := range strings.Fields(string(d.Text)) {
			id, ok := vocab[w]
			if !ok {
				id = uint32(len(names))
				vocab[w] = id
				names = append(names, w)
			}
			counts[id]++
		}
		doc := Document{ID: d.ID, TermIDs: []uint32{}, TFs: []uint32{}}
		for id := range counts {
			doc.TermIDs = append(doc.TermIDs, id)
		}
		slices.Sort(doc.TermIDs)
		for _, id := range doc.TermIDs {
			doc.TFs = append(doc.TFs, counts[id])
		}
		docs = append(docs, doc)
	}
	return docs, names
}

// TestBuildTermIDsParallelMerge: a build of documents pre-tokenized by term
// ids (the sort-based shards and the name-range merge of build_ids.go)
// writes byte-identical index files whatever the number of workers and
// the memory budget (one run per shard or many), and whether the merge
// reads the runs as mapped or bounded (runPages: short lists read, long
// ones released from the mapping once read), and the same
// lists as the text build, in input and in random docID order.
func TestBuildTermIDsParallelMerge(t *testing.T) {
	c, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	texts := randomTexts(rand.New(rand.NewSource(9)), 3000)
	docs, names := idDocs(texts)
	dir := t.TempDir()
	build := func(in []Document, workers int, budget int64, order, name string) (string, BuildStats) {
		path := filepath.Join(dir, name)
		st, err := Build(context.Background(), &sliceSource{docs: slices.Clone(in)}, BuildOptions{
			Out: path, DocCodec: c, NewAnalyzer: fieldsAnalyzer, MemBudget: budget, Workers: workers,
			DocIDOrder: order, Seed: 3, Meta: Meta{Created: "fixed"}, TermName: func(id uint32) string { return names[id] },
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return path, st
	}
	for _, order := range []string{"input", "random"} {
		refPath, _ := build(texts, 2, 1<<30, order, order+"-text.qp")
		ref, err := Open(refPath)
		if err != nil {
			t.Fatal(err)
		}
		var first []byte
		for _, cfg := range []struct {
			workers int
			budget  int64
			release bool // release the runs' pages at every read (runPages)
		}{{1, 1 << 30, false}, {3, 20000, false}, {8, 1 << 30, false}, {8, 5000, false}, {3, 20000, true}} {
			var pages *runPages
			r := minRelease
			if cfg.release {
				minRelease = 16 // long lists from the mapping, short ones read
				onRunPages = func(p *runPages) { pages = p }
			}
			path, st := build(docs, cfg.workers, cfg.budget, order, fmt.Sprintf("%s-%d-%d-%v.qp", order, cfg.workers, cfg.budget, cfg.release))
			minRelease, onRunPages = r, nil
			if cfg.release && (pages == nil || !pages.bounded || pages.preads.Load() == 0 ||
				(runtime.GOOS == "linux" && pages.released.Load() == 0)) {
				t.Errorf("budget %d, runs bounded: %+v", cfg.budget, pages)
			}
			if cfg.budget < 1<<20 && st.Runs < 2*cfg.workers {
				t.Errorf("%d workers, budget %d: %d runs, want several per shard", cfg.workers, cfg.budget, st.Runs)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			sameLists(t, ref, got)
			if first == nil {
				first = b
			} else if !bytes.Equal(b, first) {

				t.Errorf("%s order, %d workers, budget %d: index differs from 1 worker's", order, cfg.workers, cfg.budget)
			}
		}
	}
}

// sameLists fails unless a and b have the same terms, lengths, lists and
// frequencies.
func sameLists(t *testing.T, a, b *Index) {
	t.Helper()
	if a.NumTerms() != b.NumTerms() || !slices.Equal(a.DocLens(), b.DocLens()) {
		t.Fatalf("terms %d vs %d, or lengths differ", a.NumTerms(), b.NumTerms())
	}
	for i := range a.NumTerms() {
		l1, _ := a.List(i)
		l2, _ := b.List(i)
		d1, f1, err1 := l1.Decode(nil, nil)
		d2, f2, err2 := l2.Decode(nil, nil)
		if err1 != nil || err2 != nil || a.Term(i) != b.Term(i) || !slices.Equal(d1, d2) || !slices.Equal(f1, f2) {
			t.Fatalf("term %d (%q vs %q) differs (%v, %v)", i, a.Term(i), b.Term(i), err1, err2)
		}
	}
}

// TestBuildTermIDsDuplicateName: two term ids named alike are an error
// naming the name, whether they fall in one shard or in two.
func TestBuildTermIDsDuplicateName(t *testing.T) {
	c, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 3} { // ids 1 and 3: one shard, then two
		docs := []Document{
			{ID: "a", TermIDs: []uint32{0, 1, 2}, TFs: []uint32{1, 1, 1}},
			{ID: "b", TermIDs: []uint32{1, 3}, TFs: []uint32{2, 1}},
		}
		names := []string{"x", "dup", "y", "dup"}
		_, err = Build(context.Background(), &sliceSource{docs: docs}, BuildOptions{
			Out: filepath.Join(t.TempDir(), "x.qp"), DocCodec: c, NewAnalyzer: fieldsAnalyzer, Workers: workers,
			TermName: func(id uint32) string { return names[id] },
		})
		if err == nil || !strings.Contains(err.Error(), `"dup"`) {
			t.Errorf("%d workers: err = %v, want the duplicate name", workers, err)
		}
	}
}
