package serve

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/engine/gpu"
	"github.com/qpengine/qp/topk"
)

// fakeRun is a runFunc that records batch sizes, answers every query, and
// can hold each batch until released.
type fakeRun struct {
	mu      sync.Mutex
	once    sync.Once
	sizes   []int
	entered chan int      // each batch's size as it starts
	release chan struct{} // nil: run at once; else each batch takes one token
	advance func(n int)   // called with the batch's size before it returns
}

func (f *fakeRun) run(ctx context.Context, qs []engine.Query, out []engine.Response, procs []string) error {
	f.mu.Lock()
	f.sizes = append(f.sizes, len(qs))
	f.mu.Unlock()
	if f.entered != nil {
		f.entered <- len(qs)
	}
	if f.release != nil {
		<-f.release
	}
	if f.advance != nil {
		f.advance(len(qs))
	}
	for i := range procs {
		procs[i] = "fake"
	}
	return nil
}

// start returns a batcher running f, closed (every held batch released
// first) when the test ends, failed or not.
func (f *fakeRun) start(t *testing.T, cfg BatchConfig) *batcher {
	b := newBatcher(cfg.withDefaults(0, 0, false), f.run, nil)
	t.Cleanup(func() { f.releaseAll(); b.close() })
	return b
}

// releaseAll lets every batch, held or to come, run.
func (f *fakeRun) releaseAll() {
	f.once.Do(func() {
		if f.release != nil {
			close(f.release)
		}
	})
}

// goSubmit submits js from another goroutine (a lone job may run inline,
// held by the fake processor).
func goSubmit(t *testing.T, b *batcher, js []*job) {
	go func() {
		if _, err := b.submit(js, time.Time{}); err != nil {
			t.Errorf("submit: %v", err)
		}
	}()
}

func newJobs(n int) []*job {
	js := make([]*job, n)
	for i := range js {
		js[i] = newJob()
		js[i].reset(engine.Query{ID: "q"}, 0, context.Background(), time.Time{}, time.Now())
	}
	return js
}

func waitJobs(t *testing.T, js []*job) {
	t.Helper()
	for _, j := range js {
		select {
		case <-j.done:
		case <-time.After(10 * time.Second):
			t.Fatal("a job was not answered in 10 s")
		}
	}
}

// TestBatcherIdleCloses: with no batch running, a lone query runs at once
// (MaxWait is an hour: no window to wait for), and the batch after a
// running one is exactly what queued meanwhile, taken the moment the
// processor is free (Nagle-free: no threshold or wait is needed).
func TestBatcherIdleCloses(t *testing.T) {
	f := &fakeRun{entered: make(chan int, 16), release: make(chan struct{}, 16)}
	b := f.start(t, BatchConfig{MaxWait: time.Hour, Threshold: 1 << 40, Inflight: 1, MaxBatch: 1000, Budget: -1, QueueSize: 100})
	first := newJobs(1)
	goSubmit(t, b, first)
	if n := <-f.entered; n != 1 {
		t.Fatalf("lone query ran in a batch of %d", n)
	}
	rest := newJobs(7)
	for _, j := range rest { // one at a time: each joins the forming batch
		if _, err := b.submit([]*job{j}, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if d := b.depth(); d != 7 {
		t.Fatalf("while a batch runs (Inflight 1): depth %d, want 7 queued", d)
	}
	f.release <- struct{}{}
	if n := <-f.entered; n != 7 {
		t.Fatalf("the batch after the running one: %d queries, want the 7 queued", n)
	}
	f.release <- struct{}{}
	waitJobs(t, append(first, rest...))
}

// TestBatcherLazyWaits: with Lazy, an idle processor does not close the
// batch; MaxBatch does.
func TestBatcherLazyWaits(t *testing.T) {
	f := &fakeRun{entered: make(chan int, 16)}
	b := f.start(t, BatchConfig{Lazy: true, MaxWait: time.Hour, Threshold: 1 << 40, MaxBatch: 3, Budget: -1})
	js := newJobs(3)
	for i, j := range js {
		if _, err := b.submit([]*job{j}, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			select {
			case n := <-f.entered:
				t.Fatalf("lazy batch of %d closed before MaxBatch", n)
			default:
			}
		}
	}
	if n := <-f.entered; n != 3 {
		t.Fatalf("batch of %d, want MaxBatch 3", n)
	}
	waitJobs(t, js)
}

// TestBatcherBudgetCaps: once the cost model has seen batches take a + b·n
// (a fake clock: 1 ms + 1 ms per query), a batch holds at most the n with
// a + b·n within the budget (9 ms: 8 queries), however many are queued.
func TestBatcherBudgetCaps(t *testing.T) {
	var mu sync.Mutex
	clock := time.Unix(0, 0)
	f := &fakeRun{entered: make(chan int, 64), release: make(chan struct{}, 64)}
	f.advance = func(n int) {
		mu.Lock()
		clock = clock.Add(time.Millisecond + time.Duration(n)*time.Millisecond)
		mu.Unlock()
	}
	b := f.start(t, BatchConfig{MaxWait: time.Hour, Threshold: 1 << 40, Inflight: 1, MaxBatch: 1000, Budget: 9 * time.Millisecond})
	b.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	// Teach the model two sizes (1 and 3 queries) so that it can fit a
	// slope.
	for _, n := range []int{1, 3, 1, 3} {
		js := newJobs(n)
		goSubmit(t, b, js)
		<-f.entered
		f.release <- struct{}{}
		waitJobs(t, js)
	}
	a, slope, ok := b.model.fit()
	if !ok || math.Abs(a-0.001) > 1e-9 || math.Abs(slope-0.001) > 1e-9 {
		t.Fatalf("fit a=%v b=%v ok=%v, want 1 ms + 1 ms/query", a, slope, ok)
	}
	if got := b.limit(); got != 8 {
		t.Fatalf("limit %d, want 8 (1 ms + 8 x 1 ms = 9 ms)", got)
	}
	hold := newJobs(1)
	goSubmit(t, b, hold)
	<-f.entered // running; the 30 below queue behind it
	many := newJobs(30)
	if _, err := b.submit(many, time.Time{}); err != nil {
		t.Fatal(err)
	}
	f.release <- struct{}{}
	total := 0
	for total < 30 {
		n := <-f.entered
		if n > 8 {
			t.Fatalf("batch of %d over the budget's 8", n)
		}
		total += n
		f.release <- struct{}{}
	}
	waitJobs(t, append(hold, many...))
}

// TestCostModel: the fit, its fallback when all batches have one size,
// the saturated throughput (only intervals between two completions that
// both found queries waiting) and the expected wait.
func TestCostModel(t *testing.T) {
	var m costModel
	if _, _, ok := m.fit(); ok || m.maxBatch(time.Millisecond, 50) != 50 || m.expectedWait(10) != 0 {
		t.Fatal("an empty model must not cap or predict")
	}
	t0 := time.Unix(100, 0)
	m.observe(10, 20*time.Millisecond, t0, 0) // idle after it: no rate yet
	m.observe(10, 20*time.Millisecond, t0.Add(time.Second), 5)
	if m.capacity() != 0 {
		t.Fatalf("rate %v from an interval that began idle", m.capacity())
	}
	a, b, ok := m.fit() // one size: mean per query, no fixed part
	if !ok || a != 0 || math.Abs(b-0.002) > 1e-12 {
		t.Fatalf("single-size fit a=%v b=%v", a, b)
	}
	m.observe(10, 20*time.Millisecond, t0.Add(time.Second+100*time.Millisecond), 5)
	if r := m.capacity(); math.Abs(r-100) > 1e-9 {
		t.Fatalf("saturated rate %v, want 10 queries / 100 ms", r)
	}
	if w := m.expectedWait(50); w != 500*time.Millisecond {
		t.Fatalf("expected wait of 50 queued: %v, want 500 ms", w)
	}
	// Two slots finishing together (dt 0) 200 ms after the previous
	// completion: 20 queries in 200 ms, 100 q/s, however the completions
	// cluster (a mean of per-interval rates would say 10/0 = infinity).
	var p costModel
	p.observe(10, time.Millisecond, t0, 1)
	p.observe(10, time.Millisecond, t0.Add(200*time.Millisecond), 1)
	p.observe(10, time.Millisecond, t0.Add(200*time.Millisecond), 1)
	if r := p.capacity(); math.Abs(r-100) > 1e-9 {
		t.Fatalf("parallel slots: rate %v, want 100 q/s", r)
	}
	if n := m.maxBatch(11*time.Millisecond, 1000); n != 5 {
		t.Fatalf("maxBatch(11 ms) = %d, want 5 at 2 ms/query", n)
	}
	if n := m.maxBatch(time.Microsecond, 1000); n != 1 {
		t.Fatalf("maxBatch below one query's time = %d, want 1", n)
	}
	// The automatic cap: 1 ms + 1 ms/query over sizes 1 and 3 gives 9; over
	// sizes too alike (100 and 101: spread under minSpread) no cap.
	var c costModel
	c.observe(1, 2*time.Millisecond, t0, 0)
	c.observe(3, 4*time.Millisecond, t0, 0)
	if n := c.autoBatch(0.1, 1000); n != 9 {
		t.Fatalf("autoBatch = %d, want 9", n)
	}
	var d costModel
	d.observe(100, 101*time.Millisecond, t0, 0)
	d.observe(101, 102*time.Millisecond, t0, 0)
	if a, _, ok := d.fit(); !ok || a < 0.0009 {
		t.Fatalf("alike sizes: fit a=%v ok=%v, want about 1 ms", a, ok)
	}
	if n := d.autoBatch(0.1, 1000); n != 1000 {
		t.Fatalf("autoBatch over alike sizes = %d, want the limit 1000", n)
	}
}

// TestBatcherSheds: a submission expected to wait past its deadline, or
// past MaxQueueWait, is refused as overloaded; one that is not expected to
// is queued.
func TestBatcherSheds(t *testing.T) {
	f := &fakeRun{entered: make(chan int, 16), release: make(chan struct{}, 16)}
	b := f.start(t, BatchConfig{MaxWait: time.Hour, Threshold: 1 << 40, Inflight: 1, MaxBatch: 1000, MaxQueueWait: 2 * time.Second})
	t0 := time.Now()
	b.model.observe(10, time.Millisecond, t0, 1)
	b.model.observe(10, time.Millisecond, t0.Add(100*time.Millisecond), 1) // 100 queries/s
	hold := newJobs(1)
	goSubmit(t, b, hold)
	<-f.entered
	queued := newJobs(49)
	if _, err := b.submit(queued, time.Time{}); err != nil { // 0.49 s expected: no bound
		t.Fatal(err)
	}
	wait, err := b.submit(newJobs(1), time.Now().Add(100*time.Millisecond))
	if !errors.Is(err, errOverloaded) || wait != 500*time.Millisecond {
		t.Fatalf("deadline 100 ms behind 50 queued at 100 q/s: wait %v, %v; want 500 ms, overloaded", wait, err)
	}
	if _, err := b.submit(newJobs(200), time.Time{}); !errors.Is(err, errOverloaded) {
		t.Fatalf("2.49 s expected with MaxQueueWait 2 s: %v, want overloaded", err)
	}
	// (2 jobs below: 0.51 s expected, within a minute)
	ok := newJobs(2)
	if _, err := b.submit(ok, time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("deadline in a minute: %v", err)
	}
	f.releaseAll()
	waitJobs(t, append(append(hold, queued...), ok...))
}

// TestBatcherInline: a lone job that would be a batch of its own at once
// (idle processor, or one query per batch with a slot free) has run when
// submit returns: it ran in the caller's goroutine, not through the loop.
func TestBatcherInline(t *testing.T) {
	for _, cfg := range []BatchConfig{
		{MaxWait: time.Hour, Threshold: 1 << 40, MaxBatch: 1000}, // idle: a batch of one at once
		{MaxBatch: 1, Inflight: 2, Lazy: true},                   // worker pool: even when lazy
	} {
		f := &fakeRun{}
		b := f.start(t, cfg)
		for range 3 {
			js := newJobs(1)
			if _, err := b.submit(js, time.Time{}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-js[0].done:
			default:
				t.Fatalf("%+v: a lone job on an idle batcher was not answered by submit", cfg)
			}
		}
	}
	// Not when lazy with room to grow: the batch waits for its window.
	f := &fakeRun{}
	b := f.start(t, BatchConfig{Lazy: true, MaxWait: time.Hour, Threshold: 1 << 40, MaxBatch: 2})
	js := newJobs(1)
	b.submit(js, time.Time{})
	select {
	case <-js[0].done:
		t.Fatal("a lazy batcher ran a batch of one before its window closed")
	default:
	}
	b.submit(newJobs(1), time.Time{}) // MaxBatch 2 closes it
	waitJobs(t, js)
}

// TestBatcherFreesSlotBeforeAnswers: a batch gives its slot back once the
// processor is done, before its answers are delivered (the onBatch hook
// runs between the two), so that the next batch can start on a processor
// with one batch in flight while thousands of requests are woken.
func TestBatcherFreesSlotBeforeAnswers(t *testing.T) {
	f := &fakeRun{}
	var b *batcher
	active := make(chan int, 4)
	b = newBatcher(BatchConfig{Inflight: 1, MaxBatch: 100}.withDefaults(0, 0, false), f.run, func(n int, d time.Duration) {
		b.mu.Lock()
		active <- b.active
		b.mu.Unlock()
	})
	t.Cleanup(b.close)
	js := newJobs(1)
	if _, err := b.submit(js, time.Time{}); err != nil {
		t.Fatal(err)
	}
	waitJobs(t, js)
	if n := <-active; n != 0 {
		t.Fatalf("%d batches counted running when the answers were delivered; want 0 (slot freed first)", n)
	}
	select {
	case b.sem <- struct{}{}: // the slot is free
		<-b.sem
	default:
		t.Fatal("the batch's slot was still taken after its answers")
	}
}

// devRun is a pipelined fake GPU: each batch announces itself on entered,
// waits for the device (one batch at a time), takes it (calling
// gpu.WithDeviceHook's function) when given a toDev token, and returns
// when given a done token.
type devRun struct {
	entered      chan int
	toDev, done  chan struct{}
	dev          sync.Mutex
	mu           sync.Mutex
	onDev, worst int         // batches on the device now, and at most
	advance      func(n int) // if set, called once the batch holds the device
	// fin, if set: a batch lets the device go (the done hook, then the
	// device's lock) when done is received, then converts its results
	// (advanceFin, if set) and waits for fin before it returns, as
	// engine/gpu's SearchBatch does; else it returns holding the device.
	fin        chan struct{}
	advanceFin func(n int)
}

func newDevRun() *devRun {
	return &devRun{entered: make(chan int, 64), toDev: make(chan struct{}, 64), done: make(chan struct{}, 64)}
}

func (d *devRun) run(ctx context.Context, qs []engine.Query, out []engine.Response, procs []string) error {
	d.entered <- len(qs)
	d.dev.Lock() // one batch on the device at a time, in arrival order
	<-d.toDev
	d.mu.Lock()
	d.onDev++
	d.worst = max(d.worst, d.onDev)
	d.mu.Unlock()
	if f := gpu.DeviceHook(ctx); f != nil {
		f(0)
	}
	if d.advance != nil {
		d.advance(len(qs))
	}
	<-d.done
	d.mu.Lock()
	d.onDev--
	d.mu.Unlock()
	if d.fin != nil {
		if f := gpu.DeviceDoneHook(ctx); f != nil {
			f(gpu.BatchDevice{})
		}
		d.dev.Unlock()
		if d.advanceFin != nil {
			d.advanceFin(len(qs))
		}
		<-d.fin
	} else {
		d.dev.Unlock()
	}
	for i := range procs {
		procs[i] = "fake-gpu"
	}
	return nil
}

// startPiped returns a pipelined batcher (a GPU's defaults) over d.
func (d *devRun) startPiped(t *testing.T) *batcher {
	cfg := BatchConfig{}.withDefaults(1<<20, 0, true)
	if !cfg.Pipelined() || cfg.Inflight != 2 || cfg.Budget != 0 {
		t.Fatalf("pipelined GPU defaults: pipelined %v, inflight %d, budget %v; want true, 2, 0 (auto)", cfg.Pipelined(), cfg.Inflight, cfg.Budget)
	}
	b := newBatcher(cfg, d.run, nil)
	t.Cleanup(func() {
		close(d.toDev)
		close(d.done)
		if d.fin != nil {
			close(d.fin)
		}
		b.close()
	})
	return b
}

// notEntered fails if a batch starts within wait.
func notEntered(t *testing.T, d *devRun, wait time.Duration, why string) {
	t.Helper()
	select {
	case n := <-d.entered:
		t.Fatalf("a batch of %d started: %s", n, why)
	case <-time.After(wait):
	}
}

// TestBatcherPipelined: on a pipelined GPU a second batch goes to the
// backend while the first runs, but only once the first has taken the
// device (not while it prepares: the second would only queue behind it,
// closed too early), and never a third while two are in flight.
func TestBatcherPipelined(t *testing.T) {
	d := newDevRun()
	b := d.startPiped(t)
	first := newJobs(1)
	goSubmit(t, b, first) // idle: runs at once
	if n := <-d.entered; n != 1 {
		t.Fatalf("first batch %d queries, want 1", n)
	}
	second := newJobs(3)
	if _, err := b.submit(second, time.Time{}); err != nil {
		t.Fatal(err)
	}
	notEntered(t, d, 100*time.Millisecond, "the first batch has not taken the device yet")
	d.toDev <- struct{}{} // the first takes the device; no model yet: the next closes at once
	if n := <-d.entered; n != 3 {
		t.Fatalf("second batch %d queries, want the 3 queued", n)
	}
	third := newJobs(2)
	if _, err := b.submit(third, time.Time{}); err != nil {
		t.Fatal(err)
	}
	notEntered(t, d, 100*time.Millisecond, "two batches in flight (Inflight 2)")
	d.done <- struct{}{} // the first returns
	waitJobs(t, first)
	d.toDev <- struct{}{} // the second takes the device
	if n := <-d.entered; n != 2 {
		t.Fatalf("third batch %d queries, want 2", n)
	}
	d.done <- struct{}{}
	waitJobs(t, second)
	d.toDev <- struct{}{}
	d.done <- struct{}{}
	waitJobs(t, third)
	if d.worst != 1 {
		t.Fatalf("%d batches on the fake device at once", d.worst)
	}
	b.mu.Lock()
	q, on := b.queued, b.onDev
	b.mu.Unlock()
	if q != 0 || on != 0 {
		t.Fatalf("after all batches: queued %d, on device %d; want 0, 0", q, on)
	}
}

// TestBatcherPipelinedParked: while a pipelined batch prepares (the
// forming batch open until it takes the device), arrivals below the size
// cap do not wake the batcher's loop (its decisions do not grow with
// them), not even the one that reaches the PARA threshold (which does not
// close a pipelined batch); the batch closes with every query that
// arrived when the first takes the device.
func TestBatcherPipelinedParked(t *testing.T) {
	d := newDevRun()
	b := d.startPiped(t)
	first := newJobs(1)
	goSubmit(t, b, first) // idle: runs at once, and prepares until toDev
	if n := <-d.entered; n != 1 {
		t.Fatalf("first batch %d queries, want 1", n)
	}
	parked := func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.quietUntil > 0
	}
	rest := newJobs(41)
	if _, err := b.submit(rest[:1], time.Time{}); err != nil { // wakes the loop, which parks
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !parked(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the loop did not park in 10 s with a batch preparing")
		}
	}
	loops := b.loops.Load()
	for _, j := range rest[1:40] {
		if _, err := b.submit([]*job{j}, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	notEntered(t, d, 50*time.Millisecond, "the first batch is still preparing")
	if l := b.loops.Load(); l != loops {
		t.Fatalf("39 arrivals below the threshold woke the parked loop %d times, want 0", l-loops)
	}
	// Reaching the PARA threshold does not close a pipelined batch (the
	// backend cuts it into launch sets; batcher.paraCloses): no wake.
	rest[40].cost = b.cfg.Threshold
	if _, err := b.submit(rest[40:], time.Time{}); err != nil {
		t.Fatal(err)
	}
	notEntered(t, d, 50*time.Millisecond, "the threshold does not close a pipelined batch")
	if l := b.loops.Load(); l != loops {
		t.Fatalf("the arrival at the threshold woke the parked loop %d times, want 0", l-loops)
	}
	d.toDev <- struct{}{} // the first takes the device (no model yet): the batch closes
	select {
	case n := <-d.entered:
		if n != len(rest) {
			t.Fatalf("the batch has %d queries, want the %d that arrived", n, len(rest))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the forming batch did not close when the first took the device")
	}
	d.done <- struct{}{}
	d.toDev <- struct{}{}
	d.done <- struct{}{}
	waitJobs(t, append(first, rest...))
}

// TestQuietLimit: the pending length up to which arrivals need not wake
// the loop: the size cap where the open time does not depend on them (not
// pipelined; pipelined until a device event), none on a pipelined timed
// close before the preparation's model is known, and wakeSlack's worth of
// predicted preparation after.
func TestQuietLimit(t *testing.T) {
	cpu := &batcher{cfg: BatchConfig{MaxBatch: 64, Budget: -1}.withDefaults(0, 0, false)}
	if q := cpu.quietLimitLocked(3, time.Millisecond); q != 64 {
		t.Errorf("not pipelined: %d, want the cap 64", q)
	}
	g := &batcher{cfg: BatchConfig{MaxBatch: 1000}.withDefaults(1<<20, 0, true)}
	if q := g.quietLimitLocked(3, never); q != 1000 {
		t.Errorf("pipelined, open until a device event: %d, want the cap 1000", q)
	}
	if q := g.quietLimitLocked(3, time.Millisecond); q != 0 {
		t.Errorf("pipelined, timed, no preparation model: %d, want 0", q)
	}
	now := time.Now()
	g.prepModel.observe(10, 100*time.Microsecond, now, 0) // 10 µs a query
	g.prepModel.observe(20, 200*time.Microsecond, now, 0)
	if q, want := g.quietLimitLocked(3, time.Millisecond), 3+int(wakeSlack/(10*time.Microsecond)); q != want {
		t.Errorf("pipelined, timed, 10 µs of preparation a query: %d, want %d", q, want)
	}
	g.prepModel = costModel{}
	g.prepModel.observe(1000, time.Microsecond, now, 0)
	g.prepModel.observe(2000, 2*time.Microsecond, now, 0)
	if q := g.quietLimitLocked(3, time.Millisecond); q != 1000 {
		t.Errorf("pipelined, timed, 1 ns of preparation a query: %d, want the cap 1000", q)
	}
}

// TestBatcherPipelinedHolds: once the device's time is predictable, the
// forming batch stays open while the batch on the device is expected to
// run longer than the forming one's preparation, collecting what arrives,
// and closes near the device batch's predicted end (here 1 s).
func TestBatcherPipelinedHolds(t *testing.T) {
	d := newDevRun()
	b := d.startPiped(t)
	t0 := time.Now()
	b.devModel.observe(1, time.Second, t0, 0) // 1 s per query, no fixed part
	b.devModel.observe(2, 2*time.Second, t0, 0)
	if p, ok := b.devModel.predict(1); !ok || p < 999*time.Millisecond || p > 1001*time.Millisecond {
		t.Fatalf("predicted %v for one query, want 1 s", p)
	}
	first := newJobs(1)
	goSubmit(t, b, first)
	<-d.entered
	d.toDev <- struct{}{}
	var held time.Time
	for {
		b.mu.Lock()
		on, at := b.onDev, b.devStart
		b.mu.Unlock()
		if on == 1 {
			held = at
			break
		}
		time.Sleep(time.Millisecond)
	}
	second := newJobs(4)
	for _, j := range second { // arrivals during the hold join one batch
		if _, err := b.submit([]*job{j}, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	notEntered(t, d, 200*time.Millisecond, "the device batch is predicted to run 1 s")
	n := <-d.entered
	if n != 4 {
		t.Fatalf("held batch %d queries, want the 4 that arrived", n)
	}
	if c := closeCounts(b); c[closeIdle] != 1 || c[closeDevice] != 1 || c[closeIdle]+c[closeDevice] != sum(c[:]) {
		t.Fatalf("closes %v (idle, device, threshold, cap, wait, drain); want the first idle, the held one by the device rule", c)
	}
	if w := time.Since(held); w < 700*time.Millisecond {
		t.Fatalf("held batch closed %v after the device batch started, want about 1 s", w)
	}
	d.done <- struct{}{}
	d.toDev <- struct{}{}
	d.done <- struct{}{}
	waitJobs(t, append(first, second...))
}

// TestBatcherPipelinedAutoCap: pipelined with the default budget, a batch
// holds at most the queries whose predicted device time has its fixed cost
// as a tenth (1 ms + 1 ms/query: 9 queries).
func TestBatcherPipelinedAutoCap(t *testing.T) {
	d := newDevRun()
	b := d.startPiped(t)
	// A fake clock, advanced by each batch's device time (1 ms + 1 ms per
	// query) as it takes the device: the model stays exact.
	var mu sync.Mutex
	clock := time.Unix(0, 0)
	b.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	d.advance = func(n int) {
		mu.Lock()
		clock = clock.Add(time.Millisecond + time.Duration(n)*time.Millisecond)
		mu.Unlock()
	}
	if got := b.limit(); got != DefaultMaxBatch {
		t.Fatalf("limit %d before any batch, want %d", got, DefaultMaxBatch)
	}
	b.devModel.observe(1, 2*time.Millisecond, clock, 0)
	b.devModel.observe(3, 4*time.Millisecond, clock, 0)
	if got := b.limit(); got != 9 {
		t.Fatalf("limit %d, want 9 (a = 1 ms is 10%% of 1 + 9 x 1 ms)", got)
	}
	hold := newJobs(1)
	goSubmit(t, b, hold)
	<-d.entered
	many := newJobs(30)
	if _, err := b.submit(many, time.Time{}); err != nil {
		t.Fatal(err)
	}
	total := 0
	for total < 30 {
		d.toDev <- struct{}{}
		n := <-d.entered
		if n > 9 {
			t.Fatalf("batch of %d over the automatic cap of 9", n)
		}
		total += n
		d.done <- struct{}{}
	}
	d.toDev <- struct{}{}
	d.done <- struct{}{}
	waitJobs(t, append(hold, many...))
}

// TestBatcherAnswersInParts: a large batch's answers go out from several
// goroutines (answerParts); every job still gets its own query's answer,
// the batch's size and processor, exactly once.
func TestBatcherAnswersInParts(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	if p := answerParts(2000, 8); p != 4 {
		t.Fatalf("answerParts(2000, 8) = %d, want 4", p)
	}
	for _, c := range []struct{ n, procs, want int }{{1, 8, 1}, {511, 8, 1}, {512, 8, 2}, {100000, 16, 8}, {100000, 1, 1}} {
		if p := answerParts(c.n, c.procs); p != c.want {
			t.Errorf("answerParts(%d, %d) = %d, want %d", c.n, c.procs, p, c.want)
		}
	}
	run := func(ctx context.Context, qs []engine.Query, out []engine.Response, procs []string) error {
		for i := range qs {
			d, _ := strconv.Atoi(qs[i].ID)
			out[i] = engine.Response{Results: []topk.Result{{Doc: uint32(d)}}}
			procs[i] = "fake"
		}
		return nil
	}
	b := newBatcher(BatchConfig{MaxWait: time.Hour, Threshold: 1 << 40, Inflight: 1, MaxBatch: 4096, Budget: -1, QueueSize: 10000}.withDefaults(0, 0, false), run, nil)
	defer b.close()
	js := newJobs(2000)
	for i, j := range js {
		j.q.ID = strconv.Itoa(i)
	}
	if _, err := b.submit(js, time.Time{}); err != nil {
		t.Fatal(err)
	}
	waitJobs(t, js)
	for i, j := range js {
		if len(j.resp.Results) != 1 || j.resp.Results[0].Doc != uint32(i) || j.batchN != 2000 || j.proc != "fake" {
			t.Fatalf("job %d: %+v, batch %d, proc %q", i, j.resp, j.batchN, j.proc)
		}
		select {
		case <-j.done:
			t.Fatalf("job %d answered twice", i)
		default:
		}
	}
}

// TestBatcherPipelinedDeviceRelease: the device phase ends when the batch
// lets the device go (the backend's done hook), not when the backend
// returns after converting its results off the device: the device's model
// learns the device time alone (a fake clock: 1 ms + 1 ms a query on the
// device, then 10 ms of conversion), and a forming batch held while the
// device is predicted busy closes as soon as the device is let go, while
// the batch before it still converts.
func TestBatcherPipelinedDeviceRelease(t *testing.T) {
	d := newDevRun()
	d.fin = make(chan struct{}, 64)
	b := d.startPiped(t)
	var mu sync.Mutex
	clock := time.Unix(0, 0)
	b.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	tick := func(dt time.Duration) { mu.Lock(); clock = clock.Add(dt); mu.Unlock() }
	d.advance = func(n int) { tick(time.Millisecond + time.Duration(n)*time.Millisecond) }
	d.advanceFin = func(int) { tick(10 * time.Millisecond) }
	// Two batches, of 1 and of 3 queries, one after the other: the model's
	// fixed part and slope.
	for _, n := range []int{1, 3} {
		js := newJobs(n)
		goSubmit(t, b, js)
		if got := <-d.entered; got != n {
			t.Fatalf("batch of %d queries, want %d", got, n)
		}
		d.toDev <- struct{}{}
		d.done <- struct{}{}
		d.fin <- struct{}{}
		waitJobs(t, js)
		for deadline := time.Now().Add(10 * time.Second); b.depth() > 0 || func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.active > 0 }(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the batch did not end in 10 s")
			}
		}
	}
	a, per, ok := b.devModel.fit()
	if !ok || math.Abs(a-1e-3) > 1e-6 || math.Abs(per-1e-3) > 1e-6 {
		t.Fatalf("device model a %.6f s, b %.6f s (ok %v); want 0.001, 0.001: the device phase without the 10 ms conversion", a, per, ok)
	}
	// The device is predicted busy for 2 ms of the fake clock, which
	// stands still: the forming batch stays open until the device is let go.
	d.advance, d.advanceFin = nil, nil
	c := newJobs(1)
	goSubmit(t, b, c)
	<-d.entered
	d.toDev <- struct{}{}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		on := b.onDev
		b.mu.Unlock()
		if on == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch did not take the device in 10 s")
		}
	}
	next := newJobs(2)
	if _, err := b.submit(next, time.Time{}); err != nil {
		t.Fatal(err)
	}
	notEntered(t, d, 100*time.Millisecond, "the device is predicted busy")
	before := closeCounts(b)
	d.done <- struct{}{} // lets the device go; the batch converts until fin
	select {
	case n := <-d.entered:
		if n != 2 {
			t.Fatalf("the batch after the release has %d queries, want 2", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the forming batch did not close when the device was let go (it waited for the backend's return)")
	}
	if c := closeCounts(b); c[closeIdle] != before[closeIdle]+1 || sum(c[:]) != sum(before[:])+1 {
		t.Fatalf("closes %v after the release, %v before; want one more, by the idle device", c, before)
	}
	d.fin <- struct{}{}
	waitJobs(t, c)
	d.toDev <- struct{}{}
	d.done <- struct{}{}
	d.fin <- struct{}{}
	waitJobs(t, next)
	b.mu.Lock()
	q, on := b.queued, b.onDev
	b.mu.Unlock()
	if q != 0 || on != 0 {
		t.Fatalf("after all batches: queued %d, on device %d; want 0, 0", q, on)
	}
}

// closeCounts is b's count of closes by reason (closeReason's order).
func closeCounts(b *batcher) (c [nCloseReasons]int64) {
	for r := range c {
		c[r] = b.closes[r].Load()
	}
	return c
}

func sum(xs []int64) (s int64) {
	for _, x := range xs {
		s += x
	}
	return s
}

// TestBatcherCloseReasons: each rule that closes a batch is counted as
// its own (qp_serve_batch_closes_total): the idle processor, the PARA
// threshold, the size cap, the wait and the shutdown; one count a batch.
func TestBatcherCloseReasons(t *testing.T) {
	only := func(t *testing.T, b *batcher, r closeReason, n int64) {
		t.Helper()
		c := closeCounts(b)
		if c[r] != n || sum(c[:]) != n {
			t.Fatalf("closes %v (idle, device, threshold, cap, wait, drain), want %d by %s only", c, n, closeReasonNames[r])
		}
	}
	t.Run("idle", func(t *testing.T) {
		f := &fakeRun{entered: make(chan int, 16), release: make(chan struct{}, 16)}
		b := f.start(t, BatchConfig{MaxWait: time.Hour, MaxBatch: 100, Budget: -1, Threshold: 1 << 40})
		first := newJobs(2)
		if _, err := b.submit(first, time.Time{}); err != nil {
			t.Fatal(err)
		}
		<-f.entered
		second := newJobs(1)
		if _, err := b.submit(second, time.Time{}); err != nil {
			t.Fatal(err)
		}
		f.release <- struct{}{}
		<-f.entered // the processor free: the queued one closes
		f.release <- struct{}{}
		waitJobs(t, append(first, second...))
		only(t, b, closeIdle, 2)
	})
	t.Run("threshold", func(t *testing.T) {
		b := (&fakeRun{}).start(t, BatchConfig{Lazy: true, MaxWait: time.Hour, MaxBatch: 100, Budget: -1, Threshold: 10})
		js := newJobs(2)
		js[0].cost, js[1].cost = 5, 5
		if _, err := b.submit(js, time.Time{}); err != nil {
			t.Fatal(err)
		}
		waitJobs(t, js)
		only(t, b, closeThreshold, 1)
	})
	t.Run("cap", func(t *testing.T) {
		b := (&fakeRun{}).start(t, BatchConfig{Lazy: true, MaxWait: time.Hour, MaxBatch: 3, Budget: -1, Threshold: 1 << 40})
		js := newJobs(3)
		if _, err := b.submit(js, time.Time{}); err != nil {
			t.Fatal(err)
		}
		waitJobs(t, js)
		only(t, b, closeCap, 1)
	})
	t.Run("wait", func(t *testing.T) {
		b := (&fakeRun{}).start(t, BatchConfig{Lazy: true, MaxWait: 20 * time.Millisecond, MaxBatch: 100, Budget: -1, Threshold: 1 << 40})
		js := newJobs(1)
		if _, err := b.submit(js, time.Time{}); err != nil {
			t.Fatal(err)
		}
		waitJobs(t, js)
		only(t, b, closeWait, 1)
	})
	t.Run("drain", func(t *testing.T) {
		b := (&fakeRun{}).start(t, BatchConfig{Lazy: true, MaxWait: time.Hour, MaxBatch: 100, Budget: -1, Threshold: 1 << 40})
		js := newJobs(1)
		if _, err := b.submit(js, time.Time{}); err != nil {
			t.Fatal(err)
		}
		b.close()
		waitJobs(t, js)
		only(t, b, closeDrain, 1)
	})
}
