package scheduler

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/internal/assist"
)

// spinSink keeps spinWork's loop from being optimised away.
var spinSink atomic.Uint64

// spinWork burns about k simple iterations of CPU (about a nanosecond
// each).
func spinWork(k int) {
	x := uint64(k)
	for range k {
		x = x*6364136223846793005 + 1442695040888963407
	}
	spinSink.Add(x & 1)
}

// spinBackend answers every query with no results after spinning iters
// per query: a CPU core's query.
type spinBackend struct{ iters int }

func (spinBackend) Name() string { return "spin" }

func (s spinBackend) SearchBatch(_ context.Context, qs []engine.Query, _ engine.Options, out []engine.Response) error {
	for i := range out {
		spinWork(s.iters)
		out[i] = engine.Response{Results: out[i].Results[:0]}
	}
	return nil
}

// fanBackend is a GPU-like backend: each batch first runs a host phase
// that fans out over GOMAXPROCS participants on its Board (perQuery
// iterations of work per query, in chunks of chunk queries, as the GPU
// backend's preparation and conversion do), then waits device for the
// device. It records the host phases' wall time and checks that every
// query of every phase ran exactly once.
type fanBackend struct {
	board           *assist.Board
	perQuery, chunk int
	device          time.Duration

	mu      sync.Mutex
	hostSum time.Duration
	// par and parSum: the participants inside the phase's f at once, and
	// their sum over the chunks' starts (parSum/chunks: how many ran
	// beside each other on average, Go's view, which other load on the
	// machine's cores does not blur).
	par, parSum, chunks atomic.Int64
	batches             int
	bad                 atomic.Int64
	seen                []atomic.Int32 // reused: one phase at a time (mu)
}

func (*fanBackend) Name() string { return "fan" }

func (g *fanBackend) SearchBatch(_ context.Context, qs []engine.Query, _ engine.Options, out []engine.Response) error {
	g.mu.Lock() // one host phase at a time: seen is shared
	if len(g.seen) < len(qs) {
		g.seen = make([]atomic.Int32, len(qs))
	}
	seen := g.seen[:len(qs)]
	for i := range seen {
		seen[i].Store(0)
	}
	t0 := time.Now()
	g.board.Run(runtime.GOMAXPROCS(0), len(qs), g.chunk, func(_, lo, hi int) {
		g.parSum.Add(g.par.Add(1))
		g.chunks.Add(1)
		defer g.par.Add(-1)
		for i := lo; i < hi; i++ {
			spinWork(g.perQuery)
			seen[i].Add(1)
		}
	})
	g.hostSum += time.Since(t0)
	g.batches++
	for i := range seen {
		if seen[i].Load() != 1 {
			g.bad.Add(1)
		}
	}
	g.mu.Unlock()
	time.Sleep(g.device)
	for i := range out {
		out[i] = engine.Response{Results: out[i].Results[:0]}
	}
	return nil
}

// runAll submits qs to s in bursts and waits for every answer; it returns
// how many ran on each processor.
func runAll(t testing.TB, s *Scheduler, qs []engine.Query) [2]int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var procs [2]int
	for _, q := range qs {
		wg.Add(1)
		if err := s.Submit(Request{Query: q}, func(r *Result) {
			mu.Lock()
			if r.Err == nil && r.Proc >= 0 {
				procs[r.Proc]++
			}
			mu.Unlock()
			wg.Done()
		}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	return procs
}

// TestAssist: beside a GPU, every CPU slot calls Config.Assist before each
// of its queries, the GPU's fanned-out host phases stay exact with CPU
// slots helping, and a CPU alone never calls it.
func TestAssist(t *testing.T) {
	x := testIndex(t)
	var board assist.Board
	var calls, helped atomic.Int64
	help := func() bool {
		calls.Add(1)
		h := board.Help()
		if h {
			helped.Add(1)
		}
		return h
	}
	fan := &fanBackend{board: &board, perQuery: 2000, chunk: 2, device: 200 * time.Microsecond}
	s, err := New(x, Config{
		CPU: &Processor{Backend: spinBackend{iters: 5000}, Slots: 2, Sequential: true,
			Batch: BatchPolicy{MaxQueries: 8}},
		GPU:    &Processor{Backend: fan, Slots: 2, Batch: BatchPolicy{MaxQueries: 64}},
		Assist: help,
	})
	if err != nil {
		t.Fatal(err)
	}
	qs := testQueries(3000, 5)
	procs := runAll(t, s, qs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if procs[CPU]+procs[GPU] != len(qs) {
		t.Fatalf("answered cpu %d + gpu %d of %d", procs[CPU], procs[GPU], len(qs))
	}
	if procs[CPU] == 0 || procs[GPU] == 0 {
		t.Fatalf("cpu %d, gpu %d queries: want both processors used", procs[CPU], procs[GPU])
	}
	if n := calls.Load(); n < int64(procs[CPU]) {
		t.Errorf("Assist called %d times for %d CPU queries, want at least one per query", n, procs[CPU])
	}
	if b := fan.bad.Load(); b != 0 {
		t.Errorf("%d queries of the host phases not run exactly once", b)
	}
	t.Logf("cpu %d gpu %d queries in %d GPU batches; Assist called %d times, ran chunks %d times",
		procs[CPU], procs[GPU], fan.batches, calls.Load(), helped.Load())

	calls.Store(0)
	s, err = New(x, Config{CPU: &Processor{Backend: spinBackend{iters: 100}, Slots: 2, Sequential: true,
		Batch: BatchPolicy{MaxQueries: 8}}, Assist: help})
	if err != nil {
		t.Fatal(err)
	}
	runAll(t, s, qs[:200])
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("a CPU alone called Assist %d times", n)
	}
}

// BenchmarkHostPhaseBeside measures a GPU-like backend's fanned-out host
// phase beside CPU slots (issue 24, twelfth round), with the CPU slots
// helping (Config.Assist) and without: a CPU of GOMAXPROCS Sequential
// slots whose queries spin about 10 µs, a GPU of two slots whose batches
// of up to 512 queries run a host phase of about 1 µs per query in chunks
// of 16 over GOMAXPROCS participants on a Board, then 300 µs "on the
// device" (host-bound, as the GPU on GCIDE); GPU-first placement with a
// 10 ms deadline, so that the CPU takes the backlog's overflow. Reported:
// host-µs/batch, the host phase's mean wall time; par, its participants
// running at once on average (Go's view: 1 is serial, GOMAXPROCS every P;
// unlike the wall times, not blurred by other load on the machine's
// cores); gpu-share, the share of the queries the GPU answered; q/s; and
// cpu-busy, the CPU slots' busy share of the run.
func BenchmarkHostPhaseBeside(b *testing.B) {
	const devUS = 300
	x := testIndex(b)
	qs := testQueries(20000, 7)
	for _, mode := range []string{"nohelp", "help"} {
		b.Run(mode, func(b *testing.B) {
			var board assist.Board
			var help func() bool
			if mode == "help" {
				help = board.Help
			}
			var host time.Duration
			var batches int
			var parSum, chunks int64
			var cpuBusy float64 // the CPU slots' busy share of the run
			var procs [2]int
			t0 := time.Now()
			for range b.N {
				fan := &fanBackend{board: &board, perQuery: 1000, chunk: 16, device: time.Duration(devUS) * time.Microsecond}
				s, err := New(x, Config{
					CPU: &Processor{Backend: spinBackend{iters: 8000}, Slots: runtime.GOMAXPROCS(0), Sequential: true,
						Batch: BatchPolicy{MaxQueries: 8}},
					GPU:    &Processor{Backend: fan, Slots: 2, Batch: BatchPolicy{MaxQueries: 512}},
					Assist: help,
					// GPU-first, as bench sched's CPU+GPU: the CPU takes
					// what the GPU would answer past the target (a short
					// deadline: most of the submitted backlog).
					Placement: PlaceGPUFirst, Deadline: 10 * time.Millisecond,
				})
				if err != nil {
					b.Fatal(err)
				}
				r0 := time.Now()
				p := runAll(b, s, qs)
				st := s.Stats()
				cpuBusy += st.Procs[CPU].Busy.Seconds() / (time.Since(r0).Seconds() * float64(runtime.GOMAXPROCS(0)))
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				if fan.bad.Load() != 0 {
					b.Fatalf("%d host-phase queries not run exactly once", fan.bad.Load())
				}
				host += fan.hostSum
				parSum += fan.parSum.Load()
				chunks += fan.chunks.Load()
				batches += fan.batches
				procs[CPU] += p[CPU]
				procs[GPU] += p[GPU]
			}
			wall := time.Since(t0)
			b.ReportMetric(float64(host.Microseconds())/float64(max(batches, 1)), "host-µs/batch")
			b.ReportMetric(float64(procs[GPU])/float64(procs[CPU]+procs[GPU]), "gpu-share")
			b.ReportMetric(float64(len(qs)*b.N)/wall.Seconds(), "q/s")
			b.ReportMetric(float64(procs[GPU])/float64(max(batches, 1)), "queries/batch")
			b.ReportMetric(float64(parSum)/float64(max(chunks, 1)), "par")
			b.ReportMetric(cpuBusy/float64(b.N), "cpu-busy")
		})
	}
}
