package serve

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/engine/gpu"
	"github.com/qpengine/qp/internal/cputime"
	"github.com/qpengine/qp/report"
)

// simGPU models a GPU backend's timing for the batcher (not its results):
// a batch's host preparation takes prepA + prepB·n, its device phase
// devA + devB·n, both as sleeps (no CPU: unlike the real backend, whose
// preparation and result conversion compete with the server's HTTP work
// for cores). Pipelined, the preparation runs outside the device lock and
// the device hook is called on taking it (engine/gpu since issue 25);
// else the whole batch holds the lock (engine/gpu before).
//
// Pipelined, the device is let go (the done hook, then the lock) before
// the result conversion, finA + finB·n, as engine/gpu converts the AND
// sets' results off the device; busy sums the device phases' time.
type simGPU struct {
	prepA, prepB, devA, devB time.Duration
	finA, finB               time.Duration
	pipelined                bool
	dev                      sync.Mutex
	busy                     atomic.Int64
}

func (g *simGPU) run(ctx context.Context, qs []engine.Query, out []engine.Response, procs []string) error {
	n := time.Duration(len(qs))
	if !g.pipelined {
		g.dev.Lock()
	}
	time.Sleep(g.prepA + g.prepB*n)
	if g.pipelined {
		g.dev.Lock()
		if f := gpu.DeviceHook(ctx); f != nil {
			f(g.prepA + g.prepB*n)
		}
	}
	t0 := time.Now()
	time.Sleep(g.devA + g.devB*n)
	g.busy.Add(int64(time.Since(t0)))
	if f := gpu.DeviceDoneHook(ctx); f != nil && g.pipelined {
		f(gpu.BatchDevice{})
	}
	g.dev.Unlock()
	time.Sleep(g.finA + g.finB*n)
	for i := range procs {
		procs[i] = "sim"
	}
	return nil
}

// BenchmarkPipelineSim offers a constant rate of one-query requests to
// the batcher over simGPU, one batch in flight with the preparation under
// the device lock (old: the GPU defaults before issue 25's pipelining) and
// pipelined (new: the defaults now), and reports the latency percentiles
// (arrival to answer), the throughput and the mean batch. The model is
// the H100's 10M-document AND batch (docs/BENCHMARKS.md, fourteenth
// session: ~200k q/s in-process, batches of ~2,000 in 15-16 ms at HTTP
// saturation) slowed 10 times so that a loaded development machine can
// offer the rate: device 2 ms + 5 µs/query and preparation 0.2 ms + 0.5
// µs/query, times 10. It says what the batching policy does with a device
// of that shape, not what the real server does (HTTP, the generator and
// the CPU work of preparation are not in it): scripts/device/serveab.sh
// measures that.
//
//	go test -run ^$ -bench PipelineSim -benchtime 1x ./serve/
func BenchmarkPipelineSim(b *testing.B) {
	const scale = 10
	newSim := func(pipe bool) *simGPU {
		return &simGPU{prepA: scale * 200 * time.Microsecond, prepB: scale * 500 * time.Nanosecond,
			devA: scale * 2 * time.Millisecond, devB: scale * 5 * time.Microsecond, pipelined: pipe}
	}
	// Capacity, old: n / (prep(n) + dev(n)) -> 1/(prepB+devB) = 18.2k/s at
	// this scale; new: 1/devB = 20k/s. 80% of the old one:
	for _, rate := range []float64{0.5 * 18_182, 0.8 * 18_182} {
		for _, pipe := range []bool{false, true} {
			name := fmt.Sprintf("rate=%.0f/pipelined=%v", rate, pipe)
			b.Run(name, func(b *testing.B) {
				for range b.N {
					g := newSim(pipe)
					cfg := BatchConfig{}.withDefaults(12<<20, 0, pipe)
					bt := newBatcher(cfg, g.run, nil)
					lat, batches, qs, wall := offer(b, bt, rate, 6*time.Second, 0)
					bt.close()
					b.ReportMetric(report.Percentile(lat, 0.5).Seconds()*1e3, "p50-ms")
					b.ReportMetric(report.Percentile(lat, 0.99).Seconds()*1e3, "p99-ms")
					b.ReportMetric(float64(qs)/wall.Seconds(), "q/s")
					b.ReportMetric(float64(qs)/float64(max(batches, 1)), "batch")
				}
			})
		}
	}
}

// offer submits one-query jobs of PARA cost cost to bt at rate per second
// for d (in groups every millisecond: the rate's arrivals of that
// millisecond), waits for
// every answer and returns the latencies (arrival to answer, sorted), the
// batches and queries run, and the wall time.
func offer(b *testing.B, bt *batcher, rate float64, d time.Duration, cost int64) (lat []time.Duration, batches, queries int64, wall time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	sent := 0
	for tick := time.NewTicker(time.Millisecond); time.Since(start) < d; <-tick.C {
		due := int(rate * time.Since(start).Seconds())
		if due <= sent {
			continue
		}
		js := newJobs(due - sent)
		for _, j := range js {
			j.cost = cost
		}
		sent = due
		// One submission per millisecond (a lone job on an idle batcher
		// would run in the submitting goroutine: not in this loop's).
		if len(js) == 1 {
			go bt.submit(js, time.Time{})
		} else if _, err := bt.submit(js, time.Time{}); err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, j := range js {
				<-j.done
				l := j.end.Sub(j.arrive)
				mu.Lock()
				lat = append(lat, l)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall = time.Since(start)
	slices.Sort(lat)
	return lat, bt.stats.batches.Load(), bt.stats.queries.Load(), wall
}

// BenchmarkPipelineWakes offers one-query submissions (each its own
// submit, as the handlers make them) at 60% of simGPU's pipelined
// capacity (BenchmarkPipelineSim's model) and counts the batcher loop's
// decisions per query, the process's CPU per query, the latency (arrival
// to the batch's end) and the mean batch, with every arrival
// waking the loop (quiet=false, the behaviour before) and only those that
// can change its decision (quiet=true, the default: batcher.quietUntil).
//
//	go test -run ^$ -bench PipelineWakes -benchtime 1x -count 3 ./serve/
func BenchmarkPipelineWakes(b *testing.B) {
	const scale = 10
	for _, quiet := range []bool{false, true, true, false} {
		b.Run(fmt.Sprintf("quiet=%v", quiet), func(b *testing.B) {
			defer func(q bool) { quietArrivals = q }(quietArrivals)
			quietArrivals = quiet
			for range b.N {
				g := &simGPU{prepA: scale * 200 * time.Microsecond, prepB: scale * 500 * time.Nanosecond,
					devA: scale * 2 * time.Millisecond, devB: scale * 5 * time.Microsecond, pipelined: true}
				bt := newBatcher(BatchConfig{}.withDefaults(12<<20, 0, true), g.run, nil)
				cpu0, _ := cputime.Process()
				lat := offerEach(b, bt, 0.6*20_000, 3*time.Second)
				cpu1, _ := cputime.Process()
				bt.close()
				n := float64(len(lat))
				b.ReportMetric(float64(bt.loops.Load())/n, "loops/q")
				b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/n, "cpu-ns/q")
				b.ReportMetric(report.Percentile(lat, 0.5).Seconds()*1e3, "p50-ms")
				b.ReportMetric(report.Percentile(lat, 0.99).Seconds()*1e3, "p99-ms")
				b.ReportMetric(n/float64(max(bt.stats.batches.Load(), 1)), "batch")
			}
		})
	}
}

// offerEach submits one-query jobs to bt at rate per second for d, each
// with its own submit from its own goroutine (as the handlers do; paced
// every millisecond), waits for every answer and returns the latencies
// (arrival to answer, sorted).
func offerEach(b *testing.B, bt *batcher, rate float64, d time.Duration) []time.Duration {
	var all []*job
	start := time.Now()
	for tick := time.NewTicker(time.Millisecond); time.Since(start) < d; <-tick.C {
		due := int(rate * time.Since(start).Seconds())
		for len(all) < due {
			js := newJobs(1)
			all = append(all, js[0])
			go func() {
				if _, err := bt.submit(js, time.Time{}); err != nil {
					b.Error(err)
				}
			}()
		}
	}
	lat := make([]time.Duration, len(all))
	for i, j := range all {
		<-j.done
		lat[i] = j.end.Sub(j.arrive)
	}
	slices.Sort(lat)
	return lat
}

// BenchmarkPipelineServed offers one-query requests at 60% and 80% of the
// H200's in-process rate (302,064 q/s: docs/BENCHMARKS.md, the twenty-
// seventh session's servep99 run) to the pipelined batcher over simGPU
// with the served batches' own fits of that run (the owner pinned, r80):
// device phase 1.02 ms + 3.53 µs/query (its fit to the backend's return
// less the conversion's), the conversion off the device 0.21 ms + 0.10
// µs/query, the host preparation 1.05 µs/query; all, pipeLead with them,
// slowed 10 times (rates a tenth) so that this machine can offer them.
// Each query costs 1 against a PARA threshold of 1,100 (one launch set of
// TREC'06 queries at 10M documents, 12M postings of shortest lists). The
// rules: return (serve7: the device phase ends at the backend's return,
// the threshold closes batches), release (the device phase ends at the
// device's release, offDevice; the threshold still closes them) and new
// (release, and the threshold does not close a pipelined batch:
// paraCloses; the defaults). It reports the latency percentiles (arrival
// to the batch's end, in the slowed time: a tenth is the device's), the
// mean batch, the device's busy share of the wall time and the share of
// the batches the threshold closed: what the close rules do with a device
// of that shape, not the server (HTTP and the CPU's share are not in it;
// the device's cost is linear in the batch, without the launch sets' steps).
//
//	go test -run ^$ -bench PipelineServed -benchtime 1x -count 2 ./serve/
func BenchmarkPipelineServed(b *testing.B) {
	const scale = 10
	const inproc = 302_064.0 / scale
	for _, load := range []float64{0.6, 0.8} {
		for _, rule := range []string{"return", "release", "new"} {
			b.Run(fmt.Sprintf("load=%.0f%%/rule=%s", 100*load, rule), func(b *testing.B) {
				defer func(r, p bool) { devEndAtRelease, paraPipelined = r, p }(devEndAtRelease, paraPipelined)
				devEndAtRelease, paraPipelined = rule != "return", rule != "new"
				for range b.N {
					g := &simGPU{prepB: scale * 1050 * time.Nanosecond,
						devA: scale * 1020 * time.Microsecond, devB: scale * 3530 * time.Nanosecond,
						finA: scale * 210 * time.Microsecond, finB: scale * 100 * time.Nanosecond, pipelined: true}
					bt := newBatcher(BatchConfig{}.withDefaults(1100, 0, true), g.run, nil)
					bt.lead = scale * pipeLead
					lat, batches, qs, wall := offer(b, bt, load*inproc, 8*time.Second, 1)
					bt.close()
					c := closeCounts(bt)
					b.ReportMetric(report.Percentile(lat, 0.5).Seconds()*1e3, "p50-ms")
					b.ReportMetric(report.Percentile(lat, 0.99).Seconds()*1e3, "p99-ms")
					b.ReportMetric(float64(qs)/wall.Seconds(), "q/s")
					b.ReportMetric(float64(qs)/float64(max(batches, 1)), "batch")
					b.ReportMetric(float64(g.busy.Load())/float64(wall), "dev-busy")
					b.ReportMetric(float64(c[closeThreshold])/float64(max(sum(c[:]), 1)), "thr-share")
				}
			})
		}
	}
}
