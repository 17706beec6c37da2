package gpu

import (
	"fmt"
	"math"
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

// orTilePlan is a tiled OR launch as planned on the host (planOrLaunch):
// its queries, sizes, candidate slots and upload layout, filled at upAt
// in the arena up (fillOrLaunch).
type orTilePlan struct {
	qs                         []*prep
	fused, tree, useBm         bool
	tile, ntiles               int
	nq, nterms                 int
	nblk, dbytes, fbytes, nval int // every list of the set
	sumCap                     int // candidate slots, all queries
	caps                       []int
	npre, npreVal, npreBlk     int // fused: the pre-decoded lists, their postings and blocks

	// Uploaded: QMeta | QTerm | Seg (every list) | scratch offsets |
	// OQuery | columns (useBm) | pre-decoded lists' offsets (per query
	// term) and (query term, first block) pairs (npre > 0).
	oMeta, oTerms, oSegs, oScr, oOq, oCol int
	oDvo, oPList                          int
	size, nres, scratchWords              int
	up                                    *pinned
	upAt                                  int
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
	pl.oCol, pl.oDvo, pl.oPList = -1, -1, -1
	if pl.useBm {
		pl.oCol = lay.add(4 * pl.nterms)
	}
	if pl.npre > 0 {
		if pl.npreVal > math.MaxInt32/2 {
			return fmt.Errorf("%w: OR launch of %d pre-decoded postings", cuda.ErrOutOfMemory, pl.npreVal)
		}
		pl.oDvo, pl.oPList = lay.add(4*pl.nterms), lay.add(8*pl.npre)
	}
	pl.size = lay.size
	return nil
}

// orSegSum is a tiled query's share of its launch (orRec.own) and the
// running sum of those before it (putTiled): terms, candidate slots, the
// encoded bytes, postings and blocks of its lists, and its pre-decoded
// lists, their postings and blocks (orConsts.predecoded).
type orSegSum struct{ toff, coff, d, f, v, blk, pn, pv, pb int }

func (s orSegSum) add(o orSegSum) orSegSum {
	return orSegSum{s.toff + o.toff, s.coff + o.coff, s.d + o.d, s.f + o.f, s.v + o.v, s.blk + o.blk,
		s.pn + o.pn, s.pv + o.pv, s.pb + o.pb}
}

// putTiled writes the tiled query of the given terms, the a-th of its launch, whose share
// starts at the running sums s: its OQuery (cap candidate slots), a Seg
// per list, its bitmap columns (with the OR tiles' bitmap df orDF) and,
// with dvo, its pre-decoded lists (c: the Backend's orConsts): each query
// term's offset in the decoded postings (kern.OrNoPre: none) and the
// (query term, first block) pairs plist.
func (b *Backend) putTiled(pl *orTilePlan, c *orConsts, a int, terms []qterm, s orSegSum, cap int, segs, oqs, cols, dvo, plist []uint32, orDF uint32) {
	kern.PutOQuery(oqs[kern.OQueryWords*a:], uint32(s.toff), uint32(cap), uint32(s.coff))
	for j := range terms {
		t := &terms[j]
		ti := &t.ti
		kern.PutSeg(segs[kern.SegWords*(s.toff+j):], uint64(s.d), uint64(s.f), uint64(s.v), uint32(t.id), uint32(s.blk),
			uint32(a), uint32(s.toff+j))
		if pl.useBm {
			cols[s.toff+j] = b.columnDF(t.id, ti.df, orDF)
		}
		if dvo != nil {
			dvo[s.toff+j] = kern.OrNoPre
			if c.predecoded(ti) {
				dvo[s.toff+j] = uint32(s.pv)
				plist[2*s.pn], plist[2*s.pn+1] = uint32(s.toff+j), uint32(s.pb)
				s.pn, s.pv, s.pb = s.pn+1, s.pv+int(ti.df), s.pb+int(ti.nb)
			}
		}
		s.d, s.f, s.v, s.blk = s.d+int(ti.dlen), s.f+int(ti.flen), s.v+int(ti.df), s.blk+int(ti.nb)
	}
}

// orWholePlan is a launch of OR queries answered whole (orwhole.go) as
// planned on the host: its queries and upload layout (QMeta | QTerm |
// scratch offsets), filled at upAt in the arena up (fillOrLaunch).
type orWholePlan struct {
	qs                        []*prep
	nq, nterms                int
	oMeta, oTerms, oScr, size int
	nres                      int
	up                        *pinned
	upAt                      int
}

// layout lays out the upload of pl (its nq and nterms set).
func (pl *orWholePlan) layout() {
	var lay layout
	pl.oMeta, pl.oTerms, pl.oScr = lay.add(16*pl.nq), lay.add(16*pl.nterms), lay.add(8*pl.nq)
	pl.size = lay.size
}

// orLaunch is one launch of OR queries: its whole queries, then its tiled
// ones (nq 0: none). qs, recs and sums are planOrLaunch's, for
// fillOrLaunch.
type orLaunch struct {
	whole orWholePlan
	tiled orTilePlan
	qs    []*prep   // the launch's queries, in set order
	recs  []orRec   // their records
	sums  []orSplit // sums[c]: the running sums before recs[c*orChunk]
}

// orRec is one OR query of a launch as orRecs' single pass over the
// preps reads it (gpuplan2; gpuplan3: the same for the owner's launches,
// and no start or budget fields): whether it runs whole, its k, whether
// it allows Ding's max tree (big: k or slots too large for it), its terms
// (for the fill, which then reads no prep) and its
// share of the launch (own: toff its terms, coff its candidate slots
// (orCap), and for a tiled query the sums of its lists).
type orRec struct {
	terms      []qterm // the prep's
	k          int
	whole, big bool
	own        orSegSum
}

// rec reads p's record (c: the Backend's orConsts).
func (c *orConsts) rec(p *prep) orRec {
	k := c.cap(p)
	r := orRec{terms: p.terms, k: p.q.K, whole: c.runsWhole(p), big: p.q.K > orTreeK || k > kern.OrTreeItems}
	r.own = orSegSum{toff: len(p.terms), coff: k}
	if !r.whole {
		for j := range p.terms {
			ti := &p.terms[j].ti
			r.own.d += int(ti.dlen)
			r.own.f += int(ti.flen)
			r.own.v += int(ti.df)
			r.own.blk += int(ti.nb)
		}
		r.own.pn, r.own.pv, r.own.pb = c.preOf(p.terms)
	}
	return r
}

// orRecs fills recs[a] for qs[a] and, with cuts, cuts[a] (its share of
// a launch's budget: accumulator bytes and postings) on up to workers
// goroutines (chunks of 256); it returns the sum of the shares (zero
// without cuts).
func (b *Backend) orRecs(recs []orRec, cuts []orCut, qs []*prep, workers int) orCut {
	c := b.orConsts()
	var mu sync.Mutex
	var tot orCut
	parallelWorkers(workers, len(qs), 256, func(lo, hi int) {
		var sum orCut
		for a := lo; a < hi; a++ {
			p := qs[a]
			recs[a] = c.rec(p)
			if cuts != nil {
				cuts[a] = orCut{c.bytes(p, recs[a].own.coff), p.postings()}
				sum = sum.add(cuts[a])
			}
		}
		mu.Lock()
		tot = tot.add(sum)
		mu.Unlock()
	})
	return tot
}

// orChunk is the records of one chunk of planOrLaunch's and
// fillOrLaunch's passes.
const orChunk = 256

// orPart is the running sums of one part (whole or tiled) of a launch:
// its queries, result keys, top-k scratch words and the queries' shares.
type orPart struct {
	nq, res, scr int
	seg          orSegSum
}

// add adds the query of record r (in place: the sums are passed over
// once or twice per query, and by value they were copied each time).
func (o *orPart) add(r *orRec) {
	o.nq++
	o.res += r.k
	o.scr += scratchOf(r.k)
	s, w := &o.seg, &r.own
	s.toff, s.coff, s.d, s.f, s.v, s.blk = s.toff+w.toff, s.coff+w.coff, s.d+w.d, s.f+w.f, s.v+w.v, s.blk+w.blk
	s.pn, s.pv, s.pb = s.pn+w.pn, s.pv+w.pv, s.pb+w.pb
}

// slot is the querySlot of the query of record r with o the sums of its
// part before it.
func (o orPart) slot(r *orRec) querySlot {
	sl := querySlot{toff: o.seg.toff, res: o.res}
	if scratchOf(r.k) > 0 {
		sl.scr = o.scr
	}
	return sl
}

// scratchOf is the top-k scratch words of a query of k results
// (querySlots' rule: none up to 4096).
func scratchOf(k int) int {
	if k > 4096 {
		return pow2(k)
	}
	return 0
}

// orSplit is planOrLaunch's running sum: the whole and the tiled part,
// and whether a tiled query is too big for the max tree.
type orSplit struct {
	w, t orPart
	big  bool
}

// add adds the query of record r to its part (in place).
func (s *orSplit) add(r *orRec) {
	if r.whole {
		s.w.add(r)
	} else {
		s.t.add(r)
		s.big = s.big || r.big
	}
}

// plus sums two running sums.
func (s orSplit) plus(o orSplit) orSplit {
	add := func(a, b orPart) orPart {
		return orPart{a.nq + b.nq, a.res + b.res, a.scr + b.scr, a.seg.add(b.seg)}
	}
	return orSplit{add(s.w, o.w), add(s.t, o.t), s.big || o.big}
}

// planOrLaunch plans the OR launch of qs (recs[a]: qs[a]'s record) into
// ol: its whole queries, then its tiled ones, each in qs's order, will
// be order[:nw] and order[nw:] (len(qs) entries; fillOrLaunch writes
// them), the tiled ones' candidate slots caps[:len(qs)-nw]. One pass over
// the records in chunks of orChunk on up to workers goroutines sums each
// chunk into sums (one per chunk, kept for the fill: each chunk's start),
// one serial pass over the chunks gives the starts and the totals: the
// two parts' sizes (an error matching cuda.ErrOutOfMemory past 2^31), the
// selection (Ding's max tree unless a tiled query's k or slots are too
// large for it, or Options say otherwise) and the upload layouts. The
// same plan for planBatch's pure-OR sets and the owner's OR launches
// (runOrTiled): it reads only Backend state fixed at New.
func (b *Backend) planOrLaunch(ol *orLaunch, qs []*prep, recs []orRec, order []*prep, caps []int, sums []orSplit, workers int) error {
	*ol = orLaunch{qs: qs, recs: recs, sums: sums}
	parallelWorkers(workers, len(recs), orChunk, func(lo, hi int) {
		for ; lo < hi; lo += orChunk { // one chunk (or all, on one goroutine)
			var s orSplit
			for a := lo; a < min(lo+orChunk, hi); a++ {
				s.add(&recs[a])
			}
			sums[lo/orChunk] = s
		}
	})
	var tot orSplit
	for c := range sums {
		sums[c], tot = tot, tot.plus(sums[c])
	}
	if nw := tot.w.nq; nw > 0 {
		ol.whole = orWholePlan{qs: order[:nw], nq: nw, nterms: tot.w.seg.toff, nres: tot.w.res}
		ol.whole.layout()
	}
	nt := tot.t.nq
	if nt == 0 {
		return nil
	}
	pl := &ol.tiled
	*pl = orTilePlan{qs: order[tot.w.nq:], nq: nt, fused: b.orFused(), caps: caps[:nt],
		tree: b.opt.orSelect != "radix" && (b.opt.orSelect == "tree" || !tot.big)}
	pl.tile, pl.ntiles, _ = b.tiling()
	s := tot.t.seg
	pl.nterms, pl.sumCap, pl.nblk, pl.dbytes, pl.fbytes, pl.nval = s.toff, s.coff, s.blk, s.d, s.f, s.v
	pl.npre, pl.npreVal, pl.npreBlk = s.pn, s.pv, s.pb
	pl.nres, pl.scratchWords = tot.t.res, tot.t.scr
	return b.tiledLayout(pl)
}

// orChunks is the chunks of planOrLaunch's passes over n records.
func orChunks(n int) int { return (n + orChunk - 1) / orChunk }

// fillOrLaunch writes ol's uploads (planOrLaunch; its parts' up and upAt
// set) in one pass over its queries, in chunks of orChunk on up to
// workers goroutines, each from its chunk's running sums: each query's
// place in the order, its QMeta, QTerms and scratch offset, and for a
// tiled query its candidate slots, OQuery, Segs and bitmap columns (with
// the OR tiles' bitmap df orDF). It reads only immutable Backend state:
// any goroutine may fill its own arena.
func (b *Backend) fillOrLaunch(ol *orLaunch, orDF uint32, workers int) {
	wl, tl := &ol.whole, &ol.tiled
	exact := b.bmExact() && !b.opt.orNoPrune
	var wMeta, tMeta, segs, oqs, cols, dvo, plist []uint32
	var wScr, tScr []uint64
	if wl.nq > 0 {
		wMeta, wScr = wl.up.u32(wl.upAt+wl.oMeta, kern.QMetaWords*wl.nq), wl.up.u64(wl.upAt+wl.oScr, wl.nq)
	}
	if tl.nq > 0 {
		at := tl.upAt
		tMeta, tScr = tl.up.u32(at+tl.oMeta, kern.QMetaWords*tl.nq), tl.up.u64(at+tl.oScr, tl.nq)
		segs, oqs = tl.up.u32(at+tl.oSegs, kern.SegWords*tl.nterms), tl.up.u32(at+tl.oOq, kern.OQueryWords*tl.nq)
		if tl.useBm {
			cols = tl.up.u32(at+tl.oCol, tl.nterms)
		}
		if tl.npre > 0 {
			dvo, plist = tl.up.u32(at+tl.oDvo, tl.nterms), tl.up.u32(at+tl.oPList, 2*tl.npre)
		}
	}
	c := b.orConsts()
	parallelWorkers(workers, len(ol.qs), orChunk, func(lo, hi int) {
		s := ol.sums[lo/orChunk]
		for a := lo; a < hi; a++ {
			// The record, not the prep: the preps are in the batch's
			// order, not the launch's (a cache miss each at 100,000
			// queries), and their engine.Query another.
			p, r := ol.qs[a], &ol.recs[a]
			if r.whole {
				i := s.w.nq
				wl.qs[i] = p
				putQuery(wl.up, wMeta, wScr, wl.upAt+wl.oTerms, i, r.terms, r.k, s.w.slot(r), exact)
			} else {
				i := s.t.nq
				tl.qs[i], tl.caps[i] = p, r.own.coff
				putQuery(tl.up, tMeta, tScr, tl.upAt+tl.oTerms, i, r.terms, r.k, s.t.slot(r), exact)
				b.putTiled(tl, &c, i, r.terms, s.t.seg, r.own.coff, segs, oqs, cols, dvo, plist, orDF)
			}
			s.add(r)
		}
	})
}

// orCut is the sums of a launch's budget: accumulator bytes and
// postings.
type orCut struct{ acc, post int64 }

func (c orCut) add(o orCut) orCut { return orCut{c.acc + o.acc, c.post + o.post} }

// planOrSet plans the pure-OR set set (planBatch: every query Mode == Or
// with a known term; the tiled strategy), whose records (planBatch's
// first pass) are recs and whose budget shares are wr (their sum tot),
// into bp: its launches (the cuts of runSet's accumulator budget) by
// planOrLaunch, each launch's queries in bp.order from lo on, their
// upload layouts from *size on (which it advances). It returns the
// launches' range in bp.orl, or ok false when a launch cannot be planned
// (the owner then runs the set as before). It reads no prep.
func (b *Backend) planOrSet(bp *batchPlan, set []*prep, recs []orRec, wr []workRec, tot orCut, lo, workers int, size *int) (l0, l1 int, ok bool) {
	maxPost := b.opt.OrPostings
	if b.orFused() {
		maxPost = math.MaxInt64
	}
	l0 = len(bp.orl)
	addLaunch := func(qs []*prep, rs []orRec, at int) bool {
		bp.orl = append(bp.orl, orLaunch{})
		ol := &bp.orl[len(bp.orl)-1]
		bp.caps = growBy(bp.caps, len(qs))
		bp.splits = growBy(bp.splits, orChunks(len(qs)))
		caps, sums := bp.caps[len(bp.caps)-len(qs):], bp.splits[len(bp.splits)-orChunks(len(qs)):]
		if b.planOrLaunch(ol, qs, rs, bp.order[at:at+len(qs)], caps, sums, workers) != nil {
			return false // the owner meets the error again and splits the set
		}
		if ol.whole.nq > 0 {
			ol.whole.upAt = (*size + 15) &^ 15
			*size = ol.whole.upAt + ol.whole.size
		}
		if ol.tiled.nq > 0 {
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
		c := wr[i].cut
		for i+n < len(set) && c.acc+wr[i+n].cut.acc <= b.opt.AccumulatorBytes && c.post+wr[i+n].cut.post <= maxPost {
			c = c.add(wr[i+n].cut)
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

// growBy returns s extended by n elements (contents undefined); when it
// must grow, the new array holds s's elements (slices of the old one stay
// valid, and keep what was written through them).
func growBy[T any](s []T, n int) []T {
	l := len(s)
	if cap(s)-l < n {
		t := make([]T, l, max(2*cap(s), l+n))
		copy(t, s)
		s = t
	}
	return s[:l+n]
}

// fillOrLaunches fills the uploads of the launches ls into bp.up.
func (b *Backend) fillOrLaunches(bp *batchPlan, ls []orLaunch, orDF uint32, workers int) {
	for i := range ls {
		ol := &ls[i]
		ol.whole.up, ol.tiled.up = &bp.up, &bp.up
		b.fillOrLaunch(ol, orDF, workers)
	}
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
// overflowed their slots (caps; rerun and converted on the owner).
func (b *Backend) finishOr(pr *pendingResults, ps *pendingSet, out []engine.Response) {
	a, qs, nq := &pr.down, ps.qs, len(ps.qs)
	cnts, tots := a.u32(ps.cnts, nq), a.u32(ps.tots, nq)
	keys := a.u64(ps.keys, ps.nres)
	offs := pr.kOffsets(qs)
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
