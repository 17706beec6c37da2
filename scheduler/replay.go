package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/report"
)

// Arrivals returns the arrival times, as offsets from the start of a run,
// of n queries arriving as a Poisson process of rate queries per second
// (Ding et al. WWW'09 §9: "queries arrive in the system according to a
// Poisson process"): independent exponential gaps of mean 1/rate. The
// sequence depends only on seed, and the sequences of one seed at
// different rates are the same up to scale (common random numbers, so that
// runs at neighbouring rates differ by the rate, not by luck).
func Arrivals(n int, rate float64, seed uint64) []time.Duration {
	if !(rate > 0) || math.IsInf(rate, 0) {
		panic(fmt.Sprintf("BUG: scheduler: arrival rate %v", rate))
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := make([]time.Duration, n)
	var t float64 // seconds
	for i := range out {
		t += rng.ExpFloat64() / rate
		out[i] = time.Duration(t * 1e9)
	}
	return out
}

// Replay submits qs[i] to s at start+arrivals[i], start being now, in real
// time (sleeping between arrivals), each with its scheduled arrival as
// Request.Arrival so that lateness in submitting counts as delay. It then
// shuts s down and returns the results in qs order. With stopOnMiss it
// stops at the first result that missed its deadline: it submits nothing
// more and abandons the queries still queued (a failed run; the results of
// queries never submitted are nil). When ctx ends, it stops the same way
// and returns ctx's error. Arrivals follow the wall clock, so s should run
// on RealClock.
func Replay(ctx context.Context, s *Scheduler, qs []engine.Query, arrivals []time.Duration, stopOnMiss bool) ([]*Result, error) {
	if len(arrivals) != len(qs) {
		panic(fmt.Sprintf("BUG: scheduler: %d arrivals for %d queries", len(arrivals), len(qs)))
	}
	res := make([]*Result, len(qs))
	stop := make(chan struct{})
	var stopOnce sync.Once
	var missed atomic.Bool
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	start := time.Now()
	var err error
submit:
	for i := range qs {
		at := start.Add(arrivals[i])
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-stop:
				break submit
			case <-ctx.Done():
				err = ctx.Err()
				break submit
			}
		} else {
			select {
			case <-stop:
				break submit
			case <-ctx.Done():
				err = ctx.Err()
				break submit
			default:
			}
		}
		e := s.Submit(Request{Query: qs[i], Arrival: at}, func(r *Result) {
			res[i] = r
			if stopOnMiss && r.Proc != NoProc && !r.MetDeadline {
				missed.Store(true)
				stopOnce.Do(func() { close(stop) })
			}
		})
		if e != nil { // closed by someone else
			err = e
			break
		}
	}
	// Drain, unless the run has failed or ctx ended: then abandon the queue.
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err != nil || missed.Load() {
		cancel()
	} else {
		go func() {
			select {
			case <-stop:
			case <-ctx.Done():
			case <-sctx.Done():
			}
			cancel()
		}()
	}
	s.Shutdown(sctx)
	if err == nil {
		err = ctx.Err()
	}
	return res, err
}

// Setup is one of the four configurations of Ding et al.'s Figure 7.
type Setup int

const (
	CPUOnly    Setup = iota // every query on the CPU processor
	GPUOnly                 // every query on the GPU processor
	BestSerial              // each query on its predicted-faster processor, one query at a time
	Parallel                // CPU and GPU in parallel under the Scheduler
)

// AllSetups lists the four setups in Figure 7's order.
var AllSetups = []Setup{CPUOnly, GPUOnly, BestSerial, Parallel}

func (s Setup) String() string {
	switch s {
	case CPUOnly:
		return "cpu-only"
	case GPUOnly:
		return "gpu-only"
	case BestSerial:
		return "best-serial"
	case Parallel:
		return "cpu+gpu"
	}
	return fmt.Sprintf("Setup(%d)", int(s))
}

// ParseSetup parses a Setup's String ("cpu", "gpu", "serial" and
// "parallel" too).
func ParseSetup(s string) (Setup, error) {
	switch strings.ToLower(s) {
	case "cpu-only", "cpu":
		return CPUOnly, nil
	case "gpu-only", "gpu":
		return GPUOnly, nil
	case "best-serial", "serial", "serialized":
		return BestSerial, nil
	case "cpu+gpu", "parallel":
		return Parallel, nil
	}
	return 0, fmt.Errorf("scheduler: unknown setup %q (cpu-only, gpu-only, best-serial, cpu+gpu)", s)
}

// ProcRun summarizes one processor's share of a run.
type ProcRun struct {
	Name                             string
	Queries, Batches, Stolen, Urgent int
	// ModelError is the mean relative error of the cost predictions made
	// on arrival for the queries that ran here (against their attributed
	// Cost); -1 when none ran.
	ModelError float64
}

// Run summarizes one replay.
type Run struct {
	Setup     Setup
	Rate      float64 // arrival rate, queries/s
	Submitted int
	Answered  int // ran (with or without a per-query error)
	Errors    int // answered with Response.Err (e.g. empty queries)
	Abandoned int // submitted, not run (the run was stopped)
	Missed    int // answered after their deadline
	Stopped   bool
	// Delay (finish minus arrival) of the answered queries.
	Mean, P50, P99, Max time.Duration
	// Late is the mean time by which queries were submitted after their
	// scheduled arrival (timer wake-up latency, about a millisecond with
	// Go's timers on Linux); it is part of every delay.
	Late    time.Duration
	Elapsed time.Duration // first arrival to last finish
	Procs   [2]ProcRun
}

// Sustained reports whether every query was answered within its deadline
// (Ding: "consider a run failed if ... a query misses its deadline").
func (r *Run) Sustained() bool {
	return r.Missed == 0 && !r.Stopped && r.Abandoned == 0 && r.Answered == r.Submitted
}

// Summarize computes a Run from Replay's results (nil entries: never
// submitted).
func Summarize(setup Setup, rate float64, results []*Result) Run {
	run := Run{Setup: setup, Rate: rate}
	var delays []time.Duration
	var late time.Duration
	var first, last time.Time
	var errSum [2]float64
	var errN [2]int
	batches := [2]map[time.Time]bool{{}, {}} // distinct batch start stamps per processor
	for _, r := range results {
		if r == nil {
			continue
		}
		run.Submitted++
		if r.Proc == NoProc {
			run.Abandoned++
			continue
		}
		run.Answered++
		if r.Err != nil {
			run.Errors++
		}
		if !r.MetDeadline {
			run.Missed++
		}
		delays = append(delays, r.Delay())
		late += r.Submitted.Sub(r.Arrival)
		if first.IsZero() || r.Arrival.Before(first) {
			first = r.Arrival
		}
		if r.Finish.After(last) {
			last = r.Finish
		}
		p := &run.Procs[r.Proc]
		p.Name = r.ProcName
		p.Queries++
		if r.Stolen {
			p.Stolen++
		}
		if r.Urgent {
			p.Urgent++
		}
		if r.BatchSize > 1 {
			batches[r.Proc][r.Start] = true
		} else {
			p.Batches++
		}
		if r.Err == nil {
			errSum[r.Proc] += RelError(r.Predicted[r.Proc], r.Cost)
			errN[r.Proc]++
		}
	}
	for i := range run.Procs {
		// Batches of several queries are told apart by their start stamps
		// (two slots starting at the same instant would merge: a rarity
		// that only affects this count).
		run.Procs[i].Batches += len(batches[i])
		run.Procs[i].ModelError = -1
		if errN[i] > 0 {
			run.Procs[i].ModelError = errSum[i] / float64(errN[i])
		}
	}
	run.Stopped = run.Abandoned > 0 || run.Submitted < len(results)
	if len(delays) > 0 {
		slices.Sort(delays)
		var sum time.Duration
		for _, d := range delays {
			sum += d
		}
		run.Mean = sum / time.Duration(len(delays))
		run.Late = late / time.Duration(len(delays))
		run.P50 = quantile(delays, 0.50)
		run.P99 = quantile(delays, 0.99)
		run.Max = delays[len(delays)-1]
		run.Elapsed = last.Sub(first)
	}
	return run
}

// quantile is the nearest-rank q-quantile of sorted d (report.Percentile,
// qp's one definition).
func quantile(d []time.Duration, q float64) time.Duration { return report.Percentile(d, q) }

// RateSearch configures the search for the highest sustained arrival rate.
type RateSearch struct {
	Off bool // do not search
	// Start is the first rate tried (queries/s); 0: half the capacity the
	// trained cost models predict for the setup.
	Start float64
	// Max caps the rates tried (default 1e6 queries/s).
	Max float64
	// The search doubles the rate until a run fails, then bisects until
	// (failing - sustained) <= Precision·failing (default 0.05), in at most
	// MaxRuns runs per setup (default 12).
	Precision float64
	MaxRuns   int
}

// SearchResult is the outcome of a RateSearch for one setup.
type SearchResult struct {
	Setup Setup
	// MaxRate is the highest rate at which a run was sustained (0: none);
	// Failed the lowest rate at which one failed (+Inf: none failed, so
	// MaxRate is a lower bound, e.g. capped by RateSearch.Max).
	MaxRate, Failed float64
	Best            Run   // the run at MaxRate
	Runs            []Run // every run of the search, in order
}

// Experiment replays a query log under the four setups of Ding et al.'s
// Figure 7 and measures delay against arrival rate. All executions are
// real: training times are measured on the backends, and replays run the
// backends under the wall clock.
type Experiment struct {
	Index *index.Index // the index the backends search
	// CPU and GPU are the processors. A nil Model is trained on Train,
	// measured on the processor's backend: on queries run alone (Measure)
	// and, for a processor that batches, also in batches formed by its
	// BatchPolicy (MeasureBatches), whose model it then uses in every setup
	// but best-serial, which runs queries alone. A given Model is used as
	// is. Every run starts from a clone of its model, so runs do not
	// influence each other through online refitting.
	CPU, GPU Processor
	Options  engine.Options
	Train    []engine.Query // training slice (Ding: 3000 queries other than the replayed ones)
	Queries  []engine.Query // the replayed log
	// MinDuration is the shortest span of arrivals of a run: at rate r the
	// log is replayed cyclically for max(len(Queries), r·MinDuration)
	// queries (at most 1<<20). A run shorter than a few deadlines cannot
	// show that a rate is unsustainable: a backlog that grows by a tenth of
	// the capacity takes ten deadlines to delay a query past its deadline.
	// Default 10 deadlines; negative: the log once.
	MinDuration time.Duration
	// Warmup is the number of training queries run unmeasured first on
	// each backend (default min(100, len(Train))).
	Warmup int
	Model  ModelOptions // options of trained models
	Setups []Setup      // default AllSetups
	// Rates are the arrival rates of the table (queries/s). A run at a
	// rate beyond a setup's capacity lasts until its backlog drains
	// (about the whole log's processing time) unless StopOnMiss is set.
	Rates []float64
	// StopOnMiss stops a table run at its first missed deadline (the
	// run has failed; its delays are those of the queries answered until
	// then). Search runs always stop so.
	StopOnMiss bool
	Search     RateSearch
	// Scheduler parameters (see Config); zero values take its defaults.
	Deadline       time.Duration
	UrgentFraction float64
	Ratio          float64
	Seed           uint64 // of the arrivals
	// Progress, if set, is called after every run.
	Progress func(Run)
}

// Report is the outcome of an Experiment.
type Report struct {
	Deadline    time.Duration
	Queries     int           // in the log
	MinDuration time.Duration // of a run's arrivals (0: the log once)
	Seed        uint64
	// Training describes the models trained from Train on queries run
	// alone (Trained false: the processor's Model was given, or it had no
	// training samples), BatchTraining those trained on batches (for
	// processors that batch; BatchTrained).
	Training      [2]TrainResult
	Trained       [2]bool
	BatchTraining [2]TrainResult
	BatchTrained  [2]bool
	Names         [2]string
	Runs          []Run // the table: setups × rates, in that order
	Searches      []SearchResult
}

// Run trains the missing cost models, replays the log at every rate of
// e.Rates under every setup, and searches each setup's highest sustained
// rate.
func (e *Experiment) Run(ctx context.Context) (*Report, error) {
	if e.Index == nil {
		return nil, errors.New("scheduler: experiment without an index")
	}
	if e.CPU.Backend == nil || e.GPU.Backend == nil {
		return nil, errors.New("scheduler: experiment needs a CPU and a GPU backend")
	}
	if len(e.Queries) == 0 {
		return nil, errors.New("scheduler: experiment without queries")
	}
	if _, err := e.Options.Resolve(); err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	setups := e.Setups
	if len(setups) == 0 {
		setups = AllSetups
	}
	rep := &Report{Deadline: e.Deadline, Queries: len(e.Queries), Seed: e.Seed}
	if rep.Deadline == 0 {
		rep.Deadline = DefaultDeadline
	}
	procs := [2]Processor{e.CPU, e.GPU}
	var single [2]*CostModel // models of queries run alone, for best-serial
	for i := range procs {
		p := &procs[i]
		if p.Name == "" {
			p.Name = p.Backend.Name()
		}
		rep.Names[i] = p.Name
		if p.Model != nil {
			single[i] = p.Model
			continue
		}
		warm := e.Warmup
		if warm == 0 {
			warm = min(100, len(e.Train))
		}
		samples, err := Measure(ctx, e.Index, p.Backend, e.Options, e.Train, warm)
		if err != nil {
			return nil, err
		}
		if len(samples) == 0 {
			p.Model, single[i] = NewCostModel(e.Model), NewCostModel(e.Model)
			continue
		}
		single[i], rep.Training[i] = Train(samples, e.Model)
		rep.Trained[i] = true
		p.Model = single[i]
		if p.Batch.maxQueries() > 1 {
			bs, err := MeasureBatches(ctx, e.Index, p.Backend, e.Options, e.Train, p.Batch, single[i], 0)
			if err != nil {
				return nil, err
			}
			if len(bs) > 0 {
				p.Model, rep.BatchTraining[i] = Train(bs, e.Model)
				rep.BatchTrained[i] = true
			}
		}
	}
	deadline := rep.Deadline
	minDur := e.MinDuration
	if minDur == 0 {
		minDur = 10 * deadline
	}
	rep.MinDuration = max(minDur, 0)
	run := func(setup Setup, rate float64, stopOnMiss bool) (Run, error) {
		cfg := Config{
			Options: e.Options, Deadline: e.Deadline, UrgentFraction: e.UrgentFraction,
			Ratio: e.Ratio, Serialize: setup == BestSerial,
		}
		cpu, gpu := procs[CPU], procs[GPU]
		if setup == BestSerial {
			cpu.Model, gpu.Model = single[CPU], single[GPU]
		}
		cpu.Model, gpu.Model = cpu.Model.Clone(), gpu.Model.Clone()
		if setup != GPUOnly {
			cfg.CPU = &cpu
		}
		if setup != CPUOnly {
			cfg.GPU = &gpu
		}
		s, err := New(e.Index, cfg)
		if err != nil {
			return Run{}, err
		}
		qs := e.Queries
		if minDur > 0 {
			if n := min(int(math.Ceil(rate*minDur.Seconds())), 1<<20); n > len(qs) {
				qs = make([]engine.Query, n)
				for i := range qs {
					qs[i] = e.Queries[i%len(e.Queries)]
				}
			}
		}
		res, err := Replay(ctx, s, qs, Arrivals(len(qs), rate, e.Seed), stopOnMiss)
		if err != nil {
			return Run{}, err
		}
		r := Summarize(setup, rate, res)
		if e.Progress != nil {
			e.Progress(r)
		}
		return r, nil
	}
	for _, setup := range setups {
		for _, rate := range e.Rates {
			r, err := run(setup, rate, e.StopOnMiss)
			if err != nil {
				return rep, err
			}
			rep.Runs = append(rep.Runs, r)
		}
	}
	if e.Search.Off {
		return rep, nil
	}
	for _, setup := range setups {
		models := [2]*CostModel{procs[CPU].Model, procs[GPU].Model}
		if setup == BestSerial {
			models = single
		}
		sr, err := e.search(setup, procs, models, run)
		if err != nil {
			return rep, err
		}
		rep.Searches = append(rep.Searches, sr)
	}
	return rep, nil
}

// search finds setup's highest sustained rate: doubling from the start rate
// until a run fails, then bisecting.
func (e *Experiment) search(setup Setup, procs [2]Processor, models [2]*CostModel, run func(Setup, float64, bool) (Run, error)) (SearchResult, error) {
	rs := e.Search
	if rs.Max <= 0 {
		rs.Max = 1e6
	}
	if rs.Precision <= 0 {
		rs.Precision = 0.05
	}
	if rs.MaxRuns <= 0 {
		rs.MaxRuns = 12
	}
	r := rs.Start
	if r <= 0 {
		r = 0.5 * e.capacity(setup, procs, models)
	}
	r = min(max(r, 0.01), rs.Max)
	sr := SearchResult{Setup: setup, Failed: math.Inf(1)}
	for range rs.MaxRuns {
		x, err := run(setup, r, true)
		if err != nil {
			return sr, err
		}
		sr.Runs = append(sr.Runs, x)
		if x.Sustained() {
			if r > sr.MaxRate {
				sr.MaxRate, sr.Best = r, x
			}
		} else {
			sr.Failed = min(sr.Failed, r)
		}
		if math.IsInf(sr.Failed, 1) {
			if r >= rs.Max {
				break
			}
			r = min(2*r, rs.Max)
			continue
		}
		if sr.Failed-sr.MaxRate <= rs.Precision*sr.Failed {
			break
		}
		r = (sr.MaxRate + sr.Failed) / 2
	}
	return sr, nil
}

// capacity is the throughput (queries/s) the cost models predict for setup
// on the replayed log: slots over mean predicted cost, summed over the
// processors in parallel, or one over the mean of the per-query minimum
// when serialized.
func (e *Experiment) capacity(setup Setup, procs [2]Processor, models [2]*CostModel) float64 {
	var sum [2]float64
	var best float64
	for _, q := range e.Queries {
		f := QueryFeatures(e.Index, q)
		c := models[CPU].Predict(f).Seconds()
		g := models[GPU].Predict(f).Seconds()
		sum[CPU] += c
		sum[GPU] += g
		best += min(c, g)
	}
	n := float64(len(e.Queries))
	capOf := func(i ProcID) float64 { return float64(max(procs[i].Slots, 1)) * n / sum[i] }
	switch setup {
	case CPUOnly:
		return capOf(CPU)
	case GPUOnly:
		return capOf(GPU)
	case BestSerial:
		return n / best
	}
	return capOf(CPU) + capOf(GPU)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()*1e3) }

func pct(x float64) string {
	if x < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

// WriteTable writes the report as aligned text: the training errors, one
// row per run of the table (delays in milliseconds; "late" is the mean
// submission lateness included in them, "err" the mean relative error of
// the cost predictions in the run), and the highest sustained rate per
// setup.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "deadline %v, log of %d queries", r.Deadline, r.Queries)
	if r.MinDuration > 0 {
		fmt.Fprintf(w, " replayed cyclically for at least %v per run", r.MinDuration)
	}
	fmt.Fprintf(w, ", Poisson arrivals (seed %d)\n", r.Seed)
	for i, t := range r.Training {
		if r.Trained[i] {
			fmt.Fprintf(w, "%s cost model, queries alone: mean relative error %s held out (%d of %d samples), %s in-sample\n",
				r.Names[i], pct(t.HeldOutError), t.HeldOut, t.Samples, pct(t.FitError))
		}
		if t := r.BatchTraining[i]; r.BatchTrained[i] {
			fmt.Fprintf(w, "%s cost model, in batches: mean relative error %s held out (%d of %d samples), %s in-sample\n",
				r.Names[i], pct(t.HeldOutError), t.HeldOut, t.Samples, pct(t.FitError))
		}
	}
	if len(r.Runs) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(tw, "setup\trate q/s\tanswered\tmissed\tmean ms\tp50 ms\tp99 ms\tmax ms\tlate ms\t%s q\t%s q\tstolen\turgent\t%s batches\t%s err\t%s err\t\n",
			r.Names[0], r.Names[1], r.Names[1], r.Names[0], r.Names[1])
		for _, x := range r.Runs {
			writeRun(tw, x)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Searches) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(tw, "setup\thighest sustained q/s\tlowest failed q/s\truns\tmean ms\tp99 ms\t\n")
		for _, s := range r.Searches {
			failed := "-"
			if !math.IsInf(s.Failed, 1) {
				failed = fmt.Sprintf("%.1f", s.Failed)
			}
			mean, p99 := "-", "-"
			if s.MaxRate > 0 {
				mean, p99 = ms(s.Best.Mean), ms(s.Best.P99)
			}
			fmt.Fprintf(tw, "%s\t%.1f\t%s\t%d\t%s\t%s\t\n", s.Setup, s.MaxRate, failed, len(s.Runs), mean, p99)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func writeRun(w io.Writer, x Run) {
	fmt.Fprintf(w, "%s\t%.1f\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n",
		x.Setup, x.Rate, x.Answered, x.Missed, ms(x.Mean), ms(x.P50), ms(x.P99), ms(x.Max), ms(x.Late),
		x.Procs[CPU].Queries, x.Procs[GPU].Queries,
		x.Procs[CPU].Stolen+x.Procs[GPU].Stolen, x.Procs[CPU].Urgent+x.Procs[GPU].Urgent,
		x.Procs[GPU].Batches, pct(x.Procs[CPU].ModelError), pct(x.Procs[GPU].ModelError))
}
