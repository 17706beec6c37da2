package qp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/qpengine/qp/engine"
)

// A race: how a Device Auto stream measures the processors' streams.
//
// Batch slices misjudge both processors' streams (H100, GCIDE TREC'06 OR:
// CPU slices of 64 and 256 queries at 9.82 and 2.59 µs a query, the
// CPU's stream 1.36; the GPU's 1,024-query slice 1.55 µs, its stream with
// two chunks in flight 0.49), and running the loser alone long enough to
// measure its stream costs a 100,000-query run (50-150 ms) more than the
// routing gains. So a stream whose processors are not both measured
// starts with a race: both processors answer the stream's first chunks at
// once from one shared queue, each taking its next piece when it is ready
// (the GPU with StreamOptions.InFlight pieces in flight, as its own
// stream keeps them; the CPU one batch on all its workers at a time), and
// emit sees the pieces in order. The loser's pieces are not wasted: they
// are answers the winner does not owe, so the race costs only the
// contention for the host's cores (the GPU's host preparation beside the
// CPU's workers: each ~1.4× slower meanwhile, H200, GCIDE) and at most
// one loser's piece at its end. This is the work-sharing of a
// heterogeneous scheduler (each processor pulls work when idle: StarPU's
// eager policy, Augonnet et al., Euro-Par 2009) with a measured exit
// (racePolicy). The race must decide in a few ms: a race of whole GPU
// chunks and CPU quarter chunks (branch auto3) lasted 20-90 ms of a
// 30-150 ms run of 100,000 queries, and cost it 5-50% (H200, GCIDE).
//
//   - the pieces start small (piece): the CPU's a 32nd of a chunk (512
//     queries, its cold start) then a 16th, the GPU's a quarter chunk;
//     each doubles, up to a chunk, once the other processor answered one
//     (an undecided race amortizes the batch starts as the streams do);
//     while undecided none takes over a quarter of what is left;
//   - a processor's rate is its busy time (with a piece in flight) over
//     its queries answered: a single-searcher processor (the CPU) with two
//     completions or more is measured after its first piece, so that its
//     cold start does not count; a pipelined one (the GPU, k pieces in
//     flight) after its k-th completion (its pipeline full: branch auto5),
//     once it answered a piece more, as its first pieces (their host
//     preparation and launches beside the CPU's pieces) cost up to 3× its
//     stream's rate (H200, GCIDE TREC'06 AND+OR, run 7: judged by them,
//     the GPU stopped and the CPU, half its speed, ran 84% of the run);
//   - a processor stops taking pieces once it is surely slower than the
//     other by raceMargin: its rate, or its lower bound while it has none
//     (its busy time so far over all the queries it took, its first piece
//     or the GPU's fill left out as from its rate; while the GPU fills,
//     that over raceFill, its best possible pipelined rate), above
//     raceMargin times the other's upper bound (its busy time over the
//     queries it answered); or at once,
//     once both have rates, where its rate is raceClear times the other's
//     (the first evidence of the 2-5× gaps common here); or, both having
//     answered raceEnough pieces, where it is the slower;
//   - near the end, the slower processor takes a piece only where it would
//     answer it before the other would answer everything left (its piece
//     time, the pieces in flight ahead of it included, under the rest's
//     time on the other; each at its rate, or its upper bound while it has
//     none), so that no stream waits on the loser's last piece;
//   - when the GPU stops and its pieces are answered, the CPU stops too:
//     the rest runs on the CPU's continuous stream (router.stream's
//     segments), which formats the run on its workers and has no barrier
//     between chunks; when the CPU stops, the GPU takes whole chunks
//     until the CPU's pieces are answered, then stops: the rest runs on
//     the GPU's own stream (StreamWith, as Device GPU's). The race going
//     on as the GPU's stream to its limit (branch auto3,
//     the default; StreamOptions.GPUHandOff hands over instead) avoids draining and filling the pipeline
//     once, but on the H200 the GPU's race rate over GCIDE's 80-88k
//     queries after the CPU stopped was 1.24-1.7× its own stream's
//     (known-item AND 0.97 µs a query against 0.78, OR 1.58 against
//     0.93, TREC'06 OR 0.70 against 0.49). Once the race goes on so,
//     the GPU makes no more response buffers than its own stream keeps
//     (liveRace.bufLimit, branch auto6);
//   - the loser's pieces in flight do not hold the stream (branch auto6):
//     a searcher about to take a piece first judges the other processor
//     (racePolicy.judge: stopped while its pieces fly, by the same
//     bounds), and the CPU re-runs a stopped GPU's pieces still in flight
//     where its copy would end sooner by a margin, or, idle (the race's
//     queries all taken, or its buffers all ahead of the emit), where the
//     GPU's copy is not about to end (racePolicy.rerun; liveRace.watch
//     looks again every raceWatch at a stream's end). The first copy of
//     a piece to end fills it; the other is cancelled (its context) and
//     dropped, its buffer back to its processor. The GPU's own slowness
//     beside the CPU's pieces is addressed at its cause too: the CPU's
//     workers run the GPU's fanned-out host work between their queries
//     and yield (raceBetween; StreamOptions.RaceNoHelp for A/B).
//
// Each processor's rate is then recorded as its stream time
// (streamState.per; a loser stopped before it had one, at its upper
// bound, or at the bound that stopped it where the CPU re-ran all its
// pieces: racePolicy.measured), and the later segments and streams run as auto_stream.go
// chooses, with its bounded re-checks. A routing profile
// (auto_profile.go) lets a repeat run skip the race.

const (
	// raceMargin: a processor measured this factor slower than the other
	// (its lower bound over the other's upper bound) stops racing.
	raceMargin = 1.1
	// raceClear: a processor whose rate is this factor over the other's
	// stops racing at once, on the first rates both have (a 2-5× gap is
	// common: GCIDE TREC'06 AND the CPU 1.4× faster, OR the GPU 3×,
	// known-item the GPU 4-5×, H200).
	raceClear = 1.5
	// raceCPUPiece and raceGPUPiece divide the chunk into each
	// processor's race pieces: small, so that both are measured within a
	// few ms (H200, GCIDE: a race of whole GPU chunks and CPU quarter
	// chunks lasted 20-90 ms of a 30-150 ms run of 100,000 queries, both
	// processors contending for the host's cores meanwhile); the CPU's
	// 1,024 queries (64 per worker of 16), the GPU's 2,048 with
	// StreamOptions.InFlight of them in flight.
	raceCPUPiece = 32
	raceGPUPiece = 4
	// raceAhead bounds the CPU's pieces answered ahead of the one emit
	// waits for (the CPU answers many pieces while the GPU answers its
	// first two: GCIDE TREC'06 AND, ~20 of 1,024 queries in ~8 ms); the
	// GPU's own bound is a quarter of it.
	raceAhead = 32
	// raceMinPiece is the smallest piece but a stream's last.
	raceMinPiece = 64
	// raceWatch is how often an idle CPU searcher looks again at the
	// GPU's pieces in flight once the race's queries are all taken
	// (liveRace.watch): a fraction of a GPU piece's few ms.
	raceWatch = 500 * time.Microsecond
	// raceFill bounds how much slower a pipelined processor's (the
	// GPU's) pipeline fill may be than its pipelined rate: before it has
	// a rate after its fill, its lower bound is its busy time over the
	// queries it took divided by raceFill (H200, GCIDE TREC'06 AND+OR,
	// run 7: its first 16,384 race queries at 2.34 µs a query beside the
	// CPU's pieces, its stream 0.82, 2.9×).
	raceFill = 3.0
)

// raceEnough is the number of pieces each processor answers, both
// measured within raceMargin of each other, before the race ends and the
// faster one's own stream takes the rest (at its chunk size, with no
// contention): enough for a rate beyond a piece's noise, few enough that
// the race stays a few ms.
var raceEnough = [2]int{procCPU: 6, procGPU: 4}

// racePieces are each processor's first race pieces for a stream of
// chunk queries.
func racePieces(chunk int) [2]int {
	return [2]int{procCPU: max(chunk/raceCPUPiece, 1), procGPU: max(chunk/raceGPUPiece, 1)}
}

// racePolicy decides, under the race's lock, which processor takes the
// next piece; times are durations since the race began. A processor's
// times count only while it has a piece in flight (busy), so that a
// searcher waiting for a response buffer (its pieces answered ahead of
// the one emit waits for) is not measured as slow.
type racePolicy struct {
	k         [2]int           // pieces each processor keeps in flight
	busy      [2]time.Duration // time with a piece in flight, up to since
	since     [2]time.Duration // the last change of flying
	firstBusy [2]time.Duration // busy at its first completion
	firstN    [2]int           // the queries of its first completed piece
	fillBusy  [2]time.Duration // busy at its k-th completion (k ≥ 2: its pipeline full)
	fillN     [2]int           // queries answered at its k-th completion
	taken     [2]int           // queries taken
	done      [2]int           // queries answered
	comps     [2]int           // pieces answered
	flying    [2]int           // pieces in flight
	stopped   [2]bool
	stopAt    [2]time.Duration // when it was refused its first piece
	bound     [2]float64       // its lower bound (or rate) when judge or take stopped it
	reruns    [2]int           // the other's pieces it re-ran (rerun)
	dropped   [2]int           // its copies dropped, the other's copy first (abandoned)
	size      [2]int           // each processor's next piece (piece)
	chunk     int              // the stream's chunk: the GPU's largest piece
	// gpuOn: once the CPU stopped, the race goes on as the GPU's stream
	// to its limit (the default; not StreamOptions.GPUHandOff) rather than ending when the
	// CPU's pieces are answered.
	gpuOn bool
	// fillRate: a pipelined processor is judged by its rate from its
	// pipeline's fill as lead26 (branch auto4) did (A/B in the
	// simulation, TestRaceFill); false (newRacePolicy), by its pipelined
	// rate.
	fillRate bool
	// noRerun: no processor re-runs the other's pieces (rerun) nor stops
	// it while its pieces fly (judge), as lead27 raced (A/B in the
	// simulation, TestRaceRerunAB).
	noRerun bool
}

// newRacePolicy is the policy of a race of a stream of chunk queries
// with gpuInFlight GPU pieces in flight.
func newRacePolicy(gpuInFlight, chunk int) *racePolicy {
	chunk = max(chunk, 1)
	s := &racePolicy{k: [2]int{procCPU: 1, procGPU: max(gpuInFlight, 1)}, chunk: chunk, size: racePieces(chunk)}
	return s
}

// piece is the size of p's next piece with left queries left to race:
// the CPU's are raceCPUPiece-ths of a chunk; the GPU's start at a
// raceGPUPiece-th and double with each piece it answers (its fixed time
// per batch, a few ms, weighs less as they grow), whole chunks once the
// CPU stopped (the race goes on as the GPU's stream); while neither
// stopped, at most a quarter of left.
func (s *racePolicy) piece(p, left int) int {
	n := s.size[p]
	switch {
	case p == procGPU && s.stopped[procCPU]:
		n = s.chunk
	case !s.stopped[procCPU] && !s.stopped[procGPU]:
		// Undecided, no piece takes more than a quarter of what is
		// left: on a short stream (3,000 queries) the GPU's first
		// piece would otherwise take it all, the CPU none.
		n = min(n, max(left/4, raceMinPiece))
	}
	return min(n, left)
}

// busyAt is p's busy time up to now (busy, plus the time since its last
// tick while a piece is in flight), without recording it.
func (s *racePolicy) busyAt(p int, now time.Duration) time.Duration {
	if s.flying[p] > 0 {
		return s.busy[p] + now - s.since[p]
	}
	return s.busy[p]
}

// tick brings p's busy time up to now.
func (s *racePolicy) tick(p int, now time.Duration) {
	s.busy[p] = s.busyAt(p, now)
	s.since[p] = now
}

// rate is p's measured time per query (0: not yet measured). Where p
// keeps one piece in flight (the CPU): its busy time over its queries
// answered, its first piece (a cold start) left out once it answered
// two. Where it keeps k ≥ 2 (the GPU): its pipelined rate, the busy time
// after its k-th completion (its pipeline full) over the queries answered
// since, once it answered a piece more: the fill (its first pieces' host
// preparation and launches beside the CPU's, up to 3× its stream's rate,
// run 7) is not its stream's rate. This is the marginal time of its
// later pieces, as a pipeline's throughput is measured after its
// start-up (Hennessy & Patterson, Appendix C.1: a pipeline's throughput
// excludes its fill).
func (s *racePolicy) rate(p int) float64 {
	k := s.k[p]
	switch {
	case s.comps[p] < k:
		return 0
	case k == 1 && s.comps[p] >= 2:
		return (s.busy[p] - s.firstBusy[p]).Seconds() / float64(s.done[p]-s.firstN[p])
	case k >= 2 && !s.fillRate:
		if s.comps[p] == k || s.busy[p] <= s.fillBusy[p] {
			return 0
		}
		return (s.busy[p] - s.fillBusy[p]).Seconds() / float64(s.done[p]-s.fillN[p])
	}
	return s.busy[p].Seconds() / float64(s.done[p])
}

// estimate is p's rate, or while it has none its upper bound (0: none
// answered).
func (s *racePolicy) estimate(p int) float64 {
	if r := s.rate(p); r > 0 {
		return r
	}
	return s.upper(p)
}

// upper is an upper bound of p's time per query: its busy time up to its
// latest completion over the queries answered, as if the pieces still in
// flight had done nothing (0: none answered).
func (s *racePolicy) upper(p int) float64 {
	if s.done[p] == 0 {
		return 0
	}
	return s.busy[p].Seconds() / float64(s.done[p])
}

// lower is a lower bound of p's time per query at now: its busy time so
// far over every query it took, as if all were answered now, without
// its first piece where its rate leaves it out (0: none taken). A
// pipelined processor's (k ≥ 2) is of its pipelined rate: its busy time
// since its pipeline was full over the queries taken since; while it
// fills, its busy time over its queries taken divided by raceFill (its
// best possible pipelined rate), so that its fill alone stops it only
// where the other is faster by that margin.
func (s *racePolicy) lower(p int, now time.Duration) float64 {
	if s.taken[p] == 0 {
		return 0
	}
	b := s.busyAt(p, now)
	if s.k[p] == 1 && s.comps[p] >= 1 && s.taken[p] > s.firstN[p] {
		// Its first piece, a cold start, is not in its rate: nor in
		// its bound once a later piece is taken.
		return (b - s.firstBusy[p]).Seconds() / float64(s.taken[p]-s.firstN[p])
	}
	if k := s.k[p]; k >= 2 && !s.fillRate {
		if s.comps[p] < k {
			return b.Seconds() / float64(s.taken[p]) / raceFill
		}
		if s.taken[p] > s.fillN[p] {
			return (b - s.fillBusy[p]).Seconds() / float64(s.taken[p]-s.fillN[p])
		}
		return 0
	}
	return b.Seconds() / float64(s.taken[p])
}

// take says whether processor p takes a piece of n queries at now, rest
// queries (the piece's included) being left in the stream, and records
// the piece when it does. A processor refused once takes no more pieces.
func (s *racePolicy) take(p, n, rest int, now time.Duration) bool {
	if n <= 0 {
		return false
	}
	o := 1 - p
	rp, ro := s.estimate(p), s.estimate(o)
	switch {
	case s.surelySlower(p, now):
		s.stopped[p] = true
	case s.rate(p) > 0 && s.rate(o) > 0 && s.rate(p) > raceClear*s.rate(o):
		s.stopped[p] = true // clearly slower on the first rates
	case ro > 0 && rp > ro && float64(n*s.k[p])*rp > float64(rest)*ro:
		s.stopped[p] = true // its piece would end after the other's rest
	case s.comps[p] >= raceEnough[p] && s.comps[o] >= raceEnough[o] && rp > ro && ro > 0:
		s.stopped[p] = true // both measured, p the slower
	}
	if s.stopped[o] && s.flying[o] == 0 && (p == procCPU || !s.gpuOn) {
		s.stopped[p] = true // p's own stream takes the rest
	}
	if s.stopped[p] {
		s.stop(p, now)
		return false
	}
	s.tick(p, now)
	s.taken[p] += n
	s.flying[p]++
	return true
}

// surelySlower says whether p is surely slower than the other processor
// at now: its rate, or its lower bound, over raceMargin times the
// other's upper bound.
func (s *racePolicy) surelySlower(p int, now time.Duration) bool {
	uo := s.upper(1 - p)
	return uo > 0 && max(s.lower(p, now), s.rate(p)) > raceMargin*uo
}

// judge stops p, at now, where it is surely slower (surelySlower) while
// its pieces are in flight: the other processor, taking its next piece,
// stops it before p's own next take would (a GPU whose pieces all take
// long asks for none), so that the other re-runs p's pieces (rerun).
func (s *racePolicy) judge(p int, now time.Duration) {
	if !s.noRerun && !s.stopped[p] && s.flying[p] > 0 && s.surelySlower(p, now) {
		s.stopped[p] = true
		s.stop(p, now)
	}
}

// stop records, the first time p is refused a piece at now, when, and
// its evidence then (measured uses it where the other re-ran all p's
// pieces, so that p answered none): its rate, or its busy time so far
// over the queries it took, as if all were answered now. Not its lower
// bound: while a pipeline fills that is divided by raceFill, and a GPU
// stopped so, recorded at it, measured faster than the CPU that re-ran
// its pieces (the emulator: 0.85 µs a query against the CPU's 1.1).
func (s *racePolicy) stop(p int, now time.Duration) {
	if s.stopAt[p] != 0 {
		return
	}
	s.stopAt[p] = max(now, 1)
	s.bound[p] = s.rate(p)
	if s.taken[p] > 0 {
		s.bound[p] = max(s.bound[p], s.busyAt(p, now).Seconds()/float64(s.taken[p]))
	}
}

// measured is p's time per query as the race measured it, for its
// stream time (0: none): its rate, else its upper bound (a processor
// stopped before it had a rate, surely slower: its pieces are all
// answered when the race ends), else, where the other processor re-ran
// all its pieces, its bound when it stopped, and at least raceMargin
// times the other's rate or upper bound: it was judged slower by that
// margin, and its bound (its pieces as if answered when it stopped) may
// be far under its time (the emulator's GPU, stopped at 1.4 ms, at
// 2.7 µs a query against the CPU's 3.7).
func (s *racePolicy) measured(p int) float64 {
	if r := s.rate(p); r > 0 {
		return r
	}
	if u := s.upper(p); u > 0 {
		return u
	}
	b := s.bound[p]
	if o := 1 - p; s.stopped[p] && b > 0 {
		ro := s.rate(o)
		if ro == 0 {
			ro = s.upper(o)
		}
		b = max(b, raceMargin*ro)
	}
	return b
}

// answered records that p answered a piece of n queries at now.
func (s *racePolicy) answered(p, n int, now time.Duration) {
	s.tick(p, now)
	s.done[p] += n
	s.comps[p]++
	s.flying[p]--
	// A piece answered doubles the next, up to a chunk, once the other
	// processor answered a piece too (the race undecided on both
	// processors' evidence: their batch starts then weigh less and less
	// in their rates, as in their own streams); the CPU's first piece,
	// its cold start, is half its second. Before the other answered, a
	// longer piece would only hold up the decision (the CPU's 2,048
	// known-item queries take 15 ms).
	if s.comps[1-p] > 0 || (p == procCPU && s.comps[p] == 1) {
		s.size[p] = min(2*s.size[p], s.chunk)
	}
	if s.comps[p] == 1 {
		s.firstBusy[p], s.firstN[p] = s.busy[p], n
	}
	if s.comps[p] == s.k[p] {
		s.fillBusy[p], s.fillN[p] = s.busy[p], s.done[p]
	}
}

// rerun says whether p re-runs the other processor o's piece of n
// queries taken at from (o's copy still in flight) at now, and records
// the copy as p's piece when it does: where o stopped (the race judged it
// slower), or where p would otherwise wait (idle: the race's queries are
// all taken, or p's response buffers all hold pieces answered ahead of
// the emit, which waits for o's). The loser's last pieces must not hold
// the stream, whose emit is in query order (H200, GCIDE TREC'06 AND,
// 2026-11-28: the GPU's last race piece of 8,192 queries took 13.75 ms
// while the CPU answered 1,024 in 0.4 ms, its later pieces waiting up to
// 13 ms to be emitted); nor the end of a short stream, which the CPU
// answered but for the GPU's first pieces. Both copies answer alike (the
// engines' bit-identical contract), so whichever ends first is emitted
// (speculative re-execution of stragglers: MapReduce's backup tasks near
// a job's end, Dean & Ghemawat, OSDI 2004, §3.6). Only a single-searcher
// processor re-runs (the CPU: the GPU's copy would pay its batch start,
// a few ms, more than the CPU's short pieces take), and only where the
// copy gains more than it costs:
//
//   - where o answered a piece, its copy, ending at o's estimate (k_o
//     pieces sharing o's pipeline: n·k_o times it after from), ends
//     after p's copy at p's estimate would, by more than that copy's
//     time again (the stream held that much less, against p's time on
//     queries it answers twice, or, p idle, both copies slowed while
//     they contend for the host's cores: a short stream's end in the
//     simulation);
//   - where o answered none, its piece may be about to end (its pieces
//     in flight end together: its pipeline's fill), and p re-runs it
//     only when o stopped (surely slower) and p is idle (its copy then
//     costs no answers of its own; a copy of a piece of the faster GPU
//     at a short stream's end only slowed it, in the simulation).
func (s *racePolicy) rerun(p, n int, from, now time.Duration, idle bool) bool {
	o := 1 - p
	if s.noRerun || n <= 0 || s.k[p] != 1 || s.stopped[p] || (!s.stopped[o] && !idle) {
		return false
	}
	rp, ro := s.estimate(p), s.estimate(o)
	if rp <= 0 {
		return false
	}
	if s.done[o] == 0 {
		if !idle || !s.stopped[o] {
			return false
		}
	} else if copyTime := time.Duration(float64(n) * rp * 1e9); from+time.Duration(float64(n*s.k[o])*ro*1e9)-now <= 2*copyTime {
		return false
	}
	s.tick(p, now)
	s.taken[p] += n
	s.flying[p]++
	s.reruns[p]++
	return true
}

// abandoned records that p's copy of a piece of n queries, taken by
// take or rerun, ended at now after the other processor's copy answered
// it first: it leaves p's flight and its queries p's taken ones (its
// busy time meanwhile stays in p's, the cautious side of p's rate).
func (s *racePolicy) abandoned(p, n int, now time.Duration) {
	s.tick(p, now)
	s.flying[p]--
	s.taken[p] -= n
	s.dropped[p]++
}

// String describes the race for the routing line: each processor's
// queries, rate (µs a query) and when it stopped.
func (s *racePolicy) String(names [2]string) string {
	var parts []string
	for p, name := range names {
		if s.done[p] == 0 && s.dropped[p] == 0 {
			continue
		}
		part := fmt.Sprintf("%s %d queries (%.3gµs per query", name, s.done[p], s.measured(p)*1e6)
		if s.stopAt[p] > 0 {
			part += fmt.Sprintf(", stopped at %.3g ms", s.stopAt[p].Seconds()*1e3)
		}
		if s.reruns[p] > 0 {
			part += fmt.Sprintf(", re-ran %d of the other's pieces", s.reruns[p])
		}
		if s.dropped[p] > 0 {
			part += fmt.Sprintf(", %d copies dropped", s.dropped[p])
		}
		parts = append(parts, part+")")
	}
	return strings.Join(parts, ", ")
}

// raceFunc runs a race on qs[lo:limit] (lo and limit on the stream's
// chunk grid, or limit = len(qs)) under pol and returns where it stopped:
// every query of qs[lo:hi] answered and emitted in order, hi > lo unless
// it fails. Tests replace router.raceLive with a simulation.
type raceFunc func(ctx context.Context, pol *racePolicy, qs []engine.Query, lo, limit int, opt engine.Options, so StreamOptions,
	emit func(lo int, out []engine.Response) error) (int, error)

// racePiece is one answered piece of a race.
type racePiece struct {
	p, lo    int
	out      []engine.Response
	from, to time.Time
	err      error
}

// liveRace is the state of one raceLive: the shared cursor and the
// policy under mu, each processor's response buffers, and one channel per
// piece, in the order the pieces were taken, for emit.
type liveRace struct {
	ctx    context.Context
	pol    *racePolicy
	help   func() bool // the CPU's workers call it between queries (copyCtx); nil: none
	qs     []engine.Query
	opt    engine.Options
	limit  int
	resCap int
	begin  time.Time

	mu     sync.Mutex
	cursor int // the next query to take
	seq    int // pieces taken

	// Each processor's response buffers: at most its pieces in flight
	// plus those answered ahead of the one emit waits for (raceAhead),
	// made as needed of its first piece's size (the GPU's a chunk, its
	// pieces' largest), a CPU buffer remade larger where its piece grew
	// past it.
	size      [2]int
	free      [2]chan []engine.Response
	allocated [2]int // under mu
	bufs      [2]int

	pieces []chan racePiece // under mu, made as pieces are taken (piece)
	slots  []raceSlot       // under mu, by piece index: each piece's copies
	low    int              // under mu: slots[:low] are all filled
	wake   chan struct{}    // a slot was filled (finish): watch looks again
}

// raceSlot is one piece of a race and its copies in flight: the first,
// taken from the cursor, and at most one more, the other processor's
// re-run of it (racePolicy.rerun). The first copy to answer it without
// an error fills the slot (its channel of pieces); the other is
// cancelled and dropped, its buffer back to its processor.
type raceSlot struct {
	lo, n  int
	from   time.Duration // when its first copy was taken (since begin)
	owner  int           // the processor of its first copy
	copies int           // copies in flight
	rerun  bool          // a second copy was taken
	filled bool
	cancel [2]context.CancelFunc // each processor's copy's
}

func newLiveRace(ctx context.Context, pol *racePolicy, qs []engine.Query, lo, limit int, opt engine.Options, so StreamOptions) *liveRace {
	first := racePieces(so.Chunk)
	lr := &liveRace{ctx: ctx, pol: pol, qs: qs, opt: opt, limit: limit, resCap: so.ResultCap,
		begin: time.Now(), cursor: lo,
		size: [2]int{procCPU: min(first[procCPU], limit-lo), procGPU: min(pol.chunk, limit-lo)},
		bufs: [2]int{procCPU: pol.k[procCPU] + raceAhead, procGPU: pol.k[procGPU] + raceAhead/4}}
	for p := range lr.free {
		lr.free[p] = make(chan []engine.Response, lr.bufs[p])
	}
	lr.wake = make(chan struct{}, 1)
	return lr
}

// buffer returns a free response buffer of p's, a new one while p has
// fewer than its limit (bufLimit), or nil once the race's context is
// done.
func (lr *liveRace) buffer(p int) []engine.Response {
	select {
	case out := <-lr.free[p]:
		return out
	default:
	}
	lr.mu.Lock()
	if lr.allocated[p] < lr.bufLimit(p) {
		lr.allocated[p]++
		lr.mu.Unlock()
		return newResponses(lr.size[p], lr.resCap)
	}
	lr.mu.Unlock()
	select {
	case out := <-lr.free[p]:
		return out
	case <-lr.ctx.Done():
		return nil
	}
}

// bufLimit is the most response buffers p makes: bufs[p], except that
// once the race goes on as the GPU's stream (the CPU stopped, none of its
// pieces in flight) the GPU makes no more than its own stream keeps
// (StreamWith: k+1), reusing those it has. A buffer is cold until a
// chunk has used all of it: each of its responses' Results is allocated
// as the GPU's answers are first written there (qp query sets no
// StreamOptions.ResultCap by default). On the H200 (GCIDE TREC'06 OR,
// 2026-11-28) the race's GPU chunks after the CPU stopped made 15,500,
// 11,600 and 20,500 objects, on a fourth buffer and on buffers of its
// 4,096-query race pieces, where Device GPU's chunks after its three
// buffers were warm made at most 825; and a searcher ahead of the emit
// prepares its chunk beside the emit's formatting, on the same cores.
// Under mu.
func (lr *liveRace) bufLimit(p int) int {
	if p == procGPU && lr.pol.stopped[procCPU] && lr.pol.flying[procCPU] == 0 {
		return min(lr.bufs[p], lr.pol.k[p]+1)
	}
	return lr.bufs[p]
}

// take returns the next piece's bounds for p, its index and the context
// of p's copy, or ok false once the policy refuses it or the race's
// queries are all taken. p first re-runs the other processor's earliest
// piece still in flight that the policy finds worth it (racePolicy.rerun:
// where the other stopped, or where p would otherwise wait): a
// straggler does not hold the emit.
func (lr *liveRace) take(p int) (lo, n, i int, ctx context.Context, ok bool) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	now := time.Since(lr.begin)
	lr.pol.judge(1-p, now)
	if !lr.pol.stopped[p] {
		for lr.low < len(lr.slots) && lr.slots[lr.low].filled {
			lr.low++
		}
		// p would otherwise wait: the queries are all taken, or it holds
		// its last buffer (its next piece would wait for the emit).
		idle := lr.cursor >= lr.limit || (lr.allocated[p] >= lr.bufLimit(p) && len(lr.free[p]) == 0)
		for j := lr.low; j < len(lr.slots); j++ {
			sl := &lr.slots[j]
			if sl.filled || sl.rerun || sl.owner == p || !lr.pol.rerun(p, sl.n, sl.from, now, idle) {
				continue
			}
			sl.rerun = true
			return sl.lo, sl.n, j, lr.copyCtx(sl, p), true
		}
	}
	n = lr.pol.piece(p, lr.limit-lr.cursor)
	if lr.cursor >= lr.limit || !lr.pol.take(p, n, len(lr.qs)-lr.cursor, now) {
		return 0, 0, 0, nil, false
	}
	lo, i = lr.cursor, lr.seq
	lr.cursor += n
	lr.seq++
	lr.slots = append(lr.slots, raceSlot{lo: lo, n: n, from: now, owner: p})
	return lo, n, i, lr.copyCtx(&lr.slots[i], p), true
}

// copyCtx starts p's copy of sl: its context, cancelled once the other
// copy filled the slot, and for the CPU's carrying lr.help
// (engine.WithBetween; raceBetween): its workers run chunks of the GPU's
// fanned-out host work between their queries, and yield. Beside 15-16
// CPU workers that run queries back to back, the Go runtime ran that
// work (a GPU batch's preparation and result conversion) on one core at
// a time, 3-5× as long (issue 24, twelfth round: the scheduler's CPU
// slots help and yield since), and a GPU goroutine readied on a worker's
// P waited for the worker's piece to end. The race's CPU pieces did not
// help until branch auto6; the GPU's slowness beside them (a fill up to
// 3× its stream's rate, raceFill; 8,192 queries in 13.75 ms where its
// stream answers 16,384 in ~7) is likely that in part, to be measured
// (StreamOptions.RaceNoHelp). Under mu.
func (lr *liveRace) copyCtx(sl *raceSlot, p int) context.Context {
	ctx, cancel := context.WithCancel(lr.ctx)
	sl.cancel[p] = cancel
	sl.copies++
	if p == procCPU && lr.help != nil {
		return engine.WithBetween(ctx, lr.help)
	}
	return ctx
}

// finish records that p's copy of piece i ended at to with err: it
// fills the slot (true: the caller sends it to the piece's channel) when
// it is the first to answer it, or errs with no other copy left;
// otherwise p's copy is dropped, and the other copy cancelled where this
// one filled it.
func (lr *liveRace) finish(p, i, n int, to time.Time, err error) bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	sl := &lr.slots[i]
	sl.copies--
	sl.cancel[p]()
	sl.cancel[p] = nil
	now := to.Sub(lr.begin)
	if sl.filled || (err != nil && sl.copies > 0) {
		lr.pol.abandoned(p, n, now)
		return false
	}
	sl.filled = true
	if c := sl.cancel[1-p]; c != nil {
		c() // the other copy's answers are dropped: stop it
	}
	lr.pol.answered(p, n, now)
	select { // a watching searcher looks again (watch)
	case lr.wake <- struct{}{}:
	default:
	}
	return true
}

// search is one of p's searchers: it answers pieces on be while the
// policy lets it, each into a buffer taken before the piece, and hands
// each it filled first to its channel (a copy answered second goes back
// to the free buffers).
func (lr *liveRace) search(p int, be engine.Backend) {
	for lr.ctx.Err() == nil {
		out := lr.buffer(p)
		if out == nil {
			return
		}
		lo, n, i, ctx, ok := lr.take(p)
		if !ok {
			lr.free[p] <- out
			if lr.watch(p) {
				continue
			}
			return
		}
		if cap(out) < n {
			out = newResponses(n, lr.resCap)
		}
		from := time.Now()
		err := be.SearchBatch(ctx, lr.qs[lo:lo+n], lr.opt, out[:n])
		to := time.Now()
		if !lr.finish(p, i, n, to, err) {
			lr.free[p] <- out[:cap(out)]
			continue
		}
		lr.piece(i) <- racePiece{p, lo, out[:n], from, to, err}
		if err != nil {
			return
		}
	}
}

// watch is p's wait once the race's queries are all taken while the
// other processor's pieces are still in flight, p re-running none of
// them yet (racePolicy.rerun: the other not judged slower, or its copy
// ending sooner): it waits raceWatch, or until a piece is answered or
// the race is done, and says whether p should look again (take judges the other anew each
// time). It says false once p stopped, re-runs nothing, or no other
// processor's piece is left unanswered. Without it the CPU's searcher
// ended at the end of a short stream, which then waited for the GPU's
// first pieces (the emulator, 3,000 TREC'06 AND queries on GCIDE:
// 0.39-0.56 s against 0.23-0.24 s with the GPU's pieces re-run).
func (lr *liveRace) watch(p int) bool {
	lr.mu.Lock()
	wait := lr.cursor >= lr.limit && !lr.pol.stopped[p] && lr.pol.k[p] == 1 && !lr.pol.noRerun
	if wait {
		wait = false
		for j := lr.low; j < len(lr.slots); j++ {
			if sl := &lr.slots[j]; !sl.filled && !sl.rerun && sl.owner != p {
				wait = true
				break
			}
		}
	}
	lr.mu.Unlock()
	if !wait {
		return false
	}
	t := time.NewTimer(raceWatch)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-lr.wake:
		return true
	case <-lr.ctx.Done():
		return false
	}
}

// piece is the channel of the i-th piece taken.
func (lr *liveRace) piece(i int) chan racePiece {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	for len(lr.pieces) <= i {
		lr.pieces = append(lr.pieces, make(chan racePiece, 1))
	}
	return lr.pieces[i]
}

// taken is the number of pieces taken.
func (lr *liveRace) taken() int {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.seq
}

// raceLive races r's processors on qs[lo:limit] (raceFunc): one goroutine
// per piece in flight (the GPU's so.InFlight, the CPU's one), each taking
// the next piece from the shared cursor while pol lets it, and emit, in
// the calling goroutine, seeing the pieces in order. After an error no
// piece is emitted; the searchers stop and their pieces are drained.
func (r *router) raceLive(ctx context.Context, pol *racePolicy, qs []engine.Query, lo, limit int, opt engine.Options, so StreamOptions,
	emit func(lo int, out []engine.Response) error) (int, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lr := newLiveRace(rctx, pol, qs, lo, limit, opt, so)
	if !so.RaceNoHelp {
		lr.help = r.help
	}
	var wg sync.WaitGroup
	wg.Add(pol.k[procGPU] + pol.k[procCPU])
	for range pol.k[procGPU] {
		go func() { defer wg.Done(); lr.search(procGPU, r.gpu) }()
	}
	go func() { defer wg.Done(); lr.search(procCPU, r.cpu) }()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	hi, err := lo, error(nil)
	for i := 0; ; i++ {
		var pc racePiece
		select {
		case pc = <-lr.piece(i):
		case <-finished:
			if i >= lr.taken() {
				if err == nil {
					err = ctx.Err() // cancelled before a piece was taken
				}
				return hi, err
			}
			pc = <-lr.piece(i)
		}
		if err == nil {
			if err = pc.err; err == nil {
				es := time.Now()
				err = emit(pc.lo, pc.out)
				if err == nil && so.Trace != nil {
					so.Trace(ChunkTimes{Lo: pc.lo, N: len(pc.out), SearchStart: pc.from, SearchEnd: pc.to, EmitStart: es, EmitEnd: time.Now()})
				}
			}
			if err != nil {
				cancel()
			} else {
				hi = pc.lo + len(pc.out)
			}
		}
		lr.free[pc.p] <- pc.out[:cap(pc.out)]
	}
}
