package scheduler

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/topk"
)

// TestSubmitBatch: queries submitted in batches (SubmitBatch) are answered
// exactly as the CPU engine answers them alone, each done called once; a
// Request.Result is the record done receives, and the capacity of its
// Results is reused; after Shutdown, SubmitBatch returns ErrClosed and
// calls nothing.
func TestSubmitBatch(t *testing.T) {
	x := testIndex(t)
	qs := testQueries(200, 3)
	want := direct(t, x, qs)
	for _, tc := range []struct {
		name string
		cfg  func() Config
	}{
		{"cpu-only", func() Config { return Config{CPU: &Processor{Backend: engine.NewCPU(x, 1), Slots: 2}} }},
		{"cpu-runs", func() Config {
			return Config{CPU: &Processor{Backend: engine.NewCPU(x, 1), Slots: 2, Sequential: true, Batch: BatchPolicy{MaxQueries: 8}}}
		}},
		{"gpu-first", func() Config {
			return Config{CPU: &Processor{Backend: engine.NewCPU(x, 1), Slots: 2},
				GPU:       &Processor{Name: "fake-gpu", Backend: engine.NewCPU(x, 1), Batch: BatchPolicy{MaxQueries: 16, MaxWait: time.Millisecond}},
				Placement: PlaceGPUFirst}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			s, err := New(x, tc.cfg())
			if err != nil {
				t.Fatal(err)
			}
			slab := make([]Result, len(qs))
			bufs := make([][]topk.Result, len(qs)) // the capacity given with each even query
			for i := 0; i < len(qs); i += 2 {
				bufs[i] = make([]topk.Result, 0, 1024) // more than any path of the engine needs for k = 10
				slab[i].Results = bufs[i]
			}
			var mu sync.Mutex
			got := make([]*Result, len(qs))
			calls := make([]int, len(qs))
			var wg sync.WaitGroup
			wg.Add(len(qs))
			done := func(r *Result) {
				mu.Lock()
				got[r.Tag], calls[r.Tag] = r, calls[r.Tag]+1
				mu.Unlock()
				wg.Done()
			}
			for lo := 0; lo < len(qs); lo += 7 {
				var rs []Request
				for i := lo; i < min(lo+7, len(qs)); i++ {
					r := Request{Query: qs[i], Tag: i}
					if i%2 == 0 {
						r.Result = &slab[i]
					}
					rs = append(rs, r)
				}
				if err := s.SubmitBatch(rs, done); err != nil {
					t.Fatal(err)
				}
			}
			wg.Wait()
			if st := s.Stats(); st.Submitted != uint64(len(qs)) || st.Completed != uint64(len(qs)) {
				t.Errorf("stats: %d submitted, %d completed; want %d", st.Submitted, st.Completed, len(qs))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.SubmitBatch([]Request{{Query: qs[0]}}, func(*Result) { t.Error("done called after shutdown") }); err != ErrClosed {
				t.Errorf("SubmitBatch after Close: %v, want ErrClosed", err)
			}
			checkNoLeak(t, before)
			for i, r := range got {
				if calls[i] != 1 {
					t.Fatalf("query %d: done called %d times", i, calls[i])
				}
				if err := sameResponse(r.Response, want[i]); err != nil {
					t.Fatalf("query %d: %v", i, err)
				}
				if i%2 == 0 {
					if r != &slab[i] {
						t.Fatalf("query %d: result not written to its Request.Result", i)
					}
					if len(r.Results) > 0 && &r.Results[:1][0] != &bufs[i][:1][0] {
						t.Fatalf("query %d: the Results capacity given was not reused", i)
					}
				}
			}
		})
	}
}

// TestSequentialRunAllocs: a CPU slot running a batch query by query into
// caller-owned Results (the replay's) allocates nothing per query.
func TestSequentialRunAllocs(t *testing.T) {
	x := testIndex(t)
	s, err := newScheduler(x, Config{CPU: &Processor{Backend: nopBackend{}, Slots: 1, Sequential: true,
		Batch: BatchPolicy{MaxQueries: 4}, Model: constModel(time.Microsecond)}})
	if err != nil {
		t.Fatal(err)
	}
	p := s.procs[CPU]
	slab := make([]Result, 4)
	var answered int
	done := func(*Result) { answered++ }
	bb := s.newBuilder(p)
	for i := range slab {
		bb.add(s.newJob(Request{Query: engine.Query{ID: "q", Terms: []string{termName(10 + i)}, Mode: engine.And, K: 10},
			Result: &slab[i]}, done), false)
	}
	b := s.newBatch(&bb, false)
	jobs, urgency := slices.Clone(b.jobs), slices.Clone(b.urgency)
	var buf slotBuf
	allocs := testing.AllocsPerRun(50, func() {
		if b.arr == nil {
			t.Fatal("a batch of 4 without pooled arrays")
		}
		s.run(p, b, &buf) // returns b's arrays to the pool: the same batch again, from the pool
		a := s.arrays.get()
		a.jobs, a.urgency = append(a.jobs[:0], jobs...), append(a.urgency[:0], urgency...)
		b.arr, b.jobs, b.urgency = a, a.jobs, a.urgency
		<-s.done // what the dispatcher would take
	})
	if allocs != 0 {
		t.Errorf("%v allocations per sequential batch of 4, want 0", allocs)
	}
	if answered != 4*51 {
		t.Errorf("%d answers, want %d", answered, 4*51)
	}
	for i := range slab {
		if slab[i].Proc != CPU || slab[i].BatchSize != 4 || slab[i].Query.Terms[0] != termName(10+i) {
			t.Errorf("result %d: %+v", i, slab[i])
		}
	}
}

// TestTryObserve: without contention TryObserve learns every sample, as
// Observe does; while another goroutine holds the model it drops the
// sample instead of waiting.
func TestTryObserve(t *testing.T) {
	m := NewCostModel(ModelOptions{})
	f := Features{Mode: engine.And, Terms: 2, Min: 10, Second: 20, Max: 30, Sum: 60}
	for range 5 {
		if !m.TryObserve(f, time.Millisecond) {
			t.Fatal("TryObserve dropped a sample without contention")
		}
	}
	if n := m.Samples(); n != 5 {
		t.Fatalf("%d samples learned, want 5", n)
	}
	m.mu.Lock()
	ok := m.TryObserve(f, time.Millisecond)
	m.mu.Unlock()
	if ok {
		t.Fatal("TryObserve learned while the model was held")
	}
	if n := m.Samples(); n != 5 {
		t.Fatalf("%d samples after a dropped one, want 5", n)
	}
	if _, n := m.MeanRelError(); n != 5 {
		t.Fatalf("error record of %d samples, want 5", n)
	}
}

// TestSearchUnbounded: the rate search has no upper bound by default: from
// 1,000 q/s it doubles past the old 1M cap to a capacity of 3.7M q/s and
// brackets it to 5%.
func TestSearchUnbounded(t *testing.T) {
	const capacity = 3.7e6
	e := &Experiment{Search: RateSearch{Start: 1000, Repeats: 1, MaxRuns: 20}}
	var runs int
	sr, err := e.search(CPUOnly, [2]Processor{}, [2]*CostModel{}, func(_ Setup, r float64, _ bool, _ uint64) (Run, error) {
		runs++
		run := Run{Rate: r, Submitted: 1, Answered: 1, Deadline: time.Second}
		if r > capacity {
			run.P99 = 2 * time.Second
		}
		return run, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !(sr.MaxRate <= capacity && sr.Failed > capacity && sr.Failed-sr.MaxRate <= 0.05*sr.Failed) {
		t.Fatalf("search: sustained %v, failed %v; want a 5%% bracket of %v (%d runs)", sr.MaxRate, sr.Failed, capacity, runs)
	}
}

// TestRunLength: a run replays the log once, or cyclically for the minimum
// duration, capped at maxRunQueries.
func TestRunLength(t *testing.T) {
	for _, c := range []struct {
		log  int
		rate float64
		dur  time.Duration
		want int
	}{
		{1000, 1e5, 0, 1000},
		{1000, 1e5, -time.Second, 1000},
		{1000, 100, time.Second, 1000},
		{1000, 1e5, time.Second, 100_000},
		{1000, 1e8, time.Second, maxRunQueries},
		{maxRunQueries + 5, 1e8, time.Second, maxRunQueries + 5},
	} {
		if got := runLength(c.log, c.rate, c.dur); got != c.want {
			t.Errorf("runLength(%d, %v, %v) = %d, want %d", c.log, c.rate, c.dur, got, c.want)
		}
	}
}

// TestReplayCyclic: a replay longer than its log answers the i-th arrival
// with query i mod the log's length, from the features given, into the
// slab given.
func TestReplayCyclic(t *testing.T) {
	x := testIndex(t)
	qs := testQueries(30, 9)
	want := direct(t, x, qs)
	feats := featuresOf(x, qs)
	s, err := New(x, Config{CPU: &Processor{Backend: engine.NewCPU(x, 1), Slots: 2, Sequential: true, Batch: BatchPolicy{MaxCost: time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 3*len(qs) + 7
	var rs replaySlab
	rs.reserve(n, n, qs)
	slab := rs.res
	res, err := replay(context.Background(), s, qs, feats, Arrivals(n, 20_000, 2), -1, &rs, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r != &slab[i] {
			t.Fatalf("arrival %d: result not in its slab slot", i)
		}
		if r.Features != feats[i%len(qs)] || r.Query.ID != qs[i%len(qs)].ID {
			t.Fatalf("arrival %d: query %q, want %q", i, r.Query.ID, qs[i%len(qs)].ID)
		}
		if err := sameResponse(r.Response, want[i%len(qs)]); err != nil {
			t.Fatalf("arrival %d: %v", i, err)
		}
	}
	if run := Summarize(CPUOnly, 20_000, res); run.Answered != n || run.Mean < 0 {
		t.Fatalf("run %+v", run)
	}
}

// TestReplayQuantum: with a submit quantum every arrival is answered as
// without one, none is submitted before its scheduled arrival, and the
// submitter's wake-ups that found nothing overdue are at least a quantum
// apart: at most wall/quantum of them, plus the continuations of bursts
// cut at maxBurst (an upper bound that holds on a loaded machine too,
// where late wake-ups only make bursts larger).
func TestReplayQuantum(t *testing.T) {
	x := testIndex(t)
	qs := testQueries(40, 5)
	want := direct(t, x, qs)
	feats := featuresOf(x, qs)
	const n, rate, quantum = 6000, 200_000, 2 * time.Millisecond
	s, err := New(x, Config{CPU: &Processor{Backend: engine.NewCPU(x, 1), Slots: 2, Sequential: true, Batch: BatchPolicy{MaxCost: time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	var rs replaySlab
	t0 := time.Now()
	res, err := replay(context.Background(), s, qs, feats, Arrivals(n, rate, 4), -1, &rs, quantum)
	wall := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r == nil || r.Tag != i {
			t.Fatalf("arrival %d: result %v", i, r)
		}
		if err := sameResponse(r.Response, want[i%len(qs)]); err != nil {
			t.Fatalf("arrival %d: %v", i, err)
		}
		if r.Submitted.Before(r.Arrival) {
			t.Fatalf("arrival %d submitted %v before its arrival", i, r.Arrival.Sub(r.Submitted))
		}
	}
	bursts := s.Stats().Submissions
	if limit := uint64(wall/quantum) + n/maxBurst + 1; bursts > limit {
		t.Fatalf("%d submissions in %v with a quantum of %v: more than %d", bursts, wall, quantum, limit)
	}
	if bursts == 0 || bursts >= n {
		t.Fatalf("%d submissions of %d arrivals", bursts, n)
	}
}

// TestReplaySlabReserve: reserve gives each new record a Results slice of
// its query's K capacity (no two sharing memory), keeps the records it had
// (and their capacity) when it grows, and a second replay into the reused
// slab answers as the first.
func TestReplaySlabReserve(t *testing.T) {
	x := testIndex(t)
	qs := testQueries(7, 3)
	qk := slices.Clone(qs)
	qk[2].K = 0 // the default: no capacity given
	var rs replaySlab
	rs.reserve(5, 5, qk)
	if len(rs.res) != 5 || len(rs.ptrs) != 5 {
		t.Fatalf("reserve(5): %d records, %d pointers", len(rs.res), len(rs.ptrs))
	}
	first := &rs.res[0]
	rs.reserve(4, 100, qk) // enough already: unchanged
	if len(rs.res) != 5 || &rs.res[0] != first {
		t.Fatal("reserve of fewer records reallocated")
	}
	rs.res[1].Results = append(rs.res[1].Results, topk.Result{Doc: 42})
	rs.reserve(9, 20, qk)
	if len(rs.res) != 20 || len(rs.ptrs) != 20 {
		t.Fatalf("reserve(9, 20): %d records, %d pointers", len(rs.res), len(rs.ptrs))
	}
	if len(rs.res[1].Results) != 1 || rs.res[1].Results[0].Doc != 42 {
		t.Fatalf("record 1 not kept: %v", rs.res[1].Results)
	}
	for i := 5; i < 20; i++ {
		r := &rs.res[i]
		want := qk[i%len(qk)].K
		if len(r.Results) != 0 || cap(r.Results) != want {
			t.Fatalf("record %d: len %d cap %d, want 0 and %d", i, len(r.Results), cap(r.Results), want)
		}
		if want > 0 {
			r.Results = append(r.Results, topk.Result{Doc: uint32(i)})
		}
	}
	for i := 5; i < 20; i++ { // one record's appends never reach another's
		if r := rs.res[i]; cap(r.Results) > 0 && r.Results[0].Doc != uint32(i) {
			t.Fatalf("record %d holds doc %d", i, r.Results[0].Doc)
		}
	}
	want := direct(t, x, qs)
	feats := featuresOf(x, qs)
	for run := range 2 {
		s, err := New(x, Config{CPU: &Processor{Backend: engine.NewCPU(x, 1), Slots: 2, Sequential: true}})
		if err != nil {
			t.Fatal(err)
		}
		n := 3 * len(qs)
		res, err := replay(context.Background(), s, qs, feats, Arrivals(n, 20_000, uint64(run)), -1, &rs, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != n {
			t.Fatalf("run %d: %d results, want %d", run, len(res), n)
		}
		for i, r := range res {
			if err := sameResponse(r.Response, want[i%len(qs)]); err != nil {
				t.Fatalf("run %d arrival %d: %v", run, i, err)
			}
		}
	}
}

// TestChunked: clearChunked and copyChunked clear and copy every element
// (lengths around their piece size, pointerful and plain elements), and
// copyChunked copies min(len(dst), len(src)) as copy does.
func TestChunked(t *testing.T) {
	step := chunkBytes / int(unsafe.Sizeof(Result{}))
	for _, n := range []int{0, 1, step - 1, step, step + 1, 2*step + 3} {
		src := make([]Result, n)
		for i := range src {
			src[i].Tag, src[i].Query.ID = i+1, "q"
		}
		dst := make([]Result, n+1)
		dst[n].Tag = -1
		copyChunked(dst, src)
		for i := range n {
			if dst[i].Tag != i+1 || dst[i].Query.ID != "q" {
				t.Fatalf("n %d: copied record %d: tag %d", n, i, dst[i].Tag)
			}
		}
		if dst[n].Tag != -1 {
			t.Fatalf("n %d: copy wrote past the source", n)
		}
		clearChunked(dst[:n])
		for i := range n {
			if dst[i].Tag != 0 || dst[i].Query.ID != "" {
				t.Fatalf("n %d: record %d not cleared", n, i)
			}
		}
		if dst[n].Tag != -1 {
			t.Fatalf("n %d: clear wrote past the slice", n)
		}
		ps := make([]*Result, 3*(chunkBytes/8)+1)
		for i := range ps {
			ps[i] = &dst[n]
		}
		clearChunked(ps)
		if i := slices.IndexFunc(ps, func(p *Result) bool { return p != nil }); i >= 0 {
			t.Fatalf("n %d: pointer %d not cleared", n, i)
		}
	}
}

// TestLearnEvery: a sequential CPU slot with LearnEvery 4 refits its model
// on one answer in four; without it, on every answer.
func TestLearnEvery(t *testing.T) {
	x := testIndex(t)
	for _, c := range []struct{ every, want int }{{0, 8}, {1, 8}, {4, 2}} {
		m := NewCostModel(ModelOptions{})
		s, err := newScheduler(x, Config{CPU: &Processor{Backend: nopBackend{}, Slots: 1, Sequential: true,
			Batch: BatchPolicy{MaxQueries: 8}, Model: m, LearnEvery: c.every}})
		if err != nil {
			t.Fatal(err)
		}
		p := s.procs[CPU]
		bb := s.newBuilder(p)
		for i := range 8 {
			bb.add(s.newJob(Request{Query: engine.Query{ID: "q", Terms: []string{termName(10 + i)}, Mode: engine.And, K: 10}}, func(*Result) {}), false)
		}
		var buf slotBuf
		s.run(p, s.newBatch(&bb, false), &buf)
		<-s.done
		if n := m.Samples(); n != c.want {
			t.Errorf("LearnEvery %d: %d samples learned from 8 answers, want %d", c.every, n, c.want)
		}
	}
}

// TestBatchLearnEvery: a processor whose batches hold several queries
// learns from one batch in Processor.LearnEvery (each of its queries),
// and its batches' arrays go back to the pool once delivered.
func TestBatchLearnEvery(t *testing.T) {
	x := testIndex(t)
	m := NewCostModel(ModelOptions{})
	s, err := newScheduler(x, Config{GPU: &Processor{Backend: nopBackend{}, Slots: 1, LearnEvery: 4,
		Batch: BatchPolicy{MaxQueries: 3}, Model: m}})
	if err != nil {
		t.Fatal(err)
	}
	p := s.procs[GPU]
	var answered int
	var mu sync.Mutex
	done := func(*Result) { mu.Lock(); answered++; mu.Unlock() }
	for i := range 8 {
		bb := s.newBuilder(p)
		for k := range 3 {
			bb.add(s.newJob(Request{Query: engine.Query{ID: "q", Terms: []string{termName(10 + k + i)}, Mode: engine.And, K: 10}}, done), false)
		}
		b := s.newBatch(&bb, false)
		if b.arr == nil || len(b.jobs) != 3 {
			t.Fatalf("batch %d: arrays %v, %d jobs", i, b.arr != nil, len(b.jobs))
		}
		s.run(p, b, nil)
		<-s.done
		s.wg.Wait() // the delivery
	}
	if answered != 24 {
		t.Errorf("%d answers, want 24", answered)
	}
	if got := m.Samples(); got != 2*3 {
		t.Errorf("model learned %d samples from 8 batches of 3 with LearnEvery 4, want 6", got)
	}
	if n := len(s.arrays.free); n != 1 {
		t.Errorf("%d arrays in the pool after 8 sequential batches, want 1 (reused)", n)
	}
}

// TestBatchLearnCap: a batch of more than maxBatchLearn queries teaches
// the model maxBatchLearn samples, evenly spaced over the batch (every
// query of a smaller batch), and every query is still answered with its
// record.
func TestBatchLearnCap(t *testing.T) {
	for _, n := range []int{1, 7, maxBatchLearn, maxBatchLearn + 1, 1000, 4096} {
		m := min(n, maxBatchLearn)
		prev := -1
		for i := range m {
			k := batchLearnIndex(i, n, m)
			if k <= prev || k >= n {
				t.Fatalf("batch of %d: learned position %d is %d after %d", n, i, k, prev)
			}
			prev = k
		}
		if m == n && prev != n-1 {
			t.Fatalf("batch of %d: last learned position %d, want every query", n, prev)
		}
		if m < n && prev < n-1-n/m {
			t.Fatalf("batch of %d: last learned position %d, not spread to the end", n, prev)
		}
	}
	x := testIndex(t)
	model := NewCostModel(ModelOptions{})
	s, err := newScheduler(x, Config{GPU: &Processor{Backend: nopBackend{}, Slots: 1,
		Batch: BatchPolicy{MaxQueries: 1000}, Model: model}})
	if err != nil {
		t.Fatal(err)
	}
	p := s.procs[GPU]
	var answered int
	var mu sync.Mutex
	done := func(r *Result) {
		mu.Lock()
		defer mu.Unlock()
		if r.Proc == GPU && r.BatchSize == 1000 {
			answered++
		}
	}
	bb := s.newBuilder(p)
	for k := range 1000 {
		bb.add(s.newJob(Request{Query: engine.Query{ID: "q", Terms: []string{termName(10 + k%50)}, Mode: engine.And, K: 10}}, done), false)
	}
	s.run(p, s.newBatch(&bb, false), nil)
	<-s.done
	s.wg.Wait() // the delivery
	if answered != 1000 {
		t.Errorf("%d answers with their records, want 1000", answered)
	}
	if got := model.Samples(); got != maxBatchLearn {
		t.Errorf("model learned %d samples from a batch of 1000, want %d", got, maxBatchLearn)
	}
}

// TestReleaseJobs: releaseJobs drops one reference per job, by runs of
// consecutive jobs of one chunk, whatever the order (a chunk's jobs split
// over runs, jobs of no chunk between): a chunk is cleared and back to
// the pool exactly when its last job is released, not before.
func TestReleaseJobs(t *testing.T) {
	a, b := new(jobChunk), new(jobChunk)
	for _, c := range []*jobChunk{a, b} {
		c.used = 4
		c.live.Store(4)
		for i := range c.jobs[:4] {
			c.jobs[i].tag, c.jobs[i].chunk = i+1, c
		}
	}
	alone := &job{tag: 99} // Submit's: no chunk
	first := []*job{&a.jobs[0], &a.jobs[1], alone, &b.jobs[0], &a.jobs[2], &b.jobs[1], &b.jobs[2]}
	releaseJobs(first)
	if a.live.Load() != 1 || b.live.Load() != 1 || a.used != 4 || b.used != 4 {
		t.Fatalf("after 3 of each: live %d and %d, used %d and %d; want 1, 1, 4, 4", a.live.Load(), b.live.Load(), a.used, b.used)
	}
	if a.jobs[3].tag != 4 || b.jobs[3].tag != 4 || alone.tag != 99 {
		t.Fatal("a job still held was cleared")
	}
	releaseJobs([]*job{&b.jobs[3], &a.jobs[3]})
	for _, c := range []*jobChunk{a, b} {
		if c.live.Load() != 0 || c.used != 0 {
			t.Fatalf("released chunk: live %d, used %d; want 0, 0", c.live.Load(), c.used)
		}
		for i := range c.jobs {
			if c.jobs[i].tag != 0 || c.jobs[i].chunk != nil {
				t.Fatalf("job %d of a released chunk not zero", i)
			}
		}
	}
	releaseJobs(nil)
}

// TestChunkReleaseClears: the last release of a job chunk clears the jobs
// its SubmitBatch call filled (jobs[:used]), and the chunk goes back with
// every job zero, so that initJob, which writes only some fields, starts
// from zero jobs; chunks reused by bursts of different sizes (a burst of
// 64 after one of 3, and back) answer every query, each with its own
// deadline and on the one processor.
func TestChunkReleaseClears(t *testing.T) {
	c := new(jobChunk)
	res := new(Result)
	c.used = 5
	c.live.Store(5)
	for i := range c.jobs[:5] {
		j := &c.jobs[i]
		j.q, j.tag, j.res, j.done, j.custom, j.chunk = engine.Query{ID: "q"}, i, res, func(*Result) {}, true, c
		j.cost = [2]time.Duration{1, 2}
		if i > 0 {
			c.jobs[i-1].more = j
		}
	}
	for i := range c.jobs[:5] {
		c.jobs[i].release()
	}
	if c.used != 0 || c.live.Load() != 0 {
		t.Fatalf("released chunk: used %d, live %d; want 0, 0", c.used, c.live.Load())
	}
	for i := range c.jobs {
		j := &c.jobs[i]
		if j.q.ID != "" || j.tag != 0 || j.res != nil || j.done != nil || j.custom || j.chunk != nil || j.more != nil || j.cost != [2]time.Duration{} {
			t.Fatalf("job %d of a released chunk not zero", i)
		}
	}

	x := testIndex(t)
	qs := testQueries(64, 5)
	s, err := New(x, Config{GPU: &Processor{Backend: nopBackend{}, Batch: BatchPolicy{MaxQueries: 16}}, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := 0
	done := func(r *Result) {
		want := time.Hour
		if r.Tag%2 == 1 {
			want = time.Duration(r.Tag) * time.Minute // a custom deadline on odd tags
		}
		mu.Lock()
		if r.Deadline.Sub(r.Arrival) != want || r.Proc != GPU || r.Predicted[CPU] != 0 {
			bad++
		}
		mu.Unlock()
		wg.Done()
	}
	tag := 0
	for _, n := range []int{3, 64, 1, 64, 7, 40, 64, 2} {
		rs := make([]Request, n)
		for i := range rs {
			rs[i] = Request{Query: qs[tag%len(qs)], Tag: tag}
			if tag%2 == 1 {
				rs[i].Deadline = time.Duration(tag) * time.Minute
			}
			tag++
		}
		wg.Add(n)
		if err := s.SubmitBatch(rs, done); err != nil {
			t.Fatal(err)
		}
		wg.Wait() // the burst's chunk is back in the pool before the next burst
	}
	if bad > 0 {
		t.Fatalf("%d of %d queries with another's deadline, processor or prediction", bad, tag)
	}
	if st := s.Stats(); st.Submissions != 8 || st.Submitted != uint64(tag) {
		t.Fatalf("Stats: %d submissions of %d queries, want 8 of %d", st.Submissions, st.Submitted, tag)
	}
}

// TestBatchArraysPut: a batch's arrays go back to the pool with every
// query and response zero up to their capacity, though put clears only
// the length calls last returned (a large batch, then a small one).
func TestBatchArraysPut(t *testing.T) {
	var p arrayPool
	a := p.get()
	for _, n := range []int{100, 10, 0, 3} {
		qs, out := a.calls(n)
		for i := range qs {
			qs[i] = engine.Query{ID: "q", Terms: []string{"t"}}
			out[i] = engine.Response{Results: make([]topk.Result, 1), Err: ErrClosed}
		}
		p.put(a)
		if a = p.get(); a.used != 0 {
			t.Fatalf("after a batch of %d: used %d, want 0", n, a.used)
		}
		for i := range a.qs[:cap(a.qs)] {
			if a.qs[i].ID != "" || a.qs[i].Terms != nil || a.out[i].Results != nil || a.out[i].Err != nil {
				t.Fatalf("after a batch of %d: entry %d of %d not zero", n, i, cap(a.qs))
			}
		}
	}
}

// TestChunkCarver: consecutive takes share a chunk until its 64 jobs are
// handed out, then a fresh one; a chunk goes back to the pool (all its
// jobs zero) only once every job taken from it is released and the carver
// has moved on or dropped it.
func TestChunkCarver(t *testing.T) {
	var cv chunkCarver
	c1, lo, m := cv.take(10)
	if lo != 0 || m != 10 || c1.live.Load() != 11 {
		t.Fatalf("first take: lo %d, m %d, live %d; want 0, 10, 11", lo, m, c1.live.Load())
	}
	c, lo, m := cv.take(60)
	if c != c1 || lo != 10 || m != 54 || c1.used != chunkJobs {
		t.Fatalf("second take: same chunk %v, lo %d, m %d, used %d; want true, 10, 54, 64", c == c1, lo, m, c1.used)
	}
	for i := range c1.jobs {
		c1.jobs[i].tag, c1.jobs[i].chunk = i+1, c1
	}
	c2, lo, m := cv.take(6) // the carver moves on: c1's own reference dropped
	if c2 == c1 || lo != 0 || m != 6 || c1.live.Load() != chunkJobs {
		t.Fatalf("third take: new chunk %v, lo %d, m %d, old live %d; want true, 0, 6, 64", c2 != c1, lo, m, c1.live.Load())
	}
	for i := range c1.jobs {
		c1.jobs[i].release()
	}
	if c1.used != 0 || c1.live.Load() != 0 || c1.jobs[chunkJobs-1].tag != 0 || c1.jobs[0].chunk != nil {
		t.Fatalf("released chunk: used %d, live %d, jobs not cleared", c1.used, c1.live.Load())
	}
	for i := range c2.jobs[:6] {
		c2.jobs[i].chunk = c2
		c2.jobs[i].release()
	}
	if c2.live.Load() != 1 || c2.used != 6 {
		t.Fatalf("current chunk with its jobs released: live %d, used %d; want 1, 6 (the carver's)", c2.live.Load(), c2.used)
	}
	cv.drop()
	if c2.live.Load() != 0 || c2.used != 0 || cv.cur != nil {
		t.Fatalf("dropped chunk: live %d, used %d", c2.live.Load(), c2.used)
	}
}

// TestSubmitBatchConcurrent: SubmitBatch calls from several goroutines at
// once (their bursts carved from shared chunks, chunkCarver) answer every
// query exactly once, each with its own record; run with -race.
func TestSubmitBatchConcurrent(t *testing.T) {
	x := testIndex(t)
	qs := testQueries(64, 7)
	s, err := New(x, Config{
		CPU: &Processor{Backend: nopBackend{}, Slots: 2},
		GPU: &Processor{Backend: nopBackend{}, Slots: 2, Batch: BatchPolicy{MaxQueries: 100}},
	})
	if err != nil {
		t.Fatal(err)
	}
	const submitters, bursts = 4, 50
	sizes := []int{1, 3, 64, 17, 65, 8}
	total := 0
	for b := range bursts {
		total += sizes[b%len(sizes)]
	}
	slab := make([]Result, submitters*total)
	calls := make([]atomic.Int32, len(slab))
	var wg sync.WaitGroup
	wg.Add(len(slab))
	done := func(r *Result) {
		if r != &slab[r.Tag] || r.Proc == NoProc {
			t.Errorf("query %d: record %p (want %p), processor %v", r.Tag, r, &slab[r.Tag], r.Proc)
		}
		calls[r.Tag].Add(1)
		wg.Done()
	}
	var subs sync.WaitGroup
	for g := range submitters {
		subs.Add(1)
		go func() {
			defer subs.Done()
			tag := g * total
			for b := range bursts {
				rs := make([]Request, sizes[b%len(sizes)])
				for i := range rs {
					rs[i] = Request{Query: qs[tag%len(qs)], Tag: tag, Result: &slab[tag]}
					tag++
				}
				if err := s.SubmitBatch(rs, done); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	subs.Wait()
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			t.Fatalf("query %d: done called %d times, want 1", i, n)
		}
	}
}

// TestSubmitQuantumDefault: an Experiment submits every arrival due at
// its wake-up unless a positive quantum is set (the quantum's sleeps
// overran by milliseconds on the H100 host: not the default).
func TestSubmitQuantumDefault(t *testing.T) {
	for _, c := range []struct{ set, want time.Duration }{{0, 0}, {-time.Second, 0}, {DefaultSubmitQuantum, DefaultSubmitQuantum}} {
		if got := (&Experiment{SubmitQuantum: c.set}).submitQuantum(); got != c.want {
			t.Errorf("SubmitQuantum %v: replay's quantum %v, want %v", c.set, got, c.want)
		}
	}
}
