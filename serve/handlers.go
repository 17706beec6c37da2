package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/topk"
)

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/search", s.handleSearch)
	mux.HandleFunc("/v1/search/batch", s.handleBatch)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeText(w, http.StatusOK, "ok\n")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			writeText(w, http.StatusServiceUnavailable, "shutting down\n")
			return
		}
		writeText(w, http.StatusOK, "ready\n")
	})
	mux.Handle("/metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", s.handlePage)
	mux.HandleFunc("GET /debug/batches", s.handleBatches)
	if s.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

func writeText(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers e, with Retry-After on 429 and 503.
func (s *Server) writeError(w http.ResponseWriter, e *Error) {
	if e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, e.retryAfter)))
	}
	if e.status == 499 { // the client is gone: nobody reads the answer
		return
	}
	writeJSON(w, e.status, ErrorBody{Error: e})
}

// handleSearch serves GET and POST /v1/search. Its per-request state
// (the request, the answer, the job, the hits, await's timer) comes from
// oneCalls and goes back after the answer is written, unless a job was
// abandoned to the batcher (deadline, client gone).
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	arrive := time.Now()
	c := oneCalls.Get().(*oneCall)
	defer c.release()
	req := &c.req[0]
	var e *Error
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		*req, e = searchFromQuery(r)
	case http.MethodPost:
		*req, e = decodeBody(s, w, r, decodeSearch)
	default:
		w.Header().Set("Allow", "GET, POST")
		e = apiErr(http.StatusMethodNotAllowed, CodeMethod, "%s: use GET or POST", r.Method)
	}
	status := http.StatusOK
	defer func() { s.m.observeRequest("search", status, arrive) }()
	if e != nil {
		status = e.status
		s.m.observeQuery(req.Mode, e.Code, "", 0)
		s.writeError(w, e)
		return
	}
	resp, e := s.answer(r.Context(), arrive.Add(s.timeout(req.TimeoutMS)), c.req[:], arrive, &c.bufs)
	if e == nil {
		e = resp[0].Error
	}
	if e != nil {
		status = e.status
		s.writeError(w, e)
		return
	}
	writeSearch(w, &resp[0])
}

// answerBufs are answer's working slices and await's timer: pooled for
// one-query requests (oneCall), new for each batch request.
type answerBufs struct {
	resp   []SearchResponse
	jobs   []*job // by request; nil where none was queued
	queued []*job
	// pool holds reusable jobs (answered ones: their tokens received);
	// hits the last answer's hits (one-query requests: reused by fill).
	pool []*job
	hits []Hit
	// terms: the last one-query request's analyzed terms (prepare; the
	// strings are new per request, the slice is reused).
	terms []string
	timer *time.Timer // stopped between uses
	// abandoned: await gave up on queued jobs (deadline, client gone),
	// which the batcher may still hold: nothing here may be reused.
	abandoned bool
}

// reset sizes the slices for n requests.
func (b *answerBufs) reset(n int) {
	if cap(b.resp) < n {
		b.resp, b.jobs = make([]SearchResponse, n), make([]*job, n)
	}
	b.resp, b.jobs, b.queued = b.resp[:n], b.jobs[:n], b.queued[:0]
	clear(b.resp)
	clear(b.jobs)
}

// job returns a job for q, reused from pool when one is there.
func (b *answerBufs) job(q engine.Query, cost int64, ctx context.Context, deadline, arrive time.Time) *job {
	var j *job
	if n := len(b.pool); n > 0 {
		j, b.pool = b.pool[n-1], b.pool[:n-1]
	} else {
		j = newJob()
	}
	j.reset(q, cost, ctx, deadline, arrive)
	return j
}

// oneCall is the pooled state of one one-query request.
type oneCall struct {
	req  [1]SearchRequest
	bufs answerBufs
}

var oneCalls = sync.Pool{New: func() any { return new(oneCall) }}

// release puts c back in oneCalls, unless its job was abandoned to the
// batcher. The jobs answered go back to c's own pool.
func (c *oneCall) release() {
	b := &c.bufs
	if b.abandoned {
		return
	}
	for _, j := range b.queued {
		j.reset(engine.Query{}, 0, nil, time.Time{}, time.Time{}) // drop the request's references
		b.pool = append(b.pool, j)
	}
	b.queued = b.queued[:0]
	clear(b.resp)
	clear(b.jobs)
	clear(b.terms) // the strings: not kept alive by the pool
	b.terms = b.terms[:0]
	c.req[0] = SearchRequest{}
	oneCalls.Put(c)
}

// handleBatch serves POST /v1/search/batch.
func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request) {
	arrive := time.Now()
	status := http.StatusOK
	defer func() { s.m.observeRequest("batch", status, arrive) }()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		e := apiErr(http.StatusMethodNotAllowed, CodeMethod, "%s: use POST", r.Method)
		status = e.status
		s.writeError(w, e)
		return
	}
	req, e := decodeBody(s, w, r, decodeBatch)
	if e == nil && len(req.Queries) == 0 {
		e = apiErr(400, CodeBadRequest, "no queries")
	}
	if e == nil && len(req.Queries) > s.lim.MaxBatch {
		e = apiErr(400, CodeTooManyQs, "%d queries: at most %d per batch", len(req.Queries), s.lim.MaxBatch)
	}
	if e != nil {
		status = e.status
		s.writeError(w, e)
		return
	}
	tmo := 0
	for _, q := range req.Queries {
		tmo = max(tmo, q.TimeoutMS)
	}
	resp, e := s.answer(r.Context(), arrive.Add(s.timeout(tmo)), req.Queries, arrive, &answerBufs{})
	if e != nil {
		status = e.status
		s.writeError(w, e)
		return
	}
	writeBatch(w, resp)
}

// decodeBody reads a JSON body of at most MaxBodyBytes and decodes it with
// dec (one pass over the bytes: the body is read into a pooled buffer,
// which dec must not keep). A body of known length (Content-Length, already
// checked against the limit) is read as net/http bounds it; one of unknown
// length (chunked) through http.MaxBytesReader.
func decodeBody[T any](s *Server, w http.ResponseWriter, r *http.Request, dec func([]byte) (T, *Error)) (T, *Error) {
	var zero T
	if r.ContentLength > s.lim.MaxBodyBytes {
		return zero, apiErr(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body of %d bytes: at most %d", r.ContentLength, s.lim.MaxBodyBytes)
	}
	b := bodyPool.Get().(*bodyBuf)
	defer bodyPool.Put(b)
	b.buf.Reset()
	body := r.Body
	if r.ContentLength < 0 {
		body = http.MaxBytesReader(w, r.Body, s.lim.MaxBodyBytes)
	}
	if e := b.read(body, s.lim.MaxBodyBytes); e != nil {
		return zero, e
	}
	return dec(b.buf.Bytes())
}

// bodyBuf is a pooled request body: the buffer and the reader that bounds
// it (kept with it: a new one per request would escape to the heap).
type bodyBuf struct {
	buf bytes.Buffer
	lr  io.LimitedReader
}

// read reads r into b.buf (readBody), then drops r.
func (b *bodyBuf) read(r io.Reader, max int64) *Error {
	b.lr = io.LimitedReader{R: r, N: max + 1}
	e := readBody(&b.buf, &b.lr, max)
	b.lr.R = nil
	return e
}

// bodyPool holds the buffers request bodies are read into. Buffers that
// grew past 64 KiB (batch requests) are still reused: the pool drops them
// under memory pressure (at each GC).
var bodyPool = sync.Pool{New: func() any { return new(bodyBuf) }}

// searchFromQuery reads GET /v1/search?q=&mode=&k=&qtf=&stored=&timeout_ms=.
func searchFromQuery(r *http.Request) (SearchRequest, *Error) {
	v := r.URL.Query()
	req := SearchRequest{ID: v.Get("id"), Q: v.Get("q"), Mode: v.Get("mode")}
	ints := []struct {
		name string
		dst  *int
	}{{"k", &req.K}, {"timeout_ms", &req.TimeoutMS}}
	for _, f := range ints {
		if s := v.Get(f.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return req, apiErr(400, CodeBadRequest, "%s=%q: want an integer", f.name, s)
			}
			*f.dst = n
		}
	}
	bools := []struct {
		name string
		dst  *bool
	}{{"qtf", &req.QTF}, {"stored", &req.Stored}}
	for _, f := range bools {
		if s := v.Get(f.name); s != "" {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return req, apiErr(400, CodeBadRequest, "%s=%q: want true or false", f.name, s)
			}
			*f.dst = b
		}
	}
	return req, nil
}

// timeout is a request's deadline: ms milliseconds (0: the default),
// capped at MaxTimeout.
func (s *Server) timeout(ms int) time.Duration {
	if ms <= 0 {
		return s.lim.DefaultTimeout
	}
	if ms > int(s.lim.MaxTimeout/time.Millisecond) {
		return s.lim.MaxTimeout
	}
	return time.Duration(ms) * time.Millisecond
}

// prepare validates req and analyzes it into a query. With terms not nil
// the query's terms are appended to (*terms)[:0], which keeps the grown
// slice (a one-query request's pooled buffer, answerBufs.terms); else
// they are in a new slice.
func (s *Server) prepare(req *SearchRequest, terms *[]string) (engine.Query, *Error) {
	if req.Mode == "" {
		req.Mode = s.lim.DefaultMode.String()
	}
	mode, err := engine.ParseMode(req.Mode)
	if err != nil {
		return engine.Query{}, apiErr(400, CodeBadRequest, "mode %q: want and, or or andor", req.Mode)
	}
	req.Mode = mode.String()
	if req.K == 0 {
		req.K = s.lim.DefaultK
	}
	if req.K < 1 || req.K > s.lim.MaxK {
		return engine.Query{}, apiErr(400, CodeBadRequest, "k %d: want 1..%d", req.K, s.lim.MaxK)
	}
	if req.TimeoutMS < 0 {
		return engine.Query{}, apiErr(400, CodeBadRequest, "timeout_ms %d: want >= 0", req.TimeoutMS)
	}
	if e := checkText(req.Q, s.lim.MaxQueryLen); e != nil {
		return engine.Query{}, e
	}
	var ts []string
	if terms != nil {
		ts = s.e.Analyzer().AppendTokensString((*terms)[:0], req.Q)
		*terms = ts
	} else {
		ts = s.e.Analyzer().Tokens(req.Q)
	}
	if len(ts) == 0 {
		return engine.Query{}, apiErr(400, CodeNoTerms, "%q has no searchable terms (empty, or only punctuation or stop words)", req.Q)
	}
	if len(ts) > s.lim.MaxTerms {
		return engine.Query{}, apiErr(400, CodeTooManyTerms, "%d terms: at most %d", len(ts), s.lim.MaxTerms)
	}
	return engine.Query{ID: req.ID, Terms: ts, Mode: mode, K: req.K, QTF: req.QTF}, nil
}

// cost is j's query's share of the PARA threshold: the length of its
// shortest list (0 when a term is not in the index; the scheduler's
// Features.Min); 0 without looking when batches hold one query (the CPU's
// default), where no threshold can close a batch earlier. The terms are
// looked up (index.LookupDictDF) into j's buffers and handed to the
// backend with the query (engine.Query.Dict), which then does not look
// them up a second time (issue 25: the GPU's batch preparation did, on the
// pipeline's host stage).
func (s *Server) cost(j *job) int64 {
	if s.b.cfg.MaxBatch == 1 {
		return 0
	}
	q, l := &j.q, &j.look
	n := len(q.Terms)
	if cap(l.IDs) < n {
		l.IDs, l.DFs = make([]int, n), make([]uint32, n)
	}
	l.X, l.IDs, l.DFs = s.x, l.IDs[:n], l.DFs[:n]
	s.x.LookupDictDF(q.Terms, l.IDs, l.DFs)
	q.Dict = l
	var c uint32
	for i, id := range l.IDs {
		if id < 0 {
			return 0
		}
		if c == 0 || l.DFs[i] < c {
			c = l.DFs[i]
		}
	}
	return int64(c)
}

// answer runs reqs (valid or not) and answers each; a request-wide error
// (queue full, shutting down, deadline, client gone) is returned instead.
// ctx is the request's (done when the client goes away); deadline bounds
// the wait for the answers. The answers are in bufs (valid until bufs is
// reset); bufs.abandoned tells whether jobs were left to the batcher.
func (s *Server) answer(ctx context.Context, deadline time.Time, reqs []SearchRequest, arrive time.Time, bufs *answerBufs) ([]SearchResponse, *Error) {
	bufs.reset(len(reqs))
	resp, jobs := bufs.resp, bufs.jobs
	for i := range reqs {
		req := &reqs[i]
		var terms *[]string
		if len(reqs) == 1 {
			terms = &bufs.terms // pooled with a one-query request's state
		}
		q, e := s.prepare(req, terms)
		resp[i] = SearchResponse{ID: req.ID, Query: req.Q, Mode: req.Mode, K: req.K, Error: e}
		if e != nil {
			s.m.observeQuery(req.Mode, e.Code, "", 0)
			continue
		}
		if s.cfg.Cache != nil {
			if res, ok := s.cfg.Cache.Get(nil, s.x, q); ok {
				s.fill(&resp[i], req, res, "cache", 0, bufs)
				resp[i].Timing.TotalMS = msSince(arrive)
				s.m.observeQuery(req.Mode, "ok", "cache", time.Since(arrive))
				continue
			}
		}
		j := bufs.job(q, 0, ctx, deadline, arrive)
		j.cost = s.cost(j)
		jobs[i] = j
		bufs.queued = append(bufs.queued, jobs[i])
	}
	queued := bufs.queued
	if len(queued) == 0 {
		return resp, nil
	}
	if s.draining.Load() {
		return nil, apiErr(http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down")
	}
	switch wait, err := s.b.submit(queued, deadline); {
	case errors.Is(err, errQueueFull):
		s.m.rejected.WithLabelValues(CodeQueueFull).Inc()
		return nil, apiErr(http.StatusTooManyRequests, CodeQueueFull, "the queue is full (%d queries waiting); retry later", s.b.cfg.QueueSize)
	case errors.Is(err, errOverloaded):
		s.m.rejected.WithLabelValues(CodeOverloaded).Inc()
		e := apiErr(http.StatusServiceUnavailable, CodeOverloaded, "over capacity: the queue's expected wait is %v, past this request's deadline or --max-queue-wait; retry later", wait.Round(time.Millisecond))
		e.retryAfter = max(1, int(wait.Round(time.Second)/time.Second))
		return nil, e
	case errors.Is(err, errClosed):
		s.m.rejected.WithLabelValues(CodeShuttingDown).Inc()
		return nil, apiErr(http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down")
	}
	if e := s.await(ctx, deadline, queued, bufs); e != nil {
		bufs.abandoned = true
		return nil, e
	}
	woke := time.Now() // the handler runs again: answer_wake's end
	for i, j := range jobs {
		if j == nil {
			continue
		}
		req := &reqs[i]
		if err := j.resp.Err; err != nil {
			if ctx.Err() != nil {
				return nil, s.ctxError(false)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, s.ctxError(true)
			}
			resp[i].Error = s.queryError(err)
			s.m.observeQuery(req.Mode, resp[i].Error.Code, j.proc, time.Since(arrive))
			continue
		}
		s.m.queueWait.Observe(j.start.Sub(arrive).Seconds())
		s.m.answerWake.Observe(max(0, woke.Sub(j.end)).Seconds())
		s.fill(&resp[i], req, j.resp.Results, j.proc, j.batchN, bufs)
		resp[i].Timing = Timing{QueueMS: ms(j.start.Sub(arrive)), BatchMS: ms(j.end.Sub(j.start)),
			EngineMS: ms(j.resp.Stats.Time), TotalMS: msSince(arrive)}
		s.m.observeQuery(req.Mode, "ok", j.proc, time.Since(arrive))
		if s.cfg.Cache != nil {
			s.cfg.Cache.Set(s.x, j.q, j.resp.Results)
		}
	}
	return resp, nil
}

// await waits for the jobs' answers, the client's leaving (ctx) or the
// deadline, whichever comes first. A timer (bufs') is armed only when an
// answer is not there yet (a query run in the handler's goroutine is done
// already); it is stopped on return.
func (s *Server) await(ctx context.Context, deadline time.Time, js []*job, bufs *answerBufs) *Error {
	armed := false
	for _, j := range js {
		select {
		case <-j.done:
			continue
		default:
		}
		if !armed {
			armed = true
			if bufs.timer == nil {
				bufs.timer = time.NewTimer(time.Until(deadline))
			} else {
				bufs.timer.Reset(time.Until(deadline)) // stopped: no stale tick (Go 1.23 timers)
			}
			defer bufs.timer.Stop()
		}
		select {
		case <-j.done:
		case <-ctx.Done():
			return s.ctxError(false)
		case <-bufs.timer.C:
			return s.ctxError(true)
		}
	}
	return nil
}

// ctxError is the error of a request whose deadline passed (deadline) or
// whose client went away.
func (s *Server) ctxError(deadline bool) *Error {
	if deadline {
		s.m.rejected.WithLabelValues(CodeDeadline).Inc()
		return apiErr(http.StatusGatewayTimeout, CodeDeadline, "the request's deadline passed before its answer")
	}
	s.m.rejected.WithLabelValues(CodeCanceled).Inc()
	return apiErr(499, CodeCanceled, "the client went away")
}

// queryError maps a query's error to an API error.
func (s *Server) queryError(err error) *Error {
	switch {
	case errors.Is(err, engine.ErrEmptyQuery):
		return apiErr(400, CodeNoTerms, "%v", err)
	case errors.Is(err, engine.ErrTooManyTerms):
		return apiErr(400, CodeTooManyTerms, "%v", err)
	case errors.Is(err, engine.ErrBadK), errors.Is(err, engine.ErrBadMode):
		return apiErr(400, CodeBadRequest, "%v", err)
	case errors.Is(err, context.DeadlineExceeded):
		return apiErr(http.StatusGatewayTimeout, CodeDeadline, "%v", err)
	}
	return apiErr(http.StatusInternalServerError, CodeBackend, "%v", err)
}

// fill sets r's hits from res: in bufs.hits when r is a one-query
// request's (len(bufs.resp) == 1: the slice is reused by the next request
// of the pooled oneCall), else in a new slice.
func (s *Server) fill(r *SearchResponse, req *SearchRequest, res []topk.Result, proc string, batchN int, bufs *answerBufs) {
	if len(bufs.resp) == 1 {
		if cap(bufs.hits) < len(res) || bufs.hits == nil { // never nil: [] encodes as [], nil as null
			bufs.hits = make([]Hit, len(res), max(len(res), 16))
		}
		r.Hits = bufs.hits[:len(res)]
	} else {
		r.Hits = make([]Hit, len(res))
	}
	stored := req.Stored && s.x.HasStored()
	for i, h := range res {
		r.Hits[i] = Hit{Rank: i + 1, ID: s.x.ExternalID(h.Doc), Score: h.Score}
		if stored {
			if b := s.x.Stored(h.Doc); len(b) > 0 && json.Valid(b) {
				r.Hits[i].Stored = json.RawMessage(b)
			}
		}
	}
	r.Processor, r.BatchSize = proc, batchN
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func msSince(t time.Time) float64 { return ms(time.Since(t)) }
