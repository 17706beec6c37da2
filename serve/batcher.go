package serve

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/qpengine/qp/engine"
)

// Live batching (Ding et al. WWW'09 §4, Ao et al. VLDB'11 §4.1 "PARA"):
// requests join the batch being formed until the sum of their costs (the
// postings of each query's shortest list, the work the GPU's PARA threshold
// c counts) reaches the threshold, the batch holds MaxBatch queries, or the
// oldest waiting request has waited MaxWait. A closed batch goes to the
// backend as one SearchBatch call; up to Inflight batches run at once, and
// while every slot is busy the next batch keeps growing, so that batches are
// large under load and requests wait at most MaxWait when the server is
// idle.

// BatchConfig tunes live batching. Zero fields take the defaults.
type BatchConfig struct {
	// Threshold is the PARA threshold c: a batch closes once the sum of
	// its queries' shortest-list lengths reaches it (default: the GPU's
	// threshold when a GPU answers, else DefaultCPUThreshold).
	Threshold int64
	// MaxWait is the longest a request waits for its batch to close
	// (default DefaultMaxWait).
	MaxWait time.Duration
	// MaxBatch caps the queries of one batch (default DefaultMaxBatch).
	MaxBatch int
	// Inflight is the number of batches that may run at once (default 2:
	// one runs while the next forms and is handed over without a gap).
	Inflight int
	// Lazy keeps a batch open until its threshold, size or wait closes it
	// even when no batch is running. By default (false) a batch also
	// closes as soon as the processor is idle (no batch running): an
	// idle server answers a lone request at once instead of after
	// MaxWait, and under load, while batches run, the next one grows as
	// the rule above says.
	Lazy bool
	// QueueSize bounds the queries waiting for a batch; a request that
	// does not fit is refused with 429 (default DefaultQueueSize).
	QueueSize int
}

// Batching defaults.
const (
	DefaultMaxWait      = 2 * time.Millisecond
	DefaultMaxBatch     = 4096
	DefaultQueueSize    = 65536
	DefaultCPUThreshold = 1 << 20
)

func (c BatchConfig) withDefaults(gpuThreshold int64) BatchConfig {
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
	}
	if c.Inflight <= 0 {
		c.Inflight = 2
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	return c
}

// job is one query waiting for, or running in, a batch. The batcher sets
// resp, proc, batchN, start and end, then closes done; the submitter reads
// them only after done is closed.
type job struct {
	q      engine.Query
	cost   int64
	ctx    context.Context // the request's: a job whose ctx is done is not run
	arrive time.Time
	done   chan struct{}

	resp       engine.Response
	proc       string
	batchN     int
	start, end time.Time
}

// runFunc evaluates a batch: qs[i] into out[i], naming in procs[i] the
// processor that answered it.
type runFunc func(ctx context.Context, qs []engine.Query, out []engine.Response, procs []string) error

var (
	errQueueFull = errors.New("queue full")
	errClosed    = errors.New("server shutting down")
)

// batcher forms and runs batches.
type batcher struct {
	cfg     BatchConfig
	run     runFunc
	onBatch func(n int, d time.Duration) // metrics hook

	mu      sync.Mutex
	pending []*job
	cost    int64 // of pending
	active  int   // batches running
	closed  bool

	wake    chan struct{} // a job arrived, or close
	sem     chan struct{} // one token per running batch
	running sync.WaitGroup
	stopped chan struct{}
}

func newBatcher(cfg BatchConfig, run runFunc, onBatch func(int, time.Duration)) *batcher {
	b := &batcher{cfg: cfg, run: run, onBatch: onBatch,
		wake: make(chan struct{}, 1), sem: make(chan struct{}, cfg.Inflight), stopped: make(chan struct{})}
	go b.loop()
	return b
}

// submit queues js, all or none: errQueueFull when they do not fit,
// errClosed after close.
func (b *batcher) submit(js []*job) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errClosed
	}
	if len(b.pending)+len(js) > b.cfg.QueueSize {
		b.mu.Unlock()
		return errQueueFull
	}
	for _, j := range js {
		b.pending = append(b.pending, j)
		b.cost += j.cost
	}
	b.mu.Unlock()
	b.signal()
	return nil
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
		b.mu.Lock()
		n, closed := len(b.pending), b.closed
		var first time.Time
		if n > 0 {
			first = b.pending[0].arrive
		}
		full := b.cost >= b.cfg.Threshold || n >= b.cfg.MaxBatch ||
			(!b.cfg.Lazy && b.active == 0)
		b.mu.Unlock()
		if n == 0 {
			if closed {
				b.running.Wait()
				return
			}
			<-b.wake
			continue
		}
		if !full && !closed {
			if wait := b.cfg.MaxWait - time.Since(first); wait > 0 {
				timer.Reset(wait)
				select {
				case <-b.wake:
					timer.Stop()
					continue
				case <-timer.C:
				}
			}
		}
		// Take a slot first: while every slot is busy, the batch grows.
		b.sem <- struct{}{}
		batch := b.take() // counts it in active
		b.running.Add(1)
		go b.runBatch(batch)
	}
}

// take removes the next batch (up to MaxBatch jobs) from pending.
func (b *batcher) take() []*job {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(b.pending), b.cfg.MaxBatch)
	batch := make([]*job, n)
	copy(batch, b.pending)
	for _, j := range batch {
		b.cost -= j.cost
	}
	b.active++
	rest := copy(b.pending, b.pending[n:])
	clear(b.pending[rest:])
	b.pending = b.pending[:rest]
	return batch
}

// runBatch runs the live jobs of batch and answers every job.
func (b *batcher) runBatch(batch []*job) {
	defer b.running.Done()
	defer func() {
		b.mu.Lock()
		b.active--
		b.mu.Unlock()
		<-b.sem
		b.signal() // an idle processor closes the forming batch
	}()
	start := time.Now()
	live := batch[:0:0]
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.resp.Err, j.start, j.end = err, start, start
			close(j.done)
			continue
		}
		live = append(live, j)
	}
	if len(live) == 0 {
		return
	}
	qs := make([]engine.Query, len(live))
	out := make([]engine.Response, len(live))
	procs := make([]string, len(live))
	for i, j := range live {
		qs[i] = j.q
	}
	err := b.run(context.Background(), qs, out, procs)
	end := time.Now()
	if b.onBatch != nil {
		b.onBatch(len(live), end.Sub(start))
	}
	for i, j := range live {
		j.resp, j.proc, j.batchN, j.start, j.end = out[i], procs[i], len(live), start, end
		if j.resp.Err == nil && err != nil {
			j.resp.Err = err
		}
		close(j.done)
	}
}
