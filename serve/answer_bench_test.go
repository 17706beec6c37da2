package serve

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/topk"
)

// instantBackend answers every query at once with the same precomputed
// hits (the test collection's documents 0..k-1): a processor whose own
// cost is negligible, so that a benchmark over it measures the server's
// path (decode, analysis, batch join, answer, encode, metrics), not an
// engine. hold, when not nil, makes each batch wait for a token first
// (the drain benchmark holds a batch while the next one queues).
type instantBackend struct {
	res  []topk.Result
	hold chan struct{}
}

func newInstant(k int) *instantBackend {
	b := &instantBackend{}
	for d := range k {
		b.res = append(b.res, topk.Result{Doc: uint32(d), Score: float32(10 - d)})
	}
	return b
}

func (b *instantBackend) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	if b.hold != nil {
		<-b.hold
	}
	for i := range out {
		out[i] = engine.Response{Results: b.res[:min(len(b.res), qs[i].K)]}
	}
	return nil
}

// BenchmarkHandleSearchInstant: one POST /v1/search through the handler,
// no network, over instantBackend with a GPU's batching (batches of up to
// 4096, the PARA cost looked up per query): the server's own work per
// one-query request. The request runs as a batch of its own in the
// handler's goroutine (an idle processor). allocs/op includes httptest's
// recorder and request (13 allocations).
func BenchmarkHandleSearchInstant(b *testing.B) {
	e := testEngine(b)
	s, _ := newTestServer(b, e, Config{Primary: newInstant(10), PrimaryName: "gpu", Batch: BatchConfig{MaxBatch: 4096}})
	h := s.Handler()
	body := []byte(`{"q":"parallel sorting","mode":"and"}`)
	benchPostSearch(b, h, body)
}

// BenchmarkAnswerDrain: a GPU-sized batch's answers going out. Per
// iteration, n one-query requests (each in its goroutine, through the
// handler, no network) queue behind a held batch; the timed part is from
// releasing the processor to the last handler's return: the batch over
// instantBackend, its completion (a wake per job), then each handler's
// fill, encode, write and metrics. ns/op is per query; wake-us the mean of
// qp_serve_answer_wake_seconds (batch return to handler running).
func BenchmarkAnswerDrain(b *testing.B) {
	const n = 2048
	e := testEngine(b)
	ib := newInstant(10)
	ib.hold = make(chan struct{}, 2)
	s, _ := newTestServer(b, e, Config{Primary: ib, PrimaryName: "gpu",
		Batch: BatchConfig{MaxBatch: 4096, Inflight: 1, Budget: -1, MaxWait: time.Hour}})
	h := s.Handler()
	body := []byte(`{"q":"parallel sorting","mode":"and"}`)
	var wake, count float64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		wake0, count0 := histSum(b, s, "qp_serve_answer_wake_seconds")
		var wg sync.WaitGroup
		var bad sync.Once
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := httptest.NewRecorder()
				r := httptest.NewRequest("POST", "/v1/search", bytes.NewReader(body))
				h.ServeHTTP(w, r)
				if w.Code != 200 {
					bad.Do(func() { b.Error(w.Code, w.Body.String()) })
				}
			}()
		}
		for s.b.depth() < n-1 { // the first holds the processor, the rest queue
			time.Sleep(100 * time.Microsecond)
		}
		b.StartTimer()
		ib.hold <- struct{}{} // the lone first batch
		ib.hold <- struct{}{} // the n-1 queued behind it
		wg.Wait()
		b.StopTimer()
		w1, c1 := histSum(b, s, "qp_serve_answer_wake_seconds")
		wake, count = wake+w1-wake0, count+c1-count0
		b.StartTimer()
	}
	b.StopTimer()
	b.SetBytes(0)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/query")
	if count > 0 {
		b.ReportMetric(1e6*wake/count, "wake-us")
	}
}

// histSum is a histogram's sum and count from s's registry.
func histSum(t testing.TB, s *Server, name string) (sum, count float64) {
	t.Helper()
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetHistogram().GetSampleSum()
			count += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, count
}

// maxHandleAllocs: TestHandleSearchAllocs's bound.
const maxHandleAllocs = 12

// TestHandleSearchAllocs bounds the allocations of one one-query request
// through the handler (no network; instantBackend, a GPU's batching: the
// server's own path, httptest's request and recorder made beforehand).
// They were 24 before the pooled per-request state (oneCall, serve4
// branch), 14 after: the query's text, its analyzed terms and their
// slice, the answer's Content-Length, the recorder's header snapshot and
// the request context's; 10 since the terms' slice is pooled too and the
// Content-Length values of answers under 4 KB are shared (serve5 branch:
// two terms, whose slice grew twice, and the header's slice and string).
// A rise means something on the path started allocating per request.
func TestHandleSearchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts are meaningless")
	}
	e := testEngine(t)
	s, _ := newTestServer(t, e, Config{Primary: newInstant(10), PrimaryName: "gpu", Batch: BatchConfig{MaxBatch: 4096}})
	h := s.Handler()
	body := []byte(`{"q":"parallel sorting","mode":"and"}`)
	const runs = 200
	ws := make([]*httptest.ResponseRecorder, runs+1)
	rs := make([]*http.Request, runs+1)
	for i := range ws {
		ws[i], rs[i] = httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/search", bytes.NewReader(body))
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/search", bytes.NewReader(body))) // warm the pools
	i := 0
	n := testing.AllocsPerRun(runs, func() {
		h.ServeHTTP(ws[i], rs[i])
		i++
	})
	for _, w := range ws {
		if w.Code != 200 {
			t.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	}
	t.Logf("%.1f allocations per request", n)
	if n > maxHandleAllocs {
		t.Errorf("%.1f allocations per one-query request, want at most %d", n, maxHandleAllocs)
	}
}

// TestOneCallRelease: a one-query request's pooled state goes back to
// oneCalls only when none of its jobs was abandoned to the batcher (a
// batch may still answer an abandoned job: reusing it would hand that
// answer to another request), and goes back cleared, its answered jobs
// kept for reuse.
func TestOneCallRelease(t *testing.T) {
	c := new(oneCall)
	c.bufs.reset(1)
	j := c.bufs.job(engine.Query{ID: "q"}, 1, context.Background(), time.Time{}, time.Now())
	c.bufs.queued = append(c.bufs.queued, j)
	c.bufs.abandoned = true
	c.release()
	for range 100 {
		if d := oneCalls.Get().(*oneCall); d == c {
			t.Fatal("an abandoned oneCall came back from the pool")
		}
	}
	c = new(oneCall)
	c.bufs.reset(1)
	j = c.bufs.job(engine.Query{ID: "q"}, 1, context.Background(), time.Time{}, time.Now())
	c.bufs.queued = append(c.bufs.queued, j)
	c.bufs.resp[0] = SearchResponse{Query: "q"}
	c.req[0] = SearchRequest{Q: "q"}
	c.release()
	if len(c.bufs.pool) != 1 || c.bufs.pool[0] != j || j.ctx != nil || j.q.ID != "" || cap(j.done) != 1 {
		t.Fatalf("released: pool %v, job %+v", c.bufs.pool, j)
	}
	if len(c.bufs.queued) != 0 || c.bufs.resp[0].Query != "" || c.req[0].Q != "" {
		t.Fatalf("released with state left: %+v", c)
	}
	if k := c.bufs.job(engine.Query{ID: "r"}, 2, context.Background(), time.Time{}, time.Now()); k != j || k.q.ID != "r" || len(c.bufs.pool) != 0 {
		t.Fatalf("the pooled job was not reused: %p %p", k, j)
	}
}
