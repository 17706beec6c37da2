package gpu

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
)

// The host half of an AND launch set, off the CUDA owner goroutine
// (issues 20, 24, 25; docs/GPU-QUERY.md "Host cost of a batch"). A GPU
// batch's host work around its device time was done on the owner
// goroutine, which holds the device: planAnd's per-query pass and order,
// fillQueries, the Segs, the result conversion. With two batches in
// flight only the driver calls need the owner; the rest can run on the
// batch's own goroutine, before it takes the device (batch N+1's plan
// while batch N's kernels run) and after (its results while batch N+1's
// run).
//
// Contract (which goroutine touches which buffer when):
//
//   - The batch's goroutine, before it takes b.mu: prepareBatch, then
//     planBatch: the launch sets (by the planCfg snapshot's thresholds),
//     the AND plan of each (bitmap terms, list steps, order by steps, the
//     layout) and the filling of the batch's own pinned upload arena
//     (batchBufs.up: QMeta, QTerm, scratch offsets, Segs). It writes the
//     batch's preps, batchBufs and nothing of the Backend's.
//   - The owner goroutine (inside the batch's Do, holding b.mu): checks
//     that the snapshot is still current (else the plans are dropped and
//     the sets re-planned there, as before), copies each plan's arena range
//     to the device (the arena is not written again until the batch's Do
//     returns: every set ends with a stream synchronization), runs the
//     steps, and downloads each pure-AND set's counts, counters and keys
//     into the batch's pinned download arena (batchBufs.res.down),
//     recording a pendingSet instead of converting.
//   - The batch's goroutine, after Do returned and b.mu is released:
//     finishResults converts the pending sets' keys into out (stats and
//     results, on all cores). Sets that failed were dropped from the
//     pending list by runSplit before it retried their halves.
//
// Pure-OR sets are planned the same way (orplan.go); sets with AND+OR
// queries or mixed modes ("mixed") get their AND part planned here and
// their OR part planned on the owner after the AND download (which
// queries need OR is known only then), and both are converted after the
// device (the tiled OR's downloads go to the same arena through
// b.orPend). The list cache (listcache.go), the "lr" search (its models
// are cached in b.and.lr under b.mu) and retried halves run as before:
// planned and converted on the owner.

// planCfg is the configuration that a plan made off the device reads:
// the set thresholds, the AND search and the bitmap columns in use. The
// setters replace it (never modify it) under b.mu; the owner compares the
// plan's snapshot with the current one before it uses the plan.
type planCfg struct {
	threshold   int
	orThreshold int64
	levels      int
	use         []uint32 // bitmap columns in use (a copy of bm.use); nil without bitmaps
	or          string   // Options.Or (orplan.go plans OrTiled sets)
	orMinDF     uint32   // the OR tiles' bitmap df (orMinDF; 0 without bitmaps)
}

// refreshPlanCfg publishes a new planCfg; call it under b.mu (or in New)
// after any change of what it holds.
func (b *Backend) refreshPlanCfg() {
	c := &planCfg{threshold: b.opt.Threshold, orThreshold: b.opt.OrThreshold, levels: b.and.levels, or: b.opt.Or}
	if b.bm != nil {
		c.use = slices.Clone(b.bm.use)
		c.orMinDF = b.orMinDF()
	}
	b.pcfg.Store(c)
}

// andPlan is an AND launch set as planned on the host: its queries by
// descending list steps, the sizes of its step 0 and the layout of its
// upload, filled at upAt in the arena up.
type andPlan struct {
	qs          []*prep // by descending list steps
	nq, nterms  int
	maxM        int // the most list steps of a query
	nblk, nval  int // blocks and postings of the shortest lists
	dbytes      int // their encoded docID bytes
	fbytes      int // and frequency bytes
	randomFreqs bool
	anyBM       bool
	keep        bool // OrMaxScore (orms.go): misses kept, pruned by res0/cnt0, results certified
	mixed       bool // planBatch: the AND part of a set with AND+OR queries (the owner sets needOr; pendStats the stats)
	useLR       bool
	active      []int   // active[j]: the queries with a j-th step (a prefix of qs)
	bmq         []*prep // planBatch: the set's bitmap-AND queries (bmand.go), run on the owner after qs

	// Device layout of the set's one buffer, offsets from its start (and
	// from upAt in the arena up): QMeta | QTerm | Seg | scratch offsets
	// (| LR models) | counters, the first upSize bytes, filled on the host
	// (the counters with zeros) and uploaded in one copy; then result
	// counts | candidate totals | decoder status slots | result keys,
	// written by the kernels. From the counters on it is downloaded in one
	// copy.
	oMeta, oTerms, oSegs, oScr, oLR, oCtr int
	oCnt, oTot, oSt, oRes                 int
	upSize, size                          int
	nres, scratchWords                    int
	up                                    *pinned
	upAt                                  int
}

// planScratch is where a plan's order, counting-sort counts, active
// counts and query slots live: the Backend's (owner) or a batch's.
type planScratch struct {
	order    []*prep
	counts   []int
	slots    []querySlot
	slotSums []querySlot // querySlots' chunk sums (parallelScan)
	segSums  []segSum    // fillPlan's
	cuts     []orCut     // orOneLaunch's chunk sums (dense), runOrBudget's shares (tiled)
	orRecs   []orRec     // the OR queries' records (orplan.go; planBatch: aligned with work)
	splits   []orSplit   // the owner's planOrLaunch chunk sums
	work     []workRec   // planBatch's records of work
	ors      []*prep     // orsOf's
	orsSums  []int       // and its chunk counts (parallelScan)
}

// planHost fills pl for the AND queries qs (keep: OrMaxScore's
// keep-misses run) from the bitmap columns use (nil: none) on up to
// workers goroutines: bitmap terms and list steps, the order by
// descending steps into sc.order (stable, by a counting sort), active,
// the sizes (an error matching cuda.ErrOutOfMemory past 2^31) and the
// upload layout. It touches no device state and no Backend field but the
// immutable term table.
func (b *Backend) planHost(pl *andPlan, qs []*prep, keep bool, levels int, use []uint32, workers int, sc *planScratch) error {
	active := pl.active[:0]
	*pl = andPlan{keep: keep, active: active}
	pl.randomFreqs = b.freqCodec.ID() == compress.IDBP128 && !b.and.decodeFreqs
	// Bitmap terms (bitmap.go): the filter drops the candidates outside
	// their lists; with bp128 frequencies they take no list step, their
	// scores are added by rank after the steps. Keep-misses has none.
	// On all cores: each chunk of queries writes its own preps and adds its
	// sums to the set's under mu.
	var mu sync.Mutex
	parallelWorkers(workers, len(qs), 256, func(lo, hi int) {
		var c andPlan
		for _, p := range qs[lo:hi] {
			p.bm = 0
			if !keep {
				p.bm = bitmapTermsIn(use, p)
				p.st.AndBitmaps = p.bm
			}
			p.steps = len(p.terms)
			if pl.randomFreqs {
				p.steps -= p.bm
			}
			c.anyBM = c.anyBM || p.bm > 0
			c.nterms += len(p.terms)
			c.nres += p.q.K
			c.maxM = max(c.maxM, p.steps)
			ti := p.terms[0].ti
			c.nblk += int(ti.nb)
			c.dbytes += int(ti.dlen)
			c.fbytes += int(ti.flen)
			c.nval += int(ti.df)
		}
		mu.Lock()
		pl.anyBM = pl.anyBM || c.anyBM
		pl.nterms += c.nterms
		pl.nres += c.nres
		pl.maxM = max(pl.maxM, c.maxM)
		pl.nblk += c.nblk
		pl.dbytes += c.dbytes
		pl.fbytes += c.fbytes
		pl.nval += c.nval
		mu.Unlock()
	})
	// By descending steps, stable: a counting sort (the keys are term
	// counts), not a comparison sort; on all cores.
	sc.order = slices.Grow(sc.order[:0], len(qs))[:len(qs)]
	sc.counts = countingSortPar(sc.order, qs, pl.maxM, true, stepsOf, workers, sc.counts)
	pl.qs, pl.nq = sc.order, len(sc.order)
	if pl.nval > math.MaxInt32/2 || pl.dbytes > math.MaxInt32 || pl.fbytes > math.MaxInt32 {
		return fmt.Errorf("%w: launch set of %d postings", cuda.ErrOutOfMemory, pl.nval)
	}
	for j, a := 0, pl.nq; j < pl.maxM; j++ {
		for a > 0 && pl.qs[a-1].steps <= j {
			a--
		}
		pl.active = append(pl.active, a)
	}
	pl.useLR = levels == andSearchLR
	var lay layout
	pl.oMeta, pl.oTerms, pl.oSegs, pl.oScr = lay.add(16*pl.nq), lay.add(16*pl.nterms), lay.add(40*pl.nq), lay.add(8*pl.nq)
	if pl.useLR {
		pl.oLR = lay.add(4 * kern.AndLRWords * pl.nterms)
	}
	pl.oCtr = lay.add(16 + 8*pl.nq)
	pl.upSize = lay.size
	pl.oCnt, pl.oTot, pl.oSt, pl.oRes = lay.add(4*pl.nq), lay.add(4*pl.nq), lay.add(16*pl.maxM), lay.add(8*pl.nres)
	pl.size = lay.size
	return nil
}

// fillPlan writes pl's QMeta, QTerms, scratch offsets, Segs and zeroed
// counters into its arena at pl.upAt (which must hold pl.upSize bytes
// there), on up to
// workers goroutines. The LR models (owner only) are fillLR's.
func (b *Backend) fillPlan(pl *andPlan, workers int, sc *planScratch) {
	up, at := pl.up, pl.upAt
	_, pl.nres, pl.scratchWords = b.fillQueriesIn(up, &sc.slots, &sc.slotSums, workers, pl.qs, at+pl.oMeta, at+pl.oTerms, at+pl.oScr)
	segs := up.u32(at+pl.oSegs, kern.SegWords*pl.nq)
	// Each query's Seg starts where the ones before it end (its shortest
	// list's encoded bytes, postings, blocks; its terms): a running sum,
	// on all cores.
	parallelScan(workers, pl.nq, &sc.segSums, segSum.add, func(lo, hi int, s segSum, write bool) segSum {
		for a, p := range pl.qs[lo:hi] {
			t := p.terms[0]
			ti := t.ti
			if write {
				kern.PutSeg(segs[kern.SegWords*(lo+a):], uint64(s.d), uint64(s.f), uint64(s.v), uint32(t.id), uint32(s.blk), uint32(lo+a), uint32(s.toff))
			}
			s = s.add(segSum{int(ti.dlen), int(ti.flen), int(ti.df), int(ti.nb), len(p.terms)})
		}
		return s
	})
	clear(up.u32(at+pl.oCtr, 4+2*pl.nq))
}

// segSum is fillPlan's running sum: docID and frequency bytes, postings,
// blocks of the shortest lists, and terms.
type segSum struct{ d, f, v, blk, toff int }

func (s segSum) add(o segSum) segSum {
	return segSum{s.d + o.d, s.f + o.f, s.v + o.v, s.blk + o.blk, s.toff + o.toff}
}

// bitmapTermsIn is the number of p's bitmap terms by the columns in use
// use (nil: no bitmaps): the longest suffix of its canonical terms, term 0
// excepted, whose bitmaps are in use (the rule of qp_and_filter's
// bitmap_start).
func bitmapTermsIn(use []uint32, p *prep) int {
	if use == nil {
		return 0
	}
	n := 0
	for j := len(p.terms) - 1; j >= 1 && use[p.terms[j].id] != kern.AndNoColumn; j-- {
		n++
	}
	return n
}

// batchPlan is a batch's launch sets and AND plans, made by planBatch on
// the batch's goroutine (see the contract above).
type batchPlan struct {
	cfg    *planCfg  // the snapshot planned with; nil: no plan (the owner plans)
	sets   []int     // set s is work[sets[s]:sets[s+1]]
	plans  []andPlan // plans[s]: set s's AND plan (pure AND sets; nq == 0: none)
	orSet  [][2]int  // orSet[s]: set s's OR launches, orl[orSet[s][0]:orSet[s][1]] (pure OR sets; empty: none)
	orl    []orLaunch
	mixed  []bool    // mixed[s]: set s is mixed, its AND part (if any) plans[s] (its OR part planned on the owner)
	ands   []*prep   // scratch: a mixed set's queries that run AND
	caps   []int     // the tiled launches' candidate slots, back to back
	splits []orSplit // the OR launches' chunk sums (planOrLaunch), back to back
	kinds  []uint8   // kinds[s]: the kind bits every query of set s has (workRec)
	tots   []orCut   // tots[s]: set s's OR budget (pure-OR sets)
	sc     planScratch
	order  []*prep // the plans' orders, back to back (each plan's qs, then its bmq)
	rest   []*prep // scratch of the bitmap-AND split
	bmq    []*prep
	up     pinned // the uploads, back to back
	res    pendingResults
}

// planBatch forms work's launch sets and plans and fills the AND part of
// each pure-AND and mixed set, and the OR launches of each pure-OR set
// (orplan.go), into bb's upload arena. It leaves bp.cfg nil (the
// owner then forms and plans the sets as before) when the batch uses the
// list cache or the "lr" search, or the arena cannot be allocated.
func (b *Backend) planBatch(bb *batchBufs, work []*prep) {
	bp := &bb.plan
	bp.cfg = nil
	bp.res.sets, bp.res.flushed = bp.res.sets[:0], 0
	cfg := b.pcfg.Load()
	if b.lc != nil || cfg == nil || cfg.levels == andSearchLR || len(work) == 0 {
		return
	}
	workers := b.prepareWorkers()
	planOr := cfg.or == OrTiled && !b.orDense()
	// One pass over the preps, on all cores, reads what the launch sets
	// and the pure-OR sets' plans need (gpuplan3: the sets were formed by
	// a serial pass over the preps, a few cache misses per query, about
	// 0.7 ms per 10,000 GCIDE queries and 17 ms per 100,000 here); the
	// cuts, the sets' kinds and the OR plans then read the records.
	bp.sc.work = slices.Grow(bp.sc.work[:0], len(work))[:len(work)]
	wr := bp.sc.work
	var recs []orRec
	if planOr {
		bp.sc.orRecs = slices.Grow(bp.sc.orRecs[:0], len(work))[:len(work)]
		recs = bp.sc.orRecs
	}
	b.workRecs(wr, recs, bb.preps[:bb.used], work, workers)
	bp.sets = append(bp.sets[:0], 0)
	bp.kinds, bp.tots = bp.kinds[:0], bp.tots[:0]
	for i := 0; i < len(work); {
		n, sb := 0, setBudget{}
		kind := uint8(kindOr | kindAnd)
		var tot orCut
		for i+n < len(work) && sb.fitsCfg(cfg, n) {
			r := &wr[i+n]
			sb.addShares(r.cost, r.orc)
			kind &= r.kind
			tot = tot.add(r.cut)
			n++
		}
		i += n
		bp.sets = append(bp.sets, i)
		bp.kinds = append(bp.kinds, kind)
		bp.tots = append(bp.tots, tot)
	}
	ns := len(bp.sets) - 1
	if cap(bp.plans) < ns {
		bp.plans = append(bp.plans[:cap(bp.plans)], make([]andPlan, ns-cap(bp.plans))...)
	}
	bp.plans = bp.plans[:ns]
	bp.orSet = slices.Grow(bp.orSet[:0], ns)[:ns]
	bp.mixed = slices.Grow(bp.mixed[:0], ns)[:ns]
	bp.orl, bp.caps, bp.splits = bp.orl[:0], bp.caps[:0], bp.splits[:0]
	bp.order = slices.Grow(bp.order[:0], len(work))[:len(work)]
	size := 0
	for s := range ns {
		pl := &bp.plans[s]
		pl.nq = 0
		bp.orSet[s], bp.mixed[s] = [2]int{}, false
		lo, hi := bp.sets[s], bp.sets[s+1]
		set := work[lo:hi]
		if planOr && bp.kinds[s]&kindOr != 0 {
			n := len(bp.orl)
			if l0, l1, ok := b.planOrSet(bp, set, recs[lo:hi], wr[lo:hi], bp.tots[s], lo, workers, &size); ok {
				bp.orSet[s] = [2]int{l0, l1}
			} else {
				bp.orl = bp.orl[:n] // the owner plans the set
			}
			continue
		}
		// A mixed set (AND+OR queries, or modes mixed): the AND part of
		// the queries that run it is planned here, the OR part on the
		// owner after the AND download (it depends on the AND counts),
		// and both are converted after the device.
		qs, mixed := set, bp.kinds[s]&kindAnd == 0
		if mixed {
			bp.ands = bp.ands[:0]
			for i, p := range set {
				if wr[lo+i].kind&kindRunsAnd != 0 {
					bp.ands = append(bp.ands, p)
				}
			}
			if qs = bp.ands; len(qs) == 0 {
				bp.mixed[s] = true // no AND part
				continue
			}
		}
		// The bitmap-AND queries (bmand.go) run after the plan's, planned on
		// the owner; a set of nothing else is planned there whole.
		nand := len(qs)
		if b.bitmapAndOn(cfg.use) {
			bp.rest, bp.bmq = splitBitmapAnd(qs, cfg.use, bp.rest, bp.bmq)
			if qs = bp.rest; len(qs) == 0 {
				continue
			}
		}
		if err := b.planHost(pl, qs, false, cfg.levels, cfg.use, workers, &bp.sc); err != nil {
			pl.nq = 0 // the owner meets the error again and splits the set
			continue
		}
		pl.mixed, bp.mixed[s] = mixed, mixed
		// The order lives in bp.order (sc.order is reused by the next set).
		pl.qs = bp.order[lo : lo+len(qs)]
		copy(pl.qs, bp.sc.order)
		if len(qs) < nand {
			pl.bmq = bp.order[lo+len(qs) : lo+nand]
			copy(pl.bmq, bp.bmq)
		}
		pl.upAt = (size + 15) &^ 15
		size = pl.upAt + pl.upSize
	}
	bp.up.ctx, bp.res.down.ctx = b.ctx, b.ctx
	if err := bp.up.reset(size); err != nil {
		return // the owner plans on its own arena
	}
	bp.up.take(size)
	for s := range ns {
		if pl := &bp.plans[s]; pl.nq > 0 {
			pl.up = &bp.up
			b.fillPlan(pl, workers, &bp.sc)
		}
		if r := bp.orSet[s]; r[1] > r[0] {
			b.fillOrLaunches(bp, bp.orl[r[0]:r[1]], cfg.orMinDF, workers)
		}
	}
	bp.cfg = cfg
}

// workRec is one work query as planBatch's first pass reads it: its
// shares of the set budget (cost, orCost), of an OR launch's budget
// (cut: accumulator bytes when OR sets are planned, postings) and its
// kind bits.
type workRec struct {
	orc  int64
	cut  orCut
	cost int
	kind uint8
}

// A work query's kind bits (workRec.kind).
const (
	kindOr      uint8 = 1 << iota // runs OR only (Mode Or with a known term: prepareBatch set needOr)
	kindAnd                       // runs AND only (Mode And, runsAnd: its results are final after the AND download)
	kindRunsAnd                   // runsAnd
)

// workRecs fills wr[i] for the work query work[i] and, for each OR
// query, recs[i] (nil: none; the OR plan's record, orRec) on up to
// workers goroutines, walking the batch's preps in their order (chunks of
// 256; each work prep knows its index, prep.wi): its preps, queries and
// terms lie in that order, so that the pass streams through them where
// the work order (by term count) missed the cache on each at 100,000
// queries.
func (b *Backend) workRecs(wr []workRec, recs []orRec, preps []prep, work []*prep, workers int) {
	c := b.orConsts()
	parallelWorkers(workers, len(preps), 256, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			p := &preps[j]
			if !p.inWork {
				continue
			}
			i := int(p.wi)
			if work[i] != p {
				panic("BUG: gpu: planBatch's work is not prepareBatch's")
			}
			r := workRec{cost: p.cost(), orc: b.orCost(p), cut: orCut{post: p.postings()}}
			if p.runsAnd() {
				r.kind |= kindRunsAnd
				if p.q.Mode == engine.And {
					r.kind |= kindAnd
				}
			}
			if p.q.Mode == engine.Or && p.needOr {
				r.kind |= kindOr
				if recs != nil {
					recs[i] = c.rec(p)
					r.cut.acc = c.bytes(p, recs[i].own.coff)
				}
			}
			wr[i] = r
		}
	})
}

// fitsCfg is setBudget.fits by a planCfg's thresholds.
func (s *setBudget) fitsCfg(c *planCfg, n int) bool {
	return n < MaxSetQueries && s.sum < c.threshold && s.or < c.orThreshold
}

// pendingResults are the downloads of a batch's pure-AND sets whose
// conversion into engine results waits for the batch's goroutine
// (finishResults): the pinned arena they were copied into and, per set,
// where.
type pendingResults struct {
	down    pinned
	sets    []pendingSet
	flushed int   // sets converted early (finishPending on the owner), for mark
	offs    []int // finishSet's and finishOr's result offsets (kOffsets)
	offSums []int // and their chunk sums
}

// mark is the position of the next set, for drop.
func (pr *pendingResults) mark() int { return pr.flushed + len(pr.sets) }

// drop forgets the sets from mark m on (a failed set's, runSplit).
func (pr *pendingResults) drop(m int) {
	pr.sets = pr.sets[:max(min(m-pr.flushed, len(pr.sets)), 0)]
}

// pendKind is what a pendingSet holds.
type pendKind uint8

const (
	pendAnd   pendKind = iota // a pure-AND set's download (finishSet)
	pendOr                    // an OR launch's download, whole or tiled (finishOr, orplan.go)
	pendStats                 // a set's time and statistics, after its pendOr sets (finishStats)
)

// pendingSet is one set's download in pendingResults.down: byte offsets of
// its result counts, candidate totals, counters (4 + 2 nq words; pendAnd)
// and result keys, for its queries qs (the plan's order).
type pendingSet struct {
	kind                   pendKind
	qs                     []*prep
	cnts, tots, ctrs, keys int
	nres                   int
	caps                   []int         // pendOr of tiled queries: their candidate slots (more emitted: rerun on the owner)
	mixed                  bool          // pendAnd of a mixed set: the needOr queries' results are OR's; time and Stats from pendStats
	time                   time.Duration // the set's time on the owner (engine.Stats.Time)
}

// finishSet converts one pending set of pr: stats (blocks, postings and
// candidates on top of the set's own) and results into out.
func (b *Backend) finishSet(pr *pendingResults, ps *pendingSet, out []engine.Response) {
	a, qs, nq := &pr.down, ps.qs, len(ps.qs)
	cnts, tots := a.u32(ps.cnts, nq), a.u32(ps.tots, nq)
	ctrs := a.u32(ps.ctrs, 4+2*nq)
	keys := a.u64(ps.keys, ps.nres)
	offs := pr.kOffsets(qs)
	parallel(nq, func(lo, hi int) {
		for a := lo; a < hi; a++ {
			p := qs[a]
			b.addAndStats(p, ctrs, nq, a, tots[a])
			r := &out[p.i]
			c := int(cnts[a])
			if !ps.mixed {
				p.st.Time = ps.time
				r.Stats = p.st
			} else if p.q.Mode == engine.AndOr && c < p.q.K {
				// OR answered it (the owner set needOr by the same test; the
				// MaxScore OR may have cleared it since).
				continue
			}
			if c > p.q.K {
				r.Results, r.Err = r.Results[:0], fmt.Errorf("gpu: query %q: BUG: %d results for k = %d", p.q.ID, c, p.q.K)
			} else {
				r.Results = results(r.Results[:0], keys[offs[a]:offs[a]+c])
			}
		}
	})
}

// finishPending converts every pending set of pr: on the batch's
// goroutine after its Do returned (finishResults), or on the owner when
// the download arena must grow.
func (b *Backend) finishPending(pr *pendingResults, out []engine.Response) {
	for i := range pr.sets {
		switch ps := &pr.sets[i]; ps.kind {
		case pendAnd:
			b.finishSet(pr, ps, out)
		case pendOr:
			b.finishOr(pr, ps, out)
		case pendStats:
			finishStats(ps, out)
		}
		pr.sets[i].qs, pr.sets[i].caps = nil, nil
	}
	pr.flushed += len(pr.sets)
	pr.sets = pr.sets[:0]
}

// fetchTo copies the parts to the batch's pending download arena pend,
// after the sets there (converted first, on the owner, when the arena
// must grow), or to the owner's b.down when pend is nil, waits for the
// stream and returns the arena.
func (b *Backend) fetchTo(mem *devMem, pend *pendingResults, parts []*download, out []engine.Response) (*pinned, error) {
	if pend == nil {
		return &b.down, b.fetch(mem, parts)
	}
	dn := &pend.down
	n := placeParts(parts)
	if !dn.room(n) {
		b.finishPending(pend, out)
		if err := dn.reset(n); err != nil {
			return nil, err
		}
	}
	return dn, b.fetchAt(dn, dn.take(n), mem, parts)
}

// kOffsets returns, in pr.offs (scratch, grown), each query's offset
// among the downloaded result keys: the running sum of the queries' k, on
// all cores (parallelScan; gpuplan3: a serial pass reading each prep and
// its engine.Query, on the batch's goroutine after the device).
func (pr *pendingResults) kOffsets(qs []*prep) []int {
	offs := slices.Grow(pr.offs[:0], len(qs))[:len(qs)]
	parallelScan(runtime.GOMAXPROCS(0), len(qs), &pr.offSums, func(x, y int) int { return x + y }, func(lo, hi, s int, write bool) int {
		for a := lo; a < hi; a++ {
			if write {
				offs[a] = s
			}
			s += qs[a].q.K
		}
		return s
	})
	pr.offs = offs
	return offs
}
