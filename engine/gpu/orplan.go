package gpu

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
)

// The host half of an OR launch set, off the CUDA owner goroutine (issues
// 20 §4, 24, 25; docs/GPU-QUERY.md "OR sets off the owner"), as
// andplan.go does it for pure-AND sets. A GCIDE OR batch of 10,000
// TREC'06 queries spent about 5 ms of its owner goroutine's 7.7 ms on
// host work around 2.7 ms of device time: the launch chunking (each
// query's accumulator bytes, twice), the split into whole and tiled
// queries, the plans' per-query and per-list passes (sizes, candidate
// slots, Segs, OQuery, bitmap columns), the fills, the result conversion
// and the set's statistics pass, most of it serial.
//
// For a pure-OR set (every query Mode == Or; the tiled strategy) planBatch
// now makes, on the batch's goroutine and its preparing goroutines: the
// launches (planOrSet: the accumulator budget's cuts), each launch's
// split into whole and tiled queries (a stable counting sort), both plans
// (planWhole, planTiled: sizes, slots, upload layout) and their uploads,
// filled into the batch's pinned upload arena (fillWhole, fillTiled). The
// owner copies each launch's range to the device, allocates its device
// buffers, launches, downloads into the batch's pinned download arena and
// records a pendingSet (pendOr) instead of converting; it still reads the
// counters (corrupt data: the set fails and is retried, halved, on the
// owner path, as with AND) and picks the tiled queries whose candidates
// overflowed their slots, which it reruns with all their slots and
// converts itself. After the batch's Do, finishPending converts the
// pendOr sets (stats and results, skipping overflowed queries) and the
// set's statistics (pendStats: each query's time and engine.Stats), on all
// cores. The contract of andplan.go's header holds for these buffers too.
//
// Not moved: AND+OR sets and sets mixing modes (their OR part is known only
// after the AND download), the dense and MaxScore OR strategies, the list
// cache's sets, and the overflow reruns.

// orTilePlan is a tiled OR launch as planned on the host (planTiled): its
// queries, sizes, candidate slots and upload layout, filled at upAt in the
// arena up (fillTiled).
type orTilePlan struct {
	qs                         []*prep
	fused, tree, useBm         bool
	tile, ntiles               int
	nq, nterms                 int
	nblk, dbytes, fbytes, nval int // every list of the set
	sumCap                     int // candidate slots, all queries
	caps                       []int
	recs                       []orRec // planTiledRecs: each query's record, its start set (nil: planTiled)

	// Uploaded: QMeta | QTerm | Seg (every list) | scratch offsets |
	// OQuery | columns (useBm).
	oMeta, oTerms, oSegs, oScr, oOq, oCol int
	size, nres, scratchWords              int
	up                                    *pinned
	upAt                                  int
}

// planTiled sizes the tiled OR launch of qs into pl on up to workers
// goroutines: lists, candidate slots (caps[a] for qs[a]; an error
// matching cuda.ErrOutOfMemory past 2^31), the selection (Ding's max tree
// unless a query's k or slots are too large for it, or Options say
// otherwise) and the upload layout. It reads only Backend state fixed at
// New (the tiling, codecs, test options, whether there are bitmaps).
func (b *Backend) planTiled(pl *orTilePlan, qs []*prep, workers int, caps []int) error {
	*pl = orTilePlan{qs: qs, nq: len(qs), fused: b.orFused(), tree: b.opt.orSelect != "radix", caps: caps}
	pl.tile, pl.ntiles, _ = b.tiling()
	var mu sync.Mutex
	parallelWorkers(workers, len(qs), 256, func(lo, hi int) {
		var c orTilePlan
		c.tree = pl.tree
		for a := lo; a < hi; a++ {
			p := qs[a]
			c.nterms += len(p.terms)
			for _, t := range p.terms {
				ti := t.ti
				c.nblk += int(ti.nb)
				c.dbytes += int(ti.dlen)
				c.fbytes += int(ti.flen)
				c.nval += int(ti.df)
			}
			k := b.orCap(p)
			caps[a] = k
			c.sumCap += k
			if b.opt.orSelect != "tree" && (p.q.K > orTreeK || k > kern.OrTreeItems) {
				c.tree = false
			}
		}
		mu.Lock()
		pl.nterms += c.nterms
		pl.nblk += c.nblk
		pl.dbytes += c.dbytes
		pl.fbytes += c.fbytes
		pl.nval += c.nval
		pl.sumCap += c.sumCap
		pl.tree = pl.tree && c.tree
		mu.Unlock()
	})
	return b.tiledLayout(pl)
}

// planTiledRecs is planTiled for planOrSet, from the queries' records rs
// (orRecs; rs[a] is qs[a]'s) instead of their preps: one serial pass over
// the records sums the launch and gives each its start (fillTiled's
// running sums), so that fillTiled needs no pass of its own before it
// writes. The same plan as planTiled's.
func (b *Backend) planTiledRecs(pl *orTilePlan, qs []*prep, rs []orRec, caps []int) error {
	*pl = orTilePlan{qs: qs, nq: len(qs), fused: b.orFused(), tree: b.opt.orSelect != "radix", caps: caps, recs: rs}
	pl.tile, pl.ntiles, _ = b.tiling()
	var s orSegSum
	big := false
	for a := range rs {
		r := &rs[a]
		r.start = s
		s = s.add(r.own)
		caps[a] = r.own.coff
		big = big || r.big
	}
	if b.opt.orSelect != "tree" && big {
		pl.tree = false
	}
	pl.nterms, pl.sumCap, pl.nblk, pl.dbytes, pl.fbytes, pl.nval = s.toff, s.coff, s.blk, s.d, s.f, s.v
	return b.tiledLayout(pl)
}

// tiledLayout checks pl's sizes (an error matching cuda.ErrOutOfMemory
// past 2^31) and lays out its upload.
func (b *Backend) tiledLayout(pl *orTilePlan) error {
	if (!pl.fused && (pl.nval > math.MaxInt32/2 || pl.dbytes > math.MaxInt32 || pl.fbytes > math.MaxInt32)) ||
		pl.sumCap > math.MaxInt32/2 || int64(pl.nq)*int64(pl.ntiles) > math.MaxInt32/2 {
		return fmt.Errorf("%w: OR launch of %d postings", cuda.ErrOutOfMemory, pl.nval)
	}
	// The fused tiles' device bitmaps: the columns per query term (none:
	// zero).
	pl.useBm = pl.fused && b.bm != nil
	var lay layout
	nq := pl.nq
	pl.oMeta, pl.oTerms, pl.oSegs, pl.oScr, pl.oOq = lay.add(16*nq), lay.add(16*pl.nterms), lay.add(40*pl.nterms), lay.add(8*nq), lay.add(16*nq)
	pl.oCol = -1
	if pl.useBm {
		pl.oCol = lay.add(4 * pl.nterms)
	}
	pl.size = lay.size
	return nil
}

// orSegSum is fillTiled's running sum: terms, candidate slots, and the
// encoded bytes, postings and blocks of the lists before.
type orSegSum struct{ toff, coff, d, f, v, blk int }

func (s orSegSum) add(o orSegSum) orSegSum {
	return orSegSum{s.toff + o.toff, s.coff + o.coff, s.d + o.d, s.f + o.f, s.v + o.v, s.blk + o.blk}
}

// fillTiled writes pl's QMeta, QTerms, scratch offsets, a Seg per list, an
// OQuery per query (its first Seg and candidate slots) and the bitmap
// columns (with the OR tiles' bitmap df orDF) into its arena at pl.upAt,
// on up to workers goroutines (sc: scratch). It reads only immutable
// Backend state: any goroutine may fill its own arena.
func (b *Backend) fillTiled(pl *orTilePlan, orDF uint32, workers int, sc *planScratch) {
	up, at := pl.up, pl.upAt
	if pl.recs != nil {
		var slots []querySlot
		slots, pl.nres, pl.scratchWords = recSlots(&sc.slots, pl.recs)
		b.fillQuerySlots(up, slots, workers, pl.qs, at+pl.oMeta, at+pl.oTerms, at+pl.oScr)
	} else {
		_, pl.nres, pl.scratchWords = b.fillQueriesIn(up, &sc.slots, &sc.slotSums, workers, pl.qs, at+pl.oMeta, at+pl.oTerms, at+pl.oScr)
	}
	segs := up.u32(at+pl.oSegs, kern.SegWords*pl.nterms)
	oqs := up.u32(at+pl.oOq, kern.OQueryWords*pl.nq)
	var cols []uint32
	if pl.useBm {
		cols = up.u32(at+pl.oCol, pl.nterms)
	}
	if pl.recs != nil {
		// The running sums are the records' starts (planTiledRecs): one
		// pass, in chunks of 256 on every worker.
		parallelWorkers(workers, pl.nq, 256, func(lo, hi int) {
			for a := lo; a < hi; a++ {
				b.putTiled(pl, a, pl.recs[a].start, segs, oqs, cols, orDF)
			}
		})
		return
	}
	parallelScan(workers, pl.nq, &sc.orSums, orSegSum.add, func(lo, hi int, s orSegSum, write bool) orSegSum {
		for a := lo; a < hi; a++ {
			p := pl.qs[a]
			if !write {
				for _, t := range p.terms {
					ti := t.ti
					s = s.add(orSegSum{d: int(ti.dlen), f: int(ti.flen), v: int(ti.df), blk: int(ti.nb)})
				}
				s.toff += len(p.terms)
				s.coff += pl.caps[a]
				continue
			}
			s = b.putTiled(pl, a, s, segs, oqs, cols, orDF)
		}
		return s
	})
}

// putTiled writes query a's OQuery, Segs and bitmap columns (fillTiled)
// from the running sums s of the queries before it and returns those
// after it.
func (b *Backend) putTiled(pl *orTilePlan, a int, s orSegSum, segs, oqs, cols []uint32, orDF uint32) orSegSum {
	p := pl.qs[a]
	kern.PutOQuery(oqs[kern.OQueryWords*a:], uint32(s.toff), uint32(pl.caps[a]), uint32(s.coff))
	s.coff += pl.caps[a]
	for j := range p.terms {
		t := &p.terms[j]
		ti := &t.ti
		kern.PutSeg(segs[kern.SegWords*(s.toff+j):], uint64(s.d), uint64(s.f), uint64(s.v), uint32(t.id), uint32(s.blk),
			uint32(a), uint32(s.toff+j))
		if pl.useBm {
			cols[s.toff+j] = b.columnDF(t.id, ti.df, orDF)
		}
		s.d, s.f, s.v, s.blk = s.d+int(ti.dlen), s.f+int(ti.flen), s.v+int(ti.df), s.blk+int(ti.nb)
	}
	s.toff += len(p.terms)
	return s
}

// orWholePlan is a launch of OR queries answered whole (orwhole.go) as
// planned on the host: its queries and upload layout (QMeta | QTerm |
// scratch offsets), filled at upAt in the arena up (fillWhole).
type orWholePlan struct {
	qs                        []*prep
	recs                      []orRec // planOrSet's records of qs (nil: none)
	nq, nterms                int
	oMeta, oTerms, oScr, size int
	nres                      int
	up                        *pinned
	upAt                      int
}

// planWhole lays out the upload of the whole-query launch of qs.
func planWhole(pl *orWholePlan, qs []*prep) {
	*pl = orWholePlan{qs: qs, nq: len(qs)}
	for _, p := range qs {
		pl.nterms += len(p.terms)
	}
	pl.layout()
}

// planWholeRecs is planWhole from planOrSet's records rs of qs.
func planWholeRecs(pl *orWholePlan, qs []*prep, rs []orRec) {
	*pl = orWholePlan{qs: qs, nq: len(qs), recs: rs}
	for a := range rs {
		pl.nterms += rs[a].own.toff
	}
	pl.layout()
}

// layout lays out the upload of pl (its nq and nterms set).
func (pl *orWholePlan) layout() {
	var lay layout
	pl.oMeta, pl.oTerms, pl.oScr = lay.add(16*pl.nq), lay.add(16*pl.nterms), lay.add(8*pl.nq)
	pl.size = lay.size
}

// fillWhole writes pl's QMeta, QTerms and scratch offsets into its arena,
// on up to workers goroutines.
func (b *Backend) fillWhole(pl *orWholePlan, workers int, sc *planScratch) {
	if pl.recs != nil {
		var slots []querySlot
		slots, pl.nres, _ = recSlots(&sc.slots, pl.recs)
		b.fillQuerySlots(pl.up, slots, workers, pl.qs, pl.upAt+pl.oMeta, pl.upAt+pl.oTerms, pl.upAt+pl.oScr)
		return
	}
	_, pl.nres, _ = b.fillQueriesIn(pl.up, &sc.slots, &sc.slotSums, workers, pl.qs, pl.upAt+pl.oMeta, pl.upAt+pl.oTerms, pl.upAt+pl.oScr)
}

// orLaunch is one launch of a planned pure-OR set: its whole queries, then
// its tiled ones (nq 0: none).
type orLaunch struct {
	whole orWholePlan
	tiled orTilePlan
}

// orRec is one query of a planned pure-OR set as planOrSet's single pass
// over its preps reads it (gpuplan2: the set's launch cuts, split, plans
// and fills had walked the preps, their engine.Query and their terms in
// eight passes, each a cache miss per query at 100k queries): its
// accumulator bytes and postings (the launch cuts), whether it runs
// whole, its candidate slots (orCap), whether it allows Ding's max tree,
// its terms' sums (toff: terms, coff: slots, d, f, v, blk) and, once
// planned, the running sums of the tiled queries before it in its launch
// (start: fillTiled's Seg and OQuery offsets).
type orRec struct {
	acc, post  int64
	k          int  // the query's k
	whole, big bool // big: k or slots too large for the max tree
	own, start orSegSum
}

// recSlots is querySlots from the records rs of qs (one serial pass over
// the records, not the preps; the same slots).
func recSlots(buf *[]querySlot, rs []orRec) (slots []querySlot, nres, scratchWords int) {
	if cap(*buf) < len(rs) {
		*buf = make([]querySlot, len(rs))
	}
	slots = (*buf)[:len(rs)]
	var s querySlot
	for a := range rs {
		n := querySlot{toff: rs[a].own.toff, res: rs[a].k}
		if n.res > 4096 {
			n.scr = pow2(n.res)
		}
		slots[a] = s
		if n.scr == 0 {
			slots[a].scr = 0
		}
		s = s.add(n)
	}
	return slots, s.res, s.scr
}

// orCut is the sums of planOrSet's budget pass: accumulator bytes and
// postings.
type orCut struct{ acc, post int64 }

func (c orCut) add(o orCut) orCut { return orCut{c.acc + o.acc, c.post + o.post} }

// orRecs fills recs[a] for set[a] on up to workers goroutines (chunks of
// 256) and returns the set's accumulator bytes and postings.
func (b *Backend) orRecs(recs []orRec, set []*prep, workers int) orCut {
	var mu sync.Mutex
	var tot orCut
	parallelWorkers(workers, len(set), 256, func(lo, hi int) {
		var c orCut
		for a := lo; a < hi; a++ {
			p := set[a]
			k := b.orCap(p)
			r := orRec{acc: b.orQueryBytesCap(p, k), post: p.postings(), k: p.q.K, whole: b.orWhole(p),
				big: p.q.K > orTreeK || k > kern.OrTreeItems}
			r.own = orSegSum{toff: len(p.terms), coff: k}
			if !r.whole {
				for _, t := range p.terms {
					ti := &t.ti
					r.own.d += int(ti.dlen)
					r.own.f += int(ti.flen)
					r.own.v += int(ti.df)
					r.own.blk += int(ti.nb)
				}
			}
			recs[a] = r
			c = c.add(orCut{r.acc, r.post})
		}
		mu.Lock()
		tot = tot.add(c)
		mu.Unlock()
	})
	return tot
}

// planOrSet plans the pure-OR set set (planBatch: every query Mode == Or
// with a known term; the tiled strategy) into bp: its launches (the cuts
// of runSet's accumulator budget), each launch's queries split into whole
// ones and tiled ones in order (in order, the set's range of bp.order
// from lo, with their records in bp.orq), and their plans and upload
// layouts from *size on (which it advances). It returns the launches'
// range in bp.orl, or ok false when a launch cannot be planned (the owner
// then runs the set as before). One parallel pass reads the preps
// (orRecs); the rest reads the records.
func (b *Backend) planOrSet(bp *batchPlan, set []*prep, lo int, workers int, size *int) (l0, l1 int, ok bool) {
	maxPost := b.opt.OrPostings
	if b.orFused() {
		maxPost = math.MaxInt64
	}
	bp.sc.orRecs = slices.Grow(bp.sc.orRecs[:0], len(set))[:len(set)]
	recs := bp.sc.orRecs
	tot := b.orRecs(recs, set, workers)
	l0 = len(bp.orl)
	addLaunch := func(qs []*prep, rs []orRec, at int) bool {
		bp.orl = append(bp.orl, orLaunch{})
		ol := &bp.orl[len(bp.orl)-1]
		// Whole queries first, then the tiled ones, each in set order
		// (splitWhole's order), with their records.
		dst, drs := bp.order[at:at+len(qs)], bp.orq[at:at+len(qs)]
		nw := 0
		for i := range rs {
			if rs[i].whole {
				nw++
			}
		}
		w, t := 0, nw
		for i := range rs {
			if rs[i].whole {
				dst[w], drs[w] = qs[i], rs[i]
				w++
			} else {
				dst[t], drs[t] = qs[i], rs[i]
				t++
			}
		}
		if nw > 0 {
			planWholeRecs(&ol.whole, dst[:nw], drs[:nw])
			ol.whole.upAt = (*size + 15) &^ 15
			*size = ol.whole.upAt + ol.whole.size
		}
		if nw < len(dst) {
			bp.caps = growInts(bp.caps, len(dst)-nw)
			caps := bp.caps[len(bp.caps)-(len(dst)-nw):]
			if b.planTiledRecs(&ol.tiled, dst[nw:], drs[nw:], caps) != nil {
				return false // the owner meets the error again and splits the set
			}
			ol.tiled.upAt = (*size + 15) &^ 15
			*size = ol.tiled.upAt + ol.tiled.size
		}
		return true
	}
	// The launches: runSet's greedy cuts (one when the set fits, as every
	// GCIDE/TREC'06 set does).
	if tot.acc <= b.opt.AccumulatorBytes && tot.post <= maxPost {
		if !addLaunch(set, recs, lo) {
			return 0, 0, false
		}
		return l0, len(bp.orl), true
	}
	for i := 0; i < len(set); {
		n := 1
		acc, post := recs[i].acc, recs[i].post
		for i+n < len(set) && acc+recs[i+n].acc <= b.opt.AccumulatorBytes && post+recs[i+n].post <= maxPost {
			acc += recs[i+n].acc
			post += recs[i+n].post
			n++
		}
		if !addLaunch(set[i:i+n], recs[i:i+n], lo+i) {
			return 0, 0, false
		}
		i += n
	}
	return l0, len(bp.orl), true
}

// orOneLaunch reports whether the OR queries qs fit one launch of
// runSet's budget (accumulator bytes, and postings up to maxPost): then
// its greedy cuts make one launch of them. One pass on up to workers
// goroutines (sums: scratch) instead of the cuts' serial pass, which
// computes each query's orQueryBytes twice.
func (b *Backend) orOneLaunch(qs []*prep, maxPost int64, workers int, sums *[]orCut) bool {
	tot := parallelScan(workers, len(qs), sums, orCut.add, func(lo, hi int, s orCut, _ bool) orCut {
		for _, p := range qs[lo:hi] {
			s = s.add(orCut{b.orQueryBytes(p), p.postings()})
		}
		return s
	})
	return tot.acc <= b.opt.AccumulatorBytes && tot.post <= maxPost
}

// growInts returns s extended by n elements (contents undefined); when it
// must grow, the new array holds s's elements (slices of the old one stay
// valid).
func growInts(s []int, n int) []int {
	l := len(s)
	if cap(s)-l < n {
		t := make([]int, l, max(2*cap(s), l+n))
		copy(t, s)
		s = t
	}
	return s[:l+n]
}

// fillOrLaunches fills the uploads of the launches ls into bp.up.
func (b *Backend) fillOrLaunches(bp *batchPlan, ls []orLaunch, orDF uint32, workers int) {
	for i := range ls {
		ol := &ls[i]
		if ol.whole.nq > 0 {
			ol.whole.up = &bp.up
			b.fillWhole(&ol.whole, workers, &bp.sc)
		}
		if ol.tiled.nq > 0 {
			ol.tiled.up = &bp.up
			b.fillTiled(&ol.tiled, orDF, workers, &bp.sc)
		}
	}
}

// pureOr reports whether every query of set runs OR only (Mode Or with a
// known term: prepareBatch sets needOr).
func pureOr(set []*prep) bool {
	for _, p := range set {
		if p.q.Mode != engine.Or || !p.needOr {
			return false
		}
	}
	return len(set) > 0
}

// runOrPlanned runs the launches of a planned pure-OR set (owner): each
// launch's whole queries, then its tiled ones, their downloads left in
// pend; the tiled queries that overflowed their candidate slots are
// rerun here (rerunOverflowed) and converted on the owner.
func (b *Backend) runOrPlanned(mem *devMem, ls []orLaunch, pend *pendingResults, out []engine.Response) error {
	for i := range ls {
		ol := &ls[i]
		if ol.whole.nq > 0 {
			if err := b.runOrWholePlanned(mem, &ol.whole, pend, out); err != nil {
				return err
			}
		}
		if ol.tiled.nq == 0 {
			continue
		}
		ok, err := b.tileKernels()
		if err != nil {
			return err
		}
		r := &orTileRun{orTilePlan: ol.tiled, b: b, mem: mem, ok: ok, pend: pend}
		for _, f := range []func() error{r.send, r.alloc, r.accumulate, r.selectTopK} {
			if err := f(); err != nil {
				return err
			}
		}
		over, err := r.download(out)
		if err != nil {
			return err
		}
		if err := b.rerunOverflowed(mem, over, out); err != nil {
			return err
		}
	}
	return nil
}

// finishOr converts one pendOr set (finishPending): each query's stats
// (OR on the GPU, every block and posting of its lists, its candidates:
// tots) and results, but for the tiled queries whose candidates
// overflowed their slots (caps; rerun and converted on the owner); offs
// is scratch, returned grown.
func (b *Backend) finishOr(a *pinned, ps *pendingSet, out []engine.Response, offs []int) []int {
	qs, nq := ps.qs, len(ps.qs)
	cnts, tots := a.u32(ps.cnts, nq), a.u32(ps.tots, nq)
	keys := a.u64(ps.keys, ps.nres)
	offs = kOffsets(offs, qs)
	parallel(nq, func(lo, hi int) {
		for a := lo; a < hi; a++ {
			p := qs[a]
			if ps.caps != nil && int(tots[a]) > ps.caps[a] {
				continue
			}
			c := int(cnts[a])
			p.st.OrAlgo = OrGPU
			for _, t := range p.terms {
				p.st.BlocksDecoded += int64(t.ti.nb)
				p.st.PostingsDecoded += int64(t.df)
			}
			p.st.Candidates += int64(tots[a])
			r := &out[p.i]
			if c > p.q.K {
				r.Results, r.Err = r.Results[:0], fmt.Errorf("gpu: query %q: BUG: %d results for k = %d", p.q.ID, c, p.q.K)
			} else {
				r.Results = results(r.Results[:0], keys[offs[a]:offs[a]+c])
			}
		}
	})
	return offs
}

// finishStats gives each query of a pendStats set its set's time and
// writes its statistics (runSet's last pass, off the owner).
func finishStats(ps *pendingSet, out []engine.Response) {
	qs := ps.qs
	parallel(len(qs), func(lo, hi int) {
		for _, p := range qs[lo:hi] {
			p.st.Time = ps.time
			out[p.i].Stats = p.st
		}
	})
}
