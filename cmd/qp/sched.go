package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/engine/gpu"
	"github.com/qpengine/qp/report"
	"github.com/qpengine/qp/scheduler"
)

// benchSched replays a query log with Poisson arrivals for the four
// configurations of Ding et al. WWW'09 §9 (Figure 7).
func benchSched(c command, args []string) error {
	c.name = "bench sched"
	c.args = "INDEX QUERIES [flags]"
	fs := newFlags(c, `Replays a query log with Poisson arrivals at each --rates rate for the
--setups configurations — CPU only, GPU only, best-of-two serialized, CPU+GPU
in parallel (the work-stealing scheduler; --placement cost places queries by
their predicted finish times, gpu-first gives the GPU every query and the CPU
the overflow), CPU+GPU without stealing, CPU+GPU GPU-first (cpu+gpu-first,
whatever --placement says, so that one run compares both) — and
prints the average and p99 delay per rate (Ding et al. WWW'09 §9, Figure 7).
Then it searches each configuration's highest sustained rate to within 5%
(doubling, then bisection), --search-repeats times with different arrivals,
and prints the median with the spread over the repeats and the hybrid's
ratios to the processors alone. A run is sustained when every query is
answered, the p99 delay is within --deadline and the queue does not grow
(the last fifth of the arrivals waited less than twice the second fifth, or
under a quarter of the deadline); each run replays the log cyclically for at
least --min-duration, its submitter waking for every arrival due (with
--submit-quantum Q at most once per Q when no arrival is overdue, submitting
every arrival due at once: a query is submitted at most that late, and its
delay counts it; the log's features are computed once, outside the
measured windows, and the backend answering a query looks its terms up inside
them, the one lookup a real submitter pays; --carry-lookups hands the
features' lookups on instead, leaving no lookup inside the windows). Cost models are fitted on --train queries of the log
(not replayed) and refitted online. --mode and, or or andor selects the
query mode; --report DIR also writes DIR/README.md with the tables and the
delay-vs-rate plot (DIR/delay-MODE.svg: mean and p99 delay per
configuration). The CPU has one slot per core (--threads, default GOMAXPROCS),
each taking up to --cpu-batch (default 100us) of predicted work from its
queue at once, at most its share (queued over free slots), and running it
one query at a time (0: one query per hand-off); in CPU+GPU it gets every
core by default (--hybrid-cpu-slots 0: only the cores the GPU's host side
leaves, measured before the runs, --split-probe). --placement gpu-first (the
default since issue 24's device runs, where it was never below the cost
placement): the GPU's batches are cut to --target of the deadline by its
measured batch time (fixed part + time per query, fitted on the training
batches and refitted from every batch), the CPU takes the queries the GPU is
predicted to answer later than arrival + --target × deadline, and
(--cpu-cheap R) those it answers in under R times the GPU's time per query;
with --online-cores it runs at most GOMAXPROCS less the GPU side's host
cores (measured online) CPU slots at once. The GPU runs --gpu-slots
batches at once (default 2: one prepared on the host while another runs on
the device); --prepare-cores caps the cores a batch's host preparation
fans out over, and --prepare-adapt parks that many CPU slots while a batch
is being prepared (auto, the default: for --mode or only, with 4
preparation cores in CPU+GPU unless --prepare-cores is given). In CPU+GPU
each CPU slot runs chunks of the GPU's fanned-out host work (preparation,
plans, result conversion) between two of its queries when some is open
(--cpu-help, default on; issue 24's twelfth round; QP_HOST_ASSIST=off in
the environment makes that work fan out on goroutines of its own, as before,
with nothing to help). The rate search has no upper
bound: it doubles until a run fails. Unless GOGC or GOMEMLIMIT is set, the
process runs with GOGC 400 and a soft memory limit of half the machine's
memory (the first line of standard error says which). --device cpu runs the
cpu-only setup without a GPU (the scheduler's own cost, measured). Otherwise needs a usable GPU.`)
	qf := addQueryFlags(fs)
	train := fs.Int("train", 3000, "training queries (taken from the start of the log)")
	n := fs.Int("replay", 2000, "replayed queries (after the training slice)")
	rates := fs.String("rates", "1000,5000,20000", "arrival rates (queries/s) of the table")
	deadline := fs.Duration("deadline", 500*time.Millisecond, "deadline after arrival")
	c0 := fs.Uint64("batch-postings", 0, "GPU batch threshold c: sum of shortest-list lengths (AND, AND+OR) or of all list lengths (OR); 0: 1M for AND and AND+OR, 8M for OR")
	searchRuns := fs.Int("search-runs", 12, "runs of the highest-sustained-rate search per setup and repeat (0: no search)")
	repeats := fs.Int("search-repeats", 3, "searches per setup, each with its own arrivals (median and spread reported)")
	setupList := fs.String("setups", "cpu-only,gpu-only,best-serial,cpu+gpu,cpu+gpu-nosteal", "configurations, in order (cpu+gpu-first: also the GPU-first hybrid)")
	placement := fs.String("placement", "gpu-first", "placement of cpu+gpu and cpu+gpu-nosteal: gpu-first (every query to the GPU, the CPU takes the overflow) or cost (Ding's queues by predicted finish time)")
	target := fs.Float64("target", scheduler.DefaultTargetFraction, "GPU-first: fraction of the deadline a query should be answered in; the GPU's batches are cut to it and the CPU takes the queries the GPU would answer later")
	cheap := fs.Float64("cpu-cheap", 0, "GPU-first: a CPU slot without overflow also takes a query predicted to cost the CPU at most this many times the GPU's time per query (0: off)")
	spare := fs.Float64("spare-fixed", 0, "GPU-first: the CPU leaves the GPU the head of its queue, as many queries as make the GPU's fixed part per batch at most 1/(1+R) of the batch's time (0: off)")
	share := fs.Float64("cpu-share", 0, "GPU-first: give the CPU a steady share of the arrivals: an arrival joins the CPU's own queue while the CPU's queued and running work is at most this many mean queries per CPU slot it may run, else the GPU's (0: off, the CPU takes only the GPU's overflow)")
	onlineCores := fs.Bool("online-cores", true, "GPU-first: run at most GOMAXPROCS less the GPU side's host cores (measured online) CPU slots at once")
	minDur := fs.Duration("min-duration", 0, "shortest span of arrivals of a run (0: 10 deadlines)")
	reportDir := fs.String("report", "", "also write a Markdown report with the delay-vs-rate plot to this directory")
	wait := fs.Duration("batch-wait", 2*time.Millisecond, "GPU batch time limit")
	cpuBatch := fs.Duration("cpu-batch", 100*time.Microsecond, "a CPU slot takes up to this much predicted work of the queued queries at once, and no more than its share (queued over free slots), running them one by one (0: one query per hand-off; 100us never lost on the GPU machine and raised CPU alone 1.5-2x on 2 cores, issue 24)")
	hybridSlots := fs.Int("hybrid-cpu-slots", -1, "CPU slots of cpu+gpu (0: measured, see --split-probe; -1: all of them)")
	splitProbe := fs.Duration("split-probe", 300*time.Millisecond, "with --hybrid-cpu-slots 0: run the GPU's batches with 0, 1/4, 1/2, 3/4 of the cores less one busy with CPU queries, and with the cores the GPU's host side leaves, this long each, and give cpu+gpu the CPU slots of the highest throughput (0: the cores the GPU's host side leaves, less one)")
	diagList := fs.String("diagnose", "", "instead of the replay: probe the GPU's batches back to back beside K busy CPU workers for each K of this comma-separated list, and print where a batch's time goes (host phases, device time, the CUDA thread's CPU and run delay, GC, scheduling latency; issue 24)")
	diagFor := fs.Duration("diagnose-for", time.Second, "length of each --diagnose probe")
	cpuNice := fs.Int("cpu-nice", 0, "CPU+GPU setups and --diagnose: run each CPU slot on a thread whose nice value is raised by this much (Linux), so that the kernel runs the GPU side's threads first when the cores are oversubscribed (0: off)")
	diagYield := fs.Bool("diagnose-yield", false, "--diagnose: the CPU workers call runtime.Gosched between two queries")
	gpuSlots := fs.Int("gpu-slots", 2, "GPU batches in flight at once (1 to 8): with 2, one batch is prepared on the host while another runs on the device (issue 24)")
	prepCores := fs.Int("prepare-cores", 0, "cores a GPU batch's host preparation may use (0: all, GOMAXPROCS; at most GOMAXPROCS)")
	cpuHelp := fs.Bool("cpu-help", true, "CPU+GPU setups: each CPU slot runs chunks of the GPU's open host work (preparation, plans, result conversion) between two of its queries, instead of only yielding (issue 24's twelfth round; false: only yield, as before)")
	prepAdapt := triAuto
	fs.Var(&prepAdapt, "prepare-adapt", "CPU+GPU setups: while a GPU batch is prepared on the host, park --prepare-cores CPU slots (all of them with --prepare-cores 0), so that the preparation does not wait for cores busy with CPU queries: on, off, or auto (the default: on for --mode or with --prepare-cores 4 unless set, off for and and andor; issue 24's device rounds 5-6: it won OR, lost AND); the flag alone means on")
	quantum := fs.Duration("submit-quantum", 0, "the replay's submitter wakes at most once per this interval when no arrival is overdue, and submits every arrival due at once: a query is submitted at most this late (counted in its delay); 0, the default: a wake-up for every arrival due (bursts of about 6 arrivals at 2M q/s on a 16-core host); e.g. 50us: fewer wake-ups, but on the H100 host the sleeps overran by milliseconds")
	carry := fs.Bool("carry-lookups", false, "hand each replayed query the term lookup its features were computed from (engine.Query.Dict), so that the backend answering it does not look its terms up again (issue 24, hostcut). The log's features and lookups are computed outside the measured windows, so this leaves no lookup inside them: a real submitter pays one (its features'), so off, the default, keeps the window at one lookup per query")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the whole experiment (training, table runs, searches; with --diagnose: the probes) to this new file (go tool pprof): where the scheduler's own per-query work goes; the work inside the runs' measured windows has the label qp=window (go tool pprof -tagfocus qp=window; scripts/profsplit.sh splits a profile)")
	gpuProfile := fs.Bool("gpu-profile", false, "after each run's progress line, print the GPU's batch profile (host phases, device time by CUDA events) and the Go runtime's GC and scheduling figures over the run")
	pos, err := parseArgs(fs, args, 2)
	if err != nil {
		return err
	}
	// The flags first: opening the GPU and the index takes a while.
	var setups []scheduler.Setup
	for _, name := range splitComma(*setupList) {
		st, err := scheduler.ParseSetup(name)
		if err != nil {
			return fmt.Errorf("--setups: %w", err)
		}
		setups = append(setups, st)
	}
	if *repeats < 1 {
		return fmt.Errorf("--search-repeats %d: want at least 1", *repeats)
	}
	if *minDur < 0 {
		return fmt.Errorf("--min-duration %v: want >= 0", *minDur)
	}
	if *quantum < 0 {
		return fmt.Errorf("--submit-quantum %v: want >= 0", *quantum)
	}
	if *cpuBatch < 0 {
		return fmt.Errorf("--cpu-batch %v: want >= 0", *cpuBatch)
	}
	if *splitProbe < 0 {
		return fmt.Errorf("--split-probe %v: want >= 0", *splitProbe)
	}
	if *hybridSlots < -1 {
		return fmt.Errorf("--hybrid-cpu-slots %d: want -1, 0 or a slot count", *hybridSlots)
	}
	place, err := scheduler.ParsePlacement(*placement)
	if err != nil {
		return fmt.Errorf("--placement: %w", err)
	}
	if !(*target > 0 && *target <= 1) {
		return fmt.Errorf("--target %v: want a fraction in (0, 1]", *target)
	}
	if !(*spare >= 0) || math.IsInf(*spare, 0) {
		return fmt.Errorf("--spare-fixed %v: want >= 0", *spare)
	}
	if !(*share >= 0) || math.IsInf(*share, 0) {
		return fmt.Errorf("--cpu-share %v: want >= 0", *share)
	}
	if !(*cheap >= 0) {
		return fmt.Errorf("--cpu-cheap %v: want >= 0", *cheap)
	}
	var diagKs []int
	for _, f := range splitComma(*diagList) {
		var k int
		if _, err := fmt.Sscan(f, &k); err != nil || k < 0 {
			return fmt.Errorf("--diagnose: bad CPU worker count %q", f)
		}
		diagKs = append(diagKs, k)
	}
	if *cpuProfile != "" {
		if _, err := os.Stat(*cpuProfile); err == nil {
			return fmt.Errorf("--cpuprofile %s exists; not overwriting it", *cpuProfile)
		}
	}
	if *cpuNice < 0 || *cpuNice > 19 {
		return fmt.Errorf("--cpu-nice %d: want 0 to 19", *cpuNice)
	}
	if *gpuSlots < 1 || *gpuSlots > 8 {
		return fmt.Errorf("--gpu-slots %d: want 1 to 8", *gpuSlots)
	}
	if *prepCores < 0 || *prepCores > runtime.GOMAXPROCS(0) {
		return fmt.Errorf("--prepare-cores %d: want 0 (all) to GOMAXPROCS (%d)", *prepCores, runtime.GOMAXPROCS(0))
	}
	if *diagFor <= 0 {
		return fmt.Errorf("--diagnose-for %v: want > 0", *diagFor)
	}
	fmt.Fprintf(os.Stderr, "bench sched: garbage collector %s\n", gcDefault())
	cpuOnly, err := cpuOnlyRun(*qf.device, setups, diagKs)
	if err != nil {
		return err
	}
	if !cpuOnly {
		*qf.device = "gpu"
	}
	qe, mode, opt, err := qf.openEngine(pos[0])
	if err != nil {
		return fmt.Errorf("bench sched compares CPU and GPU: %w", err)
	}
	defer qe.Close()
	x, an, gpuBe := qe.Index(), qe.Analyzer(), qe.GPU()
	if gpuBe == nil && !cpuOnly {
		return fmt.Errorf("bench sched compares CPU and GPU: no GPU backend")
	}
	cpuSlots := *qf.threads
	if cpuSlots == 0 {
		cpuSlots = runtime.GOMAXPROCS(0)
	}
	fq, err := readQueryFile(pos[1], *train+*n)
	if err != nil {
		return err
	}
	if len(fq) < *train+1 {
		return fmt.Errorf("%s has %d queries; need more than --train %d", pos[1], len(fq), *train)
	}
	qs := qf.analyzeQueries(an, fq, mode)
	if *c0 == 0 {
		*c0 = 1 << 20
		if mode == engine.Or {
			*c0 = 8 << 20
		}
	}
	rs, err := parseRates(*rates)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	gpuPol := scheduler.BatchPolicy{MaxPostings: *c0, MaxWait: *wait}
	// The profile starts before either path: --diagnose returns below, and
	// it used to start only after that branch, so that --diagnose
	// --cpuprofile wrote no profile at all.
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if len(diagKs) > 0 {
		return diagnose(ctx, os.Stdout, x, engine.NewCPU(x, 1), gpuBe, gpuPol, opt, qs, diagKs, *diagFor, scheduler.ProbeOptions{Nice: *cpuNice, Yield: *diagYield})
	}
	park := 0 // CPU slots parked while a GPU batch prepares (--prepare-adapt)
	var beforeRun func(scheduler.Setup)
	if gpuBe != nil {
		adapt, cores := resolveAdapt(prepAdapt, mode, *prepCores, flagSet(fs, "prepare-cores"))
		gpuBe.SetPrepareCores(*prepCores)
		if cores != *prepCores {
			// auto's cap is for the hybrid setups only: the GPU alone
			// keeps --prepare-cores (all by default).
			all := *prepCores
			beforeRun = func(s scheduler.Setup) {
				if s.Hybrid() {
					gpuBe.SetPrepareCores(cores)
				} else {
					gpuBe.SetPrepareCores(all)
				}
			}
			*prepCores = cores
		}
		if adapt {
			park = cpuSlots
			if cores > 0 {
				park = min(cores, cpuSlots)
			}
		}
	}
	var rd *runDiag
	if *gpuProfile && gpuBe != nil {
		gpuBe.SetProfile(true)
		rd = &runDiag{g: gpuBe, w: os.Stderr}
	}
	e := &scheduler.Experiment{
		Index: x,
		CPU: scheduler.Processor{Backend: engine.NewCPU(x, 1), Slots: cpuSlots, Sequential: true, LearnEvery: 4,
			Batch: scheduler.BatchPolicy{MaxCost: *cpuBatch}},
		HybridCPUSlots: *hybridSlots,
		SplitProbe:     *splitProbe,
		GPU:            gpuProcessor(gpuBe, gpuPol, *gpuSlots),
		Options:        opt,
		Train:          qs[:*train],
		Queries:        qs[*train:],
		Rates:          rs,
		// A table run past capacity stops once it has failed, instead of
		// draining a backlog of many seconds.
		StopOnMiss:     true,
		Deadline:       *deadline,
		Search:         scheduler.RateSearch{Off: *searchRuns <= 0, MaxRuns: max(*searchRuns, 0), Repeats: *repeats},
		Setups:         setups,
		MinDuration:    *minDur,
		Seed:           1,
		SubmitQuantum:  *quantum,
		CarryLookups:   *carry,
		Placement:      place,
		TargetFraction: *target,
		CheapRatio:     *cheap,
		SpareFixed:     *spare,
		CPUShare:       *share,
		OnlineCores:    *onlineCores,
		CPUNice:        *cpuNice,
		PrepareAdapt:   park,
		PrepareHook:    gpu.WithDeviceHook,
		Assist:         hostAssist(*cpuHelp, gpuBe),
		BeforeRun:      markBeforeRun(beforeRun, rd),
		Progress: func(r scheduler.Run) {
			fmt.Fprintf(os.Stderr, "  %v at %.0f q/s: %d answered (cpu %d, gpu %d), %d missed, mean %v p99 %v, growing %v, process CPU %v/query (gc %v/query, %d GCs): sustained %v%s\n",
				r.Setup, r.Rate, r.Answered, r.Procs[scheduler.CPU].Queries, r.Procs[scheduler.GPU].Queries,
				r.Missed, r.Mean, r.P99, r.Growing, r.CPUPerQuery().Round(10*time.Nanosecond),
				r.GCPerQuery().Round(10*time.Nanosecond), r.GCs, r.Sustained(), gpuFirstNote(r))
			if g := r.Procs[scheduler.GPU]; g.Batches > 0 {
				fmt.Fprintf(os.Stderr, "    gpu %d batches of %.0f queries, busy %.0f%%: batch wall %v, gap to the next batch mean %v max %v\n",
					g.Batches, float64(g.Queries)/float64(g.Batches), 100*g.Busy.Seconds()/max(r.Elapsed.Seconds(), 1e-9),
					(g.Busy / time.Duration(g.Batches)).Round(time.Microsecond), g.Gap.Round(time.Microsecond), g.GapMax.Round(time.Microsecond))
			}
			if r.Submissions > 0 {
				fmt.Fprintf(os.Stderr, "    arrivals submitted in %d bursts of %.1f, %v late on average\n", r.Submissions, float64(r.Submitted)/float64(r.Submissions), r.Late.Round(100*time.Nanosecond))
			}
			if rd != nil {
				rd.report()
			}
		},
	}
	start := time.Now()
	if rd != nil {
		rd.mark() // markBeforeRun marks again before each run
	}
	rep, err := e.Run(ctx)
	if err != nil {
		return err
	}
	if err := rep.WriteTable(os.Stdout); err != nil {
		return err
	}
	title := fmt.Sprintf("Scheduler, %v queries: delay vs arrival rate", mode)
	add := func(r *report.Report) {
		s := r.Section(title)
		s.Para("%s; index %s: %d documents, %d terms, %d postings; GPU batches of c = %d postings, wait %v, %d in flight, preparation on %s cores%s; CPU %d slots, batches of up to %v predicted, %d slots in CPU+GPU (GPU host side %.2f cores; %d core splits probed); %d training and %d replayed queries; ran %v.",
			describeDevice(gpuBe), pos[0], x.NumDocs(), x.NumTerms(), x.Meta.Postings, *c0, *wait, *gpuSlots, prepCoresNote(*prepCores)+hybridNote(beforeRun != nil), parkNote(park),
			cpuSlots, *cpuBatch, rep.HybridCPUSlots, rep.HostCores[scheduler.GPU], len(rep.Split), *train, len(qs)-*train,
			time.Since(start).Round(time.Second))
		rep.AddTo(s, fmt.Sprintf("delay-%v", mode))
	}
	if benchReport != nil {
		add(benchReport)
	}
	if *reportDir != "" {
		r := report.New(title)
		r.Para("Command: `qp bench sched %s`", strings.Join(args, " "))
		add(r)
		if err := r.Write(*reportDir); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "report written to %s\n", *reportDir)
	}
	return nil
}

// cpuOnlyRun says whether the run is the CPU's alone (--device cpu: the
// scheduler's own cost measured without a GPU, issue 24), which only the
// cpu-only setup can be, without --diagnose.
func cpuOnlyRun(device string, setups []scheduler.Setup, diagKs []int) (bool, error) {
	if device != "cpu" {
		return false, nil
	}
	if len(diagKs) > 0 {
		return false, fmt.Errorf("--device cpu: --diagnose probes the GPU")
	}
	for _, st := range setups {
		if st != scheduler.CPUOnly {
			return false, fmt.Errorf("--device cpu runs the cpu-only setup only, not %v", st)
		}
	}
	return true, nil
}

// gpuProcessor is the GPU processor of an experiment (no backend: a
// CPU-only run).
func gpuProcessor(b *gpu.Backend, pol scheduler.BatchPolicy, slots int) scheduler.Processor {
	if b == nil {
		return scheduler.Processor{}
	}
	// One batch in four refits the per-query model (Processor.LearnEvery):
	// a batch of a thousand queries is a thousand updates on the delivery
	// goroutine, a core's millisecond beside the CPU's slots.
	return scheduler.Processor{Backend: b, Slots: slots, Batch: pol, LearnEvery: 4}
}

// markBeforeRun is Experiment.BeforeRun: f (nil: nothing), then, with
// --gpu-profile, a mark of the GPU profile, so that a run's profile line
// covers that run alone (not the training and core probes before the
// first run).
func markBeforeRun(f func(scheduler.Setup), rd *runDiag) func(scheduler.Setup) {
	if rd == nil {
		return f
	}
	return func(s scheduler.Setup) {
		if f != nil {
			f(s)
		}
		rd.mark()
	}
}

// hostAssist is Experiment.Assist for --cpu-help: the GPU backend's
// HelpHost, nil when off or without a GPU.
func hostAssist(on bool, g *gpu.Backend) func() bool {
	if !on || g == nil {
		return nil
	}
	return gpu.HelpHost
}

// prepCoresNote is --prepare-cores for the report ("all" for 0).
func prepCoresNote(k int) string {
	if k == 0 {
		return "all"
	}
	return fmt.Sprint(k)
}

// autoPrepareCores is the preparation's core cap that auto gives OR
// batches when --prepare-cores is not set: the setting the device rounds
// measured (docs/BENCHMARKS.md, "CPU and GPU together", sixth round).
const autoPrepareCores = 4

// resolveAdapt is --prepare-adapt's meaning: whether CPU slots are
// parked for mode, and the preparation's core cap: auto parks for OR only
// (with autoPrepareCores unless --prepare-cores was set), on and off as
// said with the cores as given.
func resolveAdapt(a triFlag, mode engine.Mode, cores int, coresSet bool) (bool, int) {
	switch a {
	case triOn:
		return true, cores
	case triOff:
		return false, cores
	}
	if mode != engine.Or {
		return false, cores
	}
	if !coresSet {
		cores = min(autoPrepareCores, runtime.GOMAXPROCS(0))
	}
	return true, cores
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// hybridNote marks a preparation cap that only the hybrid setups have.
func hybridNote(only bool) string {
	if only {
		return " in CPU+GPU (all alone)"
	}
	return ""
}

// parkNote describes --prepare-adapt for the report.
func parkNote(park int) string {
	if park == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d CPU slots parked meanwhile)", park)
}

// gpuFirstNote describes a GPU-first run's batch model and CPU cap.
func gpuFirstNote(r scheduler.Run) string {
	if !r.GPUFirst {
		return ""
	}
	s := fmt.Sprintf("; gpu batch %v + %v/query (error %.0f%% over %d batches)", r.BatchFixed, r.BatchPer, 100*r.BatchError, r.BatchN)
	if r.CPUCap >= 0 {
		s += fmt.Sprintf(", cpu cap %d (gpu host side %.2f cores)", r.CPUCap, r.HostDemand)
	}
	return s
}

// describeDevice names the GPU of a backend ("GPU: NAME, N GiB") or the
// CPU cores.
func describeDevice(b engine.Backend) string {
	cpu := fmt.Sprintf("%d CPU cores", runtime.GOMAXPROCS(0))
	if g, ok := b.(*gpu.Backend); ok && g != nil {
		d := g.Device()
		return fmt.Sprintf("GPU %s (%d SMs, %d GiB), %s", d.Name, d.SMs, d.TotalMemory>>30, cpu)
	}
	return cpu
}

// parseRates parses --rates: comma-separated arrival rates (queries/s),
// each positive.
func parseRates(list string) ([]float64, error) {
	var rs []float64
	for _, s := range splitComma(list) {
		var r float64
		if _, err := fmt.Sscan(s, &r); err != nil || r <= 0 {
			return nil, fmt.Errorf("--rates: bad rate %q", s)
		}
		rs = append(rs, r)
	}
	return rs, nil
}
