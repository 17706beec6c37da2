package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// ErrClosed is returned by Submit after Shutdown, and wrapped by the error
// of queries that Shutdown abandoned when its context expired.
var ErrClosed = errors.New("scheduler: closed")

// ProcID identifies one of the scheduler's two processors.
type ProcID int8

const (
	CPU    ProcID = 0
	GPU    ProcID = 1
	NoProc ProcID = -1 // a query that never ran (abandoned at shutdown)
)

func (p ProcID) String() string {
	switch p {
	case CPU:
		return "cpu"
	case GPU:
		return "gpu"
	}
	return "none"
}

// Queue is the queue a query was classified into (Ding et al. WWW'09 §9:
// "queries that are estimated to be much more suitable for the GPU, ...
// for the CPU, and all other queries").
type Queue uint8

const (
	QueueCPU    Queue = Queue(CPU)
	QueueGPU    Queue = Queue(GPU)
	QueueEither Queue = 2
)

func (q Queue) String() string {
	switch q {
	case QueueCPU:
		return "cpu"
	case QueueGPU:
		return "gpu"
	case QueueEither:
		return "either"
	}
	return fmt.Sprintf("Queue(%d)", uint8(q))
}

// Clock is the scheduler's time source: arrival, start and finish stamps,
// deadlines, urgency, batch time limits and cost estimates of running
// batches all read it. Tests inject a manual clock; timers that wake the
// scheduler (batch time limits, polling) still run in real time, for the
// durations computed from the clock.
type Clock interface{ Now() time.Time }

// RealClock is the wall clock.
type RealClock struct{}

// Now implements Clock.
func (RealClock) Now() time.Time { return time.Now() }

// BatchPolicy says how a processor groups queries into one SearchBatch call
// (Ao et al. VLDB'11 §4.1, PARA: "a CPU continuously receives queries until
// Σ_j |ℓ_j(t_1)| ≥ c ... and sends the queries to the GPU as a batch").
//
// A batch is full when it holds MaxQueries queries, or the sum of its
// predicted costs reaches MaxCost, or the sum of its queries' postings
// reaches MaxPostings (zero fields are off): the shortest-list length of an
// AND or AND+OR query (Ao et al.'s PARA threshold), the sum of all list
// lengths of an OR query (which reads every list whole). When neither threshold c is set,
// a free slot takes whatever is available, up to MaxQueries, at once. When
// one is set and the batch is not full, the slot waits for more queries
// until the oldest query of the batch has waited MaxWait since its arrival
// (MaxWait 0: it does not wait), or one of them becomes urgent, or the
// scheduler shuts down. Queries stay in their queues while a slot waits, so
// the other processor may still take them.
type BatchPolicy struct {
	// MaxQueries caps a batch; 0 means 1 when no threshold is set (no
	// batching) and unlimited otherwise.
	MaxQueries  int
	MaxCost     time.Duration // threshold c on the sum of predicted costs
	MaxPostings uint64        // threshold c on the sum of postings (Features.batchPostings)
	MaxWait     time.Duration // time limit for filling a batch
}

func (b BatchPolicy) thresholded() bool { return b.MaxCost > 0 || b.MaxPostings > 0 }

func (b BatchPolicy) maxQueries() int {
	switch {
	case b.MaxQueries > 0:
		return b.MaxQueries
	case b.thresholded():
		return math.MaxInt
	}
	return 1
}

// Processor is one processor: a backend, how many batches it runs at once,
// how it batches, and its cost model.
type Processor struct {
	Name    string         // for reports; "" means Backend.Name()
	Backend engine.Backend // required
	// Slots is the number of batches the processor runs concurrently, each
	// from its own goroutine (0 means 1). A CPU of n cores serving one
	// query at a time per core has n slots and a backend of one worker
	// (engine.NewCPU(x, 1)); a GPU has one slot per stream it overlaps.
	Slots int
	Batch BatchPolicy
	// Sequential says the backend runs one query at a time anyway (a CPU
	// core: engine.NewCPU(x, 1)). A slot then runs its batch as
	// consecutive one-query calls, each timed (its own Cost, the cost
	// model's exact sample) and delivered as soon as it finishes. Batching
	// such a processor (a BatchPolicy with MaxQueries or MaxCost and no
	// MaxWait: take what is queued, up to the limit) only saves the
	// dispatcher's per-batch hand-offs, a few microseconds each: as much
	// as a whole query on a small collection, where one-query slots make
	// the dispatcher, not the cores, the CPU's limit.
	Sequential bool
	// LearnEvery > 1: a slot of a Sequential processor (or one running
	// batches of one) refits the cost model on one answer in LearnEvery
	// rather than on each (0 or 1: each). The update costs about as much as
	// a small collection's query on the CPU (issue 24: 17% of the replay's
	// CPU time with instant backends); with the model's window of 4,096
	// samples, 1 in 4 still refits within 16k answers. The error record
	// then covers the answers learned. A processor whose batches hold
	// several queries (the GPU) learns from one batch in LearnEvery, from
	// each of its queries then up to maxBatchLearn, evenly spaced beyond
	// (a batch of a thousand was a thousand updates).
	LearnEvery int
	// Model predicts this processor's costs and is refitted from its
	// measured times (unless frozen). nil: a new untrained model. The
	// scheduler uses the model in place, so share one between schedulers
	// only on purpose (the replay driver clones it per run).
	Model *CostModel
	// BatchModel predicts the GPU's batch times under the GPU-first
	// placement and is refitted from every batch the GPU runs; used in
	// place like Model. nil: a new model without a prior.
	BatchModel *BatchModel
}

// Config configures a Scheduler.
type Config struct {
	// CPU and GPU are the two processors; at least one is required. With
	// only one, every query goes to it (the "CPU only" and "GPU only"
	// configurations of Ding's Figure 7). The names are Ding's roles; any
	// two backends can play them.
	CPU, GPU *Processor
	Options  engine.Options // passed to every SearchBatch
	// Deadline is the time after its arrival by which a query should be
	// answered (default 500 ms, Ding et al. §9); a Request may override it.
	Deadline time.Duration
	// UrgentFraction: a query whose age has reached UrgentFraction of its
	// deadline is urgent ("approaches the deadline ... has passed a
	// substantial part of the total time to its deadline"): it goes before
	// every other query of its preferred processor, and cuts batch waits
	// short. Default 0.5.
	UrgentFraction float64
	// Ratio is the base threshold T0 of the three queues (default 2; >= 1).
	// See Scheduler for the adaptive rule; 1 disables the "either" queue.
	Ratio float64
	// Serialize runs one query at a time in arrival order, each on its
	// preferred processor (the "CPU+GPU serialized" configuration of
	// Ding's Figure 7): no either queue, no stealing, no batching.
	Serialize bool
	// NoSteal turns work stealing off: an idle processor serves only its
	// own queue, the either queue and urgent queries (the "CPU+GPU without
	// stealing" configuration of the experiments).
	NoSteal bool
	Clock   Clock // nil: RealClock

	// Placement is PlaceCost (the default: Ding's queues, as above) or
	// PlaceGPUFirst (every query to the GPU, the CPU takes the overflow;
	// see gpuFirst). The fields below apply to PlaceGPUFirst only.
	Placement Placement
	// TargetFraction: a query should be answered by its arrival plus
	// TargetFraction of its deadline; the GPU's batches are cut so that
	// their oldest query is, and the CPU takes the queries the GPU is
	// predicted to answer later (default DefaultTargetFraction; (0, 1]).
	TargetFraction float64
	// CheapRatio > 0: a CPU slot that finds no overflow takes a query
	// whose predicted CPU cost is at most CheapRatio times the GPU's
	// measured time per query (not with NoSteal). 0: off.
	CheapRatio float64
	// SpareFixed > 0: the CPU leaves the GPU the head of its queue, as
	// many queries as make the GPU's fixed part per batch at most
	// 1/(1+SpareFixed) of the batch's time (see spareBatch); 0: off.
	SpareFixed float64
	// CPUShare > 0 gives the CPU a steady share of the arrivals (see
	// shareCPU): an arrival joins the CPU's own queue while the CPU's
	// predicted work (queued and running) is at most CPUShare queries of
	// the arrivals' mean predicted CPU cost per CPU slot it may run (the
	// core cap's), else the GPU's; the GPU takes the CPU's queries that
	// have waited half the target. 0: off (the CPU takes only overflow).
	CPUShare float64
	// Cores > 0 caps the CPU slots running at once at Cores less the
	// host cores the GPU side is measured to need (see hostShare); 0: no
	// cap. HostCores is the prior of that measure (0: one core), CPUTime
	// the process's CPU time (nil: getrusage; the simulation's tests
	// inject theirs).
	Cores     int
	HostCores float64
	CPUTime   func() (time.Duration, bool)
	// CPUNice > 0 runs each CPU slot on an OS thread of its own whose
	// nice value is raised by CPUNice (Linux; New fails elsewhere), so
	// that where more threads are runnable than there are cores the
	// kernel runs the GPU side's threads first (issue 24). A slot's
	// goroutine is then locked to its thread: each hand-off wakes that
	// thread, a few microseconds more than an unlocked goroutine.
	CPUNice int
	// PrepareAdapt > 0 parks that many CPU slots (at most all) while a GPU
	// batch is being prepared on the host: a parked slot starts no query
	// until no batch is preparing, so that the preparation, which fans
	// out over the host's cores, does not wait for cores busy with CPU
	// queries (see prepGate; issue 24). It needs both processors (ignored
	// otherwise, and with Serialize). A batch counts as preparing from its
	// SearchBatch call until the backend calls the function PrepareHook
	// put into the call's context (engine/gpu.WithDeviceHook: when the
	// batch takes the device), or until the call returns (PrepareHook nil,
	// or a backend that never calls it). 0: off.
	PrepareAdapt int
	PrepareHook  func(ctx context.Context, prepared func(time.Duration)) context.Context
	// Assist, if set, is called by each CPU slot beside a GPU before each
	// of its queries: it runs chunks of the GPU side's fanned-out host
	// work that is open then (engine/gpu.HelpHost), so that the GPU's
	// host phases get the cores the CPU slots hold within one CPU query's
	// time, with no context switch, instead of waiting behind them (issue
	// 24, twelfth round). Without open work it should cost about an
	// atomic load. nil: off (the slots only yield, runtime.Gosched).
	// With CPUNice the help runs on the slots' niced threads too.
	Assist func() bool
}

// DefaultDeadline is Ding et al.'s deadline: 500 ms after arrival.
const DefaultDeadline = 500 * time.Millisecond

// pollInterval is how often the dispatcher re-evaluates its queues while a
// processor has a free slot and queries wait: urgency, the batch time limit
// and the stealing condition change with time alone.
const pollInterval = time.Millisecond

// Request is one query submitted to the scheduler.
type Request struct {
	Query engine.Query
	// Arrival is the query's arrival time (zero: now). The replay driver
	// sets the scheduled arrival, so that delays include any lateness in
	// submitting.
	Arrival time.Time
	// Deadline overrides Config.Deadline for this query (0: the default).
	Deadline time.Duration
	// Features, if set, are the query's QueryFeatures on the scheduler's
	// index, computed by the caller (the replay driver computes those of
	// its log once, not on every arrival: a dictionary lookup per term);
	// nil: Submit computes them.
	Features *Features
	// Tag is the caller's, returned in Result.Tag (the replay driver's
	// position of the query in its log: one done function for all).
	Tag int
	// Result, if set, is where the scheduler writes the query's Result
	// (the pointer done then receives), and the capacity of its
	// Response.Results is reused for the answer: a caller that keeps every
	// result (the replay driver) gives them from one array, reused from
	// run to run, instead of a new record per query (issue 24). nil: the
	// scheduler allocates the Result. The caller must not touch *Result
	// between Submit and done.
	Result *Result
}

// Result is the outcome of one query: exactly the backend's Response (the
// scheduler never touches Results; it sets Err only when the whole batch
// failed and the backend left the query's Err nil), and the scheduling
// record.
type Result struct {
	engine.Response
	Query     engine.Query
	Features  Features
	Predicted [2]time.Duration // predicted cost on CPU and GPU (0: no such processor)
	// Cost is the measured time attributed to the query: its batch's wall
	// time, shared among the batch's queries in proportion to their
	// predicted costs (the whole wall time for a batch of one).
	Cost           time.Duration
	Arrival        time.Time
	Submitted      time.Time // when Submit was called (after Arrival when submitted late)
	Start, Finish  time.Time // of its batch's SearchBatch call
	Deadline       time.Time // absolute
	MetDeadline    bool      // Finish <= Deadline
	Proc           ProcID    // where it ran (NoProc: abandoned at shutdown)
	ProcName       string
	Queue          Queue // where it was classified on arrival
	Stolen, Urgent bool  // taken by stealing; taken as urgent
	BatchSize      int
	Tag            int // Request.Tag
}

// Delay is the response time: finish minus arrival.
func (r *Result) Delay() time.Duration { return r.Finish.Sub(r.Arrival) }

// ProcStats count one processor's work.
type ProcStats struct {
	Name                             string // "" when the processor is absent
	Queries, Batches, Stolen, Urgent uint64
	Busy                             time.Duration // sum of batch wall times
	// ModelError is the mean relative error of the cost predictions for
	// the queries it ran (measured with their attributed Cost), over
	// ModelSamples queries since the model's last Fit or ResetError.
	ModelError   float64
	ModelSamples int64
}

// Stats is a snapshot of a scheduler's counters.
type Stats struct {
	Submitted, Completed, Missed uint64
	// Submissions counts the accepted Submit and SubmitBatch calls: a
	// replay's bursts (Submitted / Submissions arrivals each on average).
	Submissions uint64
	Either      uint64 // queries classified into the either queue
	Queued      [3]int // current length of each Queue
	Running     int    // batches in flight
	Procs       [2]ProcStats
}

// Scheduler dispatches queries to a CPU and a GPU processor (Ding et al.
// WWW'09 §9). A single dispatcher goroutine owns the queues; each processor
// slot is a goroutine calling its backend's SearchBatch.
//
// On arrival a query's cost on each processor is predicted by its
// CostModel, and its predicted finish time on each is its cost plus the
// processor's backlog (the predicted remaining work of its running batches
// and queue, divided by its slots). With fC and fG the two finish times and
// nE the length of the either queue, the query goes
//
//	to the GPU queue    if fC >= T·fG,
//	to the CPU queue    if fG >= T·fC,
//	to the either queue otherwise,   T = 1 + (Ratio-1)·S/(S+nE),
//
// S being the total number of slots. With empty queues this is Ding's rule
// on the cost ratio; backlogs shift the band toward the less loaded
// processor; and the band narrows as the either queue grows, since either
// queries run only when a processor goes idle, so that under load more
// queries are committed to a processor directly.
//
// When a slot is free its processor takes, in order: urgent queries
// committed to it or preferring it (earliest urgency first); its own queue
// (oldest first); the oldest either queries (those preferring the other
// processor only while the other has no free slot); and, if it still has
// nothing, it steals from the tail of the other processor's queue queries
// that are predicted to finish earlier here than they would there, sparing
// the other's next batch and preferring those it is relatively best at
// (see pickSteal; the estimate for a batch that has overrun its prediction
// grows with its running time, so a mispredicted processor gets
// relieved). A processor
// that batches keeps taking queries this way until its batch is full
// (BatchPolicy).
//
// That is the cost placement (PlaceCost, the default). The GPU-first
// placement (Config.Placement PlaceGPUFirst) queues every query for the
// GPU and lets the CPU take only the GPU's overflow: see gpuFirst.
type Scheduler struct {
	x     *index.Index
	cfg   Config
	clock Clock
	procs [2]*proc

	ctx    context.Context // passed to SearchBatch; cancelled when Shutdown gives up
	cancel context.CancelFunc

	mu        sync.RWMutex // closed, and the arrive channel's closing
	closed    bool
	arrive    chan *job
	done      chan *batch
	abort     chan struct{}
	closeOnce sync.Once
	abortOnce sync.Once
	wg        sync.WaitGroup

	chunks chunkCarver // SubmitBatch's jobs

	seq                                   atomic.Uint64
	submitted, completed, missed, eitherN atomic.Uint64
	submissions                           atomic.Uint64
	queued                                [3]atomic.Int64
	running                               atomic.Int64

	// Owned by the dispatcher goroutine.
	queues   [3]jobList
	inflight int
	custom   int // queued jobs with a non-default deadline
	closing  bool
	aborted  bool
	scratch  []*job
	// visits counts the queued jobs the dispatcher's scans have looked at
	// (the simulation charges dispatcher time for them: a scan's cost grows
	// with the queues, unlike the per-query bookkeeping).
	visits   int64
	stealBuf []stealCand
	// bjobs and burgency are the scratch arrays of the batch being built
	// (newBuilder).
	bjobs    []*job
	burgency []bool
	noHeld   bool // tests: pickOwn never keeps a held batch (heldBatch)
	gf       gpuFirst
	arrays   arrayPool // the arrays of batches of several (any goroutine)
	gate     *prepGate // Config.PrepareAdapt (nil: off)
}

// batchArrays are the arrays of one batch of several queries: its jobs
// and their urgency (the dispatcher fills them), the queries and the
// responses of its SearchBatch call (the slot). Reused from batch to batch
// (issue 24: a GPU batch of a thousand queries allocated some 200 kB of
// them, and a CPU slot's hand-off of a few queries two small arrays, at a
// million queries a second).
type batchArrays struct {
	jobs    []*job
	urgency []bool
	qs      []engine.Query
	out     []engine.Response
	// used is the length calls last returned: qs[used:cap] and
	// out[used:cap] are zero (put clears only what a batch used; a GPU
	// slot's arrays grow to its largest batch, thousands of queries,
	// while most batches are smaller).
	used int
}

// calls returns the query and response arrays for n queries, the
// responses zero.
func (a *batchArrays) calls(n int) ([]engine.Query, []engine.Response) {
	if cap(a.qs) < n {
		a.qs, a.out = make([]engine.Query, n), make([]engine.Response, n)
	}
	a.used = n
	return a.qs[:n], a.out[:n]
}

// arrayPool lends batchArrays; safe for concurrent use. Not a sync.Pool:
// the collector would drop the grown arrays.
type arrayPool struct {
	mu   sync.Mutex
	free []*batchArrays
}

// maxFreeArrays is how many batchArrays the pool keeps: more batches of
// several than that are rarely in flight at once (the CPU's slots hand
// theirs back as they finish).
const maxFreeArrays = 64

func (p *arrayPool) get() *batchArrays {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k := len(p.free); k > 0 {
		a := p.free[k-1]
		p.free[k-1] = nil
		p.free = p.free[:k-1]
		return a
	}
	return new(batchArrays)
}

// put returns a, dropping its references to jobs, queries and results.
func (p *arrayPool) put(a *batchArrays) {
	clear(a.jobs)
	clear(a.qs[:a.used])
	clear(a.out[:a.used])
	a.jobs, a.urgency, a.used = a.jobs[:0], a.urgency[:0], 0
	p.mu.Lock()
	if len(p.free) < maxFreeArrays {
		p.free = append(p.free, a)
	}
	p.mu.Unlock()
}

type proc struct {
	id      ProcID
	name    string
	spec    Processor
	model   *CostModel
	slots   int
	maxQ    int
	work    chan *batch
	free    int        // dispatcher-owned
	running []*batch   // dispatcher-owned
	hold    time.Time  // dispatcher-owned: a free slot waits to fill a batch until then
	held    heldBatch  // dispatcher-owned: the batch pickOwn last held
	st      procCounts // atomic
	// batchLearn counts the delivered batches of several queries
	// (Processor.LearnEvery; deliveries run concurrently).
	batchLearn atomic.Uint64
}

type procCounts struct {
	queries, batches, stolen, urgent atomic.Uint64
	busy                             atomic.Int64
}

type batch struct {
	p       *proc
	jobs    []*job
	start   time.Time     // dispatch time (scheduler clock)
	pred    time.Duration // sum of predicted costs on p
	eta     time.Duration // GPU-first: the BatchModel's prediction of its wall time
	work    time.Duration // CPU share: the CPU work it adds to gpuFirst.cpuWork (shareStart)
	steal   bool
	urgency []bool // per job: taken as urgent
	// one and oneUrgent hold jobs and urgency for a batch of one (a CPU
	// slot's usual batch): one allocation per batch instead of three.
	one       [1]*job
	oneUrgent [1]bool
	// arr holds jobs and urgency, and the slot's query and response arrays,
	// for a batch of several (nil: a batch of one); back to the
	// scheduler's pool once the batch is delivered.
	arr *batchArrays
	// Set by the slot before it hands the batch back: its measured wall
	// time, and whether the backend failed it.
	wall   time.Duration
	failed bool
}

// newScheduler validates cfg and returns a scheduler with its queues and
// processors set up but no goroutine started: New starts them; the
// discrete-event simulation of the tests drives the dispatcher's methods
// (enqueue, dispatch, finished) itself, in virtual time.
func newScheduler(x *index.Index, cfg Config) (*Scheduler, error) {
	if x == nil {
		return nil, errors.New("scheduler: nil index")
	}
	if cfg.CPU == nil && cfg.GPU == nil {
		return nil, errors.New("scheduler: no processor")
	}
	if _, err := cfg.Options.Resolve(); err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if cfg.Deadline == 0 {
		cfg.Deadline = DefaultDeadline
	}
	if cfg.Deadline < 0 {
		return nil, fmt.Errorf("scheduler: negative deadline %v", cfg.Deadline)
	}
	if cfg.UrgentFraction == 0 {
		cfg.UrgentFraction = 0.5
	}
	if !(cfg.UrgentFraction > 0 && cfg.UrgentFraction <= 1) {
		return nil, fmt.Errorf("scheduler: urgent fraction %v outside (0, 1]", cfg.UrgentFraction)
	}
	if cfg.Ratio == 0 {
		cfg.Ratio = 2
	}
	if !(cfg.Ratio >= 1) || math.IsInf(cfg.Ratio, 0) {
		return nil, fmt.Errorf("scheduler: ratio %v, want >= 1", cfg.Ratio)
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.TargetFraction == 0 {
		cfg.TargetFraction = DefaultTargetFraction
	}
	if !(cfg.TargetFraction > 0 && cfg.TargetFraction <= 1) {
		return nil, fmt.Errorf("scheduler: target fraction %v outside (0, 1]", cfg.TargetFraction)
	}
	if !(cfg.CheapRatio >= 0) || cfg.Cores < 0 || !(cfg.HostCores >= 0) || !(cfg.SpareFixed >= 0) || math.IsInf(cfg.SpareFixed, 0) {
		return nil, fmt.Errorf("scheduler: negative cheap ratio %v, cores %d, host cores %v or spare factor %v", cfg.CheapRatio, cfg.Cores, cfg.HostCores, cfg.SpareFixed)
	}
	if !(cfg.CPUShare >= 0) || math.IsInf(cfg.CPUShare, 0) {
		return nil, fmt.Errorf("scheduler: CPU share depth %v, want a finite value >= 0", cfg.CPUShare)
	}
	if cfg.Placement > PlaceGPUFirst {
		return nil, fmt.Errorf("scheduler: unknown placement %v", cfg.Placement)
	}
	if err := checkNice(cfg.CPUNice); err != nil {
		return nil, err
	}
	if cfg.PrepareAdapt < 0 {
		return nil, fmt.Errorf("scheduler: negative prepare-adapt slot count %d", cfg.PrepareAdapt)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scheduler{x: x, cfg: cfg, clock: cfg.Clock, ctx: ctx, cancel: cancel,
		arrive: make(chan *job, 1024), abort: make(chan struct{})}
	total := 0
	for id, sp := range [2]*Processor{cfg.CPU, cfg.GPU} {
		if sp == nil {
			continue
		}
		if sp.Backend == nil {
			cancel()
			return nil, fmt.Errorf("scheduler: %v processor without a backend", ProcID(id))
		}
		if sp.Slots < 0 || sp.Batch.MaxQueries < 0 || sp.Batch.MaxCost < 0 || sp.Batch.MaxWait < 0 {
			cancel()
			return nil, fmt.Errorf("scheduler: %v processor: negative slots or batch limits", ProcID(id))
		}
		p := &proc{id: ProcID(id), spec: *sp, name: sp.Name, model: sp.Model, slots: max(sp.Slots, 1)}
		if p.name == "" {
			p.name = sp.Backend.Name()
		}
		if p.model == nil {
			p.model = NewCostModel(ModelOptions{})
		}
		p.maxQ = sp.Batch.maxQueries()
		if cfg.Serialize {
			p.maxQ = 1
		}
		p.free = p.slots
		p.work = make(chan *batch, p.slots)
		s.procs[id] = p
		total += p.slots
	}
	s.done = make(chan *batch, total)
	s.gf = gpuFirst{on: cfg.Placement == PlaceGPUFirst && !cfg.Serialize, target: cfg.TargetFraction, cpuCap: -1}
	if s.procs[CPU] != nil {
		s.gf.share = cfg.CPUShare
	}
	if g := s.procs[GPU]; g != nil && s.gf.on {
		s.gf.bm = g.spec.BatchModel
		if s.gf.bm == nil {
			s.gf.bm = NewBatchModel(0, 0)
		}
		if c := s.procs[CPU]; c != nil && cfg.Cores > 0 {
			s.gf.host = newHostShare(cfg.Cores, cfg.HostCores, cfg.CPUTime)
			s.gf.cpuCap = cpuSlotCap(cfg.Cores, s.gf.host.demand(), c.slots)
		}
	}
	if s.gf.bm == nil {
		s.gf.on = false // no GPU: nothing to place first
	}
	if c := s.procs[CPU]; c != nil && s.procs[GPU] != nil && cfg.PrepareAdapt > 0 && !cfg.Serialize {
		s.gate = newPrepGate(min(cfg.PrepareAdapt, c.slots))
	}
	return s, nil
}

// New returns a running scheduler over x (the index the backends search;
// its dictionary gives the features). Stop it with Shutdown or Close.
func New(x *index.Index, cfg Config) (*Scheduler, error) {
	s, err := newScheduler(x, cfg)
	if err != nil {
		return nil, err
	}
	for _, p := range s.procs {
		if p == nil {
			continue
		}
		for i := range p.slots {
			s.wg.Add(1)
			go s.worker(p, i)
		}
	}
	s.wg.Add(1)
	go s.loop()
	return s, nil
}

// Submit hands r to the scheduler. done is called exactly once with the
// query's Result, from a scheduler goroutine (the slot's, after its slot has
// been released or, in a Sequential processor's batch, while the slot runs
// the batch's next queries; or the dispatcher's for an abandoned query): it should
// return quickly, may Submit, but must not wait for another query's result
// (every slot's goroutine could end up waiting) nor call Shutdown or Close.
// The Result is the callee's to keep. Submit returns ErrClosed, and does not
// call done, after Shutdown has begun. It is safe for concurrent use.
func (s *Scheduler) Submit(r Request, done func(*Result)) error {
	checkRequest(r, done)
	j := new(job)
	s.initJob(j, r, done, s.clock.Now())
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	j.seq = s.seq.Add(1)
	s.submitted.Add(1)
	s.submissions.Add(1)
	s.arrive <- j
	return nil
}

// SubmitBatch submits rs in their order, as many Submit calls would (each
// query is classified and placed on its own, with its own done call), but
// with one hand-off to the dispatcher and one allocation for all of them:
// a caller with several arrivals due at once (the replay driver: every
// arrival whose time has passed) pays the per-query channel operation and
// dispatcher wake-up once per call (issue 24). It returns ErrClosed, and
// calls no done function, after Shutdown has begun.
func (s *Scheduler) SubmitBatch(rs []Request, done func(*Result)) error {
	if len(rs) == 0 {
		return nil
	}
	for i := range rs {
		checkRequest(rs[i], done)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	now := s.clock.Now()
	seq := s.seq.Add(uint64(len(rs))) - uint64(len(rs))
	var first, last *job
	for k := 0; k < len(rs); {
		c, lo, m := s.chunks.take(len(rs) - k)
		part := rs[k : k+m]
		k += m
		for i := range part {
			j := &c.jobs[lo+i]
			s.initJob(j, part[i], done, now)
			j.chunk = c
			seq++
			j.seq = seq
			if last != nil {
				last.more = j
			} else {
				first = j
			}
			last = j
		}
	}
	s.submitted.Add(uint64(len(rs)))
	s.submissions.Add(1)
	s.arrive <- first
	return nil
}

// checkRequest panics on a programmer's error in a submission.
func checkRequest(r Request, done func(*Result)) {
	if done == nil {
		panic("BUG: scheduler: Submit with a nil done function")
	}
	if r.Deadline < 0 {
		panic(fmt.Sprintf("BUG: scheduler: negative deadline %v", r.Deadline))
	}
}

// initJob prepares r for the dispatcher in j, a zero job: its features,
// predicted costs, preferred processor, deadline and urgency time; now is
// the submission time. (Field by field: a composite literal assigned to
// *j went through a temporary and a typed copy, a quarter of the replay's
// time with instant backends.)
func (s *Scheduler) initJob(j *job, r Request, done func(*Result), now time.Time) {
	j.q, j.done, j.arrival, j.submitted, j.tag, j.res = r.Query, done, r.Arrival, now, r.Tag, r.Result
	if r.Features != nil {
		j.f = *r.Features
	} else {
		j.f = QueryFeatures(s.x, r.Query)
	}
	x := Basis(j.f) // once for both predictions
	for _, p := range s.procs {
		if p != nil {
			j.cost[p.id] = p.model.PredictBasis(j.f, &x)
		}
	}
	switch {
	case s.procs[GPU] == nil:
		j.pref = CPU
	case s.procs[CPU] == nil:
		j.pref = GPU
	case j.cost[GPU] < j.cost[CPU]:
		j.pref = GPU
	default:
		j.pref = CPU
	}
	if j.arrival.IsZero() {
		j.arrival = j.submitted
	}
	dl := s.cfg.Deadline
	if r.Deadline > 0 {
		dl = r.Deadline
		j.custom = true
	}
	j.deadline = j.arrival.Add(dl)
	j.urgentAt = j.arrival.Add(time.Duration(float64(dl) * s.cfg.UrgentFraction))
}

// newJob is initJob on a new job submitted now (the simulation's tests
// enqueue jobs without Submit).
func (s *Scheduler) newJob(r Request, done func(*Result)) *job {
	j := new(job)
	s.initJob(j, r, done, s.clock.Now())
	return j
}

// Search submits r and waits for its result. When ctx ends first it
// returns ctx's error; the query still runs, and its result is dropped.
func (s *Scheduler) Search(ctx context.Context, r Request) (*Result, error) {
	ch := make(chan *Result, 1)
	if err := s.Submit(r, func(res *Result) { ch <- res }); err != nil {
		return nil, err
	}
	select {
	case res := <-ch:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Shutdown stops accepting queries, lets the queued and running ones
// finish, and returns when every done function has been called and every
// scheduler goroutine has exited. If ctx ends first, the queries not yet
// started are abandoned (their Result has Proc NoProc and an Err wrapping
// ErrClosed), running batches see their context cancelled,
// and Shutdown still waits for them to return, then returns ctx's error.
// It may be called more than once, and concurrently.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.arrive)
		s.chunks.drop()
		s.mu.Unlock()
	})
	finished := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(finished)
	}()
	var err error
	select {
	case <-finished:
	case <-ctx.Done():
		err = ctx.Err()
		s.abortOnce.Do(func() {
			s.cancel()
			close(s.abort)
		})
		<-finished
	}
	s.cancel()
	return err
}

// Close is Shutdown without a time limit.
func (s *Scheduler) Close() error { return s.Shutdown(context.Background()) }

// Stats returns a snapshot of the counters.
func (s *Scheduler) Stats() Stats {
	st := Stats{
		Submitted: s.submitted.Load(), Submissions: s.submissions.Load(), Completed: s.completed.Load(),
		Missed: s.missed.Load(), Either: s.eitherN.Load(),
		Running: int(s.running.Load()),
	}
	for i := range st.Queued {
		st.Queued[i] = int(s.queued[i].Load())
	}
	for _, p := range s.procs {
		if p == nil {
			continue
		}
		ps := &st.Procs[p.id]
		ps.Name = p.name
		ps.Queries, ps.Batches = p.st.queries.Load(), p.st.batches.Load()
		ps.Stolen, ps.Urgent = p.st.stolen.Load(), p.st.urgent.Load()
		ps.Busy = time.Duration(p.st.busy.Load())
		ps.ModelError, ps.ModelSamples = p.model.MeanRelError()
	}
	return st
}

// Model returns the cost model of processor id (nil when absent).
func (s *Scheduler) Model(id ProcID) *CostModel {
	if p := s.procs[id]; p != nil {
		return p.model
	}
	return nil
}

func (s *Scheduler) other(p *proc) *proc { return s.procs[1-p.id] }

// loop is the dispatcher.
func (s *Scheduler) loop() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var timerAt time.Time
	arrive, abort := s.arrive, s.abort
	for {
		select {
		case j, ok := <-arrive:
			now := s.clock.Now()
			// Classify the burst that has arrived (but no more, so that a
			// fast submitter cannot starve dispatching) before dispatching,
			// so that batches form. The queues' gauges (Stats.Queued) are
			// counted here and published once per burst, before dispatch
			// reads or lowers them: an atomic add per burst and queue
			// instead of per query (issue 24).
			var queued [len(s.queued)]int64
			for burst := len(arrive); ok; burst-- {
				for j != nil {
					next := j.more // enqueue may answer j (aborted) and release it
					if q, ok := s.place(j, now); ok {
						queued[q]++
					}
					j = next
				}
				if burst <= 0 {
					break
				}
				j, ok = <-arrive
			}
			for q, n := range queued {
				if n > 0 {
					s.queued[q].Add(n)
				}
			}
			if !ok {
				arrive, s.closing = nil, true
			}
		case b := <-s.done:
			s.finished(b)
			// And the batches that finished meanwhile: one dispatch pass
			// for all of them (the same passes' outcome, fewer passes).
			for n := len(s.done); n > 0; n-- {
				s.finished(<-s.done)
			}
		case <-timer.C:
			timerAt = time.Time{}
		case <-abort:
			abort = nil
		}
		if !s.aborted && s.ctx.Err() != nil {
			// Shutdown gave up (it cancels s.ctx before signalling abort, so
			// a batch that returns early because of it starts nothing new).
			s.aborted = true
			s.failQueued()
		}
		now := s.clock.Now()
		wake := s.dispatch(now)
		if s.closing && s.inflight == 0 && s.queues[0].n+s.queues[1].n+s.queues[2].n == 0 {
			for _, p := range s.procs {
				if p != nil {
					close(p.work)
				}
			}
			return
		}
		switch {
		case wake.IsZero():
			if !timerAt.IsZero() {
				timer.Stop()
				timerAt = time.Time{}
			}
		case !wake.Equal(timerAt):
			timer.Reset(max(wake.Sub(now), time.Microsecond))
			timerAt = wake
		}
	}
}

// enqueue classifies j and queues it, counted in its queue's gauge.
func (s *Scheduler) enqueue(j *job, now time.Time) {
	if q, ok := s.place(j, now); ok {
		s.queued[q].Add(1)
	}
}

// place classifies j and queues it, as enqueue but without the gauge: it
// reports the queue, and false when j was answered instead (the scheduler
// gave up); the caller adds the job to s.queued[q] (loop: once per burst).
func (s *Scheduler) place(j *job, now time.Time) (Queue, bool) {
	if s.aborted {
		s.fail(j)
		return 0, false
	}
	q := s.classify(j, now)
	j.queue = q
	if q == QueueEither {
		s.eitherN.Add(1)
	}
	if j.custom {
		s.custom++
	}
	s.queues[q].push(j)
	return q, true
}

// classify picks j's queue (see Scheduler).
func (s *Scheduler) classify(j *job, now time.Time) Queue {
	c, g := s.procs[CPU], s.procs[GPU]
	switch {
	case g == nil:
		return QueueCPU
	case c == nil:
		return QueueGPU
	case s.cfg.Serialize:
		return Queue(j.pref)
	case s.gf.on:
		if s.gf.share > 0 && s.shareCPU(j) {
			return QueueCPU
		}
		s.gf.note(j)
		return QueueGPU
	}
	fc := float64(s.backlog(c, now) + j.cost[CPU])
	fg := float64(s.backlog(g, now) + j.cost[GPU])
	slots := float64(c.slots + g.slots)
	t := 1 + (s.cfg.Ratio-1)*slots/(slots+float64(s.queues[QueueEither].n))
	switch {
	case fc >= t*fg:
		return QueueGPU
	case fg >= t*fc:
		return QueueCPU
	}
	return QueueEither
}

// backlog is p's predicted work ahead of a new query, per slot.
func (s *Scheduler) backlog(p *proc, now time.Time) time.Duration {
	return (s.runningLeft(p, now) + s.queues[p.id].cost[p.id]) / time.Duration(p.slots)
}

// runningLeft is the predicted remaining time of p's running batches,
// summed. A batch predicted to take P that has run for e is expected to
// need max(P-e, e/2) more: its prediction while that is plausible, and
// half its running time once it has overrun (the longer it overruns, the
// longer it is expected to go on), so that a stuck or mispredicted
// processor looks busy and its queue gets stolen.
func (s *Scheduler) runningLeft(p *proc, now time.Time) time.Duration {
	var left time.Duration
	for _, b := range p.running {
		e := now.Sub(b.start)
		pred := b.pred
		if b.eta > 0 {
			pred = b.eta
		}
		left += max(pred-e, e/2)
	}
	return left
}

// dispatch starts every batch it can and returns when the dispatcher should
// look again without an event (zero: not before the next event).
func (s *Scheduler) dispatch(now time.Time) time.Time {
	if s.cfg.Serialize {
		s.dispatchSerial(now)
		return time.Time{}
	}
	var wake time.Time
	for {
		wake = time.Time{}
		progress := false
		s.gf.noMore = false
		for _, p := range s.procs {
			if p == nil {
				continue
			}
			p.hold = time.Time{}
			for s.canStart(p) {
				b, hold := s.pickOwn(p, now)
				if b == nil {
					if !hold.IsZero() {
						p.hold = hold
						wake = earliest(wake, hold)
					}
					break
				}
				s.start(b, now)
				progress = true
			}
		}
		for _, p := range s.procs {
			if p == nil || !p.hold.IsZero() {
				continue
			}
			for s.canStart(p) {
				b := s.pickSteal(p, now)
				if b == nil {
					break
				}
				s.start(b, now)
				progress = true
			}
		}
		if !progress {
			break
		}
	}
	if s.queues[0].n+s.queues[1].n+s.queues[2].n > 0 {
		for _, p := range s.procs {
			if p != nil && s.canStart(p) {
				wake = earliest(wake, now.Add(pollInterval))
				break
			}
		}
	}
	return wake
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// builder accumulates a batch for p.
type builder struct {
	p        *proc
	limit    int // most queries (0: the policy's)
	jobs     []*job
	urgency  []bool
	cost     time.Duration
	postings uint64
	oldest   time.Time
	urgent   int
}

func (b *builder) add(j *job, urgent bool) {
	j.picked = true
	b.jobs = append(b.jobs, j)
	b.urgency = append(b.urgency, urgent)
	b.cost += j.cost[b.p.id]
	if !j.f.Empty() {
		b.postings += j.f.batchPostings()
	}
	if b.oldest.IsZero() || j.arrival.Before(b.oldest) {
		b.oldest = j.arrival
	}
	if urgent {
		b.urgent++
	}
}

func (b *builder) full() bool {
	return (b.limit > 0 && len(b.jobs) >= b.limit) || b.p.fullAt(len(b.jobs), b.cost, b.postings)
}

// fullAt says whether a batch of n queries of these predicted costs and
// postings is full under p's policy.
func (p *proc) fullAt(n int, cost time.Duration, postings uint64) bool {
	pol := &p.spec.Batch
	return n >= p.maxQ ||
		(pol.MaxCost > 0 && cost >= pol.MaxCost) ||
		(pol.MaxPostings > 0 && postings >= pol.MaxPostings)
}

func (b *builder) unpick() {
	for _, j := range b.jobs {
		j.picked = false
	}
}

// heldBatch is the batch pickOwn built and then held to let it fill (its
// jobs unpicked), kept so that the next pickOwn extends it with the jobs
// pushed since rather than building it again from the queue's head: with
// a wake-up per arrival burst, rebuilding made the dispatcher's work per
// batch quadratic in its length (issue 24: pickOwn was 1.42 of the 14.7
// s of CPU of a 700k q/s GPU-only GCIDE OR run on the H100 host). It is
// kept only in the case where the extension is exactly the rebuild: one
// deadline for all queries (no custom one), no urgent query, an empty
// either queue, a limit that does not follow the queue (not a
// Sequential processor's share); it is valid while no job has left p's
// queue or the either queue (jobList.removed) and the limit is the same.
// Its arrays are its own (never the dispatcher's scratch, s.bjobs).
type heldBatch struct {
	ok            bool
	bb            builder
	last          *job      // the last job of p's queue in bb
	urg           time.Time // the earliest urgentAt of bb's jobs
	removed       uint64    // p's queue's removed then
	eitherRemoved uint64    // the either queue's removed then
	limit         int       // bb.limit then
}

// pickOwn builds p's next batch from its urgent queries, its queue and the
// either queue. It returns nil and a time when p should wait for its batch
// to fill until then, or nil and zero when there is nothing to take.
func (s *Scheduler) pickOwn(p *proc, now time.Time) (*batch, time.Time) {
	own, either := &s.queues[p.id], &s.queues[QueueEither]
	o := s.other(p)
	limit := 0
	if s.gf.on && p.id == GPU {
		limit = s.budgetLimit()
	}
	share := p.spec.Sequential && p.maxQ > 1 && p.free > 0
	if share {
		// A slot that runs its batch query by query (BatchPolicy.MaxCost
		// of a CPU) takes its share of the queue, no more than the policy
		// allows: with a short queue the other free slots get theirs.
		limit = max(1, (own.n+either.n+p.free-1)/p.free)
	}
	h := &p.held
	if h.ok && s.custom == 0 && !s.closing && !share && either.n == 0 && h.limit == limit &&
		h.removed == own.removed && h.eitherRemoved == either.removed &&
		urgentHead(own.head, now, NoProc) == nil && !s.cpuStale(p, now) {
		return s.extendHeld(p, now)
	}
	h.ok = false
	bb := s.newBuilder(p)
	bb.limit = limit
	// 1. Urgent queries committed to p, or waiting in the either queue and
	// preferring p (Ding §9: "we prioritize this job and schedule it
	// immediately on its preferred processor").
	if s.custom == 0 {
		// One deadline for all: urgency follows queue order (up to
		// submission races), so merge the two queues' urgent heads lazily,
		// taking no more than the batch holds, even when an overloaded
		// queue is urgent throughout.
		a, e := urgentHead(own.head, now, NoProc), urgentHead(either.head, now, p.id)
		for (a != nil || e != nil) && !bb.full() {
			if a != nil && (e == nil || !e.urgentAt.Before(a.urgentAt)) {
				bb.add(a, true)
				a = urgentHead(a.next, now, NoProc)
			} else {
				bb.add(e, true)
				e = urgentHead(e.next, now, p.id)
			}
		}
	} else {
		urg := s.urgent(s.scratch[:0], own, now, NoProc)
		urg = s.urgent(urg, either, now, p.id)
		slices.SortStableFunc(urg, func(a, b *job) int { return a.urgentAt.Compare(b.urgentAt) })
		for _, j := range urg {
			if bb.full() {
				break
			}
			bb.add(j, true)
		}
		clear(urg)
		s.scratch = urg[:0]
	}
	// 1b. Under the CPU share, the CPU's queries that have waited too long
	// there (takeStale).
	s.takeStale(&bb, now)
	// 2. Its own queue, oldest first.
	for j := own.head; j != nil && !bb.full(); j = j.next {
		s.visits++
		if !j.picked {
			bb.add(j, false)
		}
	}
	// 3. The either queue, oldest first ("when a processor is idle, it first
	// executes the oldest job from the third group"); a query preferring
	// the other processor is left to it while it has a free slot.
	for j := either.head; j != nil && !bb.full(); j = j.next {
		s.visits++
		if !j.picked && (j.pref == p.id || o == nil || o.free == 0) {
			bb.add(j, false)
		}
	}
	if len(bb.jobs) == 0 {
		return nil, time.Time{}
	}
	pol := &p.spec.Batch
	if !bb.full() && pol.thresholded() && pol.MaxWait > 0 && !s.closing && bb.urgent == 0 {
		var urg time.Time
		for _, j := range bb.jobs {
			urg = earliest(urg, j.urgentAt)
		}
		hold := earliest(bb.oldest.Add(pol.MaxWait), urg)
		if now.Before(hold) {
			bb.unpick()
			if s.custom == 0 && !share && either.n == 0 && !s.noHeld {
				// Keep it (heldBatch): its arrays become the held
				// batch's, the held batch's old ones the scratch.
				spare := h.bb
				*h = heldBatch{ok: true, bb: bb, last: own.tail, urg: urg, removed: own.removed,
					eitherRemoved: either.removed, limit: limit}
				s.bjobs, s.burgency = spare.jobs[:0], spare.urgency[:0]
			} else {
				clear(bb.jobs)
				s.bjobs, s.burgency = bb.jobs[:0], bb.urgency[:0] // keep what the scratch has grown to
			}
			return nil, hold
		}
	}
	return s.newBatch(&bb, false), time.Time{}
}

// extendHeld is pickOwn from p's valid held batch (heldBatch): the jobs
// pushed to p's queue since are added to it until it is full; then, as
// pickOwn decides, it is held again (the new jobs unpicked) or becomes the
// batch returned.
func (s *Scheduler) extendHeld(p *proc, now time.Time) (*batch, time.Time) {
	h := &p.held
	own := &s.queues[p.id]
	bb := h.bb
	if h.last == nil || !h.last.inQueue || bb.urgent != 0 || len(bb.jobs) == 0 {
		panic("BUG: scheduler: held batch without its last job queued, or urgent, or empty")
	}
	n0 := len(bb.jobs)
	for j := h.last.next; j != nil && !bb.full(); j = j.next {
		s.visits++
		if !j.picked {
			bb.add(j, false)
			h.urg = earliest(h.urg, j.urgentAt)
		}
	}
	pol := &p.spec.Batch
	if !bb.full() {
		if hold := earliest(bb.oldest.Add(pol.MaxWait), h.urg); now.Before(hold) {
			for _, j := range bb.jobs[n0:] {
				j.picked = false
			}
			h.bb, h.last = bb, own.tail
			return nil, hold
		}
	}
	// The batch goes: its arrays become the scratch, the scratch's the
	// next held batch's.
	spare := builder{jobs: s.bjobs[:0], urgency: s.burgency[:0]}
	h.ok = false
	b := s.newBatch(&bb, false) // its first n0 jobs unpicked: start unpicks them all anyway
	h.bb = spare
	return b, time.Time{}
}

// urgent appends the queries of l that are urgent at now (and prefer pref,
// unless pref is NoProc).
func (s *Scheduler) urgent(dst []*job, l *jobList, now time.Time, pref ProcID) []*job {
	for j := l.head; j != nil; j = j.next {
		s.visits++
		if !now.Before(j.urgentAt) && (pref == NoProc || j.pref == pref) {
			dst = append(dst, j)
		}
	}
	return dst
}

// urgentHead returns the first query from j on that is urgent at now and
// prefers pref (any, for NoProc), assuming urgency follows queue order: it
// stops at the first query that is not urgent.
func urgentHead(j *job, now time.Time, pref ProcID) *job {
	for ; j != nil && !now.Before(j.urgentAt); j = j.next {
		if pref == NoProc || j.pref == pref {
			return j
		}
	}
	return nil
}

// pickSteal builds a batch for idle p from the other processor's queue
// (Ding §9: "if there is no such job it will steal a job from the other
// processor"), taking only queries predicted to finish earlier on p than
// where they wait. A query is predicted to finish there after the other's
// running work and the queries ahead of it in its queue, spread over its
// slots, plus its own cost (plus the rest of a batch wait if the other
// processor is holding a slot for one).
//
// The thief takes from the tail of the queue, not the head: the queries
// at the head are the ones the other processor is about to run, and for a
// processor that batches (the GPU: a large fixed cost per batch) they are
// its next batch, which stealing would shrink, starving it of the
// amortization that makes it fast. So the head queries that the other's
// next batch would take are reserved (stolen only once urgent), and the
// queries behind them — those that wait at least a batch time there — are
// the thief's. A thief that runs its queries one at a time (a CPU core:
// a one-query slot, or a Sequential processor's batch) takes, among the
// last stealScan candidates, those it is relatively best at (the highest
// ratio of their cost there to their cost here) first, as many as its
// batch holds.
func (s *Scheduler) pickSteal(p *proc, now time.Time) *batch {
	if s.gf.on {
		if p.id == CPU {
			return s.pickOverflow(p, now)
		}
		return nil // the CPU has no queue of its own
	}
	o := s.other(p)
	if s.cfg.NoSteal || o == nil || s.queues[o.id].n == 0 {
		return nil
	}
	q := &s.queues[o.id]
	var base time.Duration
	if !o.hold.IsZero() {
		base = max(o.hold.Sub(now), 0)
	}
	reserved := s.nextBatchEnd(o) // the first query behind o's next batch
	ahead := s.runningLeft(o, now) + q.cost[o.id]
	bb := s.newBuilder(p)
	cands := s.stealBuf[:0]
	inReserve := reserved == nil // o's next batch takes the whole queue
	for j := q.tail; j != nil && !bb.full(); j = j.prev {
		s.visits++
		ahead -= j.cost[o.id] // the work ahead of j there
		if j.next == reserved && reserved != nil {
			inReserve = true
		}
		if j.picked || (inReserve && now.Before(j.urgentAt)) {
			continue
		}
		there := base + ahead/time.Duration(o.slots) + j.cost[o.id]
		if p.maxQ > 1 && !p.spec.Sequential {
			if bb.cost+j.cost[p.id] < there {
				bb.add(j, false)
			}
			continue
		}
		if j.cost[p.id] >= there {
			continue
		}
		cands = append(cands, stealCand{j, there, float64(j.cost[o.id]) / float64(max(j.cost[p.id], MinTime))})
		if len(cands) >= stealScan {
			break
		}
	}
	// A thief that runs its queries one at a time takes the candidates it
	// is relatively best at first, each only if it still finishes here,
	// behind those taken before it, earlier than it would there.
	sortByRatio(cands)
	for _, c := range cands {
		if bb.full() {
			break
		}
		if bb.cost+c.j.cost[p.id] < c.there {
			bb.add(c.j, false)
		}
	}
	clear(cands)
	s.stealBuf = cands[:0]
	if len(bb.jobs) == 0 {
		return nil
	}
	return s.newBatch(&bb, true)
}

// stealCand is a query pickSteal may take: where it would finish on its
// processor, and its cost there over its cost on the thief.
type stealCand struct {
	j     *job
	there time.Duration
	ratio float64
}

// sortByRatio orders candidates by decreasing ratio.
func sortByRatio(c []stealCand) {
	slices.SortStableFunc(c, func(a, b stealCand) int { return cmp.Compare(b.ratio, a.ratio) })
}

// stealScan is how many stealable queries a thief that runs one query at
// a time (one-query slots, Sequential processors) compares.
const stealScan = 64

// nextBatchEnd returns the first query of o's queue that o's next batch
// would not take (nil: it would take them all) when o batches, and o's
// head otherwise (nothing reserved).
func (s *Scheduler) nextBatchEnd(o *proc) *job {
	q := &s.queues[o.id]
	if o.maxQ <= 1 {
		return q.head
	}
	var n int
	var cost time.Duration
	var postings uint64
	j := q.head
	for ; j != nil && !o.fullAt(n, cost, postings); j = j.next {
		s.visits++
		n++
		cost += j.cost[o.id]
		if !j.f.Empty() {
			postings += j.f.batchPostings()
		}
	}
	return j
}

// dispatchSerial runs the oldest query on its preferred processor when
// nothing is running.
func (s *Scheduler) dispatchSerial(now time.Time) {
	if s.inflight > 0 {
		return
	}
	var first *job
	for i := range s.queues {
		h := s.queues[i].head
		if h != nil && (first == nil || h.arrival.Before(first.arrival) || (h.arrival.Equal(first.arrival) && h.seq < first.seq)) {
			first = h
		}
	}
	if first == nil {
		return
	}
	bb := s.newBuilder(s.procs[first.pref])
	bb.add(first, false)
	s.start(s.newBatch(&bb, false), now)
}

// newBuilder starts a batch for p in the dispatcher's scratch arrays
// (newBatch copies them out; one builder at a time).
func (s *Scheduler) newBuilder(p *proc) builder {
	return builder{p: p, jobs: s.bjobs[:0], urgency: s.burgency[:0]}
}

func (s *Scheduler) newBatch(bb *builder, steal bool) *batch {
	b := &batch{p: bb.p, pred: bb.cost, steal: steal}
	if len(bb.jobs) == 1 {
		b.one[0], b.oneUrgent[0] = bb.jobs[0], bb.urgency[0]
		b.jobs, b.urgency = b.one[:], b.oneUrgent[:]
	} else {
		a := s.arrays.get()
		a.jobs, a.urgency = append(a.jobs[:0], bb.jobs...), append(a.urgency[:0], bb.urgency...)
		b.arr, b.jobs, b.urgency = a, a.jobs, a.urgency
	}
	clear(bb.jobs)
	s.bjobs, s.burgency = bb.jobs[:0], bb.urgency[:0] // keep what the scratch has grown to
	return b
}

// start takes b's jobs out of their queues and hands b to a slot of its
// processor (whose work channel has room: one per free slot).
func (s *Scheduler) start(b *batch, now time.Time) {
	p := b.p
	if p.free <= 0 {
		panic("BUG: scheduler: starting a batch on a processor without a free slot")
	}
	var left [3]int64 // the queue-depth counters, updated once per batch
	for i, j := range b.jobs {
		s.queues[j.queue].remove(j)
		left[j.queue]++
		if j.custom {
			s.custom--
		}
		j.picked = false
		j.stolen = b.steal
		j.urgent = b.urgency[i]
	}
	for q, n := range left {
		if n > 0 {
			s.queued[q].Add(-n)
		}
	}
	if s.gf.share > 0 {
		s.shareStart(b)
	}
	b.start = now
	if s.gf.on && p.id == GPU {
		b.eta = s.gf.bm.Predict(len(b.jobs))
	}
	p.free--
	p.running = append(p.running, b)
	s.inflight++
	s.running.Add(1)
	p.work <- b
}

func (s *Scheduler) finished(b *batch) {
	p := b.p
	p.free++
	s.inflight--
	s.running.Add(-1)
	i := slices.Index(p.running, b)
	if i < 0 {
		panic("BUG: scheduler: finished batch not running")
	}
	p.running = slices.Delete(p.running, i, i+1)
	if s.gf.on {
		if p.id == GPU {
			s.gpuFinished(b)
		} else {
			s.gf.cpuWork -= b.work
			if s.gf.cpuCap >= 0 {
				s.gf.host.cpuDone(b.wall)
			}
		}
	}
}

// failQueued abandons every queued job (Shutdown's context expired).
func (s *Scheduler) failQueued() {
	for i := range s.queues {
		for j := s.queues[i].head; j != nil; j = s.queues[i].head {
			s.queues[i].remove(j)
			s.queued[i].Add(-1)
			if j.custom {
				s.custom--
			}
			s.fail(j)
		}
	}
}

func (s *Scheduler) fail(j *job) {
	r := j.result()
	*r = Result{
		Response: engine.Response{Err: fmt.Errorf("%w: query %q abandoned at shutdown", ErrClosed, j.q.ID)},
		Query:    j.q, Features: j.f, Predicted: j.cost, Arrival: j.arrival, Submitted: j.submitted,
		Deadline: j.deadline, Proc: NoProc, Queue: j.queue, Tag: j.tag,
	}
	s.completed.Add(1)
	j.done(r)
	j.release()
}

func (s *Scheduler) worker(p *proc, slot int) {
	defer s.wg.Done()
	if p.id == CPU && s.cfg.CPUNice > 0 {
		// New checked that the priority can be lowered; should it fail
		// here all the same, the slot runs at the normal priority.
		_ = lowerThreadPriority(s.cfg.CPUNice)
	}
	buf := slotBuf{slot: slot}
	assist := s.assist(p)
	for b := range p.work {
		if assist != nil {
			assist()
		}
		s.run(p, b, &buf)
	}
}

// assist is Config.Assist for p's slots: for a CPU beside a GPU, nil
// otherwise.
func (s *Scheduler) assist(p *proc) func() bool {
	if p.id != CPU || s.procs[GPU] == nil {
		return nil
	}
	return s.cfg.Assist
}

// slotBuf is a slot's reusable query and response arrays for its batches
// of one, which are delivered before the slot takes its next batch (a
// batch of several is delivered on a goroutine of its own, and gets its
// own arrays).
type slotBuf struct {
	qs  [1]engine.Query
	out [1]engine.Response
	n   int // answers the slot has had to learn from (Processor.LearnEvery)
	// slot is the slot's index among its processor's (prepGate parks the
	// CPU's first ones).
	slot int
}

// learn refits p's model on one query's time, or on one in
// Processor.LearnEvery of the slot's answers; without waiting for a model
// another slot is updating (TryObserve).
func (buf *slotBuf) learn(p *proc, f Features, t time.Duration) {
	buf.n++
	if every := p.spec.LearnEvery; every > 1 && buf.n%every != 0 {
		return
	}
	p.model.TryObserve(f, t)
}

// run executes one batch and delivers its results. The slot is free again
// as soon as the backend returns: the bookkeeping of a batch of several
// queries (one cost-model update and one done call per query: about a
// microsecond a query, a millisecond for a GPU batch of a thousand) runs
// on a goroutine of its own, so that the slot's goroutine starts its next
// batch at once instead of keeping a one-slot GPU idle through it; a
// batch of one (a CPU core) is delivered in place, where a goroutine
// would cost more than it saves.
func (s *Scheduler) run(p *proc, b *batch, buf *slotBuf) {
	n := len(b.jobs)
	if p.spec.Sequential && n > 1 {
		s.runSequential(p, b, buf)
		return
	}
	var qs []engine.Query
	var out []engine.Response
	if n == 1 {
		// The response is the callee's once delivered: start from a zero
		// one, not from the last query's result slices.
		buf.out[0] = engine.Response{}
		qs, out = buf.qs[:], buf.out[:]
	} else {
		if b.arr == nil { // a batch not built by newBatch
			b.arr = s.arrays.get()
		}
		qs, out = b.arr.calls(n)
	}
	for i, j := range b.jobs {
		qs[i] = j.q
		if j.res != nil {
			out[i].Results = j.res.Results[:0] // the caller's capacity
		}
	}
	var err error
	var start time.Time
	switch {
	case s.gate != nil && p.id == GPU:
		err = gateBatch(s.ctx, s.gate, s.cfg.PrepareHook, func(ctx context.Context) error {
			start = s.clock.Now()
			return p.spec.Backend.SearchBatch(ctx, qs, s.cfg.Options, out)
		})
	default:
		if s.gate != nil && p.id == CPU && buf != nil {
			s.gate.wait(buf.slot) // a CPU slot's query
		}
		start = s.clock.Now()
		err = p.spec.Backend.SearchBatch(s.ctx, qs, s.cfg.Options, out)
	}
	finish := s.clock.Now()
	wall := finish.Sub(start)
	b.wall, b.failed = wall, err != nil
	if err != nil {
		for i := range out {
			if out[i].Err == nil {
				out[i].Err = fmt.Errorf("scheduler: %s batch: %w", p.name, err)
			}
		}
	}
	p.st.queries.Add(uint64(n))
	p.st.batches.Add(1)
	if b.steal {
		p.st.stolen.Add(uint64(n))
	}
	p.st.busy.Add(int64(wall))
	if n == 1 {
		s.done <- b // the slot is free
		s.deliver(p, b, out, start, finish, buf)
		return
	}
	s.wg.Add(1) // before the slot is released: Shutdown waits for the delivery
	s.done <- b
	go func() {
		defer s.wg.Done()
		s.deliver(p, b, out, start, finish, nil)
		s.arrays.put(b.arr) // nothing reads them now (the dispatcher: only len(b.jobs))
	}()
}

// runSequential runs b's queries one at a time on p (Processor.Sequential),
// timing and delivering each as it finishes; the slot is released after
// the last.
func (s *Scheduler) runSequential(p *proc, b *batch, buf *slotBuf) {
	n := len(b.jobs)
	var busy time.Duration
	yield := p.id == CPU && s.procs[GPU] != nil
	assist := s.assist(p)
	for i, j := range b.jobs {
		if yield && i > 0 {
			// Beside a GPU, run chunks of its open host work
			// (Config.Assist: beside 15-16 busy CPU slots its fanned-out
			// preparation and conversion took 3-5 times as long, issue
			// 24), then yield. The yield lets the goroutines queued on
			// this P run (the dispatcher or a delivery this slot woke),
			// but not those queued on another P: a yielding goroutine
			// goes to the global queue, and its P takes it back from
			// there before it would steal (twelfth round: beside such
			// slots the fan-out's goroutines ran one after another).
			if assist != nil {
				assist()
			}
			runtime.Gosched()
		}
		r := j.result()
		start, finish := s.runOne(p, j, buf, r)
		cost := finish.Sub(start)
		busy += cost
		if r.Err == nil {
			buf.learn(p, j.f, cost)
		}
		r.Query, r.Features, r.Predicted, r.Cost = j.q, j.f, j.cost, cost
		r.Arrival, r.Submitted, r.Start, r.Finish, r.Deadline = j.arrival, j.submitted, start, finish, j.deadline
		r.MetDeadline, r.Proc, r.ProcName, r.Queue = !finish.After(j.deadline), p.id, p.name, j.queue
		r.Stolen, r.Urgent, r.BatchSize, r.Tag = j.stolen, b.urgency[i], n, j.tag
		if r.Urgent {
			p.st.urgent.Add(1)
		}
		if !r.MetDeadline {
			s.missed.Add(1)
		}
		s.completed.Add(1)
		if i == n-1 {
			p.st.queries.Add(uint64(n))
			p.st.batches.Add(1)
			if b.steal {
				p.st.stolen.Add(uint64(n))
			}
			p.st.busy.Add(int64(busy))
			b.wall = busy
			s.done <- b // the slot is free
		}
		j.done(r)
		j.release()
	}
	if b.arr != nil {
		s.arrays.put(b.arr)
	}
}

// runOne runs j alone on p into r's Response (reusing the capacity of its
// Results) and returns the call's start and finish.
func (s *Scheduler) runOne(p *proc, j *job, buf *slotBuf, r *Result) (start, finish time.Time) {
	if s.gate != nil && p.id == CPU {
		s.gate.wait(buf.slot)
	}
	buf.qs[0] = j.q
	buf.out[0] = engine.Response{Results: r.Results[:0]}
	start = s.clock.Now()
	err := p.spec.Backend.SearchBatch(s.ctx, buf.qs[:], s.cfg.Options, buf.out[:])
	finish = s.clock.Now()
	if err != nil && buf.out[0].Err == nil {
		buf.out[0].Err = fmt.Errorf("scheduler: %s batch: %w", p.name, err)
	}
	r.Response = buf.out[0]
	buf.qs[0], buf.out[0] = engine.Query{}, engine.Response{}
	return start, finish
}

// result is where j's Result goes: Request.Result, or a new one.
func (j *job) result() *Result {
	if j.res != nil {
		return j.res
	}
	return new(Result)
}

// maxBatchLearn is the most queries of one batch a cost model learns
// from (deliver). A batch's queries share its one wall time in proportion
// to their predictions, so its thousands of samples say little more than
// a few hundred of them; each costs a Basis, a prediction, a logarithm and
// two regression updates (issue 24, hostcut: CostModel.ObserveBatch was
// 7% of the in-window CPU of a GCIDE AND run at 2M q/s on the H100 host,
// whose batches held ~3,900 queries, learned one batch in four). With
// the model's window of 4,096 samples the GPU's model then spans 16
// learned batches instead of about one.
const maxBatchLearn = 256

// batchLearnIndex is the batch position of the i-th of the m queries (m <=
// n) deliver learns from in a batch of n: evenly spaced, increasing,
// every one when m == n.
func batchLearnIndex(i, n, m int) int { return i * n / m }

// deliver refits p's model on b's measured times and calls the done
// functions of b's queries (after b's slot has been released); buf is the
// slot's for a batch of one delivered in place (nil: a batch of several,
// whose answers are learned up to maxBatchLearn of them).
func (s *Scheduler) deliver(p *proc, b *batch, out []engine.Response, start, finish time.Time, buf *slotBuf) {
	n := len(b.jobs)
	wall := finish.Sub(start)
	// A batch of several learns once in Processor.LearnEvery batches (a
	// GPU batch of a thousand queries is a thousand model updates, about
	// a millisecond of a core; issue 24).
	learn := buf != nil || p.spec.LearnEvery <= 1 || p.batchLearn.Add(1)%uint64(p.spec.LearnEvery) == 0
	share := func(j *job) time.Duration {
		switch {
		case n == 1:
			return wall
		case b.pred > 0:
			return time.Duration(float64(wall) * float64(j.cost[p.id]) / float64(b.pred))
		}
		return wall / time.Duration(n)
	}
	if learn && buf == nil {
		// One lock and one refit for the batch (CostModel.ObserveBatch), on
		// at most maxBatchLearn of its queries, evenly spaced.
		m := min(n, maxBatchLearn)
		p.model.ObserveBatch(m, func(i int) (Features, *[NumBasis]float64, time.Duration, bool) {
			k := batchLearnIndex(i, n, m)
			j := b.jobs[k]
			return j.f, nil, share(j), out[k].Err == nil // its Basis computed there
		})
	}
	var res []Result // for the jobs without a Request.Result
	var missed, urgent uint64
	for i, j := range b.jobs {
		c := share(j)
		if out[i].Err == nil && learn && buf != nil {
			buf.learn(p, j.f, c) // one-query slots run side by side
		}
		met := !finish.After(j.deadline)
		if !met {
			missed++
		}
		r := j.res
		if r == nil {
			if res == nil {
				res = make([]Result, n)
			}
			r = &res[i]
			j.res = r
		}
		// Field by field, every field: a composite literal assigned to *r
		// was built in a temporary on the stack and then copied (~400
		// bytes twice a query, a GPU batch's thousands of records; issue
		// 24, hostq), as initJob's was.
		r.Response, r.Query, r.Features, r.Predicted, r.Cost = out[i], j.q, j.f, j.cost, c
		r.Arrival, r.Submitted, r.Start, r.Finish, r.Deadline, r.MetDeadline = j.arrival, j.submitted, start, finish, j.deadline, met
		r.Proc, r.ProcName, r.Queue, r.Stolen, r.Urgent, r.BatchSize, r.Tag = p.id, p.name, j.queue, j.stolen, j.urgent, n, j.tag
		if j.urgent {
			urgent++
		}
	}
	if urgent > 0 {
		p.st.urgent.Add(urgent) // once per batch, as missed
	}
	s.missed.Add(missed)
	s.completed.Add(uint64(n))
	for _, j := range b.jobs {
		j.done(j.res)
	}
	releaseJobs(b.jobs)
}
