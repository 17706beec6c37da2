package serve

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/engine/gpu"
)

// Live batching (Ding et al. WWW'09 §4, Ao et al. VLDB'11 §4.1 "PARA"):
// requests join the batch being formed; the batch closes, and goes to the
// backend as one SearchBatch call, when
//
//   - no batch is running (unless Lazy): the batch is whatever is queued
//     when the processor becomes free, and a lone request on an idle
//     server runs at once (no Nagle-like wait);
//   - the sum of its costs (the postings of each query's shortest list,
//     the work the GPU's PARA threshold c counts) reaches Threshold;
//   - it holds its size cap: MaxBatch, lowered to the most queries the
//     processor is expected to answer within Budget (costModel: t(n) = a +
//     b·n fitted on the recent batches), so that a batch's time, and with
//     it the wait of the requests queued behind it, stays bounded however
//     long the queue;
//   - its oldest request has waited MaxWait.
//
// Up to Inflight batches run at once; while every slot is busy the next
// batch keeps growing (up to its cap), so batches are large under load.
//
// A GPU (engine/gpu, --device gpu) is pipelined (issue 25): two batches
// in flight, one preparing its queries on the host while the other's
// launch sets run, the backend telling (gpu.WithDeviceHook) when a batch
// takes the device. There the forming batch closes, instead of when the
// processor is idle, when the device is about to be: no batch is waiting
// for it, and the one on it is predicted (devModel: its device time by
// size, fitted on the recent batches) to end within the forming batch's
// host preparation (prepModel) plus pipeLead. The device phase ends when
// the batch lets the device go (gpu.WithDeviceDoneHook: before its result
// conversion, which runs off the device while the next batch's kernels
// do), not when the backend returns. The next batch is then
// ready when the device frees, and holds what arrived until then: at a
// moderate rate batches stay small and a request waits about one batch
// time for its batch, then one for its answer; under a backlog they grow
// to their cap, by default the size whose predicted device time is ten
// times the fitted fixed cost (autoShare: at least 90% of the device's
// throughput on the largest batches), so that one batch, and with it the
// wait of the requests queued behind it, stays bounded.
// On the CPU the defaults are Inflight = the CPU's workers and MaxBatch 1:
// the CPU gains nothing from batching, and a batch answers all its queries
// only when its slowest ends (AND queries' times are heavy-tailed), which
// left cores idle behind stragglers; one query per slot is a worker pool
// in which every query is answered as soon as it ends.
//
// Admission: a request whose queries would wait, at the saturated
// throughput the costModel measured, longer than MaxQueueWait or its
// deadline is refused at once (503 overloaded, with Retry-After), and one
// that does not fit QueueSize with 429: over capacity the server answers
// quickly instead of letting requests time out at the client.

// BatchConfig tunes live batching. Zero fields take the defaults.
type BatchConfig struct {
	// Threshold is the PARA threshold c: a batch closes once the sum of
	// its queries' shortest-list lengths reaches it (default: the GPU's
	// threshold when a GPU answers, else DefaultCPUThreshold); not on a
	// pipelined GPU unless Lazy (batcher.paraCloses: the device's time
	// closes those batches, and the backend cuts them into launch sets at
	// its threshold).
	Threshold int64
	// MaxWait is the longest a request waits for its batch to close
	// (default DefaultMaxWait).
	MaxWait time.Duration
	// MaxBatch caps the queries of one batch (default DefaultMaxBatch; 1
	// on the CPU).
	MaxBatch int
	// Budget caps a batch's expected time on the processor (negative:
	// no cap): the batcher takes at most the queries the processor's
	// measured cost model answers within it (on a pipelined GPU, the
	// device's time). Default: on a pipelined GPU (--device gpu) auto,
	// the batch whose fixed cost is a tenth of its predicted device time
	// (autoShare; Budget stays 0); none with a GPU that is not pipelined
	// (--device auto); DefaultBudget on the CPU.
	Budget time.Duration
	// Inflight is the number of batches that may run at once. Default:
	// on the CPU, its workers; on a pipelined GPU 2 (one prepares on the
	// host while the other runs on the device); on a GPU behind the CPU/GPU
	// router (--device auto), 1: the next batch is whatever queued
	// meanwhile (up to its cap); for other backends 2 (one runs while the
	// next forms).
	Inflight int
	// Lazy keeps a batch open until its threshold, size or wait closes it
	// even when no batch is running. By default (false) a batch also
	// closes as soon as the processor is idle (no batch running; on a
	// pipelined GPU, when the device is about to be free: see above): an
	// idle server answers a lone request at once instead of after
	// MaxWait, and under load, while batches run, the next one grows as
	// the rule above says. MaxWait does not close a pipelined GPU's batch
	// early while the device is busy (the batch would only wait for it).
	Lazy bool
	// QueueSize bounds the queries waiting for a batch; a request that
	// does not fit is refused with 429 (default DefaultQueueSize).
	QueueSize int
	// MaxQueueWait refuses (503 overloaded) a request whose queries are
	// expected to wait longer than this for their batch (zero or
	// negative: no such bound; the request's deadline always bounds it). The expectation is the queue's depth over the throughput
	// measured while the processor was saturated; until it has been
	// saturated nothing is refused this way.
	MaxQueueWait time.Duration

	// pipe: the primary is pipelined (a GPU that reports when a batch
	// takes the device, gpu.WithDeviceHook); set by withDefaults.
	pipe bool
}

// Pipelined reports whether batches are pipelined on a GPU (the device
// phase rule above).
func (c BatchConfig) Pipelined() bool { return c.pipe }

// Batching defaults.
const (
	DefaultMaxWait      = 2 * time.Millisecond
	DefaultMaxBatch     = 4096
	DefaultBudget       = 8 * time.Millisecond
	DefaultQueueSize    = 65536
	DefaultCPUThreshold = 1 << 20
)

// Pipelining constants (the GPU's close rule above).
const (
	// autoShare: the automatic cap of a pipelined GPU's batch is the size
	// n with a = autoShare·t(n), t(n) = a + b·n its predicted device
	// time: n = a(1-autoShare)/(autoShare·b), the largest batches at 90%
	// of the device's throughput on unbounded ones (1/b).
	autoShare = 0.1
	// pipeLead is added to the forming batch's predicted preparation: the
	// hand-offs between closing a batch and its preparation's start (a
	// goroutine, the batch's slices) and the scatter of the prediction.
	pipeLead = 200 * time.Microsecond
)

// withDefaults fills the zero fields. gpuThreshold is the GPU's PARA
// threshold (0: no GPU; > 0: a GPU answers); pipe says the GPU is the
// primary itself, which reports its device phases (two batches in flight);
// cpuWorkers > 0 says the primary is the CPU backend with that many workers
// (its defaults: one query per batch, one batch per worker).
func (c BatchConfig) withDefaults(gpuThreshold int64, cpuWorkers int, pipe bool) BatchConfig {
	c.pipe = pipe && gpuThreshold > 0
	if c.Threshold <= 0 {
		c.Threshold = gpuThreshold
		if c.Threshold <= 0 {
			c.Threshold = DefaultCPUThreshold
		}
	}
	if c.MaxWait <= 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
		if cpuWorkers > 0 {
			c.MaxBatch = 1
		}
	}
	if c.Budget == 0 {
		// A GPU runs one batch at a time: splitting its queue into
		// budget-sized batches pays the batch's fixed cost once per piece,
		// so under a backlog it lowers the throughput and delays the last
		// queued requests most (the fourteenth session's device run: 580-
		// query batches of 7.5 ms with ~3,500 waiting, 40 ms of queue wait,
		// 48% of in-process). The whole queue, up to MaxBatch, goes.
		// Pipelined, the cap is automatic (autoShare: Budget stays 0).
		c.Budget = DefaultBudget
		if gpuThreshold > 0 && !c.pipe {
			c.Budget = -1
		} else if c.pipe {
			c.Budget = 0
		}
	}
	if c.Inflight <= 0 {
		switch {
		case cpuWorkers > 0:
			c.Inflight = cpuWorkers
		case gpuThreshold > 0 && !c.pipe:
			c.Inflight = 1
		default:
			c.Inflight = 2
		}
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	return c
}

// job is one query waiting for, or running in, a batch. The batcher sets
// resp, proc, batchN, start and end, then sends one token on done
// (finish); the submitter reads them only after receiving it. done has a
// buffer of one (newJob), so finishing never blocks, and a job whose token
// was received can be reused (reset) for another query: the one-query
// requests' jobs are pooled (handlers.go).
type job struct {
	q    engine.Query
	cost int64
	ctx  context.Context // the request's: a job whose ctx is done is not run
	// deadline (zero: none): a job whose batch starts after it is not run
	// (its error is context.DeadlineExceeded). The request's deadline is
	// kept as a time, not as a context with a timer: most requests are
	// answered before it without waiting on anything.
	deadline time.Time
	arrive   time.Time
	done     chan struct{} // buffer of one: finish sends the job's one token

	resp       engine.Response
	proc       string
	batchN     int
	start, end time.Time

	// look is q's terms looked up (Server.cost; q.Dict points here when
	// set), in ids and dfs while they fit: kept across reset.
	look engine.TermLookup
	ids  [8]int
	dfs  [8]uint32

	// lone holds the batch's arguments when the job is a batch of its
	// own (the CPU's one query per worker, a query on an idle processor):
	// no slices to allocate per query.
	lone struct {
		qs    [1]engine.Query
		out   [1]engine.Response
		procs [1]string
	}
}

// newJob returns a job with its done channel (a buffer of one).
func newJob() *job {
	j := &job{done: make(chan struct{}, 1)}
	j.look.IDs, j.look.DFs = j.ids[:0], j.dfs[:0]
	return j
}

// reset readies j, answered (its token received) or new, for query q;
// it keeps j's done channel and look's buffers (emptied).
func (j *job) reset(q engine.Query, cost int64, ctx context.Context, deadline, arrive time.Time) {
	done, ids, dfs := j.done, j.look.IDs[:0], j.look.DFs[:0]
	*j = job{q: q, cost: cost, ctx: ctx, deadline: deadline, arrive: arrive, done: done}
	j.look.IDs, j.look.DFs = ids, dfs
}

// finish answers j: its fields are set, the submitter may read them.
func (j *job) finish() { j.done <- struct{}{} }

// dead is why j is not to run at now (nil: it is to run).
func (j *job) dead(now time.Time) error {
	if err := j.ctx.Err(); err != nil {
		return err
	}
	if !j.deadline.IsZero() && now.After(j.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// closeReason is why a batch closed (batcher.closes; the metric
// qp_serve_batch_closes_total{reason}): which rule of the live batching
// above formed it.
type closeReason int

const (
	closeIdle      closeReason = iota // the processor idle (pipelined: the device free, or its time not predictable yet)
	closeDevice                       // pipelined: the device batch predicted to end within the forming one's preparation
	closeThreshold                    // the PARA threshold
	closeCap                          // the size cap (MaxBatch, Budget's or the automatic one)
	closeWait                         // the oldest request waited MaxWait
	closeDrain                        // shutting down
	nCloseReasons
)

// closeReasonNames are the reasons' label values.
var closeReasonNames = [nCloseReasons]string{"idle", "device", "threshold", "cap", "wait", "drain"}

// batchStats are cumulative counts of the batches run (Server.Stats).
type batchStats struct {
	batches, queries, queueNanos atomic.Int64
}

// runFunc evaluates a batch: qs[i] into out[i], naming in procs[i] the
// processor that answered it.
type runFunc func(ctx context.Context, qs []engine.Query, out []engine.Response, procs []string) error

var (
	errQueueFull  = errors.New("queue full")
	errOverloaded = errors.New("overloaded")
	errClosed     = errors.New("server shutting down")
)

// batcher forms and runs batches.
type batcher struct {
	cfg     BatchConfig
	run     runFunc
	onBatch func(n int, d time.Duration) // metrics hook
	// onPhases (pipelined; set before the first submit): a batch of n
	// queries' host preparation, its wait for the device, its device phase
	// (to the backend's return), of which fin after it let the device go,
	// and the backend's account of it (nil, and fin 0, when the backend
	// gave none: gpu.WithDeviceDoneHook).
	onPhases func(n int, prep, wait, dev, fin time.Duration, bd *gpu.BatchDevice)
	model    costModel
	stats    batchStats
	// Pipelined (cfg.pipe): the device phase's time and the host
	// preparation's, by batch size (the backend reports both).
	devModel, prepModel costModel
	now                 func() time.Time // the batches' clock: time.Now (tests give a fake one)
	// lead is pipeLead (newBatcher); the simulations that slow the
	// device's time scale it with it (pipeline_bench_test.go).
	lead time.Duration

	mu      sync.Mutex
	pending []*job
	cost    int64 // of pending
	active  int   // batches running
	closed  bool
	// Pipelined: queued counts the running batches not yet on the device
	// (preparing, or waiting for it), onDev those that took it and have
	// not let it go (offDevice; a backend without the done hook: not
	// returned, release); the last took it at devStart with devN queries.
	queued   int
	onDev    int
	devStart time.Time
	devN     int
	// quietUntil: arrivals that leave pending shorter than this (and the
	// cost under the threshold) need not wake the loop, which decided
	// with fewer (quietLimitLocked; 0: every arrival wakes it). Issue 25:
	// every arrival woke the loop goroutine, mostly to decide nothing.
	quietUntil int
	// loops counts the loop's decisions (tests: the wakes that arrivals
	// cost it).
	loops atomic.Int64
	// closes counts the batches formed by each rule (closeReason).
	closes [nCloseReasons]atomic.Int64

	wake    chan struct{} // a job arrived, or close
	sem     chan struct{} // one token per running batch
	running sync.WaitGroup
	stopped chan struct{}
}

func newBatcher(cfg BatchConfig, run runFunc, onBatch func(int, time.Duration)) *batcher {
	b := &batcher{cfg: cfg, run: run, onBatch: onBatch, now: time.Now, lead: pipeLead,
		wake: make(chan struct{}, 1), sem: make(chan struct{}, cfg.Inflight), stopped: make(chan struct{})}
	go b.loop()
	return b
}

// submit queues js, all or none: errQueueFull when they do not fit,
// errOverloaded when the last of them is expected to wait longer than
// MaxQueueWait or than until deadline (zero: none), errClosed after close.
// wait is the expected wait (0 when unknown).
//
// A lone job that would be a batch of its own at once (nothing queued, and
// the processor idle, or batches of one query) runs in the caller's
// goroutine, if a slot is free, before submit returns: the same batch the
// loop would form, without the three goroutine hand-offs (caller to loop
// to batch and back) that cost more CPU than a short query.
func (b *batcher) submit(js []*job, deadline time.Time) (wait time.Duration, err error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return 0, errClosed
	}
	if len(js) == 1 && len(b.pending) == 0 && ((!b.cfg.Lazy && b.active == 0) || b.cfg.MaxBatch == 1) {
		select {
		case b.sem <- struct{}{}:
			why := closeIdle
			if b.cfg.MaxBatch == 1 {
				why = closeCap
			}
			b.closes[why].Add(1)
			b.active++
			if b.cfg.pipe {
				b.queued++
			}
			b.running.Add(1)
			b.mu.Unlock()
			b.runBatch(js)
			return 0, nil
		default: // every slot taken: queue it
		}
	}
	depth := len(b.pending) + len(js)
	if depth > b.cfg.QueueSize {
		b.mu.Unlock()
		return 0, errQueueFull
	}
	wait = b.model.expectedWait(depth)
	if wait > 0 && ((b.cfg.MaxQueueWait > 0 && wait > b.cfg.MaxQueueWait) ||
		(!deadline.IsZero() && time.Now().Add(wait).After(deadline))) {
		b.mu.Unlock()
		return wait, errOverloaded
	}
	for _, j := range js {
		b.pending = append(b.pending, j)
		b.cost += j.cost
	}
	quiet := quietArrivals && (b.cost < b.cfg.Threshold || !b.paraCloses()) && len(b.pending) < b.quietUntil
	b.mu.Unlock()
	if !quiet {
		b.signal()
	}
	return wait, nil
}

func (b *batcher) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// depth is the number of queued queries.
func (b *batcher) depth() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// close stops accepting jobs, runs every queued one and waits for all
// batches to finish.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.signal()
	<-b.stopped
}

func (b *batcher) loop() {
	defer close(b.stopped)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		b.loops.Add(1)
		b.mu.Lock()
		n, closed := len(b.pending), b.closed
		var in time.Duration
		var why closeReason
		if n > 0 {
			in, why = b.closeInLocked(b.now())
		}
		b.quietUntil = 0
		if n > 0 && in > 0 && !closed {
			b.quietUntil = b.quietLimitLocked(n, in)
		}
		b.mu.Unlock()
		if n == 0 {
			if closed {
				b.running.Wait()
				return
			}
			<-b.wake
			continue
		}
		if in > 0 && !closed {
			if in == never {
				<-b.wake
				continue
			}
			timer.Reset(in)
			select {
			case <-b.wake:
				timer.Stop()
			case <-timer.C:
			}
			continue // the state may have changed: decide again
		}
		if closed {
			why = closeDrain
		}
		b.closes[why].Add(1)
		// Take a slot first: while every slot is busy, the batch grows.
		b.sem <- struct{}{}
		batch := b.take() // counts it in active
		b.running.Add(1)
		go b.runBatch(batch)
	}
}

// quietArrivals lets submit leave the loop asleep (batcher.quietUntil);
// BenchmarkPipelineWakes turns it off to measure what it saves.
var quietArrivals = true

// wakeSlack is how much later than its rule says a pipelined GPU's
// forming batch may close because arrivals did not wake the loop
// (quietLimitLocked): a quarter of pipeLead, the margin the close rule
// keeps for hand-offs and the prediction's scatter.
const wakeSlack = pipeLead / 4

// quietLimitLocked is, for a loop that found n queries pending and the
// forming batch to stay open for in (> 0; never: until a device or slot
// event), the pending length up to which arrivals cannot change that
// decision, or change it by at most wakeSlack: they need not wake the
// loop (submit). The decision changes with an arrival when the batch
// reaches its threshold or size cap (limit: it changes only with the
// models, in toDevice and release, which wake the loop); otherwise
// closeInLocked's open time does not depend on the pending queries, but
// for a pipelined GPU's timed close (devFreeInLocked: in < never), which
// each arrival brings forward by the predicted preparation per query
// (prepModel's b): arrivals worth wakeSlack of it may come quietly, none
// before that model is known.
func (b *batcher) quietLimitLocked(n int, in time.Duration) int {
	lim := b.limit()
	if !b.cfg.pipe || b.cfg.Lazy || in == never {
		return lim
	}
	_, per, ok := b.prepModel.fit()
	if !ok || per <= 0 {
		return 0
	}
	k := wakeSlack.Seconds() / per
	if k >= float64(lim) {
		return lim
	}
	return min(lim, n+int(k))
}

// paraCloses reports whether the PARA threshold closes the forming batch:
// not on a pipelined GPU (unless Lazy), whose batches close by the
// device's time (devFreeInLocked). There the backend cuts a batch into
// launch sets at the threshold itself (engine/gpu's setBudget), and a
// batch closed at it while the device is busy only waits for the device,
// prepared, while the next one closes at it too: the queue goes to the
// device in more batches than the rate needs, each paying a batch's fixed
// cost, and near capacity the queue grows. serve8's simulation of the
// H200's served fits at 80% load with the threshold at 1,100 queries
// (one launch set of TREC'06 queries at 10M documents, below the ~1,700
// the rate's batches settle at): 93-94% of the batches closed by the
// threshold, 1,597 queries a batch against 1,681-1,711, p99 +21-26%
// (BenchmarkPipelineServed, rule=release against rule=new).
func (b *batcher) paraCloses() bool { return !b.cfg.pipe || b.cfg.Lazy || paraPipelined }

// paraPipelined lets the PARA threshold close a pipelined batch as it did
// before serve8; BenchmarkPipelineServed turns it on to measure the rule.
var paraPipelined = false

// never is closeInLocked's "not before something happens" (a wake).
const never = time.Duration(math.MaxInt64)

// closeInLocked is how long, from now (the batches' clock, b.now), the
// forming batch (not empty) stays open: <= 0 closes it now (it then waits for a slot, growing, while
// every slot is busy), never until a wake; and the rule that closes it
// then. It closes at its threshold (paraCloses) or size cap; else, unless Lazy, when
// the processor is idle (pipelined: when the device is about to be free,
// devFreeInLocked); else when its oldest request has waited MaxWait.
func (b *batcher) closeInLocked(now time.Time) (time.Duration, closeReason) {
	if b.cost >= b.cfg.Threshold && b.paraCloses() {
		return 0, closeThreshold
	}
	if len(b.pending) >= b.limit() {
		return 0, closeCap
	}
	if !b.cfg.Lazy {
		if b.cfg.pipe {
			return b.devFreeInLocked(now)
		}
		if b.active == 0 {
			return 0, closeIdle
		}
	}
	return b.cfg.MaxWait - time.Since(b.pending[0].arrive), closeWait // arrivals are on the wall clock
}

// devFreeInLocked is, on a pipelined GPU, how long until the forming
// batch should close so that its preparation ends as the device frees
// (and closeIdle when that is now because the device is free or its time
// not predictable yet, else closeDevice):
// never while another batch is preparing or waiting for the device (its
// taking the device wakes the loop); 0 when the device is idle or its
// batch's time cannot be predicted yet; else the device batch's predicted
// remaining time less the forming batch's predicted preparation and
// pipeLead.
func (b *batcher) devFreeInLocked(now time.Time) (time.Duration, closeReason) {
	if b.queued > 0 {
		return never, closeDevice
	}
	if b.onDev == 0 {
		return 0, closeIdle
	}
	d, ok := b.devModel.predict(b.devN)
	if !ok {
		return 0, closeIdle
	}
	p, _ := b.prepModel.predict(min(len(b.pending), b.limit()))
	return d - now.Sub(b.devStart) - p - b.lead, closeDevice
}

// limit is the size cap of the next batch: MaxBatch, or fewer when the
// cost model expects more to take longer than Budget.
func (b *batcher) limit() int {
	if !b.cfg.pipe {
		return b.model.maxBatch(b.cfg.Budget, b.cfg.MaxBatch)
	}
	if b.cfg.Budget == 0 {
		return b.devModel.autoBatch(autoShare, b.cfg.MaxBatch)
	}
	return b.devModel.maxBatch(b.cfg.Budget, b.cfg.MaxBatch)
}

// take removes the next batch (up to limit jobs) from pending.
func (b *batcher) take() []*job {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(b.pending), b.limit())
	batch := make([]*job, n)
	copy(batch, b.pending)
	for _, j := range batch {
		b.cost -= j.cost
	}
	b.active++
	if b.cfg.pipe {
		b.queued++
	}
	rest := copy(b.pending, b.pending[n:])
	clear(b.pending[rest:])
	b.pending = b.pending[:rest]
	return batch
}

// runBatch runs the live jobs of batch and answers every job. The slot
// is given back as soon as the processor is done, before the answers go
// out: the next batch starts on the processor while this one's requests
// are woken (a channel close and a goroutine made runnable per job, some
// hundred microseconds over a GPU batch of thousands, during which a GPU
// with one batch in flight used to idle).
func (b *batcher) runBatch(batch []*job) {
	defer b.running.Done()
	start := b.now()
	live := batch[:0:0]
	if len(batch) == 1 {
		live = batch[:0] // the one job: no copy of the batch
	}
	for _, j := range batch {
		if err := j.dead(start); err != nil {
			j.resp.Err, j.start, j.end = err, start, start
			j.finish()
			continue
		}
		live = append(live, j)
	}
	if len(live) == 0 {
		b.release(0, time.Time{}, false)
		return
	}
	var qs []engine.Query
	var out []engine.Response
	var procs []string
	if len(live) == 1 {
		l := &live[0].lone
		qs, out, procs = l.qs[:], l.out[:], l.procs[:]
	} else {
		qs, out, procs = make([]engine.Query, len(live)), make([]engine.Response, len(live)), make([]string, len(live))
	}
	for i, j := range live {
		qs[i] = j.q
	}
	ctx := context.Background()
	var ph *phases // pipelined: when the batch took the device, its host preparation
	if b.cfg.pipe {
		ph = new(phases) // only here: a variable the hook captured would escape for every batch
		ctx = gpu.WithDeviceHook(ctx, func(p time.Duration) { ph.prep, ph.devAt = p, b.toDevice(len(live), p) })
		ctx = gpu.WithDeviceDoneHook(ctx, func(d gpu.BatchDevice) {
			if ph.devOK {
				panic("BUG: serve: a batch's device done hook called twice")
			}
			ph.dev, ph.devOK, ph.offAt = d, true, b.offDevice(len(live), ph.devAt)
		})
	}
	err := b.run(ctx, qs, out, procs)
	end := b.now()
	var devAt time.Time
	if ph != nil {
		devAt = ph.devAt
		if !devAt.IsZero() && b.onPhases != nil {
			var bd *gpu.BatchDevice
			var fin time.Duration
			if ph.devOK {
				bd, fin = &ph.dev, end.Sub(ph.offAt)
			}
			b.onPhases(len(live), ph.prep, devAt.Sub(start)-ph.prep, end.Sub(devAt), fin, bd)
		}
	}
	b.model.observe(len(live), end.Sub(start), end, b.depth())
	b.release(len(live), devAt, ph != nil && ph.devOK)
	b.stats.batches.Add(1)
	b.stats.queries.Add(int64(len(live)))
	var queued time.Duration
	for _, j := range live {
		queued += start.Sub(j.arrive)
	}
	b.stats.queueNanos.Add(int64(queued))
	if b.onBatch != nil {
		b.onBatch(len(live), end.Sub(start))
	}
	parts := answerParts(len(live), runtime.GOMAXPROCS(0))
	if parts == 1 {
		answerJobs(live, out, procs, len(live), err, start, end)
		return
	}
	answerParallel(live, out, procs, parts, err, start, end)
}

// answerParallel answers a large batch's jobs (answerJobs) from parts
// goroutines, each waking a contiguous share of the handlers (made
// runnable on its own P): the last handler is woken after 1/parts of the
// serial loop's time. (A function of its own: the variables its
// goroutines capture would otherwise escape in every runBatch.)
func answerParallel(live []*job, out []engine.Response, procs []string, parts int, err error, start, end time.Time) {
	var wg sync.WaitGroup
	for p := 1; p < parts; p++ {
		lo, hi := p*len(live)/parts, (p+1)*len(live)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			answerJobs(live[lo:hi], out[lo:hi], procs[lo:hi], len(live), err, start, end)
		}()
	}
	n := len(live) / parts
	answerJobs(live[:n], out[:n], procs[:n], len(live), err, start, end)
	wg.Wait()
}

// answerJobs answers js[i] with out[i] and procs[i] (err, the batch's, for
// those without their own), the batch of batchN queries having run from
// start to end.
func answerJobs(js []*job, out []engine.Response, procs []string, batchN int, err error, start, end time.Time) {
	for i, j := range js {
		j.resp, j.proc, j.batchN, j.start, j.end = out[i], procs[i], batchN, start, end
		if j.resp.Err == nil && err != nil {
			j.resp.Err = err
		}
		j.finish()
	}
}

// answerMin is the fewest answers one goroutine delivers (answerParts):
// below it a goroutine's start costs more than the wakes it takes over.
const answerMin = 256

// answerParts is the number of goroutines that deliver a batch of n
// answers: one per answerMin, at most procs/2 (the handlers woken need
// the other half of the cores), at least 1.
func answerParts(n, procs int) int {
	return max(1, min(n/answerMin, procs/2))
}

// phases are a pipelined batch's: when it took the device (zero: never)
// and its host preparation (the backend's hook sets them).
type phases struct {
	devAt time.Time
	prep  time.Duration
	dev   gpu.BatchDevice // gpu.WithDeviceDoneHook's, when devOK
	devOK bool
	offAt time.Time // when it let the device go (devOK)
}

// toDevice records, pipelined, that a batch of n queries took the device
// after a preparation of prep (the backend's hook: it must not block) and
// wakes the loop (the device's end can now be predicted).
func (b *batcher) toDevice(n int, prep time.Duration) time.Time {
	now := b.now()
	b.prepModel.observe(n, prep, now, 0)
	b.mu.Lock()
	b.queued--
	b.onDev++
	b.devStart, b.devN = now, n
	b.mu.Unlock()
	b.signal()
	return now
}

// offDevice records, pipelined, that a batch of n queries which took the
// device at devAt (zero: it never did) let it go (the backend's done hook,
// gpu.WithDeviceDoneHook: before the result conversion that follows off
// the device, and before the backend returns): the device phase's model
// observes the time to here, not to the return, and the loop wakes (the
// forming batch's close depends on the device's being free). Returns the
// time of the release.
//
// Before (serve7), the device phase ran to the backend's return, and the
// model with it: the forming batch closed, and its preparation ended, a
// conversion's time (0.1-0.5 ms at the H200's served batches of 500-2,000)
// after the device freed, which stayed idle for that time less pipeLead
// each cycle; a device batch that ended early was seen only at the return.
func (b *batcher) offDevice(n int, devAt time.Time) time.Time {
	now := b.now()
	if devAt.IsZero() || !devEndAtRelease {
		return now // no device phase to end here (release ends it)
	}
	b.devModel.observe(n, now.Sub(devAt), now, 0)
	b.mu.Lock()
	b.onDev--
	b.mu.Unlock()
	b.signal()
	return now
}

// devEndAtRelease makes the device phase's model end at the device's
// release (offDevice) rather than at the backend's return (release);
// BenchmarkPipelineServed turns it off to measure what it gives.
var devEndAtRelease = true

// release gives a batch's slot back and wakes the loop (an idle processor
// closes the forming batch). Pipelined, devAt is when the batch of n
// queries took the device, zero when it never got there; off says the
// batch reported the device's release (offDevice counted it); else its
// device time, until now, is observed here.
func (b *batcher) release(n int, devAt time.Time, off bool) {
	off = off && devEndAtRelease && !devAt.IsZero()
	if b.cfg.pipe && !devAt.IsZero() && !off {
		now := b.now()
		b.devModel.observe(n, now.Sub(devAt), now, 0)
	}
	b.mu.Lock()
	b.active--
	if b.cfg.pipe {
		if devAt.IsZero() {
			b.queued--
		} else if !off {
			b.onDev--
		}
	}
	b.mu.Unlock()
	<-b.sem
	b.signal()
}
