package serve

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/qpengine/qp/engine"
)

// metrics are the server's Prometheus metrics (names in docs/API.md).
type metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec   // endpoint, code (HTTP status)
	reqDuration   *prometheus.HistogramVec // endpoint
	queries       *prometheus.CounterVec   // mode, code (ok or an error code), processor
	qDuration     *prometheus.HistogramVec // processor
	batchSize     prometheus.Histogram
	batchDuration prometheus.Histogram
	rejected      *prometheus.CounterVec // code
	fallbacks     prometheus.Counter
	backendErrors prometheus.Counter
}

// latencyBuckets span 0.1 ms to 10 s.
var latencyBuckets = prometheus.ExponentialBucketsRange(0.0001, 10, 26)

func newMetrics(reg *prometheus.Registry, s *Server) *metrics {
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "qp_serve_requests_total",
			Help: "HTTP requests to the search endpoints, by endpoint and HTTP status."}, []string{"endpoint", "code"}),
		reqDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "qp_serve_request_duration_seconds",
			Help: "Time from a search request's arrival to its answer, by endpoint.", Buckets: latencyBuckets}, []string{"endpoint"}),
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "qp_serve_queries_total",
			Help: "Queries answered, by mode, outcome (ok or an error code) and the processor that answered (cpu, gpu, cache, cpu-fallback; empty when none ran)."},
			[]string{"mode", "code", "processor"}),
		qDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "qp_serve_query_duration_seconds",
			Help: "Time from a query's arrival to its answer, by processor.", Buckets: latencyBuckets}, []string{"processor"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "qp_serve_batch_size",
			Help: "Queries per batch handed to the processor.", Buckets: prometheus.ExponentialBuckets(1, 2, 14)}),
		batchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "qp_serve_batch_duration_seconds",
			Help: "Time of one batch on the processor.", Buckets: latencyBuckets}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "qp_serve_rejected_total",
			Help: "Requests refused or abandoned after validation: queue_full, shutting_down, deadline_exceeded, canceled."}, []string{"code"}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "qp_serve_fallback_queries_total",
			Help: "Queries answered by the CPU after the primary processor (the GPU) failed them."}),
		backendErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "qp_serve_backend_errors_total",
			Help: "Batches in which the primary processor failed."}),
	}
	reg.MustRegister(m.requests, m.reqDuration, m.queries, m.qDuration, m.batchSize, m.batchDuration,
		m.rejected, m.fallbacks, m.backendErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "qp_serve_queue_depth",
		Help: "Queries waiting for a batch."}, func() float64 { return float64(s.b.depth()) }))
	if c := s.cfg.Cache; c != nil {
		reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "qp_serve_cache_hits_total", Help: "Result cache hits."},
				func() float64 { return float64(c.Stats().Hits) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "qp_serve_cache_misses_total", Help: "Result cache misses."},
				func() float64 { return float64(c.Stats().Misses) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "qp_serve_cache_hit_ratio", Help: "Result cache hits / lookups since start."},
				func() float64 { return c.Stats().HitRate() }))
	}
	if g := s.e.GPU(); g != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "qp_serve_gpu_resident_bytes",
				Help: "Bytes of postings resident in GPU memory."}, func() float64 { return float64(g.ResidentBytes()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "qp_serve_gpu_memory_total_bytes",
				Help: "The GPU's memory."}, func() float64 { return float64(g.Device().TotalMemory) }))
	}
	return m
}

func (m *metrics) observeBatch(n int, d time.Duration) {
	m.batchSize.Observe(float64(n))
	m.batchDuration.Observe(d.Seconds())
}

func (m *metrics) observeRequest(endpoint string, status int, arrive time.Time) {
	m.requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
	m.reqDuration.WithLabelValues(endpoint).Observe(time.Since(arrive).Seconds())
}

// observeQuery counts one query. mode is the request's (any string: it is
// reduced to a known mode or "invalid", so that clients cannot grow the
// label set).
func (m *metrics) observeQuery(mode, code, proc string, d time.Duration) {
	switch mode {
	case "":
		mode = "and"
	case "and", "or", "andor":
	default:
		if md, err := engine.ParseMode(mode); err == nil {
			mode = md.String()
		} else {
			mode = "invalid"
		}
	}
	m.queries.WithLabelValues(mode, code, proc).Inc()
	if code == "ok" {
		m.qDuration.WithLabelValues(proc).Observe(d.Seconds())
	}
}
