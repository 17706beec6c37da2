package gpu

import (
	"context"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
)

// TestSearchBatchConcurrent runs batches from several goroutines at once
// (serve keeps two in flight: one preparing on the host while the other's
// launch sets run) and requires each answer to equal the CPU engine's,
// with the device hook called once per batch. Run it with -race: the
// preparation of one batch must not touch what another's launch sets use.
func TestSearchBatchConcurrent(t *testing.T) {
	c := testContext(t)
	rng := rand.New(rand.NewSource(25))
	col := genCollection(rng, 1500, 24, 16, false)
	x := col.bp128(t)
	nq := 16
	if emulated(c) {
		nq = 4
	}
	qs := expand(randomQueries(rng, col.terms, nq, nil), []int{1, 10, 100})
	want := cpuAnswers(t, x, qs)
	// Threshold 64: several launch sets per batch, so that batches
	// interleave on the host while one holds the device.
	g := newBackend(t, x, Options{Threshold: 64})
	const workers, rounds = 4, 3
	var hooks, busy atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan string, workers*rounds*len(qs))
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				// Each worker takes a different, overlapping window of qs.
				lo := (w*len(qs)/workers + r) % len(qs)
				hi := min(len(qs), lo+len(qs)/2+1)
				batch := qs[lo:hi]
				out := make([]engine.Response, len(batch))
				ctx := WithDeviceHook(context.Background(), func(prepared time.Duration) {
					if prepared < 0 {
						errs <- "negative preparation time"
					}
					if busy.Add(1) != 1 {
						errs <- "two batches hold the device at once"
					}
					hooks.Add(1)
					busy.Add(-1)
				})
				if err := g.SearchBatch(ctx, batch, engine.Options{}, out); err != nil {
					errs <- err.Error()
					return
				}
				for i := range batch {
					if msg := sameResponse(out[i], want[lo+i]); msg != "" {
						errs <- batch[i].ID + ": " + msg
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	if n := hooks.Load(); n != workers*rounds {
		t.Errorf("device hook called %d times, want %d (once per batch)", n, workers*rounds)
	}
	if p := g.Profile(); p.Batches != workers*rounds {
		t.Errorf("profile counts %d batches, want %d", p.Batches, workers*rounds)
	}
}

// TestBufPool checks that SearchBatch's buffers are reused, hold at least
// the batch's queries, and let go of the caller's queries when returned.
func TestBufPool(t *testing.T) {
	var p bufPool
	a := p.get(10)
	if len(a.preps) < 10 || len(a.errs) < 10 || cap(a.work) < 10 {
		t.Fatalf("get(10): %d preps, %d errs, work cap %d", len(a.preps), len(a.errs), cap(a.work))
	}
	q := engine.Query{ID: "x"}
	a.preps[0].q = &q
	a.work = append(a.work, &a.preps[0])
	p.put(a)
	if a.preps[0].q != nil || len(a.work) != 0 || a.work[:1][0] != nil {
		t.Fatal("put kept a reference to the caller's query or the work list")
	}
	b := p.get(5)
	if b != a {
		t.Fatal("get after put did not reuse the buffers")
	}
	c := p.get(20) // the pool is empty: new buffers
	if c == b || len(c.preps) < 20 {
		t.Fatalf("second get: same buffers %v, %d preps", c == b, len(c.preps))
	}
	for range 2 * maxFreeBufs {
		p.put(&batchBufs{})
	}
	if len(p.free) != maxFreeBufs {
		t.Fatalf("pool keeps %d buffers, want at most %d", len(p.free), maxFreeBufs)
	}
}

// TestPrepareCores: SetPrepareCores caps prepareBatch's goroutines at k,
// at most GOMAXPROCS; k <= 0 restores GOMAXPROCS. No device needed.
func TestPrepareCores(t *testing.T) {
	var b Backend
	all := runtime.GOMAXPROCS(0)
	for _, tc := range []struct{ k, want int }{{0, all}, {1, 1}, {all + 5, all}, {-3, all}, {1 << 40, all}} {
		b.SetPrepareCores(tc.k)
		if got := b.prepareWorkers(); got != tc.want {
			t.Errorf("SetPrepareCores(%d): %d workers, want %d", tc.k, got, tc.want)
		}
	}
	var calls atomic.Int32
	var seen [1000]atomic.Bool
	parallelWorkers(2, len(seen), 10, func(lo, hi int) {
		calls.Add(1)
		for i := lo; i < hi; i++ {
			if seen[i].Swap(true) {
				t.Errorf("index %d twice", i)
			}
		}
	})
	for i := range seen {
		if !seen[i].Load() {
			t.Fatalf("index %d not covered", i)
		}
	}
	if calls.Load() != 100 {
		t.Errorf("%d chunks of 10 for 1000, want 100", calls.Load())
	}
}

// TestBufPoolGrowth: a batch larger than the last one but within the
// buffers' capacity (append rounds it up) is put back without indexing
// past the preps (the twenty-third session's device run: bench sched
// panicked in put with "index out of range [402] with length 402"), and
// put drops every reference to its queries.
func TestBufPoolGrowth(t *testing.T) {
	var p bufPool
	q := &engine.Query{}
	grown := 0
	for n := 1; n <= 2000; n += 7 {
		bb := p.get(n)
		if len(bb.preps) != cap(bb.preps) || len(bb.errs) < n || len(bb.preps) < n {
			t.Fatalf("get(%d): preps len %d cap %d, errs %d", n, len(bb.preps), cap(bb.preps), len(bb.errs))
		}
		if c := cap(bb.preps); c > n {
			grown++
		}
		bb.used = n
		for i := range n {
			bb.preps[i].q = q
		}
		p.put(bb)
		for i := range bb.preps {
			if bb.preps[i].q != nil {
				t.Fatalf("get(%d): prep %d still holds its query after put", n, i)
			}
		}
	}
	if grown == 0 {
		t.Fatal("no batch got buffers larger than it: the case is not exercised")
	}
}

// TestHelpHost runs batches large enough that their host phases fan out
// (several chunks of prepChunk queries) while goroutines call HelpHost in
// a loop, as the scheduler's CPU slots do beside a GPU (issue 24, twelfth
// round): the answers must equal the CPU engine's whoever ran the chunks,
// and the helpers must not be left inside a job once the batches are
// done.
func TestHelpHost(t *testing.T) {
	c := testContext(t)
	rng := rand.New(rand.NewSource(26))
	col := genCollection(rng, 1500, 24, 16, false)
	x := col.bp128(t)
	nq := 250 // 1,500 queries: six chunks of prepChunk
	if emulated(c) {
		nq = 150
	}
	qs := expand(randomQueries(rng, col.terms, nq, nil), []int{10})
	if len(qs) <= prepChunk {
		t.Fatalf("%d queries: want more than a chunk (%d)", len(qs), prepChunk)
	}
	want := cpuAnswers(t, x, qs)
	g := newBackend(t, x, Options{})
	stop := make(chan struct{})
	var helped atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if HelpHost() {
					helped.Add(1)
				}
				runtime.Gosched()
			}
		}()
	}
	for r := range 3 {
		out := make([]engine.Response, len(qs))
		if err := g.SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
			t.Fatal(err)
		}
		for i := range qs {
			if msg := sameResponse(out[i], want[i]); msg != "" {
				t.Errorf("round %d, %s: %s", r, qs[i].ID, msg)
			}
		}
	}
	close(stop)
	wg.Wait()
	if HelpHost() {
		t.Error("HelpHost ran chunks with no batch running")
	}
	t.Logf("%d queries a batch; the helpers ran chunks %d times in 3 batches", len(qs), helped.Load())
}

// TestDeviceDoneHook checks WithDeviceDoneHook: called once per batch,
// after the device hook, with that batch's share of the profile (the sums
// over the batches equal the profile's counts; the owner closure's time
// covers its stream waits; CUDA-event time only when profiling).
func TestDeviceDoneHook(t *testing.T) {
	c := testContext(t)
	rng := rand.New(rand.NewSource(26))
	col := genCollection(rng, 1500, 24, 16, false)
	x := col.bp128(t)
	nq := 12
	if emulated(c) {
		nq = 4
	}
	qs := expand(randomQueries(rng, col.terms, nq, nil), []int{10})
	g := newBackend(t, x, Options{Threshold: 64})
	for _, prof := range []bool{false, true} {
		g.SetProfile(prof)
		g.ResetProfile()
		var sum BatchDevice
		calls := 0
		for lo := 0; lo < len(qs); lo += 3 {
			batch := qs[lo:min(lo+3, len(qs))]
			out := make([]engine.Response, len(batch))
			took := false
			ctx := WithDeviceHook(context.Background(), func(time.Duration) { took = true })
			ctx = WithDeviceDoneHook(ctx, func(d BatchDevice) {
				if !took {
					t.Error("done hook before the device hook")
				}
				if d.Sets < 1 || d.Run <= 0 || d.Wait < 0 || d.Sync > d.Run || d.DriverCalls <= 0 {
					t.Errorf("profile %v: batch %+v: want sets >= 1, run > 0, wait >= 0, sync <= run, driver calls > 0", prof, d)
				}
				if (d.GPU > 0) != prof {
					t.Errorf("profile %v: CUDA-event time %v", prof, d.GPU)
				}
				calls++
				sum.Sets += d.Sets
				sum.Launches += d.Launches
				sum.DriverCalls += d.DriverCalls
				sum.Run += d.Run
			})
			if err := g.SearchBatch(ctx, batch, engine.Options{}, out); err != nil {
				t.Fatal(err)
			}
		}
		p := g.Profile()
		if int64(calls) != p.Batches {
			t.Errorf("profile %v: done hook called %d times for %d batches", prof, calls, p.Batches)
		}
		if sum.Sets != p.Sets || sum.Launches != p.Launches || sum.DriverCalls != p.DriverCalls || sum.Run != p.HostRun {
			t.Errorf("profile %v: the batches' sums %+v differ from the profile's sets %d, launches %d, driver calls %d, run %v",
				prof, sum, p.Sets, p.Launches, p.DriverCalls, p.HostRun)
		}
	}
}
