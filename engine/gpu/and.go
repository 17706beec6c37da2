package gpu

import (
	"fmt"
	"math"

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
// past the real one hold kern.AndNone. Launches per step: locate (block
// selection, by binary search, in LR ranges with "lr", or Parallel Merge
// Find, with the heads and the scan's tile sums) + the scan's apply, list
// of blocks + gather + docID decoder (+ frequency decoder unless bp128
// slots are read directly), match, compact (which scans match's flags);
// each scan one launch more past kern.ScanFuseParts tiles. The queries are ordered by descending step count so that
// those without a j-th step are a suffix that the kernels skip cheaply.
//
// Bitmap terms (bitmap.go): when a query's densest terms have device
// bitmaps in use, a filter (qp_and_filter + compact) drops the
// candidates outside their lists right after step 0; with bp128
// frequencies those terms take no step, and qp_and_bmscore adds their
// scores by rank after the last step (their step count is the query's
// terms less its bitmap terms).
func (b *Backend) runAnd(mem *devMem, qs []*prep, out []engine.Response) error {
	return b.runAndMode(mem, qs, out, false)
}

// runAndMode is runAnd, or, with keep, OrMaxScore's run over the shortest
// lists of OR queries (orms.go): no bitmap terms, a miss keeps the
// candidate, the seed threshold after step 0 prunes, and the download
// certifies.
func (b *Backend) runAndMode(mem *devMem, qs []*prep, out []engine.Response, keep bool) error {
	r, err := b.planAnd(mem, qs, keep)
	if err != nil {
		return err
	}
	if err := r.fill(); err != nil {
		return err
	}
	return r.run(out)
}

// runAndPlanned is runAnd on a plan made and filled off the owner
// (andplan.go); the set's download goes to pend for the batch's goroutine
// to convert (finishResults).
func (b *Backend) runAndPlanned(mem *devMem, pl *andPlan, pend *pendingResults, out []engine.Response) error {
	ak, err := b.andKernels()
	if err != nil {
		return err
	}
	r := &andRun{andPlan: *pl, b: b, mem: mem, ak: ak, levels: b.and.levels, pend: pend}
	if err := r.run(out); err != nil {
		return err
	}
	if len(pl.bmq) > 0 {
		return b.runBitmapAnd(mem, pl.bmq, out)
	}
	return nil
}

// run is the device part of an AND launch set whose upload is filled:
// upload, steps, top k, download.
func (r *andRun) run(out []engine.Response) error {
	if err := r.upload(); err != nil {
		return err
	}
	if err := r.firstStep(); err != nil {
		return err
	}
	if r.keep && r.maxM > 1 {
		if err := r.seedTheta(); err != nil {
			return err
		}
	}
	// Steps 1..: r.n is the exact count of the previous step (an upper
	// bound of this one's); r.done when the remaining steps would keep
	// every candidate unchanged (step).
	for j := 1; j < r.maxM && r.n > 0 && !r.done; j++ {
		if err := r.step(j); err != nil {
			return err
		}
	}
	if err := r.bitmapScores(); err != nil {
		return err
	}
	if err := r.selectTopK(); err != nil {
		return err
	}
	return r.download(out)
}

// andRun is the state of one runAnd launch set, from its plan to its
// download.
type andRun struct {
	andPlan
	b      *Backend
	mem    *devMem
	ak     *kern.AndKernels
	levels int
	pend   *pendingResults // nil: the download is converted on the owner

	pMeta, pTerms, pSegs, pScr, pLR cuda.DevicePtr

	// The set's device buffer (andPlan's layout). Views of it: the
	// counters (errors (4 uint32) | blocks per query | postings per
	// query), the decoders' status slots, the results.
	dev                  *cuda.Buffer
	ctr                  *cuda.Buffer
	pErr, pBlocks, pPost cuda.DevicePtr
	st                   statusSlots

	// The candidates: n slots of cdoc/cscore/cq. flag holds the scanned
	// flags of the last compaction (the exact count at its end) until a
	// step reads the count; nil when none ran.
	n                int
	done             bool // the steps left keep every candidate (step)
	bmAnd            bool // the bitmap AND's sub-run (bmand.go): no list was decoded
	cdoc, cscore, cq *cuda.Buffer
	flag             *cuda.Buffer
	res, cnt, total  *cuda.Buffer
	res0, cnt0       *cuda.Buffer // keep: the top k of the step-0 candidates (seedTheta)
}

// andKernels loads the AND step kernels on first use (owner thread).
func (b *Backend) andKernels() (*kern.AndKernels, error) {
	if b.and.k == nil {
		k, err := kern.LoadAndKernels(b.qk)
		if err != nil {
			return nil, fmt.Errorf("gpu: %w", err)
		}
		b.and.k = k
	}
	return b.and.k, nil
}

// planAnd loads the AND step kernels on first use and plans the launch
// set on the owner (planHost with the current bitmap columns and the
// owner's scratch: the queries' bitmap terms and list steps, the order by
// descending steps, stable, so that the queries with a j-th step are the
// first active[j], the sizes and the upload layout) in the owner's upload
// arena; fill fills it.
func (b *Backend) planAnd(mem *devMem, qs []*prep, keep bool) (*andRun, error) {
	ak, err := b.andKernels()
	if err != nil {
		return nil, err
	}
	r := &andRun{b: b, mem: mem, ak: ak, levels: b.and.levels}
	r.active = b.and.active
	var use []uint32
	if b.bm != nil {
		use = b.bm.use
	}
	sc := planScratch{order: b.and.order, counts: b.and.counts, slots: b.slots}
	err = b.planHost(&r.andPlan, qs, keep, b.and.levels, use, b.prepareWorkers(), &sc)
	b.and.order, b.and.counts, b.and.active, b.slots = sc.order, sc.counts, r.active, sc.slots
	if err != nil {
		return nil, err
	}
	r.up, r.upAt = &b.up, 0
	return r, nil
}

// fill fills the owner-planned set's upload (fillPlan, and the LR models
// of the "lr" search) into the owner's upload arena.
func (r *andRun) fill() error {
	b := r.b
	if err := b.up.reset(r.upSize); err != nil {
		return err
	}
	b.up.take(r.upSize)
	sc := planScratch{slots: b.slots}
	b.fillPlan(&r.andPlan, b.prepareWorkers(), &sc)
	b.slots = sc.slots
	if r.useLR {
		return r.fillLR()
	}
	return nil
}

// upload allocates the set's device buffer (andPlan's layout) and copies
// the filled part (QMeta, QTerms, Segs of the shortest lists, scratch
// offsets, for the "lr" search the LR models of the QTerms' skip tables,
// and the zeroed counters) to it; the decoders' status slots, the result
// counts, totals and keys are views of its rest.
func (r *andRun) upload() error {
	b := r.b
	dev, err := b.uploadFrom(r.mem, r.up, r.upAt, r.upSize, r.size)
	if err != nil {
		return err
	}
	r.dev = dev
	base := dev.Ptr()
	r.pMeta, r.pTerms = base+cuda.DevicePtr(r.oMeta), base+cuda.DevicePtr(r.oTerms)
	r.pSegs, r.pScr = base+cuda.DevicePtr(r.oSegs), base+cuda.DevicePtr(r.oScr)
	if r.useLR {
		r.pLR, r.levels = base+cuda.DevicePtr(r.oLR), 0
	}
	r.ctr = cuda.BufferView(dev, r.oCtr, 16+8*r.nq)
	r.pErr, r.pBlocks, r.pPost = r.ctr.Ptr(), r.ctr.Ptr()+16, r.ctr.Ptr()+16+cuda.DevicePtr(4*r.nq)
	r.st.buf = cuda.BufferView(dev, r.oSt, 16*r.maxM)
	r.cnt, r.total = cuda.BufferView(dev, r.oCnt, 4*r.nq), cuda.BufferView(dev, r.oTot, 4*r.nq)
	r.res = cuda.BufferView(dev, r.oRes, 8*r.nres)
	return nil
}

// fillLR writes the LR model of every QTerm's skip table but term 0's
// (decoded whole, never searched) into the upload buffer.
func (r *andRun) fillLR() error {
	lr := r.up.u32(r.upAt+r.oLR, kern.AndLRWords*r.nterms)
	i := 0
	for _, p := range r.qs {
		for j, t := range p.terms {
			if j > 0 {
				m, err := r.b.lrModel(t.id)
				if err != nil {
					return err
				}
				copy(lr[kern.AndLRWords*i:], m[:])
			}
			i++
		}
	}
	return nil
}

// firstStep is step 0: the shortest lists decoded whole and the
// candidates made of them, scored with term 0; then, when a query has
// bitmap terms, the filter by their lists.
func (r *andRun) firstStep() error {
	b, s, mem := r.b, r.b.stream, r.mem
	d, err := allocDecode(mem, r.nblk, r.dbytes, r.fbytes, r.nval)
	if err != nil {
		return err
	}
	if err := b.decodeLists(d, r.pSegs, r.nq, r.nblk, r.st.pair(b)); err != nil {
		return err
	}
	r.n = r.nval
	n := r.n
	if err := mem.gets([]**cuda.Buffer{&r.cdoc, &r.cscore, &r.cq}, 4*n, 4*n, 4*n); err != nil {
		return err
	}
	t := b.tm.start(s)
	if err := b.qk.AndInit(s, r.pSegs, r.nq, r.pTerms, b.norms.Ptr(), b.n, b.k1p1, d.docs.Ptr(), d.freqs.Ptr(), r.nval,
		r.cdoc.Ptr(), r.cscore.Ptr(), r.cq.Ptr(), r.pErr); err != nil {
		return err
	}
	b.tm.stop(s, t, phScore)
	b.prof.Launches += 2
	mem.retire(d.all()...)
	if !r.anyBM {
		return nil
	}
	var part *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&r.flag, &part}, 4*(n+1), 4*(kern.ScanParts(n)+1)); err != nil {
		return err
	}
	t = b.tm.start(s)
	if err := r.ak.Filter(s, r.pMeta, r.pTerms, b.bm.dev, n, r.cdoc.Ptr(), r.cq.Ptr(), r.flag.Ptr(), part.Ptr()); err != nil {
		return err
	}
	if err := b.keepFlagged(mem, n, r.flag, part, &r.cdoc, &r.cscore, &r.cq); err != nil {
		return err
	}
	b.tm.stop(s, t, phIntersect)
	b.prof.Launches++
	return nil
}

// step is list step j >= 1: locate the candidates' blocks of each query's
// j-th list and list the selected ones, wait for the selection totals (and
// the previous step's exact count, in the same copy), decode the selected
// blocks and keep the candidates found in them, with the term's score
// added.
func (r *andRun) step(j int) error {
	b, s, mem := r.b, r.b.stream, r.mem
	n := r.n
	// sel: n+2 entries, the totals at n and the previous count at n+1. The
	// block list (dd's first five buffers) is sized by n, the most blocks
	// the step can select, since Select writes it before the wait.
	var blk, sel, part *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&blk, &sel, &part}, 4*n, 32*(n+2), 32*(kern.ScanParts(n)+1)); err != nil {
		return err
	}
	dd := &decodeBufs{}
	if err := mem.gets([]**cuda.Buffer{&dd.blkTerm, &dd.blkIdx, &dd.dOff, &dd.fOff, &dd.oOff}, 4*n, 4*n, 8*(n+1), 8*(n+1), 8*(n+1)); err != nil {
		return err
	}
	var prev cuda.DevicePtr
	if r.flag != nil {
		prev = r.flag.Ptr() + cuda.DevicePtr(4*n)
	}
	t := b.tm.start(s)
	if err := r.ak.Locate(s, b.terms.Ptr(), b.post.Ptr(), r.pMeta, r.pTerms, r.pLR, j, r.active[j], n, b.bs, r.levels, r.keep,
		r.cdoc.Ptr(), r.cq.Ptr(), blk.Ptr(), sel.Ptr(), part.Ptr(), r.pBlocks, r.pPost); err != nil {
		return err
	}
	if err := r.ak.Select(s, r.pMeta, r.pTerms, j, n, r.cq.Ptr(), blk.Ptr(), sel.Ptr(), part.Ptr(), prev, dd.blkTerm.Ptr(),
		dd.blkIdx.Ptr(), dd.dOff.Ptr(), dd.fOff.Ptr(), dd.oOff.Ptr()); err != nil {
		return err
	}
	b.tm.stop(s, t, phIntersect)
	b.prof.Launches += 1 + int64(kern.ScanLaunches(n))
	tot, err := r.totals(sel)
	if err != nil || r.n == 0 {
		return err
	}
	// Candidates are grouped by ascending query, the queries with a j-th
	// list are the first active[j] (planHost's order), and a compaction
	// only removes candidates. So when the first candidate's query (Select's
	// sel[n+1].b, read with the totals) is not below active[j], every
	// candidate passes step j (Locate's BlockPass; Match keeps it in AND
	// mode, not necessarily with keep-misses); when it is not below
	// active[j+1], no later step changes anything either.
	if cq0 := b.small.u64(40, 1)[0]; !r.keep {
		if cq0 >= uint64(r.active[j]) {
			r.done = true
			mem.retire(blk, sel, part)
			mem.retire(dd.all()...)
			return nil
		}
		r.done = j+1 < r.maxM && cq0 >= uint64(r.active[j+1])
	}
	n = r.n
	if err := r.decodeSelected(dd, tot); err != nil {
		return err
	}
	var pO, pDocs, pFreqs cuda.DevicePtr
	if tot[0] != 0 {
		pO, pDocs = dd.oOff.Ptr(), dd.docs.Ptr()
		if !r.randomFreqs {
			pFreqs = dd.freqs.Ptr()
		}
	}
	var partU *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&r.flag, &partU}, 4*(n+1), 4*(kern.ScanParts(n)+1)); err != nil {
		return err
	}
	t = b.tm.start(s)
	if err := r.ak.Match(s, b.terms.Ptr(), b.post.Ptr(), r.pMeta, r.pTerms, j, n, b.bs, b.norms.Ptr(), b.k1p1, r.cdoc.Ptr(),
		r.cscore.Ptr(), r.cq.Ptr(), blk.Ptr(), sel.Ptr(), pO, pDocs, pFreqs, r.flag.Ptr(), partU.Ptr(), r.pErr, r.keepMode()); err != nil {
		return err
	}
	if err := b.keepFlagged(mem, n, r.flag, partU, &r.cdoc, &r.cscore, &r.cq); err != nil {
		return err
	}
	b.tm.stop(s, t, phIntersect)
	b.prof.Launches++
	mem.retire(blk, sel, part)
	mem.retire(dd.all()...)
	return nil
}

// totals is the one wait of a step: one copy of sel[n..n+2) (Select's
// output), the selection totals (S4: blocks, postings, docID bytes,
// frequency bytes) and, when a compaction ran, the count of candidates
// the previous step kept (which becomes r.n).
func (r *andRun) totals(sel *cuda.Buffer) ([]uint64, error) {
	b, n := r.b, r.n
	if err := b.andTotals(r.mem, sel, 32*n, 64); err != nil {
		return nil, err
	}
	tot := b.small.u64(0, 4)
	if r.flag != nil {
		n2 := int(b.small.u32(32, 1)[0])
		if n2 > n {
			return nil, fmt.Errorf("gpu: BUG: %d of %d candidates kept", n2, n)
		}
		r.mem.retire(r.flag)
		r.flag, r.n = nil, n2
	}
	nsel, vals, db, fb := int(tot[0]), int(tot[1]), int(tot[2]), int(tot[3])
	if nsel > r.n || vals > 128*r.n || db > math.MaxInt32 || fb > math.MaxInt32 {
		return nil, fmt.Errorf("gpu: BUG: block selection totals %v for %d candidates", tot, r.n)
	}
	return tot, nil
}

// decodeSelected allocates the rest of dd (whose block list Select wrote;
// tot: the totals of its scan) and decodes the selected blocks' docIDs
// (and frequencies unless bp128 slots are read by rank); nothing when
// none was selected.
func (r *andRun) decodeSelected(dd *decodeBufs, tot []uint64) error {
	b, s := r.b, r.b.stream
	nsel, vals, db, fb := int(tot[0]), int(tot[1]), int(tot[2]), int(tot[3])
	if nsel == 0 {
		return nil
	}
	bufs, sizes := []**cuda.Buffer{&dd.gdocs, &dd.base, &dd.last, &dd.docs, &dd.gfreqs, &dd.freqs}, []int{db, 4 * nsel, 4 * nsel, 4 * vals, fb, 4 * vals}
	if r.randomFreqs {
		bufs, sizes = bufs[:4], sizes[:4]
	}
	if err := r.mem.gets(bufs, sizes...); err != nil {
		return err
	}
	t := b.tm.start(s)
	var err error
	if r.randomFreqs {
		err = b.decodeDocs(dd, nsel, r.st.one(b))
	} else {
		err = b.decode(dd, nsel, r.st.pair(b))
	}
	if err != nil {
		return err
	}
	b.tm.stop(s, t, phDecode)
	b.prof.Launches++
	return nil
}

// bitmapScores adds the bitmap terms' scores by rank after the last step
// (bp128 frequencies only: otherwise those terms took list steps).
func (r *andRun) bitmapScores() error {
	if !r.anyBM || !r.randomFreqs || r.n == 0 {
		return nil
	}
	b, s := r.b, r.b.stream
	t := b.tm.start(s)
	if err := r.ak.BitmapScore(s, false, b.terms.Ptr(), b.post.Ptr(), r.pMeta, r.pTerms, b.bm.dev, r.n, b.bs, b.norms.Ptr(), b.k1p1,
		r.cdoc.Ptr(), r.cscore.Ptr(), r.cq.Ptr(), r.pErr); err != nil {
		return err
	}
	b.tm.stop(s, t, phScore)
	b.prof.Launches++
	return nil
}

// selectTopK selects each query's top k over the n candidate slots (those
// past the real count are kern.AndNone, after every query).
func (r *andRun) selectTopK() error {
	b, s, nq := r.b, r.b.stream, r.nq
	var scratch *cuda.Buffer
	if err := r.mem.gets([]**cuda.Buffer{&scratch}, 8*r.scratchWords); err != nil { // res, cnt, total: views of r.dev
		return err
	}
	t := b.tm.start(s)
	if err := b.qk.TopK(s, false, nq, r.pMeta, r.cdoc.Ptr(), r.cscore.Ptr(), r.cq.Ptr(), r.n, 0, b.n, r.res.Ptr(), r.cnt.Ptr(),
		r.total.Ptr(), scratch.Ptr(), r.pScr); err != nil {
		return err
	}
	b.tm.stop(s, t, phTopK)
	b.prof.Launches++
	return nil
}

// download fetches the counts, counters, status slots and result keys
// (the launch set's one final wait), turns corrupt-data counters into
// errors and writes the results of the queries that end here; AndOr
// queries with fewer than K results get needOr.
func (r *andRun) download(out []engine.Response) error {
	b, nq, qs := r.b, r.nq, r.qs
	// One copy: counters | counts | totals | status slots | keys.
	dl := []*download{{src: r.dev, srcOff: r.oCtr, n: r.size - r.oCtr}}
	dn, err := b.fetchTo(r.mem, r.pend, dl, out)
	if err != nil {
		return err
	}
	at := func(o int) int { return dl[0].at + o - r.oCtr }
	b.prof.Syncs++
	ctrs := dn.u32(at(r.oCtr), 4+2*nq)
	if err := b.corruptError(ctrs[kern.QueryErrDocs], dn.u64(at(r.oSt), r.st.n), r.st.codecs); err != nil {
		return err
	}
	if c := ctrs[kern.AndErrFreqs]; c != 0 {
		return fmt.Errorf("%w: %d bp128 frequency blocks read by slot are corrupt", index.ErrCorrupt, c)
	}
	if r.pend != nil {
		if r.mixed {
			// The OR part runs next, on the owner: it needs needOr now
			// (on all cores: the owner holds the device).
			cnts := dn.u32(at(r.oCnt), nq)
			parallelWorkers(b.prepareWorkers(), nq, 256, func(lo, hi int) {
				for a := lo; a < hi; a++ {
					if p := qs[a]; p.q.Mode == engine.AndOr && int(cnts[a]) < p.q.K {
						p.needOr = true
					}
				}
			})
		}
		r.pend.sets = append(r.pend.sets, pendingSet{qs: qs, cnts: at(r.oCnt), tots: at(r.oTot), ctrs: at(r.oCtr), keys: at(r.oRes),
			nres: r.nres, mixed: r.mixed})
		return nil
	}
	cnts, tots := dn.u32(at(r.oCnt), nq), dn.u32(at(r.oTot), nq)
	keys := dn.u64(at(r.oRes), r.nres)
	offs, err := resultOffsets(qs, cnts)
	if err != nil {
		return err
	}
	b.convert(nq, func(lo, hi int) {
		for a := lo; a < hi; a++ {
			p := qs[a]
			if r.bmAnd {
				p.st.Candidates += int64(tots[a])
			} else {
				b.addAndStats(p, ctrs, nq, a, tots[a])
			}
			c := int(cnts[a])
			switch {
			case r.keep: // runOrMS certifies them
				p.ms = append(p.ms[:0], keys[offs[a]:offs[a]+c]...)
			case p.q.Mode == engine.AndOr && c < p.q.K:
				p.needOr = true
			default:
				out[p.i].Results = results(out[p.i].Results[:0], keys[offs[a]:offs[a]+c])
			}
		}
	})
	if r.keep {
		for a, p := range qs {
			b.prof.OrMSCandidates += int64(p.terms[0].ti.df)
			b.prof.OrMSKept += int64(tots[a])
		}
	}
	return nil
}

// keepMode is Match's keep-misses argument: the seed threshold when one
// was selected.
func (r *andRun) keepMode() kern.AndKeep {
	if !r.keep {
		return kern.AndKeep{}
	}
	m := kern.AndKeep{Keep: true}
	if r.res0 != nil {
		m.Res0, m.Cnt0 = r.res0.Ptr(), r.cnt0.Ptr()
	}
	return m
}

// keepFlagged finishes a launch that flagged each of the n candidate slots
// cdoc/cscore/cq to keep (1) or drop (0) into flag (n+1 words), with its
// tile sums in part (Match, Filter): Compact scans the flags and moves the
// kept candidates into new arrays, which replace the old ones (those and
// part are retired), and writes the exact count to flag[n], for the next
// step's wait. 1 launch (2 when n has more than kern.ScanFuseParts tiles).
func (b *Backend) keepFlagged(mem *devMem, n int, flag, part *cuda.Buffer, cdoc, cscore, cq **cuda.Buffer) error {
	s, ak := b.stream, b.and.k
	var ndoc, nscore, nqq *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&ndoc, &nscore, &nqq}, 4*n, 4*n, 4*n); err != nil {
		return err
	}
	if err := ak.Compact(s, n, flag.Ptr(), part.Ptr(), (*cdoc).Ptr(), (*cscore).Ptr(), (*cq).Ptr(), ndoc.Ptr(), nscore.Ptr(), nqq.Ptr()); err != nil {
		return err
	}
	b.prof.Launches += int64(kern.ScanLaunches(n))
	mem.retire(part, *cdoc, *cscore, *cq)
	*cdoc, *cscore, *cq = ndoc, nscore, nqq
	return nil
}

// resultOffsets checks the result counts and returns each query's first
// result slot (the running sum of K).
// addAndStats adds query a's decode work, read from an AND set's downloaded
// counters (ctrs[4+a] blocks and ctrs[4+nq+a] postings beyond the first
// list's, which is decoded whole), and its candidate total to p's stats.
// The owner's download path and the off-owner finishSet share it.
func (b *Backend) addAndStats(p *prep, ctrs []uint32, nq, a int, tot uint32) {
	ti := p.terms[0].ti
	p.st.BlocksDecoded += int64(ti.nb) + int64(ctrs[4+a])
	p.st.PostingsDecoded += int64(ti.df) + int64(ctrs[4+nq+a])
	p.st.Candidates += int64(tot)
}

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

// stepsOf is planAnd's order key.
func stepsOf(p *prep) int { return p.steps }
