package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/cputime"
	"github.com/qpengine/qp/report"
	"github.com/qpengine/qp/topk"
)

// Arrivals returns the arrival times, as offsets from the start of a run,
// of n queries arriving as a Poisson process of rate queries per second
// (Ding et al. WWW'09 §9: "queries arrive in the system according to a
// Poisson process"): independent exponential gaps of mean 1/rate. The
// sequence depends only on seed, and the sequences of one seed at
// different rates are the same up to scale (common random numbers, so that
// runs at neighbouring rates differ by the rate, not by luck).
func Arrivals(n int, rate float64, seed uint64) []time.Duration {
	if !(rate > 0) || math.IsInf(rate, 0) {
		panic(fmt.Sprintf("BUG: scheduler: arrival rate %v", rate))
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := make([]time.Duration, n)
	var t float64 // seconds
	for i := range out {
		t += rng.ExpFloat64() / rate
		out[i] = time.Duration(t * 1e9)
	}
	return out
}

// Replay submits qs[i] to s at start+arrivals[i], start being now, in real
// time (sleeping between arrivals), each with its scheduled arrival as
// Request.Arrival so that lateness in submitting counts as delay. It then
// shuts s down and returns the results in qs order. With maxMiss >= 0 it
// stops once more than maxMiss results have missed their deadline: it
// submits nothing more and abandons the queries still queued (a failed
// run; the results of queries never submitted are nil). When ctx ends, it
// stops the same way and returns ctx's error. Arrivals follow the wall
// clock, so s should run on RealClock.
func Replay(ctx context.Context, s *Scheduler, qs []engine.Query, arrivals []time.Duration, maxMiss int) ([]*Result, error) {
	if len(arrivals) != len(qs) {
		panic(fmt.Sprintf("BUG: scheduler: %d arrivals for %d queries", len(arrivals), len(qs)))
	}
	return replay(ctx, s, qs, nil, arrivals, maxMiss, nil, 0)
}

// replayState is what a replay's done function needs: one function for
// every query (Request.Tag is the query's position), not a closure per
// query.
type replayState struct {
	res      []*Result
	maxMiss  int
	misses   atomic.Int64
	missed   atomic.Bool
	stop     chan struct{}
	stopOnce sync.Once
}

func (st *replayState) done(r *Result) {
	st.res[r.Tag] = r
	if st.maxMiss >= 0 && r.Proc != NoProc && !r.MetDeadline && st.misses.Add(1) > int64(st.maxMiss) {
		st.missed.Store(true)
		st.stopOnce.Do(func() { close(st.stop) })
	}
}

// replaySlab is a replay's result records and the array of pointers to
// them that it returns, kept from run to run by Experiment.Run. Its memory
// is touched (and each record's Results given its query's top-k capacity)
// when it is reserved, before a run's clock and CPU counters start: a
// fresh slab of millions of ~400-byte records is otherwise first written
// by the scheduler's delivery, one page fault per ten queries on the GPU
// slot's delivery path (issue 24: 8.4 of the 27.3 s of CPU of a 3M q/s
// GPU-only run on the H100 host were that one assignment), a cost of the
// harness counted as the scheduler's CPU time per query.
type replaySlab struct {
	res  []Result
	ptrs []*Result
}

// reserve makes rs hold at least n records, growing it to want (>= n)
// records when it holds fewer than n. New records are written once (page
// faults now, not inside a run) and get Results slices of capacity K of
// the query they will hold (qs cyclically, as replay assigns them),
// carved from one touched array; a reused record keeps its capacity.
func (rs *replaySlab) reserve(n, want int, qs []engine.Query) {
	if len(rs.res) >= n {
		return
	}
	want = max(want, n)
	res := make([]Result, want)
	clearChunked(res) // touch: a fresh span from the OS is not written by make
	copyChunked(res, rs.res)
	total := 0
	for i := len(rs.res); i < want && len(qs) > 0; i++ {
		if k := qs[i%len(qs)].K; k > 0 && k <= topk.MaxK {
			total += k
		}
	}
	hits := make([]topk.Result, total)
	clearChunked(hits)
	for i := len(rs.res); i < want && len(qs) > 0; i++ {
		if k := qs[i%len(qs)].K; k > 0 && k <= topk.MaxK {
			res[i].Results, hits = hits[:0:k], hits[k:]
		}
	}
	rs.res = res
	rs.ptrs = make([]*Result, want)
	clearChunked(rs.ptrs)
}

// chunkBytes is the most memory clearChunked and copyChunked write
// without a preemption point.
const chunkBytes = 1 << 20

// clearChunked is clear(s) in pieces of at most chunkBytes with a
// runtime.Gosched between them. One clear (or copy) is a single call into
// the runtime that cannot be preempted: on a slab of millions of records
// (gigabytes, page faults included) the garbage collector's mark phase,
// which the slab's allocation starts, spun in suspendG for the whole
// clear to stop this goroutine (issue 24: 4.2 of the 23.4 s of CPU of a
// 2M q/s GPU-only GCIDE AND run on the H100 host).
func clearChunked[T any](s []T) {
	step := max(1, chunkBytes/max(1, int(unsafe.Sizeof(*new(T)))))
	for lo := 0; lo < len(s); lo += step {
		if lo > 0 {
			runtime.Gosched()
		}
		clear(s[lo:min(lo+step, len(s))])
	}
}

// copyChunked is copy(dst, src) in pieces as clearChunked clears.
func copyChunked[T any](dst, src []T) {
	step := max(1, chunkBytes/max(1, int(unsafe.Sizeof(*new(T)))))
	n := min(len(dst), len(src))
	for lo := 0; lo < n; lo += step {
		if lo > 0 {
			runtime.Gosched()
		}
		hi := min(lo+step, n)
		copy(dst[lo:hi], src[lo:hi])
	}
}

// maxBurst caps the arrivals a replay submits in one SubmitBatch call.
// The jobs come from the scheduler's chunks whatever the burst
// (chunkCarver), so the cap only bounds the request array and how long
// the submitter goes without checking for a stop: at 4M arrivals/s a
// wake-up every DefaultSubmitQuantum (50 µs) brings about 200.
const maxBurst = 512

// DefaultSubmitQuantum is a submit quantum to try (qp bench sched
// --submit-quantum 50us; Experiment.SubmitQuantum). It is not the
// default: on the H100 host (issue 24's thirteenth round) a 50 µs quantum
// cut the process CPU per GPU AND query by 0-13% but the submitter's
// sleeps overran by 1.3-14 ms on average (timers on a loaded host), which
// the queries' delays then carry.
const DefaultSubmitQuantum = 50 * time.Microsecond

// replay is Replay for len(arrivals) queries, the i-th being qs[i %
// len(qs)] (the log replayed cyclically) with features feats[i % len(qs)]
// (nil: Submit computes them), whose results go to rs's i-th record (nil:
// a new replaySlab; the replay's results point into it, and the capacity
// of their Results slices is reused, so a slab reused from run to run
// spares the per-query allocations). rs is reserved for n arrivals
// (replaySlab.reserve) before the replay's clock starts; the results
// returned share rs's pointer array, valid until rs's next replay. Every
// arrival whose time has passed when the submitter wakes is submitted in one SubmitBatch call (at most maxBurst):
// at a million arrivals a second the timer's wake-up latency is longer
// than the gaps, and one hand-off per query was the generator's limit
// (issue 24).
//
// quantum > 0 is the shortest time between two wake-ups of the submitter
// that find nothing overdue: after a burst it sleeps until the next
// arrival or until quantum after that wake-up, whichever is later, so
// that no query is submitted before its arrival and none more than
// quantum after it (plus the timer's own latency). Without it, a 16-core
// host whose idle Ps fire timers within microseconds woke the submitter
// for every 6 arrivals at 2M q/s (hostcpu4's "bursts of 6.2"), each
// wake-up a park and unpark of the submitter and of the dispatcher it
// hands the burst to (issue 24, hostq). 0: a wake-up per arrival due.
func replay(ctx context.Context, s *Scheduler, qs []engine.Query, feats []Features, arrivals []time.Duration, maxMiss int, rs *replaySlab, quantum time.Duration) ([]*Result, error) {
	n := len(arrivals)
	if rs == nil {
		rs = new(replaySlab)
	}
	rs.reserve(n, n, qs)
	if len(qs) == 0 || (feats != nil && len(feats) != len(qs)) {
		panic(fmt.Sprintf("BUG: scheduler: %d arrivals, %d queries, %d features", n, len(qs), len(feats)))
	}
	slab := rs.res[:n]
	st := &replayState{res: rs.ptrs[:n], maxMiss: maxMiss, stop: make(chan struct{})}
	clearChunked(st.res) // nil: not submitted (a stopped run)
	done := st.done
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	reqs := make([]Request, 0, maxBurst)
	start := time.Now()
	var err error
	var wakeAt time.Duration // the quantum's earliest next wake-up (since start)
submit:
	for i := 0; i < n; {
		if d := time.Until(start.Add(max(arrivals[i], wakeAt))); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-st.stop:
				break submit
			case <-ctx.Done():
				err = ctx.Err()
				break submit
			}
		} else {
			select {
			case <-st.stop:
				break submit
			case <-ctx.Done():
				err = ctx.Err()
				break submit
			default:
			}
		}
		due := time.Since(start)
		reqs = reqs[:0]
		for ; i < n && len(reqs) < maxBurst && (len(reqs) == 0 || arrivals[i] <= due); i++ {
			// Field by field in place (reqs has maxBurst's capacity): a
			// composite literal appended was built aside and copied, ~140
			// bytes twice an arrival (issue 24, hostcut: 0.12 of the
			// H100 profile's 1.55 s in the replay's loop).
			reqs = reqs[:len(reqs)+1]
			r := &reqs[len(reqs)-1]
			r.Query, r.Arrival, r.Deadline, r.Tag, r.Result, r.Features = qs[i%len(qs)], start.Add(arrivals[i]), 0, i, &slab[i], nil
			if feats != nil {
				r.Features = &feats[i%len(qs)]
			}
		}
		wakeAt = 0
		if quantum > 0 && i < n && arrivals[i] > due { // nothing left overdue
			wakeAt = due + quantum
		}
		if e := s.SubmitBatch(reqs, done); e != nil { // closed by someone else
			err = e
			break
		}
	}
	clear(reqs)
	// Drain, unless the run has failed or ctx ended: then abandon the queue.
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err != nil || st.missed.Load() {
		cancel()
	} else {
		go func() {
			select {
			case <-st.stop:
			case <-ctx.Done():
			case <-sctx.Done():
			}
			cancel()
		}()
	}
	s.Shutdown(sctx)
	if err == nil {
		err = ctx.Err()
	}
	return st.res, err
}

// Setup is one of the four configurations of Ding et al.'s Figure 7.
type Setup int

const (
	CPUOnly         Setup = iota // every query on the CPU processor
	GPUOnly                      // every query on the GPU processor
	BestSerial                   // each query on its predicted-faster processor, one query at a time
	Parallel                     // CPU and GPU in parallel under the Scheduler
	ParallelNoSteal              // Parallel without work stealing (Config.NoSteal)
	// ParallelGPUFirst is Parallel with the GPU-first placement
	// (PlaceGPUFirst) whatever Experiment.Placement says, so that one
	// experiment compares both placements.
	ParallelGPUFirst
)

// AllSetups lists the setups: Figure 7's four in its order, then
// ParallelNoSteal and ParallelGPUFirst.
var AllSetups = []Setup{CPUOnly, GPUOnly, BestSerial, Parallel, ParallelNoSteal, ParallelGPUFirst}

// Hybrid reports whether s runs the CPU and the GPU side by side
// (cpu+gpu, cpu+gpu-nosteal, cpu+gpu-first).
func (s Setup) Hybrid() bool { return s == Parallel || s == ParallelNoSteal || s == ParallelGPUFirst }

func (s Setup) String() string {
	switch s {
	case CPUOnly:
		return "cpu-only"
	case GPUOnly:
		return "gpu-only"
	case BestSerial:
		return "best-serial"
	case Parallel:
		return "cpu+gpu"
	case ParallelNoSteal:
		return "cpu+gpu-nosteal"
	case ParallelGPUFirst:
		return "cpu+gpu-first"
	}
	return fmt.Sprintf("Setup(%d)", int(s))
}

// ParseSetup parses a Setup's String ("cpu", "gpu", "serial" and
// "parallel" too).
func ParseSetup(s string) (Setup, error) {
	switch strings.ToLower(s) {
	case "cpu-only", "cpu":
		return CPUOnly, nil
	case "gpu-only", "gpu":
		return GPUOnly, nil
	case "best-serial", "serial", "serialized":
		return BestSerial, nil
	case "cpu+gpu", "parallel":
		return Parallel, nil
	case "cpu+gpu-nosteal", "nosteal":
		return ParallelNoSteal, nil
	case "cpu+gpu-first", "gpu-first":
		return ParallelGPUFirst, nil
	}
	return 0, fmt.Errorf("scheduler: unknown setup %q (cpu-only, gpu-only, best-serial, cpu+gpu, cpu+gpu-nosteal, cpu+gpu-first)", s)
}

// ProcRun summarizes one processor's share of a run.
type ProcRun struct {
	Name                             string
	Queries, Batches, Stolen, Urgent int
	// ModelError is the mean relative error of the cost predictions made
	// on arrival for the queries that ran here (against their attributed
	// Cost); -1 when none ran.
	ModelError float64
	// Busy is the sum of its batches' wall times (SearchBatch calls); for
	// the GPU (one slot), Gap is the mean time from a batch's return to
	// the next batch's start (the dispatcher's turnaround, plus idle time
	// when its queue was empty) and GapMax the longest; zero for the CPU.
	Busy, Gap, GapMax time.Duration
}

// Run summarizes one replay.
type Run struct {
	Setup     Setup
	Rate      float64 // arrival rate, queries/s
	Submitted int
	Answered  int // ran (with or without a per-query error)
	Errors    int // answered with Response.Err (e.g. empty queries)
	Abandoned int // submitted, not run (the run was stopped)
	Missed    int // answered after their deadline
	Stopped   bool
	// Deadline is the queries' deadline (after arrival); Growing says
	// whether the queue grew during the run: the mean delay of the last
	// fifth of the arrivals exceeds twice that of the second fifth and a
	// quarter of the deadline (a rate beyond capacity whose backlog has
	// not yet reached the deadline when the arrivals end).
	Deadline time.Duration
	Growing  bool
	// Delay (finish minus arrival) of the answered queries.
	Mean, P50, P99, Max time.Duration
	// Late is the mean time by which queries were submitted after their
	// scheduled arrival (timer wake-up latency, about a millisecond with
	// Go's timers on Linux); it is part of every delay.
	Late    time.Duration
	Elapsed time.Duration // first arrival to last finish
	// CPUTime is the process's CPU time (user + system, every thread)
	// over the replay: the queries' own work and the replay machinery's
	// (arrivals, dispatch, hand-offs, bookkeeping; issue 24); 0 where
	// unknown. CPUPerQuery divides it by the answered queries.
	CPUTime time.Duration
	// GCTime is the Go collector's share of CPUTime (runtime/metrics
	// /cpu/classes/gc/total: mark workers, assists, pauses; an estimate
	// the runtime keeps), and GCs the collections completed over the
	// replay (issue 24: what of the host CPU per query is the collector,
	// which scans the replay's result slab in every cycle).
	GCTime time.Duration
	GCs    uint64
	// Submissions is the number of SubmitBatch calls of the replay: the
	// bursts of arrivals due at each wake-up of its submitter (a job
	// chunk's 64 jobs serve several; issue 24, hostcpu4).
	Submissions int
	Procs       [2]ProcRun
	// GPU-first runs (zero otherwise): the GPU's BatchModel at the end of
	// the run (fixed part, time per query, the mean relative error of its
	// batch-time predictions, batches observed) and the CPU slot cap
	// (-1: none; see Config.Cores) with the GPU side's host cores it came
	// from.
	GPUFirst             bool
	BatchFixed, BatchPer time.Duration
	BatchError           float64
	BatchN               int
	CPUCap               int
	HostDemand           float64
}

// gcReading is the collector's cumulative CPU time and completed cycles.
type gcReading struct {
	cpu    time.Duration
	cycles uint64
}

// gcMetrics are the runtime/metrics names readGC reads.
var gcMetrics = [2]string{"/cpu/classes/gc/total:cpu-seconds", "/gc/cycles/total:gc-cycles"}

// readGC reads the collector's counters (zero where the runtime does not
// have them).
func readGC() gcReading {
	var ss [2]metrics.Sample
	for i := range ss {
		ss[i].Name = gcMetrics[i]
	}
	metrics.Read(ss[:])
	var g gcReading
	if ss[0].Value.Kind() == metrics.KindFloat64 {
		g.cpu = time.Duration(ss[0].Value.Float64() * 1e9)
	}
	if ss[1].Value.Kind() == metrics.KindUint64 {
		g.cycles = ss[1].Value.Uint64()
	}
	return g
}

// GCPerQuery is GCTime per answered query (0: none answered).
func (r *Run) GCPerQuery() time.Duration {
	if r.Answered == 0 {
		return 0
	}
	return r.GCTime / time.Duration(r.Answered)
}

// CPUPerQuery is the process's CPU time per answered query over the
// replay (0: unknown or none answered).
func (r *Run) CPUPerQuery() time.Duration {
	if r.Answered == 0 {
		return 0
	}
	return r.CPUTime / time.Duration(r.Answered)
}

// Sustained reports whether the run kept up with its arrivals: every
// submitted query was answered, the 99th percentile of the delays is within
// the deadline, and the queue did not grow (Growing). Ding et al. fail a
// run on a single missed deadline, which makes the outcome hinge on one
// outlier (a garbage collection, a page fault) and the highest sustained
// rate noisy; the p99 criterion is the usual service-level objective and
// the growth test catches a rate just beyond capacity in a run too short
// for its backlog to reach the deadline.
func (r *Run) Sustained() bool {
	return !r.Stopped && r.Abandoned == 0 && r.Answered == r.Submitted && r.Answered > 0 &&
		r.P99 <= r.Deadline && !r.Growing
}

// Summarize computes a Run from Replay's results (nil entries: never
// submitted).
func Summarize(setup Setup, rate float64, results []*Result) Run {
	run := Run{Setup: setup, Rate: rate}
	delays := make([]time.Duration, 0, len(results))
	var late time.Duration
	var first, last time.Time
	var errSum [2]float64
	var errN [2]int
	byArrival := make([]*Result, 0, len(results))
	batches := [2]map[time.Time]time.Time{{}, {}} // distinct batches of several queries per processor: start -> finish
	gpuBatches := map[time.Time]time.Time{}       // all the GPU's batches: start -> finish
	for _, r := range results {
		if r == nil {
			continue
		}
		run.Submitted++
		if r.Proc == NoProc {
			run.Abandoned++
			continue
		}
		run.Answered++
		if r.Err != nil {
			run.Errors++
		}
		if !r.MetDeadline {
			run.Missed++
		}
		delays = append(delays, r.Delay())
		byArrival = append(byArrival, r)
		if run.Deadline == 0 {
			run.Deadline = r.Deadline.Sub(r.Arrival)
		}
		late += r.Submitted.Sub(r.Arrival)
		if first.IsZero() || r.Arrival.Before(first) {
			first = r.Arrival
		}
		if r.Finish.After(last) {
			last = r.Finish
		}
		p := &run.Procs[r.Proc]
		p.Name = r.ProcName
		p.Queries++
		if r.Stolen {
			p.Stolen++
		}
		if r.Urgent {
			p.Urgent++
		}
		if r.BatchSize > 1 {
			batches[r.Proc][r.Start] = r.Finish
		} else {
			p.Batches++
			p.Busy += r.Finish.Sub(r.Start)
		}
		if r.Proc == GPU {
			gpuBatches[r.Start] = r.Finish
		}
		if r.Err == nil {
			errSum[r.Proc] += RelError(r.Predicted[r.Proc], r.Cost)
			errN[r.Proc]++
		}
	}
	batchGaps(&run.Procs[GPU], gpuBatches)
	for i := range run.Procs {
		// Batches of several queries are told apart by their start stamps
		// (two slots starting at the same instant would merge: a rarity
		// that only affects this count).
		run.Procs[i].Batches += len(batches[i])
		for st, fin := range batches[i] {
			run.Procs[i].Busy += fin.Sub(st)
		}
		run.Procs[i].ModelError = -1
		if errN[i] > 0 {
			run.Procs[i].ModelError = errSum[i] / float64(errN[i])
		}
	}
	run.Stopped = run.Abandoned > 0 || run.Submitted < len(results)
	if len(delays) > 0 {
		slices.Sort(delays)
		var sum time.Duration
		for _, d := range delays {
			sum += d
		}
		run.Mean = sum / time.Duration(len(delays))
		run.Late = late / time.Duration(len(delays))
		run.P50 = report.Percentile(delays, 0.50)
		run.P99 = report.Percentile(delays, 0.99)
		run.Max = delays[len(delays)-1]
		run.Elapsed = last.Sub(first)
		run.Growing = growing(byArrival, run.Deadline)
	}
	return run
}

// batchGaps sets p's Gap and GapMax from its batches (start -> finish):
// the gaps between consecutive batches in start order.
func batchGaps(p *ProcRun, bs map[time.Time]time.Time) {
	starts := make([]time.Time, 0, len(bs))
	for st := range bs {
		starts = append(starts, st)
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	var sum time.Duration
	for i := 1; i < len(starts); i++ {
		g := max(starts[i].Sub(bs[starts[i-1]]), 0)
		sum += g
		p.GapMax = max(p.GapMax, g)
	}
	if len(starts) > 1 {
		p.Gap = sum / time.Duration(len(starts)-1)
	}
}

// growing applies Run.Growing's test to answered results.
func growing(rs []*Result, deadline time.Duration) bool {
	n := len(rs)
	if n < 50 {
		return false
	}
	slices.SortFunc(rs, func(a, b *Result) int { return a.Arrival.Compare(b.Arrival) })
	mean := func(lo, hi int) time.Duration {
		var s time.Duration
		for _, r := range rs[lo:hi] {
			s += r.Delay()
		}
		return s / time.Duration(hi-lo)
	}
	early, late := mean(n/5, 2*n/5), mean(4*n/5, n)
	return late > 2*early && late > deadline/4
}

// RateSearch configures the search for the highest sustained arrival rate.
type RateSearch struct {
	Off bool // do not search
	// Start is the first rate tried (queries/s); 0: half the capacity the
	// trained cost models predict for the setup.
	Start float64
	// Max caps the rates tried (0: no cap; the search grows the rate until
	// a run fails, which a run of maxRunQueries queries bounds in time).
	// Before issue 24's third round the default cap was 1e6 q/s, which
	// GPU-alone AND on GCIDE reached without failing.
	Max float64
	// The search doubles the rate until a run fails (halves it until one
	// is sustained), then bisects until (failing - sustained) <=
	// Precision·failing (default 0.05), in at most MaxRuns runs per repeat
	// (default 12).
	Precision float64
	MaxRuns   int
	// Repeats is the number of searches per setup (default 3), each with
	// its own arrivals (seeds Seed, Seed+1, ...); a repeat after the first
	// starts from the previous one's result and brackets it by steps of
	// 1.25× before bisecting. The result is their median, and their spread
	// is reported.
	Repeats int
}

// SearchResult is the outcome of a RateSearch for one setup.
type SearchResult struct {
	Setup Setup
	// MaxRate is the highest rate at which a run was sustained (0: none);
	// Failed the lowest rate at which one failed (+Inf: none failed, so
	// MaxRate is a lower bound, e.g. capped by RateSearch.Max); both of the
	// median repeat.
	MaxRate, Failed float64
	Best            Run       // the run at MaxRate
	Rates           []float64 // MaxRate of each repeat, in order
	Runs            []Run     // every run of the search, in order
}

// Spread returns the lowest and highest MaxRate over the repeats.
func (s *SearchResult) Spread() (lo, hi float64) {
	if len(s.Rates) == 0 {
		return s.MaxRate, s.MaxRate
	}
	return slices.Min(s.Rates), slices.Max(s.Rates)
}

// Experiment replays a query log under the four setups of Ding et al.'s
// Figure 7 and measures delay against arrival rate. All executions are
// real: training times are measured on the backends, and replays run the
// backends under the wall clock.
type Experiment struct {
	Index *index.Index // the index the backends search
	// CPU and GPU are the processors. A nil Model is trained on Train,
	// measured on the processor's backend: on queries run alone (Measure)
	// and, for a processor that batches, also in batches formed by its
	// BatchPolicy (MeasureBatches), whose model it then uses in every setup
	// but best-serial, which runs queries alone. A given Model is used as
	// is. Every run starts from a clone of its model, so runs do not
	// influence each other through online refitting.
	CPU, GPU Processor
	Options  engine.Options
	Train    []engine.Query // training slice (Ding: 3000 queries other than the replayed ones)
	Queries  []engine.Query // the replayed log
	// MinDuration is the shortest span of arrivals of a run: at rate r the
	// log is replayed cyclically for max(len(Queries), r·MinDuration)
	// queries (at most 1<<20). A run shorter than a few deadlines cannot
	// show that a rate is unsustainable: a backlog that grows by a tenth of
	// the capacity takes ten deadlines to delay a query past its deadline.
	// Default 10 deadlines; negative: the log once.
	MinDuration time.Duration
	// Warmup is the number of training queries run unmeasured first on
	// each backend (default min(100, len(Train))).
	Warmup int
	Model  ModelOptions // options of trained models
	Setups []Setup      // default AllSetups
	// HybridCPUSlots is the number of CPU slots of the cpu+gpu setups:
	// 0, measured: with SplitProbe > 0 the candidate of the highest
	// throughput in ProbeSplit (each candidate probed for SplitProbe on
	// the training queries), otherwise the CPU's slots less the cores the
	// GPU's host side was measured to use while its training batches ran
	// (see HybridCPUSlots; all of the CPU's slots when the GPU was not
	// measured); -1, all of the CPU's slots; > 0, that many. With none
	// left, cpu+gpu runs the GPU alone.
	HybridCPUSlots int
	SplitProbe     time.Duration
	// Rates are the arrival rates of the table (queries/s). A run at a
	// rate beyond a setup's capacity lasts until its backlog drains
	// (about the whole log's processing time) unless StopOnMiss is set.
	Rates []float64
	// StopOnMiss stops a table run once more than 1% of its queries have
	// missed their deadline (the run has failed the p99 criterion; its
	// delays are those of the queries answered until then). Search runs
	// always stop so.
	StopOnMiss bool
	Search     RateSearch
	// Scheduler parameters (see Config); zero values take its defaults.
	Deadline       time.Duration
	UrgentFraction float64
	Ratio          float64
	// Placement of the cpu+gpu and cpu+gpu-nosteal setups (cpu+gpu-first
	// is always PlaceGPUFirst; the processors alone run as they always
	// did), and the GPU-first parameters (see Config). OnlineCores caps
	// the CPU slots of GPU-first hybrids at GOMAXPROCS less the GPU side's
	// host cores, measured online from the training batches' measure on
	// (Config.Cores, HostCores). A GPU-first hybrid's BatchModel starts
	// from a fit on the GPU's training batches.
	Placement      Placement
	TargetFraction float64
	CheapRatio     float64
	SpareFixed     float64
	CPUShare       float64
	OnlineCores    bool
	// CPUNice is Config.CPUNice of the hybrid setups (the CPU alone runs
	// at the normal priority).
	CPUNice int
	// PrepareAdapt and PrepareHook are Config's of the hybrid setups
	// (park CPU slots while a GPU batch is prepared on the host).
	PrepareAdapt int
	PrepareHook  func(ctx context.Context, prepared func(time.Duration)) context.Context
	// Assist is Config.Assist of the hybrid setups (CPU slots run chunks
	// of the GPU side's host work between two queries).
	Assist func() bool
	// BeforeRun, if set, is called before each run (table or search) with
	// its setup, before the scheduler is made: a caller sets there what
	// differs by setup outside Config (qp bench sched: the GPU's
	// preparation cores of the hybrid setups, so that the GPU alone keeps
	// all of them).
	BeforeRun func(Setup)
	Seed      uint64 // of the arrivals
	// SubmitQuantum is the shortest time between two wake-ups of a run's
	// submitter that find no arrival overdue (see replay): a query is
	// submitted at most that long after its scheduled arrival, which its
	// delay includes. 0 or negative: none (a wake-up for every arrival
	// due, the default).
	SubmitQuantum time.Duration
	// CarryLookups looks the replayed log's terms up once, with its
	// features (LookupQuery), and replays each query with its lookup
	// (engine.Query.Dict), so that the backend answering it does not look
	// its terms up again: a submitter that computes a query's features
	// looks its terms up anyway, and hands that lookup on (issue 24,
	// hostcut). The runs' windows then hold no dictionary lookup, where
	// without it they held the backend's one and never the features' (the
	// log's features are computed outside them either way): one lookup
	// per query less in both, as for a real submitter. Answers unchanged.
	CarryLookups bool
	// Progress, if set, is called after every run.
	Progress func(Run)
}

// submitQuantum is replay's quantum for e (Experiment.SubmitQuantum).
func (e *Experiment) submitQuantum() time.Duration {
	return max(e.SubmitQuantum, 0)
}

// Report is the outcome of an Experiment.
type Report struct {
	Deadline    time.Duration
	Queries     int           // in the log
	MinDuration time.Duration // of a run's arrivals (0: the log once)
	Seed        uint64
	// Training describes the models trained from Train on queries run
	// alone (Trained false: the processor's Model was given, or it had no
	// training samples), BatchTraining those trained on batches (for
	// processors that batch; BatchTrained).
	Training      [2]TrainResult
	Trained       [2]bool
	BatchTraining [2]TrainResult
	BatchTrained  [2]bool
	Names         [2]string
	// HostCores is the mean number of cores the process used while a
	// batching processor's training batches ran (-1: not measured), and
	// HybridCPUSlots the CPU slots the cpu+gpu setups ran with.
	HostCores      [2]float64
	HybridCPUSlots int
	Split          []SplitProbe // the core split probes (none: not probed)
	Runs           []Run        // the table: setups × rates, in that order
	Searches       []SearchResult
}

// Run trains the missing cost models, replays the log at every rate of
// e.Rates under every setup, and searches each setup's highest sustained
// rate.
func (e *Experiment) Run(ctx context.Context) (*Report, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	setups := e.Setups
	if len(setups) == 0 {
		setups = AllSetups
	}
	rep := &Report{Deadline: e.Deadline, Queries: len(e.Queries), Seed: e.Seed, HostCores: [2]float64{-1, -1}}
	if rep.Deadline == 0 {
		rep.Deadline = DefaultDeadline
	}
	procs := [2]Processor{e.CPU, e.GPU}
	var single [2]*CostModel // models of queries run alone, for best-serial
	for i := range procs {
		p := &procs[i]
		if p.Backend == nil { // a cpu-only experiment's GPU
			continue
		}
		if p.Name == "" {
			p.Name = p.Backend.Name()
		}
		rep.Names[i] = p.Name
		if p.Model != nil {
			single[i] = p.Model
			continue
		}
		warm := e.Warmup
		if warm == 0 {
			warm = min(100, len(e.Train))
		}
		samples, err := Measure(ctx, e.Index, p.Backend, e.Options, e.Train, warm)
		if err != nil {
			return nil, err
		}
		if len(samples) == 0 {
			p.Model, single[i] = NewCostModel(e.Model), NewCostModel(e.Model)
			continue
		}
		single[i], rep.Training[i] = Train(samples, e.Model)
		rep.Trained[i] = true
		p.Model = single[i]
		if p.Batch.maxQueries() > 1 && !p.Sequential {
			var bs []Sample
			var walls []batchTime
			cores, ok, err := HostCores(func() (err error) {
				bs, walls, err = measureBatches(ctx, e.Index, p.Backend, e.Options, e.Train, p.Batch, single[i], 0)
				return err
			})
			if p.BatchModel == nil && len(walls) > 0 {
				p.BatchModel = NewBatchModel(0, 0)
				for _, w := range walls {
					p.BatchModel.Observe(w.n, w.wall)
				}
			}
			if err != nil {
				return nil, err
			}
			if ok {
				rep.HostCores[i] = cores
			}
			if len(bs) > 0 {
				p.Model, rep.BatchTraining[i] = Train(bs, e.Model)
				rep.BatchTrained[i] = true
			}
		}
	}
	deadline := rep.Deadline
	minDur := e.MinDuration
	if minDur == 0 {
		minDur = 10 * deadline
	}
	rep.MinDuration = max(minDur, 0)
	rep.HybridCPUSlots = e.hybridCPUSlots(rep.HostCores[GPU])
	if e.HybridCPUSlots == 0 && e.SplitProbe > 0 && slices.ContainsFunc(setups, Setup.Hybrid) {
		ks := splitCandidates(max(e.CPU.Slots, 1), rep.HybridCPUSlots)
		ps, err := ProbeSplit(ctx, e.Index, procs[CPU].Backend, procs[GPU].Backend, procs[GPU].Batch, procs[GPU].Model, e.Options, e.Train, ks, e.SplitProbe)
		if err != nil {
			return nil, err
		}
		rep.Split = ps
		rep.HybridCPUSlots = bestSplit(ps).CPUSlots
	}
	feats := make([]Features, len(e.Queries)) // of the log, once: the runs replay it many times
	logQs := e.Queries
	if e.CarryLookups {
		logQs = slices.Clone(e.Queries)
	}
	for i := range logQs {
		if e.CarryLookups {
			feats[i], logQs[i].Dict = LookupQuery(e.Index, logQs[i])
		} else {
			feats[i] = QueryFeatures(e.Index, logQs[i])
		}
	}
	var slab replaySlab // the runs' results, reused (replay)
	run := func(setup Setup, rate float64, stopOnMiss bool, seed uint64) (Run, error) {
		if e.BeforeRun != nil {
			e.BeforeRun(setup)
		}
		cfg := Config{
			Options: e.Options, Deadline: e.Deadline, UrgentFraction: e.UrgentFraction,
			Ratio: e.Ratio, Serialize: setup == BestSerial, NoSteal: setup == ParallelNoSteal,
		}
		e.placement(&cfg, setup, rep.HostCores[GPU])
		cpu, gpu := procs[CPU], procs[GPU]
		if setup == BestSerial {
			cpu.Model, gpu.Model = single[CPU], single[GPU]
		}
		cpu.Model = cpu.Model.Clone()
		if gpu.Model != nil { // nil: a cpu-only experiment's absent GPU
			gpu.Model = gpu.Model.Clone()
		}
		if gpu.BatchModel != nil {
			gpu.BatchModel = gpu.BatchModel.Clone()
		}
		if setup != GPUOnly {
			cfg.CPU = &cpu
		}
		if setup != CPUOnly {
			cfg.GPU = &gpu
		}
		if setup.Hybrid() {
			cpu.Slots = rep.HybridCPUSlots
			if cpu.Slots == 0 {
				cfg.CPU = nil // no core left for the CPU: the GPU alone
			}
		}
		// The scheduler's goroutines (and those they start: a GPU batch's
		// delivery, the backend's preparation workers) inherit the
		// "qp=window" profiler label from New, the replay's submitter has
		// it for the replay, and the slab's reserve and Summarize do not:
		// a CPU profile of the experiment (--cpuprofile) splits into the
		// measured window and the harness's work outside it with
		// `go tool pprof -tagfocus qp=window` (scripts/profsplit.sh; the
		// CUDA owner goroutine, started with the backend, has no label).
		var s *Scheduler
		var err error
		pprof.Do(ctx, windowLabel, func(context.Context) { s, err = New(e.Index, cfg) })
		if err != nil {
			return Run{}, err
		}
		n := runLength(len(e.Queries), rate, minDur)
		maxMiss := -1
		if stopOnMiss {
			maxMiss = n / 100 // more fail the p99 criterion
		}
		arr := Arrivals(n, rate, seed)
		// Reserved before the CPU counter starts; grown geometrically (the
		// rate search's runs lengthen with the rate) up to the longest run.
		slab.reserve(n, min(2*len(slab.res), maxRunQueries), e.Queries)
		g0 := readGC()
		c0, ok0 := cputime.Process()
		var res []*Result
		pprof.Do(ctx, windowLabel, func(ctx context.Context) {
			res, err = replay(ctx, s, logQs, feats, arr, maxMiss, &slab, e.submitQuantum())
		})
		c1, ok1 := cputime.Process()
		g1 := readGC()
		if err != nil {
			return Run{}, err
		}
		r := Summarize(setup, rate, res)
		if ok0 && ok1 {
			r.CPUTime = c1 - c0
		}
		r.GCTime, r.GCs = g1.cpu-g0.cpu, g1.cycles-g0.cycles
		r.Submissions = int(s.Stats().Submissions)
		s.gpuFirstSummary(&r) // Replay has shut s down: its dispatcher is done
		if e.Progress != nil {
			e.Progress(r)
		}
		return r, nil
	}
	return rep, e.runAll(rep, setups, procs, single, run)
}

// placement sets cfg's placement for setup: Experiment.Placement for
// cpu+gpu and cpu+gpu-nosteal, GPU-first for cpu+gpu-first, with the
// GPU-first parameters and, with OnlineCores, the core cap (hostCores: the
// GPU side's measured host cores, its prior; < 0 not measured).
func (e *Experiment) placement(cfg *Config, setup Setup, hostCores float64) {
	switch setup {
	case Parallel, ParallelNoSteal:
		cfg.Placement = e.Placement
	case ParallelGPUFirst:
		cfg.Placement = PlaceGPUFirst
	default:
		return
	}
	cfg.TargetFraction, cfg.CheapRatio, cfg.SpareFixed, cfg.CPUNice = e.TargetFraction, e.CheapRatio, e.SpareFixed, e.CPUNice
	if cfg.Placement == PlaceGPUFirst {
		cfg.CPUShare = e.CPUShare
	}
	cfg.PrepareAdapt, cfg.PrepareHook, cfg.Assist = e.PrepareAdapt, e.PrepareHook, e.Assist
	if e.OnlineCores && cfg.Placement == PlaceGPUFirst {
		cfg.Cores = runtime.GOMAXPROCS(0)
		cfg.HostCores = max(hostCores, 0)
	}
}

// check reports what the experiment lacks (index, backends, queries) and
// invalid query options.
func (e *Experiment) check() error {
	if e.Index == nil {
		return errors.New("scheduler: experiment without an index")
	}
	if e.CPU.Backend == nil {
		return errors.New("scheduler: experiment needs a CPU backend")
	}
	if e.GPU.Backend == nil && !e.cpuOnly() {
		return errors.New("scheduler: experiment needs a GPU backend for setups other than cpu-only")
	}
	if len(e.Queries) == 0 {
		return errors.New("scheduler: experiment without queries")
	}
	if _, err := e.Options.Resolve(); err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	return nil
}

// cpuOnly says whether every setup is CPUOnly (the GPU processor may then
// be absent: no backend).
func (e *Experiment) cpuOnly() bool {
	return len(e.Setups) > 0 && !slices.ContainsFunc(e.Setups, func(s Setup) bool { return s != CPUOnly })
}

// windowLabel is the profiler label of the work inside a run's measured
// window (Experiment.Run).
var windowLabel = pprof.Labels("qp", "window")

// maxRunQueries caps the queries of one run (runLength): 4M results are
// about 2 GB.
const maxRunQueries = 1 << 22

// runLength is the number of queries replayed at rate: the log once, or
// the log repeated cyclically to span at least minDur of arrivals (at most
// maxRunQueries).
func runLength(logLen int, rate float64, minDur time.Duration) int {
	if minDur <= 0 {
		return logLen
	}
	return max(logLen, min(int(math.Ceil(rate*minDur.Seconds())), maxRunQueries))
}

// runAll runs the table (every setup at every rate of e.Rates) and then,
// unless e.Search.Off, the rate search of every setup (best-serial with the
// models of queries run alone, single), appending to rep; it stops at the
// first error.
func (e *Experiment) runAll(rep *Report, setups []Setup, procs [2]Processor, single [2]*CostModel, run func(Setup, float64, bool, uint64) (Run, error)) error {
	for _, setup := range setups {
		for _, rate := range e.Rates {
			r, err := run(setup, rate, e.StopOnMiss, e.Seed)
			if err != nil {
				return err
			}
			rep.Runs = append(rep.Runs, r)
		}
	}
	if e.Search.Off {
		return nil
	}
	for _, setup := range setups {
		models := [2]*CostModel{procs[CPU].Model, procs[GPU].Model}
		if setup == BestSerial {
			models = single
		}
		pr := procs // the capacity estimate that starts the search counts the slots the setup has
		if setup.Hybrid() {
			pr[CPU].Slots = rep.HybridCPUSlots
		}
		sr, err := e.search(setup, pr, models, run)
		if err != nil {
			return err
		}
		rep.Searches = append(rep.Searches, sr)
	}
	return nil
}

// search finds setup's highest sustained rate, RateSearch.Repeats times
// with different arrivals, and returns the median repeat with the spread.
func (e *Experiment) search(setup Setup, procs [2]Processor, models [2]*CostModel, run func(Setup, float64, bool, uint64) (Run, error)) (SearchResult, error) {
	rs := e.Search
	if rs.Max <= 0 {
		rs.Max = math.Inf(1)
	}
	if rs.Precision <= 0 {
		rs.Precision = 0.05
	}
	if rs.MaxRuns <= 0 {
		rs.MaxRuns = 12
	}
	if rs.Repeats <= 0 {
		rs.Repeats = 3
	}
	start := rs.Start
	if start <= 0 {
		start = 0.5 * e.capacity(setup, procs, models)
	}
	out := SearchResult{Setup: setup}
	var reps []SearchResult
	step := 2.0
	for k := range rs.Repeats {
		sr, err := bracket(setup, min(max(start, 0.01), rs.Max), step, rs, func(r float64) (Run, error) {
			return run(setup, r, true, e.Seed+uint64(k))
		})
		out.Runs = append(out.Runs, sr.Runs...)
		if err != nil {
			return out, err
		}
		reps = append(reps, sr)
		out.Rates = append(out.Rates, sr.MaxRate)
		switch {
		case sr.MaxRate > 0:
			start = sr.MaxRate
		case !math.IsInf(sr.Failed, 1):
			start = sr.Failed / 2
		}
		step = 1.25
	}
	slices.SortStableFunc(reps, func(a, b SearchResult) int { return cmp.Compare(a.MaxRate, b.MaxRate) })
	med := reps[len(reps)/2]
	out.MaxRate, out.Failed, out.Best = med.MaxRate, med.Failed, med.Best
	return out, nil
}

// bracket is one search from rate r: multiplying it by step until a run
// fails (dividing until one is sustained), then bisecting.
func bracket(setup Setup, r, step float64, rs RateSearch, run func(float64) (Run, error)) (SearchResult, error) {
	sr := SearchResult{Setup: setup, Failed: math.Inf(1)}
	for range rs.MaxRuns {
		x, err := run(r)
		if err != nil {
			return sr, err
		}
		sr.Runs = append(sr.Runs, x)
		if x.Sustained() {
			if r > sr.MaxRate {
				sr.MaxRate, sr.Best = r, x
			}
		} else {
			sr.Failed = min(sr.Failed, r)
		}
		switch {
		case math.IsInf(sr.Failed, 1):
			if r >= rs.Max {
				return sr, nil
			}
			r = min(step*r, rs.Max)
			continue
		case sr.MaxRate == 0:
			if r < 0.02 {
				return sr, nil
			}
			r /= step
			continue
		}
		if sr.Failed-sr.MaxRate <= rs.Precision*sr.Failed {
			break
		}
		r = (sr.MaxRate + sr.Failed) / 2
	}
	return sr, nil
}

// capacity is the throughput (queries/s) the cost models predict for setup
// on the replayed log: slots over mean predicted cost, summed over the
// processors in parallel, or one over the mean of the per-query minimum
// when serialized.
func (e *Experiment) capacity(setup Setup, procs [2]Processor, models [2]*CostModel) float64 {
	var sum [2]float64
	var best float64
	for _, q := range e.Queries {
		f := QueryFeatures(e.Index, q)
		c := models[CPU].Predict(f).Seconds()
		g := c // no GPU (a cpu-only experiment): only CPUOnly's sum is used
		if models[GPU] != nil {
			g = models[GPU].Predict(f).Seconds()
		}
		sum[CPU] += c
		sum[GPU] += g
		best += min(c, g)
	}
	n := float64(len(e.Queries))
	capOf := func(i ProcID) float64 { return float64(max(procs[i].Slots, 1)) * n / sum[i] }
	switch setup {
	case CPUOnly:
		return capOf(CPU)
	case GPUOnly:
		return capOf(GPU)
	case BestSerial:
		return n / best
	}
	return capOf(CPU) + capOf(GPU)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()*1e3) }

func pct(x float64) string {
	if x < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}
