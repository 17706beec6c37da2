package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/cputime"
)

// Core budget of the hybrid setups (issue 24). A GPU backend is not free
// for the host: it prepares queries, feeds the device and converts results
// on host cores, and the dispatcher and the query submitter are host
// goroutines too. GPU alone has every core for that. CPU+GPU with one CPU
// slot per core leaves none: the busy CPU slots slow the GPU's host side
// (and the dispatcher) by time-sharing, and the hybrid can serve fewer
// queries than the GPU alone (the simulation's host-contention model
// reproduces it: sim_test.go, TestSimHostContention). So the hybrid's CPU
// gets only the cores the GPU side leaves, measured either as the GPU's
// mean core use (HostCores, HybridCPUSlots) or, better, by probing the
// throughput of both processors together at several splits (ProbeSplit):
// CPU+GPU is then the GPU alone plus a CPU of fewer cores, or the GPU
// alone where no split gains.

// HostCores is the mean number of cores the process used while f ran: its
// CPU time (user + system, all goroutines) over f's wall time. ok is false
// where the process CPU time is not available, or f took no time.
func HostCores(f func() error) (cores float64, ok bool, err error) {
	c0, ok0 := cputime.Process()
	start := time.Now()
	err = f()
	wall := time.Since(start)
	c1, ok1 := cputime.Process()
	if !ok0 || !ok1 || wall <= 0 {
		return 0, false, err
	}
	return float64(c1-c0) / float64(wall), true, err
}

// HybridCPUSlots is the number of CPU slots CPU+GPU runs with: the CPU's
// slots alone (one per core) less the cores the GPU's host side was
// measured to use at full load (gpuHostCores, rounded up) and one for the
// dispatcher and the submitter; 0 when none is left (CPU+GPU is then the
// GPU alone). With gpuHostCores unknown (< 0) only the dispatcher's core is
// reserved.
func HybridCPUSlots(cpuSlots int, gpuHostCores float64) int {
	reserve := 1
	if gpuHostCores > 0 {
		reserve += int(math.Ceil(gpuHostCores - 0.05)) // 1.02 cores of a busy feeder is one core
	}
	return max(cpuSlots-reserve, 0)
}

// hybridCPUSlots resolves Experiment.HybridCPUSlots given the GPU's
// measured host cores (-1: not measured).
func (e *Experiment) hybridCPUSlots(gpuHostCores float64) int {
	n := max(e.CPU.Slots, 1)
	switch {
	case e.HybridCPUSlots > 0:
		return e.HybridCPUSlots
	case e.HybridCPUSlots < 0 || gpuHostCores < 0:
		return n
	}
	return HybridCPUSlots(n, gpuHostCores)
}

// SplitProbe is the throughput of one core split: the GPU running batches
// back to back while CPUSlots goroutines run CPU queries back to back, one
// at a time, over the same span of time.
type SplitProbe struct {
	CPUSlots               int
	CPUQueries, GPUQueries int
	Elapsed                time.Duration
	// GPUBatches is the number of GPU batches run, GPUBusy the sum of
	// their SearchBatch wall times, GPUMaxWall the longest.
	GPUBatches          int
	GPUBusy, GPUMaxWall time.Duration
}

// Rate is the probe's queries per second, both processors together.
func (p SplitProbe) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.CPUQueries+p.GPUQueries) / p.Elapsed.Seconds()
}

// ProbeSplit measures the throughput of CPU and GPU together for each
// number of busy CPU slots in ks: for dur, the GPU runs qs cyclically in
// the batches its policy forms (costs predicted by gpuModel) while k
// goroutines run qs cyclically on the CPU, one query per call. The host
// work of the GPU's batches then competes with the k busy cores as it
// does in CPU+GPU, so the probe with the highest Rate is the split at
// which the hybrid serves the most: where the GPU's host side needs the
// cores in bursts (query preparation and result conversion on every core
// at the end of each batch), which its mean core use (HostCores) does not
// show, the probe sees the GPU slow down. The dispatcher is not part of
// the probe (keep its core out of ks).
func ProbeSplit(ctx context.Context, x *index.Index, cpu, gpu engine.Backend, pol BatchPolicy, gpuModel *CostModel,
	opt engine.Options, qs []engine.Query, ks []int, dur time.Duration) ([]SplitProbe, error) {
	return ProbeSplitWith(ctx, x, cpu, gpu, pol, gpuModel, opt, qs, ks, dur, ProbeOptions{})
}

// ProbeOptions vary ProbeSplitWith's CPU goroutines: Nice raises their
// threads' nice values (Config.CPUNice); Yield makes them call
// runtime.Gosched between two queries, as the scheduler's CPU slots do
// beside a GPU (runSequential), so that the GPU side's goroutines get a P
// within one query's time.
type ProbeOptions struct {
	Nice  int
	Yield bool
}

// ProbeSplitWith is ProbeSplit with the CPU goroutines varied by o.
func ProbeSplitWith(ctx context.Context, x *index.Index, cpu, gpu engine.Backend, pol BatchPolicy, gpuModel *CostModel,
	opt engine.Options, qs []engine.Query, ks []int, dur time.Duration, o ProbeOptions) ([]SplitProbe, error) {
	if len(qs) == 0 {
		return nil, errors.New("scheduler: probing the core split without queries")
	}
	batches, _, _ := formBatches(x, qs, pol, gpuModel)
	out := make([]SplitProbe, 0, len(ks))
	for _, k := range ks {
		pr, err := probe(ctx, cpu, gpu, batches, opt, qs, k, dur, o)
		if err != nil {
			return out, err
		}
		out = append(out, pr)
	}
	return out, nil
}

// probe is one ProbeSplit measurement with k CPU goroutines.
func probe(ctx context.Context, cpu, gpu engine.Backend, batches []span, opt engine.Options, qs []engine.Query, k int, dur time.Duration, o ProbeOptions) (SplitProbe, error) {
	pr := SplitProbe{CPUSlots: k}
	var stop atomic.Bool
	var cpuN atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, k)
	start := time.Now()
	for g := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := lowerThreadPriority(o.Nice); err != nil {
				errs[g] = err
				return
			}
			out := make([]engine.Response, 1)
			for i := g * len(qs) / max(k, 1); !stop.Load(); i = (i + 1) % len(qs) {
				if err := cpu.SearchBatch(ctx, qs[i:i+1], opt, out); err != nil {
					errs[g] = err
					return
				}
				cpuN.Add(1)
				if o.Yield {
					runtime.Gosched()
				}
			}
		}()
	}
	var gerr error
	var out []engine.Response
	for i := 0; time.Since(start) < dur; i = (i + 1) % len(batches) {
		b := batches[i]
		out = append(out[:0], make([]engine.Response, b.hi-b.lo)...)
		t := time.Now()
		if gerr = gpu.SearchBatch(ctx, qs[b.lo:b.hi], opt, out); gerr != nil {
			break
		}
		w := time.Since(t)
		pr.GPUQueries += b.hi - b.lo
		pr.GPUBatches++
		pr.GPUBusy += w
		pr.GPUMaxWall = max(pr.GPUMaxWall, w)
	}
	stop.Store(true)
	wg.Wait()
	pr.Elapsed = time.Since(start)
	pr.CPUQueries = int(cpuN.Load())
	if gerr != nil {
		return pr, fmt.Errorf("scheduler: probing the core split on %s: %w", gpu.Name(), gerr)
	}
	for _, err := range errs {
		if err != nil {
			return pr, fmt.Errorf("scheduler: probing the core split on %s: %w", cpu.Name(), err)
		}
	}
	return pr, nil
}

// checkNice reports whether CPU threads can have their priority lowered
// by nice (Config.CPUNice): negative is an error, 0 is off, and a
// positive value is tried on a throwaway thread.
func checkNice(nice int) error {
	if nice < 0 {
		return fmt.Errorf("scheduler: CPU nice %d, want >= 0", nice)
	}
	if nice == 0 {
		return nil
	}
	errc := make(chan error)
	go func() { errc <- lowerThreadPriority(nice) }() // the thread ends with the goroutine
	return <-errc
}

// splitCandidates are the CPU slot counts ProbeSplit tries for a CPU of n
// slots: none, a quarter, half, three quarters and all of n-1 (one core is
// the dispatcher's), and avg (HybridCPUSlots from the GPU's mean core
// use), deduplicated in increasing order.
func splitCandidates(n, avg int) []int {
	top := max(n-1, 0)
	ks := []int{0, top / 4, top / 2, 3 * top / 4, top, min(max(avg, 0), top)}
	slices.Sort(ks)
	return slices.Compact(ks)
}

// bestSplit is the probe of the highest rate; a probe with more CPU slots
// must beat one with fewer by 2% (the probes' noise), so that CPU slots
// are added only where they pay.
func bestSplit(ps []SplitProbe) SplitProbe {
	var best SplitProbe
	for i, p := range ps {
		if i == 0 || p.Rate() > 1.02*best.Rate() {
			best = p
		}
	}
	return best
}
