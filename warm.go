package qp

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"

	"github.com/qpengine/qp/engine"
)

// Warm gets the engine's processors ready for batches of mode and k
// queries, as a first batch would: it answers n synthetic queries (1 to 4
// terms of the index's dictionary each, frequent terms favoured so that
// long lists are decoded too) on each processor the engine holds and
// discards the answers (a CPU answers at most cpuWarmPerWorker per worker). The GPU's first launches, its device memory pool
// and the CPU workers' buffers are then in place before the caller's first
// batch. Under Device Auto both processors are warmed directly, side by
// side, and the router's measurements are left to the caller's own
// batches; under Device CPU and Auto, the engines of a continuous stream
// (StreamOptions.Continuous) are warmed too. Warm may run while the caller does other work (reading a query
// file); a batch of the caller's waits for the processor Warm holds. It
// returns the first batch error; per-query errors are ignored (the
// synthetic queries only warm).
func (e *Engine) Warm(ctx context.Context, opt engine.Options, mode engine.Mode, k, n int) error {
	if n <= 0 || e.x.NumTerms() == 0 {
		return nil
	}
	qs := e.warmQueries(mode, k, n)
	procs := []engine.Backend{e.be}
	if e.route != nil {
		procs = []engine.Backend{e.route.cpu, e.route.gpu}
	}
	errs := make([]error, len(procs)+1)
	cpuBe := e.be
	if e.route != nil {
		cpuBe = e.route.cpu // Device Auto streams on the continuous stream too
	}
	if cpu, ok := cpuBe.(*engine.CPU); ok {
		// The continuous stream's own engines (stream_cpu.go) too.
		e.streamMu.Lock()
		errs[len(procs)] = streamCPU(ctx, e.streamEngines(cpu.Workers()), cpuShare(qs, cpu), opt, StreamOptions{},
			func(int, []engine.Response) error { return nil })
		e.streamMu.Unlock()
	}
	var wg sync.WaitGroup
	for i, be := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			qs := qs
			if cpu, ok := be.(*engine.CPU); ok {
				qs = cpuShare(qs, cpu)
			}
			errs[i] = be.SearchBatch(ctx, qs, opt, make([]engine.Response, len(qs)))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// cpuWarmPerWorker bounds the synthetic queries a CPU answers in Warm:
// enough for each worker to meet long lists, few enough that a chunk-sized
// warm-up meant for a GPU does not keep the cores busy long (Device Auto).
const cpuWarmPerWorker = 32

func cpuShare(qs []engine.Query, cpu *engine.CPU) []engine.Query {
	return qs[:min(len(qs), cpuWarmPerWorker*cpu.Workers())]
}

// warmQueries returns n queries of mode and k over the index's terms,
// the same for the same index (a fixed seed). Each term is the most
// frequent of warmDraws terms drawn uniformly.
func (e *Engine) warmQueries(mode engine.Mode, k, n int) []engine.Query {
	const warmDraws = 8
	rng := rand.New(rand.NewPCG(1, 2))
	nt := e.x.NumTerms()
	qs := make([]engine.Query, n)
	for i := range qs {
		terms := make([]string, 1+i%4)
		for j := range terms {
			best, df := 0, uint32(0)
			for range warmDraws {
				t := rng.IntN(nt)
				if d := e.x.Record(t).DF; d >= df {
					best, df = t, d
				}
			}
			terms[j] = e.x.Term(best)
		}
		qs[i] = engine.Query{ID: "warm", Terms: terms, Mode: mode, K: k}
	}
	return qs
}
