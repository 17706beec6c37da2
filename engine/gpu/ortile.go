package gpu

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/score"
)

// OR strategies (Options.Or).
const (
	// OrTiled: shared-memory accumulators per tile of documents, block-max
	// tile bounds, a running threshold on the k-th best score and a top-k
	// over the surviving candidates (cuda/kernels/query_ortile.cu).
	OrTiled = "tiled"
	// OrDense: Ding et al. WWW'09 §8's brute-force TAAT with a dense
	// accumulator of N floats per query (query_or.cu).
	OrDense = "dense"
)

const (
	// orSeeds is the number of tile ranks per query (those of largest
	// bound) evaluated in a first pass, to set the threshold. 16 rather
	// than 4: OR +2% (H100, 10M-document gen index, 10,000 TREC 2006
	// queries, runs 55-56 of docs/GPU-TESTS.md).
	orSeeds = 16
	// orTreeK is the largest k the max-tree selector serves (the radix
	// select serves larger k).
	orTreeK = 64
	// orItems is about how many work items the second accumulation pass
	// should have (runs of up to 32 ranks of one query each): short runs
	// keep the ranks of a query near their order (the threshold rises
	// sooner) and shorten the launch's tail. Same measurement: OR 20.2k
	// q/s with 2048 items, 21.9k with 8192, 22.7-22.8k with 32768.
	orItems = 32768
)

// orCapMin is the number of candidate slots per query up to which a query
// gets every slot it could use (min(k, T) x tiles: it cannot overflow);
// beyond, it gets max(orCapMin, 16k) and reruns with all of them if it
// overflows (a variable for the overflow test).
var orCapMin = 1 << 16

// orTileKernels caches the tiled OR kernels per context.
var orTileKernels sync.Map // *cuda.Context -> *kern.OrTileKernels

func (b *Backend) tileKernels() (*kern.OrTileKernels, error) {
	if v, ok := orTileKernels.Load(b.ctx); ok {
		return v.(*kern.OrTileKernels), nil
	}
	k, err := kern.LoadOrTileKernels(b.ctx)
	if err != nil {
		return nil, err
	}
	v, _ := orTileKernels.LoadOrStore(b.ctx, k)
	return v.(*kern.OrTileKernels), nil
}

// tiling returns the tile size and number of tiles for the index (ok false
// when N needs more than kern.OrMaxTiles tiles of kern.OrTileMax).
func (b *Backend) tiling() (tile, ntiles int, ok bool) {
	n := int(b.n)
	if n == 0 || n > kern.OrTileMax*kern.OrMaxTiles {
		return 0, 0, false
	}
	tile = kern.OrTileMax
	if b.opt.orTile > 0 {
		tile = min(b.opt.orTile, kern.OrTileMax)
	}
	tile = max(tile, (n+kern.OrMaxTiles-1)/kern.OrMaxTiles)
	return tile, (n + tile - 1) / tile, true
}

// orDense reports whether OR runs on dense accumulators: when asked to,
// or when the index has too many documents for the tiles.
func (b *Backend) orDense() bool {
	_, _, ok := b.tiling()
	return b.opt.Or == OrDense || !ok
}

// orFused reports whether the tiles decode bp128 blocks themselves
// (kern.OrTileKernels.AccumulateBP128) instead of reading lists the batch
// decoders decoded whole.
func (b *Backend) orFused() bool {
	return b.docCodec.ID() == compress.IDBP128 && b.freqCodec.ID() == compress.IDBP128 && !b.opt.orDecoded
}

// orConsts are what an OR query's slots, bytes and route depend on
// besides the query (the tiling, the codecs, the options fixed at New):
// read once per pass over a launch's queries (orRecs, gpuplan3) instead
// of once or twice per query through interface calls (orFused) and
// tiling.
type orConsts struct {
	tile, ntiles int
	fused        bool // orFused
	whole        bool // fused and not Options.orNoWhole: queries of few postings run whole
	pre          bool // fused and not Options.orNoPre: lists of few blocks are pre-decoded (predecoded)
}

// orConsts returns the Backend's OR constants.
func (b *Backend) orConsts() orConsts {
	c := orConsts{fused: b.orFused()}
	c.tile, c.ntiles, _ = b.tiling()
	c.whole = c.fused && !b.opt.orNoWhole
	c.pre = c.fused && !b.opt.orNoPre
	return c
}

// predecoded reports whether a tiled query's list of shape ti is decoded
// once per launch (kern.OrTileKernels.Predecode) instead of by the fused
// tiles: when it has fewer blocks than the query has tiles. Such a list's
// blocks span several tiles each, and every tile that runs decodes the
// blocks overlapping it whole: on GCIDE (16 tiles) 92% of the tiles'
// decoded blocks were of such lists and 75% of the postings they decoded
// lay outside the decoding tile; at 25M documents (3,052 tiles) a list of
// df 10,000 has 79 blocks, each decoded by about 39 tiles
// (docs/GPU-QUERY.md, "OR tiles: sparse lists decoded once").
func (c *orConsts) predecoded(ti *termInfo) bool {
	return c.pre && int(ti.nb) < c.ntiles
}

// preOf is the pre-decoded share of a tiled query's terms: lists,
// postings and blocks.
func (c *orConsts) preOf(terms []qterm) (n, v, blk int) {
	for j := range terms {
		if ti := &terms[j].ti; c.predecoded(ti) {
			n, v, blk = n+1, v+int(ti.df), blk+int(ti.nb)
		}
	}
	return n, v, blk
}

// capFull is the most candidates a tiled OR query can emit: k (at most
// T) per tile, and no more than its postings.
func (c *orConsts) capFull(p *prep) int {
	return int(min(int64(min(p.q.K, c.tile))*int64(c.ntiles), p.postings()))
}

// cap is the number of candidate slots of a tiled OR query: all it can
// use up to orCapMin (or after an overflow), else max(orCapMin, 16k).
func (c *orConsts) cap(p *prep) int {
	full := c.capFull(p)
	if p.orFull {
		return full
	}
	return min(full, max(orCapMin, 16*p.q.K))
}

// bytes is the device memory of a tiled OR query of k candidate slots: the bounds, order and k
// candidate slots (and, fused, the block ranges and TermMeta copies, and 8 bytes per posting
// of its pre-decoded lists).
func (c *orConsts) bytes(p *prep, k int) int64 {
	n := int64(8*c.ntiles+32) + 32*int64(k)
	if c.fused {
		n += int64(len(p.terms)) * (4*int64(c.ntiles+1) + 4*kern.TermMetaWords) // block ranges, TermMeta copies
		if c.pre {
			_, v, _ := c.preOf(p.terms)
			n += 8 * int64(v)
		}
	}
	return n
}

// runsWhole reports whether the OR query p runs whole in one CTA
// (kern.OrTileKernels.Whole, cuda/kernels/query_orwhole.cu) instead of on
// the tiles: fused bp128 tiles, at most kern.OrWholeTerms terms whose
// lists hold at most kern.OrWholeMax postings in all. On GCIDE with the
// TREC 2006 queries that is 68% of them; the tiles ran 15.4 tiles of 8192
// accumulators per query for 81 touched ones each and decoded every block
// 2.4 times (docs/GPU-QUERY.md, "OR tiles on real text").
func (c *orConsts) runsWhole(p *prep) bool {
	return c.whole && len(p.terms) <= kern.OrWholeTerms && p.postings() <= kern.OrWholeMax
}

// orQueryBytes is the device memory one OR query takes beyond its decoded
// lists: the dense accumulator row, or the tiled bounds, order and
// candidates.
func (b *Backend) orQueryBytes(p *prep) int64 {
	if b.orDense() {
		return int64(b.n) * 4
	}
	c := b.orConsts()
	return c.bytes(p, c.cap(p))
}

// bmExact reports whether the skip tables' stored block maxima are the
// index's current ones (its BM25 parameters are those it was built with).
func (b *Backend) bmExact() bool {
	return b.x.Params() == score.Params{K1: b.x.Meta.K1, B: b.x.Meta.B}
}

// orPer is the number of consecutive tile ranks per work item of the
// second accumulation pass over r ranks of nq queries.
func orPer(nq, r int) int {
	return max(1, min(32, nq*r/orItems))
}

// orPerItem is orPer, or the test knob Options.orPer.
func (b *Backend) orPerItem(nq, r int) int {
	if b.opt.orPer > 0 {
		return b.opt.orPer
	}
	return orPer(nq, r)
}

// runOrTiled evaluates the disjunctions of qs (every query has >= 1 known
// term) in one launch and writes their results: those of few postings
// whole, one CTA each (orwhole.go), the others with the tiled kernels of
// cuda/kernels/query_ortile.cu; queries whose candidates overflow their
// slots rerun with every slot they can use. Its records and chunk sums
// are its own (it serves the overflow reruns, inside runOrBudget's
// launches, which keep theirs in b.osc).
func (b *Backend) runOrTiled(mem *devMem, qs []*prep, out []engine.Response) error {
	recs := make([]orRec, len(qs))
	b.orRecs(recs, nil, qs, b.prepareWorkers())
	return b.runOrRecs(mem, qs, recs, make([]orSplit, orChunks(len(qs))), out)
}

// runOrBudget evaluates the tiled disjunctions of qs (the owner's: the OR
// part of AND+OR and mixed sets) in launches of runSet's budget
// (accumulator bytes, and postings up to maxPost: the greedy cuts, one
// launch when all fit) from their records (one pass over the preps on all
// cores; gpuplan3: the budget's own pass, orOneLaunch, and each launch's
// read them again).
func (b *Backend) runOrBudget(mem *devMem, qs []*prep, maxPost int64, out []engine.Response) error {
	sc := &b.osc
	sc.orRecs = slices.Grow(sc.orRecs[:0], len(qs))[:len(qs)]
	sc.cuts = slices.Grow(sc.cuts[:0], len(qs))[:len(qs)]
	recs, cuts := sc.orRecs, sc.cuts
	tot := b.orRecs(recs, cuts, qs, b.prepareWorkers())
	sc.splits = slices.Grow(sc.splits[:0], orChunks(len(qs)))
	if tot.acc <= b.opt.AccumulatorBytes && tot.post <= maxPost {
		return b.runOrRecs(mem, qs, recs, sc.splits[:orChunks(len(qs))], out)
	}
	for i := 0; i < len(qs); {
		n, c := 1, cuts[i]
		for i+n < len(qs) && c.acc+cuts[i+n].acc <= b.opt.AccumulatorBytes && c.post+cuts[i+n].post <= maxPost {
			c = c.add(cuts[i+n])
			n++
		}
		if err := b.runOrRecs(mem, qs[i:i+n], recs[i:i+n], sc.splits[:orChunks(n)], out); err != nil {
			return err
		}
		i += n
	}
	return nil
}

// runOrRecs runs the OR launch of qs, whose records are recs, on the
// owner: planned and filled as planBatch does its pure-OR sets
// (planOrLaunch, fillOrLaunch; sums: the chunk sums' scratch) into the
// owner's upload arena, then run by runOrPlanned, the downloads left in
// b.orPend when set.
func (b *Backend) runOrRecs(mem *devMem, qs []*prep, recs []orRec, sums []orSplit, out []engine.Response) error {
	workers := b.prepareWorkers()
	// The order and slots are the launch's own: a pending download
	// (b.orPend) keeps them until the batch's goroutine converts it.
	ls := make([]orLaunch, 1)
	ol := &ls[0]
	if err := b.planOrLaunch(ol, qs, recs, make([]*prep, len(qs)), make([]int, len(qs)), sums, workers); err != nil {
		return err
	}
	var l layout
	ol.whole.upAt, ol.tiled.upAt = l.add(ol.whole.size), l.add(ol.tiled.size)
	if err := b.up.reset(l.size); err != nil {
		return err
	}
	b.up.take(l.size)
	ol.whole.up, ol.tiled.up = &b.up, &b.up
	var orDF uint32 // the OR tiles' bitmap df
	if ol.tiled.useBm {
		orDF = b.orMinDF()
	}
	b.fillOrLaunch(ol, orDF, workers)
	return b.runOrPlanned(mem, ls, b.orPend, out)
}

// orTileRun is the state of one tiled OR launch (runOrPlanned), from its
// upload to its download.
type orTileRun struct {
	orTilePlan
	b    *Backend
	mem  *devMem
	ok   *kern.OrTileKernels
	pend *pendingResults // nil: the download is converted on the owner

	base                            cuda.DevicePtr
	pMeta, pTerms, pSegs, pScr, pOq cuda.DevicePtr

	ctr, ub, order, theta, cnt, cdoc, cscore, ccnt, part *cuda.Buffer
	pRng, pQtm                                           cuda.DevicePtr // fused: block ranges, TermMeta copies
	pre                                                  kern.OrPre     // fused: the pre-decoded lists
	st                                                   statusSlots
	res, cntOut, total                                   *cuda.Buffer
}

// send copies the filled plan (r.up at r.upAt) to a new device buffer.
func (r *orTileRun) send() error {
	dev, err := r.b.uploadFrom(r.mem, r.up, r.upAt, r.size, r.size)
	if err != nil {
		return err
	}
	r.base = dev.Ptr()
	r.pMeta, r.pTerms, r.pSegs, r.pScr, r.pOq = r.at(r.oMeta), r.at(r.oTerms), r.at(r.oSegs), r.at(r.oScr), r.at(r.oOq)
	return nil
}

// at is the device address of upload offset o.
func (r *orTileRun) at(o int) cuda.DevicePtr { return r.base + cuda.DevicePtr(o) }

// alloc takes the counters, tile bounds and order, thresholds, candidate
// slots and (fused) block ranges and TermMeta copies, and initializes the
// counters, thresholds (none) and candidate counts.
func (r *orTileRun) alloc() error {
	b, s, nq, mem := r.b, r.b.stream, r.nq, r.mem
	var stBuf *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&r.ctr, &stBuf, &r.ub, &r.order, &r.theta, &r.cnt, &r.cdoc, &r.cscore, &r.ccnt, &r.part},
		4*kern.OrCounters, 16, 4*nq*r.ntiles, 4*nq*r.ntiles, 8*nq, 4*nq, 4*r.sumCap, 4*r.sumCap, 4*(nq+1),
		4*(kern.ScanParts(nq)+1)); err != nil {
		return err
	}
	r.st = statusSlots{buf: stBuf}
	if r.fused {
		var rng, qtm *cuda.Buffer
		if err := mem.gets([]**cuda.Buffer{&rng, &qtm}, 4*r.nterms*(r.ntiles+1), 4*kern.TermMetaWords*r.nterms); err != nil {
			return err
		}
		r.pRng, r.pQtm = rng.Ptr(), qtm.Ptr()
		if r.npre > 0 {
			var dec *cuda.Buffer
			if err := mem.gets([]**cuda.Buffer{&dec}, 8*r.npreVal); err != nil {
				return err
			}
			r.pre = kern.OrPre{NPre: r.npre, NBlk: r.npreBlk, PList: r.at(r.oPList), Dvo: r.at(r.oDvo), Dec: dec.Ptr()}
		}
	}
	t := b.tm.start(s)
	for _, f := range []struct {
		buf *cuda.Buffer
		v   uint32
		n   int
	}{{r.ctr, 0, kern.OrCounters}, {r.theta, math.MaxUint32, 2 * nq}, {r.cnt, 0, nq}} {
		if err := s.Fill32(f.buf, 0, f.v, f.n); err != nil {
			return err
		}
	}
	b.tm.stop(s, t, phScore)
	return nil
}

// accumulate decodes every list whole and checks it (unless fused), then
// runs the tile bounds and order, and the two accumulation passes: the
// seed ranks (a first threshold per query), then the rest.
func (r *orTileRun) accumulate() error {
	b, s, mem := r.b, r.b.stream, r.mem
	var d *decodeBufs
	if !r.fused {
		var err error
		if d, err = allocDecode(mem, r.nblk, r.dbytes, r.fbytes, r.nval); err != nil {
			return err
		}
		if err := b.decodeLists(d, r.pSegs, r.nterms, r.nblk, r.st.pair(b)); err != nil {
			return err
		}
	}
	t := b.tm.start(s)
	if !r.fused {
		if err := r.ok.Check(s, r.pSegs, r.nterms, d.docs.Ptr(), r.nval, b.n, r.ctr.Ptr()); err != nil {
			return err
		}
		b.prof.Launches++
	}
	if err := r.ok.Bounds(s, r.nq, r.pMeta, r.pOq, r.pSegs, r.pTerms, b.terms.Ptr(), b.post.Ptr(), b.bmExact(), r.tile, r.ntiles,
		r.ub.Ptr(), r.order.Ptr(), r.pRng, r.pQtm); err != nil {
		return err
	}
	if r.pre.NBlk > 0 {
		if err := r.ok.Predecode(s, r.pre, r.pSegs, r.pTerms, b.terms.Ptr(), b.post.Ptr(), b.bs, b.norms.Ptr(), b.k1p1, b.n,
			r.tile, r.ntiles, r.pRng, r.ctr.Ptr()); err != nil {
			return err
		}
		b.prof.Launches++
	}
	if err := r.passes(d); err != nil {
		return err
	}
	b.tm.stop(s, t, phScore)
	b.prof.Launches += 3
	if d != nil {
		mem.retire(d.all()...)
	}
	return nil
}

// passes runs the two accumulation passes, fused (with the device bitmaps
// when in use) or over the lists decoded into d.
func (r *orTileRun) passes(d *decodeBufs) error {
	b, s := r.b, r.b.stream
	var bm kern.AndBitmaps
	if r.useBm {
		bm = b.bm.dev
		bm.Col = r.at(r.oCol)
	}
	nq, ntiles, tile := r.nq, r.ntiles, r.tile
	seeds := min(orSeeds, ntiles)
	terms, post, norms := b.terms.Ptr(), b.post.Ptr(), b.norms.Ptr()
	for _, ps := range []kern.OrPass{
		{NQ: nq, NTiles: ntiles, Tile: tile, Order: r.order.Ptr(), R0: 0, R1: seeds, Per: 1, Dense: b.opt.orDense},
		{NQ: nq, NTiles: ntiles, Tile: tile, Order: r.order.Ptr(), R0: seeds, R1: ntiles, Per: b.orPerItem(nq, ntiles-seeds),
			Dense: b.opt.orDense},
	} {
		var err error
		if r.fused {
			err = r.ok.AccumulateBP128(s, ps, r.pMeta, r.pOq, r.pSegs, r.pTerms, terms, norms, b.n, b.k1p1, post, b.bs, r.pRng,
				r.pQtm, bm, r.pre, r.ctr.Ptr(), r.ub.Ptr(), r.theta.Ptr(), r.cnt.Ptr(), r.cdoc.Ptr(), r.cscore.Ptr())
		} else {
			err = r.ok.Accumulate(s, ps, r.pMeta, r.pOq, r.pSegs, r.pTerms, terms, norms, b.n, b.k1p1, d.docs.Ptr(), d.freqs.Ptr(),
				r.ctr.Ptr(), r.ub.Ptr(), r.theta.Ptr(), r.cnt.Ptr(), r.cdoc.Ptr(), r.cscore.Ptr())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// selectTopK packs the candidates by query (clamped counts, their scan,
// compaction; empty slots get query ID ^0) and selects each query's top k
// with Ding's max tree or the radix top-k.
func (r *orTileRun) selectTopK() error {
	b, s, nq, sumCap := r.b, r.b.stream, r.nq, r.sumCap
	var ndoc, nscore, ncq, scratch *cuda.Buffer
	if r.tree {
		r.scratchWords = sumCap // the max tree's keys
	}
	if err := r.mem.gets([]**cuda.Buffer{&ndoc, &nscore, &ncq, &r.res, &r.cntOut, &r.total, &scratch},
		4*sumCap, 4*sumCap, 4*sumCap, 8*r.nres, 4*nq, 4*nq, 8*r.scratchWords); err != nil {
		return err
	}
	t := b.tm.start(s)
	if err := s.Fill32(ncq, 0, math.MaxUint32, sumCap); err != nil {
		return err
	}
	if err := r.ok.Clamp(s, nq, r.pOq, r.cnt.Ptr(), r.ccnt.Ptr()); err != nil {
		return err
	}
	if err := b.qk.ScanU32(s, r.ccnt.Ptr(), r.ccnt.Ptr(), r.part.Ptr(), nq); err != nil {
		return err
	}
	if err := r.ok.Compact(s, nq, r.pOq, r.ccnt.Ptr(), r.cdoc.Ptr(), r.cscore.Ptr(), ndoc.Ptr(), nscore.Ptr(), ncq.Ptr()); err != nil {
		return err
	}
	var err error
	if r.tree {
		err = r.ok.MaxTree(s, nq, r.pMeta, ndoc.Ptr(), nscore.Ptr(), ncq.Ptr(), sumCap, r.pOq, scratch.Ptr(), r.res.Ptr(),
			r.cntOut.Ptr(), r.total.Ptr())
	} else {
		err = b.qk.TopK(s, false, nq, r.pMeta, ndoc.Ptr(), nscore.Ptr(), ncq.Ptr(), sumCap, 0, b.n, r.res.Ptr(),
			r.cntOut.Ptr(), r.total.Ptr(), scratch.Ptr(), r.pScr)
	}
	if err != nil {
		return err
	}
	b.tm.stop(s, t, phTopK)
	// Kernels: Clamp, the scan's reduce and its ScanLaunches, Compact, the
	// top-k (the fill is a driver memset, not a launch).
	b.prof.Launches += 4 + int64(kern.ScanLaunches(nq))
	return nil
}

// download fetches the counts, counters, status slots and result keys,
// turns corrupt-data counters into errors, adds the work counters to the
// profile and writes the results of the queries that did not overflow
// their candidate slots; it returns those that did.
func (r *orTileRun) download(out []engine.Response) ([]*prep, error) {
	b, nq, qs := r.b, r.nq, r.qs
	dl := []*download{{src: r.cntOut, n: 4 * nq}, {src: r.cnt, n: 4 * nq}, {src: r.ctr, n: 4 * kern.OrCounters},
		{src: r.st.buf, n: 8 * r.st.n}, {src: r.res, n: 8 * r.nres}}
	dn, err := b.fetchTo(r.mem, r.pend, dl, out)
	if err != nil {
		return nil, err
	}
	cnts, emitted := dn.u32(dl[0].at, nq), dn.u32(dl[1].at, nq)
	ctrs := dn.u32(dl[2].at, kern.OrCounters)
	if err := b.corruptError(ctrs[kern.QueryErrDocs], dn.u64(dl[3].at, r.st.n), r.st.codecs); err != nil {
		return nil, err
	}
	if c := ctrs[kern.AndErrFreqs]; c != 0 {
		return nil, fmt.Errorf("%w: %d bp128 frequency blocks are corrupt", index.ErrCorrupt, c)
	}
	b.prof.OrTiles += int64(nq) * int64(r.ntiles)
	b.prof.OrTilesRun += int64(ctrs[kern.OrCntTiles])
	b.prof.OrBlocks += int64(ctrs[kern.OrCntBlocks])
	b.prof.OrSkipped += int64(ctrs[kern.OrCntSkipped])
	b.prof.OrSelected += int64(ctrs[kern.OrCntSelect])
	b.prof.OrEmitted += int64(ctrs[kern.OrCntEmit])
	b.prof.OrLookups += int64(ctrs[kern.OrCntLookups])
	b.prof.OrPreLists += int64(r.npre)
	b.prof.OrPreBlocks += int64(ctrs[kern.OrCntPre])
	if r.pend != nil {
		// Converted by the batch's goroutine (finishPending); only the
		// overflowed queries, rerun on the owner, are picked here.
		var over []*prep
		for a, e := range emitted {
			if int(e) > r.caps[a] {
				over = append(over, qs[a])
			}
		}
		r.pend.sets = append(r.pend.sets, pendingSet{kind: pendOr, qs: qs, cnts: dl[0].at, tots: dl[1].at, keys: dl[4].at,
			nres: r.nres, caps: r.caps})
		return over, nil
	}
	keys := dn.u64(dl[4].at, r.nres)
	offs, err := resultOffsets(qs, cnts)
	if err != nil {
		return nil, err
	}
	var over []*prep
	for a, p := range qs {
		if int(emitted[a]) > r.caps[a] {
			over = append(over, p)
		}
	}
	b.convert(nq, func(lo, hi int) {
		for a := lo; a < hi; a++ {
			p := qs[a]
			if int(emitted[a]) > r.caps[a] {
				continue
			}
			p.st.OrAlgo = OrGPU
			for _, t := range p.terms {
				p.st.BlocksDecoded += int64(t.ti.nb)
				p.st.PostingsDecoded += int64(t.df)
			}
			p.st.Candidates += int64(emitted[a])
			out[p.i].Results = results(out[p.i].Results[:0], keys[offs[a]:offs[a]+int(cnts[a])])
		}
	})
	return over, nil
}

// rerunOverflowed reruns the queries whose candidates overflowed their
// slots with every candidate slot they can use (orCapFull: they cannot
// overflow again), as many at a time as the accumulator budget allows.
func (b *Backend) rerunOverflowed(mem *devMem, over []*prep, out []engine.Response) error {
	for _, p := range over {
		if p.orFull {
			return fmt.Errorf("gpu: BUG: OR query %q emitted more candidates than it has slots for", p.q.ID)
		}
		p.orFull = true
	}
	for len(over) > 0 {
		n, bytes := 1, b.orQueryBytes(over[0])
		for n < len(over) && bytes+b.orQueryBytes(over[n]) <= b.opt.AccumulatorBytes {
			bytes += b.orQueryBytes(over[n])
			n++
		}
		if err := b.runOrTiled(mem, over[:n], out); err != nil {
			return err
		}
		over = over[n:]
	}
	return nil
}
