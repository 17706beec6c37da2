package scheduler

// A discrete-event simulation of the scheduler in virtual time: the real
// dispatcher (newJob, enqueue, dispatch, finished: the placement, batching
// and stealing code New runs) driven by a simulated clock, with simulated
// processors whose batch times follow a cost shape instead of running
// queries. Nothing here reads the wall clock, so rates and delays are
// exact functions of the parameters and the seed: the tests can compare
// sustained rates without timing noise (no assertion on real time).
//
// The cost shape (issue 24): a CPU slot runs its batch's queries one after
// the other; a GPU batch costs a fixed part plus a per-query part on the
// device plus a per-query host part (query preparation and result
// conversion on the host's cores). The host-contention model: the machine
// has Cores cores; a GPU batch's host side wants HostCores of them while
// it runs; when the busy CPU slots plus that demand exceed Cores, the
// CPU batches and the GPU's host part starting then are slowed by
// demand/Cores (evaluated at each batch's start: an approximation of fair
// time-sharing). The dispatcher-overhead model: the dispatcher is one
// goroutine that spends DispArrival per arriving query and DispBatch per
// batch it starts, serially; a batch starts only when the dispatcher has
// got to it.
//
// How the simulated workload differs from real data: queries are the
// synthetic testQueries over testIndex (1-4 terms, lists of 3 to 1,500
// postings), and true costs are power laws of the shortest and total list
// lengths times a log-normal noise (the cost models' error), not measured
// times.

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// simCost is a simulated processor's true cost shape.
type simCost struct {
	Query func(f Features) time.Duration // device (or CPU) time of one query
	Fixed time.Duration                  // per batch (GPU launch, transfers)
	Host  func(f Features) time.Duration // per query host-CPU time of a GPU batch
	Noise float64                        // σ of the log-normal factor on Query
}

// simMachine is the simulated host.
type simMachine struct {
	Cores     int     // 0: no contention model
	HostCores float64 // cores a running GPU batch's host side wants
	// Dispatcher costs (0: free).
	DispArrival, DispBatch time.Duration
	DispVisit              time.Duration // per queued job a dispatcher scan looks at
}

// simSetup is a simulated experiment: processors, their true costs and
// the scheduler's view of them (models, slots, batching).
type simSetup struct {
	x              *index.Index
	queries        []engine.Query
	cost           [2]simCost
	machine        simMachine
	procs          [2]Processor // Backend is ignored (nopBackend)
	hybridCPUSlots int          // CPU slots with both processors (0: procs[CPU].Slots)
	deadline       time.Duration
	ratio          float64
	seed           uint64
	// minDuration of arrivals per run (default 10 deadlines).
	minDuration time.Duration
	// GPU-first parameters of the hybrid setups (see Config): placement
	// of cpu+gpu and cpu+gpu-nosteal, target fraction, cheap ratio, and
	// onlineCores: cap the CPU slots at machine.Cores less the measured
	// host share (the simulated process CPU time: a GPU batch's host side
	// uses HostCores for its wall time, a CPU batch its cost).
	placement   Placement
	target      float64
	cheap       float64
	spare       float64 // Config.SpareFixed
	share       float64 // Config.CPUShare (GPU-first setups)
	onlineCores bool
	noHeld      bool      // the dispatcher rebuilds held batches (Scheduler.noHeld)
	results     []*Result // of the last run
	visits      float64   // of the last run: dispatcher scan visits per query
	// Of the last run: the GPU's batch model and the CPU cap at the end.
	batchModel *BatchModel
	cpuCap     int
	hostDemand float64
	hostN      int
	gpuBusy    time.Duration // GPU batch time summed
	cpuWork    time.Duration // the CPU share's work account at the end (0 once all ran)
	dispWait   time.Duration // GPU batch starts delayed by the dispatcher
}

type simClock struct{ t time.Time }

func (c *simClock) Now() time.Time { return c.t }

type simEvent struct {
	at time.Time
	b  *batch
	rs []*Result
}

type simEvents []simEvent

func (h simEvents) Len() int           { return len(h) }
func (h simEvents) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h simEvents) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *simEvents) Push(x any)        { *h = append(*h, x.(simEvent)) }
func (h *simEvents) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// run simulates setup at rate (queries/s) and summarizes it like a real
// replay (stopping once more than 1% missed, as the rate search does).
func (e *simSetup) run(t testing.TB, setup Setup, rate float64, seed uint64) Run {
	t.Helper()
	clk := &simClock{t: time.Date(2009, 4, 20, 0, 0, 0, 0, time.UTC)}
	var cpuUsed time.Duration // simulated process CPU time
	e.gpuBusy, e.dispWait = 0, 0
	cfg := Config{Deadline: e.deadline, Ratio: e.ratio, Clock: clk, NoSteal: setup == ParallelNoSteal,
		TargetFraction: e.target, CheapRatio: e.cheap, SpareFixed: e.spare}
	if setup == ParallelGPUFirst {
		cfg.CPUShare = e.share
	}
	switch setup {
	case Parallel, ParallelNoSteal:
		cfg.Placement = e.placement
	case ParallelGPUFirst:
		cfg.Placement = PlaceGPUFirst
	}
	if e.onlineCores && cfg.Placement == PlaceGPUFirst {
		cfg.Cores = e.machine.Cores
		cfg.CPUTime = func() (time.Duration, bool) { return cpuUsed, true }
	}
	cpu, gpu := e.procs[CPU], e.procs[GPU]
	cpu.Backend, gpu.Backend = nopBackend{}, nopBackend{}
	cpu.Model, gpu.Model = cpu.Model.Clone(), gpu.Model.Clone()
	if gpu.BatchModel != nil {
		gpu.BatchModel = gpu.BatchModel.Clone()
	}
	if setup != GPUOnly {
		cfg.CPU = &cpu
		if setup != CPUOnly && e.hybridCPUSlots > 0 {
			cpu.Slots = e.hybridCPUSlots
		}
	}
	if setup != CPUOnly {
		cfg.GPU = &gpu
	}
	s, err := newScheduler(e.x, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.noHeld = e.noHeld
	minDur := e.minDuration
	if minDur == 0 {
		minDur = 10 * s.cfg.Deadline
	}
	n := max(len(e.queries), int(math.Ceil(rate*minDur.Seconds())))
	arr := Arrivals(n, rate, seed)
	noise := rand.New(rand.NewPCG(seed, 77))
	start := clk.t
	res := make([]*Result, n)
	var events simEvents
	var dispAt, wakeAt time.Time
	busyCPU := func() int {
		if p := s.procs[CPU]; p != nil {
			return p.slots - p.free
		}
		return 0
	}
	gpuBusy := func() bool { p := s.procs[GPU]; return p != nil && p.free < p.slots }
	// launch takes the batches dispatch has started off the work channels
	// and schedules their finish.
	launch := func() {
		for _, p := range s.procs {
			if p == nil {
				continue
			}
			for len(p.work) > 0 {
				b := <-p.work
				at := clk.t
				if e.machine.DispBatch > 0 {
					dispAt = later(dispAt, clk.t).Add(e.machine.DispBatch)
					at = dispAt
				}
				c := &e.cost[p.id]
				factor := 1.0
				if e.machine.Cores > 0 {
					demand := float64(busyCPU())
					if gpuBusy() {
						demand += e.machine.HostCores
					}
					factor = max(1, demand/float64(e.machine.Cores))
				}
				var dev, host time.Duration
				costs := make([]time.Duration, len(b.jobs))
				for i, j := range b.jobs {
					q := c.Query(j.f)
					if c.Noise > 0 {
						q = time.Duration(float64(q) * math.Exp(c.Noise*noise.NormFloat64()-c.Noise*c.Noise/2))
					}
					var h time.Duration
					if c.Host != nil {
						h = c.Host(j.f)
					}
					costs[i] = q + h
					dev += q
					host += h
				}
				var wall time.Duration
				if p.id == CPU {
					wall = time.Duration(float64(dev+host) * factor)
					cpuUsed += dev + host
				} else {
					wall = c.Fixed + dev + time.Duration(float64(host)*factor)
					cpuUsed += time.Duration(e.machine.HostCores * float64(wall))
				}
				b.wall = wall
				if p.id == GPU {
					e.gpuBusy += wall
					e.dispWait += at.Sub(clk.t)
				}
				fin := at.Add(wall)
				rs := make([]*Result, len(b.jobs))
				var total time.Duration
				for _, x := range costs {
					total += x
				}
				qfin := at
				for i, j := range b.jobs {
					share := wall
					if len(b.jobs) > 1 && total > 0 {
						share = time.Duration(float64(wall) * float64(costs[i]) / float64(total))
					}
					// A batch ends (its results arrive) at fin; a
					// Sequential processor's queries each at their own end.
					qfin = qfin.Add(share)
					qf := fin
					if p.spec.Sequential {
						qf = qfin
					}
					p.model.Observe(j.f, share)
					rs[i] = &Result{Query: j.q, Features: j.f, Predicted: j.cost, Cost: share,
						Arrival: j.arrival, Submitted: j.submitted, Start: at, Finish: qf, Deadline: j.deadline,
						MetDeadline: !qf.After(j.deadline), Proc: p.id, ProcName: p.id.String(), Queue: j.queue,
						Stolen: j.stolen, Urgent: j.urgent, BatchSize: len(b.jobs)}
				}
				heap.Push(&events, simEvent{at: fin, b: b, rs: rs})
			}
		}
	}
	missed, next := 0, 0
	for next < n || events.Len() > 0 || s.queues[0].n+s.queues[1].n+s.queues[2].n > 0 {
		// The next event: an arrival, a batch's finish, or the
		// dispatcher's own wake-up (poll, batch time limit).
		var at time.Time
		kind := 0 // 1 arrival, 2 finish, 3 wake
		if next < n {
			at, kind = start.Add(arr[next]), 1
		}
		if events.Len() > 0 && (kind == 0 || events[0].at.Before(at)) {
			at, kind = events[0].at, 2
		}
		if !wakeAt.IsZero() && (kind == 0 || wakeAt.Before(at)) {
			at, kind = wakeAt, 3
		}
		if kind == 0 {
			t.Fatalf("BUG: simulation stuck with %d queued and nothing to wake it", s.queues[0].n+s.queues[1].n+s.queues[2].n)
		}
		clk.t = later(at, dispAt)
		switch kind {
		case 1:
			i := next
			next++
			j := s.newJob(Request{Query: e.queries[i%len(e.queries)], Arrival: at}, func(*Result) {})
			j.seq = uint64(i + 1)
			idx := i
			j.done = func(r *Result) { res[idx] = r }
			s.enqueue(j, clk.t)
			if e.machine.DispArrival > 0 {
				dispAt = clk.t.Add(e.machine.DispArrival)
				clk.t = dispAt
			}
		case 2:
			ev := heap.Pop(&events).(simEvent)
			s.finished(ev.b)
			for k, j := range ev.b.jobs {
				j.done(ev.rs[k])
				if !ev.rs[k].MetDeadline {
					missed++
				}
			}
		case 3:
			wakeAt = time.Time{}
		}
		if missed > n/100 {
			break // failed: the rest is abandoned, as Replay does
		}
		v0 := s.visits
		wakeAt = s.dispatch(clk.t)
		if d := e.machine.DispVisit * time.Duration(s.visits-v0); d > 0 {
			dispAt = later(dispAt, clk.t).Add(d)
			clk.t = dispAt
		}
		launch()
	}
	out := make([]*Result, 0, n)
	for i := range next {
		if res[i] == nil {
			res[i] = &Result{Proc: NoProc}
		}
		out = append(out, res[i])
	}
	for i := next; i < n; i++ {
		out = append(out, nil)
	}
	run := Summarize(setup, rate, out)
	e.results = out
	e.visits = float64(s.visits) / float64(max(next, 1))
	e.batchModel, e.cpuCap = s.gf.bm, s.gf.cpuCap
	e.hostDemand, e.hostN = s.gf.host.demand(), s.gf.host.fit.n
	e.cpuWork = s.gf.cpuWork
	return run
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// search is the highest rate the setup sustains (bisection to 3%).
func (e *simSetup) search(t testing.TB, setup Setup, start float64) SearchResult {
	t.Helper()
	sr, err := bracket(setup, start, 2, RateSearch{Precision: 0.03, MaxRuns: 16, Max: 1e7}, func(r float64) (Run, error) {
		return e.run(t, setup, r, e.seed), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sr
}
