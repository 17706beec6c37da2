package index

import (
	"context"
	"math/rand"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/qpengine/qp/compress"
)

// TestBuildPretokenized: documents given as text, as sorted Terms and as
// TermIDs (mixed in one build, with spilling) give the index of the text
// alone; malformed pre-tokenized documents are rejected with the document
// named.
func TestBuildPretokenized(t *testing.T) {
	c, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(5))
	texts := randomTexts(rng, 2000)
	vocab := map[string]uint32{}
	var names []string
	mixed := make([]Document, len(texts))
	for i, d := range texts {
		counts := map[string]uint32{}
		for _, w := range strings.Fields(string(d.Text)) {
			counts[w]++
		}
		terms := make([]string, 0, len(counts))
		for w := range counts {
			terms = append(terms, w)
		}
		sort.Strings(terms)
		tfs := make([]uint32, len(terms))
		for j, w := range terms {
			tfs[j] = counts[w]
		}
		switch i % 3 {
		case 0:
			mixed[i] = d
		case 1:
			mixed[i] = Document{ID: d.ID, Terms: terms, TFs: tfs}
		case 2:
			type it struct{ id, tf uint32 }
			var ids []it
			for j, w := range terms {
				id, ok := vocab[w]
				if !ok {
					id = uint32(len(names))
					vocab[w] = id
					names = append(names, w)
				}
				ids = append(ids, it{id, tfs[j]})
			}
			slices.SortFunc(ids, func(a, b it) int { return int(a.id) - int(b.id) })
			doc := Document{ID: d.ID, TermIDs: []uint32{}, TFs: []uint32{}}
			for _, x := range ids {
				doc.TermIDs, doc.TFs = append(doc.TermIDs, x.id), append(doc.TFs, x.tf)
			}
			mixed[i] = doc
		}
	}
	var lastRuns int
	build := func(docs []Document, budget int64) (*Index, error) {
		path := filepath.Join(t.TempDir(), "x.qp")
		st, err := Build(context.Background(), &sliceSource{docs: docs}, BuildOptions{
			Out: path, DocCodec: c, NewAnalyzer: fieldsAnalyzer, MemBudget: budget, Workers: 3,
			TermName: func(id uint32) string { return names[id] },
		})
		if err != nil {
			return nil, err
		}
		lastRuns = st.Runs
		return Open(path)
	}
	ref, err := build(append([]Document(nil), texts...), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	got, err := build(mixed, 30000)
	if err != nil {
		t.Fatal(err)
	}
	if lastRuns < 6 {
		t.Fatalf("%d spilled runs, want several from the text inverter and the id shards", lastRuns)
	}
	if got.NumTerms() != ref.NumTerms() || !slices.Equal(got.DocLens(), ref.DocLens()) {
		t.Fatalf("terms %d vs %d, or lengths differ", got.NumTerms(), ref.NumTerms())
	}
	for i := range ref.NumTerms() {
		l1, _ := ref.List(i)
		l2, _ := got.List(i)
		d1, f1, err1 := l1.Decode(nil, nil)
		d2, f2, err2 := l2.Decode(nil, nil)
		if err1 != nil || err2 != nil || ref.Term(i) != got.Term(i) || !slices.Equal(d1, d2) || !slices.Equal(f1, f2) {
			t.Fatalf("term %d (%q): lists differ", i, ref.Term(i))
		}
	}
	for _, c := range []struct {
		doc  Document
		want string
	}{
		{Document{ID: "u", Terms: []string{"b", "a"}, TFs: []uint32{1, 1}}, "not strictly ascending"},
		{Document{ID: "z", Terms: []string{"a"}, TFs: []uint32{0}}, "frequency 0"},
		{Document{ID: "e", Terms: []string{""}, TFs: []uint32{1}}, "empty term"},
		{Document{ID: "n", Terms: []string{"a"}, TFs: nil}, "frequencies"},
		{Document{ID: "i", TermIDs: []uint32{3, 1}, TFs: []uint32{1, 1}}, "not strictly ascending"},
		{Document{ID: "b", TermIDs: []uint32{1}, Terms: []string{"a"}, TFs: []uint32{1}}, "both"},
	} {
		docs := []Document{texts[0], c.doc}
		_, err := build(docs, 1<<30)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `"`+c.doc.ID+`"`) {
			t.Errorf("%+v: err = %v, want %q naming the document", c.doc, err, c.want)
		}
	}
	names = nil
	path := filepath.Join(t.TempDir(), "y.qp")
	_, err = Build(context.Background(), &sliceSource{docs: []Document{{ID: "x", TermIDs: []uint32{0}, TFs: []uint32{1}}}}, BuildOptions{Out: path, DocCodec: c, NewAnalyzer: fieldsAnalyzer})
	if err == nil || !strings.Contains(err.Error(), "TermName") {
		t.Errorf("TermIDs without TermName: err = %v", err)
	}
}
