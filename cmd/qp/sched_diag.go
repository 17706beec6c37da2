package main

// Diagnostics of `qp bench sched` for issue 24: why the GPU's batches slow
// down when CPU query workers share the host. Two instruments:
//
//   - --diagnose K1,K2,...: for each K, the GPU runs the training queries
//     in its batches back to back while K goroutines run CPU queries back
//     to back (scheduler.ProbeSplit, no dispatcher), --diagnose-for each;
//     one row per K with the rates, the GPU's batch wall time split into
//     its host phases and device time (engine/gpu Profile, events on),
//     the CUDA owner thread's CPU time, run-queue delay and involuntary
//     switches, and the Go runtime's GC and scheduling-latency figures
//     (runtime/metrics) over the probe.
//   - --gpu-profile: the same GPU profile and runtime figures per run of
//     the rate table and searches, after each run's progress line.
//
// Variants that are process-wide (GOMAXPROCS, GOGC, the CUDA sync mode
// QP_CUDA_SYNC) are set by the caller's environment:
// scripts/device/contention.sh runs them side by side.

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/engine/gpu"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/cputime"
	"github.com/qpengine/qp/scheduler"
)

// rtSnap is a reading of the Go runtime's metrics and the process CPU time.
type rtSnap struct {
	at                time.Time
	gcCycles          uint64
	gcAssist, gcTotal float64 // CPU seconds
	allocBytes        uint64
	schedLat          *metrics.Float64Histogram
	proc              time.Duration
	procOK            bool
	gcPauseHist       *metrics.Float64Histogram
}

var rtNames = []string{
	"/gc/cycles/total:gc-cycles",
	"/cpu/classes/gc/mark/assist:cpu-seconds",
	"/cpu/classes/gc/total:cpu-seconds",
	"/gc/heap/allocs:bytes",
	"/sched/latencies:seconds",
	"/sched/pauses/total/gc:seconds",
}

func readRuntime() rtSnap {
	ss := make([]metrics.Sample, len(rtNames))
	for i, n := range rtNames {
		ss[i].Name = n
	}
	metrics.Read(ss)
	s := rtSnap{at: time.Now()}
	for _, m := range ss {
		switch m.Value.Kind() {
		case metrics.KindUint64:
			switch m.Name {
			case rtNames[0]:
				s.gcCycles = m.Value.Uint64()
			case rtNames[3]:
				s.allocBytes = m.Value.Uint64()
			}
		case metrics.KindFloat64:
			switch m.Name {
			case rtNames[1]:
				s.gcAssist = m.Value.Float64()
			case rtNames[2]:
				s.gcTotal = m.Value.Float64()
			}
		case metrics.KindFloat64Histogram:
			h := m.Value.Float64Histogram()
			c := &metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: h.Buckets}
			switch m.Name {
			case rtNames[4]:
				s.schedLat = c
			case rtNames[5]:
				s.gcPauseHist = c
			}
		}
	}
	s.proc, s.procOK = cputime.Process()
	return s
}

// histQuantile is the q-quantile of the difference of two readings of a
// cumulative histogram (the upper bound of the bucket it falls in), and
// the count; 0 when empty or unknown.
func histQuantile(a, b *metrics.Float64Histogram, q float64) (float64, uint64) {
	if a == nil || b == nil || len(a.Counts) != len(b.Counts) {
		return 0, 0
	}
	var n uint64
	for i := range b.Counts {
		n += b.Counts[i] - a.Counts[i]
	}
	if n == 0 {
		return 0, 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	var c uint64
	for i := range b.Counts {
		c += b.Counts[i] - a.Counts[i]
		if c >= rank {
			up := b.Buckets[i+1]
			if math.IsInf(up, 1) {
				up = b.Buckets[i]
			}
			return up, n
		}
	}
	return 0, n
}

// runtimeLine describes the runtime between two readings: GC cycles and
// CPU, allocation rate, goroutine scheduling latency (runnable to
// running) p50/p99/p99.9 and the process's cores.
func runtimeLine(a, b rtSnap) string {
	wall := b.at.Sub(a.at).Seconds()
	if wall <= 0 {
		return ""
	}
	p50, n := histQuantile(a.schedLat, b.schedLat, 0.5)
	p99, _ := histQuantile(a.schedLat, b.schedLat, 0.99)
	p999, _ := histQuantile(a.schedLat, b.schedLat, 0.999)
	gp99, gn := histQuantile(a.gcPauseHist, b.gcPauseHist, 0.99)
	cores := -1.0
	if a.procOK && b.procOK {
		cores = (b.proc - a.proc).Seconds() / wall
	}
	return fmt.Sprintf("runtime: %d GC (%.1f/s, gc cpu %.2f cores, assist %.3f cores, %d pauses p99 %s), alloc %.1f MB/s, goroutine sched latency p50 %s p99 %s p99.9 %s (%d), process %.2f cores",
		b.gcCycles-a.gcCycles, float64(b.gcCycles-a.gcCycles)/wall, (b.gcTotal-a.gcTotal)/wall, (b.gcAssist-a.gcAssist)/wall,
		gn, secs(gp99), float64(b.allocBytes-a.allocBytes)/wall/1e6, secs(p50), secs(p99), secs(p999), n, cores)
}

func secs(s float64) string { return time.Duration(s * 1e9).String() }

// profileLine describes the GPU batches between two profile readings:
// per batch, the wall time and its host phases (finish: the result
// conversion on the batch's goroutine after the device, andplan.go), the
// device time (events; zero without profiling) and the owner thread's
// CPU, run delay and involuntary switches.
func profileLine(a, b gpu.Profile) string {
	n := b.Batches - a.Batches
	if n <= 0 {
		return "gpu: no batches"
	}
	per := func(x, y time.Duration) string {
		return ((y - x) / time.Duration(n)).Round(time.Microsecond / 10).String()
	}
	dev := (b.Decode + b.Intersect + b.Score + b.TopK + b.Transfer) - (a.Decode + a.Intersect + a.Score + a.TopK + a.Transfer)
	q := b.Queries - a.Queries
	perQ := func(d time.Duration) string {
		if q <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fµs", d.Seconds()*1e6/float64(q))
	}
	return fmt.Sprintf("gpu: %d batches of %.0f queries: wall %s (%s/query) = prepare %s (plan %s) + hand-off %s + owner %s [sync waits %s, convert %s, inside %.0f driver calls %s] + finish %s (%d of %d sets planned off the owner); device %s (%s/query); owner thread cpu %s, run delay %s, %.1f involuntary switches per batch",
		n, float64(q)/float64(n), per(a.Wall, b.Wall), perQ(b.Wall-a.Wall), per(a.HostPrepare, b.HostPrepare), per(a.HostPlan, b.HostPlan), per(a.HostWait, b.HostWait),
		per(a.HostRun, b.HostRun), per(a.HostSync, b.HostSync), per(a.HostConvert, b.HostConvert),
		float64(b.DriverCalls-a.DriverCalls)/float64(n), per(a.OwnerDriver, b.OwnerDriver),
		per(a.HostFinish, b.HostFinish), b.PlannedSets-a.PlannedSets, b.Sets-a.Sets,
		(dev / time.Duration(n)).Round(time.Microsecond/10), perQ(dev),
		per(a.OwnerCPU, b.OwnerCPU), per(a.OwnerRunDelay, b.OwnerRunDelay), float64(b.OwnerInvoluntary-a.OwnerInvoluntary)/float64(n))
}

// runDiag is the per-run diagnostic of --gpu-profile: it prints, after
// each run, the GPU profile and runtime lines since the previous call.
type runDiag struct {
	g   *gpu.Backend
	w   io.Writer
	p   gpu.Profile
	rt  rtSnap
	set bool
}

func (d *runDiag) mark() {
	d.p, d.rt, d.set = d.g.Profile(), readRuntime(), true
}

func (d *runDiag) report() {
	p, rt := d.g.Profile(), readRuntime()
	if d.set {
		fmt.Fprintf(d.w, "    %s\n    %s\n", profileLine(d.p, p), runtimeLine(d.rt, rt))
	}
	d.p, d.rt, d.set = p, rt, true
}

// diagnose runs the --diagnose probes and prints one block per K.
func diagnose(ctx context.Context, w io.Writer, x *index.Index, cpuBe engine.Backend, g *gpu.Backend, pol scheduler.BatchPolicy,
	opt engine.Options, qs []engine.Query, ks []int, dur time.Duration, po scheduler.ProbeOptions) error {
	sync, err := cuda.SyncModeFromEnv()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "diagnose: the phases' CUDA events (device times) about double the driver calls of a batch (two records and an elapsed time per timed span)\n")
	fmt.Fprintf(w, "diagnose: GOMAXPROCS %d, %d logical CPUs, %s=%v, GOGC %s, CPU workers' nice +%d, yield %v; %d queries cycled, GPU batches of c = %d postings; %v per probe\n",
		runtime.GOMAXPROCS(0), runtime.NumCPU(), cuda.SyncEnv, sync, gogc(), po.Nice, po.Yield, len(qs), pol.MaxPostings, dur)
	g.SetProfile(true)
	defer g.SetProfile(false)
	m := scheduler.NewCostModel(scheduler.ModelOptions{})
	// A first, unreported probe warms the device, the pools and the heap.
	if _, err := scheduler.ProbeSplit(ctx, x, cpuBe, g, pol, m, opt, qs, []int{0}, dur/2); err != nil {
		return err
	}
	for _, k := range ks {
		runtime.GC()
		p0, rt0 := g.Profile(), readRuntime()
		ps, err := scheduler.ProbeSplitWith(ctx, x, cpuBe, g, pol, m, opt, qs, []int{k}, dur, po)
		if err != nil {
			return err
		}
		p1, rt1 := g.Profile(), readRuntime()
		pr := ps[0]
		el := pr.Elapsed.Seconds()
		fmt.Fprintf(w, "K=%d cpu workers: cpu %.0f q/s, gpu %.0f q/s, total %.0f q/s; gpu busy %.1f%% of the probe, batch wall max %v\n",
			k, float64(pr.CPUQueries)/el, float64(pr.GPUQueries)/el, pr.Rate(), 100*pr.GPUBusy.Seconds()/el, pr.GPUMaxWall.Round(time.Microsecond))
		fmt.Fprintf(w, "  %s\n  %s\n", profileLine(p0, p1), runtimeLine(rt0, rt1))
	}
	return nil
}

// gogc is the GOGC setting as the environment gives it.
func gogc() string {
	v, ok := os.LookupEnv("GOGC")
	if !ok || v == "" {
		return "100 (default)"
	}
	return v
}
