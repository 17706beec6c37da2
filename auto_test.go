package qp

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/topk"
)

// The router is tested with two simulated processors on a virtual clock:
// each fake answers a query with a result naming it (so that a slice sent
// to the wrong place shows) and advances the clock by a service time that
// follows a cost model, so the timings are deterministic. The models are of
// the shape measured on an H100 host (issue #20, GCIDE, TREC'06): a CPU of
// 16 workers whose batch takes ⌈n/16⌉ per-query times, a GPU whose batch
// takes a fixed launch-and-transfer time plus a smaller per-query time;
// the CPU wins AND 2×, the GPU wins OR 4× on large batches and loses small
// ones. They are not measured costs: only the routing is under test.

type vclock struct{ t time.Time }

func (c *vclock) now() time.Time { return c.t }

type fakeProc struct {
	name     string
	clk      *vclock
	workers  int                         // > 0: a CPU, batch time fixed + ⌈n/workers⌉·per
	fixed    time.Duration               // per-batch time (the GPU's launches, the CPU's start)
	per      [4]time.Duration            // per-query time by mode
	slow     float64                     // multiplier of every time (0: 1)
	busy     time.Duration               // total simulated time
	pipe     float64                     // GPU stream, two chunks in flight: a later chunk's time × pipe (0: 1)
	streamed int                         // queries answered by stream
	fill     float64                     // a race's first GPU pieces, its pipeline's fill: × their time (simRace; 0: 1)
	lag      time.Duration               // a race copy cancelled runs on this long at most (simRace: the GPU's host preparation)
	stagger  bool                        // the race's fill pieces end one after the other: the j-th of k at (j+1)/k of its time (simRace)
	seen     map[engine.Mode]map[int]int // batch sizes run, by mode
	mu       sync.Mutex                  // SearchBatch's: TestStreamFirstChunk keeps two batches in flight
}

func (f *fakeProc) Name() string { return f.name }

func (f *fakeProc) cost(m engine.Mode, n int) time.Duration {
	var t time.Duration
	if f.workers > 0 {
		t = f.fixed + time.Duration((n+f.workers-1)/f.workers)*f.per[m]
	} else {
		t = f.fixed + time.Duration(n)*f.per[m]
	}
	if f.slow > 0 {
		t = time.Duration(float64(t) * f.slow)
	}
	return t
}

// answer gives each query a result naming it.
func (f *fakeProc) answer(qs []engine.Query, out []engine.Response) {
	for i, q := range qs {
		id, err := strconv.Atoi(q.ID)
		if err != nil {
			panic(err)
		}
		out[i] = engine.Response{Results: append(out[i].Results[:0], topk.Result{Doc: uint32(id)})}
	}
}

func (f *fakeProc) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	if len(qs) != len(out) {
		panic("BUG: fake: lengths")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer(qs, out)
	if len(qs) > 0 {
		t := f.cost(qs[0].Mode, len(qs))
		f.clk.t = f.clk.t.Add(t)
		f.busy += t
		if f.seen == nil {
			f.seen = map[engine.Mode]map[int]int{}
		}
		if f.seen[qs[0].Mode] == nil {
			f.seen[qs[0].Mode] = map[int]int{}
		}
		f.seen[qs[0].Mode][len(qs)]++
	}
	return ctx.Err()
}

// fakes returns a CPU and a GPU on one clock, with costs of the shape
// issue #20 measured on an H100 host with GCIDE and TREC'06 (16 cores; the
// GPU OR at 7.8 µs per query in batches of 1024 and 1.6 µs in one of
// 10,000, so a large fixed part per batch; AND twice as fast on the CPU):
// CPU per query per worker AND 80 µs, OR 350 µs, AND+OR 160 µs (5, 22 and
// 10 µs per query on 16 workers); GPU 5 ms per batch plus AND 9 µs, OR
// 4 µs, AND+OR 3 µs per query.
func fakes() (*vclock, *fakeProc, *fakeProc) {
	clk := &vclock{t: time.Unix(0, 0)}
	cpu := &fakeProc{name: "cpu", clk: clk, workers: 16}
	gpu := &fakeProc{name: "gpu", clk: clk, fixed: 5 * time.Millisecond}
	cpu.per[engine.And], gpu.per[engine.And] = 80*time.Microsecond, 9*time.Microsecond
	cpu.per[engine.Or], gpu.per[engine.Or] = 350*time.Microsecond, 4*time.Microsecond
	cpu.per[engine.AndOr], gpu.per[engine.AndOr] = 160*time.Microsecond, 3*time.Microsecond
	return clk, cpu, gpu
}

// oneClockRouter is a router of 16 CPU workers over cpu and gpu that
// measures both on clk, without splitting batches: on one clock the
// processors run one after the other (auto_split_test.go splits).
func oneClockRouter(clk *vclock, cpu, gpu *fakeProc) *router {
	r := newRouter(cpu, gpu, 16)
	r.setClock(clk.now)
	r.split = false
	return r
}

func queriesOf(n int, m engine.Mode) []engine.Query {
	qs := make([]engine.Query, n)
	for i := range qs {
		qs[i] = engine.Query{ID: strconv.Itoa(i), Terms: []string{"t"}, Mode: m, K: 10}
	}
	return qs
}

// streamTime runs qs through be in chunks as `qp query` does and returns
// the virtual time it took, checking that every query got its own answer.
func streamTime(t *testing.T, clk *vclock, be engine.Backend, qs []engine.Query, chunk int) time.Duration {
	t.Helper()
	start := clk.now()
	err := Stream(context.Background(), be, qs, engine.Options{}, chunk, func(lo int, out []engine.Response) error {
		for i := range out {
			if out[i].Err != nil || len(out[i].Results) != 1 || out[i].Results[0].Doc != uint32(lo+i) {
				return fmt.Errorf("query %d answered %+v", lo+i, out[i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return clk.now().Sub(start)
}

// TestRouterNeverSlower: on 100,000 queries in chunks of 16384 (qp query's
// default), Auto takes at most 6% longer than the faster processor alone,
// in every mode, whichever that is, calibration included.
func TestRouterNeverSlower(t *testing.T) {
	for _, m := range []engine.Mode{engine.And, engine.Or, engine.AndOr} {
		t.Run(m.String(), func(t *testing.T) {
			qs := queriesOf(100000, m)
			clk, cpu, gpu := fakes()
			tc := streamTime(t, clk, cpu, qs, DefaultChunk)
			tg := streamTime(t, clk, gpu, qs, DefaultChunk)
			r := oneClockRouter(clk, cpu, gpu)
			ta := streamTime(t, clk, r, qs, DefaultChunk)
			best := min(tc, tg)
			t.Logf("cpu %v gpu %v auto %v (%.3f× the faster)\n%s", tc, tg, ta, float64(ta)/float64(best), r.routing())
			// 6%: both processors are calibrated on growing slices (the
			// CPU on two sizes at least, see TestRouterCPUBatchStart).
			if float64(ta) > 1.06*float64(best) {
				t.Errorf("auto %v, more than 6%% over the faster processor's %v (cpu %v, gpu %v)", ta, best, tc, tg)
			}
			// The bulk went to the faster processor.
			mc := &r.modes[m]
			want := procCPU
			if tg < tc {
				want = procGPU
			}
			if mc.queries[want] < 90000 {
				t.Errorf("%d of 100000 queries on the faster processor (%d); routing:\n%s", mc.queries[want], want, r.routing())
			}
		})
	}
}

// TestRouterSmallBatches: one query at a time, the GPU's per-batch fixed
// time loses even OR, and Auto settles on the CPU after measuring each once.
func TestRouterSmallBatches(t *testing.T) {
	clk, cpu, gpu := fakes()
	r := oneClockRouter(clk, cpu, gpu)
	qs := queriesOf(200, engine.Or)
	out := make([]engine.Response, 1)
	for i := range qs {
		if err := r.SearchBatch(context.Background(), qs[i:i+1], engine.Options{}, out); err != nil {
			t.Fatal(err)
		}
		if out[0].Results[0].Doc != uint32(i) {
			t.Fatalf("query %d answered %+v", i, out[0])
		}
	}
	mc := &r.modes[engine.Or]
	if mc.queries[procGPU] != 1 || mc.queries[procCPU] != 199 {
		t.Errorf("single OR queries: cpu %d, gpu %d; want 199 and 1\n%s", mc.queries[procCPU], mc.queries[procGPU], r.routing())
	}
}

// TestRouterFollowsSlowdown: when the processor in use becomes slower than
// the other's last measured time, the batches move to the other.
func TestRouterFollowsSlowdown(t *testing.T) {
	clk, cpu, gpu := fakes()
	r := oneClockRouter(clk, cpu, gpu)
	qs := queriesOf(4*DefaultChunk, engine.Or)
	streamTime(t, clk, r, qs, DefaultChunk)
	before := r.modes[engine.Or].queries
	gpu.slow = 20 // OR on the GPU now 4× slower than on the CPU (4.3 µs × 20 vs 22 µs)
	streamTime(t, clk, r, qs, DefaultChunk)
	after := r.modes[engine.Or].queries
	if before[procGPU] < 3*DefaultChunk {
		t.Fatalf("OR before the slowdown: gpu %d of %d", before[procGPU], len(qs))
	}
	// One chunk measures the slowdown; the three after it go to the CPU.
	if got := after[procCPU] - before[procCPU]; got < 3*DefaultChunk {
		t.Errorf("after the GPU slowed down, the CPU answered %d of %d\n%s", got, len(qs), r.routing())
	}
}

// TestRouterSinglesThenBatches: single OR queries first (the GPU measured
// once, at one query), then large batches: calibration starts again at
// calibrationStart, not at 4 queries, and the bulk goes to the GPU.
func TestRouterSinglesThenBatches(t *testing.T) {
	clk, cpu, gpu := fakes()
	r := oneClockRouter(clk, cpu, gpu)
	qs := queriesOf(4*DefaultChunk, engine.Or)
	out := make([]engine.Response, 1)
	for i := range 20 {
		if err := r.SearchBatch(context.Background(), qs[i:i+1], engine.Options{}, out); err != nil {
			t.Fatal(err)
		}
	}
	gpu.seen = nil
	streamTime(t, clk, r, qs, DefaultChunk)
	for n := range gpu.seen[engine.Or] {
		if n < calibrationStart {
			t.Errorf("a GPU slice of %d queries", n)
		}
	}
	if m := &r.modes[engine.Or]; m.queries[procGPU] < 3*DefaultChunk {
		t.Errorf("GPU answered %d of %d\n%s", m.queries[procGPU], len(qs), r.routing())
	}
}

// TestRouterMixedAndEmpty: a batch of several modes is routed as one
// ("mixed") and answered in order; an empty batch is fine.
func TestRouterMixedAndEmpty(t *testing.T) {
	clk, cpu, gpu := fakes()
	r := oneClockRouter(clk, cpu, gpu)
	if err := r.SearchBatch(context.Background(), nil, engine.Options{}, nil); err != nil {
		t.Fatal(err)
	}
	qs := queriesOf(3000, engine.And)
	for i := range qs {
		qs[i].Mode = engine.Mode(1 + i%3)
	}
	out := make([]engine.Response, len(qs))
	if err := r.SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if out[i].Results[0].Doc != uint32(i) {
			t.Fatalf("query %d answered %+v", i, out[i])
		}
	}
	if n := r.modes[0].queries; n[0]+n[1] != 3000 {
		t.Errorf("mixed batch counted %v", n)
	}
	if err := r.SearchBatch(context.Background(), qs[:2], engine.Options{}, out[:1]); err == nil {
		t.Error("mismatched lengths accepted")
	}
}

// TestRouterCPUBatchStart: a CPU whose batch has a fixed start (the shape
// measured on an H200 host, GCIDE AND, 16 workers: 6.8 µs a query in a
// batch of 64, 0.33 µs in chunks of 16,384) against a GPU that is 20×
// faster than the CPU's small batches but slower than its large ones
// (46.7 µs a query at 64, 0.62 µs at 16,384). The router must not judge the
// CPU by its first slice: the bulk goes to the CPU, and Auto is faster
// than the GPU alone. (Calibration is not free here: the whole run is 36 ms
// of very cheap queries and the GPU, close to the CPU in marginal cost, is
// measured up to 4,096-query slices: Auto takes about 1.4× the CPU's time.)
func TestRouterCPUBatchStart(t *testing.T) {
	qs := queriesOf(100000, engine.And)
	clk := &vclock{t: time.Unix(0, 0)}
	cpu := &fakeProc{name: "cpu", clk: clk, workers: 16, fixed: 420 * time.Microsecond}
	gpu := &fakeProc{name: "gpu", clk: clk, fixed: 2900 * time.Microsecond}
	cpu.per[engine.And], gpu.per[engine.And] = 5300*time.Nanosecond, 440*time.Nanosecond
	tc := streamTime(t, clk, cpu, qs, DefaultChunk)
	tg := streamTime(t, clk, gpu, qs, DefaultChunk)
	if tc >= tg {
		t.Fatalf("BUG: the fakes: cpu %v not faster than gpu %v", tc, tg)
	}
	r := oneClockRouter(clk, cpu, gpu)
	ta := streamTime(t, clk, r, qs, DefaultChunk)
	t.Logf("cpu %v gpu %v auto %v (%.3f× the faster)\n%s", tc, tg, ta, float64(ta)/float64(tc), r.routing())
	m := &r.modes[engine.And]
	if m.queries[procCPU] < 90000 {
		t.Errorf("the CPU answered %d of 100,000 queries, want the bulk", m.queries[procCPU])
	}
	if ta >= tg {
		t.Errorf("auto %v, not faster than the GPU alone (%v; cpu %v)", ta, tg, tc)
	}
}

// TestRouterCPUBatchStartGPUWins: the same CPU shape on OR (H200, GCIDE:
// 14.4 µs a query at 64 queries, about 4.2 µs in large chunks) against a
// GPU three times faster on large batches: the CPU is measured on two
// small slices only (its marginal time bounds it from below) and the bulk
// goes to the GPU, within 10% of the GPU alone.
func TestRouterCPUBatchStartGPUWins(t *testing.T) {
	qs := queriesOf(100000, engine.Or)
	clk := &vclock{t: time.Unix(0, 0)}
	cpu := &fakeProc{name: "cpu", clk: clk, workers: 16, fixed: 420 * time.Microsecond}
	gpu := &fakeProc{name: "gpu", clk: clk, fixed: 1900 * time.Microsecond}
	cpu.per[engine.Or], gpu.per[engine.Or] = 67*time.Microsecond, 1300*time.Nanosecond
	tc := streamTime(t, clk, cpu, qs, DefaultChunk)
	tg := streamTime(t, clk, gpu, qs, DefaultChunk)
	r := oneClockRouter(clk, cpu, gpu)
	ta := streamTime(t, clk, r, qs, DefaultChunk)
	t.Logf("cpu %v gpu %v auto %v (%.3f× the faster)\n%s", tc, tg, ta, float64(ta)/float64(tg), r.routing())
	m := &r.modes[engine.Or]
	if m.queries[procCPU] > 1000 {
		t.Errorf("the CPU answered %d queries, want at most its two calibration slices", m.queries[procCPU])
	}
	if float64(ta) > 1.10*float64(tg) {
		t.Errorf("auto %v, more than 10%% over the GPU's %v (cpu %v)", ta, tg, tc)
	}
}
