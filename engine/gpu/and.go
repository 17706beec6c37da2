package gpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// runAnd evaluates the conjunctions of qs (every query has >= 1 term, all
// known) and writes the results of the queries that end there; AndOr
// queries with fewer than K results get needOr.
//
// Per step j >= 1 (cuda/kernels/query_and_step.cu) the host waits once, for
// the selected blocks' totals that the decoders need (and, in the same
// copy, the previous step's candidate count); otherwise the count stays on
// the device: grids are sized by the previous exact count and the slots
// past the real one hold cuda.AndNone. Launches per step: locate (block
// selection, by binary search, in LR ranges with "lr", or Parallel Merge
// Find, with the heads and the scan's tile sums) + 2 scan, list of blocks +
// gather + docID decoder (+ frequency decoder unless bp128 slots are read
// directly), match + 2 scan, compact. The queries are ordered by descending step count so that
// those without a j-th step are a suffix that the kernels skip cheaply.
//
// Bitmap terms (bitmap.go): when a query's densest terms have device
// bitmaps in use, a filter (qp_and_filter + 2 scan + compact) drops the
// candidates outside their lists right after step 0; with bp128
// frequencies those terms take no step, and qp_and_bmscore adds their
// scores by rank after the last step (their step count is the query's
// terms less its bitmap terms).
func (b *Backend) runAnd(mem *devMem, qs []*prep, out []engine.Response) error {
	s := b.stream
	qk := b.qk
	st8 := &b.and
	if st8.k == nil {
		k, err := kern.LoadAndKernels(qk)
		if err != nil {
			return fmt.Errorf("gpu: %w", err)
		}
		st8.k = k
	}
	ak := st8.k
	randomFreqs := b.freqCodec.ID() == compress.IDBP128 && !st8.decodeFreqs
	// Bitmap terms (bitmap.go): the filter drops the candidates outside
	// their lists; with bp128 frequencies they take no list step, their
	// scores are added by rank after the steps.
	anyBM := false
	for _, p := range qs {
		p.bm = b.bitmapTerms(p)
		p.st.AndBitmaps = p.bm
		p.steps = len(p.terms)
		if randomFreqs {
			p.steps -= p.bm
		}
		anyBM = anyBM || p.bm > 0
	}
	// Descending list steps (stable): the queries with a j-th step are the
	// first active[j].
	st8.order = append(st8.order[:0], qs...)
	slices.SortStableFunc(st8.order, func(x, y *prep) int { return y.steps - x.steps })
	qs = st8.order
	nq := len(qs)
	var nterms, maxM, nblk, dbytes, fbytes, nval int
	for _, p := range qs {
		nterms += len(p.terms)
		maxM = max(maxM, p.steps)
		ti := b.info[p.terms[0].id]
		nblk += int(ti.nb)
		dbytes += int(ti.dlen)
		fbytes += int(ti.flen)
		nval += int(ti.df)
	}
	if nval > math.MaxInt32/2 || dbytes > math.MaxInt32 || fbytes > math.MaxInt32 {
		return fmt.Errorf("%w: launch set of %d postings", cuda.ErrOutOfMemory, nval)
	}
	st8.active = st8.active[:0]
	for j, a := 0, nq; j < maxM; j++ {
		for a > 0 && qs[a-1].steps <= j {
			a--
		}
		st8.active = append(st8.active, a)
	}
	// Uploads: QMeta | QTerm | Seg (the shortest lists) | scratch offsets
	// (| the LR models of the QTerms' skip tables, for the "lr" search).
	useLR := st8.levels == andSearchLR
	var lay layout
	oMeta, oTerms, oSegs, oScr := lay.add(16*nq), lay.add(16*nterms), lay.add(40*nq), lay.add(8*nq)
	oLR := 0
	if useLR {
		oLR = lay.add(4 * kern.AndLRWords * nterms)
	}
	if err := b.up.reset(lay.size); err != nil {
		return err
	}
	b.up.take(lay.size)
	nres, scratchWords := b.fillQueries(qs, oMeta, oTerms, oScr)
	if useLR {
		lr := b.up.u32(oLR, kern.AndLRWords*nterms)
		i := 0
		for _, p := range qs {
			for j, t := range p.terms {
				if j > 0 { // term 0's list is decoded whole, never searched
					m, err := b.lrModel(t.id)
					if err != nil {
						return err
					}
					copy(lr[kern.AndLRWords*i:], m[:])
				}
				i++
			}
		}
	}
	segs := b.up.u32(oSegs, kern.SegWords*nq)
	var d0, f0, v0, blk0, toff int
	for a, p := range qs {
		t := p.terms[0]
		ti := b.info[t.id]
		kern.PutSeg(segs[kern.SegWords*a:], uint64(d0), uint64(f0), uint64(v0), uint32(t.id), uint32(blk0), uint32(a), uint32(toff))
		d0, f0, v0, blk0 = d0+int(ti.dlen), f0+int(ti.flen), v0+int(ti.df), blk0+int(ti.nb)
		toff += len(p.terms)
	}
	base, err := b.upload(mem, lay.size)
	if err != nil {
		return err
	}
	pMeta, pTerms, pSegs, pScr := base+cuda.DevicePtr(oMeta), base+cuda.DevicePtr(oTerms), base+cuda.DevicePtr(oSegs), base+cuda.DevicePtr(oScr)
	var pLR cuda.DevicePtr
	levels := st8.levels
	if useLR {
		pLR, levels = base+cuda.DevicePtr(oLR), 0
	}
	terms, post, norms := b.terms.Ptr(), b.post.Ptr(), b.norms.Ptr()

	// Counters: errors (4 uint32) | blocks per query | postings per query.
	ctr, err := mem.get(16 + 8*nq)
	if err != nil {
		return err
	}
	if err := s.Fill32(ctr, 0, 0, 4+2*nq); err != nil {
		return err
	}
	pErr, pBlocks, pPost := ctr.Ptr(), ctr.Ptr()+16, ctr.Ptr()+16+cuda.DevicePtr(4*nq)
	st := statusSlots{}
	if st.buf, err = mem.get(16 * maxM); err != nil {
		return err
	}

	// Step 0: decode the shortest lists; candidates scored with term 0.
	d, err := allocDecode(mem, nblk, dbytes, fbytes, nval)
	if err != nil {
		return err
	}
	if err := b.decodeLists(d, pSegs, nq, nblk, st.pair(b)); err != nil {
		return err
	}
	n := nval
	var cdoc, cscore, cq *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&cdoc, &cscore, &cq}, 4*n, 4*n, 4*n); err != nil {
		return err
	}
	t := b.tm.start(s)
	if err := qk.AndInit(s, pSegs, nq, pTerms, norms, b.n, b.k1p1, d.docs.Ptr(), d.freqs.Ptr(), nval,
		cdoc.Ptr(), cscore.Ptr(), cq.Ptr(), pErr); err != nil {
		return err
	}
	b.tm.stop(s, t, phScore)
	b.prof.Launches += 2
	mem.retire(d.all()...)

	// flag holds the scanned flags of the last compaction (the exact count
	// at its end) until a step reads the count; nil when none ran.
	var flag *cuda.Buffer
	if anyBM {
		var part *cuda.Buffer
		if err := mem.gets([]**cuda.Buffer{&flag, &part}, 4*(n+1), 4*(kern.ScanParts(n)+1)); err != nil {
			return err
		}
		t = b.tm.start(s)
		if err := ak.Filter(s, pMeta, pTerms, b.bm.dev, n, cdoc.Ptr(), cq.Ptr(), flag.Ptr(), part.Ptr()); err != nil {
			return err
		}
		if err := b.keepFlagged(mem, n, flag, part, &cdoc, &cscore, &cq); err != nil {
			return err
		}
		b.tm.stop(s, t, phIntersect)
		b.prof.Launches++
	}

	// Steps 1..: n is the exact count of the previous step (an upper bound
	// of this one's).
	for j := 1; j < maxM && n > 0; j++ {
		var blk, sel, part *cuda.Buffer
		if err := mem.gets([]**cuda.Buffer{&blk, &sel, &part}, 4*n, 32*(n+1), 32*(kern.ScanParts(n)+1)); err != nil {
			return err
		}
		t = b.tm.start(s)
		if err := ak.Locate(s, terms, post, pMeta, pTerms, pLR, j, st8.active[j], n, b.bs, levels, cdoc.Ptr(), cq.Ptr(),
			blk.Ptr(), sel.Ptr(), part.Ptr(), pBlocks, pPost); err != nil {
			return err
		}
		if err := ak.ScanFromPartsS4(s, sel.Ptr(), sel.Ptr(), part.Ptr(), n); err != nil {
			return err
		}
		b.tm.stop(s, t, phIntersect)
		b.prof.Launches += 3
		// The one wait of the step: the selection totals, and the count
		// of candidates the previous step kept.
		if err := b.andTotals(mem, sel, 32*n, flag, 4*n); err != nil {
			return err
		}
		tot := b.small.u64(0, 4)
		if flag != nil {
			n2 := int(b.small.u32(32, 1)[0])
			if n2 > n {
				return fmt.Errorf("gpu: BUG: %d of %d candidates kept", n2, n)
			}
			mem.retire(flag)
			flag, n = nil, n2
		}
		nsel, vals, db, fb := int(tot[0]), int(tot[1]), int(tot[2]), int(tot[3])
		if nsel > n || vals > 128*n || db > math.MaxInt32 || fb > math.MaxInt32 {
			return fmt.Errorf("gpu: BUG: block selection totals %v for %d candidates", tot, n)
		}
		if n == 0 {
			break
		}
		var dd *decodeBufs
		var pO, pDocs, pFreqs cuda.DevicePtr
		if nsel > 0 {
			if randomFreqs {
				dd, err = allocDecodeDocs(mem, nsel, db, vals)
			} else {
				dd, err = allocDecode(mem, nsel, db, fb, vals)
			}
			if err != nil {
				return err
			}
			t = b.tm.start(s)
			if err := qk.AndDesc(s, pMeta, pTerms, j, n, cq.Ptr(), blk.Ptr(), sel.Ptr(), dd.blkTerm.Ptr(), dd.blkIdx.Ptr(),
				dd.dOff.Ptr(), dd.fOff.Ptr(), dd.oOff.Ptr()); err != nil {
				return err
			}
			b.tm.stop(s, t, phIntersect)
			t = b.tm.start(s)
			if randomFreqs {
				err = b.decodeDocs(dd, nsel, st.one(b))
			} else {
				err = b.decode(dd, nsel, st.pair(b))
			}
			if err != nil {
				return err
			}
			b.tm.stop(s, t, phDecode)
			b.prof.Launches++
			pO, pDocs = dd.oOff.Ptr(), dd.docs.Ptr()
			if !randomFreqs {
				pFreqs = dd.freqs.Ptr()
			}
		}
		var partU *cuda.Buffer
		if err := mem.gets([]**cuda.Buffer{&flag, &partU}, 4*(n+1), 4*(kern.ScanParts(n)+1)); err != nil {
			return err
		}
		t = b.tm.start(s)
		if err := ak.Match(s, terms, post, pMeta, pTerms, j, n, b.bs, norms, b.k1p1, cdoc.Ptr(), cscore.Ptr(), cq.Ptr(),
			blk.Ptr(), sel.Ptr(), pO, pDocs, pFreqs, flag.Ptr(), partU.Ptr(), pErr); err != nil {
			return err
		}
		if err := b.keepFlagged(mem, n, flag, partU, &cdoc, &cscore, &cq); err != nil {
			return err
		}
		b.tm.stop(s, t, phIntersect)
		b.prof.Launches++
		mem.retire(blk, sel, part)
		mem.retire(dd.all()...)
	}

	if anyBM && randomFreqs && n > 0 {
		t = b.tm.start(s)
		if err := ak.BitmapScore(s, terms, post, pMeta, pTerms, b.bm.dev, n, b.bs, norms, b.k1p1, cdoc.Ptr(),
			cscore.Ptr(), cq.Ptr(), pErr); err != nil {
			return err
		}
		b.tm.stop(s, t, phScore)
		b.prof.Launches++
	}

	// Top-k over n candidate slots (those past the real count are
	// cuda.AndNone, after every query) and the results.
	var res, cnt, total, scratch *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&res, &cnt, &total, &scratch}, 8*nres, 4*nq, 4*nq, 8*scratchWords); err != nil {
		return err
	}
	t = b.tm.start(s)
	if err := qk.TopK(s, false, nq, pMeta, cdoc.Ptr(), cscore.Ptr(), cq.Ptr(), n, 0, b.n, res.Ptr(), cnt.Ptr(),
		total.Ptr(), scratch.Ptr(), pScr); err != nil {
		return err
	}
	b.tm.stop(s, t, phTopK)
	b.prof.Launches++
	dl := []*download{{src: cnt, n: 4 * nq}, {src: total, n: 4 * nq}, {src: ctr, n: 16 + 8*nq},
		{src: st.buf, n: 8 * st.n}, {src: res, n: 8 * nres}}
	if err := b.fetch(mem, dl); err != nil {
		return err
	}
	b.prof.Syncs++
	cnts, tots := b.down.u32(dl[0].at, nq), b.down.u32(dl[1].at, nq)
	ctrs := b.down.u32(dl[2].at, 4+2*nq)
	if err := b.corruptError(ctrs[kern.QueryErrDocs], b.down.u64(dl[3].at, st.n), st.codecs); err != nil {
		return err
	}
	if c := ctrs[kern.AndErrFreqs]; c != 0 {
		return fmt.Errorf("%w: %d bp128 frequency blocks read by slot are corrupt", index.ErrCorrupt, c)
	}
	keys := b.down.u64(dl[4].at, nres)
	offs, err := resultOffsets(qs, cnts)
	if err != nil {
		return err
	}
	parallel(nq, func(lo, hi int) {
		for a := lo; a < hi; a++ {
			p := qs[a]
			ti := b.info[p.terms[0].id]
			p.st.BlocksDecoded += int64(ti.nb) + int64(ctrs[4+a])
			p.st.PostingsDecoded += int64(ti.df) + int64(ctrs[4+nq+a])
			p.st.Candidates += int64(tots[a])
			c := int(cnts[a])
			if p.q.Mode == engine.AndOr && c < p.q.K {
				p.needOr = true
			} else {
				out[p.i].Results = results(out[p.i].Results[:0], keys[offs[a]:offs[a]+c])
			}
		}
	})
	return nil
}

// keepFlagged finishes a launch that flagged each of the n candidate slots
// cdoc/cscore/cq to keep (1) or drop (0) into flag (n+1 words), with its
// tile sums in part (Match, Filter): the flags are scanned in place (the
// exact count lands at flag[n], for the next step's wait) and the kept
// candidates compacted into new arrays, which replace the old ones (those
// and part are retired). 3 launches.
func (b *Backend) keepFlagged(mem *devMem, n int, flag, part *cuda.Buffer, cdoc, cscore, cq **cuda.Buffer) error {
	s, ak := b.stream, b.and.k
	if err := ak.ScanFromPartsU32(s, flag.Ptr(), flag.Ptr(), part.Ptr(), n); err != nil {
		return err
	}
	var ndoc, nscore, nqq *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&ndoc, &nscore, &nqq}, 4*n, 4*n, 4*n); err != nil {
		return err
	}
	if err := ak.Compact(s, n, flag.Ptr(), (*cdoc).Ptr(), (*cscore).Ptr(), (*cq).Ptr(), ndoc.Ptr(), nscore.Ptr(), nqq.Ptr()); err != nil {
		return err
	}
	b.prof.Launches += 3
	mem.retire(part, *cdoc, *cscore, *cq)
	*cdoc, *cscore, *cq = ndoc, nscore, nqq
	return nil
}

// resultOffsets checks the result counts and returns each query's first
// result slot (the running sum of K).
func resultOffsets(qs []*prep, cnts []uint32) ([]int, error) {
	offs := make([]int, len(qs))
	off := 0
	for a, p := range qs {
		if int(cnts[a]) > p.q.K {
			return nil, fmt.Errorf("gpu: BUG: %d results for k = %d", cnts[a], p.q.K)
		}
		offs[a] = off
		off += p.q.K
	}
	return offs, nil
}
