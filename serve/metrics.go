package serve

import (
	"math"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/engine/gpu"
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
	queueWait     prometheus.Histogram
	// A pipelined GPU's batch phases (batcher.go): host preparation, the
	// wait for the device, the device phase.
	prepare, devWait, device prometheus.Histogram
	// ownerRun: the batch's closure on the CUDA owner goroutine (launches
	// and stream waits; gpu.BatchDevice.Run), the part of device the
	// backend itself spends on the device's behalf.
	ownerRun prometheus.Histogram
	// blog: the pipelined batches, each whole (GET /debug/batches).
	blog batchLog
	// answerWake: from a query's batch returning (job.end) to its
	// handler running again to write the answer (the channel close and
	// the goroutine's scheduling: the hand-off a batch of thousands pays
	// once per job).
	answerWake prometheus.Histogram

	// Children resolved once (WithLabelValues hashes its labels and takes
	// a lock on every call): the hot path's label sets.
	reqOK    map[string]prometheus.Counter    // endpoint -> requests{endpoint, 200}
	reqDur   map[string]prometheus.Observer   // endpoint
	queryOK  map[[2]string]prometheus.Counter // {mode, processor} -> queries{mode, ok, processor}
	queryDur map[string]prometheus.Observer   // processor
}

// latencyBuckets: 0.1 ms × 1.2^i, i < 68 (0.1 ms to 20.3 s), each
// bucket 20% wider than the one before: a p99 read off the histogram
// (the upper bound of the bucket that holds it) is within 20% of the
// exact one, where the former 26 buckets from 0.1 ms to 10 s (factor
// 1.58) left 58% (a p99 of 20.5 ms read as "≤ 25.1", of 16 ms as
// "≤ 25.1" too: the 20 ms target fell inside one bucket).
// Bounds are rounded to 3 significant digits (the exposition shows
// le="0.000144", not 0.00014399999999999998).
var latencyBuckets = func() []float64 {
	bs := prometheus.ExponentialBuckets(0.0001, 1.2, 68)
	for i, b := range bs {
		p := math.Pow(10, 2-math.Floor(math.Log10(b)))
		bs[i] = math.Round(b*p) / p
	}
	return bs
}()

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
			Help: "Requests refused or abandoned after validation: queue_full, overloaded, shutting_down, deadline_exceeded, canceled."}, []string{"code"}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "qp_serve_fallback_queries_total",
			Help: "Queries answered by the CPU after the primary processor (the GPU) failed them."}),
		backendErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "qp_serve_backend_errors_total",
			Help: "Batches in which the primary processor failed."}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "qp_serve_queue_wait_seconds",
			Help: "Time from a query's arrival to the start of its batch (queueing).", Buckets: latencyBuckets}),
		prepare: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "qp_serve_batch_prepare_seconds",
			Help: "A pipelined GPU's batch: its host preparation (dictionary lookups; --device gpu only).", Buckets: latencyBuckets}),
		devWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "qp_serve_batch_device_wait_seconds",
			Help: "A pipelined GPU's batch: from its preparation's end to taking the device, held by the batch before it (--device gpu only).", Buckets: latencyBuckets}),
		device: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "qp_serve_batch_device_seconds",
			Help: "A pipelined GPU's batch: its device phase, launch sets and result conversion (--device gpu only).", Buckets: latencyBuckets}),
		ownerRun: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "qp_serve_batch_owner_run_seconds",
			Help: "A pipelined GPU's batch: its launch sets' closure on the CUDA owner goroutine (launches, stream waits, conversions there; part of the device phase; --device gpu only).", Buckets: latencyBuckets}),
		answerWake: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "qp_serve_answer_wake_seconds",
			Help: "Time from a query's batch returning from the processor to its request's handler running to write the answer (queries answered in the handler's own goroutine count 0).", Buckets: latencyBuckets}),
	}
	procs := []string{s.pname}
	if s.cfg.Cache != nil {
		procs = append(procs, "cache")
	}
	if s.fallback != nil {
		procs = append(procs, "cpu-fallback")
	}
	m.resolve(procs)
	reg.MustRegister(m.requests, m.reqDuration, m.queries, m.qDuration, m.batchSize, m.batchDuration,
		m.rejected, m.fallbacks, m.backendErrors, m.queueWait, m.prepare, m.devWait, m.device, m.ownerRun, m.answerWake,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newRuntimeCollector())
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "qp_serve_queue_depth",
		Help: "Queries waiting for a batch."}, func() float64 { return float64(s.b.depth()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "qp_serve_expected_wait_seconds",
		Help: "The wait a query arriving now can expect: queue depth over the saturated throughput (0 until the processor has been saturated)."},
		func() float64 { return s.b.model.expectedWait(s.b.depth()).Seconds() }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "qp_serve_capacity_queries_per_second",
		Help: "The processor's throughput measured while queries were waiting (0 until then)."},
		func() float64 { return s.b.model.capacity() }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "qp_serve_batch_limit",
		Help: "The size cap of the next batch: --batch-max, or fewer when the cost model expects more to exceed --batch-budget."},
		func() float64 { return float64(s.b.limit()) }))
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

// registerPipe exports, on a pipelined GPU (b.cfg.pipe), the batcher's
// fits of the device phase and the host preparation by batch size: the
// inputs of PipeModel's latency bound (pipebound.go), read by qp bench
// pipebound from a running server.
func (m *metrics) registerPipe(b *batcher) {
	if !b.cfg.pipe {
		return
	}
	reg := m.reg
	fit := func(mdl *costModel, slope bool) func() float64 {
		return func() float64 {
			a, b, _ := mdl.fit()
			if slope {
				return b
			}
			return a
		}
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "qp_serve_gpu_device_fixed_seconds",
			Help: "A pipelined GPU's device phase t(n) = a + b·n (taking the device to letting it go) fitted on the recent batches: a (0 before any batch)."}, fit(&b.devModel, false)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "qp_serve_gpu_device_per_query_seconds",
			Help: "A pipelined GPU's device phase fit: b, the time per query."}, fit(&b.devModel, true)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "qp_serve_gpu_prepare_fixed_seconds",
			Help: "A pipelined GPU's host preparation p(n) = c + d·n fitted on the recent batches: c."}, fit(&b.prepModel, false)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "qp_serve_gpu_prepare_per_query_seconds",
			Help: "A pipelined GPU's host preparation fit: d, the time per query."}, fit(&b.prepModel, true)))
}

// registerCloses exports the batcher's count of the batches each rule
// closed (closeReason; counted when the rule fires, before the batch waits
// for a slot).
func (m *metrics) registerCloses(b *batcher) {
	for r := range nCloseReasons {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "qp_serve_batch_closes_total",
			Help:        "Batches closed, by the rule that closed them: idle (the processor, or a pipelined GPU, free), device (a pipelined GPU about to be free), threshold (PARA), cap (size), wait (--batch-wait), drain (shutdown).",
			ConstLabels: prometheus.Labels{"reason": closeReasonNames[r]}},
			func() float64 { return float64(b.closes[r].Load()) }))
	}
}

func (m *metrics) observeBatch(n int, d time.Duration) {
	m.batchSize.Observe(float64(n))
	m.batchDuration.Observe(d.Seconds())
}

// observePhases observes a pipelined batch of n queries' phases and logs
// it (batchLog: GET /debug/batches).
func (m *metrics) observePhases(n int, prep, wait, dev, fin time.Duration, bd *gpu.BatchDevice) {
	m.prepare.Observe(prep.Seconds())
	m.devWait.Observe(wait.Seconds())
	m.device.Observe(dev.Seconds())
	if bd != nil {
		m.ownerRun.Observe(bd.Run.Seconds())
	}
	m.blog.record(n, prep, wait, dev, fin, bd)
}

// resolve pre-resolves the children of the hot path's label sets: the
// endpoints' 200s and durations, and ok queries of each mode on the
// processors that can answer (the primary; cache and cpu-fallback when
// there are). Their series are exported from the start, at 0.
func (m *metrics) resolve(procs []string) {
	m.reqOK, m.reqDur = map[string]prometheus.Counter{}, map[string]prometheus.Observer{}
	for _, ep := range []string{"search", "batch"} {
		m.reqOK[ep] = m.requests.WithLabelValues(ep, "200")
		m.reqDur[ep] = m.reqDuration.WithLabelValues(ep)
	}
	m.queryOK, m.queryDur = map[[2]string]prometheus.Counter{}, map[string]prometheus.Observer{}
	for _, proc := range procs {
		m.queryDur[proc] = m.qDuration.WithLabelValues(proc)
		for _, mode := range []string{"and", "or", "andor"} {
			m.queryOK[[2]string{mode, proc}] = m.queries.WithLabelValues(mode, "ok", proc)
		}
	}
}

func (m *metrics) observeRequest(endpoint string, status int, arrive time.Time) {
	if c, ok := m.reqOK[endpoint]; ok && status == 200 {
		c.Inc()
	} else {
		m.requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
	}
	if o, ok := m.reqDur[endpoint]; ok {
		o.Observe(time.Since(arrive).Seconds())
	} else {
		m.reqDuration.WithLabelValues(endpoint).Observe(time.Since(arrive).Seconds())
	}
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
	if c, ok := m.queryOK[[2]string{mode, proc}]; ok && code == "ok" {
		c.Inc()
	} else {
		m.queries.WithLabelValues(mode, code, proc).Inc()
	}
	if code == "ok" {
		if o, ok := m.queryDur[proc]; ok {
			o.Observe(d.Seconds())
		} else {
			m.qDuration.WithLabelValues(proc).Observe(d.Seconds())
		}
	}
}
