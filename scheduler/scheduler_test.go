package scheduler

// These tests exercise scheduling logic, not GPU speed: both processors are
// CPU backends (see helpers_test.go). No test asserts a timing.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
)

// TestResultsUnchanged submits a log from several goroutines under every
// configuration and checks that every query is answered exactly once with
// exactly the results (or error) of running the backend directly.
func TestResultsUnchanged(t *testing.T) {
	x := testIndex(t)
	qs := testQueries(240, 1)
	want := direct(t, x, qs)
	cpuProc := func() *Processor {
		return &Processor{Backend: engine.NewCPU(x, 1), Slots: 2}
	}
	gpuProc := func() *Processor {
		// A one-worker CPU backend playing the GPU, batching as PARA does.
		return &Processor{Name: "fake-gpu", Backend: engine.NewCPU(x, 1), Slots: 1,
			Batch: BatchPolicy{MaxQueries: 8, MaxPostings: 4000, MaxWait: 2 * time.Millisecond}}
	}
	for _, tc := range []struct {
		name string
		cfg  func() Config
	}{
		{"cpu-only", func() Config { return Config{CPU: cpuProc()} }},
		{"gpu-only", func() Config { return Config{GPU: gpuProc()} }},
		{"serial", func() Config { return Config{CPU: cpuProc(), GPU: gpuProc(), Serialize: true} }},
		{"parallel", func() Config { return Config{CPU: cpuProc(), GPU: gpuProc()} }},
		{"parallel-greedy", func() Config { return Config{CPU: cpuProc(), GPU: gpuProc(), Ratio: 1} }},
		{"parallel-sequential-cpu", func() Config {
			c := cpuProc()
			c.Sequential, c.Batch = true, BatchPolicy{MaxQueries: 4}
			return Config{CPU: c, GPU: gpuProc()}
		}},
		{"gpu-first", func() Config { return Config{CPU: cpuProc(), GPU: gpuProc(), Placement: PlaceGPUFirst} }},
		{"gpu-first-cheap-capped", func() Config {
			// A target of a microsecond: nearly every query is overflow.
			return Config{CPU: cpuProc(), GPU: gpuProc(), Placement: PlaceGPUFirst, TargetFraction: 1e-9,
				CheapRatio: 1, Cores: 2, HostCores: 1}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			s, err := New(x, tc.cfg())
			if err != nil {
				t.Fatal(err)
			}
			c := newCollector()
			var wg sync.WaitGroup
			const submitters = 4
			for g := range submitters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := g; i < len(qs); i += submitters {
						c.wg.Add(1)
						if err := s.Submit(Request{Query: qs[i]}, c.done); err != nil {
							c.wg.Done()
							t.Error(err)
						}
					}
				}()
			}
			wg.Wait()
			c.wg.Wait()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			checkNoLeak(t, before)
			if c.count() != len(qs) {
				t.Fatalf("%d results for %d queries", c.count(), len(qs))
			}
			for i, q := range qs {
				r := c.get(t, q.ID)
				if err := sameResponse(r.Response, want[i]); err != nil {
					t.Fatalf("query %s %v: %v", q.ID, q, err)
				}
				if r.Proc != CPU && r.Proc != GPU {
					t.Fatalf("query %s: processor %v", q.ID, r.Proc)
				}
				if r.Start.Before(r.Arrival) || r.Finish.Before(r.Start) {
					t.Fatalf("query %s: arrival %v start %v finish %v", q.ID, r.Arrival, r.Start, r.Finish)
				}
				if r.MetDeadline != !r.Finish.After(r.Deadline) || r.Deadline != r.Arrival.Add(DefaultDeadline) {
					t.Fatalf("query %s: deadline record inconsistent", q.ID)
				}
				if r.BatchSize < 1 {
					t.Fatalf("query %s: batch size %d", q.ID, r.BatchSize)
				}
			}
			st := s.Stats()
			if st.Submitted != uint64(len(qs)) || st.Completed != uint64(len(qs)) || st.Running != 0 {
				t.Fatalf("stats %+v", st)
			}
			if got := st.Procs[CPU].Queries + st.Procs[GPU].Queries; got != uint64(len(qs)) {
				t.Fatalf("processors ran %d queries, want %d", got, len(qs))
			}
			if err := s.Submit(Request{Query: qs[0]}, func(*Result) { t.Error("done called after close") }); !errors.Is(err, ErrClosed) {
				t.Fatalf("Submit after Close: %v", err)
			}
		})
	}
}

// TestSerializeRunsOneAtATime checks that the serialized configuration
// never overlaps two batches and runs each query on its preferred
// processor.
func TestSerializeRunsOneAtATime(t *testing.T) {
	x := testIndex(t)
	qs := testQueries(60, 2)
	// CPU is cheaper for short lists, the GPU for long ones.
	cpuModel := FixedCostModel([NumBasis]float64{lnSeconds(time.Microsecond), 0, 0, 1}) // ∝ Sum
	gpuModel := constModel(300 * time.Microsecond)
	var mu sync.Mutex
	active, maxActive := 0, 0
	track := func(b engine.Backend) engine.Backend {
		return backendFunc{name: b.Name(), f: func(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
			mu.Lock()
			active++
			maxActive = max(maxActive, active)
			mu.Unlock()
			defer func() { mu.Lock(); active--; mu.Unlock() }()
			return b.SearchBatch(ctx, qs, opt, out)
		}}
	}
	s, err := New(x, Config{
		CPU:       &Processor{Backend: track(engine.NewCPU(x, 1)), Slots: 4, Model: cpuModel},
		GPU:       &Processor{Backend: track(engine.NewCPU(x, 1)), Slots: 2, Model: gpuModel, Batch: BatchPolicy{MaxQueries: 8}},
		Serialize: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	for _, q := range qs {
		c.submit(t, s, Request{Query: q})
	}
	c.wg.Wait()
	s.Close()
	if maxActive != 1 {
		t.Fatalf("%d batches ran at once", maxActive)
	}
	for _, q := range qs {
		r := c.get(t, q.ID)
		want := CPU
		if r.Predicted[GPU] < r.Predicted[CPU] {
			want = GPU
		}
		if r.Proc != want || r.BatchSize != 1 || r.Stolen {
			t.Fatalf("query %s: ran on %v (batch %d, stolen %v), predicted %v", q.ID, r.Proc, r.BatchSize, r.Stolen, r.Predicted)
		}
	}
}

type backendFunc struct {
	name string
	f    func(context.Context, []engine.Query, engine.Options, []engine.Response) error
}

func (b backendFunc) Name() string { return b.name }
func (b backendFunc) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	return b.f(ctx, qs, opt, out)
}

// TestUrgentFirst: when a slot frees, a query that has used up
// UrgentFraction of its (short) deadline goes before an older one, and a
// query finishing after its deadline is recorded as missed.
func TestUrgentFirst(t *testing.T) {
	x := testIndex(t)
	clk := newManualClock()
	g := newGate(engine.NewCPU(x, 1))
	s, err := New(x, Config{GPU: &Processor{Backend: g, Model: constModel(time.Millisecond)}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := newCollector()
	q := func(id string) engine.Query {
		return engine.Query{ID: id, Terms: []string{"t010", "t020"}, Mode: engine.Or, K: 10}
	}
	c.submit(t, s, Request{Query: q("first")})
	if ids := g.next(t); ids[0] != "first" {
		t.Fatalf("first batch %v", ids)
	}
	c.submit(t, s, Request{Query: q("patient"), Deadline: 10 * time.Second})
	c.submit(t, s, Request{Query: q("hurried"), Deadline: 100 * time.Millisecond})
	waitFor(t, "two queued queries", func() bool { return s.Stats().Queued[QueueGPU] == 2 })
	clk.Advance(60 * time.Millisecond) // "hurried" is urgent from 50 ms
	g.release <- struct{}{}
	if ids := g.next(t); ids[0] != "hurried" {
		t.Fatalf("second batch %v, want the urgent query", ids)
	}
	g.release <- struct{}{}
	if ids := g.next(t); ids[0] != "patient" {
		t.Fatalf("third batch %v", ids)
	}
	clk.Advance(20 * time.Second) // "patient" will finish after its 10 s
	g.release <- struct{}{}
	c.wg.Wait()
	if r := c.get(t, "hurried"); !r.Urgent || !r.MetDeadline || r.Delay() != 60*time.Millisecond {
		t.Fatalf("hurried: urgent %v met %v delay %v", r.Urgent, r.MetDeadline, r.Delay())
	}
	if r := c.get(t, "patient"); r.Urgent || r.MetDeadline {
		t.Fatalf("patient: urgent %v met %v", r.Urgent, r.MetDeadline)
	}
	if r := c.get(t, "first"); !r.MetDeadline {
		t.Fatal("first missed its deadline")
	}
	if st := s.Stats(); st.Missed != 1 || st.Procs[GPU].Urgent != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestUrgentCutsBatchWait: a processor waiting to fill a batch (one query
// far below the threshold, a time limit of an hour) dispatches it once the
// query becomes urgent.
func TestUrgentCutsBatchWait(t *testing.T) {
	x := testIndex(t)
	clk := newManualClock()
	s, err := New(x, Config{
		GPU: &Processor{Backend: engine.NewCPU(x, 1), Model: constModel(time.Millisecond),
			Batch: BatchPolicy{MaxPostings: 1 << 40, MaxWait: time.Hour}},
		Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := newCollector()
	c.submit(t, s, Request{Query: engine.Query{ID: "q", Terms: []string{"t050"}, Mode: engine.Or, K: 5}})
	waitFor(t, "a queued query", func() bool { return s.Stats().Queued[QueueGPU] == 1 })
	clk.Advance(300 * time.Millisecond)
	c.wg.Wait()
	if r := c.get(t, "q"); !r.Urgent || r.BatchSize != 1 {
		t.Fatalf("urgent %v batch %d", r.Urgent, r.BatchSize)
	}
}

// TestStealing: the CPU is stuck on a query predicted to take 1 µs, with
// nine more queued behind it that are 1000 times cheaper there than on the
// idle GPU. While the stuck query looks on time nothing is stolen; once it
// has overrun its prediction by a second, the GPU steals the whole queue.
func TestStealing(t *testing.T) {
	x := testIndex(t)
	clk := newManualClock()
	g := newGate(engine.NewCPU(x, 1))
	s, err := New(x, Config{
		CPU:   &Processor{Backend: g, Model: constModel(time.Microsecond)},
		GPU:   &Processor{Backend: engine.NewCPU(x, 1), Model: constModel(time.Millisecond)},
		Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	qs := testQueries(10, 3)
	for i := range qs {
		qs[i].Terms, qs[i].K = []string{termName(10 + i), termName(40 + i)}, 10
	}
	want := direct(t, x, qs)
	c := newCollector()
	c.submit(t, s, Request{Query: qs[0]})
	g.next(t)
	for _, q := range qs[1:] {
		c.submit(t, s, Request{Query: q})
	}
	waitFor(t, "nine queued queries", func() bool { return s.Stats().Queued[QueueCPU] == 9 })
	time.Sleep(5 * pollInterval) // the GPU polls, and must not steal yet
	if st := s.Stats(); st.Procs[GPU].Queries != 0 {
		t.Fatalf("GPU ran %d queries before the CPU overran", st.Procs[GPU].Queries)
	}
	clk.Advance(time.Second)
	waitFor(t, "nine stolen queries", func() bool { return c.count() == 9 })
	g.release <- struct{}{}
	c.wg.Wait()
	s.Close()
	for i, q := range qs {
		r := c.get(t, q.ID)
		if err := sameResponse(r.Response, want[i]); err != nil {
			t.Fatalf("%s: %v", q.ID, err)
		}
		wantProc, wantStolen := GPU, true
		if i == 0 {
			wantProc, wantStolen = CPU, false
		}
		if r.Proc != wantProc || r.Stolen != wantStolen || r.Queue != QueueCPU {
			t.Fatalf("%s: ran on %v stolen %v queue %v", q.ID, r.Proc, r.Stolen, r.Queue)
		}
	}
	if st := s.Stats(); st.Procs[GPU].Stolen != 9 {
		t.Fatalf("stolen %d", st.Procs[GPU].Stolen)
	}
}

// TestEitherQueue: costs within the ratio send queries to the either
// queue; with both processors idle the cheaper one takes it, and when that
// one is busy the idle one takes the oldest either query.
func TestEitherQueue(t *testing.T) {
	x := testIndex(t)
	g := newGate(engine.NewCPU(x, 1))
	s, err := New(x, Config{
		CPU: &Processor{Backend: g, Model: constModel(time.Millisecond)},
		GPU: &Processor{Backend: engine.NewCPU(x, 1), Model: constModel(1500 * time.Microsecond)},
		// A still clock: the running query's predicted remaining time
		// stays its prediction however long the test takes.
		Clock: newManualClock(),
	})
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	q := func(id string) engine.Query {
		return engine.Query{ID: id, Terms: []string{"t030"}, Mode: engine.Or, K: 10}
	}
	c.submit(t, s, Request{Query: q("a")})
	g.next(t)
	c.submit(t, s, Request{Query: q("b")})
	waitFor(t, "b", func() bool { return c.count() == 1 })
	g.release <- struct{}{}
	c.wg.Wait()
	s.Close()
	a, b := c.get(t, "a"), c.get(t, "b")
	if a.Queue != QueueEither || a.Proc != CPU || b.Queue != QueueEither || b.Proc != GPU || b.Stolen {
		t.Fatalf("a: %v on %v; b: %v on %v (stolen %v)", a.Queue, a.Proc, b.Queue, b.Proc, b.Stolen)
	}
	if s.Stats().Either != 2 {
		t.Fatalf("either %d", s.Stats().Either)
	}
}

// TestClassifyThresholds checks the three-queue rule and its adaptation on
// a scheduler whose dispatcher is not running (classify is a pure function
// of the queues).
func TestClassifyThresholds(t *testing.T) {
	s := &Scheduler{cfg: Config{Ratio: 2}}
	s.procs[CPU] = &proc{id: CPU, slots: 1}
	s.procs[GPU] = &proc{id: GPU, slots: 1}
	now := time.Now()
	job := func(c, g time.Duration) *job { return &job{cost: [2]time.Duration{c, g}} }
	for _, tc := range []struct {
		c, g time.Duration
		want Queue
	}{
		{10, 1, QueueGPU}, {10, 5, QueueGPU}, {10, 6, QueueEither}, {10, 10, QueueEither},
		{6, 10, QueueEither}, {5, 10, QueueCPU}, {1, 10, QueueCPU},
	} {
		if got := s.classify(job(tc.c*time.Millisecond, tc.g*time.Millisecond), now); got != tc.want {
			t.Errorf("costs cpu %d gpu %d: %v, want %v", tc.c, tc.g, got, tc.want)
		}
	}
	// A GPU backlog of 10 ms moves a 10:1 query to the either queue, and
	// one of 40 ms to the CPU.
	s.queues[GPU].cost[GPU] = 10 * time.Millisecond
	if got := s.classify(job(10*time.Millisecond, time.Millisecond), now); got != QueueEither {
		t.Errorf("with GPU backlog: %v", got)
	}
	s.queues[GPU].cost[GPU] = 40 * time.Millisecond
	if got := s.classify(job(10*time.Millisecond, time.Millisecond), now); got != QueueCPU {
		t.Errorf("with larger GPU backlog: %v", got)
	}
	// A long either queue narrows the band: 10:6 is committed to the GPU.
	s.queues[GPU].cost[GPU] = 0
	s.queues[QueueEither].n = 18 // T = 1 + 2/20 = 1.1
	if got := s.classify(job(10*time.Millisecond, 6*time.Millisecond), now); got != QueueGPU {
		t.Errorf("with long either queue: %v", got)
	}
}

// TestBatchThreshold: with a postings threshold c of three shortest lists
// and an hour's time limit, batches hold exactly three queries, and
// Close flushes the rest.
func TestBatchThreshold(t *testing.T) {
	x := testIndex(t)
	q := engine.Query{Terms: []string{"t007", "t050"}, Mode: engine.And, K: 10}
	s, err := New(x, Config{GPU: &Processor{Backend: engine.NewCPU(x, 1),
		Batch: BatchPolicy{MaxPostings: 3 * QueryFeatures(x, q).Min, MaxWait: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	for i := range 8 {
		q.ID = fmt.Sprint(i)
		// A long deadline: the waiting batch must not turn urgent.
		c.submit(t, s, Request{Query: q, Deadline: time.Hour})
	}
	waitFor(t, "two batches", func() bool { return c.count() == 6 })
	time.Sleep(5 * pollInterval)
	if c.count() != 6 {
		t.Fatalf("%d answered before close, want 6", c.count())
	}
	s.Close()
	for i := range 8 {
		want := 3
		if i >= 6 {
			want = 2
		}
		if r := c.get(t, fmt.Sprint(i)); r.BatchSize != want {
			t.Fatalf("query %d in a batch of %d, want %d", i, r.BatchSize, want)
		}
	}
}

// TestBatchTimeLimit: an under-full batch goes when its oldest query has
// waited MaxWait (no Close needed).
func TestBatchTimeLimit(t *testing.T) {
	x := testIndex(t)
	s, err := New(x, Config{GPU: &Processor{Backend: engine.NewCPU(x, 1),
		Batch: BatchPolicy{MaxPostings: 1 << 40, MaxWait: 5 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Search(context.Background(), Request{Query: engine.Query{ID: "q", Terms: []string{"t003"}, Mode: engine.Or, K: 3}})
	if err != nil || r.Err != nil || len(r.Results) != 3 {
		t.Fatalf("%v %+v", err, r)
	}
}

// TestShutdownAbandons: when Shutdown's context has ended, queued queries
// are answered with ErrClosed, the running batch sees its context
// cancelled, every done function runs once, and nothing leaks.
func TestShutdownAbandons(t *testing.T) {
	x := testIndex(t)
	before := runtime.NumGoroutine()
	g := newGate(engine.NewCPU(x, 1))
	s, err := New(x, Config{CPU: &Processor{Backend: g}})
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	qs := testQueries(6, 4)
	for _, q := range qs {
		q.Terms, q.K = []string{"t001"}, 10
		c.submit(t, s, Request{Query: q})
	}
	g.next(t)
	waitFor(t, "five queued", func() bool { return s.Stats().Queued[QueueCPU] == 5 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v", err)
	}
	c.wg.Wait()
	for i, q := range qs {
		r := c.get(t, q.ID)
		if i == 0 {
			if r.Proc != CPU || !errors.Is(r.Err, context.Canceled) {
				t.Fatalf("running query: %v %v", r.Proc, r.Err)
			}
			continue
		}
		if r.Proc != NoProc || !errors.Is(r.Err, ErrClosed) {
			t.Fatalf("queued query %s: %v %v", q.ID, r.Proc, r.Err)
		}
	}
	if err := s.Close(); err != nil { // again: a no-op
		t.Fatal(err)
	}
	checkNoLeak(t, before)
}

func TestNewErrors(t *testing.T) {
	x := testIndex(t)
	b := engine.NewCPU(x, 1)
	for _, cfg := range []Config{
		{},
		{CPU: &Processor{}},
		{CPU: &Processor{Backend: b}, Ratio: 0.5},
		{CPU: &Processor{Backend: b}, UrgentFraction: 2},
		{CPU: &Processor{Backend: b}, Options: engine.Options{OrAlgo: "nope"}},
		{CPU: &Processor{Backend: b, Slots: -1}},
		{CPU: &Processor{Backend: b}, Placement: PlaceGPUFirst + 1},
		{CPU: &Processor{Backend: b}, Placement: PlaceGPUFirst, TargetFraction: 1.5},
		{CPU: &Processor{Backend: b}, Placement: PlaceGPUFirst, TargetFraction: -0.5},
		{CPU: &Processor{Backend: b}, Placement: PlaceGPUFirst, CheapRatio: -1},
		{CPU: &Processor{Backend: b}, Placement: PlaceGPUFirst, Cores: -1},
		{CPU: &Processor{Backend: b}, CPUNice: -1},
	} {
		if s, err := New(x, cfg); err == nil {
			s.Close()
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

// TestStealBestRatio: an idle thief that runs one query at a time (the
// GPU here: one-query slots, or Sequential batches of 3) takes, of the
// stuck CPU's queue, first the queries it is relatively best at (the
// highest CPU/GPU cost ratio; the CPU's predicted cost grows with the
// shortest list, the GPU's is flat), not the oldest first.
func TestStealBestRatio(t *testing.T) {
	for _, seq := range []bool{false, true} {
		t.Run(map[bool]string{false: "one-query", true: "sequential"}[seq], func(t *testing.T) { testStealBestRatio(t, seq) })
	}
}

func testStealBestRatio(t *testing.T, seq bool) {
	x := testIndex(t)
	clk := newManualClock()
	cg, gg := newGate(engine.NewCPU(x, 1)), newGate(engine.NewCPU(x, 1))
	gpu := &Processor{Backend: gg, Model: constModel(100 * time.Millisecond)}
	if seq {
		gpu.Sequential, gpu.Batch = true, BatchPolicy{MaxQueries: 3}
	}
	s, err := New(x, Config{
		CPU:   &Processor{Backend: cg, Model: FixedCostModel([NumBasis]float64{lnSeconds(time.Microsecond), 1})},
		GPU:   gpu,
		Clock: clk, Deadline: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	perm := []int{4, 0, 7, 2, 8, 1, 5, 3, 6}
	qs := make([]engine.Query, 1+len(perm))
	qs[0] = engine.Query{ID: "stuck", Terms: []string{termName(90)}, Mode: engine.Or, K: 10}
	for i, p := range perm {
		// t005 (df 250) and t02p (df 1500/(21+p), 71 down to 51): the
		// shortest list, and the CPU's cost, fall with p.
		qs[1+i] = engine.Query{ID: fmt.Sprintf("p%d", p), Terms: []string{termName(5), termName(20 + p)}, Mode: engine.Or, K: 10}
	}
	c := newCollector()
	c.submit(t, s, Request{Query: qs[0]})
	if ids := cg.next(t); ids[0] != "stuck" {
		t.Fatalf("CPU ran %v first", ids)
	}
	for _, q := range qs[1:] {
		c.submit(t, s, Request{Query: q})
	}
	waitFor(t, "nine queued queries", func() bool { return s.Stats().Queued[QueueCPU] == 9 })
	clk.Advance(10 * time.Second) // the stuck query has overrun: the GPU steals
	var order []string
	for range perm {
		ids := gg.next(t)
		if len(ids) != 1 {
			t.Fatalf("GPU stole a batch %v", ids)
		}
		order = append(order, ids[0])
		gg.release <- struct{}{}
	}
	cg.release <- struct{}{}
	c.wg.Wait()
	s.Close()
	for i, id := range order {
		if want := fmt.Sprintf("p%d", i); id != want {
			t.Fatalf("steal order %v, want p0 (the longest shortest list) to p8", order)
		}
		if r := c.get(t, id); !r.Stolen || (seq && r.BatchSize != 3) {
			t.Fatalf("%s: stolen %v in a batch of %d", id, r.Stolen, r.BatchSize)
		}
	}
}

// TestStealSparesNextBatch: a CPU stealing from a batching GPU that has
// overrun takes the queries behind the GPU's next batch, newest first, and
// leaves the next batch (4 queries) whole, so that stealing does not shrink
// the GPU's batches.
func TestStealSparesNextBatch(t *testing.T) {
	x := testIndex(t)
	clk := newManualClock()
	gg := newGate(engine.NewCPU(x, 1))
	s, err := New(x, Config{
		CPU:   &Processor{Backend: engine.NewCPU(x, 1), Model: constModel(time.Millisecond)},
		GPU:   &Processor{Backend: gg, Model: constModel(time.Microsecond), Batch: BatchPolicy{MaxQueries: 4}},
		Clock: clk, Deadline: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	qs := make([]engine.Query, 11)
	for i := range qs {
		qs[i] = engine.Query{ID: fmt.Sprintf("q%02d", i), Terms: []string{termName(10 + i)}, Mode: engine.Or, K: 10}
	}
	c := newCollector()
	c.submit(t, s, Request{Query: qs[0]})
	gg.next(t)
	for _, q := range qs[1:] {
		c.submit(t, s, Request{Query: q})
	}
	waitFor(t, "ten queued queries", func() bool { return s.Stats().Queued[QueueGPU] == 10 })
	time.Sleep(5 * pollInterval) // the CPU polls, and must not steal yet
	if st := s.Stats(); st.Procs[CPU].Queries != 0 {
		t.Fatalf("CPU ran %d queries before the GPU overran", st.Procs[CPU].Queries)
	}
	clk.Advance(time.Second)
	waitFor(t, "six stolen queries", func() bool { return c.count() == 6 })
	time.Sleep(5 * pollInterval) // and no more
	gg.release <- struct{}{}
	if ids := gg.next(t); !slices.Equal(ids, []string{"q01", "q02", "q03", "q04"}) {
		t.Fatalf("GPU's next batch %v, want q01-q04", ids)
	}
	gg.release <- struct{}{}
	c.wg.Wait()
	s.Close()
	c.mu.Lock()
	stolen := slices.Clone(c.order[:6])
	c.mu.Unlock()
	if want := []string{"q10", "q09", "q08", "q07", "q06", "q05"}; !slices.Equal(stolen, want) {
		t.Fatalf("CPU stole %v, want %v (newest first)", stolen, want)
	}
	for _, id := range stolen {
		if r := c.get(t, id); r.Proc != CPU || !r.Stolen {
			t.Fatalf("%s ran on %v, stolen %v", id, r.Proc, r.Stolen)
		}
	}
}

// TestSequentialBatch: a Sequential processor's slot takes several queued
// queries at once (MaxQueries 4, no threshold: what is queued) but runs
// them one per backend call, each with its own times and cost.
func TestSequentialBatch(t *testing.T) {
	x := testIndex(t)
	cg := newGate(engine.NewCPU(x, 1))
	s, err := New(x, Config{
		CPU: &Processor{Backend: cg, Sequential: true, Batch: BatchPolicy{MaxQueries: 4}, Model: constModel(time.Millisecond)},
	})
	if err != nil {
		t.Fatal(err)
	}
	qs := make([]engine.Query, 6)
	for i := range qs {
		qs[i] = engine.Query{ID: fmt.Sprintf("q%d", i), Terms: []string{termName(10 + i)}, Mode: engine.Or, K: 10}
	}
	want := direct(t, x, qs)
	c := newCollector()
	c.submit(t, s, Request{Query: qs[0]})
	if ids := cg.next(t); !slices.Equal(ids, []string{"q0"}) {
		t.Fatalf("first call %v", ids)
	}
	for _, q := range qs[1:] {
		c.submit(t, s, Request{Query: q})
	}
	waitFor(t, "five queued queries", func() bool { return s.Stats().Queued[QueueCPU] == 5 })
	cg.release <- struct{}{}
	var calls [][]string
	for range 5 {
		calls = append(calls, cg.next(t))
		cg.release <- struct{}{}
	}
	c.wg.Wait()
	s.Close()
	if want := [][]string{{"q1"}, {"q2"}, {"q3"}, {"q4"}, {"q5"}}; !slices.EqualFunc(calls, want, slices.Equal) {
		t.Fatalf("backend calls %v, want one query each, in order", calls)
	}
	st := s.Stats()
	if st.Procs[CPU].Batches != 3 || st.Procs[CPU].Queries != 6 {
		t.Fatalf("%d batches of %d queries, want 3 (q0, q1-q4, q5)", st.Procs[CPU].Batches, st.Procs[CPU].Queries)
	}
	var prev time.Time
	for i, q := range qs {
		r := c.get(t, q.ID)
		if err := sameResponse(r.Response, want[i]); err != nil {
			t.Fatalf("%s: %v", q.ID, err)
		}
		wantSize := map[int]int{0: 1, 5: 1}[i]
		if wantSize == 0 {
			wantSize = 4
		}
		if r.BatchSize != wantSize {
			t.Fatalf("%s: batch size %d, want %d", q.ID, r.BatchSize, wantSize)
		}
		if r.Cost != r.Finish.Sub(r.Start) || r.Start.Before(prev) {
			t.Fatalf("%s: cost %v, start %v finish %v (previous finish %v): not its own call's times", q.ID, r.Cost, r.Start, r.Finish, prev)
		}
		prev = r.Finish
	}
}

// TestCPUNiceSameResults: CPU slots on threads of lowered priority
// (Config.CPUNice) answer every query as the CPU engine does.
func TestCPUNiceSameResults(t *testing.T) {
	x := testIndex(t)
	b := engine.NewCPU(x, 1)
	s, err := New(x, Config{CPU: &Processor{Backend: b, Slots: 3}, CPUNice: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	qs := testQueries(40, 7)
	want := make([]engine.Response, len(qs))
	if err := b.SearchBatch(context.Background(), qs, engine.Options{}, want); err != nil {
		t.Fatal(err)
	}
	for i, q := range qs {
		r, err := s.Search(context.Background(), Request{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if r.Proc != CPU || !slices.Equal(r.Results, want[i].Results) {
			t.Fatalf("query %d on %v: %v, want %v", i, r.Proc, r.Results, want[i].Results)
		}
	}
}

// TestSequentialShare: a Sequential processor's slot takes its share of
// the queue (queued over free slots, rounded up), not all its BatchPolicy
// allows, so that the other free slots are not left idle.
func TestSequentialShare(t *testing.T) {
	x := testIndex(t)
	clk := newManualClock()
	s, err := newScheduler(x, Config{
		CPU: &Processor{Backend: nopBackend{}, Slots: 3, Sequential: true,
			Batch: BatchPolicy{MaxCost: time.Hour}, Model: constModel(time.Millisecond)},
		Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		q := engine.Query{ID: fmt.Sprintf("q%d", i), Terms: []string{termName(10 + i)}, Mode: engine.And, K: 10}
		s.enqueue(s.newJob(Request{Query: q}, func(*Result) {}), clk.Now())
	}
	s.dispatch(clk.Now())
	var sizes []int
	var ids []string
	for _, b := range s.procs[CPU].running {
		sizes = append(sizes, len(b.jobs))
		for _, j := range b.jobs {
			ids = append(ids, j.q.ID)
		}
	}
	if !slices.Equal(sizes, []int{3, 2, 2}) {
		t.Errorf("batch sizes %v, want [3 2 2] (7 queries over 3 free slots)", sizes)
	}
	if want := []string{"q0", "q1", "q2", "q3", "q4", "q5", "q6"}; !slices.Equal(ids, want) {
		t.Errorf("queries %v, want %v: oldest first", ids, want)
	}
}

// TestBatchOfOneAllocs: building a batch of one query (a CPU slot's usual
// batch) allocates the batch alone; its job and urgency live inside it.
func TestBatchOfOneAllocs(t *testing.T) {
	x := testIndex(t)
	s, err := newScheduler(x, Config{CPU: &Processor{Backend: nopBackend{}, Slots: 1, Model: constModel(time.Millisecond)}})
	if err != nil {
		t.Fatal(err)
	}
	p := s.procs[CPU]
	j := s.newJob(Request{Query: engine.Query{ID: "q", Terms: []string{termName(10)}, Mode: engine.And, K: 10}}, func(*Result) {})
	var b *batch
	allocs := testing.AllocsPerRun(100, func() {
		bb := s.newBuilder(p)
		bb.add(j, true)
		b = s.newBatch(&bb, false)
		j.picked = false
	})
	if allocs != 1 {
		t.Errorf("%v allocations per batch of one, want 1", allocs)
	}
	if len(b.jobs) != 1 || b.jobs[0] != j || !b.urgency[0] {
		t.Errorf("batch jobs %v urgency %v", b.jobs, b.urgency)
	}
}
