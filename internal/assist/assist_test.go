package assist

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checker records the chunks a job's f saw and that no participant id was
// used by two goroutines at once.
type checker struct {
	t     testing.TB
	hits  []atomic.Int32
	inUse []atomic.Bool
	bad   atomic.Int32
	calls atomic.Int64
}

func newChecker(t testing.TB, n, w int) *checker {
	return &checker{t: t, hits: make([]atomic.Int32, n), inUse: make([]atomic.Bool, max(w, 1))}
}

func (c *checker) f(w, lo, hi int) {
	if w < 0 || w >= len(c.inUse) || !c.inUse[w].CompareAndSwap(false, true) {
		c.bad.Add(1)
		return
	}
	c.calls.Add(1)
	for i := lo; i < hi; i++ {
		c.hits[i].Add(1)
	}
	c.inUse[w].Store(false)
}

func (c *checker) check(label string) {
	c.t.Helper()
	if b := c.bad.Load(); b != 0 {
		c.t.Fatalf("%s: %d calls with an id out of range or in use", label, b)
	}
	for i := range c.hits {
		if h := c.hits[i].Load(); h != 1 {
			c.t.Fatalf("%s: index %d run %d times", label, i, h)
		}
	}
}

func TestRunEveryChunkOnce(t *testing.T) {
	var b Board
	for _, tc := range []struct{ workers, n, chunk int }{
		{1, 1000, 7}, {4, 0, 3}, {4, 1, 3}, {4, 3, 3}, {4, 4, 3}, {2, 1000, 1},
		{8, 1000, 7}, {3, 10000, 256}, {64, 5000, 1}, {runtime.GOMAXPROCS(0), 4096, 256},
	} {
		label := fmt.Sprintf("workers %d n %d chunk %d", tc.workers, tc.n, tc.chunk)
		c := newChecker(t, tc.n, tc.workers)
		b.Run(tc.workers, tc.n, tc.chunk, c.f)
		c.check(label)
		if tc.n > 0 && c.calls.Load() == 0 {
			t.Fatalf("%s: f never called", label)
		}
		if w := min(tc.workers, (tc.n+tc.chunk-1)/tc.chunk); w <= 1 && c.calls.Load() != 1 {
			t.Fatalf("%s: one participant, %d calls (want f(0, 0, n) once)", label, c.calls.Load())
		}
		if b.Open() != 0 {
			t.Fatalf("%s: %d jobs open after Run", label, b.Open())
		}
	}
}

// TestRunWithHelpers publishes jobs from several goroutines at once while
// others call Help in a loop (run it with -race).
func TestRunWithHelpers(t *testing.T) {
	var b Board
	const publishers, helpers, jobs = 3, 3, 300
	stop, out := make(chan struct{}), make(chan [2]any, helpers)
	for range helpers {
		go helpLoop(&b, stop, out)
	}
	var pwg sync.WaitGroup
	for p := range publishers {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for i := range jobs {
				n := 200 + 37*i%500
				c := newChecker(t, n, 6)
				b.Run(6, n, 1+p, func(w, lo, hi int) {
					spin(200)
					c.f(w, lo, hi)
				})
				c.check(fmt.Sprintf("publisher %d job %d", p, i))
			}
		}()
	}
	pwg.Wait()
	close(stop)
	helped := 0
	for range helpers {
		r := <-out
		if r[0] != nil {
			t.Fatalf("a helper panicked: %v", r[0])
		}
		helped += r[1].(int)
	}
	if b.Open() != 0 {
		t.Fatalf("%d jobs open after all Runs returned", b.Open())
	}
	if helped == 0 {
		t.Fatalf("no Help call ran a chunk in %d jobs", publishers*jobs)
	}
	t.Logf("Help ran chunks %d times in %d jobs", helped, publishers*jobs)
}

// TestLateJoin: a helper that comes for a job after its Run returned (a
// stale token, or Help that read the job open just before it closed) runs
// nothing and leaves the slot to its next generation.
func TestLateJoin(t *testing.T) {
	var b Board
	c := newChecker(t, 100, 4)
	b.Run(4, 100, 10, c.f)
	c.check("first")
	j := &b.jobs[0]
	if !j.taken.Load() && j.state.Load()>>genShift != 1 {
		t.Fatalf("slot 0's generation %d after one job, want 1", j.state.Load()>>genShift)
	}
	if j.join(0) {
		t.Fatal("a join of the finished generation ran chunks")
	}
	if s := j.state.Load(); s&countMask != 0 || s&openBit != 0 {
		t.Fatalf("state %#x after a late join: want closed, nobody inside", s)
	}
	// The slot is reused, and the stale generation still cannot enter.
	c2 := newChecker(t, 100, 4)
	ran := atomic.Bool{}
	b.Run(4, 100, 10, func(w, lo, hi int) {
		if lo == 0 && j.join(0) {
			ran.Store(true)
		}
		c2.f(w, lo, hi)
	})
	c2.check("second")
	if ran.Load() {
		t.Fatal("a stale join entered the slot's next generation")
	}
}

// TestPanicInParticipant: a panic of f in Run's caller, or in one of the
// Board's workers, reaches Run's caller once the job is closed, and the
// Board stays usable.
func TestPanicInParticipant(t *testing.T) {
	var b Board
	for _, who := range []string{"publisher", "worker"} {
		panicked := make(chan struct{})
		got := func() (r any) {
			defer func() { r = recover() }()
			b.Run(4, 64, 1, func(w, lo, hi int) {
				switch {
				case who == "publisher" && w == 0:
					panic("boom publisher")
				case who == "worker" && w == 0:
					// Blocked, the caller lets its P run a woken worker.
					<-panicked
				case who == "worker":
					close(panicked)
					panic("boom worker")
				}
			})
			return nil
		}()
		if got != "boom "+who {
			t.Fatalf("%s: recovered %v, want %q", who, got, "boom "+who)
		}
		if b.Open() != 0 {
			t.Fatalf("%s: %d jobs open after the panic", who, b.Open())
		}
		for i := range b.jobs {
			if b.jobs[i].taken.Load() {
				t.Fatalf("%s: slot %d still taken after the panic", who, i)
			}
		}
		c := newChecker(t, 1000, 4)
		b.Run(4, 1000, 9, c.f)
		c.check(who + ": the Board after the panic")
	}
}

// noWorkers makes b start no parked workers (their tokens pile up unread):
// the tests' helpers are then a job's only participants beside its caller.
func noWorkers(b *Board) {
	b.wakeOnce.Do(func() { b.wake = make(chan token, maxWorkers) })
	b.workers.Store(maxWorkers)
}

// helpLoop calls b.Help until stop is closed, then sends what it
// recovered (nil: no panic reached it) and how many Help calls ran chunks.
func helpLoop(b *Board, stop <-chan struct{}, out chan<- [2]any) {
	var n int
	defer func() { out <- [2]any{recover(), n} }()
	for {
		select {
		case <-stop:
			return
		default:
		}
		if b.Help() {
			n++
		}
		runtime.Gosched()
	}
}

// TestPanicInHelper: a panic of f in a goroutine that called Help reaches
// Run's caller, not the helper, and the helper goes on helping.
func TestPanicInHelper(t *testing.T) {
	var b Board
	noWorkers(&b)
	stop, out := make(chan struct{}), make(chan [2]any, 1)
	go helpLoop(&b, stop, out)
	release := make(chan struct{})
	got := func() (r any) {
		defer func() { r = recover() }()
		b.Run(2, 2, 1, func(w, lo, hi int) {
			if w == 0 {
				<-release // the publisher waits for the helper's chunk
				return
			}
			close(release)
			panic("helper boom")
		})
		return nil
	}()
	if got != "helper boom" {
		t.Fatalf("Run's caller recovered %v, want the helper's panic", got)
	}
	// The helper is still helping: a second job gets its chunks.
	c := newChecker(t, 64, 2)
	b.Run(2, 64, 1, func(w, lo, hi int) {
		spin(20000)
		c.f(w, lo, hi)
	})
	c.check("after the helper's panic")
	close(stop)
	r := <-out
	if r[0] != nil {
		t.Fatalf("the helper goroutine panicked with %v", r[0])
	}
	if r[1].(int) < 1 {
		t.Fatalf("the helper ran chunks in %d Help calls, want at least the panicking one", r[1])
	}
	t.Logf("the helper ran chunks in %d Help calls", r[1])
}

// TestBoardFull: with every job slot taken, Run still runs every chunk
// (on goroutines of its own).
func TestBoardFull(t *testing.T) {
	var b Board
	hold := make(chan struct{})
	var started sync.WaitGroup
	var done sync.WaitGroup
	for range maxJobs {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			var once sync.Once
			b.Run(2, 2, 1, func(w, lo, hi int) {
				once.Do(started.Done)
				<-hold
			})
		}()
	}
	started.Wait()
	if b.take() != nil {
		t.Fatal("a slot was free with every job holding one")
	}
	c := newChecker(t, 500, 4)
	b.Run(4, 500, 3, c.f)
	c.check("full board")
	close(hold)
	done.Wait()
	if b.Open() != 0 {
		t.Fatalf("%d jobs open", b.Open())
	}
}

func TestRunAllocs(t *testing.T) {
	var b Board
	var sum atomic.Int64
	f := func(w, lo, hi int) { sum.Add(int64(hi - lo)) }
	b.Run(4, 4096, 64, f) // starts the workers
	stop, out := make(chan struct{}), make(chan [2]any, 1)
	go helpLoop(&b, stop, out) // a helper, as the scheduler's CPU slots
	allocs := testing.AllocsPerRun(200, func() { b.Run(4, 4096, 64, f) })
	close(stop)
	<-out
	if allocs != 0 {
		t.Fatalf("Run allocates %.1f times a call", allocs)
	}
	// AllocsPerRun calls its function once more than runs, to warm up.
	if got := sum.Load(); got != 4096*202 {
		t.Fatalf("chunks covered %d indices, want %d", got, 4096*202)
	}
	if a := testing.AllocsPerRun(100, func() { b.Help() }); a != 0 {
		t.Fatalf("Help allocates %.1f times a call", a)
	}
}

// spinSink keeps spin's loop from being optimised away.
var spinSink atomic.Uint64

// spin burns about k simple iterations of CPU.
func spin(k int) {
	x := uint64(k)
	for i := 0; i < k; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	spinSink.Add(x & 1)
}

// BenchmarkFanOutBeside is issue 24's contention in miniature: a fan-out
// of fanChunks chunks of about chunkWork each, from one goroutine, while
// busy goroutines (one per P but one, or one per P: "full") run items of
// about itemWork and call runtime.Gosched between two, as the scheduler's
// CPU slots do beside a GPU. Variants: spawn (a goroutine per
// participant, the fan-out before the Board), board (Board.Run, the busy
// goroutines not helping), help (they call Help before Gosched). Reported
// per fan-out: ns/op its wall time, and x-serial, that wall over the
// chunks' work done one after another (measured alone before): about
// 1/GOMAXPROCS when the fan-out gets every core, 1 when it runs serially
// (blurred by other load on the machine's cores); par, the chunks running
// at once when one starts, on average (Go's view: 1 when the fan-out runs
// serially, up to GOMAXPROCS).
func BenchmarkFanOutBeside(b *testing.B) {
	const fanChunks, chunkIters, itemIters = 32, 20000, 8000
	serial := func() time.Duration { // the chunks' work, one after another
		t0 := time.Now()
		for range fanChunks {
			spin(chunkIters)
		}
		return time.Since(t0)
	}
	for _, load := range []string{"idle", "beside", "full"} {
		for _, mode := range []string{"spawn", "board", "help"} {
			if load == "idle" && mode == "help" {
				continue // nobody to help
			}
			b.Run(load+"/"+mode, func(b *testing.B) {
				var board Board
				busy := 0 // idle: the fan-out alone (the GPU alone)
				switch load {
				case "beside":
					busy = runtime.GOMAXPROCS(0) - 1
				case "full":
					busy = runtime.GOMAXPROCS(0)
				}
				stop := make(chan struct{})
				var wg sync.WaitGroup
				var items, helped atomic.Int64
				for range busy {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							select {
							case <-stop:
								return
							default:
							}
							spin(itemIters)
							items.Add(1)
							if mode == "help" && board.Help() {
								helped.Add(1)
							}
							runtime.Gosched()
						}
					}()
				}
				// par: the chunks running at once (Go's Ps, not the OS's
				// cores: a measure the other load here does not blur);
				// parSum / chunks is how many ran beside each on average.
				var par, parSum atomic.Int64
				f := func(w, lo, hi int) {
					parSum.Add(par.Add(1))
					spin(chunkIters)
					par.Add(-1)
				}
				board.Run(runtime.GOMAXPROCS(0), fanChunks, 1, f) // the Board's workers
				base := serial()
				parSum.Store(0)
				b.ResetTimer()
				t0 := time.Now()
				for range b.N {
					if mode == "spawn" {
						spawn(runtime.GOMAXPROCS(0), fanChunks, 1, f)
					} else {
						board.Run(runtime.GOMAXPROCS(0), fanChunks, 1, f)
					}
				}
				wall := time.Since(t0)
				b.StopTimer()
				close(stop)
				wg.Wait()
				b.ReportMetric(float64(wall)/float64(b.N)/float64(base), "x-serial")
				b.ReportMetric(float64(items.Load())/wall.Seconds(), "items/s")
				b.ReportMetric(float64(helped.Load())/float64(b.N), "helps/op")
				b.ReportMetric(float64(parSum.Load())/float64(fanChunks*b.N), "par")
			})
		}
	}
}

// BenchmarkRunOverhead is a fan-out's own cost, nobody else busy: 16
// chunks of 256 trivial items over GOMAXPROCS participants, on goroutines
// of its own (spawn, before the Board) and on a Board (the caller and its
// woken workers).
func BenchmarkRunOverhead(b *testing.B) {
	var sink atomic.Int64
	f := func(w, lo, hi int) { sink.Add(int64(hi - lo)) }
	for _, mode := range []string{"spawn", "board"} {
		b.Run(mode, func(b *testing.B) {
			var board Board
			board.Run(runtime.GOMAXPROCS(0), 4096, 256, f)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if mode == "spawn" {
					spawn(runtime.GOMAXPROCS(0), 4096, 256, f)
				} else {
					board.Run(runtime.GOMAXPROCS(0), 4096, 256, f)
				}
			}
		})
	}
}
