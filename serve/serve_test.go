package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/cache"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/scheduler"
)

// TestSearchEqualsEngine: every endpoint answers exactly the CPU engine's
// results (ids, float32 scores, ranks) in every mode and for several k.
func TestSearchEqualsEngine(t *testing.T) {
	e := testEngine(t)
	// The CPU's defaults (one query per batch, no PARA cost), and batches
	// as on a GPU (the PARA cost looks the terms up and the engine takes
	// them from the query: engine.Query.Dict).
	// Each also on the lean HTTP path (LeanHTTP: the POSTs there, the
	// GETs and batches handed to net/http).
	for _, cfg := range []Config{{}, {Batch: BatchConfig{MaxBatch: 64, Inflight: 1}}, {LeanHTTP: true},
		{LeanHTTP: true, Batch: BatchConfig{MaxBatch: 64, Inflight: 1}}} {
		t.Run(fmt.Sprint("max-batch-", cfg.Batch.MaxBatch, "-lean-", cfg.LeanHTTP), func(t *testing.T) {
			_, base := serveTest(t, e, cfg)
			searchEqualsEngine(t, e, base)
		})
	}
}

func searchEqualsEngine(t *testing.T, e *qp.Engine, base string) {
	hs := struct{ URL string }{base}
	for _, mode := range []string{"and", "or", "andor"} {
		for _, k := range []int{1, 3, 10} {
			var batch BatchRequest
			for _, q := range testQueries {
				var r SearchResponse
				body, _ := json.Marshal(SearchRequest{Q: q, Mode: mode, K: k})
				if st, _, b := post(t, hs.URL+"/v1/search", string(body), &r); st != 200 {
					t.Fatalf("POST %s: %d %s", body, st, b)
				}
				wantHits(t, e, q, mode, k, r.Hits)
				if r.Processor != "cpu" || r.BatchSize < 1 || r.Mode != mode || r.K != k || r.Query != q {
					t.Errorf("%q: answer %+v", q, r)
				}
				// GET, for people.
				resp, err := http.Get(hs.URL + "/v1/search?" + url.Values{"q": {q}, "mode": {mode}, "k": {fmt.Sprint(k)}}.Encode())
				if err != nil {
					t.Fatal(err)
				}
				var g SearchResponse
				if err := json.NewDecoder(resp.Body).Decode(&g); err != nil || resp.StatusCode != 200 {
					t.Fatalf("GET %q: %d %v", q, resp.StatusCode, err)
				}
				resp.Body.Close()
				wantHits(t, e, q, mode, k, g.Hits)
				batch.Queries = append(batch.Queries, SearchRequest{ID: fmt.Sprint("q", len(batch.Queries)), Q: q, Mode: mode, K: k})
			}
			var br BatchResponse
			body, _ := json.Marshal(batch)
			if st, _, b := post(t, hs.URL+"/v1/search/batch", string(body), &br); st != 200 {
				t.Fatalf("batch: %d %s", st, b)
			}
			if len(br.Results) != len(batch.Queries) {
				t.Fatalf("batch: %d answers to %d queries", len(br.Results), len(batch.Queries))
			}
			for i, r := range br.Results {
				if r.ID != batch.Queries[i].ID || r.Error != nil {
					t.Fatalf("batch answer %d: id %q error %v", i, r.ID, r.Error)
				}
				wantHits(t, e, batch.Queries[i].Q, mode, k, r.Hits)
			}
		}
	}
}

// costOf is s.cost of q's job.
func costOf(s *Server, q engine.Query) int64 {
	j := newJob()
	j.reset(q, 0, context.Background(), time.Time{}, time.Time{})
	return s.cost(j)
}

// TestCostCarriesLookup: the PARA cost is the scheduler's shortest list
// (0 with an absent term), and the terms it looked up go to the backend
// with the query (engine.Query.Dict: the index's IDs and frequencies);
// with batches of one query (the CPU's defaults) nothing is looked up.
func TestCostCarriesLookup(t *testing.T) {
	e := testEngine(t)
	x := e.Index()
	s, _ := newTestServer(t, e, Config{Batch: BatchConfig{MaxBatch: 64}})
	one, _ := newTestServer(t, e, Config{})
	texts := append(slices.Clone(testQueries), "gpu gpu sorting", "gpu nosuchterm", "parallel query processing compressed index gpu sorting merge")
	for _, text := range texts {
		q := e.Query(qpReq(text))
		j := newJob()
		j.reset(q, 0, context.Background(), time.Time{}, time.Time{})
		c := s.cost(j)
		f := scheduler.QueryFeatures(x, q)
		want := int64(f.Min)
		if f.Missing > 0 {
			want = 0
		}
		if c != want {
			t.Errorf("%q: cost %d, want %d (%+v)", text, c, want, f)
		}
		ids, dfs, ok := j.q.Looked(x)
		if !ok {
			t.Fatalf("%q: the job's query carries no lookup", text)
		}
		for i, term := range q.Terms {
			id, found := x.Lookup(term)
			if !found {
				id = -1
			}
			if ids[i] != id || (found && dfs[i] != x.Record(id).DF) {
				t.Errorf("%q term %q: looked up %d df %d, want %d", text, term, ids[i], dfs[i], id)
			}
		}
		j1 := newJob()
		j1.reset(q, 0, context.Background(), time.Time{}, time.Time{})
		if one.cost(j1) != 0 || j1.q.Dict != nil {
			t.Errorf("%q: batches of one query: cost %d, Dict %v", text, one.cost(j1), j1.q.Dict)
		}
	}
}

// TestStoredFields: stored:true answers each hit's stored fields.
func TestStoredFields(t *testing.T) {
	e := testEngine(t)
	_, hs := newTestServer(t, e, Config{})
	var r SearchResponse
	if st, _, b := post(t, hs.URL+"/v1/search", `{"q":"maxscore","stored":true}`, &r); st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	if len(r.Hits) != 1 || r.Hits[0].ID != "doc8" {
		t.Fatalf("hits %+v", r.Hits)
	}
	var st map[string]string
	if err := json.Unmarshal(r.Hits[0].Stored, &st); err != nil || st["title"] != testDocs[7] {
		t.Fatalf("stored %s (%v)", r.Hits[0].Stored, err)
	}
	var r2 SearchResponse
	post(t, hs.URL+"/v1/search", `{"q":"maxscore"}`, &r2)
	if r2.Hits[0].Stored != nil {
		t.Errorf("stored fields without stored:true: %s", r.Hits[0].Stored)
	}
}

// TestBadRequests: each malformed or out-of-limit request gets its status
// and stable code, and the server goes on answering.
func TestBadRequests(t *testing.T) {
	e := testEngine(t)
	for _, lean := range []bool{false, true} {
		t.Run(fmt.Sprint("lean-", lean), func(t *testing.T) {
			_, base := serveTest(t, e, Config{LeanHTTP: lean, Limits: Limits{MaxBodyBytes: 1024, MaxTerms: 4, MaxK: 50, MaxBatch: 3, MaxQueryLen: 200}})
			badRequests(t, e, base)
		})
	}
}

func badRequests(t *testing.T, e *qp.Engine, base string) {
	hs := struct{ URL string }{base}
	cases := []struct {
		path, body string
		status     int
		code       string
	}{
		{"/v1/search", `{"q":`, 400, CodeBadJSON},
		{"/v1/search", ``, 400, CodeBadJSON},
		{"/v1/search", `[1,2]`, 400, CodeBadJSON},
		{"/v1/search", `{"q":"gpu","k":"ten"}`, 400, CodeBadJSON},
		{"/v1/search", `{"q":"gpu","colour":"red"}`, 400, CodeBadJSON},
		{"/v1/search", `{"q":"gpu"} {"q":"gpu"}`, 400, CodeBadJSON},
		{"/v1/search", `{"q":"` + strings.Repeat("a", 2000) + `"}`, 413, CodeBodyTooLarge},
		{"/v1/search", `{"q":"` + strings.Repeat("ab ", 80) + `"}`, 400, CodeBadRequest},
		{"/v1/search", `{"q":"gpu","mode":"xor"}`, 400, CodeBadRequest},
		{"/v1/search", `{"q":"gpu","k":51}`, 400, CodeBadRequest},
		{"/v1/search", `{"q":"gpu","k":-1}`, 400, CodeBadRequest},
		{"/v1/search", `{"q":"gpu","timeout_ms":-5}`, 400, CodeBadRequest},
		{"/v1/search", `{"q":"the of and"}`, 400, CodeNoTerms},
		{"/v1/search", `{"q":""}`, 400, CodeNoTerms},
		{"/v1/search", `{"q":"a1 b1 c1 d1 e1"}`, 400, CodeTooManyTerms},
		{"/v1/search", "{\"q\":\"\xff\xfe\"}", 400, CodeNoTerms}, // JSON decoding makes invalid UTF-8 U+FFFD
		{"/v1/search/batch", `{"queries":[]}`, 400, CodeBadRequest},
		{"/v1/search/batch", `{"queries":[{"q":"a"},{"q":"b"},{"q":"c"},{"q":"d"}]}`, 400, CodeTooManyQs},
		{"/v1/search/batch", `{"queries":{}}`, 400, CodeBadJSON},
		{"/v2/search", `{}`, 404, CodeNotFound},
	}
	for _, c := range cases {
		st, _, b := post(t, hs.URL+c.path, c.body, nil)
		if st != c.status {
			t.Errorf("POST %s %.60q: status %d, want %d (%s)", c.path, c.body, st, c.status, b)
			continue
		}
		if code := errCode(t, b); code != c.code {
			t.Errorf("POST %s %.60q: code %s, want %s", c.path, c.body, code, c.code)
		}
	}
	for _, q := range []string{"k=x", "k=0&q=gpu&timeout_ms=1.5", "q=gpu&stored=perhaps"} {
		resp, err := http.Get(hs.URL + "/v1/search?" + q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || errCode(t, b) != CodeBadRequest {
			t.Errorf("GET ?%s: %d %s", q, resp.StatusCode, b)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, hs.URL+"/v1/search", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 405 || errCode(t, b) != CodeMethod || resp.Header.Get("Allow") == "" {
		t.Errorf("DELETE: %d %s", resp.StatusCode, b)
	}
	// A batch with one bad query answers the others.
	var br BatchResponse
	if st, _, b := post(t, hs.URL+"/v1/search/batch", `{"queries":[{"q":"gpu"},{"q":"the"},{"q":"gpu","k":999}]}`, &br); st != 200 {
		t.Fatalf("mixed batch: %d %s", st, b)
	}
	if br.Results[0].Error != nil || len(br.Results[0].Hits) == 0 || br.Results[1].Error == nil ||
		br.Results[1].Error.Code != CodeNoTerms || br.Results[2].Error == nil || br.Results[2].Error.Code != CodeBadRequest {
		t.Errorf("mixed batch: %+v", br.Results)
	}
	var r SearchResponse
	if st, _, b := post(t, hs.URL+"/v1/search", `{"q":"gpu"}`, &r); st != 200 {
		t.Fatalf("after bad requests: %d %s", st, b)
	}
	wantHits(t, e, "gpu", "and", 10, r.Hits)
}

// TestQueueFull: with the processor held and the queue full, requests are
// refused with 429 and Retry-After; the queued ones are answered once the
// processor runs again.
func TestQueueFull(t *testing.T) {
	e := testEngine(t)
	g := newGate(e)
	s, hs := newTestServer(t, e, Config{Primary: g, Batch: BatchConfig{QueueSize: 2, Inflight: 1, MaxBatch: 1}})
	var wg sync.WaitGroup
	codes := make(chan int, 3)
	send := func() {
		defer wg.Done()
		st, _, _ := post(t, hs.URL+"/v1/search", `{"q":"gpu"}`, nil)
		codes <- st
	}
	wg.Add(1)
	go send()
	<-g.entered // the first is running, held
	wg.Add(2)
	go send()
	go send()
	waitFor(t, func() bool { return s.b.depth() == 2 })
	st, h, b := post(t, hs.URL+"/v1/search", `{"q":"gpu"}`, nil)
	if st != 429 || errCode(t, b) != CodeQueueFull || h.Get("Retry-After") == "" {
		t.Fatalf("full queue: %d %s, Retry-After %q", st, b, h.Get("Retry-After"))
	}
	g.open()
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("queued request: %d", c)
		}
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not reached in 5 s")
}

// TestDeadline: a request whose deadline passes while the processor is
// busy gets 504 deadline_exceeded, not a hang; its query is skipped.
func TestDeadline(t *testing.T) {
	e := testEngine(t)
	g := newGate(e)
	_, hs := newTestServer(t, e, Config{Primary: g, Batch: BatchConfig{Inflight: 1}})
	done := make(chan int)
	go func() { st, _, _ := post(t, hs.URL+"/v1/search", `{"q":"gpu"}`, nil); done <- st }()
	<-g.entered
	start := time.Now()
	st, _, b := post(t, hs.URL+"/v1/search", `{"q":"parallel","timeout_ms":50}`, nil)
	if st != 504 || errCode(t, b) != CodeDeadline {
		t.Fatalf("deadline: %d %s", st, b)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("deadline of 50 ms answered after %v", d)
	}
	g.open()
	if st := <-done; st != 200 {
		t.Errorf("the held request: %d", st)
	}
}

// TestDisconnect: a client that goes away mid-query does not disturb the
// server: its query is dropped or its answer discarded, and the next
// requests are answered.
func TestDisconnect(t *testing.T) {
	e := testEngine(t)
	g := newGate(e)
	s, hs := newTestServer(t, e, Config{Primary: g, Batch: BatchConfig{Inflight: 1}})
	held := make(chan int)
	go func() { st, _, _ := post(t, hs.URL+"/v1/search", `{"q":"gpu"}`, nil); held <- st }()
	<-g.entered
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/v1/search", strings.NewReader(`{"q":"parallel"}`))
	errc := make(chan error)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitFor(t, func() bool { return s.b.depth() == 1 })
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled request got an answer")
	}
	// The server notices the closed connection and gives up the request.
	waitFor(t, func() bool { return strings.Contains(scrape(t, hs.URL), `qp_serve_rejected_total{code="canceled"} 1`) })
	g.open()
	if st := <-held; st != 200 {
		t.Errorf("held request: %d", st)
	}
	var r SearchResponse
	if st, _, b := post(t, hs.URL+"/v1/search", `{"q":"parallel sorting","mode":"or"}`, &r); st != 200 {
		t.Fatalf("after a disconnect: %d %s", st, b)
	}
	wantHits(t, e, "parallel sorting", "or", 10, r.Hits)
	waitFor(t, func() bool { return s.b.depth() == 0 })
	if g.batches.Load() != 2 {
		t.Errorf("%d batches ran, want 2 (the held one, the last one; not the abandoned query)", g.batches.Load())
	}
}

// TestFallback: a GPU fault (the batch fails, or every query of it) is
// answered by the CPU, exactly, and counted.
func TestFallback(t *testing.T) {
	e := testEngine(t)
	for _, batchErr := range []bool{true, false} {
		f := &faultyBackend{batchErr: batchErr}
		_, hs := newTestServer(t, e, Config{Primary: f, PrimaryName: "gpu", Fallback: engine.NewCPU(e.Index(), 2)})
		for _, q := range testQueries[:5] {
			var r SearchResponse
			if st, _, b := post(t, hs.URL+"/v1/search", fmt.Sprintf(`{"q":%q,"mode":"or"}`, q), &r); st != 200 {
				t.Fatalf("batchErr %v %q: %d %s", batchErr, q, st, b)
			}
			if r.Processor != "cpu-fallback" {
				t.Errorf("processor %q, want cpu-fallback", r.Processor)
			}
			wantHits(t, e, q, "or", 10, r.Hits)
		}
		m := scrape(t, hs.URL)
		if f.calls.Load() != 5 || !strings.Contains(m, "qp_serve_fallback_queries_total 5") ||
			!strings.Contains(m, `qp_serve_queries_total{code="ok",mode="or",processor="cpu-fallback"} 5`) {
			t.Errorf("batchErr %v: %d calls, metrics:\n%s", batchErr, f.calls.Load(), grep(m, "fallback"))
		}
	}
	// Without a fallback the fault is a 500 backend_error.
	_, hs := newTestServer(t, e, Config{Primary: &faultyBackend{}})
	st, _, b := post(t, hs.URL+"/v1/search", `{"q":"gpu"}`, nil)
	if st != 500 || errCode(t, b) != CodeBackend || !strings.Contains(string(b), "injected") {
		t.Errorf("no fallback: %d %s", st, b)
	}
}

// TestBatching: a batch closes at MaxBatch, at the PARA threshold, or
// after MaxWait (Lazy: an idle processor does not close it).
func TestBatching(t *testing.T) {
	e := testEngine(t)
	concurrent := func(hs string, n int) []SearchResponse {
		out := make([]SearchResponse, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if st, _, b := post(t, hs+"/v1/search", fmt.Sprintf(`{"q":%q}`, testQueries[i]), &out[i]); st != 200 {
					t.Errorf("%d %s", st, b)
				}
			}()
		}
		wg.Wait()
		return out
	}
	// MaxBatch 4, no threshold, no wait: 4 concurrent requests run together.
	_, hs := newTestServer(t, e, Config{Batch: BatchConfig{Lazy: true, MaxWait: time.Hour, MaxBatch: 4, Threshold: 1 << 40}})
	for i, r := range concurrent(hs.URL, 4) {
		if r.BatchSize != 4 {
			t.Errorf("max batch: query %d ran in a batch of %d", i, r.BatchSize)
		}
	}
	// Threshold: "gpu" and "compression" have lists of 2 and 4 postings.
	s, hs := newTestServer(t, e, Config{Batch: BatchConfig{Lazy: true, MaxWait: time.Hour, Threshold: 6, MaxBatch: 100}})
	if c := costOf(s, e.Query(qpReq("gpu"))) + costOf(s, e.Query(qpReq("compress"))); c != 6 {
		t.Fatalf("test collection changed: costs %d", c)
	}
	out := make([]SearchResponse, 2)
	var wg sync.WaitGroup
	for i, q := range []string{"gpu", "compression"} {
		wg.Add(1)
		go func() { defer wg.Done(); post(t, hs.URL+"/v1/search", fmt.Sprintf(`{"q":%q}`, q), &out[i]) }()
	}
	wg.Wait()
	for i, r := range out {
		if r.BatchSize != 2 {
			t.Errorf("threshold: query %d ran in a batch of %d", i, r.BatchSize)
		}
	}
	// MaxWait: a lone request waits for it.
	_, hs = newTestServer(t, e, Config{Batch: BatchConfig{Lazy: true, MaxWait: 30 * time.Millisecond, MaxBatch: 100}})
	var r SearchResponse
	post(t, hs.URL+"/v1/search", `{"q":"gpu"}`, &r)
	if r.BatchSize != 1 || r.Timing.QueueMS < 29 {
		t.Errorf("max wait: batch %d after %.2f ms in the queue, want 1 after >= 30 ms", r.BatchSize, r.Timing.QueueMS)
	}
	// Default (not lazy): an idle processor takes it at once.
	_, hs = newTestServer(t, e, Config{Batch: BatchConfig{MaxWait: time.Hour}})
	start := time.Now()
	post(t, hs.URL+"/v1/search", `{"q":"gpu"}`, &r)
	if d := time.Since(start); r.BatchSize != 1 || d > 10*time.Second {
		t.Errorf("idle processor: batch %d after %v", r.BatchSize, d)
	}
}

// TestCache: a repeated query is answered from the cache, identically.
func TestCache(t *testing.T) {
	e := testEngine(t)
	c, err := cache.New(cache.Config{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, hs := newTestServer(t, e, Config{Cache: c})
	var a, b SearchResponse
	post(t, hs.URL+"/v1/search", `{"q":"parallel sorting","mode":"or"}`, &a)
	c.Wait()
	post(t, hs.URL+"/v1/search", `{"q":"sorting parallel","mode":"or"}`, &b)
	if a.Processor != "cpu" || b.Processor != "cache" {
		t.Fatalf("processors %q, %q; want cpu, cache", a.Processor, b.Processor)
	}
	wantHits(t, e, "parallel sorting", "or", 10, b.Hits)
	m := scrape(t, hs.URL)
	for _, want := range []string{"qp_serve_cache_hits_total 1", "qp_serve_cache_misses_total 1", "qp_serve_cache_hit_ratio 0.5"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, grep(m, "cache"))
		}
	}
}

// TestMetricsHealth: /metrics counts requests, queries, batches and the
// queue; /healthz and /readyz answer, /readyz turns 503 when draining.
func TestMetricsHealth(t *testing.T) {
	e := testEngine(t)
	s, hs := newTestServer(t, e, Config{})
	for range 3 {
		post(t, hs.URL+"/v1/search", `{"q":"gpu","mode":"or"}`, nil)
	}
	post(t, hs.URL+"/v1/search", `{"q":"gpu","mode":"bogus-mode-1"}`, nil)
	m := scrape(t, hs.URL)
	for _, want := range []string{
		`qp_serve_queries_total{code="ok",mode="or",processor="cpu"} 3`,
		`qp_serve_queries_total{code="bad_request",mode="invalid",processor=""} 1`,
		`qp_serve_requests_total{code="200",endpoint="search"} 3`,
		`qp_serve_requests_total{code="400",endpoint="search"} 1`,
		"qp_serve_batch_size_count 3", "qp_serve_queue_depth 0", `qp_serve_query_duration_seconds_count{processor="cpu"} 3`,
		"go_goroutines",
		// The CPU's batches of one query close by their size cap.
		`qp_serve_batch_closes_total{reason="cap"} 3`, `qp_serve_batch_closes_total{reason="device"} 0`,
		// The answer-wake histogram (3 answered queries) and the runtime's
		// measurements (runtimemetrics.go).
		"qp_serve_answer_wake_seconds_count 3", "qp_serve_go_gc_pauses_seconds_bucket", "qp_serve_go_sched_latencies_seconds_count",
		"qp_serve_go_goroutines ", "qp_serve_go_heap_objects_bytes ", "qp_serve_go_heap_goal_bytes ", "qp_serve_go_gc_cycles_total ",
		"qp_serve_go_gc_cpu_seconds_total ",
		// The finer latency buckets: 0.1 ms × 1.2^i.
		`qp_serve_request_duration_seconds_bucket{endpoint="search",le="0.00012"}`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(m, "qp_serve_gpu_device_fixed_seconds") {
		t.Error("a CPU server exports the pipelined GPU's fits")
	}
	if n := strings.Count(m, `qp_serve_request_duration_seconds_bucket{endpoint="search"`); n != len(latencyBuckets)+1 {
		t.Errorf("%d request-duration buckets, want %d and +Inf", n, len(latencyBuckets))
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200} {
		if resp, err := http.Get(hs.URL + path); err != nil || resp.StatusCode != want {
			t.Errorf("%s: %v %v", path, resp, err)
		}
	}
	s.draining.Store(true)
	if resp, err := http.Get(hs.URL + "/readyz"); err != nil || resp.StatusCode != 503 {
		t.Errorf("/readyz while draining: %v %v", resp, err)
	}
	st, h, b := post(t, hs.URL+"/v1/search", `{"q":"gpu"}`, nil)
	if st != 503 || errCode(t, b) != CodeShuttingDown || h.Get("Retry-After") == "" {
		t.Errorf("search while draining: %d %s", st, b)
	}
}

// TestShutdownUnderLoad: Shutdown while requests are queued and running
// answers every accepted request, then refuses connections.
func TestShutdownUnderLoad(t *testing.T) {
	for _, lean := range []bool{false, true} {
		t.Run(fmt.Sprint("lean-", lean), func(t *testing.T) { shutdownUnderLoad(t, lean) })
	}
}

func shutdownUnderLoad(t *testing.T, lean bool) {
	e := testEngine(t)
	g := newGate(e)
	s, ln := leanListener(t, e, Config{LeanHTTP: lean, Primary: g, Batch: BatchConfig{Inflight: 1, MaxBatch: 8}})
	served := make(chan error)
	go func() { served <- s.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	const n = 40
	answers := make([]SearchResponse, n)
	status := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := testQueries[i%len(testQueries)]
			status[i], _, _ = post(t, url+"/v1/search", fmt.Sprintf(`{"q":%q,"mode":"or"}`, q), &answers[i])
		}()
	}
	first := <-g.entered // one batch is held on the processor, the rest queue
	waitFor(t, func() bool { return s.b.depth() == n-first })
	shut := make(chan error)
	go func() { shut <- s.Shutdown(context.Background()) }()
	waitFor(t, func() bool { _, err := net.Dial("tcp", ln.Addr().String()); return err != nil })
	g.open()
	wg.Wait()
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for i := range n {
		if status[i] != 200 {
			t.Fatalf("request %d: status %d", i, status[i])
		}
		wantHits(t, e, testQueries[i%len(testQueries)], "or", 10, answers[i].Hits)
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("a connection after Shutdown was accepted")
	}
}

// TestSlowClient: a client that sends its body too slowly is cut off
// after the read timeout, and others are served meanwhile.
func TestSlowClient(t *testing.T) {
	for _, lean := range []bool{false, true} {
		t.Run(fmt.Sprint("lean-", lean), func(t *testing.T) { slowClient(t, lean) })
	}
}

// slowClient: on the lean path the incomplete request is handed to
// net/http, whose read timeout cuts it off.
func slowClient(t *testing.T, lean bool) {
	e := testEngine(t)
	s, ln := leanListener(t, e, Config{LeanHTTP: lean, ReadTimeout: 300 * time.Millisecond, ReadHeaderTimeout: 300 * time.Millisecond})
	go s.Serve(ln)
	defer s.Shutdown(context.Background())
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"q\":")
	start := time.Now()
	var r SearchResponse
	if st, _, b := post(t, "http://"+ln.Addr().String()+"/v1/search", `{"q":"gpu"}`, &r); st != 200 {
		t.Fatalf("while a client is slow: %d %s", st, b)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == 200 {
			t.Fatalf("the slow request was answered 200: %s", b)
		}
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("slow client cut off after %v, read timeout 300 ms", d)
	}
}

func qpReq(q string) (r qpRequest) { r.Text, r.Mode, r.K = q, engine.And, 10; return r }

func scrape(t testing.TB, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestOverloadedSheds: over capacity (the measured saturated throughput
// says the queue ahead would outlast the request's deadline) a request is
// refused at once with 503 overloaded and a Retry-After, counted in
// qp_serve_rejected_total; one with a deadline the queue can meet waits
// and is answered.
func TestOverloadedSheds(t *testing.T) {
	e := testEngine(t)
	g := newGate(e)
	s, hs := newTestServer(t, e, Config{Primary: g, Batch: BatchConfig{Inflight: 1, MaxBatch: 100}})
	t0 := time.Now()
	s.b.model.observe(1, time.Millisecond, t0, 1)
	s.b.model.observe(1, time.Millisecond, t0.Add(time.Second), 1) // 1 query/s
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); post(t, hs.URL+"/v1/search", `{"q":"gpu"}`, nil) }()
	<-g.entered // running, held; the next one queues (depth 1: 1 s expected)
	go func() { defer wg.Done(); post(t, hs.URL+"/v1/search", `{"q":"gpu","timeout_ms":30000}`, nil) }()
	waitFor(t, func() bool { return s.b.depth() == 1 })
	st, h, b := post(t, hs.URL+"/v1/search", `{"q":"parallel","timeout_ms":500}`, nil)
	if st != 503 || errCode(t, b) != CodeOverloaded || h.Get("Retry-After") != "2" {
		t.Fatalf("over capacity: %d %s, Retry-After %q (want 503 overloaded, 2 s for 2 queued at 1 q/s)", st, b, h.Get("Retry-After"))
	}
	var r SearchResponse
	done := make(chan int)
	go func() {
		st, _, _ := post(t, hs.URL+"/v1/search", `{"q":"parallel","timeout_ms":20000}`, &r)
		done <- st
	}()
	waitFor(t, func() bool { return s.b.depth() == 2 })
	g.open()
	if st := <-done; st != 200 || len(r.Hits) == 0 {
		t.Fatalf("a deadline the queue can meet: %d, %d hits", st, len(r.Hits))
	}
	wg.Wait()
	if n := testutil.ToFloat64(s.m.rejected.WithLabelValues(CodeOverloaded)); n != 1 {
		t.Errorf("qp_serve_rejected_total{code=overloaded} = %v, want 1", n)
	}
}

// TestCPUDefaults: on the CPU the batcher is a worker pool (one query per
// batch, one batch per worker); on a GPU batches of up to DefaultMaxBatch,
// one in flight; for other backends two.
func TestCPUDefaults(t *testing.T) {
	e := testEngine(t)
	s, _ := newTestServer(t, e, Config{})
	if c := s.Batch(); c.MaxBatch != 1 || c.Inflight != 2 { // testEngine: 2 threads
		t.Errorf("CPU engine: batch max %d, inflight %d; want 1 and the 2 workers", c.MaxBatch, c.Inflight)
	}
	s, _ = newTestServer(t, e, Config{Primary: newGate(e)})
	if c := s.Batch(); c.MaxBatch != DefaultMaxBatch || c.Inflight != 2 || c.Budget != DefaultBudget {
		t.Errorf("other primary: batch max %d, inflight %d, budget %v", c.MaxBatch, c.Inflight, c.Budget)
	}
	// A GPU behind the CPU/GPU router (--device auto: not pipelined) runs
	// one batch at a time, of the whole queue up to the batch max (no time
	// budget), unless a budget is set; pipelined (--device gpu), two and
	// the automatic cap (Budget 0).
	if c := (BatchConfig{}).withDefaults(12<<20, 0, false); c.Inflight != 1 || c.MaxBatch != DefaultMaxBatch || c.Threshold != 12<<20 || c.Budget >= 0 {
		t.Errorf("GPU: inflight %d, batch max %d, threshold %d, budget %v", c.Inflight, c.MaxBatch, c.Threshold, c.Budget)
	}
	if c := (BatchConfig{}).withDefaults(12<<20, 0, true); !c.Pipelined() || c.Inflight != 2 || c.Budget != 0 || c.MaxBatch != DefaultMaxBatch {
		t.Errorf("pipelined GPU: pipelined %v, inflight %d, budget %v, batch max %d", c.Pipelined(), c.Inflight, c.Budget, c.MaxBatch)
	}
	if c := (BatchConfig{}).withDefaults(0, 4, true); c.Pipelined() {
		t.Error("pipelined without a GPU")
	}
	if c := (BatchConfig{Budget: 8 * time.Millisecond}).withDefaults(12<<20, 0, false); c.Budget != 8*time.Millisecond {
		t.Errorf("GPU with --batch-budget 8ms: budget %v", c.Budget)
	}
}

// TestChunkedBodies: a body of unknown length (chunked, no Content-Length)
// is bounded by MaxBodyBytes as one of known length is (413 past it), and
// answered within it; with a known length the handler reads the body as
// net/http bounds it (decodeBody).
func TestChunkedBodies(t *testing.T) {
	e := testEngine(t)
	_, hs := newTestServer(t, e, Config{Limits: Limits{MaxBodyBytes: 1024, MaxQueryLen: 4000}})
	cases := []struct {
		body   string
		status int
	}{
		{`{"q":"parallel sorting"}`, 200},
		{`{"q":"parallel sorting` + strings.Repeat(" ", 1100) + `"}`, 413},
		{`{"q":"parallel sorting"}` + strings.Repeat(" ", 1024-24), 200}, // exactly at the limit
	}
	for _, c := range cases {
		// A reader of unknown length: net/http sends it chunked.
		req, err := http.NewRequest("POST", hs.URL+"/v1/search", io.MultiReader(strings.NewReader(c.body)))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if req.ContentLength != 0 || resp.StatusCode != c.status {
			t.Errorf("chunked body of %d bytes: status %d (request length %d), want %d: %s", len(c.body), resp.StatusCode, req.ContentLength, c.status, b)
		}
		if c.status == 413 && errCode(t, b) != CodeBodyTooLarge {
			t.Errorf("chunked body of %d bytes: %s, want %s", len(c.body), b, CodeBodyTooLarge)
		}
	}
}

// TestPooledCallsReused: one-query requests reuse their pooled state
// (oneCall: request, answer, job, hits): answers in sequence and from
// parallel clients equal the engine's whatever the request before left
// there, and an empty answer is "hits":[] (never null, never stale hits).
func TestPooledCallsReused(t *testing.T) {
	e := testEngine(t)
	_, hs := newTestServer(t, e, Config{})
	check := func(t *testing.T, q string, k int) {
		var r SearchResponse
		st, _, b := post(t, hs.URL+"/v1/search", fmt.Sprintf(`{"q":%q,"mode":"and","k":%d}`, q, k), &r)
		if st != 200 {
			t.Fatalf("%q: status %d: %s", q, st, b)
		}
		wantHits(t, e, q, "and", k, r.Hits)
		if len(r.Hits) == 0 && !bytes.Contains(b, []byte(`"hits":[]`)) {
			t.Fatalf("%q: no hits encoded as %s, want \"hits\":[]", q, b)
		}
	}
	for range 3 {
		for i, q := range testQueries {
			check(t, q, 1+i%10)
		}
	}
	t.Run("parallel", func(t *testing.T) {
		for g := range 8 {
			t.Run(fmt.Sprint(g), func(t *testing.T) {
				t.Parallel()
				for i := range 50 {
					check(t, testQueries[(g+i)%len(testQueries)], 1+(g*i)%10)
				}
			})
		}
	})
}
