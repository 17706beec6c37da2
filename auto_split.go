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
// Once the router has measured both processors at a batch's size (or can
// bound them: router.perQuery), it answers the batch on both at once
// instead of on the faster alone: the GPU takes the first part and the CPU
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
// would have balanced the two parts' measured per-query times, and a mode
// whose split batches keep taking longer than the faster processor alone
// would (maxStrikes in a row, by splitSlack) stops splitting. Results do
// not depend on the split: the GPU's answers equal the CPU's.

// splitState is one mode's record of split batches.
type splitState struct {
	share   float64   // the GPU's share of the next split batch (0: not split yet)
	batches uint64    // batches split
	queries [2]uint64 // queries answered in split batches, per processor
	strikes int       // consecutive split batches slower than the faster processor alone
	off     bool      // splitting stopped for this mode (maxStrikes)
}

const (
	// minSplit is the fewest queries a batch's rest needs to be split:
	// below it the GPU's part would not fill a launch set.
	minSplit = 2 * gpuSaturation
	// minShare: a processor whose share would be below it is left out.
	minShare = 0.05
	// splitSlack and maxStrikes: a split batch slower than splitSlack ×
	// the faster processor's time alone is a strike; maxStrikes in a row
	// stop splitting in that mode.
	splitSlack = 1.05
	maxStrikes = 3
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
// few queries, a processor not measured yet, or one whose share would be
// under minShare.
func (r *router) splitShare(key, rest int) float64 {
	if !r.split || rest < minSplit {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &r.modes[key]
	if m.splits.off {
		return 0
	}
	b := bucketOf(rest)
	if _, exact := r.estimate(m, procCPU, b); !exact {
		// The CPU's time at this size is the reference a split is
		// judged against: let plan calibrate it first.
		return 0
	}
	c, g := r.perQuery(m, procCPU, b), r.perQuery(m, procGPU, b)
	if c == 0 || g == 0 {
		return 0
	}
	share := m.splits.share
	if share == 0 {
		share = c / (c + g)
	}
	if share < minShare || share > 1-minShare {
		return 0
	}
	return share
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
// tc and tg), and counts a strike when the batch took longer than the
// faster processor alone would have.
func (r *router) recordSplit(key, n, ng int, tc, tg time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &r.modes[key]
	st := &m.splits
	c := max(tc.Seconds(), 1e-9) / float64(n-ng)
	g := max(tg.Seconds(), 1e-9) / float64(ng)
	balanced := c / (c + g)
	if st.share == 0 {
		st.share = balanced
	} else {
		st.share = (1-ewma)*st.share + ewma*balanced
	}
	b := bucketOf(n)
	best := 0.0
	for p := range 2 {
		if t, exact := r.estimate(m, p, b); exact && (best == 0 || t < best) {
			best = t
		}
	}
	if wall := max(tc, tg).Seconds(); best > 0 && wall > splitSlack*best*float64(n) {
		st.strikes++
		st.off = st.strikes >= maxStrikes
	} else {
		st.strikes = 0
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
	s := fmt.Sprintf("; %d batches split, %s's share %.2f (cpu %d, %s %d queries)", st.batches, gpuName, st.share,
		st.queries[procCPU], gpuName, st.queries[procGPU])
	if st.off {
		s += fmt.Sprintf(", splitting stopped after %d split batches slower than the faster processor alone", maxStrikes)
	}
	return s
}
