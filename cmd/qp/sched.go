package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/scheduler"
)

// benchSched replays a query log with Poisson arrivals for the four
// configurations of Ding et al. WWW'09 §9 (Figure 7).
func benchSched(c command, args []string) error {
	c.name = "bench sched"
	c.args = "INDEX QUERIES [flags]"
	fs := newFlags(c, `Replays a query log with Poisson arrivals at each --rates rate for four
configurations — CPU only, GPU only, best-of-two serialized, CPU+GPU in
parallel (the work-stealing scheduler) — and prints the average and p99
delay per rate and the highest rate each sustains with no deadline missed
(Ding et al. WWW'09 §9, Figure 7). Cost models are fitted on --train queries
of the log (not replayed) and refitted online. Needs a usable GPU.`)
	qf := addQueryFlags(fs)
	train := fs.Int("train", 3000, "training queries (taken from the start of the log)")
	n := fs.Int("replay", 2000, "replayed queries (after the training slice)")
	rates := fs.String("rates", "1000,5000,20000", "arrival rates (queries/s) of the table")
	deadline := fs.Duration("deadline", 500*time.Millisecond, "deadline after arrival")
	c0 := fs.Uint64("batch-postings", 1<<20, "GPU batch threshold c: sum of shortest-list lengths")
	wait := fs.Duration("batch-wait", 2*time.Millisecond, "GPU batch time limit")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return errUsage
	}
	*qf.device = "gpu"
	x, an, gpuBe, mode, opt, err := qf.openEngine(pos[0])
	if err != nil {
		return fmt.Errorf("bench sched compares CPU and GPU: %w", err)
	}
	fq, err := readQueryFile(pos[1], *train+*n)
	if err != nil {
		return err
	}
	if len(fq) < *train+1 {
		return fmt.Errorf("%s has %d queries; need more than --train %d", pos[1], len(fq), *train)
	}
	qs := qf.analyzeQueries(an, fq, mode)
	var rs []float64
	for _, s := range splitComma(*rates) {
		var r float64
		if _, err := fmt.Sscan(s, &r); err != nil || r <= 0 {
			return fmt.Errorf("--rates: bad rate %q", s)
		}
		rs = append(rs, r)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	e := &scheduler.Experiment{
		Index:    x,
		CPU:      scheduler.Processor{Backend: engine.NewCPU(x, 1), Slots: runtime.GOMAXPROCS(0)},
		GPU:      scheduler.Processor{Backend: gpuBe, Slots: 1, Batch: scheduler.BatchPolicy{MaxPostings: *c0, MaxWait: *wait}},
		Options:  opt,
		Train:    qs[:*train],
		Queries:  qs[*train:],
		Rates:    rs,
		Deadline: *deadline,
		Seed:     1,
		Progress: func(r scheduler.Run) {
			fmt.Fprintf(os.Stderr, "  %v at %.0f q/s: %d answered, %d missed, mean %v p99 %v\n", r.Setup, r.Rate, r.Answered, r.Missed, r.Mean, r.P99)
		},
	}
	rep, err := e.Run(ctx)
	if err != nil {
		return err
	}
	return rep.WriteTable(os.Stdout)
}
