package qp

import (
	"context"
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/qpengine/qp/engine"
)

// router is the backend of Device Auto when a GPU is usable: it answers
// each batch on the processor, CPU or GPU, measured to serve batches of its
// mode and size faster, so that Auto is never much slower than the faster
// of the two (issue #20: on GCIDE the 16-core CPU answers TREC'06 AND twice
// as fast as the H100, which wins OR 3.4-8×). Results do not depend on the
// choice: the GPU's equal the CPU's.
//
// The policy. A processor's cost of a batch is summarized per query mode
// and batch size bucket (⌊log2 n⌋) as the per-query time of its last
// measurements (an exponentially weighted mean). Two assumptions, true of
// both engines, let a few small measurements decide for large batches:
//
//   - the per-query time of a batch does not grow with its size (a larger
//     batch only amortizes more fixed cost and fills more of the device);
//   - a processor's per-query time is taken to have stopped changing when
//     a batch 4× larger improved it by less than flatGain, or at its
//     saturation size (cpuSaturation queries per CPU worker, gpuSaturation
//     for the GPU). The CPU is not saturated by a few queries per worker:
//     its batch has a start (H200, GCIDE AND, 16 workers: 6.8 µs a query
//     at 64 queries, 0.33 µs at 16,384).
//
// So a processor's per-query time for a batch of n is known ("exact") when
// it was measured at n's bucket, or at a smaller saturated size; otherwise
// the nearest smaller measurement is an upper bound and its marginal time
// per query between two sizes 4× apart a lower bound (batch time = fixed
// part + per-query part). A batch whose processor is not decided yet is
// answered in slices that calibrate (plan): CPU slices of 4 then 16
// queries per worker (its marginal time), then GPU slices growing 4× from
// calibrationStart, until one processor's upper bound is below the other's
// lower bound; where the GPU's exact time falls between the CPU's bounds,
// the CPU gets a larger slice. The rest of the batch goes to the winner.
// Every batch refreshes its processor's measurement, so a processor that
// slows down (a cold cache, a shared machine) loses its batches to the
// other once it is measured slower than the other's last time. Calibration
// answers real queries — nothing is run twice — and its cost is bounded by
// the slices run on the slower processor: geometric sizes, a few thousand
// queries per mode at most.
//
// A batch of several modes is classified as "mixed". Options (algorithms)
// are not part of the key: an Engine is expected to serve one
// configuration.
type router struct {
	cpu, gpu engine.Backend
	workers  int                 // CPU workers, for the CPU's saturation size
	clock    [2]func() time.Time // by processor: the clocks measuring its batches (tests inject them)
	// split lets a decided batch run on both processors at once
	// (auto_split.go); off, the winner answers it alone.
	split bool
	// race runs a stream's race (auto_race.go); nil: raceLive (tests
	// simulate it).
	race raceFunc
	// profile, when not nil, keeps the streams' measured times across
	// runs (auto_profile.go).
	profile *profile
	// help, when not nil, runs chunks of the GPU's open fanned-out host
	// work and yields (raceBetween): the CPU's race pieces call it
	// between their queries (auto_race.go).
	help func() bool

	mu    sync.Mutex
	modes [4]modeCosts // by engine.Mode; 0: mixed batches
}

// modeCosts are the measured per-query times of one mode.
type modeCosts struct {
	cost    [2][buckets]float64 // [proc][bucket]: seconds per query, 0 = never measured
	size    [2][buckets]float64 // [proc][bucket]: batch size of those measurements
	queries [2]uint64           // answered per processor
	batches [2]uint64
	splits  splitState  // batches answered by both processors at once
	stream  streamState // stream races and segments on each processor's own stream (auto_stream.go)
}

const (
	procCPU = 0
	procGPU = 1
	buckets = 32
	// cpuStart is the CPU's first calibration slice, in queries per worker.
	cpuStart = 4
	// cpuSaturation is the number of queries per CPU worker from which the
	// CPU's per-query time is taken as constant (before, a 4× larger slice
	// that improved it by less than flatGain ends its calibration).
	cpuSaturation = 256
	// calibrationStart is the first GPU calibration slice.
	calibrationStart = 64
	// flatGain: a per-query time that a 4× larger batch improved by less
	// than this fraction has saturated (either processor).
	flatGain = 0.15
	// gpuSaturation is a batch size from which the GPU's per-query time
	// is taken as constant (PARA launch sets are full long before).
	gpuSaturation = 4096
	// gpuMargin: the GPU's marginal per-query time must exceed the
	// CPU's per-query time by this factor to rule the GPU out before it is
	// measured at a batch's size.
	gpuMargin = 1.25
	// ewma is the weight of a new measurement.
	ewma = 0.5
)

func newRouter(cpu, gpu engine.Backend, workers int) *router {
	return &router{cpu: cpu, gpu: gpu, workers: max(workers, 1), clock: [2]func() time.Time{time.Now, time.Now}, split: true}
}

// setClock measures both processors' batches with now (tests).
func (r *router) setClock(now func() time.Time) { r.clock = [2]func() time.Time{now, now} }

// Name implements engine.Backend.
func (r *router) Name() string { return "auto(" + r.cpu.Name() + "," + r.gpu.Name() + ")" }

func bucketOf(n int) int { return min(bits.Len(uint(n))-1, buckets-1) }

func modeKey(qs []engine.Query) int {
	m := qs[0].Mode
	for _, q := range qs[1:] {
		if q.Mode != m {
			return 0
		}
	}
	if m < engine.And || m > engine.AndOr {
		return 0
	}
	return int(m)
}

// SearchBatch implements engine.Backend: it answers qs on the processor
// that the measurements favour, calibrating on slices of qs while they do
// not decide (see router).
func (r *router) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	if len(out) != len(qs) {
		return fmt.Errorf("engine: %d responses for %d queries", len(out), len(qs))
	}
	if len(qs) == 0 {
		return r.cpu.SearchBatch(ctx, qs, opt, out)
	}
	key := modeKey(qs)
	for lo := 0; lo < len(qs); {
		if share := r.splitShare(key, len(qs)-lo); share > 0 {
			// Both processors are measured at this size: the rest of
			// the batch runs on both at once (auto_split.go).
			if err := r.runSplit(ctx, key, share, qs[lo:], opt, out[lo:]); err != nil {
				return err
			}
			return nil
		}
		p, n := r.plan(key, len(qs)-lo)
		if err := r.run(ctx, key, p, qs[lo:lo+n], opt, out[lo:lo+n]); err != nil {
			for i := lo + n; i < len(qs); i++ {
				out[i] = engine.Response{Results: out[i].Results[:0], Err: err}
			}
			return err
		}
		lo += n
	}
	return nil
}

// run answers one slice on processor p and records its per-query time.
func (r *router) run(ctx context.Context, key, p int, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	be := r.cpu
	if p == procGPU {
		be = r.gpu
	}
	start := r.clock[p]()
	err := be.SearchBatch(ctx, qs, opt, out)
	t := r.clock[p]().Sub(start)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &r.modes[key]
	b := bucketOf(len(qs))
	c, sz := &m.cost[p][b], &m.size[p][b]
	per := max(t.Seconds(), 1e-9) / float64(len(qs))
	if *c == 0 {
		*c, *sz = per, float64(len(qs))
	} else {
		*c = (1-ewma)**c + ewma*per
		*sz = (1-ewma)**sz + ewma*float64(len(qs))
	}
	m.queries[p] += uint64(len(qs))
	m.batches[p]++
	return nil
}

// plan picks the processor for the next slice of a batch with rest queries
// left, and the slice's size. Each processor's per-query time at the
// batch's size lies between a lower bound (its exact time, or its marginal
// time per query: batch time is a fixed part plus a per-query part, so the
// marginal cost is below the average at any size) and an upper bound (its
// exact time, or its time at the nearest smaller measured size: larger
// batches only amortize more). A processor wins once its upper bound is
// below the other's lower bound; until then the one whose bound is
// missing is calibrated, the CPU first (two sizes give its marginal time),
// so a processor that clearly loses is measured on few queries.
func (r *router) plan(key, rest int) (proc, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	proc, n, _ = r.planAt(&r.modes[key], bucketOf(rest), rest)
	return proc, n
}

// planAt is plan's choice for a batch in bucket b with rest queries left,
// and whether the measurements decided it (decide). r.mu is held.
func (r *router) planAt(m *modeCosts, b, rest int) (proc, n int, decided bool) {
	p, decided := r.decide(m, b)
	switch {
	case decided:
		return p, rest, true
	case p == procCPU:
		// The CPU's time first: slices growing 4× from a few queries per
		// worker until it is exact or has a marginal time (or the whole
		// batch, which measures its bucket); or, where the GPU's time
		// lies between the CPU's bounds, a larger CPU slice.
		return procCPU, calibration(m, procCPU, b, rest, cpuStart*r.workers), false
	}
	// The GPU may still win at this size: calibrate it on a slice 4× its
	// largest measured size below b (at least calibrationStart: single
	// queries measured before say little about batches).
	return procGPU, calibration(m, procGPU, b, rest, calibrationStart), false
}

// decide says which processor serves a batch in bucket b of mode m faster
// (decided), or, when the measurements do not decide yet, which one plan
// calibrates next (see plan). r.mu is held.
func (r *router) decide(m *modeCosts, b int) (proc int, decided bool) {
	c, cExact := r.estimate(m, procCPU, b)
	g, gExact := r.estimate(m, procGPU, b)
	cLo, gLo := c, g
	if !cExact {
		cLo = marginal(m, procCPU, b)
	}
	if !gExact {
		gLo = marginal(m, procGPU, b)
	}
	switch {
	case c == 0 || cLo == 0:
		return procCPU, false
	case g > 0 && g <= cLo:
		// The GPU's upper bound is below the CPU's lower bound.
		return procGPU, true
	case gExact && g > c, gLo > gpuMargin*c:
		// The GPU is slower at this size than the CPU's upper bound, or
		// each further GPU query costs more than a CPU query: larger
		// batches only amortize the GPU's fixed part.
		return procCPU, true
	case gExact:
		// The GPU's time lies between the CPU's bounds: measure the CPU
		// on a larger slice.
		return procCPU, false
	}
	return procGPU, false
}

// marginal is processor p's marginal time per query, (T₂-T₁)/(n₂-n₁),
// from its two largest measured batch sizes below bucket b at least 4×
// apart (0: not measured). In the model T = a + b·n (a fixed part per
// batch: the GPU's launches and transfers, the CPU's start of its
// workers) it is a lower bound of the per-query time at any size; the GPU's
// batch time grows at least that fast beyond its measurements while the
// device fills.
func marginal(m *modeCosts, p, b int) float64 {
	cs, ns := &m.cost[p], &m.size[p]
	for i := b - 1; i >= 2; i-- {
		if cs[i] == 0 {
			continue
		}
		for j := i - 2; j >= 0; j-- {
			if cs[j] > 0 {
				ti, tj := cs[i]*ns[i], cs[j]*ns[j]
				return max(ti-tj, 0) / (ns[i] - ns[j])
			}
		}
		return 0
	}
	return 0
}

// estimate returns processor p's per-query time for a batch in bucket b:
// the measurement at b, else the one at the largest smaller bucket (an
// upper bound), 0 when none; exact says whether it is b's time (measured
// there, or at a size where p's time no longer changes).
func (r *router) estimate(m *modeCosts, p, b int) (float64, bool) {
	cs := &m.cost[p]
	if cs[b] > 0 {
		return cs[b], true
	}
	for i := b - 1; i >= 0; i-- {
		if cs[i] == 0 {
			continue
		}
		// Close enough when measured at half the size or more, or at the
		// processor's saturation size; flat if a measurement at least 4×
		// smaller was at most flatGain slower. The CPU too: a slice of a
		// few queries per worker is dominated by the batch's start (H200,
		// GCIDE AND, 16 workers: 6.8 µs a query at 64 queries, 0.33 µs at
		// 16,384), so a small CPU slice is not its time at a larger size.
		if i >= b-1 || 1<<i >= r.saturation(p) {
			return cs[i], true
		}
		for j := i - 2; j >= 0; j-- {
			if cs[j] > 0 {
				return cs[i], cs[i] >= (1-flatGain)*cs[j]
			}
		}
		return cs[i], false
	}
	return 0, false
}

// saturation is the batch size from which processor p's per-query time is
// taken as constant.
func (r *router) saturation(p int) int {
	if p == procCPU {
		return cpuSaturation * r.workers
	}
	return gpuSaturation
}

// calibration returns the size of p's next calibration slice for a batch
// in bucket b with rest queries left: 4× p's largest measurement below b,
// at least start; the whole rest once that reaches half of it (the last
// step measures the bucket itself).
func calibration(m *modeCosts, p, b, rest, start int) int {
	s := start
	for i := b; i >= 0; i-- {
		if m.cost[p][i] > 0 {
			s = max(s, 4<<i)
			break
		}
	}
	if s >= rest/2 {
		s = rest
	}
	return s
}

// routing describes the measurements and the queries each processor
// answered, per mode.
func (r *router) routing() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for key := range r.modes {
		m := &r.modes[key]
		if m.queries[0]+m.queries[1]+m.stream.queries[0]+m.stream.queries[1] == 0 {
			continue
		}
		name := "mixed"
		if key > 0 {
			name = engine.Mode(key).String()
		}
		s := fmt.Sprintf("%s: %s %d queries in %d batches, %s %d in %d", name,
			r.cpu.Name(), m.queries[procCPU], m.batches[procCPU], r.gpu.Name(), m.queries[procGPU], m.batches[procGPU])
		s += m.splits.String(r.gpu.Name())
		s += m.stream.String(r.cpu.Name(), r.gpu.Name())
		for p, pn := range []string{r.cpu.Name(), r.gpu.Name()} {
			var ms []string
			for b, c := range m.cost[p] {
				if c > 0 {
					ms = append(ms, fmt.Sprintf("%d:%.3gµs", 1<<b, c*1e6))
				}
			}
			if len(ms) > 0 {
				s += fmt.Sprintf("; %s per query by batch size %s", pn, strings.Join(ms, " "))
			}
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no queries yet"
	}
	return strings.Join(parts, "\n")
}

var _ engine.Backend = (*router)(nil)
