package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
)

// testDocs is a small English collection with stored fields. Unlike real
// data it is tiny (every list is one block of 4), so batches are cheap and
// results easy to check; the equality tests compare with the CPU engine,
// not with hard-coded results.
var testDocs = []string{
	"Parallel sorting algorithms on graphics processors",
	"Sorting networks and parallel merge sort",
	"Inverted index compression with PForDelta and Elias-Fano",
	"Query processing over compressed inverted indexes",
	"Parallel query processing on graphics processors: GPU list intersection",
	"A survey of sorting algorithms",
	"Compression of posting lists by binary packing",
	"Top-k retrieval with MaxScore and BlockMax-WAND",
	"Batch query processing on the GPU with a waiting window",
	"Index compression and query processing in search engines",
}

// testQueries cover AND hits, AND misses, OR, unknown terms and repeats.
var testQueries = []string{
	"parallel sorting", "query processing", "compression", "gpu", "sorting algorithms survey",
	"inverted index compression", "unknownword", "parallel unknownword", "processing processing query",
	"graphics processors parallel query", "maxscore wand", "batch window",
}

type docSlice struct{ i int }

func (s *docSlice) Next() (*index.Document, error) {
	if s.i == len(testDocs) {
		return nil, io.EOF
	}
	s.i++
	st, _ := json.Marshal(map[string]string{"title": testDocs[s.i-1]})
	return &index.Document{ID: fmt.Sprintf("doc%d", s.i), Text: []byte(testDocs[s.i-1]), Stored: st}, nil
}

// testEngine builds the test collection (Porter stemming, English stop
// words, stored fields) and opens it on the CPU.
func testEngine(t testing.TB) *qp.Engine { t.Helper(); return testEngineOn(t, qp.CPU) }

// testEngineOn is testEngine on the device dev.
func testEngineOn(t testing.TB, dev qp.Device) *qp.Engine {
	t.Helper()
	dir := t.TempDir()
	aopt := analysis.Options{Stem: "english", Stopwords: "english"}
	path := filepath.Join(dir, "t.qp")
	codec, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	_, err = index.Build(context.Background(), &docSlice{}, index.BuildOptions{
		Out: path, BlockSize: 4, DocCodec: codec, TempDir: dir,
		NewAnalyzer: func() index.Analyzer {
			a, _ := analysis.New(aopt)
			return a.AppendTokens
		},
		Meta: index.Meta{Stem: aopt.Normalize().Stem, Stopwords: aopt.Normalize().Stopwords},
	})
	if err != nil {
		t.Fatal(err)
	}
	e, err := qp.Open(path, qp.Options{Device: dev, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// newTestServer returns a server over e with cfg, behind an httptest
// server on loopback.
func newTestServer(t testing.TB, e *qp.Engine, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close() })
	return s, hs
}

// serveTest returns a server over e with cfg and its base URL: behind an
// httptest server, or, with cfg.LeanHTTP, served (Server.Serve, the lean
// path) on a loopback listener, shut down at the test's end.
func serveTest(t testing.TB, e *qp.Engine, cfg Config) (*Server, string) {
	t.Helper()
	if !cfg.LeanHTTP {
		s, hs := newTestServer(t, e, cfg)
		return s, hs.URL
	}
	s, ln := leanListener(t, e, cfg)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, "http://" + ln.Addr().String()
}

// leanListener returns a server over e with cfg and a loopback listener
// for its Serve (not started), for tests of Server.Serve (the lean path or
// net/http's).
func leanListener(t testing.TB, e *qp.Engine, cfg Config) (*Server, net.Listener) {
	t.Helper()
	s, err := New(e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return s, ln
}

// post sends body to url and returns the status, the decoded body (into
// out when it is not nil) and the headers.
func post(t testing.TB, url, body string, out any) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	b := readAnswer(t, url, resp, err, out)
	return resp.StatusCode, resp.Header, b
}

// readAnswer reads resp (err: the request's) to its end and returns its
// body, decoded into out (when not nil) on 200.
func readAnswer(t testing.TB, url string, resp *http.Response, err error, out any) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v in %s", url, err, b)
		}
	}
	return b
}

// get fetches url and returns the status and the body, decoded into out
// (when not nil) on 200.
func get(t testing.TB, url string, out any) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	b := readAnswer(t, url, resp, err, out)
	return resp.StatusCode, b
}

// errCode decodes an error body's code.
func errCode(t testing.TB, b []byte) string {
	t.Helper()
	var eb ErrorBody
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error == nil {
		t.Fatalf("not an error body: %s (%v)", b, err)
	}
	if eb.Error.Message == "" {
		t.Errorf("error %s without a message", eb.Error.Code)
	}
	return eb.Error.Code
}

// gateBackend holds every batch until its gate opens, then runs it on
// next; it counts batches and queries.
type gateBackend struct {
	next    Backend
	gate    chan struct{}
	entered chan int // receives each batch's size as it arrives
	batches atomic.Int64
	once    sync.Once
}

func newGate(next Backend) *gateBackend {
	return &gateBackend{next: next, gate: make(chan struct{}), entered: make(chan int, 1000)}
}

func (g *gateBackend) open() { g.once.Do(func() { close(g.gate) }) }

func (g *gateBackend) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	g.batches.Add(1)
	g.entered <- len(qs)
	<-g.gate
	return g.next.SearchBatch(ctx, qs, opt, out)
}

// faultyBackend fails like a GPU that lost its context: the whole batch
// (batchErr) or every query with its own error.
type faultyBackend struct {
	batchErr bool
	calls    atomic.Int64
}

var errInjected = errors.New("injected GPU fault: CUDA_ERROR_OUT_OF_MEMORY")

func (f *faultyBackend) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	f.calls.Add(1)
	for i := range out {
		out[i] = engine.Response{Err: errInjected}
	}
	if f.batchErr {
		return errInjected
	}
	return nil
}

// wantHits compares hits with the engine's answer to the same request.
func wantHits(t testing.TB, e *qp.Engine, q, mode string, k int, got []Hit) {
	t.Helper()
	m, err := engine.ParseMode(mode)
	if err != nil {
		t.Fatal(err)
	}
	want, err := e.Search(context.Background(), qp.Request{Text: q, Mode: m, K: k})
	if err != nil {
		t.Fatalf("engine %q: %v", q, err)
	}
	if len(got) != len(want.Hits) {
		t.Fatalf("%s %q: %d hits, engine %d", mode, q, len(got), len(want.Hits))
	}
	for i, h := range want.Hits {
		g := got[i]
		if g.ID != h.DocID || g.Score != h.Score || g.Rank != i+1 {
			t.Fatalf("%s %q hit %d: got %s %v rank %d, engine %s %v", mode, q, i, g.ID, g.Score, g.Rank, h.DocID, h.Score)
		}
	}
}

type qpRequest = qp.Request
