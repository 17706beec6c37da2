package qp

import (
	"context"
	"fmt"
	"time"

	"github.com/qpengine/qp/engine"
)

// Streams under Device Auto (Engine.StreamWith over the router).
//
// A stream of chunks answered one router.SearchBatch at a time is slower
// than either processor's own stream: Device GPU keeps StreamOptions.InFlight
// chunks in flight (one chunk's host preparation beside another's device
// work: GCIDE TREC'06 OR 1.47-2.23M q/s with two against 1.15-1.21M with
// one, H100), and Device CPU's continuous stream has no barrier between
// chunks and formats the run on its workers (StreamOptions.Continuous,
// Answered). So the router answers a stream in segments, each on one
// processor's own stream, after a race that measures them:
//
//   - while either processor's stream is unmeasured for the stream's
//     mode, the stream starts with a race (auto_race.go): both processors
//     answer its first chunks at once from a shared queue until one is
//     measured slower by raceMargin; the CPU's stream then takes the rest
//     at once where it won, the race goes on as the GPU's stream where the
//     GPU won; both race on where they are within the margin. Each one's
//     measured rate becomes its stream time per query;
//   - the winner (the lower stream time) streams in segments of up to
//     maxSegment chunks, each segment's steady rate (from its first
//     chunk's emit to its last's, so that a pipeline's fill does not
//     count) refreshing its stream time;
//   - the other processor gets a trial segment (trialChunks) only where,
//     measured within recheckMargin of the winner, it could have become
//     faster, the winner has streamed recheckEvery chunks since the last
//     trial, and the trial at its measured time would cost at most
//     trialBudget of the rest of the stream's time on the winner. A
//     processor measured clearly slower is not tried again; on a short
//     stream a trial does not pay and none runs.
//
// Later streams of the mode on the same Engine start on the winner's
// stream without a race. Each segment refreshes its processor's stream
// time, so a winner that slows down loses the next segments once it is
// measured slower than the other's last stream time. emit sees the
// stream's pieces in order (a race's pieces are the GPU's chunks and the
// CPU's quarter chunks; after a race, a segment may start with a partial
// chunk, StreamOptions.first, and keeps the caller's chunk grid after it,
// so Answered's pieces keep their offsets); the answers are the
// processors' (the GPU's equal the CPU's). The SearchBatch path's split of
// one batch between both processors (auto_split.go) stays for batches
// (qp serve, SearchBatch callers).

// segRace is streamPlan's choice of a race of both processors
// (auto_race.go); procCPU and procGPU name the processors' own streams.
const segRace = 2

const (
	// maxSegment bounds a segment (chunks), so that the rates refresh.
	maxSegment = 64
	// trialBudget: a trial segment runs only where, at the other
	// processor's measured time per query, it would cost at most this
	// share of the rest of the stream's time on the winner.
	trialBudget = 0.03
	// recheckEvery: chunks the winner streams between two trials.
	recheckEvery = 32
	// recheckMargin: a processor whose stream time is more than this
	// factor over the winner's is not tried again.
	recheckMargin = 1.25
)

// trialChunks is the length of a processor's trial segment: the GPU's
// needs a chunk to fill its pipeline before the steady rate shows.
var trialChunks = [2]int{procCPU: 2, procGPU: 3}

// streamState is one mode's record of the processors' own streams.
type streamState struct {
	per      [2]float64 // seconds per query of each processor's stream (EWMA; 0: never measured)
	queries  [2]uint64  // queries answered in stream segments and races
	segments [2]uint64
	raced    [2]bool // per[p] was measured in a race, not on p's own stream
	races    uint64  // races run (auto_race.go)
	race     string  // the last race (racePolicy.String)
	trials   uint64  // segments run as trials of the processor not winning
	since    int     // chunks the winner streamed since the last trial
	profiled uint64  // streams started on the routing profile's record (auto_profile.go)
}

// procStream runs a segment of a stream on one processor as its own
// stream does (StreamWith's contract: emit sees each chunk once, in
// order).
type procStream func(ctx context.Context, qs []engine.Query, opt engine.Options, so StreamOptions,
	emit func(lo int, out []engine.Response) error) error

// streamPlan picks how the next segment of a stream of mode key runs,
// with rest queries left in chunks of chunk: segRace (a race of both
// processors, while either's stream is unmeasured), or a processor's
// stream; and the segment's length in chunks (a partial chunk at its
// start counts as one).
func (r *router) streamPlan(key, chunk, rest int) (kind, chunks int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &r.modes[key].stream
	left := (rest + chunk - 1) / chunk
	seg := min(left, maxSegment)
	if left-seg < maxSegment/4 {
		seg = left // no short tail segment: its rate would be a small batch's
	}
	if st.per[procCPU] == 0 || st.per[procGPU] == 0 {
		return segRace, seg
	}
	w := procCPU // the winner: the processor whose stream measured faster
	if st.per[procGPU] < st.per[procCPU] {
		w = procGPU
	}
	o, wt := 1-w, st.per[w]
	// Could the other processor, measured within recheckMargin, have
	// become faster, and would its trial at its measured time cost at
	// most trialBudget of the rest's time on the winner?
	could := st.since >= recheckEvery && st.per[o] < recheckMargin*wt
	if !could || float64(min(trialChunks[o]*chunk, rest))*(st.per[o]-wt) > trialBudget*float64(rest)*wt {
		return w, seg
	}
	st.trials++
	st.since = 0
	return o, trialChunks[o]
}

// recordRace records a race of a stream of mode key: each processor's
// queries and its measured rate as its stream time.
func (r *router) recordRace(key int, pol *racePolicy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &r.modes[key].stream
	st.races++
	st.since = 0
	st.race = pol.String([2]string{r.cpu.Name(), r.gpu.Name()})
	for p := range 2 {
		if pol.done[p] > 0 {
			st.queries[p] += uint64(pol.done[p])
			st.segments[p]++
		}
		// A processor stopped before it had a rate (the CPU after one
		// piece, surely slower) is recorded at its upper bound, or at the
		// bound that stopped it where the other re-ran all its pieces
		// (racePolicy.measured).
		if rp := pol.measured(p); rp > 0 {
			st.per[p], st.raced[p] = rp, true
		}
	}
}

// recordSegment records a segment of processor p's stream: its queries,
// its steady time per query (segments of two chunks or more), and, while
// p is the winner, its chunks towards the next trial.
func (r *router) recordSegment(key, p int, s steadyRate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &r.modes[key].stream
	st.queries[p] += uint64(s.queries)
	st.segments[p]++
	if s.chunks < 2 {
		// One chunk (a short stream's whole segment): its time is the
		// pipeline's fill or a small batch's, not the stream's rate.
		return
	}
	if st.per[p] == 0 || st.raced[p] {
		// A race's rate was of batches beside the other processor: the
		// processor's own stream replaces it.
		st.per[p], st.raced[p] = s.per, false
	} else {
		st.per[p] = (1-ewma)*st.per[p] + ewma*s.per
	}
	if st.per[1-p] == 0 || st.per[p] <= st.per[1-p] {
		st.since += s.chunks
	}
}

// stream answers qs in chunks on the processors' own streams (procs),
// in segments chosen by streamPlan, after a race (r.race, else
// r.raceLive) while either processor's stream is unmeasured; emit and so
// as StreamWith's, except that a race emits pieces smaller than a chunk
// (the CPU's quarter chunks) and that the segment after it may start with
// the rest of a chunk.
func (r *router) stream(ctx context.Context, procs [2]procStream, qs []engine.Query, opt engine.Options, so StreamOptions,
	emit func(lo int, out []engine.Response) error) error {
	if len(qs) == 0 {
		return nil
	}
	chunk := so.Chunk
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	so.Chunk = chunk
	key := modeKey(qs)
	race := r.race
	if race == nil {
		race = r.raceLive
	}
	class := ""
	if r.profile != nil {
		class = queryClass(qs, chunk, r.profile.df)
		r.seedProfile(key, class)
		defer r.recordProfile(key, class, r.races(key))
	}
	for lo := 0; lo < len(qs); {
		kind, nch := r.streamPlan(key, chunk, len(qs)-lo)
		if kind == segRace {
			limit := min(lo+nch*chunk, len(qs))
			pol := newRacePolicy(so.InFlight, chunk)
			pol.gpuOn = !so.GPUHandOff
			hi, err := race(ctx, pol, qs, lo, limit, opt, so, emit)
			r.recordRace(key, pol)
			if err != nil {
				return err
			}
			if hi <= lo {
				panic("BUG: qp: a race answered no query")
			}
			lo = hi
			continue
		}
		hi := min((lo/chunk+nch)*chunk, len(qs))
		sso := so
		sso.first = (chunk - lo%chunk) % chunk
		if so.Answered != nil {
			sso.Answered = func(l int, out []engine.Response) { so.Answered(lo+l, out) }
		}
		if so.Trace != nil {
			sso.Trace = func(c ChunkTimes) { c.Lo += lo; so.Trace(c) }
		}
		seg := segment{emit: emit, lo: lo, clock: r.clock[kind]}
		seg.start = seg.clock()
		if err := procs[kind](ctx, qs[lo:hi], opt, sso, seg.emitChunk); err != nil {
			return err
		}
		r.recordSegment(key, kind, seg.steady(hi-lo))
		lo = hi
	}
	return nil
}

// races is the number of races mode key's streams ran.
func (r *router) races(key int) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.modes[key].stream.races
}

// seedProfile starts a stream of mode key and class on the routing
// profile's record (auto_profile.go) where the mode's streams are not
// measured yet and the record may route it: both processors' stream
// times set as if a race had measured them, so that the winner's own
// stream starts at once (and replaces its time with its own measure).
func (r *router) seedProfile(key int, class string) {
	r.mu.Lock()
	st := &r.modes[key].stream
	unmeasured := st.per[procCPU] == 0 && st.per[procGPU] == 0
	r.mu.Unlock()
	if !unmeasured {
		return
	}
	per, ok := r.profile.lookup(modeName(key), class)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st.per[procCPU] == 0 && st.per[procGPU] == 0 {
		st.per, st.raced = per, [2]bool{true, true}
		st.profiled++
	}
}

// recordProfile records mode key's stream times in the routing profile
// after a stream of class, where both are measured; racesBefore is the
// mode's races before the stream (a race in it resets the record's count
// of streams routed without one).
func (r *router) recordProfile(key int, class string, racesBefore uint64) {
	r.mu.Lock()
	st := r.modes[key].stream
	r.mu.Unlock()
	if st.per[procCPU] > 0 && st.per[procGPU] > 0 {
		r.profile.record(modeName(key), class, st.per, st.races > racesBefore)
	}
}

// emitTraced emits out (the responses to the queries from lo, searched
// from from) and traces it.
func emitTraced(emit func(int, []engine.Response) error, trace func(ChunkTimes), lo int, out []engine.Response, from time.Time) error {
	if len(out) == 0 {
		return nil
	}
	to := time.Now()
	if err := emit(lo, out); err != nil {
		return err
	}
	if trace != nil {
		trace(ChunkTimes{Lo: lo, N: len(out), SearchStart: from, SearchEnd: to, EmitStart: to, EmitEnd: time.Now()})
	}
	return nil
}

// segment times one segment of a stream: the clock at its start and at
// each chunk's emit's end.
type segment struct {
	emit   func(lo int, out []engine.Response) error
	lo     int
	clock  func() time.Time
	start  time.Time
	first  time.Time // the first chunk's emit's end
	firstN int       // its queries
	last   time.Time // the latest chunk's emit's end
	chunks int
}

func (s *segment) emitChunk(l int, out []engine.Response) error {
	if err := s.emit(s.lo+l, out); err != nil {
		return err
	}
	t := s.clock()
	if s.chunks == 0 {
		s.first, s.firstN = t, len(out)
	}
	s.last = t
	s.chunks++
	return nil
}

// steadyRate is a segment's measured rate.
type steadyRate struct {
	per             float64 // seconds per query
	queries, chunks int
}

// steady is the segment's time per query after its first chunk (a
// pipeline's fill, a cold start), or over the whole segment when it had
// one chunk; n is its queries.
func (s *segment) steady(n int) steadyRate {
	if s.chunks >= 2 && n > s.firstN {
		return steadyRate{max(s.last.Sub(s.first).Seconds(), 1e-9) / float64(n-s.firstN), n, s.chunks}
	}
	return steadyRate{max(s.last.Sub(s.start).Seconds(), 1e-9) / float64(max(n, 1)), n, s.chunks}
}

// shiftEmit is emit for a segment starting at lo.
func shiftEmit(emit func(lo int, out []engine.Response) error, lo int) func(int, []engine.Response) error {
	return func(l int, out []engine.Response) error { return emit(lo+l, out) }
}

// streamRouting describes the mode's stream segments for router.routing
// ("" when none).
func (st *streamState) String(cpuName, gpuName string) string {
	if st.segments[0]+st.segments[1] == 0 {
		return ""
	}
	s := "; streams:"
	for p, pn := range []string{cpuName, gpuName} {
		if st.segments[p] > 0 {
			s += fmt.Sprintf(" %s %d queries in %d segments (%.3gµs per query)", pn, st.queries[p], st.segments[p], st.per[p]*1e6)
		}
	}
	if st.races > 0 {
		s += fmt.Sprintf(", %d races (the last: %s)", st.races, st.race)
	}
	if st.trials > 0 {
		s += fmt.Sprintf(", %d trials", st.trials)
	}
	if st.profiled > 0 {
		s += fmt.Sprintf(", %d started on the routing profile", st.profiled)
	}
	return s
}
