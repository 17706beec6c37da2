package serve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/internal/querylog"
	"github.com/qpengine/qp/scheduler"
)

// BenchmarkSearchHTTP: one query per POST /v1/search from parallel
// clients over loopback (the tiny test collection: the cost is the
// server's and the client's HTTP and JSON work, not the engine's).
func BenchmarkSearchHTTP(b *testing.B) {
	e := testEngine(b)
	_, hs := newTestServer(b, e, Config{})
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	c := &http.Client{Transport: tr}
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Post(hs.URL+"/v1/search", "application/json", bytes.NewBufferString(`{"q":"parallel sorting","mode":"or"}`))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatal(resp.StatusCode)
			}
		}
	})
}

// BenchmarkHandleSearch: one POST /v1/search through the handler, no
// network (the server's own per-request cost: decoding, analysis,
// batching hand-off, the engine on the tiny test collection, encoding,
// metrics). allocs/op is the number to watch.
func BenchmarkHandleSearch(b *testing.B) {
	e := testEngine(b)
	s, _ := newTestServer(b, e, Config{})
	h := s.Handler()
	body := []byte(`{"q":"parallel sorting","mode":"or"}`)
	benchPostSearch(b, h, body)
}

// benchPostSearch times b.N POST /v1/search requests of body through h (no
// network: httptest's recorder), failing on any status but 200.
func benchPostSearch(b *testing.B, h http.Handler, body []byte) {
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v1/search", bytes.NewReader(body))
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

// BenchmarkCost: a request's PARA cost, as the server computes it
// (Server.cost: the terms looked up with index.LookupDictDF into the job,
// which hands them to the backend, engine.Query.Dict) against the
// scheduler's QueryFeatures it replaced (a Lookup and a Record per term,
// the lookup then repeated by the backend), the two alternating pass by
// pass in one loop (paired): old-ns/query, new-ns/query and new/old.
// QP_SERVE_INDEX and QP_SERVE_QUERIES name an index and a qid:text log
// (its first 4,500 queries; e.g. GCIDE and the TREC 2006 efficiency log);
// otherwise the test collection and its queries.
func BenchmarkCost(b *testing.B) {
	var e *qp.Engine
	var terms [][]string
	if path := os.Getenv("QP_SERVE_INDEX"); path != "" {
		var err error
		if e, err = qp.Open(path, qp.Options{Device: qp.CPU}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { e.Close() })
		if terms, err = querylog.FirstAnalyzed(e.Index(), os.Getenv("QP_SERVE_QUERIES"), 4500); err != nil {
			b.Fatal(err)
		}
	} else {
		e = testEngine(b)
		for _, q := range testQueries {
			terms = append(terms, e.Query(qpReq(q)).Terms)
		}
	}
	x := e.Index()
	x.BuildLookup()
	s, _ := newTestServer(b, e, Config{Batch: BatchConfig{MaxBatch: 4096}})
	jobs := make([]*job, len(terms))
	for i := range jobs {
		jobs[i] = newJob()
	}
	var old, cur time.Duration
	var sumOld, sumNew int64
	for b.Loop() {
		t0 := time.Now()
		for _, ts := range terms {
			f := scheduler.QueryFeatures(x, engine.Query{Terms: ts, Mode: engine.And, K: 10})
			if f.Missing == 0 {
				sumOld += int64(f.Min)
			}
		}
		t1 := time.Now()
		for i, ts := range terms {
			j := jobs[i]
			j.reset(engine.Query{Terms: ts, Mode: engine.And, K: 10}, 0, context.Background(), time.Time{}, time.Time{})
			sumNew += s.cost(j)
		}
		t2 := time.Now()
		old, cur = old+t1.Sub(t0), cur+t2.Sub(t1)
	}
	if sumOld != sumNew {
		b.Fatalf("costs: old %d, new %d", sumOld, sumNew)
	}
	n := float64(b.N) * float64(len(terms))
	b.ReportMetric(float64(old.Nanoseconds())/n, "old-ns/query")
	b.ReportMetric(float64(cur.Nanoseconds())/n, "new-ns/query")
	b.ReportMetric(float64(cur)/float64(old), "new/old")
}
