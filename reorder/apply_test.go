package reorder

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/topk"
)

// testCollection writes an index of n documents with planted topics: each
// document draws most terms from its topic's 60 terms and a few from a
// Zipf-like global vocabulary, with tf 1..4; external ids "doc-<i>" and a
// stored field naming the document. Documents are in random topic order.
// Unlike real text the lengths are narrow (20-40 tokens) and there are few
// distinct terms (20 topics × 60 + 300).
func testCollection(t *testing.T, path string, n int, codec string, bitmaps index.BitmapMode) *index.Index {
	t.Helper()
	r := rand.New(rand.NewPCG(11, uint64(n)))
	const topics, topicVocab, global = 20, 60, 300
	lists := map[string]map[uint32]uint32{}
	lens := make([]uint32, n)
	ids := make([]string, n)
	stored := make([][]byte, n)
	for d := range n {
		topic := r.IntN(topics)
		ids[d] = fmt.Sprintf("doc-%d", d)
		stored[d] = fmt.Appendf(nil, `{"name":"document %d","topic":%d}`, d, topic)
		k := 8 + r.IntN(8)
		for range k {
			var term string
			if r.IntN(4) == 0 {
				term = fmt.Sprintf("g%03d", int(float64(global)*r.Float64()*r.Float64()))
			} else {
				term = fmt.Sprintf("t%02d-%02d", topic, r.IntN(topicVocab))
			}
			tf := uint32(1 + r.IntN(4))
			if lists[term] == nil {
				lists[term] = map[uint32]uint32{}
			}
			lists[term][uint32(d)] += tf
			lens[d] += tf
		}
	}
	dc, err := compress.ByName(codec)
	if err != nil {
		t.Fatal(err)
	}
	x, err := ref.Postings(lists).Collection(lens).WriteIndexWith(path, index.WriterOptions{BlockSize: 32, DocCodec: dc, DocIDs: ids,
		Stored: stored, Bitmaps: bitmaps, Meta: index.Meta{Stem: "english", Source: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestRunKeepsDocumentsAndLists(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.qp"), filepath.Join(dir, "out.qp")
	x := testCollection(t, in, 3000, "pfordelta", index.BitmapsAuto)
	st, err := Run(context.Background(), in, out, Config{Options: Options{Workers: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if st.CostAfter >= st.CostBefore {
		t.Errorf("bits per gap %.3f -> %.3f", st.CostBefore, st.CostAfter)
	}
	y, err := index.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	m, n := x.Meta, y.Meta
	if n.DocIDOrder != "bp" || n.DocCodec != m.DocCodec || n.FreqCodec != m.FreqCodec || n.BlockSize != m.BlockSize ||
		n.Bitmaps != m.Bitmaps || n.K1 != m.K1 || n.B != m.B || n.Stem != m.Stem || n.Source != m.Source ||
		n.Docs != m.Docs || n.Terms != m.Terms || n.Postings != m.Postings || n.Tokens != m.Tokens {
		t.Fatalf("META changed:\n%+v\n%+v", m, n)
	}
	// newToOld through the external ids, which must be a permutation.
	old := map[string]uint32{}
	for d := range uint32(x.NumDocs()) {
		old[x.ExternalID(d)] = d
	}
	newToOld := make([]uint32, y.NumDocs())
	moved := 0
	for d := range uint32(y.NumDocs()) {
		o, ok := old[y.ExternalID(d)]
		if !ok {
			t.Fatalf("new doc %d has unknown id %q", d, y.ExternalID(d))
		}
		delete(old, y.ExternalID(d))
		newToOld[d] = o
		if o != d {
			moved++
		}
		if y.DocLens()[d] != x.DocLens()[o] || string(y.Stored(d)) != string(x.Stored(o)) {
			t.Fatalf("new doc %d (old %d): length %d / %d, stored %s / %s", d, o, y.DocLens()[d], x.DocLens()[o], y.Stored(d), x.Stored(o))
		}
	}
	if moved < x.NumDocs()/2 {
		t.Errorf("only %d of %d documents moved", moved, x.NumDocs())
	}
	for term := range x.NumTerms() {
		if x.Term(term) != y.Term(term) {
			t.Fatalf("term %d: %q / %q", term, x.Term(term), y.Term(term))
		}
		lx, _ := x.List(term)
		ly, _ := y.List(term)
		dx, fx, err := lx.Decode(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		dy, fy, err := ly.Decode(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[uint32]uint32{}
		for i, d := range dx {
			want[d] = fx[i]
		}
		for i, d := range dy {
			if want[newToOld[d]] != fy[i] {
				t.Fatalf("term %q: new doc %d (old %d) tf %d, want %d", x.Term(term), d, newToOld[d], fy[i], want[newToOld[d]])
			}
		}
		if len(dy) != len(dx) {
			t.Fatalf("term %q: %d postings, want %d", x.Term(term), len(dy), len(dx))
		}
	}
}

// TestRunSameResults: the same queries give the same external ids and
// scores on the CPU engine before and after reordering, up to ties at the
// k-th score (which docIDs break).
func TestRunSameResults(t *testing.T) {
	for _, codec := range []string{"bp128", "eliasfano"} {
		t.Run(codec, func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.qp"), filepath.Join(dir, "out.qp")
			x := testCollection(t, in, 4000, codec, index.BitmapsAuto)
			if _, err := Run(context.Background(), in, out, Config{Options: Options{Seed: 3}}); err != nil {
				t.Fatal(err)
			}
			y, err := index.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			ex, ey := engine.New(x), engine.New(y)
			r := rand.New(rand.NewPCG(5, 5))
			checked := 0
			for q := range 300 {
				var terms []string
				for range 1 + r.IntN(3) {
					if r.IntN(3) == 0 {
						terms = append(terms, fmt.Sprintf("g%03d", r.IntN(40)))
					} else {
						topic := r.IntN(20)
						terms = append(terms, fmt.Sprintf("t%02d-%02d", topic, r.IntN(12)))
					}
				}
				for _, mode := range []engine.Mode{engine.And, engine.Or} {
					for _, opt := range []engine.Options{{}, {OrAlgo: engine.OrBMW}, {OrAlgo: engine.OrTAAT, AndAlgo: engine.AndMerge}} {
						query := engine.Query{ID: fmt.Sprint(q), Terms: terms, Mode: mode, K: 10}
						rx, _, err := ex.Search(query, opt)
						if err != nil {
							t.Fatal(err)
						}
						rx = slices.Clone(rx) // the engine reuses its result buffer
						ry, _, err := ey.Search(query, opt)
						if err != nil {
							t.Fatal(err)
						}
						all := query
						all.K = x.NumDocs()
						full, _, err := ex.Search(all, engine.Options{OrAlgo: engine.OrTAAT, AndAlgo: engine.AndMerge})
						if err != nil {
							t.Fatal(err)
						}
						if err := sameResults(x, y, rx, ry, full); err != nil {
							t.Fatalf("%v query %v %+v: %v", mode, terms, opt, err)
						}
						checked += len(rx)
					}
				}
			}
			if checked < 3000 {
				t.Fatalf("only %d results compared", checked)
			}
		})
	}
}

// sameResults compares top-k lists a (index x) and b (index y) by external
// id and score: the scores must be equal rank by rank, the documents above
// the k-th score equal as sets per score, and those at the k-th score must
// score the same in x (all: x's exhaustive result).
func sameResults(x, y *index.Index, a, b, all []topk.Result) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d results before, %d after", len(a), len(b))
	}
	if len(a) == 0 {
		return nil
	}
	for i := range a {
		if a[i].Score != b[i].Score {
			return fmt.Errorf("rank %d: score %v before, %v after", i, a[i].Score, b[i].Score)
		}
	}
	kth := a[len(a)-1].Score
	ids := func(x *index.Index, rs []topk.Result) map[string]float32 {
		m := map[string]float32{}
		for _, r := range rs {
			if r.Score > kth {
				m[x.ExternalID(r.Doc)] = r.Score
			}
		}
		return m
	}
	ia, ib := ids(x, a), ids(y, b)
	for id, s := range ia {
		if ib[id] != s {
			return fmt.Errorf("document %q scores %v before, %v after", id, s, ib[id])
		}
	}
	full := map[string]float32{}
	for _, r := range all {
		full[x.ExternalID(r.Doc)] = r.Score
	}
	for _, r := range b {
		if s, ok := full[y.ExternalID(r.Doc)]; !ok || s != r.Score {
			return fmt.Errorf("document %q scores %v after, %v (found %v) before", y.ExternalID(r.Doc), r.Score, s, ok)
		}
	}
	return nil
}

func TestRunRefusesSameFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.qp")
	testCollection(t, in, 100, "bp128", index.BitmapsOff)
	before, _ := os.ReadFile(in)
	link := filepath.Join(dir, "link.qp")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{in, filepath.Join(dir, ".", "in.qp"), link} {
		if _, err := Run(context.Background(), in, out, Config{}); !errors.Is(err, ErrSameFile) {
			t.Errorf("out %s: err %v, want ErrSameFile", out, err)
		}
	}
	after, _ := os.ReadFile(in)
	if !slices.Equal(before, after) {
		t.Error("input changed")
	}
	if _, err := Run(context.Background(), filepath.Join(dir, "missing.qp"), filepath.Join(dir, "o.qp"), Config{}); err == nil {
		t.Error("missing input accepted")
	}
}

func TestRunCancelledLeavesNoOutput(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.qp"), filepath.Join(dir, "out.qp")
	x := testCollection(t, in, 500, "bp128", index.BitmapsOff)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, in, out, Config{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	// Cancelled while writing: the partial file is removed.
	if _, err := WritePermuted(ctx, x, Identity(x.NumDocs()), out, WriteOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("WritePermuted: err %v, want context.Canceled", err)
	}
	for _, p := range []string{out, out + ".tmp"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists after cancellation (%v)", p, err)
		}
	}
}
