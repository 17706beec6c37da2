package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/qpengine/qp/cache"
	"github.com/qpengine/qp/client"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/serve"
	"github.com/qpengine/qp/topk"
)

func init() {
	c := command{name: "serve", args: "INDEX [--addr 127.0.0.1:8080] [--device auto|cpu|gpu] [flags]", summary: "serve queries over HTTP/JSON (live batching, metrics, a search page)"}
	c.run = func(args []string) error {
		fs := newFlags(c, `Keeps the index (and the GPU) loaded and answers queries over HTTP:
POST /v1/search, POST /v1/search/batch, GET /v1/search?q=&mode=&k=, a
search page at /, Prometheus metrics at /metrics, /healthz and /readyz,
and with --device gpu the recent batches' phases at /debug/batches
(docs/API.md). Concurrent requests are batched live: a batch closes when
its queries' shortest lists reach the PARA threshold, when it holds
--batch-max queries or as many as the processor's measured cost model
expects to answer within --batch-budget, when its oldest request has
waited --batch-wait, or (unless --batch-lazy) when no batch is running.
With --device gpu two batches are in flight, one preparing on the host
while the other runs on the GPU, and the next batch closes when the GPU
is about to be free (its batch's predicted end), so batches stay small at
moderate load and grow under a backlog up to an automatic cap.
On the CPU each query runs alone, one per worker (--batch-max 1, --inflight
the workers). A request expected to wait past its deadline (or longer than
--max-queue-wait) for its batch is refused at once with 503 overloaded.
SIGTERM or SIGINT stops accepting, answers every accepted request, then
exits. --mode and -k are the defaults of requests that name none.`)
		qf := addQueryFlags(fs)
		addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (host:port)")
		wait := fs.Duration("batch-wait", serve.DefaultMaxWait, "longest a request waits for its batch to close")
		threshold := fs.String("batch-threshold", "", "PARA threshold: a batch closes when its queries' shortest lists hold this\nmany postings (default: the GPU's --gpu-threshold, or 1M on the CPU); not\nwith --device gpu unless --batch-lazy (the GPU's time closes its batches)")
		maxBatch := fs.Int("batch-max", 0, fmt.Sprintf("most queries per batch (0: %d; 1 on the CPU)", serve.DefaultMaxBatch))
		budget := fs.Duration("batch-budget", 0, fmt.Sprintf("cap a batch's expected time on the processor at this (its size from the\nmeasured cost per batch and per query; negative: no cap; 0: on --device\ngpu automatic (the batch whose fixed cost is a tenth of its time), none\nwith --device auto, %v otherwise)", serve.DefaultBudget))
		queueWait := fs.Duration("max-queue-wait", 0, "refuse (503 overloaded, Retry-After) a request expected to wait longer\nthan this for its batch (0: none; a request expected to wait past its\ndeadline is always refused)")
		lean := fs.Bool("lean-http", false, "answer plain one-query requests (POST /v1/search arriving whole) on a lean\nHTTP/1.1 path of the server's own, every other connection on net/http:\nabout a third less server CPU per such request; a client that leaves while\nits query waits is not noticed (docs/API.md)")
		ownerCPU := fs.String("owner-cpu", "off", "run the GPU's CUDA owner thread (every driver call of the batches' launch\nsets) on a CPU of its own: auto (the process's highest CPU), a CPU number,\nor off; every other thread of the process keeps off that CPU (their\nGOMAXPROCS stays at the process's CPU count); Linux, --device gpu or auto")
		ownerPoll := fs.Bool("owner-poll", false, "the CUDA owner thread waits for the GPU by polling (cuStreamQuery) rather\nthan in one blocking driver call, keeping its Go scheduler slot (P) across\nthe wait; it busies its core for the wait as the driver's spin does: meant\nwith --owner-cpu")
		gpuProfile := fs.Bool("gpu-profile", false, "time each batch's GPU phases with CUDA events (GET /debug/batches' gpu_ns;\nabout twice the driver calls a batch: for diagnosis)")
		pprofOn := fs.Bool("pprof", false, "serve Go profiles at /debug/pprof/ (net/http/pprof; for diagnosis, not\nfor an exposed address)")
		lazy := fs.Bool("batch-lazy", false, "keep a batch open until its threshold, --batch-max or --batch-wait closes it,\neven when the processor is idle (default: an idle processor takes the\nforming batch at once)")
		inflight := fs.Int("inflight", 0, "batches running at once (0: 2 with --device gpu (one prepares on the\nhost while the other runs), 1 with --device auto, the workers on the CPU)")
		queue := fs.Int("queue", serve.DefaultQueueSize, "most queries waiting for a batch (more: 429 with Retry-After)")
		cacheSize := fs.String("cache", "", "result cache of this size (e.g. 64M; default none)")
		maxK := fs.Int("max-k", 1000, "largest k a request may ask")
		maxTerms := fs.Int("max-terms", 64, "most terms of one query after analysis")
		maxBody := fs.String("max-body", "1M", "largest request body")
		maxBatchQ := fs.Int("max-batch-queries", 1000, "most queries of one /v1/search/batch request")
		timeout := fs.Duration("timeout", 5*time.Second, "a request's deadline when it names none")
		maxTimeout := fs.Duration("max-timeout", 30*time.Second, "the longest deadline a request may ask")
		grace := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM, how long to wait for accepted requests")
		logLevel := fs.String("log-level", "info", "debug, info, warn or error")
		logFormat := fs.String("log-format", "text", "text or json (log/slog, on standard error)")
		pos, err := parseArgs(fs, args, 1)
		if err != nil {
			return err
		}
		log, err := newLogger(*logLevel, *logFormat)
		if err != nil {
			return err
		}
		body, err := parseSize(*maxBody)
		if err != nil || body <= 0 {
			return fmt.Errorf("--max-body %q: want a size such as 1M", *maxBody)
		}
		for _, f := range []struct {
			name string
			v    int
		}{{"queue", *queue}, {"max-k", *maxK}, {"max-terms", *maxTerms}, {"max-batch-queries", *maxBatchQ}} {
			if f.v < 1 {
				return fmt.Errorf("--%s %d: want at least 1", f.name, f.v)
			}
		}
		if *maxBatch < 0 || *inflight < 0 {
			return fmt.Errorf("--batch-max %d, --inflight %d: want at least 0 (0: the default)", *maxBatch, *inflight)
		}
		if *wait <= 0 || *timeout <= 0 || *maxTimeout <= 0 || *grace <= 0 {
			return errors.New("--batch-wait, --timeout, --max-timeout and --shutdown-timeout must be positive")
		}
		owner, err := parseOwnerCPU(*ownerCPU)
		if err != nil {
			return err
		}
		var thr int64
		if *threshold != "" {
			t, err := parseThreshold("batch-threshold", *threshold)
			if err != nil {
				return err
			}
			thr = int64(t)
		}
		e, mode, opt, err := qf.openEngine(pos[0])
		if err != nil {
			return err
		}
		defer e.Close()
		if err := tuneOwner(e, owner, *ownerPoll, *gpuProfile); err != nil {
			return err
		}
		cfg := serve.Config{
			Limits: serve.Limits{MaxBodyBytes: body, MaxTerms: *maxTerms, MaxK: *maxK, DefaultK: *qf.k,
				DefaultMode: mode, MaxBatch: *maxBatchQ, DefaultTimeout: *timeout, MaxTimeout: *maxTimeout},
			Batch: serve.BatchConfig{Threshold: thr, MaxWait: *wait, MaxBatch: *maxBatch, Inflight: *inflight, QueueSize: *queue, Lazy: *lazy,
				Budget: *budget, MaxQueueWait: *queueWait},
			Options: opt, Threads: *qf.threads, Logger: log, Pprof: *pprofOn, LeanHTTP: *lean,
		}
		if *cacheSize != "" {
			n, err := parseSize(*cacheSize)
			if err != nil || n <= 0 {
				return fmt.Errorf("--cache %q: want a size such as 64M", *cacheSize)
			}
			if cfg.Cache, err = cache.New(cache.Config{MaxBytes: n}); err != nil {
				return err
			}
			defer cfg.Cache.Close()
		}
		return serveIndex(e.Index().NumDocs(), *addr, *grace, cfg, func() (*serve.Server, error) { return serve.New(e, cfg) })
	}
	register(c)
}

// serveIndex listens on addr, serves until SIGTERM or SIGINT, then shuts
// down gracefully within grace.
func serveIndex(docs int, addr string, grace time.Duration, cfg serve.Config, mk func() (*serve.Server, error)) error {
	s, err := mk()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.Close()
		return fmt.Errorf("--addr: %w", err)
	}
	fmt.Fprintf(stderr, "qp serve: %d documents at http://%s/ (Ctrl-C or SIGTERM stops)\n", docs, ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	stop() // a second signal kills the process
	cfg.Logger.Info("shutting down", "grace", grace.String())
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w (requests still running after --shutdown-timeout %v were cut off)", err, grace)
	}
	return <-errc
}

// newLogger returns a log/slog logger on standard error.
func newLogger(level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, o)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// remoteChunk is the number of queries of one batch request of qp query
// --server (within the server's default --max-batch-queries), and
// remoteInflight the requests in flight at once.
const (
	remoteChunk    = 500
	remoteInflight = 4
)

// queryServer is qp query --server: the same queries, answered by a qp
// server, with the same output as a local run (the server analyzes the
// text with the index's analyzer and answers the engine's float32 scores
// exactly).
func queryServer(ctx context.Context, url string, qf *queryFlags, text []string, queries, run, tag string,
	limit int, allowPartial bool) error {
	c, err := client.New(url, nil)
	if err != nil {
		return fmt.Errorf("--server: %w", err)
	}
	if _, err := engine.ParseMode(*qf.mode); err != nil {
		return err
	}
	base := serve.SearchRequest{Mode: *qf.mode, K: *qf.k, QTF: *qf.qtf}
	if queries == "" {
		req := base
		req.ID, req.Q = "1", strings.Join(text, " ")
		res, err := c.Search(ctx, req)
		if err != nil {
			return err
		}
		for _, h := range res.Hits {
			fmt.Printf("%4d  %-24s %s\n", h.Rank, h.ID, eval.FormatScore(float64(h.Score)))
		}
		fmt.Fprintf(os.Stderr, "%d results in %.3f ms (server %s; processor %s, batch of %d, engine %.3f ms)\n",
			len(res.Hits), res.Timing.TotalMS, url, res.Processor, res.BatchSize, res.Timing.EngineMS)
		return nil
	}
	fq, err := readQueryFile(queries, limit)
	if err != nil {
		return err
	}
	out := io.Writer(os.Stdout)
	if run != "" {
		f, err := os.Create(run)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	w := bufio.NewWriterSize(out, 1<<20)
	// Chunks go out remoteInflight at a time and are written in order.
	nch := (len(fq) + remoteChunk - 1) / remoteChunk
	answers := make([]chan remoteAnswer, nch)
	for i := range answers {
		answers[i] = make(chan remoteAnswer, 1)
	}
	sem := make(chan struct{}, remoteInflight)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	go func() {
		for i := range nch {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				lo, hi := i*remoteChunk, min((i+1)*remoteChunk, len(fq))
				reqs := make([]serve.SearchRequest, hi-lo)
				for j := range reqs {
					reqs[j] = base
					reqs[j].ID, reqs[j].Q = fq[lo+j].ID, fq[lo+j].Text
				}
				res, err := c.SearchBatch(ctx, reqs)
				answers[i] <- remoteAnswer{res, err}
			}()
		}
	}()
	var sum batchSummary
	var b []byte
	var entries []eval.RunEntry
	for i := 0; i < nch; i++ {
		a := <-answers[i]
		<-sem
		if a.err != nil {
			return a.err
		}
		for j, r := range a.res {
			q := engine.Query{ID: fq[i*remoteChunk+j].ID}
			if r.Error != nil {
				sum.add(q, &engine.Response{Err: errors.New(r.Error.Code + ": " + r.Error.Message)})
				continue
			}
			sum.add(q, &engine.Response{Results: make([]topk.Result, len(r.Hits)),
				Stats: engine.Stats{Time: time.Duration(r.Timing.TotalMS * float64(time.Millisecond))}})
			entries = entries[:0]
			for _, h := range r.Hits {
				entries = append(entries, eval.RunEntry{DocID: h.ID, Rank: h.Rank, Score: float64(h.Score)})
			}
			if b, err = eval.AppendRun(b[:0], q.ID, entries, tag); err != nil {
				return err
			}
			if _, err := w.Write(b); err != nil {
				return fmt.Errorf("writing the run: %w", err)
			}
		}
	}
	wall := time.Since(start)
	if err := w.Flush(); err != nil {
		return err
	}
	if run != "" {
		sum.print(len(fq), wall)
	} else {
		sum.printTo(os.Stderr, len(fq), wall)
	}
	if err := sum.failure(len(fq)); err != nil {
		if !allowPartial {
			return err
		}
		fmt.Fprintf(os.Stderr, "qp query: %v\n", err)
	}
	return nil
}

type remoteAnswer struct {
	res []serve.SearchResponse
	err error
}
