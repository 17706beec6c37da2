package serve

import (
	"fmt"
	"math"
	"time"
)

// PipeModel is the queueing model of the pipelined GPU server (batcher.go:
// two batches in flight, the forming batch closed so that its host
// preparation ends as the device frees), from which a latency floor at a
// given arrival rate follows (issue 25's "p99 ≤ 20 ms at 80% load").
//
// A batch of n queries takes D(n) = DeviceA + DeviceB·n on the device and
// P(n) = PrepA + PrepB·n of host preparation before it, overlapped with
// the previous batch's device phase. At a steady rate λ (queries/s) each
// batch holds the arrivals of one cycle T(n) = max(D(n), P(n)) (the slower
// of the two stages sets the pipeline's period), so the smallest stable
// batch solves n = λ·T(n):
//
//	n* = max(λ·DeviceA / (1 − λ·DeviceB), λ·PrepA / (1 − λ·PrepB)), at least 1,
//
// stable only while λ·DeviceB < 1 and λ·PrepB < 1 (else no batch size
// keeps up). A query arriving uniformly within a cycle waits U·T for its
// batch to close (U uniform on [0, 1)), then the batch's preparation and
// device phase: latency U·T + P(n*) + D(n*), whose q-quantile is
//
//	L_q = q·T(n*) + P(n*) + D(n*).
//
// It is a floor, not a forecast: arrivals and batch times without
// variance, and nothing outside the batch (HTTP, the answer's hand-off,
// the client). Larger batches only raise it (D and P grow with n), so a
// p99 target below L_0.99 cannot be met at that rate by any batching
// policy of this pipeline; only a cheaper batch (smaller fixed or
// per-query cost, Need) or a lower rate can.
type PipeModel struct {
	DeviceA, DeviceB float64 // seconds, seconds per query
	PrepA, PrepB     float64 // seconds, seconds per query
}

// PipeBound is PipeModel.Bound's answer at one rate.
type PipeBound struct {
	Rate   float64       // queries/s
	Stable bool          // some batch size keeps up with Rate
	Batch  float64       // n*, the smallest stable batch (fractional)
	Period time.Duration // T(n*) = n*/Rate
	Prep   time.Duration // P(n*)
	Device time.Duration // D(n*)
	P      float64       // the quantile of Latency
	// Latency is L_P = P·Period + Prep + Device (0 when not stable).
	Latency time.Duration
}

// Bound is the model's batch and latency at rate queries/s and quantile q
// (0 < q < 1; 0.99 for the p99). A rate or q out of range is a
// programmer's bug (panic).
func (m PipeModel) Bound(rate, q float64) PipeBound {
	if !(rate > 0) || !(q > 0 && q < 1) {
		panic(fmt.Sprintf("BUG: PipeModel.Bound(rate %v, q %v): want rate > 0, 0 < q < 1", rate, q))
	}
	r := PipeBound{Rate: rate, P: q}
	if rate*m.DeviceB >= 1 || rate*m.PrepB >= 1 {
		return r
	}
	n := max(1, rate*m.DeviceA/(1-rate*m.DeviceB), rate*m.PrepA/(1-rate*m.PrepB))
	d, p := m.DeviceA+m.DeviceB*n, m.PrepA+m.PrepB*n
	t := max(d, p, n/rate) // n/rate when the floor of one query set n
	r.Stable, r.Batch = true, n
	r.Period, r.Prep, r.Device = sec(t), sec(p), sec(d)
	r.Latency = sec(q*t + p + d)
	return r
}

// Need answers what would bring the q-quantile at rate down to target,
// one cost at a time, the others as measured: the largest DeviceA, and
// the largest DeviceB, with Bound(rate, q).Latency <= target (bisection:
// the latency rises with each). ok is false for one when even 0 misses
// the target. Both are the measured values when the target is met.
func (m PipeModel) Need(rate, q float64, target time.Duration) (a float64, okA bool, b float64, okB bool) {
	meets := func(x PipeModel) bool {
		r := x.Bound(rate, q)
		return r.Stable && r.Latency <= target
	}
	solve := func(cur float64, set func(*PipeModel, float64)) (float64, bool) {
		x := m
		if meets(x) {
			return cur, true
		}
		set(&x, 0)
		if !meets(x) {
			return 0, false
		}
		lo, hi := 0.0, cur
		for range 60 {
			mid := (lo + hi) / 2
			set(&x, mid)
			if meets(x) {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo, true
	}
	a, okA = solve(m.DeviceA, func(x *PipeModel, v float64) { x.DeviceA = v })
	b, okB = solve(m.DeviceB, func(x *PipeModel, v float64) { x.DeviceB = v })
	return a, okA, b, okB
}

func sec(s float64) time.Duration {
	if s >= math.MaxInt64/float64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(math.Round(s * float64(time.Second)))
}

// PipeModel is the server's model of its pipelined GPU, from the fits of
// the recent batches' device phases and host preparations (the gauges
// qp_serve_gpu_device_*_seconds and qp_serve_gpu_prepare_*_seconds). ok
// is false when the server is not pipelined or no batch has run.
func (s *Server) PipeModel() (PipeModel, bool) {
	if !s.b.cfg.pipe {
		return PipeModel{}, false
	}
	da, db, ok1 := s.b.devModel.fit()
	pa, pb, ok2 := s.b.prepModel.fit()
	return PipeModel{DeviceA: da, DeviceB: db, PrepA: pa, PrepB: pb}, ok1 && ok2
}
