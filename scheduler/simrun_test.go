package scheduler

import (
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
)

// powerCost is c·(1+Sum)^e: a cost growing with the postings read.
func powerCost(c time.Duration, e float64) func(Features) time.Duration {
	return func(f Features) time.Duration {
		return time.Duration(float64(c) * math.Pow(1+float64(f.Sum), e))
	}
}

// simTrain fits a cost model the way Experiment does: on the true costs of
// queries alone (a CPU slot) or on batches of batch queries with the batch
// time shared in proportion to the per-query costs (a GPU, MeasureBatches).
func simTrain(e *simSetup, id ProcID, batch int) *CostModel {
	c := &e.cost[id]
	qs := testQueries(2000, e.seed+100)
	var samples []Sample
	for lo := 0; lo < len(qs); lo += batch {
		hi := min(lo+batch, len(qs))
		fs := make([]Features, 0, batch)
		ts := make([]time.Duration, 0, batch)
		var sum time.Duration
		for _, q := range qs[lo:hi] {
			f := QueryFeatures(e.x, q)
			d := c.Query(f)
			if c.Host != nil {
				d += c.Host(f)
			}
			fs, ts, sum = append(fs, f), append(ts, d), sum+d
		}
		wall := c.Fixed + sum
		for i, f := range fs {
			samples = append(samples, Sample{Features: f, Time: time.Duration(float64(wall) * float64(ts[i]) / float64(sum))})
		}
	}
	m, _ := Train(samples, ModelOptions{})
	return m
}

// simWorkload is the base simulated pair: a 16-slot CPU and a batching GPU
// of about twice its capacity at 200 ms deadlines (the ratio of GCIDE OR
// on the H200, with costs scaled up ~100× so that runs are short; virtual
// time, so the scale does not matter).
func simWorkload(t testing.TB) *simSetup {
	x := testIndex(t)
	e := &simSetup{
		x:        x,
		queries:  testQueries(3000, 9),
		deadline: 200 * time.Millisecond,
		seed:     1,
		cost: [2]simCost{
			CPU: {Query: powerCost(200*time.Microsecond, 0.5), Noise: 0.3},
			GPU: {Query: powerCost(20*time.Microsecond, 0.3), Fixed: 20 * time.Millisecond,
				Host: powerCost(10*time.Microsecond, 0.2), Noise: 0.2},
		},
	}
	e.procs[CPU] = Processor{Slots: 16}
	e.procs[GPU] = Processor{Slots: 1, Batch: BatchPolicy{MaxQueries: 1024, MaxPostings: 100000, MaxWait: 2 * time.Millisecond}}
	e.procs[CPU].Model = simTrain(e, CPU, 1)
	e.procs[GPU].Model = simTrain(e, GPU, 512)
	return e
}

func simRates(t *testing.T, e *simSetup, setups ...Setup) map[Setup]float64 {
	out := map[Setup]float64{}
	for _, st := range setups {
		sr := e.search(t, st, 500)
		out[st] = sr.MaxRate
		e.run(t, st, sr.MaxRate, e.seed)
		t.Logf("%v at %.0f q/s: %.1f dispatcher visits per query", st, sr.MaxRate, e.visits)
		t.Logf("%v: %.0f q/s sustained (lowest failed %.0f), best run: cpu %d q, gpu %d q in %d batches, stolen %d, p99 %v, model err cpu %.1f%% gpu %.1f%%",
			st, sr.MaxRate, sr.Failed, sr.Best.Procs[CPU].Queries, sr.Best.Procs[GPU].Queries, sr.Best.Procs[GPU].Batches,
			sr.Best.Procs[CPU].Stolen+sr.Best.Procs[GPU].Stolen, sr.Best.P99, 100*sr.Best.Procs[CPU].ModelError, 100*sr.Best.Procs[GPU].ModelError)
	}
	return out
}

func TestSimExplore(t *testing.T) {
	e := simWorkload(t)
	if os.Getenv("FASTGPU") != "" { // GPU ~5× the CPU, host part half of a batch
		e.cost[GPU] = simCost{Query: powerCost(2*time.Microsecond, 0.3), Fixed: 10 * time.Millisecond,
			Host: powerCost(5*time.Microsecond, 0.2), Noise: 0.2}
		e.procs[GPU].Model = simTrain(e, GPU, 1024)
	}
	if v := os.Getenv("HSLOTS"); v != "" {
		e.hybridCPUSlots, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("CPUBATCH"); v != "" {
		d, _ := time.ParseDuration(v)
		e.procs[CPU].Batch = BatchPolicy{MaxCost: d}
	}
	switch os.Getenv("SIMX") {
	case "contention":
		e.machine = simMachine{Cores: 16, HostCores: 6}
	case "visit":
		e.machine = simMachine{DispVisit: 50 * time.Nanosecond}
	case "disp":
		e.machine = simMachine{DispArrival: 5 * time.Microsecond, DispBatch: 60 * time.Microsecond}
	}
	r := simRates(t, e, CPUOnly, GPUOnly, Parallel, ParallelNoSteal)
	c, g := r[CPUOnly], r[GPUOnly]
	for _, st := range []Setup{Parallel, ParallelNoSteal} {
		t.Logf("%v: %.2f× better, %.2f of sum", st, r[st]/max(c, g), r[st]/(c+g))
	}
	_ = engine.And
}
