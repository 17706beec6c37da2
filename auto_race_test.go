package qp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/topk"
)

// simRace is router.race for the fakes of auto_test.go on clk: an event
// simulation of raceLive's searchers (the GPU's so.InFlight pieces in
// flight, the CPU's one) under the same racePolicy, in virtual time. A
// CPU piece is its batch's work (cpu.cost: its batch start each time); a
// GPU piece in flight beside k-1 others k·pipe times its batch's work
// (its stream's throughput, fakeProc.stream), one alone its batch's; a
// processor's pieces progress at 1/(1+contend) while the other processor
// has a piece in flight (the host's cores shared by the GPU's host
// preparation and the CPU's workers), at full speed otherwise; the GPU's
// first k pieces (its pipeline's fill) take fakeProc.fill times their
// time (with fakeProc.stagger, the j-th (j+1)/k of it). As raceLive, a
// searcher judges the other processor before it takes a piece
// (racePolicy.judge) and first re-runs its earliest piece in flight worth
// it (racePolicy.rerun; idle once the race's queries are all taken: the
// simulation has no buffers to run out of); the
// first copy of a piece to end fills it, the other is cancelled: it ends
// at once, or after its processor's fakeProc.lag of work at most (the
// GPU's host preparation, which a cancel does not stop), contending
// meanwhile. The clock advances by the race's length (its last copy's
// end); the pieces are then emitted in order with their fillers'
// answers.
func simRace(clk *vclock, cpu, gpu *fakeProc, contend float64) raceFunc {
	procs := [2]*fakeProc{procCPU: cpu, procGPU: gpu}
	return func(ctx context.Context, pol *racePolicy, qs []engine.Query, lo, limit int, opt engine.Options, so StreamOptions,
		emit func(lo int, out []engine.Response) error) (int, error) {
		type searcher struct {
			p         int
			n         int     // its copy's queries, 0: idle
			slot      int     // its copy's piece
			rem       float64 // its copy's work left (seconds alone)
			cancelled bool
			finished  bool
			watching  bool // idle, looking again every raceWatch
		}
		var ss []*searcher
		for range pol.k[procGPU] {
			ss = append(ss, &searcher{p: procGPU})
		}
		ss = append(ss, &searcher{p: procCPU})
		type piece struct {
			lo, n, owner, by int
			from             time.Duration
			rerun, filled    bool
		}
		var pieces []piece
		cursor, now, gpuPieces := lo, time.Duration(0), 0
		work := func(p, lo, n int) float64 { // a copy's time alone, seconds
			f := procs[p]
			t := f.cost(qs[lo].Mode, n).Seconds()
			if k := pol.k[p]; p == procGPU && k >= 2 && f.pipe > 0 {
				t *= float64(k) * f.pipe
			}
			if p == procGPU && f.fill > 0 && gpuPieces < pol.k[procGPU] {
				t *= f.fill // its pipeline's fill
				if f.stagger {
					// The device serves the pieces in flight in turn:
					// the first ends first.
					t *= float64(gpuPieces+1) / float64(pol.k[procGPU])
				}
			}
			if p == procGPU {
				gpuPieces++
			}
			return t
		}
		start := func(s *searcher) {
			pol.judge(1-s.p, now)
			if !pol.stopped[s.p] {
				for j := range pieces {
					pc := &pieces[j]
					if pc.filled || pc.rerun || pc.owner == s.p || !pol.rerun(s.p, pc.n, pc.from, now, cursor >= limit) {
						continue
					}
					pc.rerun = true
					s.n, s.slot, s.rem, s.cancelled = pc.n, j, work(s.p, pc.lo, pc.n), false
					return
				}
			}
			n := pol.piece(s.p, limit-cursor)
			if cursor >= limit || !pol.take(s.p, n, len(qs)-cursor, now) {
				// liveRace.watch: an idle CPU looks again every
				// raceWatch while the other's pieces are unanswered.
				s.watching = cursor >= limit && !pol.stopped[s.p] && pol.k[s.p] == 1 && !pol.noRerun
				if s.watching {
					s.watching = false
					for _, pc := range pieces {
						s.watching = s.watching || (!pc.filled && !pc.rerun && pc.owner != s.p)
					}
				}
				s.finished = !s.watching
				return
			}
			pieces = append(pieces, piece{lo: cursor, n: n, owner: s.p, from: now})
			s.n, s.slot, s.rem, s.cancelled = n, len(pieces)-1, work(s.p, cursor, n), false
			cursor += n
		}
		for {
			for _, s := range ss {
				if !s.finished && s.n == 0 {
					start(s)
				}
			}
			var flying [2]bool
			for _, s := range ss {
				flying[s.p] = flying[s.p] || s.n > 0
			}
			if !flying[procCPU] && !flying[procGPU] {
				break
			}
			speed := [2]float64{1, 1}
			if flying[procCPU] && flying[procGPU] {
				speed = [2]float64{1 / (1 + contend), 1 / (1 + contend)}
			}
			dt := math.Inf(1)
			for _, s := range ss {
				if s.n > 0 {
					dt = min(dt, s.rem/speed[s.p])
				}
				if s.watching && s.n == 0 {
					dt = min(dt, raceWatch.Seconds())
				}
			}
			now += time.Duration(dt * 1e9)
			for _, s := range ss {
				if s.n == 0 {
					continue
				}
				s.rem -= dt * speed[s.p]
				procs[s.p].busy += time.Duration(dt * 1e9)
				if s.rem > 1e-12 {
					continue
				}
				pc := &pieces[s.slot]
				if pc.filled {
					pol.abandoned(s.p, s.n, now)
					s.n = 0
					continue
				}
				pc.filled, pc.by = true, s.p
				pol.answered(s.p, s.n, now)
				procs[s.p].streamed += s.n
				s.n = 0
				for _, o := range ss { // the other copy: cancelled
					if o.n > 0 && o.slot == s.slot && o != s && !o.cancelled {
						o.cancelled = true
						if o.rem = min(o.rem, procs[o.p].lag.Seconds()); o.rem <= 0 {
							pol.abandoned(o.p, o.n, now)
							o.n = 0
						}
					}
				}
			}
		}
		clk.t = clk.t.Add(now)
		for _, pc := range pieces {
			out := make([]engine.Response, pc.n)
			procs[pc.by].answer(qs[pc.lo:pc.lo+pc.n], out)
			if err := emit(pc.lo, out); err != nil {
				return pc.lo, err
			}
		}
		return cursor, ctx.Err()
	}
}

// raceFillSim is the GPU fakes' pipeline fill in TestRaceFill: its first
// pieces × their time, so that the race measures its first 16,384
// queries at ~3× its stream's rate beside the CPU's pieces (run 7:
// 16,384 at 2.9×; here 8,192 at 3.3×).
const raceFillSim = 1.7

// raceContend is the fakes' contention in a race (simRace).
const raceContend = 0.2

// TestRacePolicy: the race's rules on hand-made timelines (durations
// since the race began; the GPU keeps two pieces in flight).
func TestRacePolicy(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	// The GPU answers OR 3× faster than the CPU's quarter chunks.
	s := newRacePolicy(2, 16384)
	if !s.take(procGPU, 1000, 10000, 0) || !s.take(procGPU, 1000, 9000, 0) || !s.take(procCPU, 250, 8000, 0) {
		t.Fatal("a processor with nothing measured was refused its first piece")
	}
	s.answered(procGPU, 1000, ms(2)) // upper bound 2 µs a query
	// The CPU has answered nothing after 2 ms on 250 queries: at least
	// 8 µs a query, surely slower.
	if s.take(procCPU, 250, 7750, ms(2)) || !s.stopped[procCPU] {
		t.Error("the CPU, at least 4× slower than the GPU's upper bound, took another piece")
	}
	if !s.take(procGPU, 1000, 7750, ms(2)) {
		t.Error("the faster GPU was refused a piece")
	}
	if s.take(procCPU, 250, 6750, ms(3)) {
		t.Error("a stopped processor took a piece")
	}

	// Close processors (the CPU 1 µs, the GPU 1.05 µs a query) race on;
	// near the end the slower takes no piece it would finish after the
	// faster's rest.
	s = newRacePolicy(2, 16384)
	s.take(procGPU, 1000, 100000, 0)
	s.take(procGPU, 1000, 99000, 0)
	s.take(procCPU, 1000, 98000, 0)
	s.answered(procCPU, 1000, ms(1))
	s.take(procCPU, 1000, 97000, ms(1))
	s.answered(procCPU, 1000, ms(2))
	s.answered(procGPU, 1000, ms(2.05))
	s.answered(procGPU, 1000, ms(2.1))
	// Its two pieces were its pipeline's fill: no rate yet, its upper
	// bound 1.05 µs a query (2,000 queries in 2.1 ms).
	if r, u := s.rate(procGPU), s.upper(procGPU); r != 0 || u < 1.04e-6 || u > 1.06e-6 {
		t.Fatalf("the GPU's rate %g upper bound %g after its fill, want 0 and 1.05e-6", r, u)
	}
	if !s.take(procGPU, 1000, 96000, ms(2.1)) || !s.take(procCPU, 1000, 95000, ms(2.1)) {
		t.Fatal("processors within raceMargin of each other stopped racing")
	}
	// 1,500 queries left: the GPU's piece (two in flight: 2.1 ms) would
	// end after the CPU's 1.5 ms for all of them.
	if s.take(procGPU, 1000, 1500, ms(2.2)) {
		t.Error("the slower GPU took a piece it would finish last")
	}
	if !s.take(procCPU, 1000, 1500, ms(3)) {
		t.Error("the faster CPU was refused a piece near the end")
	}

	// The GPU surely slower (AND): once its pieces are answered, the CPU
	// stops too, so that its own stream takes the rest.
	s = newRacePolicy(2, 16384)
	s.take(procGPU, 4000, 100000, 0)
	s.take(procGPU, 4000, 96000, 0)
	for i := range 8 {
		s.take(procCPU, 1000, 92000-1000*i, ms(float64(i)*0.25))
		s.answered(procCPU, 1000, ms(float64(i+1)*0.25))
	}
	// The GPU's first piece at 3 µs a query: while it fills, its bound
	// (12 ms over its 8,000 queries taken, over raceFill) 0.5 µs, 2× the
	// CPU's 0.25.
	s.answered(procGPU, 4000, ms(12))
	if s.take(procGPU, 4000, 84000, ms(12)) {
		t.Error("the GPU, surely slower while it fills, took another piece")
	}
	if !s.take(procCPU, 1000, 84000, ms(12)) {
		t.Error("the CPU stopped while the GPU's piece was in flight")
	}
	s.answered(procCPU, 1000, ms(12.25))
	s.answered(procGPU, 4000, ms(13))
	if s.take(procCPU, 1000, 83000, ms(13)) {
		t.Error("the CPU raced on after the GPU stopped and answered its pieces")
	}
}

// sleepProc is a goroutine-safe backend for raceLive: each batch answers
// every query with a result naming it after sleeping per batch, and fails
// at the query with ID fail.
type sleepProc struct {
	name  string
	sleep time.Duration
	fail  string
}

func (f *sleepProc) Name() string { return f.name }

func (f *sleepProc) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	time.Sleep(f.sleep)
	for i, q := range qs {
		if q.ID == f.fail {
			return errors.New("failed at " + q.ID)
		}
		id, _ := strconv.Atoi(q.ID)
		out[i] = engine.Response{Results: append(out[i].Results[:0], topk.Result{Doc: uint32(id)})}
	}
	return ctx.Err()
}

// TestRaceLive: raceLive on two real-time backends (a CPU whose quarter
// chunks take 20 ms, a GPU whose chunks take 1 ms, so that the GPU's
// answered pieces wait for the CPU's in the response buffers) emits every
// piece in order with its own answers up to where it stopped; a
// backend's error and an emit's error end it with that error.
func TestRaceLive(t *testing.T) {
	qs := queriesOf(40*64, engine.Or)
	run := func(cpu, gpu *sleepProc, emitErr error) (int, int, error) {
		r := newRouter(cpu, gpu, 16)
		next := 0
		hi, err := r.raceLive(context.Background(), newRacePolicy(2, 64), qs, 0, len(qs), engine.Options{}, StreamOptions{Chunk: 64},
			func(lo int, out []engine.Response) error {
				if lo != next {
					return fmt.Errorf("piece at %d emitted, want %d", lo, next)
				}
				for i := range out {
					if out[i].Results[0].Doc != uint32(lo+i) {
						return fmt.Errorf("query %d answered %+v", lo+i, out[i])
					}
				}
				next += len(out)
				return emitErr
			})
		return hi, next, err
	}
	hi, next, err := run(&sleepProc{name: "cpu", sleep: 20 * time.Millisecond}, &sleepProc{name: "gpu", sleep: time.Millisecond}, nil)
	if err != nil || hi != next || hi <= 0 {
		t.Fatalf("race: stopped at %d, emitted %d: %v", hi, next, err)
	}
	t.Logf("race stopped at %d of %d", hi, len(qs))
	_, _, err = run(&sleepProc{name: "cpu", fail: "10"}, &sleepProc{name: "gpu", fail: "10"}, nil)
	if err == nil || err.Error() != "failed at 10" {
		t.Errorf("a backend's error: %v", err)
	}
	stop := errors.New("stop")
	_, next, err = run(&sleepProc{name: "cpu"}, &sleepProc{name: "gpu"}, stop)
	if err != stop || next == 0 {
		t.Errorf("an emit's error: %v after %d", err, next)
	}
}

// stallProc is a goroutine-safe backend for raceLive whose batches from
// the stall-th on (from 1) stall until their context is cancelled
// (stallAll; else only the stall-th), writing wrong answers first (a
// dropped copy's buffer must never be emitted); its other batches answer
// as sleepProc's after sleep.
type stallProc struct {
	sleepProc
	stall     int64
	stallAll  bool
	calls     atomic.Int64
	cancelled atomic.Int64 // stalled batches ended by their context
}

func (f *stallProc) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	if c := f.calls.Add(1); c < f.stall || (c > f.stall && !f.stallAll) {
		return f.sleepProc.SearchBatch(ctx, qs, opt, out)
	}
	for i := range out {
		out[i] = engine.Response{Results: append(out[i].Results[:0], topk.Result{Doc: math.MaxUint32})}
	}
	select {
	case <-ctx.Done():
		f.cancelled.Add(1)
		return ctx.Err()
	case <-time.After(time.Minute):
		return errors.New("stallProc: the stalled batch was never cancelled")
	}
}

// TestRaceRerun: a GPU 20× slower than the CPU whose second piece stalls
// (a straggler), or that answers none (all its pieces stall), is
// stopped while its pieces are in flight, and the CPU re-runs them (the
// second case once its buffers are all ahead of the emit; in a short
// stream, once it answered the rest, watching the GPU's pieces): every piece is
// emitted in order with the right answers (never a stalled copy's), the
// stalled copies are cancelled and dropped, and the race's goroutines
// all end (-race, no leak).
func TestRaceRerun(t *testing.T) {
	for _, c := range []struct {
		name     string
		stallAll bool
		n        int
	}{{"straggler", false, 40 * 64}, {"none answered", true, 40 * 64}, {"short stream", true, 2 * 64}} {
		t.Run(c.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			qs := queriesOf(c.n, engine.And)
			cpu := &sleepProc{name: "cpu", sleep: time.Millisecond}
			gpu := &stallProc{sleepProc: sleepProc{name: "gpu", sleep: 20 * time.Millisecond}, stall: 2, stallAll: c.stallAll}
			if c.stallAll {
				gpu.stall = 1
			}
			r := newRouter(cpu, gpu, 16)
			pol := newRacePolicy(2, 64)
			next := 0
			hi, err := r.raceLive(context.Background(), pol, qs, 0, len(qs), engine.Options{}, StreamOptions{Chunk: 64},
				func(lo int, out []engine.Response) error {
					if lo != next {
						return fmt.Errorf("piece at %d emitted, want %d", lo, next)
					}
					for i := range out {
						if out[i].Err != nil || out[i].Results[0].Doc != uint32(lo+i) {
							return fmt.Errorf("query %d answered %+v", lo+i, out[i])
						}
					}
					next += len(out)
					return nil
				})
			if err != nil || hi != next || hi <= 0 {
				t.Fatalf("race: stopped at %d, emitted %d: %v", hi, next, err)
			}
			stalled := int64(1)
			if c.stallAll {
				stalled = gpu.calls.Load()
			}
			if pol.reruns[procCPU] < int(stalled) || pol.dropped[procGPU] < int(stalled) || pol.reruns[procGPU] != 0 || gpu.cancelled.Load() != stalled {
				t.Errorf("re-runs %v, copies dropped %v, stalled batches cancelled %d of %d: want the CPU to re-run the GPU's stalled pieces",
					pol.reruns, pol.dropped, gpu.cancelled.Load(), stalled)
			}
			if pol.done[procCPU]+pol.done[procGPU] != hi || !pol.stopped[procGPU] {
				t.Errorf("answered %v of %d; the GPU stopped %v", pol.done, hi, pol.stopped[procGPU])
			}
			// Its stream time, recorded, keeps it the slower, also where
			// it answered none (racePolicy.measured).
			if g, c := pol.measured(procGPU), pol.measured(procCPU); c <= 0 || g < raceMargin*c*0.999 {
				t.Errorf("recorded: the GPU %.3g s a query, the CPU %.3g", g, c)
			}
			t.Logf("race stopped at %d of %d: %s", hi, len(qs), pol.String([2]string{"cpu", "gpu"}))
			checkNoLeak(t, before)
		})
	}
}

// helpProc is sleepProc that counts the calls of the between function
// in its batches' contexts (engine.WithBetween), as engine.CPU's workers
// make them.
type helpProc struct {
	sleepProc
	withHelp atomic.Int64 // batches whose context carried it
}

func (f *helpProc) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	if h := engine.Between(ctx); h != nil {
		f.withHelp.Add(1)
		h()
	}
	return f.sleepProc.SearchBatch(ctx, qs, opt, out)
}

// TestRaceHelp: the CPU's race pieces carry the router's help function
// (their workers run the GPU's host work between queries), the GPU's
// never; StreamOptions.RaceNoHelp leaves it out.
func TestRaceHelp(t *testing.T) {
	for _, off := range []bool{false, true} {
		qs := queriesOf(8*64, engine.Or)
		cpu := &helpProc{sleepProc: sleepProc{name: "cpu", sleep: time.Millisecond}}
		gpu := &helpProc{sleepProc: sleepProc{name: "gpu", sleep: time.Millisecond}}
		r := newRouter(cpu, gpu, 16)
		var helped atomic.Int64
		r.help = func() bool { helped.Add(1); return false }
		next := 0
		_, err := r.raceLive(context.Background(), newRacePolicy(2, 64), qs, 0, len(qs), engine.Options{}, StreamOptions{Chunk: 64, RaceNoHelp: off},
			func(lo int, out []engine.Response) error { next += len(out); return nil })
		if err != nil || next == 0 {
			t.Fatalf("RaceNoHelp %v: %v after %d", off, err, next)
		}
		c, g := cpu.withHelp.Load(), gpu.withHelp.Load()
		if g != 0 || (off && c != 0) || (!off && (c == 0 || helped.Load() != c)) {
			t.Errorf("RaceNoHelp %v: CPU batches with help %d (called %d), GPU's %d", off, c, helped.Load(), g)
		}
	}
}

// checkNoLeak fails when the number of goroutines does not come back to
// before (goroutines end asynchronously after their last signal, so it
// polls).
func checkNoLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines after the race, %d before:\n%s", runtime.NumGoroutine(), before, buf)
		}
		time.Sleep(time.Millisecond)
	}
}

// deviceBlock is a block of a device run that fakes are fitted to: its
// mode and each processor's stream alone, µs a query.
type deviceBlock struct {
	name         string
	mode         engine.Mode
	cpuUS, gpuUS float64
}

// deviceFakes are fakes fitted to the H200 host's streams (16 cores,
// GCIDE, 100,000 queries, Device CPU and Device GPU alone; BENCHMARKS.md,
// auto3): the CPU's stream cpuUS µs a query (a batch start of 60 µs, paid
// once by its stream), the GPU's a piece time a + b·n with a = 3 ms and
// two in flight at pipe 0.6, b fitted so that its stream is gpuUS µs a
// query.
func deviceFakes(m engine.Mode, cpuUS, gpuUS float64) (*vclock, *fakeProc, *fakeProc) {
	clk := &vclock{t: time.Unix(0, 0)}
	cpu := &fakeProc{name: "cpu", clk: clk, workers: 16, fixed: 60 * time.Microsecond}
	gpu := &fakeProc{name: "gpu", clk: clk, fixed: 3 * time.Millisecond, pipe: 0.6}
	us := func(x float64) time.Duration { return time.Duration(x * float64(time.Microsecond)) }
	cpu.per[m] = us(16 * cpuUS)
	gpu.per[m] = us(gpuUS/gpu.pipe - gpu.fixed.Seconds()*1e6/DefaultChunk)
	return clk, cpu, gpu
}

// TestRaceDeviceFit: the race on fakes fitted to the H200's GCIDE blocks
// (TREC'06 and known-item, ×10; deviceFakes), with the contention the
// device's routing lines show (each processor 1.4× slower while the
// other runs: TREC AND's CPU at 0.326 µs a query in the race against
// 0.236 alone), costs at most 8% over the faster processor's own stream
// on 100,000 queries and answers most on the faster one. The
// predictions per block are logged (BENCHMARKS.md, auto4).
func TestRaceDeviceFit(t *testing.T) {
	for _, c := range []deviceBlock{
		{"trec-and", engine.And, 0.236, 0.339},
		{"trec-or", engine.Or, 1.59, 0.492},
		{"trec-andor", engine.AndOr, 1.48, 0.757},
		{"known-and", engine.And, 3.45, 0.78},
		{"known-or", engine.Or, 5.4, 0.93},
		{"known-andor", engine.AndOr, 6.85, 1.39},
	} {
		t.Run(c.name, func(t *testing.T) {
			qs := queriesOf(100000, c.mode)
			clk, cpu, gpu := deviceFakes(c.mode, c.cpuUS, c.gpuUS)
			tc := aloneTime(t, clk, cpu, qs)
			tg := aloneTime(t, clk, gpu, qs)
			r := oneClockRouter(clk, cpu, gpu)
			r.race = simRace(clk, cpu, gpu, 0.4)
			ta := autoStreamTime(t, clk, r, cpu, gpu, qs)
			best := min(tc, tg)
			t.Logf("cpu %v gpu %v auto %v: faster/auto %.3f\n%s", tc, tg, ta, float64(best)/float64(ta), r.routing())
			if float64(ta) > 1.08*float64(best) {
				t.Errorf("auto %v, %.3f× the faster processor's %v", ta, float64(ta)/float64(best), best)
			}
			st := r.modes[c.mode].stream
			w := procCPU
			if tg < tc {
				w = procGPU
			}
			if st.queries[w] < st.queries[1-w] || st.races != 1 {
				t.Errorf("the faster processor (%d) answered %d of %d in %d races\n%s", w, st.queries[w], len(qs), st.races, r.routing())
			}
		})
	}
}

// TestRacePieces: the race's piece sizes: the CPU's first half its
// second; each doubles, up to a chunk, only once the other processor
// answered a piece; while undecided no piece takes more than a quarter
// of what is left (a short stream is shared); the GPU takes whole chunks
// once the CPU stopped. And the rules that end a race early: a
// processor 1.5× slower on first rates stops at once; both measured
// raceEnough pieces, the slower stops.
func TestRacePieces(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	const chunk = 16384
	s := newRacePolicy(2, chunk)
	if c, g := s.piece(procCPU, 100000), s.piece(procGPU, 100000); c != chunk/raceCPUPiece || g != chunk/raceGPUPiece {
		t.Fatalf("first pieces: cpu %d gpu %d", c, g)
	}
	if n := s.piece(procGPU, 3000); n != 750 {
		t.Errorf("the GPU's first piece of a 3,000-query stream: %d, want a quarter", n)
	}
	s.take(procCPU, 512, 100000, 0)
	s.answered(procCPU, 512, ms(0.5))
	if n := s.piece(procCPU, 100000); n != 1024 {
		t.Errorf("the CPU's second piece %d, want 1,024 (its first, the cold start, half of it)", n)
	}
	s.take(procCPU, 1024, 99488, ms(0.5))
	s.answered(procCPU, 1024, ms(0.8))
	if n := s.piece(procCPU, 100000); n != 1024 {
		t.Errorf("the CPU's piece grew to %d before the GPU answered one", n)
	}
	s.take(procGPU, 4096, 98464, 0)
	s.take(procGPU, 4096, 94368, 0)
	s.answered(procGPU, 4096, ms(1))
	if n := s.piece(procGPU, 100000); n != 8192 {
		t.Errorf("the GPU's piece after one answered: %d, want 8,192", n)
	}

	// The GPU's first rates 2× the CPU's: clearly slower.
	s = newRacePolicy(2, chunk)
	s.take(procCPU, 512, 100000, 0)
	s.answered(procCPU, 512, ms(0.2))
	s.take(procCPU, 1024, 99488, ms(0.2))
	s.take(procGPU, 4096, 98464, 0)
	s.take(procGPU, 4096, 94368, 0)
	s.answered(procCPU, 1024, ms(0.45)) // 0.24 µs a query
	s.answered(procGPU, 4096, ms(1.9))
	s.answered(procGPU, 4096, ms(2)) // 0.24 µs a query… upper bound
	s.take(procCPU, 2048, 90272, ms(2))
	s.answered(procCPU, 2048, ms(2.5))
	// The CPU's rate 0.244 µs a query (after its first piece), the
	// GPU's 0.244: within the margin.
	if !s.take(procGPU, 8192, 88224, ms(2.5)) {
		t.Fatal("the GPU within the margin stopped")
	}
	s.answered(procGPU, 8192, ms(8)) // 16,384 in 7.5 ms busy: 0.46 µs a query, 1.9× the CPU's
	if s.take(procGPU, 16384, 80032, ms(8)) || !s.stopped[procGPU] {
		t.Errorf("the GPU %.2f× slower on its rates raced on", s.rate(procGPU)/s.rate(procCPU))
	}
	if s.take(procCPU, 4096, 80032, ms(8)) {
		t.Error("the CPU raced on after the GPU stopped and answered its pieces")
	}

	// The CPU stopped: the GPU's pieces are whole chunks.
	s = newRacePolicy(2, chunk)
	s.stopped[procCPU] = true
	if n := s.piece(procGPU, 100000); n != chunk {
		t.Errorf("the GPU's piece after the CPU stopped: %d, want a chunk", n)
	}

	// Close processors end the race once both answered raceEnough
	// pieces: the slower stops, and the race with it.
	s = newRacePolicy(1, chunk)
	rest, at := 1000000, 0.0
	for s.comps[procCPU] < 20 {
		for p, per := range [2]float64{procCPU: 1.0, procGPU: 1.05} { // ms a piece
			if !s.take(p, 1000, rest, ms(at)) {
				if p != procGPU || s.comps[procGPU] < raceEnough[procGPU] || s.comps[procCPU] < raceEnough[procCPU] {
					t.Fatalf("processor %d stopped after %v pieces", p, s.comps)
				}
				// The GPU's pieces all answered: the race ends, the
				// CPU's own stream takes the rest.
				if s.take(procCPU, 1000, rest, ms(at)) || s.rate(procCPU) >= s.rate(procGPU) {
					t.Errorf("both measured (rates %g, %g): the CPU raced on", s.rate(procCPU), s.rate(procGPU))
				}
				return
			}
			s.answered(p, 1000, ms(at+per))
			rest -= 1000
		}
		at += 1.05
	}
	t.Errorf("both measured %v pieces, neither stopped", s.comps)
}

// TestRaceFill: run 7 (H200, GCIDE TREC'06 AND+OR ×10; BENCHMARKS.md,
// auto5): the GPU's first race pieces, its pipeline's fill beside the
// CPU's pieces, cost ~3× its stream's rate (16,384 queries at 2.34 µs a
// query against 0.82 alone), and the rule that judged the GPU by its
// fill (racePolicy.fillRate) stopped it: the CPU, half the GPU's speed,
// answered most. Judged by its pipelined rate, the GPU answers most and
// the run is within 0.8 of the GPU's own stream (the fill paid); TREC AND (the CPU 1.6×
// faster, run 7: 4.66M against 2.84M queries a second) still chooses
// the CPU.
func TestRaceFill(t *testing.T) {
	for _, c := range []struct {
		name         string
		mode         engine.Mode
		cpuUS, gpuUS float64 // run 7's streams alone, µs a query
	}{
		{"trec-andor", engine.AndOr, 1.596, 0.821},
		{"trec-and", engine.And, 0.2145, 0.352},
		{"trec-or", engine.Or, 1.394, 0.515},
		{"known-and", engine.And, 3.75, 0.782},
	} {
		for _, old := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/old=%v", c.name, old), func(t *testing.T) {
				qs := queriesOf(100000, c.mode)
				clk, cpu, gpu := deviceFakes(c.mode, c.cpuUS, c.gpuUS)
				gpu.fill = raceFillSim
				tc := aloneTime(t, clk, cpu, qs)
				tg := aloneTime(t, clk, gpu, qs)
				r := oneClockRouter(clk, cpu, gpu)
				sim := simRace(clk, cpu, gpu, 0.4)
				r.race = func(ctx context.Context, pol *racePolicy, qs []engine.Query, lo, limit int, opt engine.Options, so StreamOptions,
					emit func(lo int, out []engine.Response) error) (int, error) {
					pol.fillRate = old
					return sim(ctx, pol, qs, lo, limit, opt, so, emit)
				}
				ta := autoStreamTime(t, clk, r, cpu, gpu, qs)
				best := min(tc, tg)
				st := r.modes[c.mode].stream
				t.Logf("cpu %v gpu %v auto %v: faster/auto %.3f\n%s", tc, tg, ta, float64(best)/float64(ta), r.routing())
				w := procCPU
				if tg < tc {
					w = procGPU
				}
				chose := st.queries[w] >= st.queries[1-w]
				if old && c.name == "trec-andor" {
					// The old rule's wrong choice, as on the device.
					if chose {
						t.Errorf("the fill rule chose the GPU: the simulation does not reproduce run 7\n%s", r.routing())
					}
					return
				}
				if old {
					return
				}
				if !chose || st.races != 1 {
					t.Errorf("the faster processor (%d) answered %d of %d in %d races\n%s", w, st.queries[w], len(qs), st.races, r.routing())
				}
				// The fill is paid on either rule: the run within
				// 0.8 of the faster processor (the device's criterion).
				if float64(ta) > 1.25*float64(best) {
					t.Errorf("auto %v, %.3f× the faster processor's %v", ta, float64(ta)/float64(best), best)
				}
			})
		}
	}
}

// raceAB runs qs through a router on the fakes with the race simulated
// (simRace, contend) and the policy adjusted by set, and returns the
// virtual time of the stream and the router's routing line.
func raceAB(t *testing.T, clk *vclock, cpu, gpu *fakeProc, contend float64, qs []engine.Query, set func(*racePolicy)) (time.Duration, string) {
	t.Helper()
	r := oneClockRouter(clk, cpu, gpu)
	sim := simRace(clk, cpu, gpu, contend)
	r.race = func(ctx context.Context, pol *racePolicy, qs []engine.Query, lo, limit int, opt engine.Options, so StreamOptions,
		emit func(lo int, out []engine.Response) error) (int, error) {
		set(pol)
		return sim(ctx, pol, qs, lo, limit, opt, so, emit)
	}
	ta := autoStreamTime(t, clk, r, cpu, gpu, qs)
	return ta, r.routing()
}

// TestRaceRerunAB: lead27's race (racePolicy.noRerun: no re-runs, no
// judge) against this one, on fakes fitted to the H200's streams alone
// of 2026-11-28 (GCIDE, TREC'06 and known-item ×10, 100,000 queries;
// µs a query), the GPU's fill as TestRaceFill's but staggered (its first
// piece ends at half its fill: run s27's 5.4 ms and 8.1 ms for its two
// 4,096-query pieces), so that, as on the device, it takes a third piece
// before it is judged slower in TREC AND; a cancelled GPU copy runs on
// 2 ms (its host preparation). The predicted auto / faster per block and
// contention, and on a short stream (3,000 queries), is logged
// (BENCHMARKS.md, auto6); the re-runs never cost more than 1% and, in
// TREC AND, re-run the GPU's straggler.
func TestRaceRerunAB(t *testing.T) {
	for _, c := range []deviceBlock{
		{"trec-and", engine.And, 0.208, 0.400},
		{"trec-or", engine.Or, 1.481, 0.528},
		{"trec-andor", engine.AndOr, 1.636, 0.740},
		{"known-and", engine.And, 3.78, 0.833},
		{"known-or", engine.Or, 5.62, 1.033},
		{"known-andor", engine.AndOr, 6.89, 1.412},
	} {
		for _, sc := range []struct {
			contend float64
			n       int
		}{{0.4, 100000}, {1, 100000}, {2, 100000}, {1, 3000}} {
			contend := sc.contend
			var ratio [2]float64
			var reruns [2]*[2]int
			for i, off := range []bool{true, false} {
				qs := queriesOf(sc.n, c.mode)
				clk, cpu, gpu := deviceFakes(c.mode, c.cpuUS, c.gpuUS)
				gpu.fill, gpu.stagger, gpu.lag = raceFillSim, true, 2*time.Millisecond
				tc := aloneTime(t, clk, cpu, qs)
				tg := aloneTime(t, clk, gpu, qs)
				ta, routing := raceAB(t, clk, cpu, gpu, contend, qs, func(p *racePolicy) {
					p.noRerun = off
					reruns[i] = &p.reruns // the stream's last race's
				})
				ratio[i] = float64(min(tc, tg)) / float64(ta)
				t.Logf("%s %d queries contend %g noRerun %v: %.3f\n%s", c.name, sc.n, contend, off, ratio[i], routing)
			}
			t.Logf("%s %d queries contend %g: auto/faster %.3f -> %.3f", c.name, sc.n, contend, ratio[0], ratio[1])
			if reruns[0][procCPU]+reruns[0][procGPU] != 0 || reruns[1][procGPU] != 0 {
				t.Errorf("%s contend %g: re-runs %v with noRerun, %v without; the GPU re-ran", c.name, contend, *reruns[0], *reruns[1])
			}
			if c.name == "trec-and" && sc.n == 100000 && (reruns[1][procCPU] == 0 || ratio[1] <= ratio[0]) {
				t.Errorf("%s contend %g: the CPU re-ran %d of the GPU's pieces: %.3f -> %.3f", c.name, contend, reruns[1][procCPU], ratio[0], ratio[1])
			}
			if ratio[1] < ratio[0]-0.01 {
				t.Errorf("%s contend %g: the re-runs cost: %.3f -> %.3f", c.name, contend, ratio[0], ratio[1])
			}
		}
	}
}

// TestRaceBufLimit: the GPU makes up to its race share of response
// buffers while the CPU races, and no more than its own stream keeps
// (k+1) once the race goes on as its stream: the CPU stopped with none of
// its pieces in flight.
func TestRaceBufLimit(t *testing.T) {
	pol := newRacePolicy(2, 64)
	lr := newLiveRace(context.Background(), pol, queriesOf(640, engine.Or), 0, 640, engine.Options{}, StreamOptions{Chunk: 64})
	if got, want := lr.bufLimit(procGPU), pol.k[procGPU]+raceAhead/4; got != want {
		t.Errorf("racing: the GPU's buffers %d, want %d", got, want)
	}
	pol.take(procCPU, 2, 640, 0)
	pol.stopped[procCPU] = true
	if got := lr.bufLimit(procGPU); got != pol.k[procGPU]+raceAhead/4 {
		t.Errorf("the CPU stopped, its piece in flight: the GPU's buffers %d", got)
	}
	pol.answered(procCPU, 2, time.Millisecond)
	if got := lr.bufLimit(procGPU); got != pol.k[procGPU]+1 {
		t.Errorf("the race going on as the GPU's stream: its buffers %d, want %d", got, pol.k[procGPU]+1)
	}
	if got := lr.bufLimit(procCPU); got != pol.k[procCPU]+raceAhead {
		t.Errorf("the CPU's buffers %d", got)
	}
	// Buffers made before the limit fell stay in use; buffer makes no
	// more past it.
	lr.allocated[procGPU] = pol.k[procGPU] + 2
	lr.free[procGPU] <- newResponses(64, 0)
	if out := lr.buffer(procGPU); len(out) != 64 || lr.allocated[procGPU] != pol.k[procGPU]+2 {
		t.Errorf("buffer: %d responses, %d made", len(out), lr.allocated[procGPU])
	}
}
