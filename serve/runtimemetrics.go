package serve

import (
	"math"
	rm "runtime/metrics"

	"github.com/prometheus/client_golang/prometheus"
)

// runtimeCollector exports the Go runtime's own measurements of what can
// stretch a request's tail inside the server (issue 25: p99 at 80% load),
// read from runtime/metrics at each scrape:
//
//   - qp_serve_go_gc_pauses_seconds: stop-the-world GC pauses
//     (/sched/pauses/total/gc:seconds);
//   - qp_serve_go_sched_latencies_seconds: time goroutines spent runnable
//     before running (/sched/latencies:seconds): a handler woken by its
//     batch waits this long for a P;
//   - qp_serve_go_goroutines, qp_serve_go_heap_objects_bytes,
//     qp_serve_go_heap_goal_bytes (gauges), qp_serve_go_gc_cycles_total
//     and qp_serve_go_gc_cpu_seconds_total (counters).
//
// The runtime's histograms (about a hundred buckets each) are re-bucketed
// onto latencyBuckets: a runtime bucket counts in the first of ours whose
// upper bound is at least its own. Their _sum is an estimate (each
// runtime bucket's count times its midpoint; the lower bound for the last,
// unbounded one): the runtime keeps no exact sum.
type runtimeCollector struct {
	pauses, sched, goroutines, heap, goal, cycles, gcCPU *prometheus.Desc
}

// The runtime/metrics names read (Go 1.22+).
const (
	rmPauses     = "/sched/pauses/total/gc:seconds"
	rmSched      = "/sched/latencies:seconds"
	rmGoroutines = "/sched/goroutines:goroutines"
	rmHeap       = "/memory/classes/heap/objects:bytes"
	rmGoal       = "/gc/heap/goal:bytes"
	rmCycles     = "/gc/cycles/total:gc-cycles"
	rmGCCPU      = "/cpu/classes/gc/total:cpu-seconds"
)

func newRuntimeCollector() *runtimeCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &runtimeCollector{
		pauses:     d("qp_serve_go_gc_pauses_seconds", "Go runtime: stop-the-world GC pauses ("+rmPauses+"; _sum estimated from the runtime's buckets)."),
		sched:      d("qp_serve_go_sched_latencies_seconds", "Go runtime: time goroutines waited runnable before running ("+rmSched+"; _sum estimated)."),
		goroutines: d("qp_serve_go_goroutines", "Go runtime: live goroutines ("+rmGoroutines+")."),
		heap:       d("qp_serve_go_heap_objects_bytes", "Go runtime: heap memory in live and not yet swept objects ("+rmHeap+")."),
		goal:       d("qp_serve_go_heap_goal_bytes", "Go runtime: the heap size at which the next GC starts ("+rmGoal+")."),
		cycles:     d("qp_serve_go_gc_cycles_total", "Go runtime: completed GC cycles ("+rmCycles+")."),
		gcCPU:      d("qp_serve_go_gc_cpu_seconds_total", "Go runtime: CPU time spent in GC, an estimate ("+rmGCCPU+")."),
	}
}

func (c *runtimeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pauses, c.sched, c.goroutines, c.heap, c.goal, c.cycles, c.gcCPU} {
		ch <- d
	}
}

func (c *runtimeCollector) Collect(ch chan<- prometheus.Metric) {
	s := []rm.Sample{{Name: rmPauses}, {Name: rmSched}, {Name: rmGoroutines}, {Name: rmHeap},
		{Name: rmGoal}, {Name: rmCycles}, {Name: rmGCCPU}}
	rm.Read(s)
	for _, x := range s {
		var m prometheus.Metric
		var err error
		switch x.Name {
		case rmPauses, rmSched:
			if x.Value.Kind() != rm.KindFloat64Histogram {
				continue // a runtime without it
			}
			d := c.pauses
			if x.Name == rmSched {
				d = c.sched
			}
			count, sum, buckets := rebucket(x.Value.Float64Histogram(), latencyBuckets)
			m, err = prometheus.NewConstHistogram(d, count, sum, buckets)
		case rmGoroutines, rmHeap, rmGoal, rmCycles:
			if x.Value.Kind() != rm.KindUint64 {
				continue
			}
			d, t := map[string]*prometheus.Desc{rmGoroutines: c.goroutines, rmHeap: c.heap, rmGoal: c.goal, rmCycles: c.cycles}[x.Name], prometheus.GaugeValue
			if x.Name == rmCycles {
				t = prometheus.CounterValue
			}
			m, err = prometheus.NewConstMetric(d, t, float64(x.Value.Uint64()))
		case rmGCCPU:
			if x.Value.Kind() != rm.KindFloat64 {
				continue
			}
			m, err = prometheus.NewConstMetric(c.gcCPU, prometheus.CounterValue, x.Value.Float64())
		}
		if err == nil && m != nil {
			ch <- m
		}
	}
}

// rebucket maps the runtime histogram h onto the upper bounds bounds
// (ascending): the cumulative counts Prometheus wants, the total count
// and the estimated sum (see runtimeCollector). A runtime bucket counts in
// the first bound at or above its upper edge; past the last bound, only
// in the total (+Inf).
func rebucket(h *rm.Float64Histogram, bounds []float64) (count uint64, sum float64, cum map[float64]uint64) {
	per := make([]uint64, len(bounds))
	j := 0
	for i, n := range h.Counts {
		if n == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		count += n
		switch {
		case math.IsInf(hi, 1):
			sum += float64(n) * max(lo, 0)
		case math.IsInf(lo, -1):
			sum += float64(n) * max(hi, 0)
		default:
			sum += float64(n) * (lo + hi) / 2
		}
		for j < len(bounds) && bounds[j] < hi {
			j++
		}
		if j < len(bounds) {
			per[j] += n
		}
	}
	cum = make(map[float64]uint64, len(bounds))
	var acc uint64
	for i, b := range bounds {
		acc += per[i]
		cum[b] = acc
	}
	return count, sum, cum
}
