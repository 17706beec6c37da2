package scheduler

// The replay tests run real (tiny) replays on CPU backends: they check the
// bookkeeping, not the speed of any processor, and assert no timings.

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// TestArrivalsPoisson checks the statistics of the arrival process: mean
// and coefficient of variation of the gaps (1/rate and 1 for exponential
// gaps), and the index of dispersion of counts per second (1 for Poisson
// counts), plus determinism and scaling with the rate.
func TestArrivalsPoisson(t *testing.T) {
	const n, rate = 200_000, 500.0
	a := Arrivals(n, rate, 7)
	var sum, sum2 float64
	prev := time.Duration(0)
	for _, at := range a {
		if at < prev {
			t.Fatal("arrivals not sorted")
		}
		g := (at - prev).Seconds()
		sum += g
		sum2 += g * g
		prev = at
	}
	mean := sum / n
	sd := math.Sqrt(sum2/n - mean*mean)
	if math.Abs(mean*rate-1) > 0.01 {
		t.Errorf("mean gap %v, want %v", mean, 1/rate)
	}
	if cv := sd / mean; math.Abs(cv-1) > 0.02 {
		t.Errorf("coefficient of variation %v, want 1", cv)
	}
	secs := int(a[n-1].Seconds())
	counts := make([]float64, secs)
	for _, at := range a {
		if s := int(at.Seconds()); s < secs {
			counts[s]++
		}
	}
	var cm, cv2 float64
	for _, c := range counts {
		cm += c
	}
	cm /= float64(secs)
	for _, c := range counts {
		cv2 += (c - cm) * (c - cm)
	}
	cv2 /= float64(secs - 1)
	if math.Abs(cm/rate-1) > 0.02 || math.Abs(cv2/cm-1) > 0.25 {
		t.Errorf("counts per second: mean %v variance %v (want both ≈ %v)", cm, cv2, rate)
	}
	b := Arrivals(n, rate, 7)
	c := Arrivals(n, 2*rate, 7)
	d := Arrivals(n, rate, 8)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different arrivals")
		}
		if diff := a[i] - 2*c[i]; diff < -2 || diff > 2 {
			t.Fatalf("arrival %d: %v at rate r, %v at 2r", i, a[i], c[i])
		}
	}
	if a[0] == d[0] && a[1] == d[1] {
		t.Fatal("different seeds, same arrivals")
	}
}

func TestReplay(t *testing.T) {
	x := testIndex(t)
	qs := testQueries(80, 5)
	want := direct(t, x, qs)
	before := runtime.NumGoroutine()
	s, err := New(x, Config{
		CPU: &Processor{Backend: engine.NewCPU(x, 1), Slots: 2},
		GPU: &Processor{Backend: engine.NewCPU(x, 1), Batch: BatchPolicy{MaxQueries: 4}},
	})
	if err != nil {
		t.Fatal(err)
	}
	arr := Arrivals(len(qs), 4000, 1)
	res, err := Replay(context.Background(), s, qs, arr, -1)
	if err != nil {
		t.Fatal(err)
	}
	checkNoLeak(t, before)
	for i, r := range res {
		if r == nil {
			t.Fatalf("query %d not answered", i)
		}
		if err := sameResponse(r.Response, want[i]); err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		if got := r.Arrival.Sub(res[0].Arrival); got != arr[i]-arr[0] {
			t.Fatalf("query %d arrived at +%v, scheduled +%v", i, got, arr[i]-arr[0])
		}
	}
	run := Summarize(Parallel, 4000, res)
	if run.Submitted != len(qs) || run.Answered != len(qs) || run.Abandoned != 0 || run.Stopped {
		t.Fatalf("run %+v", run)
	}
	if run.Procs[CPU].Queries+run.Procs[GPU].Queries != len(qs) {
		t.Fatalf("processor counts %+v", run.Procs)
	}
	if !(run.P50 <= run.P99 && run.P99 <= run.Max && run.Mean <= run.Max && run.Mean > 0) {
		t.Fatalf("delays %+v", run)
	}
	if run.Errors == 0 {
		t.Fatal("the log's invalid queries should count as errors")
	}
}

// TestReplayStopsOnMiss: with a deadline no query can meet, a replay that
// stops on the first miss abandons the rest and shuts down cleanly.
func TestReplayStopsOnMiss(t *testing.T) {
	x := testIndex(t)
	qs := testQueries(200, 6)
	before := runtime.NumGoroutine()
	s, err := New(x, Config{CPU: &Processor{Backend: engine.NewCPU(x, 1)}, Deadline: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Replay(context.Background(), s, qs, Arrivals(len(qs), 100_000, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	checkNoLeak(t, before)
	run := Summarize(CPUOnly, 100_000, res)
	if run.Sustained() || run.Missed == 0 {
		t.Fatalf("run %+v sustained with a 1 ns deadline", run)
	}
	if run.Answered+run.Abandoned != run.Submitted {
		t.Fatalf("run %+v", run)
	}
}

// TestExperiment runs the whole driver on a tiny log: training on both
// backends, a two-rate table for the four setups and a short rate search.
func TestExperiment(t *testing.T) {
	x := testIndex(t)
	all := testQueries(160, 9)
	before := runtime.NumGoroutine()
	var runs int
	e := &Experiment{
		Index:   x,
		CPU:     Processor{Backend: engine.NewCPU(x, 1), Slots: 2},
		GPU:     Processor{Name: "fake-gpu", Backend: engine.NewCPU(x, 1), Batch: BatchPolicy{MaxQueries: 8, MaxPostings: 2000, MaxWait: time.Millisecond}},
		Train:   all[:100],
		Queries: all[100:],
		Rates:   []float64{500, 2000},
		Search:  RateSearch{Start: 1000, Max: 4000, MaxRuns: 3, Repeats: 2},
		Seed:    3,
		// Probe the core split briefly (2 CPU slots: candidates 0 and 1).
		SplitProbe: 20 * time.Millisecond,
		// Replay the log once per run (this test checks bookkeeping).
		MinDuration: -1,
		// The log's lookups carried to the backends (TestCarryLookups
		// checks the answers).
		CarryLookups: true,
		Progress: func(Run) {
			runs++
		},
	}
	rep, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkNoLeak(t, before)
	if !rep.Trained[CPU] || !rep.Trained[GPU] || rep.Training[CPU].Samples == 0 || rep.Training[GPU].HeldOut == 0 {
		t.Fatalf("training %+v", rep.Training)
	}
	if rep.BatchTrained[CPU] || !rep.BatchTrained[GPU] || rep.BatchTraining[GPU].Samples != rep.Training[GPU].Samples {
		t.Fatalf("batch training %v %+v", rep.BatchTrained, rep.BatchTraining)
	}
	if rep.HostCores[CPU] != -1 || (rep.HostCores[GPU] < 0 && runtime.GOOS == "linux") {
		t.Fatalf("host cores %v: want the GPU's measured (its training batches), the CPU's not", rep.HostCores)
	}
	if len(rep.Split) != 2 || rep.Split[0].CPUSlots != 0 || rep.Split[1].CPUSlots != 1 {
		t.Fatalf("core split probes %+v, want 0 and 1 CPU slots", rep.Split)
	}
	for _, p := range rep.Split {
		if p.GPUQueries == 0 || p.Elapsed < e.SplitProbe || (p.CPUSlots == 0 && p.CPUQueries != 0) {
			t.Fatalf("core split probe %+v", p)
		}
	}
	if want := bestSplit(rep.Split).CPUSlots; rep.HybridCPUSlots != want {
		t.Fatalf("CPU+GPU ran %d CPU slots, want the best probe's %d", rep.HybridCPUSlots, want)
	}
	if len(rep.Runs) != 2*len(AllSetups) || len(rep.Searches) != len(AllSetups) {
		t.Fatalf("%d runs, %d searches", len(rep.Runs), len(rep.Searches))
	}
	nsearch := 0
	for i, s := range rep.Searches {
		if s.Setup != AllSetups[i] || len(s.Runs) < 2 || len(s.Runs) > 6 || len(s.Rates) != 2 {
			t.Fatalf("search %+v", s)
		}
		nsearch += len(s.Runs)
	}
	if runs != len(rep.Runs)+nsearch {
		t.Fatalf("progress called %d times for %d runs", runs, len(rep.Runs)+nsearch)
	}
	for i, r := range rep.Runs {
		if r.Setup != AllSetups[i/2] || r.Answered != len(e.Queries) {
			t.Fatalf("run %d: %+v", i, r)
		}
		switch r.Setup {
		case CPUOnly:
			if r.Procs[GPU].Queries != 0 {
				t.Fatal("cpu-only used the GPU")
			}
		case Parallel, ParallelNoSteal:
			if rep.HybridCPUSlots == 0 && r.Procs[CPU].Queries != 0 {
				t.Fatalf("%v with no CPU slot left ran %d queries on the CPU", r.Setup, r.Procs[CPU].Queries)
			}
		case GPUOnly:
			if r.Procs[CPU].Queries != 0 {
				t.Fatal("gpu-only used the CPU")
			}
		}
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"cpu-only", "gpu-only", "best-serial", "cpu+gpu", "cpu+gpu-nosteal", "highest sustained", "held-out error", "fake-gpu", "in batches"} {
		if !strings.Contains(out, want) {
			t.Fatalf("table lacks %q:\n%s", want, out)
		}
	}
	t.Logf("\n%s", out)
}

func TestParseSetup(t *testing.T) {
	for _, s := range AllSetups {
		if got, err := ParseSetup(s.String()); err != nil || got != s {
			t.Fatalf("%v: %v %v", s, got, err)
		}
	}
	if _, err := ParseSetup("both"); err == nil {
		t.Fatal("parsed nonsense")
	}
}

// TestSustainedCriterion: a run is sustained when its p99 delay is within
// the deadline and its queue does not grow; one late query in a hundred
// does not fail it (Ding's single-miss rule would), two do, and delays that
// climb through the run fail it before they reach the deadline.
func TestSustainedCriterion(t *testing.T) {
	t0 := time.Date(2009, 4, 20, 0, 0, 0, 0, time.UTC)
	const deadline = 100 * time.Millisecond
	mk := func(delay func(i int) time.Duration) []*Result {
		rs := make([]*Result, 200)
		for i := range rs {
			a := t0.Add(time.Duration(i) * time.Millisecond)
			d := delay(i)
			rs[i] = &Result{Arrival: a, Submitted: a, Finish: a.Add(d), Deadline: a.Add(deadline), MetDeadline: d <= deadline, Proc: CPU}
		}
		return rs
	}
	for _, c := range []struct {
		name      string
		delay     func(int) time.Duration
		sustained bool
		growing   bool
	}{
		{"steady", func(int) time.Duration { return 5 * time.Millisecond }, true, false},
		{"one outlier in 100", func(i int) time.Duration {
			if i == 50 || i == 150 {
				return time.Second
			}
			return 5 * time.Millisecond
		}, true, false},
		{"three late", func(i int) time.Duration {
			if i%70 == 0 {
				return time.Second
			}
			return 5 * time.Millisecond
		}, false, false},
		{"backlog", func(i int) time.Duration { return time.Duration(1+i/4) * time.Millisecond }, false, true},
	} {
		run := Summarize(Parallel, 1000, mk(c.delay))
		if run.Deadline != deadline || run.Sustained() != c.sustained || run.Growing != c.growing {
			t.Errorf("%s: deadline %v sustained %v growing %v (p99 %v), want %v %v", c.name, run.Deadline,
				run.Sustained(), run.Growing, run.P99, c.sustained, c.growing)
		}
	}
}

// TestSummarizeGPUGaps: the GPU's busy time is the sum of its batches'
// wall times (counted once per batch), its gaps those from one batch's
// finish to the next one's start; the CPU's busy time sums its one-query
// batches and it has no gaps.
func TestSummarizeGPUGaps(t *testing.T) {
	t0 := time.Date(2009, 4, 20, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	var rs []*Result
	add := func(p ProcID, start, finish, size int) {
		for range size {
			rs = append(rs, &Result{Arrival: t0, Submitted: t0, Start: ms(start), Finish: ms(finish), Deadline: ms(1000),
				MetDeadline: true, Proc: p, BatchSize: size})
		}
	}
	add(GPU, 0, 10, 3)  // gap to the next: 2 ms
	add(GPU, 12, 20, 2) // 5 ms
	add(GPU, 25, 26, 1) // a batch of one counts too
	add(CPU, 0, 4, 1)
	add(CPU, 1, 2, 1)
	run := Summarize(Parallel, 1000, rs)
	g, c := run.Procs[GPU], run.Procs[CPU]
	if g.Batches != 3 || g.Busy != 19*time.Millisecond || g.Gap != 3500*time.Microsecond || g.GapMax != 5*time.Millisecond {
		t.Errorf("gpu: %d batches, busy %v, gap %v max %v; want 3, 19ms, 3.5ms, 5ms", g.Batches, g.Busy, g.Gap, g.GapMax)
	}
	if c.Batches != 2 || c.Busy != 5*time.Millisecond || c.Gap != 0 || c.GapMax != 0 {
		t.Errorf("cpu: %d batches, busy %v, gap %v max %v; want 2, 5ms, 0, 0", c.Batches, c.Busy, c.Gap, c.GapMax)
	}
}

// TestExperimentCPUOnly: an experiment of the cpu-only setup alone needs no
// GPU backend (qp bench sched --device cpu), reports each run's process
// CPU time, and one with another setup still asks for the GPU.
func TestExperimentCPUOnly(t *testing.T) {
	x := testIndex(t)
	all := testQueries(160, 9)
	e := &Experiment{
		Index:       x,
		CPU:         Processor{Backend: engine.NewCPU(x, 1), Slots: 2, Sequential: true},
		Train:       all[:100],
		Queries:     all[100:],
		Rates:       []float64{2000},
		Search:      RateSearch{Off: true},
		Setups:      []Setup{CPUOnly},
		MinDuration: -1,
	}
	rep, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Answered != 60 || rep.Runs[0].Procs[GPU].Queries != 0 {
		t.Fatalf("runs %+v, want one of 60 queries on the CPU", rep.Runs)
	}
	var before []Setup // BeforeRun: once per run, with its setup
	e.BeforeRun = func(s Setup) { before = append(before, s) }
	e.Rates = []float64{2000, 3000}
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(before) != 2 || before[0] != CPUOnly || before[1] != CPUOnly || CPUOnly.Hybrid() || !ParallelGPUFirst.Hybrid() {
		t.Errorf("BeforeRun saw %v, want [cpu-only cpu-only]", before)
	}
	e.BeforeRun, e.Rates = nil, []float64{2000}
	if r := rep.Runs[0]; runtime.GOOS == "linux" && (r.CPUTime <= 0 || r.CPUPerQuery() != r.CPUTime/60) {
		t.Errorf("process CPU %v, per query %v", r.CPUTime, r.CPUPerQuery())
	}
	if r := rep.Runs[0]; r.Submissions < 1 || r.Submissions > r.Submitted {
		t.Errorf("%d submissions of %d arrivals", r.Submissions, r.Submitted)
	}
	e.Setups = []Setup{CPUOnly, GPUOnly}
	if _, err := e.Run(context.Background()); err == nil {
		t.Fatal("gpu-only without a GPU backend: no error")
	}
}

// TestReadGC: readGC's counters grow with a collection (a run's GCTime and
// GCs are their differences over the replay).
func TestReadGC(t *testing.T) {
	g0 := readGC()
	runtime.GC()
	g1 := readGC()
	if g1.cycles <= g0.cycles || g1.cpu < g0.cpu {
		t.Fatalf("after runtime.GC: %+v, before %+v", g1, g0)
	}
	r := Run{Answered: 4, GCTime: 8 * time.Microsecond}
	if r.GCPerQuery() != 2*time.Microsecond || (&Run{}).GCPerQuery() != 0 {
		t.Fatalf("GCPerQuery %v", r.GCPerQuery())
	}
}

// dictCount is a backend that counts the queries it gets with and without
// a lookup of their terms in x (engine.Query.Dict) and answers them with
// the CPU engine.
type dictCount struct {
	x             *index.Index
	cpu           *engine.CPU
	with, without atomic.Int64
}

func (d *dictCount) Name() string { return "dict-count" }

func (d *dictCount) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	for i := range qs {
		if _, _, ok := qs[i].Looked(d.x); ok {
			d.with.Add(1)
		} else {
			d.without.Add(1)
		}
	}
	return d.cpu.SearchBatch(ctx, qs, opt, out)
}

// TestCarryLookups: LookupQuery's features are QueryFeatures' (repeated
// and absent terms, invalid queries); QueryFeatures of a query carrying
// its lookup reads it, one carrying another index's ignores it; and a
// replay of the queries with their lookups (Experiment.CarryLookups)
// hands every query to the backend with its lookup and gets every answer
// of the replay without them.
func TestCarryLookups(t *testing.T) {
	x := testIndex(t)
	other := testIndex(t) // the same terms, another index
	qs := append(testQueries(300, 5),
		engine.Query{ID: "rep", Terms: []string{"absent", "t020", "absent", "t020", "t005", "nope"}, Mode: engine.Or, K: 10},
		engine.Query{ID: "and-absent", Terms: []string{"t020", "absent"}, Mode: engine.And, K: 10})
	carried := slices.Clone(qs)
	feats := make([]Features, len(qs))
	for i := range qs {
		want := QueryFeatures(x, qs[i])
		f, l := LookupQuery(x, qs[i])
		if f != want {
			t.Fatalf("query %d %q: LookupQuery's features %+v, QueryFeatures' %+v", i, qs[i].Terms, f, want)
		}
		carried[i].Dict, feats[i] = l, f
		if got := QueryFeatures(x, carried[i]); got != want {
			t.Fatalf("query %d %q: features from its lookup %+v, want %+v", i, qs[i].Terms, got, want)
		}
		q := qs[i]
		q.Dict = &engine.TermLookup{X: other, IDs: make([]int, len(q.Terms)), DFs: make([]uint32, len(q.Terms))}
		if got := QueryFeatures(x, q); got != want {
			t.Fatalf("query %d %q: features with another index's lookup %+v, want %+v", i, qs[i].Terms, got, want)
		}
	}
	arr := Arrivals(2*len(qs), 20000, 1)
	replayOn := func(qs []engine.Query) ([]*Result, *dictCount) {
		d := &dictCount{x: x, cpu: engine.NewCPU(x, 1)}
		s, err := New(x, Config{CPU: &Processor{Backend: d, Slots: 2}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := replay(context.Background(), s, qs, feats, arr, -1, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		return res, d
	}
	plain, dp := replayOn(qs)
	with, dw := replayOn(carried)
	if dp.with.Load() != 0 || dp.without.Load() != int64(len(arr)) {
		t.Fatalf("plain replay: %d queries with a lookup, %d without, want 0 and %d", dp.with.Load(), dp.without.Load(), len(arr))
	}
	if dw.with.Load() != int64(len(arr)) || dw.without.Load() != 0 {
		t.Fatalf("carried replay: %d queries with a lookup, %d without, want %d and 0", dw.with.Load(), dw.without.Load(), len(arr))
	}
	for i := range arr {
		a, b := plain[i], with[i]
		if a == nil || b == nil || a.Features != b.Features || !slices.Equal(a.Results, b.Results) || (a.Err == nil) != (b.Err == nil) ||
			(a.Err != nil && a.Err.Error() != b.Err.Error()) {
			t.Fatalf("arrival %d (%q): plain %+v, carried %+v", i, qs[i%len(qs)].Terms, a, b)
		}
	}
}

// TestReplayRequestFields: replay fills its reused requests field by
// field; a field added to Request must be set there too (then update the
// count here).
func TestReplayRequestFields(t *testing.T) {
	if n := reflect.TypeFor[Request]().NumField(); n != 6 {
		t.Fatalf("Request has %d fields; replay's submitter sets 6 in place: set the new ones there", n)
	}
}
