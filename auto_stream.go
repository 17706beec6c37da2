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
// Answered). So the router answers a stream in segments of whole chunks,
// each on one processor's own stream:
//
//   - while its batch measurements do not decide between the processors
//     at the chunk's size (router.decide) nor suffice for the streams'
//     bounds (streamReady), the router calibrates on slices of the chunk
//     as SearchBatch would (router.calibrate, auto.go); the rest of that
//     chunk is the first, partial chunk of the first stream
//     (StreamOptions.first), so that its pipeline starts at once;
//   - the first stream (firstStream) is the processor whose stream's
//     upper bound is below the other's lower bound (streamBounds: batch
//     times above; the CPU's marginal time, the GPU's time over the
//     chunks it keeps in flight below), else, as a short probe
//     (trialChunks), the one whose bounds' geometric mean is lower;
//   - the winner streams in segments of up to maxSegment chunks, each
//     segment's steady rate (from its first chunk's emit to its last's, so
//     that a pipeline's fill does not count) measured as the processor's
//     stream time per query;
//   - the other processor gets a trial segment (trialChunks) only where it
//     could win — its stream measured within recheckMargin of the
//     winner's, or, never streamed, its stream's lower bound below the
//     winner's stream time — and only where the trial is cheap: at its
//     worst time per query (its stream's, or its stream's upper bound) it
//     would cost at most trialBudget of the rest of the stream's time on
//     the winner, and the winner has streamed recheckEvery chunks since
//     the last trial. A processor measured clearly slower is not tried
//     again; on a short stream a dear trial does not pay and none runs.
//
// Each segment refreshes its processor's stream time, so a winner that
// slows down loses the next segments once it is measured slower than the
// other's last stream time. Segments end at chunk boundaries and all but
// the one after a calibration start at one, so emit sees the stream's own
// chunks, in order (the calibrated chunk in two pieces), and Answered's
// pieces keep their offsets; the answers are the processors' (the GPU's
// equal the CPU's). The SearchBatch path's split of
// one batch between both processors (auto_split.go) stays for batches
// (qp serve, SearchBatch callers); a stream runs each chunk on one
// processor.

// segRouter is streamPlan's choice of calibrating on the rest of a chunk
// (router.calibrate); procCPU and procGPU name the processors' own
// streams.
const segRouter = 2

const (
	// maxSegment bounds a segment (chunks), so that the rates refresh.
	maxSegment = 64
	// trialBudget: a trial segment runs only where, at the other
	// processor's worst measured or bounded time per query, it would cost
	// at most this share of the rest of the stream's time on the winner.
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
	per      [2]float64 // steady seconds per query of each processor's stream (EWMA; 0: never streamed)
	queries  [2]uint64  // queries answered in stream segments
	segments [2]uint64
	trials   uint64 // segments run as trials of the processor not winning
	since    int    // chunks the winner streamed since the last trial
}

// procStream runs a segment of a stream on one processor as its own
// stream does (StreamWith's contract: emit sees each chunk once, in
// order).
type procStream func(ctx context.Context, qs []engine.Query, opt engine.Options, so StreamOptions,
	emit func(lo int, out []engine.Response) error) error

// streamPlan picks how the next segment of a stream of mode key runs,
// with rest queries left in chunks of chunk (decisions for bucket b, the
// chunk's): segRouter (calibrate on the rest of the chunk), or a
// processor's stream and the segment's length in chunks (a partial chunk
// at its start counts as one). gain is the best speed-up of the GPU's
// stream over its batches (the chunks it keeps in flight).
func (r *router) streamPlan(key, b, chunk, rest int, gain float64) (kind, chunks int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &r.modes[key]
	st := &m.stream
	left := (rest + chunk - 1) / chunk
	seg := min(left, maxSegment)
	if left-seg < maxSegment/4 {
		seg = left // no short tail segment: its rate would be a small batch's
	}
	n := min(chunk, rest)
	var w int // the winner: the processor whose stream measured faster
	switch {
	case st.per[procCPU] == 0 && st.per[procGPU] == 0:
		if _, decided := r.decide(m, b); !decided && !streamReady(m, b) {
			return segRouter, 1
		}
		w, sure := r.firstStream(m, b, n, gain)
		if !sure {
			// A probe: the other processor's trial is judged against it.
			return w, min(seg, trialChunks[w])
		}
		return w, seg
	case st.per[procCPU] == 0, st.per[procGPU] > 0 && st.per[procGPU] < st.per[procCPU]:
		w = procGPU
	}
	o, wt := 1-w, st.per[w]
	// Could the other processor win (or, streamed and close, have become
	// faster), and would its trial's worst case (its time per query at
	// most pess) cost at most trialBudget of the rest's time on the
	// winner?
	could, pess := false, 0.0
	if st.per[o] > 0 {
		could = st.since >= recheckEvery && st.per[o] < recheckMargin*wt
		pess = st.per[o]
	} else {
		var lo float64
		lo, pess = r.streamBounds(m, o, b, n, gain)
		could = lo > 0 && lo < wt
	}
	if !could || float64(min(trialChunks[o]*chunk, rest))*max(pess-wt, 0) > trialBudget*float64(rest)*wt {
		return w, seg
	}
	st.trials++
	st.since = 0
	return o, trialChunks[o]
}

// streamTop is the bucket of the largest GPU calibration slice a stream
// needs (1,024 queries): with both processors' marginal times measured,
// the streams' bounds (streamBounds) choose the first stream or a probe,
// and the measured streams do the rest. The batch router's next GPU slice,
// 4,096 queries, ran at a fraction of the GPU's stream rate (its time
// per query still falls to 16,384: H100, GCIDE known-item AND 2.47 µs at
// 4,096, 0.99 at 16,384) and cost a short stream most of its calibration.
const streamTop = 10

// streamReady says whether a stream's calibration at bucket b has what
// firstStream needs: the GPU measured at streamTop (or just below b) and
// both processors' marginal times. r.mu is held.
func streamReady(m *modeCosts, b int) bool {
	top := min(streamTop, b-1)
	measured := false
	for i := top; i < b; i++ {
		measured = measured || m.cost[procGPU][i] > 0
	}
	return measured && marginal(m, procCPU, b) > 0 && marginal(m, procGPU, b) > 0
}

// streamBounds bounds processor p's stream time per query in chunks of n
// queries (bucket b) from its batch measurements: from above by its batch
// time (linear: a stream is no slower than its batches); from below, for
// the CPU by its marginal time (the continuous stream pays a batch's start
// once), for the GPU by its per-query time (exact, or its marginal time)
// divided by gain (two chunks in flight at best halve it). 0: never
// measured. r.mu is held.
func (r *router) streamBounds(m *modeCosts, p, b, n int, gain float64) (lo, hi float64) {
	lo, hi = r.perQuery(m, p, b), linear(m, p, b, n)
	if p == procGPU {
		lo /= gain
	} else if mg := marginal(m, p, b); mg > 0 {
		lo = min(lo, mg)
	}
	return lo, max(hi, lo)
}

// firstStream picks the processor whose stream a mode's first stream
// starts on, once the batch measurements decide (router.decide): sure
// where its stream's upper bound is below the other's lower bound
// (streamBounds); else the one whose bounds' geometric mean is lower, as
// a probe (the bounds overlap where the GPU's batches lose but its
// pipeline may win: GCIDE TREC'06 OR on an H100, one chunk at a time at
// most the CPU's rate, two in flight up to twice it). r.mu is held.
func (r *router) firstStream(m *modeCosts, b, n int, gain float64) (proc int, sure bool) {
	cLo, cHi := r.streamBounds(m, procCPU, b, n, gain)
	gLo, gHi := r.streamBounds(m, procGPU, b, n, gain)
	switch {
	case gHi <= cLo:
		return procGPU, true
	case cHi <= gLo:
		return procCPU, true
	case gLo*gHi < cLo*cHi:
		return procGPU, false
	}
	return procCPU, false
}

// linear is processor p's per-query time for a batch of n (in bucket b)
// in the model T = a + marginal·n fitted to its largest measurement below
// b: its exact time where it has one, else at most its upper bound
// (router.estimate). The small calibration slices' per-query time is
// mostly their fixed part; this extrapolation is the trial's cost
// estimate. r.mu is held.
func linear(m *modeCosts, p, b, n int) float64 {
	cs, ns := &m.cost[p], &m.size[p]
	if cs[b] > 0 {
		return cs[b]
	}
	lo := marginal(m, p, b)
	for i := b - 1; i >= 0; i-- {
		if cs[i] > 0 {
			if lo == 0 || float64(n) <= ns[i] {
				return cs[i]
			}
			return min(cs[i], (cs[i]*ns[i]+lo*(float64(n)-ns[i]))/float64(n))
		}
	}
	return 0
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
	if st.per[p] == 0 {
		st.per[p] = s.per
	} else {
		st.per[p] = (1-ewma)*st.per[p] + ewma*s.per
	}
	if st.per[1-p] == 0 || st.per[p] <= st.per[1-p] {
		st.since += s.chunks
	}
}

// stream answers qs in chunks on the processors' own streams (procs),
// in segments chosen by streamPlan; emit and so as StreamWith's, except
// that the chunk whose calibration decided is emitted in two pieces: the
// calibration's slices, then the rest on the winner's stream.
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
	b := bucketOf(min(chunk, len(qs))) // the size every decision is made for
	gain := float64(max(so.InFlight, 1))
	var cal []engine.Response // the calibration chunk's responses
	for lo := 0; lo < len(qs); {
		kind, nch := r.streamPlan(key, b, chunk, len(qs)-lo, gain)
		if kind == segRouter {
			// Calibrate on slices of the rest of this chunk until the
			// measurements decide; the rest goes to the winner's stream.
			hi := min((lo/chunk+1)*chunk, len(qs))
			if cal == nil {
				cal = newResponses(min(chunk, len(qs)), so.ResultCap)
			}
			from := time.Now()
			k, err := r.calibrate(ctx, key, b, qs[lo:hi], opt, cal[:hi-lo])
			if err != nil {
				return err
			}
			if err := emitTraced(emit, so.Trace, lo, cal[:k], from); err != nil {
				return err
			}
			lo += k
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

// calibrate answers slices of qs (the rest of a chunk of a stream of mode
// key) through router.run, as plan sizes them (planAt), until the measurements
// decide between the processors at bucket b or suffice for the streams'
// bounds (streamReady), and returns how many it answered: all of qs when
// neither happened.
func (r *router) calibrate(ctx context.Context, key, b int, qs []engine.Query, opt engine.Options, out []engine.Response) (int, error) {
	lo := 0
	for lo < len(qs) {
		r.mu.Lock()
		m := &r.modes[key]
		p, n, decided := r.planAt(m, b, len(qs)-lo)
		ready := streamReady(m, b)
		r.mu.Unlock()
		if decided || ready {
			break
		}
		if err := r.run(ctx, key, p, qs[lo:lo+n], opt, out[lo:lo+n]); err != nil {
			return lo, err
		}
		lo += n
	}
	return lo, nil
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
	if st.trials > 0 {
		s += fmt.Sprintf(", %d trials", st.trials)
	}
	return s
}
