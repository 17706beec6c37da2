package qp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/score"
)

// docs is a tiny English collection.
var docs = []string{
	"Parallel sorting algorithms on graphics processors",
	"Sorting networks and parallel merge sort",
	"Inverted index compression with PForDelta and Elias-Fano",
	"Query processing over compressed inverted indexes",
	"Parallel query processing on graphics processors: GPU list intersection",
	"A survey of sorting algorithms",
	"Compression of posting lists by binary packing",
	"Top-k retrieval with MaxScore and BlockMax-WAND",
}

type docSlice struct{ i int }

func (s *docSlice) Next() (*index.Document, error) {
	if s.i == len(docs) {
		return nil, io.EOF
	}
	s.i++
	return &index.Document{ID: fmt.Sprintf("d%d", s.i), Text: []byte(docs[s.i-1])}, nil
}

// buildIndex indexes docs into dir as `qp index --stem english --stopwords
// english` does and returns the index's path.
func buildIndex(dir string) (string, error) {
	aopt := analysis.Options{Stem: "english", Stopwords: "english"}
	if _, err := analysis.New(aopt); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "tiny.qp")
	_, err := index.Build(context.Background(), &docSlice{}, index.BuildOptions{
		Out: path, BlockSize: 4, DocCodec: must(compress.ByName("bp128")), TempDir: dir,
		NewAnalyzer: func() index.Analyzer {
			a, _ := analysis.New(aopt)
			return a.AppendTokens
		},
		Meta: index.Meta{Stem: aopt.Normalize().Stem, Stopwords: aopt.Normalize().Stopwords},
	})
	return path, err
}

func writeIndex(t testing.TB) string {
	t.Helper()
	path, err := buildIndex(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpenSearchCPU(t *testing.T) {
	path := writeIndex(t)
	var notes []string
	e, err := qp.Open(path, qp.Options{Device: qp.CPU, Notice: func(s string) { notes = append(notes, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.GPU() != nil || e.Backend().Name() != "cpu" || len(notes) != 0 {
		t.Fatalf("device cpu: backend %s, gpu %v, notices %q", e.Backend().Name(), e.GPU(), notes)
	}
	// The analyzer comes from the index: "Sorted" stems to "sort".
	res, err := e.Search(context.Background(), qp.Request{Text: "Sorted parallel", Mode: engine.And, K: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range res.Hits {
		got = append(got, h.DocID)
		if h.Score <= 0 || e.Index().ExternalID(h.Doc) != h.DocID {
			t.Fatalf("hit %+v", h)
		}
	}
	if strings.Join(got, ",") != "d1,d2" && strings.Join(got, ",") != "d2,d1" {
		t.Fatalf("AND sorted parallel = %v, want d1 and d2", got)
	}
	if _, err := e.Search(context.Background(), qp.Request{Text: "the of", Mode: engine.Or, K: 10}); !errors.Is(err, qp.ErrNoTerms) {
		t.Fatalf("stop words only: err %v, want ErrNoTerms", err)
	}
	if _, err := e.Search(context.Background(), qp.Request{Text: "sort", Mode: engine.Or, K: 0}); err == nil {
		t.Fatal("k 0 accepted")
	}
}

func TestOpenErrors(t *testing.T) {
	path := writeIndex(t)
	if _, err := qp.Open(path, qp.Options{Device: "tpu"}); err == nil || !strings.Contains(err.Error(), "tpu") {
		t.Fatalf("device tpu: %v", err)
	}
	if _, err := qp.Open(filepath.Join(t.TempDir(), "none.qp"), qp.Options{Device: qp.CPU}); err == nil {
		t.Fatal("missing index opened")
	}
	bad := score.Params{K1: 0.9, B: 2}
	if _, err := qp.Open(path, qp.Options{Device: qp.CPU, Params: &bad}); err == nil {
		t.Fatal("b = 2 accepted")
	}
	// Auto without a usable GPU says why once and runs on the CPU; with a
	// GPU it names it. Either way exactly one notice.
	var notes []string
	e, err := qp.Open(path, qp.Options{Notice: func(s string) { notes = append(notes, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if len(notes) != 1 {
		t.Fatalf("auto: notices %q, want one", notes)
	}
	if e.GPU() == nil && !strings.Contains(notes[0], "using the CPU backend") {
		t.Fatalf("auto on the CPU: notice %q", notes[0])
	}
}

func TestParams(t *testing.T) {
	path := writeIndex(t)
	ctx := context.Background()
	r := qp.Request{Text: "sorting processors", Mode: engine.Or, K: 3}
	def, _ := qp.Open(path, qp.Options{Device: qp.CPU})
	a, err := def.Search(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	// A negative field keeps the index's value: the same scores.
	keep, err := qp.Open(path, qp.Options{Device: qp.CPU, Params: &score.Params{K1: -1, B: -1}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := keep.Search(ctx, r)
	if fmt.Sprint(a.Hits) != fmt.Sprint(b.Hits) {
		t.Fatalf("params -1,-1 changed results: %v vs %v", a.Hits, b.Hits)
	}
	chg, err := qp.Open(path, qp.Options{Device: qp.CPU, Params: &score.Params{K1: 2, B: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if chg.Index().Params() != (score.Params{K1: 2, B: 0.4}) {
		t.Fatalf("params = %+v, want k1 2, b 0.4", chg.Index().Params())
	}
	c, _ := chg.Search(ctx, r)
	if fmt.Sprint(a.Hits) == fmt.Sprint(c.Hits) {
		t.Fatal("k1 2 gave the scores of k1 0.9")
	}
}

// TestStream checks that Stream answers every query once, in order, with
// the results of one SearchBatch, for chunk sizes that divide the batch and
// that do not, and that emit's error stops it.
func TestStream(t *testing.T) {
	path := writeIndex(t)
	e, err := qp.Open(path, qp.Options{Device: qp.CPU, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"sorting", "parallel gpu", "compression lists", "query", "the", "maxscore wand", "inverted index"}
	var qs []engine.Query
	for i := range 50 {
		qs = append(qs, e.Query(qp.Request{ID: fmt.Sprint(i), Text: texts[i%len(texts)], Mode: engine.Mode(i % 3), K: 1 + i%5}))
	}
	ctx := context.Background()
	want := make([]engine.Response, len(qs))
	if err := e.SearchBatch(ctx, qs, engine.Options{}, want); err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct{ chunk, inFlight int }{{1, 1}, {7, 1}, {50, 1}, {64, 1}, {0, 1}, {1, 2}, {7, 2}, {7, 3}, {50, 2}, {64, 3}} {
		chunk := run.chunk
		next := 0
		so := qp.StreamOptions{Chunk: chunk, InFlight: run.inFlight}
		err := qp.StreamWith(ctx, e.Backend(), qs, engine.Options{}, so, inOrder(want, chunk, &next))
		if err != nil || next != len(qs) {
			t.Fatalf("chunk %d, %d in flight: %v after %d of %d queries", chunk, run.inFlight, err, next, len(qs))
		}
	}
	for _, f := range []int{1, 2, 3} {
		checkStreamStops(t, ctx, func(ctx context.Context, emit func(int, []engine.Response) error) error {
			return qp.StreamWith(ctx, e.Backend(), qs, engine.Options{}, qp.StreamOptions{Chunk: 5, InFlight: f}, emit)
		})
	}
}

// skewBackend answers a chunk after a delay that falls with its first
// query's index (later chunks finish first when several are in flight),
// and fails the batch holding query failAt (-1: none).
type skewBackend struct {
	engine.Backend
	qs     []engine.Query
	failAt int
}

var errSkew = errors.New("skew: batch failed")

func (b skewBackend) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	lo := slices.IndexFunc(b.qs, func(q engine.Query) bool { return q.ID == qs[0].ID })
	time.Sleep(time.Duration(len(b.qs)-lo) * 20 * time.Microsecond)
	if b.failAt >= lo && b.failAt < lo+len(qs) {
		return errSkew
	}
	return b.Backend.SearchBatch(ctx, qs, opt, out)
}

// TestStreamInFlight: with several chunks searched at once and later
// chunks finishing first, emit still sees every chunk once, in order,
// with the backend's answers; a failed batch ends the stream with its
// error after the chunks before it.
func TestStreamInFlight(t *testing.T) {
	path := writeIndex(t)
	e, err := qp.Open(path, qp.Options{Device: qp.CPU, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	var qs []engine.Query
	for i := range 60 {
		qs = append(qs, e.Query(qp.Request{ID: fmt.Sprint(i), Text: "parallel sorting", Mode: engine.Or, K: 2}))
	}
	ctx := context.Background()
	want := make([]engine.Response, len(qs))
	if err := e.SearchBatch(ctx, qs, engine.Options{}, want); err != nil {
		t.Fatal(err)
	}
	for _, failAt := range []int{-1, 0, 33, 59} {
		for _, f := range []int{2, 3, 4} {
			be := skewBackend{e.Backend(), qs, failAt}
			next := 0
			err := qp.StreamWith(ctx, be, qs, engine.Options{}, qp.StreamOptions{Chunk: 4, InFlight: f}, inOrder(want, 4, &next))
			switch {
			case failAt < 0 && (err != nil || next != len(qs)):
				t.Fatalf("%d in flight: %v after %d of %d queries", f, err, next, len(qs))
			case failAt >= 0 && (!errors.Is(err, errSkew) || next != failAt/4*4):
				t.Fatalf("%d in flight, failing at %d: %v after %d queries, want %v after %d", f, failAt, err, next, errSkew, failAt/4*4)
			}
		}
	}
}

// inOrder returns a stream's emit that checks each chunk: it starts where
// the last one ended (*next, which it advances), holds at most chunk
// responses (chunk > 0), and each answer has want's results, and an error
// where want has one (the processors word errors each their own way).
func inOrder(want []engine.Response, chunk int, next *int) func(int, []engine.Response) error {
	return func(lo int, out []engine.Response) error {
		if lo != *next || len(out) == 0 || (chunk > 0 && len(out) > chunk) {
			return fmt.Errorf("chunk at %d of %d responses, want at %d", lo, len(out), *next)
		}
		for i := range out {
			w := &want[lo+i]
			if fmt.Sprint(out[i].Results) != fmt.Sprint(w.Results) || (out[i].Err == nil) != (w.Err == nil) {
				return fmt.Errorf("query %d: %v %v, want %v %v", lo+i, out[i].Results, out[i].Err, w.Results, w.Err)
			}
		}
		*next = lo + len(out)
		return nil
	}
}

// checkStreamStops checks a stream (stream: the queries in chunks to emit)
// on its two ways out: the first emit's error ends it with that error
// after one call, and a cancelled context ends it with context.Canceled.
func checkStreamStops(t *testing.T, ctx context.Context, stream func(context.Context, func(int, []engine.Response) error) error) {
	t.Helper()
	stop := errors.New("stop")
	calls := 0
	err := stream(ctx, func(int, []engine.Response) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("emit error: %v after %d calls, want stop after 1", err, calls)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := stream(cctx, func(int, []engine.Response) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

func Example() {
	// A tiny index of eight titles (qp index does the same from files).
	dir, err := os.MkdirTemp("", "qp-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path, err := buildIndex(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := qp.Open(path, qp.Options{Device: qp.CPU})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	res, err := e.Search(context.Background(), qp.Request{Text: "parallel sorting", Mode: engine.Or, K: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, h := range res.Hits {
		fmt.Printf("%d %s %.4f\n", i+1, h.DocID, h.Score)
	}
	// Output:
	// 1 d2 2.2127
	// 2 d1 1.9220
	// 3 d6 1.0335
}

func must[T any](v T, err error) T {
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return v
}

// TestCloseReleasesIndex: Close of an Engine that Open made closes its
// index (a later List is a BUG panic); an Engine made by New over an index
// the caller opened leaves that index open.
func TestCloseReleasesIndex(t *testing.T) {
	path := writeIndex(t)
	e, err := qp.Open(path, qp.Options{Device: qp.CPU})
	if err != nil {
		t.Fatal(err)
	}
	x := e.Index()
	f, err := qp.New(x, qp.Options{Device: qp.CPU})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := x.List(0); err != nil {
		t.Fatalf("index closed by an Engine that did not open it: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "used after Close") {
			t.Errorf("List after Engine.Close: recovered %v", r)
		}
	}()
	x.List(0)
}
