// Package serve is qp's query server: an HTTP/JSON API over one open index
// (qp.Engine) that batches concurrent requests live (batcher.go: the PARA
// threshold of Ao et al. VLDB'11 §4.1 or a short maximum wait closes a
// batch), answers from a result cache when it can, falls back to the CPU
// when the GPU fails, bounds what it accepts (body size, terms, k, queue
// length, deadlines), exports Prometheus metrics and serves a search page.
// The API is described in docs/API.md.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/cache"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/topk"
)

// Backend runs batches of queries; *qp.Engine is one (the server's default
// primary), so is every engine.Backend.
type Backend interface {
	SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error
}

// Limits bound what one request may ask. Zero fields take the defaults.
type Limits struct {
	MaxBodyBytes int64 // request body (default 1 MiB)
	MaxQueryLen  int   // bytes of one query's text (default 4096)
	MaxTerms     int   // analyzed terms of one query (default 64)
	MaxK         int   // k (default 1000; at most topk.MaxK)
	DefaultK     int   // k when a request gives none (default 10)
	// DefaultMode is the mode of a request that names none (default And).
	DefaultMode engine.Mode
	MaxBatch    int // queries of one batch request (default 1000)
	// DefaultTimeout is a request's deadline when it names none (default
	// 5 s); MaxTimeout caps the deadline a request may ask (default 30 s).
	DefaultTimeout, MaxTimeout time.Duration
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = 1 << 20
	}
	def(&l.MaxQueryLen, 4096)
	def(&l.MaxTerms, 64)
	def(&l.MaxK, 1000)
	l.MaxK = min(l.MaxK, topk.MaxK)
	def(&l.DefaultK, 10)
	l.DefaultK = min(l.DefaultK, l.MaxK)
	def(&l.MaxBatch, 1000)
	if l.DefaultMode == 0 {
		l.DefaultMode = engine.And
	}
	if l.DefaultTimeout <= 0 {
		l.DefaultTimeout = 5 * time.Second
	}
	if l.MaxTimeout <= 0 {
		l.MaxTimeout = 30 * time.Second
	}
	l.DefaultTimeout = min(l.DefaultTimeout, l.MaxTimeout)
	return l
}

// Config configures a Server. The zero value serves the engine with the
// defaults, no cache, and logs to nowhere.
type Config struct {
	Limits  Limits
	Batch   BatchConfig
	Options engine.Options // the algorithms (zero: the defaults)
	Cache   *cache.Cache   // nil: no result cache

	// Primary runs the batches (nil: the Engine). PrimaryName names it in
	// answers and metrics (default: the engine's backend name, "cpu" or
	// "gpu").
	Primary     Backend
	PrimaryName string
	// Fallback answers the queries whose batch failed on Primary for a
	// reason other than the query itself (a GPU error, out of memory);
	// nil: a CPU backend over the index when the engine runs on a GPU,
	// none otherwise.
	Fallback Backend
	Threads  int // the fallback CPU's workers (0: all cores)

	// HTTP timeouts (defaults: read header 5 s, read 10 s, write 60 s,
	// idle 120 s).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration

	// LeanHTTP answers the plain one-query requests (POST /v1/search with
	// the whole request in one read) on a lean HTTP/1.1 path of the
	// server's own, and hands every other connection to net/http
	// (leanhttp.go: about a third less server CPU per such request; a
	// client that leaves while its query waits is not noticed).
	LeanHTTP bool

	// Pprof serves the Go runtime's profiles at /debug/pprof/
	// (net/http/pprof): for diagnosis under load, off by default.
	Pprof bool

	Logger   *slog.Logger         // nil: discard
	Registry *prometheus.Registry // nil: a new one (see Server.Registry)
}

// Server is a running query server. Create it with New, serve it with
// Serve, stop it with Shutdown.
type Server struct {
	e        *qp.Engine
	x        *index.Index
	cfg      Config
	lim      Limits
	primary  Backend
	fallback Backend
	pname    string
	b        *batcher
	m        *metrics
	log      *slog.Logger
	hs       *http.Server
	mux      *http.ServeMux
	draining atomic.Bool
	leanMu   sync.Mutex
	lean     *leanSet // the lean path's connections (LeanHTTP, once Served)
}

// New returns a server over e (which it does not close).
func New(e *qp.Engine, cfg Config) (*Server, error) {
	if e == nil {
		panic("BUG: serve.New with a nil engine")
	}
	if _, err := cfg.Options.Resolve(); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	s := &Server{e: e, x: e.Index(), cfg: cfg, lim: cfg.Limits.withDefaults(), primary: cfg.Primary,
		fallback: cfg.Fallback, pname: cfg.PrimaryName, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.primary == nil {
		s.primary = e
	}
	if s.pname == "" {
		s.pname = e.Backend().Name()
	}
	var gpuThreshold int64
	cpuWorkers := 0
	if c, ok := s.primary.(*qp.Engine); ok && c == e {
		if cb, ok := e.Backend().(*engine.CPU); ok {
			cpuWorkers = cb.Workers()
		}
	}
	pipe := false
	if g := e.GPU(); g != nil {
		gpuThreshold = int64(g.Threshold())
		// Pipelined when the GPU itself runs the batches (--device gpu),
		// not behind the CPU/GPU router (--device auto).
		pipe = s.primary == Backend(e) && e.Backend() == engine.Backend(g)
		if s.fallback == nil {
			s.fallback = engine.NewCPU(s.x, cfg.Threads)
		}
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s.m = newMetrics(reg, s)
	s.b = newBatcher(cfg.Batch.withDefaults(gpuThreshold, cpuWorkers, pipe), s.runBatch, s.m.observeBatch)
	s.b.onPhases = s.m.observePhases
	s.m.registerPipe(s.b)
	s.m.registerCloses(s.b)
	s.mux = s.routes()
	s.hs = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: orDefault(cfg.ReadHeaderTimeout, 5*time.Second),
		ReadTimeout:       orDefault(cfg.ReadTimeout, 10*time.Second),
		WriteTimeout:      orDefault(cfg.WriteTimeout, 60*time.Second),
		IdleTimeout:       orDefault(cfg.IdleTimeout, 120*time.Second),
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	return s, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Handler is the server's HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.mux }

// Registry is the Prometheus registry the server's metrics are in.
func (s *Server) Registry() *prometheus.Registry { return s.m.reg }

// Limits are the limits in force (defaults filled in).
func (s *Server) Limits() Limits { return s.lim }

// Batch is the batching configuration in force (defaults filled in).
func (s *Server) Batch() BatchConfig { return s.b.cfg }

// Stats are cumulative counts since the server started (for load tests:
// differences between two calls describe the interval).
type Stats struct {
	Batches   int64         // batches run on the processor
	Queries   int64         // queries in them
	QueueWait time.Duration // the sum over those queries of arrival to batch start
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	return Stats{Batches: s.b.stats.batches.Load(), Queries: s.b.stats.queries.Load(),
		QueueWait: time.Duration(s.b.stats.queueNanos.Load())}
}

// Serve accepts connections on ln until Shutdown; it returns nil after a
// Shutdown, else the listener's error.
func (s *Server) Serve(ln net.Listener) error {
	s.log.Info("serving", "addr", ln.Addr().String(), "processor", s.pname,
		"docs", s.x.NumDocs(), "batch_threshold", s.b.cfg.Threshold, "batch_max_wait", s.b.cfg.MaxWait.String())
	if s.cfg.LeanHTTP {
		return s.serveLean(ln)
	}
	err := s.hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the server gracefully: /readyz turns 503, the listeners
// close, every request already accepted is answered (its batch runs), then
// the batcher stops. ctx bounds the wait; when it ends first, Shutdown
// closes the remaining connections and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.leanMu.Lock()
	if s.lean != nil {
		s.lean.ln.Close() // no more connections
	}
	s.leanMu.Unlock()
	err := s.hs.Shutdown(ctx)
	if err != nil {
		s.hs.Close()
	}
	if lerr := s.shutdownLean(ctx); err == nil && lerr != nil {
		err = lerr
	}
	s.b.close()
	if s.b.cfg.pipe {
		// The served batches' device cost, for a log beside dfit.sh's rows.
		rs, seq := s.m.blog.after(0)
		r := batchReport(rs, seq)
		s.log.Info("served batches (the last kept; GET /debug/batches)", "batches", r.Batches, "mean_n", math.Round(r.MeanN),
			"device_a_ms", r.Device.A*1e3, "device_b_us", r.Device.B*1e6, "owner_a_ms", r.Owner.A*1e3, "owner_b_us", r.Owner.B*1e6)
	}
	s.log.Info("stopped", "error", err)
	return err
}

// Close stops the batcher of a server that was never Served (tests of the
// Handler alone); it answers every queued request first.
func (s *Server) Close() { s.draining.Store(true); s.b.close() }

// runBatch is the batcher's runFunc: the batch on the primary, then the
// queries that failed there for a reason of the processor's on the
// fallback (counted in qp_serve_fallback_queries_total).
func (s *Server) runBatch(ctx context.Context, qs []engine.Query, out []engine.Response, procs []string) error {
	err := s.primary.SearchBatch(ctx, qs, s.cfg.Options, out)
	for i := range procs {
		procs[i] = s.pname
	}
	if s.fallback == nil {
		if err != nil {
			s.m.backendErrors.Inc()
			s.log.Error("batch failed", "queries", len(qs), "error", err)
		}
		return err
	}
	var redo []int
	for i := range out {
		if (err != nil && out[i].Err == nil) || (out[i].Err != nil && !queryError(out[i].Err)) {
			redo = append(redo, i)
		}
	}
	if err != nil && ctx.Err() == nil {
		redo = redo[:0]
		for i := range out {
			redo = append(redo, i)
		}
	}
	if len(redo) == 0 {
		return err
	}
	s.m.backendErrors.Inc()
	s.m.fallbacks.Add(float64(len(redo)))
	s.log.Warn("processor failed; answering on the CPU", "processor", s.pname, "queries", len(redo), "batch", len(qs), "error", firstErr(err, out, redo))
	fq := make([]engine.Query, len(redo))
	fo := make([]engine.Response, len(redo))
	for k, i := range redo {
		fq[k] = qs[i]
	}
	ferr := s.fallback.SearchBatch(ctx, fq, s.cfg.Options, fo)
	for k, i := range redo {
		out[i], procs[i] = fo[k], "cpu-fallback"
		if ferr != nil && out[i].Err == nil {
			out[i].Err = ferr
		}
	}
	return nil
}

func firstErr(err error, out []engine.Response, redo []int) error {
	if err != nil {
		return err
	}
	return out[redo[0]].Err
}

// queryError reports whether err is the query's own fault (the same on any
// processor), not the processor's.
func queryError(err error) bool {
	for _, q := range []error{engine.ErrEmptyQuery, engine.ErrTooManyTerms, engine.ErrBadK, engine.ErrBadMode,
		context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, q) {
			return true
		}
	}
	return false
}
