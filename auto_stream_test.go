package qp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
)

// The auto stream is tested with the simulated processors of auto_test.go
// on one virtual clock, each also given a stream of its own as Device CPU
// and Device GPU run one (fakeProc.stream): the CPU's continuous stream
// pays its batch start once and then ⌈n/workers⌉ per-query times per
// chunk; the GPU's stream with two chunks in flight pays its first chunk
// whole and each later one times pipe (one chunk's host preparation beside
// another's device work: H100, GCIDE TREC'06 OR 1.47-2.23M q/s with two in
// flight against 1.15-1.21M with one, so pipe ≈ 0.55-0.8). Simulated
// costs, not measurements: only the routing is under test.

// stream is f's own stream of qs (StreamWith's contract): chunk by chunk,
// the clock advanced by the chunk's time, then emit.
func (f *fakeProc) stream(ctx context.Context, qs []engine.Query, opt engine.Options, so StreamOptions,
	emit func(lo int, out []engine.Response) error) error {
	chunk := so.Chunk
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	split := newChunking(len(qs), chunk, so.first)
	for c := range split.count() {
		lo, hi := split.bounds(c)
		out := make([]engine.Response, hi-lo)
		f.answer(qs[lo:hi], out)
		n, m := hi-lo, qs[lo].Mode
		var t time.Duration
		if f.workers > 0 {
			t = time.Duration((n+f.workers-1)/f.workers) * f.per[m]
			if lo == 0 {
				t += f.fixed
			}
		} else {
			t = f.fixed + time.Duration(n)*f.per[m]
			if lo > 0 && so.InFlight >= 2 && f.pipe > 0 {
				t = time.Duration(float64(t) * f.pipe)
			}
		}
		if f.slow > 0 {
			t = time.Duration(float64(t) * f.slow)
		}
		f.clk.t = f.clk.t.Add(t)
		f.busy += t
		f.streamed += n
		if err := emit(lo, out); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// procStreams are the fakes' streams for router.stream.
func procStreams(cpu, gpu *fakeProc) [2]procStream {
	return [2]procStream{procCPU: cpu.stream, procGPU: gpu.stream}
}

// autoStreamTime runs qs through r's stream as Engine.StreamWith does
// under Device Auto (two chunks in flight on the GPU) and returns the
// virtual time, checking every query's answer and the chunks' order.
func autoStreamTime(t *testing.T, clk *vclock, r *router, cpu, gpu *fakeProc, qs []engine.Query) time.Duration {
	t.Helper()
	start, next := clk.now(), 0
	if r.race == nil {
		r.race = simRace(clk, cpu, gpu, raceContend)
	}
	so := StreamOptions{Chunk: DefaultChunk, InFlight: 2, Continuous: true}
	err := r.stream(context.Background(), procStreams(cpu, gpu), qs, engine.Options{}, so, func(lo int, out []engine.Response) error {
		if lo != next {
			return fmt.Errorf("chunk at %d emitted, want %d", lo, next)
		}
		for i := range out {
			if out[i].Err != nil || len(out[i].Results) != 1 || out[i].Results[0].Doc != uint32(lo+i) {
				return fmt.Errorf("query %d answered %+v", lo+i, out[i])
			}
		}
		next += len(out)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != len(qs) {
		t.Fatalf("%d of %d queries emitted", next, len(qs))
	}
	return clk.now().Sub(start)
}

// aloneTime is the virtual time of p's own stream of qs alone (Device
// CPU, or Device GPU with two chunks in flight).
func aloneTime(t *testing.T, clk *vclock, p *fakeProc, qs []engine.Query) time.Duration {
	t.Helper()
	start := clk.now()
	so := StreamOptions{Chunk: DefaultChunk, InFlight: 2}
	if err := p.stream(context.Background(), qs, engine.Options{}, so, func(int, []engine.Response) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return clk.now().Sub(start)
}

// pipedFakes are fakes() whose GPU stream gains from two chunks in flight
// (pipe per mode, as measured on the H100: OR and AND+OR the most).
func pipedFakes(pipe float64) (*vclock, *fakeProc, *fakeProc) {
	clk, cpu, gpu := fakes()
	gpu.pipe = pipe
	// A CPU batch's start, so that a few queries per worker are not the
	// CPU's rate: a quarter of the 420 µs measured on an H200 host at
	// 64 queries (GCIDE AND, 16 workers: mostly the first batch's cold
	// worker engines) at the fakes' scale.
	cpu.fixed = 2500 * time.Microsecond
	return clk, cpu, gpu
}

// TestRouterStreamNeverSlower: a stream under Device Auto takes at most a
// few percent longer than the faster of the two processors' own streams
// (Device CPU's continuous stream, Device GPU's two chunks in flight) on
// 100,000 and 1,000,000 queries, in every mode, whichever wins, including
// a mode where the GPU loses one batch at a time but wins with two in
// flight, with the race's pieces slowed by 20% and by 50% where both
// processors run (contention for the host's cores); never slower than the
// batch path a stream took before. At 50% and 100,000 queries the race
// may cost up to 8% where the GPU wins 4-7× (OR, AND+OR): the CPU races
// until the GPU's first piece is answered (its first measurement), and
// its work then is worth less than what it takes from the GPU's host
// preparation. The CPU's batches pay a start each
// (2.5 ms), its stream once; the GPU's batches 5 ms each.
func TestRouterStreamNeverSlower(t *testing.T) {
	for _, c := range []struct {
		name  string
		mode  engine.Mode
		pipe  float64
		n     int
		limit float64 // auto / the faster alone
	}{
		{"and-100k", engine.And, 0.7, 100000, 1.03},
		{"and-1M", engine.And, 0.7, 1000000, 1.03},
		{"or-100k", engine.Or, 0.6, 100000, 1.03},
		{"or-1M", engine.Or, 0.6, 1000000, 1.03},
		{"andor-100k", engine.AndOr, 0.6, 100000, 1.03},
		{"andor-1M", engine.AndOr, 0.6, 1000000, 1.03},
		// AND with a CPU of 7 µs a query: the GPU's batches 9.3 µs, its
		// stream half that.
		{"and-pipelined-1M", engine.And, 0.5, 1000000, 1.03},
		{"and-pipelined-100k", engine.And, 0.5, 100000, 1.03},
	} {
		for _, contend := range []float64{0.2, 0.5} {
			t.Run(fmt.Sprintf("%s-contend%g", c.name, contend), func(t *testing.T) {
				qs := queriesOf(c.n, c.mode)
				clk, cpu, gpu := pipedFakes(c.pipe)
				pipelined := strings.HasPrefix(c.name, "and-pipelined")
				if pipelined {
					cpu.per[engine.And] = 112 * time.Microsecond
				}
				tc := aloneTime(t, clk, cpu, qs)
				tg := aloneTime(t, clk, gpu, qs)
				r := oneClockRouter(clk, cpu, gpu)
				r.race = simRace(clk, cpu, gpu, contend)
				ta := autoStreamTime(t, clk, r, cpu, gpu, qs)
				best := min(tc, tg)
				// The batch path a stream took before (each chunk one
				// router.SearchBatch, the GPU's chunks one at a time).
				old := streamTime(t, clk, oneClockRouter(clk, cpu, gpu), qs, DefaultChunk)
				t.Logf("cpu %v gpu %v auto %v (%.3f× the faster; batch path %.3f×)\n%s", tc, tg, ta,
					float64(ta)/float64(best), float64(old)/float64(best), r.routing())
				if ta > old {
					t.Errorf("auto's stream %v, slower than its batch path's %v", ta, old)
				}
				limit := c.limit
				if contend > 0.2 && c.n < 1000000 {
					limit = 1.08
				}
				if float64(ta) > limit*float64(best) {
					t.Errorf("auto %v, %.3f× the faster processor's %v (cpu %v, gpu %v), limit %.2f\n%s",
						ta, float64(ta)/float64(best), best, tc, tg, limit, r.routing())
				}
				// The faster processor won the race and answered most.
				st := r.modes[c.mode].stream
				w := procCPU
				if tg < tc {
					w = procGPU
				}
				if st.per[w] >= st.per[1-w] || st.queries[w] < st.queries[1-w] {
					t.Errorf("the faster processor (%d) measured %g against %g, answered %d of %d\n%s",
						w, st.per[w], st.per[1-w], st.queries[w], c.n, r.routing())
				}
			})
		}
	}
}

// TestRouterStreamFollowsSlowdown: when the GPU, winning OR, slows down
// (20×: 4× slower than the CPU), the next stream's first segment measures
// it, a trial of the CPU's stream follows and the CPU answers the rest.
func TestRouterStreamFollowsSlowdown(t *testing.T) {
	clk, cpu, gpu := pipedFakes(0.6)
	r := oneClockRouter(clk, cpu, gpu)
	qs := queriesOf(2000000, engine.Or)
	autoStreamTime(t, clk, r, cpu, gpu, qs)
	if st := r.modes[engine.Or].stream; st.queries[procGPU] < 1900000 {
		t.Fatalf("before the slowdown the GPU streamed %d of %d\n%s", st.queries[procGPU], len(qs), r.routing())
	}
	gpu.slow = 20
	cpu.streamed, gpu.streamed = 0, 0
	autoStreamTime(t, clk, r, cpu, gpu, qs)
	if cpu.streamed < len(qs)/3 {
		t.Errorf("after the GPU slowed down the CPU streamed %d of %d\n%s", cpu.streamed, len(qs), r.routing())
	}
	t.Logf("after: cpu %d gpu %d\n%s", cpu.streamed, gpu.streamed, r.routing())
}

// TestRouterStreamOneTrial: a processor measured slower than
// recheckMargin in the race is not tried again (4M AND queries; the CPU 8
// µs a query; the GPU 14 µs a query in its batches, so that two in flight
// might bring it to 7, but its stream gains only 0.8×: 11.6 µs), though
// the race measured the CPU on batches beside the GPU (its own stream's
// first segment replaces that rate).
func TestRouterStreamOneTrial(t *testing.T) {
	clk, cpu, gpu := pipedFakes(0.8)
	cpu.per[engine.And] = 128 * time.Microsecond
	gpu.per[engine.And] = 14 * time.Microsecond
	r := oneClockRouter(clk, cpu, gpu)
	qs := queriesOf(4000000, engine.And)
	tc := aloneTime(t, clk, cpu, qs)
	ta := autoStreamTime(t, clk, r, cpu, gpu, qs)
	st := r.modes[engine.And].stream
	t.Logf("cpu %v auto %v (%.3f×)\n%s", tc, ta, float64(ta)/float64(tc), r.routing())
	if st.trials != 0 || st.segments[procGPU] != 1 || st.races != 1 {
		t.Errorf("%d races, %d trials of a stream measured %.1f× slower\n%s", st.races, st.trials, st.per[procGPU]/st.per[procCPU], r.routing())
	}
	if float64(ta) > 1.03*float64(tc) {
		t.Errorf("auto %v, %.3f× the CPU alone", ta, float64(ta)/float64(tc))
	}
}

// TestStreamFirstChunk: StreamWith with a partial first chunk (a Device
// Auto stream resuming mid-chunk) emits it, then chunks on the caller's
// grid, in order, each query's own answer, with one and two in flight.
func TestStreamFirstChunk(t *testing.T) {
	for _, f := range []int{1, 2} {
		clk := &vclock{t: time.Unix(0, 0)}
		be := &fakeProc{name: "b", clk: clk, workers: 1}
		qs := queriesOf(10, engine.Or)
		var got []string
		err := StreamWith(context.Background(), be, qs, engine.Options{}, StreamOptions{Chunk: 4, InFlight: f, first: 3},
			func(lo int, out []engine.Response) error {
				for i := range out {
					if out[i].Results[0].Doc != uint32(lo+i) {
						return fmt.Errorf("query %d answered %+v", lo+i, out[i])
					}
				}
				got = append(got, fmt.Sprintf("%d+%d", lo, len(out)))
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.Join(got, " "); s != "0+3 3+4 7+3" {
			t.Errorf("%d in flight: chunks %s, want 0+3 3+4 7+3", f, s)
		}
	}
	for _, c := range []struct{ n, first, count int }{{0, 3, 0}, {2, 3, 1}, {3, 3, 1}, {4, 3, 2}, {7, 3, 2}, {8, 3, 3}, {8, 0, 2}, {8, 4, 2}} {
		if got := newChunking(c.n, 4, c.first).count(); got != c.count {
			t.Errorf("%d queries, first %d, chunk 4: %d chunks, want %d", c.n, c.first, got, c.count)
		}
	}
}

// TestRouterStreamRecheck: with both processors' streams measured, the
// slower one is tried again only when within recheckMargin of the winner,
// recheckEvery winner chunks after the last trial, and where its trial's
// cost fits the budget (a 10% slower GPU stream: its 3 chunks cost 3% of
// at least 163,840 queries).
func TestRouterStreamRecheck(t *testing.T) {
	const chunk = 16384
	for _, c := range []struct {
		name        string
		gpu         float64 // the GPU's stream time; the CPU's is 1
		since, rest int
		kind, n     int
	}{
		{"close", 1.1, recheckEvery, 2000000, procGPU, trialChunks[procGPU]},
		{"too soon", 1.1, recheckEvery - 1, 2000000, procCPU, maxSegment},
		{"too slow", 1.3, recheckEvery, 2000000, procCPU, maxSegment},
		{"too short", 1.1, recheckEvery, 150000, procCPU, 10},
	} {
		_, _, _, _, r := splitFakes()
		st := &r.modes[engine.Or].stream
		st.per = [2]float64{procCPU: 1e-6, procGPU: c.gpu * 1e-6}
		st.since = c.since
		kind, n := r.streamPlan(int(engine.Or), chunk, c.rest)
		if kind != c.kind || n != c.n {
			t.Errorf("%s: streamPlan gives %d for %d chunks, want %d for %d", c.name, kind, n, c.kind, c.n)
		}
		if c.kind == procGPU && st.since != 0 {
			t.Errorf("%s: a trial left %d chunks since the last", c.name, st.since)
		}
	}
}

// TestRouterStreamTail: a stream's last segment takes the few chunks
// after maxSegment with it (no short tail segment), and a one-chunk
// segment counts its queries without changing the measured stream time.
func TestRouterStreamTail(t *testing.T) {
	const chunk = 16384
	_, _, _, _, r := splitFakes()
	st := &r.modes[engine.Or].stream
	st.per = [2]float64{procCPU: 2e-6, procGPU: 1e-6}
	for _, c := range []struct{ left, want int }{{maxSegment + 3, maxSegment + 3}, {maxSegment + maxSegment/4, maxSegment}, {5, 5}} {
		if kind, n := r.streamPlan(int(engine.Or), chunk, c.left*chunk); kind != procGPU || n != c.want {
			t.Errorf("%d chunks left: streamPlan gives %d for %d chunks, want the GPU for %d", c.left, kind, n, c.want)
		}
	}
	r.recordSegment(int(engine.Or), procGPU, steadyRate{per: 50e-6, queries: 1000, chunks: 1})
	if st.per[procGPU] != 1e-6 || st.queries[procGPU] != 1000 {
		t.Errorf("a one-chunk segment left the GPU's stream time %g and queries %d, want 1e-6 and 1000", st.per[procGPU], st.queries[procGPU])
	}
	r.recordSegment(int(engine.Or), procGPU, steadyRate{per: 3e-6, queries: 2 * chunk, chunks: 2})
	if want := (1-ewma)*1e-6 + ewma*3e-6; st.per[procGPU] != want {
		t.Errorf("after a two-chunk segment the GPU's stream time is %g, want %g", st.per[procGPU], want)
	}
}
