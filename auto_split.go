package qp

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/qpengine/qp/engine"
)

// Splitting a batch between the two processors (Device Auto).
//
// Once a batch of this size has been answered by one processor alone (the
// reference, fasterAlone) and both processors are measured at some size
// (their times at this one estimated: router.perQuery), the router answers
// the batch on both at once instead of on the faster alone: the GPU takes the first part and the CPU
// the rest, in parallel, sized so that both end together. With per-query
// times c (CPU) and g (GPU) the GPU's share is c/(c+g) (then n_g·g =
// n_c·c); the batch takes n·c·g/(c+g), less than min(c, g)·n by the
// slower processor's share. This is Ding et al. WWW'09 §9's point (a CPU
// and a GPU together serve more than either) for one batch, where the two
// share no queue (the scheduler, scheduler/, does it for a query stream).
//
// The two parts contend for the host's cores (the GPU's preparation and
// answer conversion run on the CPU), so the standalone times only start
// the share: after each split batch the share moves (EWMA) to the one that
// would have balanced the two parts' measured per-query times. Whether
// splitting pays at all is measured too: a split batch's time per query
// (EWMA) is compared with the faster processor's time alone at that size,
// which every probeEvery-th batch refreshes by running alone; while
// splitting loses, only every retryEvery-th batch is split (conditions
// change: another mode's load, a shared machine). Results do not depend
// on the split: the GPU's answers equal the CPU's.

// splitState is one mode's record of split batches.
type splitState struct {
	share   float64   // the GPU's share of the next split batch (0: not split yet)
	per     float64   // a split batch's time per query, seconds (EWMA; 0: none yet)
	best    float64   // the faster processor's time alone per query when last compared
	seen    uint64    // batches that could have been split since the first split
	batches uint64    // batches split
	queries [2]uint64 // queries answered in split batches, per processor
}

const (
	// minSplit is the fewest queries a batch's rest needs to be split:
	// below it the GPU's part would not fill a launch set.
	minSplit = 2 * gpuSaturation
	// minShare: a processor whose share would be below it is left out.
	minShare = 0.05
	// probeEvery: one splittable batch in probeEvery runs on one processor
	// (plan's choice) to keep its time alone current; retryEvery: while
	// splitting measured slower than that, one batch in retryEvery is
	// split anyway to measure it again.
	probeEvery = 16
	retryEvery = 20 // not a multiple of probeEvery: a retry is never a probe
)

// perQuery is processor p's per-query time for a batch in bucket b as the
// split sizes it: its exact time; else its marginal time (a lower bound:
// the split then gives it more than its upper bound would, and the
// measured split corrects it); else its upper bound; 0 if never measured.
func (r *router) perQuery(m *modeCosts, p, b int) float64 {
	t, exact := r.estimate(m, p, b)
	if exact || t == 0 {
		return t
	}
	if lo := marginal(m, p, b); lo > 0 {
		return lo
	}
	return t
}

// splitShare returns the GPU's share of a split of a batch's rest of rest
// queries, or 0 to answer it on one processor (plan): splitting off, too
// few queries, no processor measured alone at this size yet, a processor
// not measured at all, one whose share would be under minShare, or
// splitting measured slower than the faster alone.
func (r *router) splitShare(key, rest int) float64 {
	if !r.split || rest < minSplit {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &r.modes[key]
	b := bucketOf(rest)
	if r.fasterAlone(m, b) == 0 {
		// No processor's time alone at this size yet, the reference a
		// split is judged against: let plan measure one first.
		return 0
	}
	c, g := r.perQuery(m, procCPU, b), r.perQuery(m, procGPU, b)
	if c == 0 || g == 0 {
		return 0
	}
	st := &m.splits
	share := st.share
	if share == 0 {
		share = c / (c + g)
	}
	if share < minShare || share > 1-minShare {
		return 0
	}
	if st.per > 0 {
		st.seen++
		st.best = r.fasterAlone(m, b)
		switch {
		case st.seen%probeEvery == 0:
			return 0 // the faster processor alone, to keep its time current
		case st.best > 0 && st.per >= st.best && st.seen%retryEvery != 0:
			return 0 // splitting loses: measure it again later
		}
	}
	return share
}

// fasterAlone is the smaller of the processors' per-query times measured
// alone at bucket b itself (0: neither was). Not an estimate from a smaller
// size: a GPU's time per query still falls between its "saturated" 4,096
// and 16,384 queries (H100, GCIDE known-item AND: 2.47 and 0.99 µs), and a
// split judged against the smaller size's time kept splitting where the GPU
// alone was faster. So a batch size is first answered alone (plan's
// choice), then split, then judged.
func (r *router) fasterAlone(m *modeCosts, b int) float64 {
	best := 0.0
	for p := range 2 {
		if t := m.cost[p][b]; t > 0 && (best == 0 || t < best) {
			best = t
		}
	}
	return best
}

// runSplit answers qs on both processors at once: the first round(share·n)
// queries on the GPU (in a goroutine of its own), the rest on the CPU. The
// first error (the GPU's, then the CPU's) is returned; each part's
// responses are as its processor left them.
func (r *router) runSplit(ctx context.Context, key int, share float64, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	n := len(qs)
	ng := min(max(int(math.Round(share*float64(n))), 1), n-1)
	var tg time.Duration
	var gerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := r.clock[procGPU]()
		gerr = r.gpu.SearchBatch(ctx, qs[:ng], opt, out[:ng])
		tg = r.clock[procGPU]().Sub(start)
	}()
	start := r.clock[procCPU]()
	cerr := r.cpu.SearchBatch(ctx, qs[ng:], opt, out[ng:])
	tc := r.clock[procCPU]().Sub(start)
	<-done
	if gerr != nil {
		return gerr
	}
	if cerr != nil {
		return cerr
	}
	r.recordSplit(key, n, ng, tc, tg)
	return nil
}

// recordSplit moves the mode's share towards the one that would have
// balanced this batch (n queries, ng of them on the GPU, the parts taking
// tc and tg) and its time per query towards this batch's.
func (r *router) recordSplit(key, n, ng int, tc, tg time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &r.modes[key]
	st := &m.splits
	c := max(tc.Seconds(), 1e-9) / float64(n-ng)
	g := max(tg.Seconds(), 1e-9) / float64(ng)
	balanced := c / (c + g)
	per := max(tc, tg).Seconds() / float64(n)
	if st.share == 0 {
		st.share, st.per = balanced, per
	} else {
		st.share = (1-ewma)*st.share + ewma*balanced
		st.per = (1-ewma)*st.per + ewma*per
	}
	st.batches++
	st.queries[procGPU] += uint64(ng)
	st.queries[procCPU] += uint64(n - ng)
	m.queries[procGPU] += uint64(ng)
	m.queries[procCPU] += uint64(n - ng)
}

// String describes the split batches for router.routing ("" when none).
func (st *splitState) String(gpuName string) string {
	if st.batches == 0 {
		return ""
	}
	s := fmt.Sprintf("; %d batches split, %s's share %.2f (cpu %d, %s %d queries), %.3gµs per query split against %.3gµs alone",
		st.batches, gpuName, st.share, st.queries[procCPU], gpuName, st.queries[procGPU], st.per*1e6, st.best*1e6)
	if st.best > 0 && st.per >= st.best {
		s += fmt.Sprintf(" (slower: one batch in %d split to measure it again)", retryEvery)
	}
	return s
}
