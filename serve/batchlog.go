package serve

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qpengine/qp/engine/gpu"
	"github.com/qpengine/qp/internal/linfit"
)

// The served batches' log (issue 25): the pipelined GPU's batches, each
// with its size and phases, so that the device time of the batches the
// server actually ran can be set beside the same index's batches run alone
// (`qp bench query --profile`, scripts/device/dfit.sh: D(n) = 1.56 ms +
// 3.84 µs·n on the H100 at 10M) on one machine, and the difference
// attributed: the hand-off to the CUDA owner goroutine, the owner's
// closure and its stream waits, the GPU's own (CUDA-event) time, the
// owner thread's time without a CPU. The batcher's running fits
// (costModel: exponentially weighted, the last ~20 batches) steer the
// batches; this log keeps the last batchLogSize batches exactly and fits
// them by ordinary least squares when asked (GET /debug/batches).

// batchLogSize is the number of batches the log keeps (a ring): several
// seconds of batches at any rate the device sustains (at 200k q/s and
// ~1,400 queries a batch, 140 batches a second).
const batchLogSize = 4096

// BatchRecord is one served batch of a pipelined GPU. Times in
// nanoseconds. Device is the server's device phase (from taking the device
// to SearchBatch's return: the owner's hand-off and closure, then the
// planned sets' result conversion), Finish its part after the batch let
// the device go (that conversion, off the device); OwnerWait, OwnerRun, Sync, GPU,
// OwnerRunDelay, Sets, DriverCalls and OwnerInvoluntary are the backend's
// (gpu.BatchDevice; GPU and OwnerRunDelay only with profiling, qp serve
// --gpu-profile).
type BatchRecord struct {
	Seq              uint64        `json:"seq"`
	N                int           `json:"n"`
	Prepare          time.Duration `json:"prepare_ns"`
	Wait             time.Duration `json:"device_wait_ns"`
	Device           time.Duration `json:"device_ns"`
	Finish           time.Duration `json:"finish_ns"`
	OwnerWait        time.Duration `json:"owner_wait_ns"`
	OwnerRun         time.Duration `json:"owner_run_ns"`
	Sync             time.Duration `json:"sync_ns"`
	GPU              time.Duration `json:"gpu_ns"`
	OwnerRunDelay    time.Duration `json:"owner_run_delay_ns"`
	Sets             int64         `json:"sets"`
	DriverCalls      int64         `json:"driver_calls"`
	OwnerInvoluntary int64         `json:"owner_involuntary"`
}

// batchLog is the ring of the last batchLogSize records; safe for
// concurrent use.
type batchLog struct {
	mu   sync.Mutex
	seq  uint64                     // records added so far; the last one's Seq
	ring *[batchLogSize]BatchRecord // at the first add (a server that never batches on a GPU keeps none)
}

// add appends r (its Seq is set here).
func (l *batchLog) add(r BatchRecord) {
	l.mu.Lock()
	if l.ring == nil {
		l.ring = new([batchLogSize]BatchRecord)
	}
	l.seq++
	r.Seq = l.seq
	l.ring[l.seq%batchLogSize] = r
	l.mu.Unlock()
}

// after returns the kept records with Seq > seq, oldest first, and the
// last Seq.
func (l *batchLog) after(seq uint64) ([]BatchRecord, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lo := seq + 1
	if l.seq >= batchLogSize && lo <= l.seq-batchLogSize {
		lo = l.seq - batchLogSize + 1
	}
	var out []BatchRecord
	for s := lo; s <= l.seq; s++ {
		out = append(out, l.ring[s%batchLogSize])
	}
	return out, l.seq
}

// record logs a pipelined batch of n queries (runBatch, via onPhases).
func (l *batchLog) record(n int, prep, wait, dev, fin time.Duration, bd *gpu.BatchDevice) {
	r := BatchRecord{N: n, Prepare: prep, Wait: wait, Device: dev, Finish: fin}
	if bd != nil {
		r.OwnerWait, r.OwnerRun, r.Sync, r.GPU, r.OwnerRunDelay = bd.Wait, bd.Run, bd.Sync, bd.GPU, bd.OwnerRunDelay
		r.Sets, r.DriverCalls, r.OwnerInvoluntary = bd.Sets, bd.DriverCalls, bd.OwnerInvoluntary
	}
	l.add(r)
}

// LineFit is an ordinary least-squares line t(n) = A + B·n over batches
// (seconds, seconds per query). OK is false when the sizes do not
// determine it (fewer than two distinct sizes); A and B then hold 0 and
// the mean time per query.
type LineFit struct {
	A       float64 `json:"a_s"`
	B       float64 `json:"b_s"`
	OK      bool    `json:"ok"`
	Batches int     `json:"batches"`
}

// fitLine fits y(r) against r.N over rs.
func fitLine(rs []BatchRecord, y func(*BatchRecord) time.Duration) LineFit {
	var s linfit.Sums
	for i := range rs {
		s.Add(float64(rs[i].N), y(&rs[i]).Seconds(), 1)
	}
	f := LineFit{Batches: len(rs)}
	if f.A, f.B, f.OK = s.Solve(); !f.OK {
		f.A, f.B = 0, s.MeanRatio()
	}
	return f
}

// BatchReport is GET /debug/batches' answer: the batches after a sequence
// number, their sizes and the least-squares fits of their phases by size.
type BatchReport struct {
	Seq     uint64  `json:"seq"` // the last batch's (the next call's ?after=)
	Batches int     `json:"batches"`
	MinN    int     `json:"min_n"`
	MaxN    int     `json:"max_n"`
	MeanN   float64 `json:"mean_n"`
	Device  LineFit `json:"device"` // the server's device phase
	// Batch is Prepare + Device: the backend's call but for its wait for
	// the device, what one batch alone costs (dfit.sh's D(n): a single
	// qp bench query batch's time, preparation included).
	Batch    LineFit `json:"batch"`
	Owner    LineFit `json:"owner"`     // OwnerWait + OwnerRun: the device's share of the owner goroutine
	OwnerRun LineFit `json:"owner_run"` // the closure alone
	Sync     LineFit `json:"sync"`      // its stream waits
	Finish   LineFit `json:"finish"`    // the device phase after the batch let the device go
	GPU      LineFit `json:"gpu"`       // CUDA events (profiling only)
	Prepare  LineFit `json:"prepare"`
	// Means per batch.
	MeanSets          float64       `json:"mean_sets"`
	MeanDriverCalls   float64       `json:"mean_driver_calls"`
	MeanInvoluntary   float64       `json:"mean_owner_involuntary"`
	MeanOwnerRunDelay time.Duration `json:"mean_owner_run_delay_ns"`
	Rows              []BatchRecord `json:"rows,omitempty"`
}

// batchReport summarizes rs, the batches up to seq.
func batchReport(rs []BatchRecord, seq uint64) BatchReport {
	r := BatchReport{Seq: seq, Batches: len(rs)}
	if len(rs) == 0 {
		return r
	}
	r.MinN = rs[0].N
	var delay time.Duration
	for i := range rs {
		x := &rs[i]
		r.MinN, r.MaxN = min(r.MinN, x.N), max(r.MaxN, x.N)
		r.MeanN += float64(x.N)
		r.MeanSets += float64(x.Sets)
		r.MeanDriverCalls += float64(x.DriverCalls)
		r.MeanInvoluntary += float64(x.OwnerInvoluntary)
		delay += x.OwnerRunDelay
	}
	k := float64(len(rs))
	r.MeanN, r.MeanSets, r.MeanDriverCalls, r.MeanInvoluntary = r.MeanN/k, r.MeanSets/k, r.MeanDriverCalls/k, r.MeanInvoluntary/k
	r.MeanOwnerRunDelay = delay / time.Duration(len(rs))
	r.Device = fitLine(rs, func(x *BatchRecord) time.Duration { return x.Device })
	r.Batch = fitLine(rs, func(x *BatchRecord) time.Duration { return x.Prepare + x.Device })
	r.Owner = fitLine(rs, func(x *BatchRecord) time.Duration { return x.OwnerWait + x.OwnerRun })
	r.OwnerRun = fitLine(rs, func(x *BatchRecord) time.Duration { return x.OwnerRun })
	r.Sync = fitLine(rs, func(x *BatchRecord) time.Duration { return x.Sync })
	r.Finish = fitLine(rs, func(x *BatchRecord) time.Duration { return x.Finish })
	r.GPU = fitLine(rs, func(x *BatchRecord) time.Duration { return x.GPU })
	r.Prepare = fitLine(rs, func(x *BatchRecord) time.Duration { return x.Prepare })
	return r
}

// handleBatches is GET /debug/batches[?after=SEQ][&rows=1][&rate=R,...]
// [&format=text]: the served batches after SEQ (default: all kept), their
// fits (BatchReport; the rows with rows=1) and, in the text form, the p99
// floor (PipeModel) at each rate from the device and preparation fits.
func (s *Server) handleBatches(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var after uint64
	if v := q.Get("after"); v != "" {
		var err error
		if after, err = strconv.ParseUint(v, 10, 64); err != nil {
			writeText(w, http.StatusBadRequest, fmt.Sprintf("after=%q: want a batch sequence number\n", v))
			return
		}
	}
	var rates []float64
	if v := q.Get("rate"); v != "" {
		for _, f := range strings.Split(v, ",") {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil || !(x > 0) {
				writeText(w, http.StatusBadRequest, fmt.Sprintf("rate=%q: want positive queries/s, comma-separated\n", v))
				return
			}
			rates = append(rates, x)
		}
	}
	rs, seq := s.m.blog.after(after)
	rep := batchReport(rs, seq)
	if q.Get("format") == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		writeBatchReport(w, rep, rates)
		return
	}
	if q.Get("rows") == "1" {
		rep.Rows = rs
	}
	writeJSON(w, http.StatusOK, rep)
}

// writeBatchReport writes rep as text, with the p99 floors at rates.
func writeBatchReport(w io.Writer, rep BatchReport, rates []float64) {
	fmt.Fprintf(w, "seq %d batches %d n %d-%d mean %.0f sets %.2f driver_calls %.0f involuntary %.2f owner_run_delay %v\n",
		rep.Seq, rep.Batches, rep.MinN, rep.MaxN, rep.MeanN, rep.MeanSets, rep.MeanDriverCalls, rep.MeanInvoluntary, rep.MeanOwnerRunDelay)
	for _, f := range []struct {
		name string
		f    LineFit
	}{{"batch", rep.Batch}, {"device", rep.Device}, {"owner", rep.Owner}, {"owner_run", rep.OwnerRun}, {"sync", rep.Sync}, {"finish", rep.Finish}, {"gpu", rep.GPU}, {"prepare", rep.Prepare}} {
		note := ""
		if !f.f.OK {
			note = " (no slope: sizes alike; b is the mean per query)"
		}
		fmt.Fprintf(w, "fit %-9s a %8.3f ms b %7.3f us%s\n", f.name, f.f.A*1e3, f.f.B*1e6, note)
	}
	m := PipeModel{DeviceA: max(0, rep.Device.A), DeviceB: rep.Device.B, PrepA: max(0, rep.Prepare.A), PrepB: max(0, rep.Prepare.B)}
	for _, rate := range rates {
		if rep.Batches == 0 {
			break
		}
		b := m.Bound(rate, 0.99)
		if !b.Stable {
			fmt.Fprintf(w, "floor rate %.0f: not stable (rate x b >= 1)\n", rate)
			continue
		}
		fmt.Fprintf(w, "floor rate %.0f p99 %.2f ms batch %.0f period %.2f ms (served device and prepare fits)\n",
			rate, b.Latency.Seconds()*1e3, b.Batch, b.Period.Seconds()*1e3)
	}
}
