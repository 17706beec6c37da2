package scheduler

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/qpengine/qp/internal/cputime"
)

// Placement selects how the scheduler places queries on its processors.
type Placement uint8

const (
	// PlaceCost is Ding et al.'s placement (WWW'09 §9): three queues by
	// predicted finish times on the two processors' cost models, work
	// stealing, urgency (see Scheduler).
	PlaceCost Placement = iota
	// PlaceGPUFirst gives every query to the GPU; the CPU takes only the
	// GPU's overflow (issue 24). See gpuFirst.
	PlaceGPUFirst
)

func (p Placement) String() string {
	switch p {
	case PlaceCost:
		return "cost"
	case PlaceGPUFirst:
		return "gpu-first"
	}
	return fmt.Sprintf("Placement(%d)", uint8(p))
}

// ParsePlacement parses a Placement's String.
func ParsePlacement(s string) (Placement, error) {
	switch strings.ToLower(s) {
	case "cost":
		return PlaceCost, nil
	case "gpu-first", "gpufirst":
		return PlaceGPUFirst, nil
	}
	return 0, fmt.Errorf("scheduler: unknown placement %q (cost, gpu-first)", s)
}

// DefaultTargetFraction is Config.TargetFraction's default.
const DefaultTargetFraction = 0.25

// gpuFirst is the dispatcher-owned state of the GPU-first placement
// (Config.Placement PlaceGPUFirst; issue 24: the cost placement sent
// queries to the CPU on a per-query GPU cost model 53-85% off, and CPU+GPU
// served 0.3-0.7× the GPU alone on the device). The rule:
//
//   - Every query joins the GPU's queue. The GPU takes its queue in order
//     in batches as large as its BatchPolicy allows and the latency budget
//     leaves: a batch started now must finish by the target of its oldest
//     query (arrival + TargetFraction·deadline), predicted by the GPU's
//     BatchModel (fixed part + time per query, refitted from every batch
//     it ran, not from per-query predictions).
//   - A free CPU slot takes overflow: queries at the tail of the GPU's
//     queue that the GPU is predicted to finish after their target, given
//     the work ahead of them there (its running batch, then the queries
//     ahead in batches of the size it forms, each costing the fixed part
//     plus the time per query). Among the last overflowScan such queries it
//     takes those it is relatively best at first (highest ratio of the
//     cost models' GPU to CPU predictions: a ranking only, the decision
//     to move a query is the batch model's).
//   - Second, with CheapRatio > 0 (and stealing on), a CPU slot that finds
//     no overflow takes a query whose predicted CPU cost is at most
//     CheapRatio times the GPU's measured time per query: a query a core
//     answers faster than the GPU's amortized share (an AND whose shortest
//     list is tiny), which frees GPU time.
//   - With Cores > 0, the CPU runs at most Cores less the cores the GPU
//     side's host work needs at once (hostShare, measured online), so busy
//     CPU slots never starve the GPU's feeder.
//
// Without overload the CPU finds no overflow and CPU+GPU is the GPU alone
// by construction; under overload the CPU adds its capacity.
type gpuFirst struct {
	on     bool
	target float64 // TargetFraction
	bm     *BatchModel
	host   hostShare
	cpuCap int // most CPU slots busy at once (-1: no cap)
	// Running means of the GPU queue's queries (for the batch size of
	// the policy's thresholds): postings (Features.batchPostings) and
	// predicted GPU cost.
	postings, cost float64
	noMore         bool // pickOverflow found nothing in this dispatch round
	// lastFinish is when the GPU's last batch came back (gpuFinished).
	lastFinish time.Time
	// The CPU share (Config.CPUShare; see shareCPU): share is the depth
	// (0: off), cpuWork the predicted CPU work queued for the CPU and
	// running there (each query at least MinTime), cpuMean the running
	// mean of the arrivals' predicted CPU cost (likewise).
	share   float64
	cpuWork time.Duration
	cpuMean float64
}

// meanDecay is the weight of the past in the running means.
const meanDecay = 0.99

// note updates the running means with a job joining the GPU queue.
func (g *gpuFirst) note(j *job) {
	var p float64
	if !j.f.Empty() {
		p = float64(j.f.batchPostings())
	}
	c := float64(j.cost[GPU])
	if g.postings == 0 && g.cost == 0 {
		g.postings, g.cost = p, c
		return
	}
	g.postings = meanDecay*g.postings + (1-meanDecay)*p
	g.cost = meanDecay*g.cost + (1-meanDecay)*c
}

// target is when j should be answered by (arrival + target·deadline).
func (g *gpuFirst) targetOf(j *job) time.Time {
	return j.arrival.Add(time.Duration(g.target * float64(j.deadline.Sub(j.arrival))))
}

// policyBatch is the number of queries the GPU's batch policy admits into
// one batch, with the queue's mean query.
func (s *Scheduler) policyBatch(p *proc) float64 {
	n := float64(p.maxQ)
	pol := &p.spec.Batch
	if pol.MaxPostings > 0 && s.gf.postings > 0 {
		n = min(n, math.Ceil(float64(pol.MaxPostings)/s.gf.postings))
	}
	if pol.MaxCost > 0 && s.gf.cost > 0 {
		n = min(n, math.Ceil(float64(pol.MaxCost)/s.gf.cost))
	}
	return max(n, 1)
}

// budgetLimit is the most queries the GPU's batch may take: as many as fit
// in the target time of a fresh query (TargetFraction·deadline) less the
// fixed part. At least 1; 0 means no limit (the time per query is not
// known yet). The limit does not shrink with the wait of the batch's
// oldest query: a GPU fallen behind that cut its batches to save the
// deadlines of its oldest queries would amortize its fixed part over
// fewer queries and fall further behind (the simulation did); the queries
// it cannot finish in time are the CPU's overflow instead.
func (s *Scheduler) budgetLimit() int {
	fixed, per := s.gf.bm.Params()
	if per <= 0 || !s.gf.bm.ready() {
		return 0
	}
	left := time.Duration(s.gf.target*float64(s.cfg.Deadline)) - fixed
	return max(int(left/per), 1)
}

// gpuETA predicts when the GPU finishes the queries of its queue.
type gpuETA struct {
	start      time.Time // when it can start its next batch
	fixed, per time.Duration
	batch      float64 // queries per batch
}

// finish is when the query with i queries ahead of it in the queue is
// answered: after ⌈(i+1)/batch⌉ batches.
func (e *gpuETA) finish(i int) time.Time {
	n := float64(i + 1)
	return e.start.Add(time.Duration(math.Ceil(n/e.batch)*float64(e.fixed) + n*float64(e.per)))
}

// eta is the GPU's gpuETA at now: its running batches' remaining time
// (and a batch wait it holds) first, then batches of the size its policy
// and the latency budget admit (budgetLimit). The GPU is one server
// whatever its slots: with several, the BatchModel learns a batch's
// marginal time in the pipeline (gpuFinished), so its batches follow one
// another at that pace, not side by side.
func (s *Scheduler) eta(g *proc, now time.Time) gpuETA {
	e := gpuETA{start: now.Add(s.runningLeft(g, now))}
	if !g.hold.IsZero() && g.hold.After(e.start) {
		e.start = g.hold
	}
	e.fixed, e.per = s.gf.bm.Params()
	e.batch = s.policyBatch(g)
	if n := s.budgetLimit(); n > 0 {
		e.batch = min(e.batch, float64(n))
	}
	return e
}

// pickOverflow builds a batch for CPU p from the GPU queue's overflow, or
// else, with CheapRatio set, from the queries p is much faster at.
func (s *Scheduler) pickOverflow(p *proc, now time.Time) *batch {
	g := s.other(p)
	q := &s.queues[QueueGPU]
	if g == nil || q.n == 0 || s.gf.noMore || !s.gf.bm.ready() {
		return nil
	}
	e := s.eta(g, now)
	spare := s.spareBatch(&e)
	bb := s.newBuilder(p)
	cands := s.stealBuf[:0]
	i := q.n - 1
	for j := q.tail; j != nil && len(cands) < overflowScan && i >= spare; j, i = j.prev, i-1 {
		s.visits++
		if j.picked {
			continue
		}
		if !e.finish(i).After(s.gf.targetOf(j)) {
			break // on time there, and so (nearly) everything ahead of it
		}
		cands = append(cands, stealCand{j: j, ratio: float64(j.cost[GPU]) / float64(max(j.cost[CPU], MinTime))})
	}
	if len(cands) > 0 {
		sortByRatio(cands)
		for _, c := range cands {
			if bb.full() {
				break
			}
			bb.add(c.j, false)
		}
	} else if s.cfg.CheapRatio > 0 && !s.cfg.NoSteal && e.per > 0 {
		limit := time.Duration(s.cfg.CheapRatio * float64(e.per))
		n := 0
		for j := q.tail; j != nil && n < stealScan && !bb.full(); j = j.prev {
			s.visits++
			n++
			if !j.picked && j.cost[CPU] <= limit {
				bb.add(j, false)
			}
		}
	}
	clear(cands)
	s.stealBuf = cands[:0]
	if len(bb.jobs) == 0 {
		s.gf.noMore = true
		return nil
	}
	return s.newBatch(&bb, true)
}

// spareBatch is how many queries at the head of the GPU's queue the CPU
// leaves to the GPU whatever their predicted finish (0 with
// Config.SpareFixed 0): the batch whose fixed part is at most 1/(1+k) of
// its wall time, k = SpareFixed, n = ⌈k·fixed/per⌉, at most the batch the
// GPU forms (e.batch). Issue 24, the lead's device run 1: once a CPU that
// took the overflow drained the GPU's queue, the GPU's batches shrank
// (553 → 243 queries on GCIDE AND) and paid their fixed part (~0.9 ms of
// host work) twice as often; the GPU's rate fell by more than the CPU
// added, so it fell further behind and the CPU took still more.
func (s *Scheduler) spareBatch(e *gpuETA) int {
	k := s.cfg.SpareFixed
	if k <= 0 || e.per <= 0 {
		return 0
	}
	n := math.Ceil(k * float64(e.fixed) / float64(e.per))
	return int(min(n, e.batch, float64(math.MaxInt32)))
}

// overflowScan is how many overflow candidates a CPU slot compares: fewer
// than stealScan, since every free CPU slot scans on every dispatch while
// the GPU is overloaded (in the dispatcher-bound simulation, 4 candidates
// sustained 0.86 of the sum, 16 0.84, 64 0.81; without dispatcher costs 64
// gave 1.05 and 512 1.08: the ranking's gain).
const overflowScan = 16

// canStart says whether p may start a batch now: it has a free slot and,
// for the CPU under a core cap, fewer busy slots than the cap.
func (s *Scheduler) canStart(p *proc) bool {
	if p.free <= 0 {
		return false
	}
	return p.id != CPU || s.gf.cpuCap < 0 || p.slots-p.free < s.gf.cpuCap
}

// hostShare measures the host cores the GPU side needs while the GPU is
// busy: over windows of at least hostWindow, the process's cores in use
// (CPU time over wall time: the GPU backend's host work, the dispatcher,
// the submitter) less the CPU slots' (their busy time: one core each while
// they run) are regressed on the GPU's busy fraction, and the fit at a
// fraction of 1 is the demand at full load. Where the process used all but
// half a core of the host, the cores may be oversubscribed: the CPU slots'
// busy time then includes waiting for a core and the GPU side may get less
// than it needs, so the window's figure is only a lower bound of the
// demand; it is learned only when it exceeds the current estimate (a
// starved feeder would otherwise read as a smaller demand and hand the CPU
// still more cores; a cap that is just right also fills the host, and
// there the bound is exact). The prior (the demand measured while the GPU
// ran its training batches alone, or one core) weighs as two windows.
type hostShare struct {
	cpuTime func() (time.Duration, bool)
	cores   float64
	fit     linFit
	t0      time.Time
	c0      time.Duration
	busy    time.Duration // GPU busy time in the window
	cpu     time.Duration // CPU slots' busy time in the window
	started bool
}

// hostWindow is the shortest measuring window.
const hostWindow = 20 * time.Millisecond

func newHostShare(cores int, prior float64, cpuTime func() (time.Duration, bool)) hostShare {
	if prior <= 0 {
		prior = 1
	}
	if cpuTime == nil {
		cpuTime = cputime.Process
	}
	h := hostShare{cpuTime: cpuTime, cores: float64(cores), fit: newLinFit(1 - 1.0/32)}
	h.fit.prior(0, 0, 1, prior)
	return h
}

// demand is the GPU side's host cores at full load.
func (h *hostShare) demand() float64 { return h.fit.at(1) }

// restart begins a window at now.
func (h *hostShare) restart(now time.Time) {
	c, ok := h.cpuTime()
	h.t0, h.c0, h.busy, h.cpu, h.started = now, c, 0, 0, ok
}

// cpuDone records a CPU batch's busy time.
func (h *hostShare) cpuDone(busy time.Duration) { h.cpu += busy }

// gpuDone records a GPU batch that ran for wall and ends at now; it closes
// the window when it is long enough, learning from it unless the host was
// saturated.
func (h *hostShare) gpuDone(now time.Time, wall time.Duration) {
	if !h.started {
		h.restart(now)
		return
	}
	h.busy += wall
	span := now.Sub(h.t0)
	if span < hostWindow {
		return
	}
	if c, ok := h.cpuTime(); ok {
		used := (c - h.c0).Seconds() / span.Seconds()
		x := min(h.busy.Seconds()/span.Seconds(), 1)
		y := max(used-h.cpu.Seconds()/span.Seconds(), 0)
		if used < h.cores-0.5 || y > h.fit.at(x) {
			h.fit.observe(x, y)
		}
	}
	h.restart(now)
}

// cpuSlotCap is the CPU slots a host of cores leaves beside a GPU side
// that needs demand cores (rounded up, less a twentieth: 1.02 cores of a
// busy feeder is one core), at most slots.
func cpuSlotCap(cores int, demand float64, slots int) int {
	need := int(math.Ceil(demand - 0.05))
	return min(max(cores-need, 0), slots)
}

// gpuFinished learns from a GPU batch that has come back (dispatcher):
// the batch model from its wall time, the host share from the window it
// may close, and the CPU cap from the new demand.
//
// With several GPU slots a batch's wall time includes its wait for the
// device while the previous batch ran there (engine/gpu: preparation
// overlaps, the device is one): a batch that started before the previous
// one came back is learned at its marginal time, the time since then
// (issue 24, --gpu-slots 2). Learning the wall time would have the model
// see the GPU up to twice as slow, cut its batches and hand the CPU
// overflow the GPU could take. With one slot the time is the wall time.
func (s *Scheduler) gpuFinished(b *batch) {
	now := s.clock.Now()
	t := b.wall
	if s.procs[GPU].slots > 1 && !s.gf.lastFinish.IsZero() && s.gf.lastFinish.After(b.start) {
		t = max(min(t, now.Sub(s.gf.lastFinish)), 0)
	}
	s.gf.lastFinish = now
	if !b.failed && t > 0 {
		s.gf.bm.Observe(len(b.jobs), t)
	}
	if s.gf.cpuCap >= 0 {
		s.gf.host.gpuDone(now, t)
		s.gf.cpuCap = cpuSlotCap(s.cfg.Cores, s.gf.host.demand(), s.procs[CPU].slots)
	}
}

// shareCPU decides whether arrival j joins the CPU's own queue under the
// CPU share (Config.CPUShare; issue 24, fourteenth round). GPU-first
// alone gives the CPU only the GPU's overflow, the queries the GPU is
// predicted to answer after their target (TargetFraction of the
// deadline): on the device the GPU's batches grow with its queue, so it
// is predicted late only once its queue is a target deep, and there the
// replay already fails the rate (its Growing test: late delays past a
// quarter of the deadline); at each hybrid's highest sustained rate the
// CPU answered 0-7% of the queries. The share keeps the CPU busy instead:
// j goes to the CPU while the CPU's predicted work, queued and running,
// is at most CPUShare mean queries per CPU slot it may run (min(slots,
// the core cap)), so that its k slots always find a query and its queue
// adds at most about CPUShare query times of wait; the rest goes to the
// GPU, whose batches take all of its queue as before. The CPU's share
// then follows its measured capacity online: k slots answer k/t̄ queries
// a second (t̄ its true mean time per query, whatever the model's bias,
// since the bound is in queries of the model's mean), so at a rate λ the
// GPU gets λ − k/t̄ and CPU+GPU reaches the ceiling G + k/t̄ where the
// GPU alone reaches G (less what the busy slots take from the GPU's host
// side: the core cap's concern). Below the CPU's capacity the CPU answers
// nearly everything, at one query's latency rather than a batch's.
func (s *Scheduler) shareCPU(j *job) bool {
	g := &s.gf
	w := max(j.cost[CPU], MinTime)
	if g.cpuMean == 0 {
		g.cpuMean = float64(w)
	} else {
		g.cpuMean = meanDecay*g.cpuMean + (1-meanDecay)*float64(w)
	}
	k := s.procs[CPU].slots
	if g.cpuCap >= 0 {
		k = min(k, g.cpuCap)
	}
	if k == 0 || float64(g.cpuWork+w) > g.share*float64(k)*g.cpuMean {
		return false
	}
	g.cpuWork += w
	return true
}

// shareStart keeps gpuFirst.cpuWork as b starts: b's jobs from the CPU's
// queue leave its queued work, and a CPU batch's jobs (its own and the
// overflow it took) are its running work until it finishes.
func (s *Scheduler) shareStart(b *batch) {
	var work time.Duration
	for _, j := range b.jobs {
		w := max(j.cost[CPU], MinTime)
		if j.queue == QueueCPU {
			s.gf.cpuWork -= w
		}
		work += w
	}
	if b.p.id == CPU {
		b.work = work
		s.gf.cpuWork += work
	}
}

// staleAt is when a query in the CPU's queue under the CPU share has
// waited too long there and the GPU takes it: half its target.
func (g *gpuFirst) staleAt(j *job) time.Time {
	return j.arrival.Add(time.Duration(g.target / 2 * float64(j.deadline.Sub(j.arrival))))
}

// cpuStale says whether the GPU p would take a query from the CPU's queue
// now (takeStale).
func (s *Scheduler) cpuStale(p *proc, now time.Time) bool {
	h := s.queues[QueueCPU].head
	return s.gf.share > 0 && p.id == GPU && h != nil && !now.Before(s.gf.staleAt(h))
}

// takeStale adds to the GPU's batch bb, as urgent, the queries at the
// head of the CPU's queue that have waited half their target there (the
// CPU has fallen behind its share: slower queries than predicted, a core
// cap that fell), oldest first, as many as bb holds. The CPU's queue is
// in arrival order, so the scan stops at the first query not yet stale
// (with custom deadlines, a later one may be stale and wait for it).
func (s *Scheduler) takeStale(bb *builder, now time.Time) {
	if s.gf.share <= 0 || bb.p.id != GPU {
		return
	}
	for j := s.queues[QueueCPU].head; j != nil && !bb.full() && !now.Before(s.gf.staleAt(j)); j = j.next {
		s.visits++
		if !j.picked {
			bb.add(j, true)
		}
	}
}

// gpuFirstSummary fills r's GPU-first fields from s, which must have shut
// down (the dispatcher owns them while it runs).
func (s *Scheduler) gpuFirstSummary(r *Run) {
	if !s.gf.on {
		return
	}
	r.GPUFirst = true
	r.BatchFixed, r.BatchPer = s.gf.bm.Params()
	r.BatchError, r.BatchN = s.gf.bm.MeanRelError()
	r.CPUCap, r.HostDemand = s.gf.cpuCap, -1
	if s.gf.cpuCap >= 0 {
		r.HostDemand = s.gf.host.demand()
	}
}
