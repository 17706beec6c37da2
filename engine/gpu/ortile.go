package gpu

import (
	"fmt"
	"math"
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
var orTileKernels sync.Map // *cuda.Context -> *cuda.OrTileKernels

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
// when N needs more than cuda.OrMaxTiles tiles of cuda.OrTileMax).
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
// (cuda.OrTileKernels.AccumulateBP128) instead of reading lists the batch
// decoders decoded whole.
func (b *Backend) orFused() bool {
	return b.docCodec.ID() == compress.IDBP128 && b.freqCodec.ID() == compress.IDBP128 && !b.opt.orDecoded
}

// orCapFull is the most candidates a tiled OR query can emit: k (at most
// T) per tile, and no more than its postings.
func (b *Backend) orCapFull(p *prep) int {
	tile, ntiles, _ := b.tiling()
	return int(min(int64(min(p.q.K, tile))*int64(ntiles), p.postings()))
}

// orCap is the number of candidate slots of a tiled OR query.
func (b *Backend) orCap(p *prep) int {
	full := b.orCapFull(p)
	if p.orFull {
		return full
	}
	return min(full, max(orCapMin, 16*p.q.K))
}

// orQueryBytes is the device memory one OR query takes beyond its decoded
// lists: the dense accumulator row, or the tiled bounds, order and
// candidates.
func (b *Backend) orQueryBytes(p *prep) int64 {
	if b.orDense() {
		return int64(b.n) * 4
	}
	_, ntiles, _ := b.tiling()
	n := int64(8*ntiles+32) + 32*int64(b.orCap(p))
	if b.orFused() {
		n += int64(len(p.terms)) * (4*int64(ntiles+1) + 4*kern.TermMetaWords) // block ranges, TermMeta copies
	}
	return n
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
// term) with the tiled kernels of cuda/kernels/query_ortile.cu and writes
// their results; queries whose candidates overflow their slots rerun with
// every slot they can use.
func (b *Backend) runOrTiled(mem *devMem, qs []*prep, out []engine.Response) error {
	s := b.stream
	qk := b.qk
	ok, err := b.tileKernels()
	if err != nil {
		return err
	}
	fused := b.orFused()
	tile, ntiles, _ := b.tiling()
	nq := len(qs)
	var nterms, nblk, dbytes, fbytes, nval, sumCap int
	tree := b.opt.orSelect != "radix"
	for _, p := range qs {
		nterms += len(p.terms)
		for _, t := range p.terms {
			ti := b.info[t.id]
			nblk += int(ti.nb)
			dbytes += int(ti.dlen)
			fbytes += int(ti.flen)
			nval += int(ti.df)
		}
		c := b.orCap(p)
		sumCap += c
		if b.opt.orSelect != "tree" && (p.q.K > orTreeK || c > kern.OrTreeItems) {
			tree = false
		}
	}
	if (!fused && (nval > math.MaxInt32/2 || dbytes > math.MaxInt32 || fbytes > math.MaxInt32)) ||
		sumCap > math.MaxInt32/2 || int64(nq)*int64(ntiles) > math.MaxInt32/2 {
		return fmt.Errorf("%w: OR launch of %d postings", cuda.ErrOutOfMemory, nval)
	}
	// The fused tiles' device bitmaps: the columns per query term (none:
	// zero).
	useBm := fused && b.bm != nil
	// Uploads: QMeta | QTerm | Seg (every list) | scratch offsets | OQuery
	// | columns (useBm).
	var lay layout
	oMeta, oTerms, oSegs, oScr, oOq := lay.add(16*nq), lay.add(16*nterms), lay.add(40*nterms), lay.add(8*nq), lay.add(16*nq)
	oCol := -1
	if useBm {
		oCol = lay.add(4 * nterms)
	}
	if err := b.up.reset(lay.size); err != nil {
		return err
	}
	b.up.take(lay.size)
	nres, scratchWords := b.fillQueries(qs, oMeta, oTerms, oScr)
	segs := b.up.u32(oSegs, kern.SegWords*nterms)
	oqs := b.up.u32(oOq, kern.OQueryWords*nq)
	caps := make([]int, nq)
	var cols []uint32
	var orDF uint32 // the OR tiles' bitmap df (b.orMinDF)
	if useBm {
		cols, orDF = b.up.u32(oCol, nterms), b.orMinDF()
	}
	var d0, f0, v0, blk0, toff, coff int
	for a, p := range qs {
		caps[a] = b.orCap(p)
		kern.PutOQuery(oqs[kern.OQueryWords*a:], uint32(toff), uint32(caps[a]), uint32(coff))
		coff += caps[a]
		for j, t := range p.terms {
			ti := b.info[t.id]
			kern.PutSeg(segs[kern.SegWords*(toff+j):], uint64(d0), uint64(f0), uint64(v0), uint32(t.id), uint32(blk0),
				uint32(a), uint32(toff+j))
			if useBm {
				cols[toff+j] = b.column(t.id, orDF)
			}
			d0, f0, v0, blk0 = d0+int(ti.dlen), f0+int(ti.flen), v0+int(ti.df), blk0+int(ti.nb)
		}
		toff += len(p.terms)
	}
	base, err := b.upload(mem, lay.size)
	if err != nil {
		return err
	}
	at := func(o int) cuda.DevicePtr { return base + cuda.DevicePtr(o) }
	pMeta, pTerms, pSegs, pScr, pOq := at(oMeta), at(oTerms), at(oSegs), at(oScr), at(oOq)

	var ctr, stBuf, ub, order, theta, cnt, cdoc, cscore, ccnt, part *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&ctr, &stBuf, &ub, &order, &theta, &cnt, &cdoc, &cscore, &ccnt, &part},
		4*kern.OrCounters, 16, 4*nq*ntiles, 4*nq*ntiles, 8*nq, 4*nq, 4*sumCap, 4*sumCap, 4*(nq+1),
		4*(kern.ScanParts(nq)+1)); err != nil {
		return err
	}
	var rng, qtm *cuda.Buffer
	var pRng, pQtm cuda.DevicePtr
	if fused {
		if err := mem.gets([]**cuda.Buffer{&rng, &qtm}, 4*nterms*(ntiles+1), 4*kern.TermMetaWords*nterms); err != nil {
			return err
		}
		pRng, pQtm = rng.Ptr(), qtm.Ptr()
	}
	t := b.tm.start(s)
	for _, f := range []struct {
		buf *cuda.Buffer
		v   uint32
		n   int
	}{{ctr, 0, kern.OrCounters}, {theta, math.MaxUint32, 2 * nq}, {cnt, 0, nq}} {
		if err := s.Fill32(f.buf, 0, f.v, f.n); err != nil {
			return err
		}
	}
	b.tm.stop(s, t, phScore)
	st := statusSlots{buf: stBuf}
	terms, post, norms := b.terms.Ptr(), b.post.Ptr(), b.norms.Ptr()
	var d *decodeBufs
	if !fused {
		if d, err = allocDecode(mem, nblk, dbytes, fbytes, nval); err != nil {
			return err
		}
		if err := b.decodeLists(d, pSegs, nterms, nblk, st.pair(b)); err != nil {
			return err
		}
	}
	t = b.tm.start(s)
	if !fused {
		if err := ok.Check(s, pSegs, nterms, d.docs.Ptr(), nval, b.n, ctr.Ptr()); err != nil {
			return err
		}
		b.prof.Launches++
	}
	if err := ok.Bounds(s, nq, pMeta, pOq, pSegs, pTerms, terms, post, b.bmExact(), tile, ntiles, ub.Ptr(),
		order.Ptr(), pRng, pQtm); err != nil {
		return err
	}
	var bm kern.AndBitmaps
	if useBm {
		bm = b.bm.dev
		bm.Col = at(oCol)
	}
	seeds := min(orSeeds, ntiles)
	for _, ps := range []kern.OrPass{
		{NQ: nq, NTiles: ntiles, Tile: tile, Order: order.Ptr(), R0: 0, R1: seeds, Per: 1},
		{NQ: nq, NTiles: ntiles, Tile: tile, Order: order.Ptr(), R0: seeds, R1: ntiles, Per: b.orPerItem(nq, ntiles-seeds)},
	} {
		if fused {
			err = ok.AccumulateBP128(s, ps, pMeta, pOq, pSegs, pTerms, terms, norms, b.n, b.k1p1, post, b.bs, pRng, pQtm, bm,
				ctr.Ptr(), ub.Ptr(), theta.Ptr(), cnt.Ptr(), cdoc.Ptr(), cscore.Ptr())
		} else {
			err = ok.Accumulate(s, ps, pMeta, pOq, pSegs, pTerms, terms, norms, b.n, b.k1p1, d.docs.Ptr(), d.freqs.Ptr(),
				ctr.Ptr(), ub.Ptr(), theta.Ptr(), cnt.Ptr(), cdoc.Ptr(), cscore.Ptr())
		}
		if err != nil {
			return err
		}
	}
	b.tm.stop(s, t, phScore)
	b.prof.Launches += 3
	if d != nil {
		mem.retire(d.all()...)
	}
	// Pack the candidates by query and select.
	var ndoc, nscore, ncq, res, cntOut, total, scratch *cuda.Buffer
	if tree {
		scratchWords = sumCap // the max tree's keys
	}
	if err := mem.gets([]**cuda.Buffer{&ndoc, &nscore, &ncq, &res, &cntOut, &total, &scratch},
		4*sumCap, 4*sumCap, 4*sumCap, 8*nres, 4*nq, 4*nq, 8*scratchWords); err != nil {
		return err
	}
	t = b.tm.start(s)
	if err := s.Fill32(ncq, 0, math.MaxUint32, sumCap); err != nil {
		return err
	}
	if err := ok.Clamp(s, nq, pOq, cnt.Ptr(), ccnt.Ptr()); err != nil {
		return err
	}
	if err := qk.ScanU32(s, ccnt.Ptr(), ccnt.Ptr(), part.Ptr(), nq); err != nil {
		return err
	}
	if err := ok.Compact(s, nq, pOq, ccnt.Ptr(), cdoc.Ptr(), cscore.Ptr(), ndoc.Ptr(), nscore.Ptr(), ncq.Ptr()); err != nil {
		return err
	}
	if tree {
		err = ok.MaxTree(s, nq, pMeta, ndoc.Ptr(), nscore.Ptr(), ncq.Ptr(), sumCap, pOq, scratch.Ptr(), res.Ptr(),
			cntOut.Ptr(), total.Ptr())
	} else {
		err = qk.TopK(s, false, nq, pMeta, ndoc.Ptr(), nscore.Ptr(), ncq.Ptr(), sumCap, 0, b.n, res.Ptr(),
			cntOut.Ptr(), total.Ptr(), scratch.Ptr(), pScr)
	}
	if err != nil {
		return err
	}
	b.tm.stop(s, t, phTopK)
	b.prof.Launches += 7
	dl := []*download{{src: cntOut, n: 4 * nq}, {src: cnt, n: 4 * nq}, {src: ctr, n: 4 * kern.OrCounters},
		{src: st.buf, n: 8 * st.n}, {src: res, n: 8 * nres}}
	if err := b.fetch(mem, dl); err != nil {
		return err
	}
	cnts, emitted := b.down.u32(dl[0].at, nq), b.down.u32(dl[1].at, nq)
	ctrs := b.down.u32(dl[2].at, kern.OrCounters)
	if err := b.corruptError(ctrs[kern.QueryErrDocs], b.down.u64(dl[3].at, st.n), st.codecs); err != nil {
		return err
	}
	if c := ctrs[kern.AndErrFreqs]; c != 0 {
		return fmt.Errorf("%w: %d bp128 frequency blocks are corrupt", index.ErrCorrupt, c)
	}
	b.prof.OrTiles += int64(nq) * int64(ntiles)
	b.prof.OrTilesRun += int64(ctrs[kern.OrCntTiles])
	b.prof.OrBlocks += int64(ctrs[kern.OrCntBlocks])
	b.prof.OrSkipped += int64(ctrs[kern.OrCntSkipped])
	b.prof.OrSelected += int64(ctrs[kern.OrCntSelect])
	b.prof.OrEmitted += int64(ctrs[kern.OrCntEmit])
	b.prof.OrLookups += int64(ctrs[kern.OrCntLookups])
	keys := b.down.u64(dl[4].at, nres)
	offs, err := resultOffsets(qs, cnts)
	if err != nil {
		return err
	}
	var over []*prep
	for a, p := range qs {
		if int(emitted[a]) > caps[a] {
			over = append(over, p)
		}
	}
	parallel(nq, func(lo, hi int) {
		for a := lo; a < hi; a++ {
			p := qs[a]
			if int(emitted[a]) > caps[a] {
				continue
			}
			p.st.OrAlgo = OrGPU
			for _, t := range p.terms {
				p.st.BlocksDecoded += int64(b.info[t.id].nb)
				p.st.PostingsDecoded += int64(t.df)
			}
			p.st.Candidates += int64(emitted[a])
			out[p.i].Results = results(out[p.i].Results[:0], keys[offs[a]:offs[a]+int(cnts[a])])
		}
	})
	// Overflowed queries rerun with every candidate slot they can use
	// (orCapFull: they cannot overflow again), as many at a time as the
	// accumulator budget allows.
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
