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
	if err := r.upload(); err != nil {
		return err
	}
	if err := r.firstStep(); err != nil {
		return err
	}
	if keep && r.maxM > 1 {
		if err := r.seedTheta(); err != nil {
			return err
		}
	}
	// Steps 1..: r.n is the exact count of the previous step (an upper
	// bound of this one's).
	for j := 1; j < r.maxM && r.n > 0; j++ {
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
	b           *Backend
	mem         *devMem
	ak          *kern.AndKernels
	qs          []*prep // by descending list steps
	nq, nterms  int
	maxM        int // the most list steps of a query
	nblk, nval  int // blocks and postings of the shortest lists
	dbytes      int // their encoded docID bytes
	fbytes      int // and frequency bytes
	randomFreqs bool
	anyBM       bool
	keep        bool // OrMaxScore (orms.go): misses kept, pruned by res0/cnt0, results certified
	useLR       bool
	levels      int

	// Uploaded: QMeta | QTerm | Seg | scratch offsets (| LR models).
	oMeta, oTerms, oSegs, oScr, oLR int
	size                            int
	nres, scratchWords              int
	pMeta, pTerms, pSegs, pScr, pLR cuda.DevicePtr

	// Counters: errors (4 uint32) | blocks per query | postings per
	// query; the decoders' status slots.
	ctr                  *cuda.Buffer
	pErr, pBlocks, pPost cuda.DevicePtr
	st                   statusSlots

	// The candidates: n slots of cdoc/cscore/cq. flag holds the scanned
	// flags of the last compaction (the exact count at its end) until a
	// step reads the count; nil when none ran.
	n                int
	cdoc, cscore, cq *cuda.Buffer
	flag             *cuda.Buffer
	res, cnt, total  *cuda.Buffer
	res0, cnt0       *cuda.Buffer // keep: the top k of the step-0 candidates (seedTheta)
}

// planAnd loads the AND step kernels on first use, finds the queries'
// bitmap terms and list steps, orders the queries by descending steps
// (stable: the queries with a j-th step are the first active[j]) and sizes
// the launch set: the shortest lists' blocks, bytes and postings (an error
// matching cuda.ErrOutOfMemory past 2^31) and the upload layout.
func (b *Backend) planAnd(mem *devMem, qs []*prep, keep bool) (*andRun, error) {
	st8 := &b.and
	if st8.k == nil {
		k, err := kern.LoadAndKernels(b.qk)
		if err != nil {
			return nil, fmt.Errorf("gpu: %w", err)
		}
		st8.k = k
	}
	r := &andRun{b: b, mem: mem, ak: st8.k, levels: st8.levels, keep: keep}
	r.randomFreqs = b.freqCodec.ID() == compress.IDBP128 && !st8.decodeFreqs
	// Bitmap terms (bitmap.go): the filter drops the candidates outside
	// their lists; with bp128 frequencies they take no list step, their
	// scores are added by rank after the steps. Keep-misses has none.
	// On all cores: each chunk of queries writes its own preps and adds its
	// sums to the set's under mu.
	var mu sync.Mutex
	parallelWorkers(b.prepareWorkers(), len(qs), 256, func(lo, hi int) { // --prepare-cores caps it too
		var c andRun
		for _, p := range qs[lo:hi] {
			p.bm = 0
			if !keep {
				p.bm = b.bitmapTerms(p)
				p.st.AndBitmaps = p.bm
			}
			p.steps = len(p.terms)
			if r.randomFreqs {
				p.steps -= p.bm
			}
			c.anyBM = c.anyBM || p.bm > 0
			c.nterms += len(p.terms)
			c.maxM = max(c.maxM, p.steps)
			ti := b.info[p.terms[0].id]
			c.nblk += int(ti.nb)
			c.dbytes += int(ti.dlen)
			c.fbytes += int(ti.flen)
			c.nval += int(ti.df)
		}
		mu.Lock()
		r.anyBM = r.anyBM || c.anyBM
		r.nterms += c.nterms
		r.maxM = max(r.maxM, c.maxM)
		r.nblk += c.nblk
		r.dbytes += c.dbytes
		r.fbytes += c.fbytes
		r.nval += c.nval
		mu.Unlock()
	})
	// By descending steps, stable: a counting sort (the keys are term
	// counts), not a comparison sort.
	st8.order = slices.Grow(st8.order[:0], len(qs))[:len(qs)]
	st8.counts = countingSort(st8.order, qs, r.maxM, true, stepsOf, st8.counts)
	r.qs, r.nq = st8.order, len(st8.order)
	if r.nval > math.MaxInt32/2 || r.dbytes > math.MaxInt32 || r.fbytes > math.MaxInt32 {
		return nil, fmt.Errorf("%w: launch set of %d postings", cuda.ErrOutOfMemory, r.nval)
	}
	st8.active = st8.active[:0]
	for j, a := 0, r.nq; j < r.maxM; j++ {
		for a > 0 && r.qs[a-1].steps <= j {
			a--
		}
		st8.active = append(st8.active, a)
	}
	r.useLR = st8.levels == andSearchLR
	var lay layout
	r.oMeta, r.oTerms, r.oSegs, r.oScr = lay.add(16*r.nq), lay.add(16*r.nterms), lay.add(40*r.nq), lay.add(8*r.nq)
	if r.useLR {
		r.oLR = lay.add(4 * kern.AndLRWords * r.nterms)
	}
	r.size = lay.size
	return r, nil
}

// upload writes the QMeta, QTerms, Segs of the shortest lists, scratch
// offsets and (for the "lr" search) the LR models of the QTerms' skip
// tables into the upload buffer and uploads them; then it zeroes the
// counters and takes the decoders' status slots.
func (r *andRun) upload() error {
	b := r.b
	if err := b.up.reset(r.size); err != nil {
		return err
	}
	b.up.take(r.size)
	_, r.nres, r.scratchWords = b.fillQueries(r.qs, r.oMeta, r.oTerms, r.oScr)
	if r.useLR {
		if err := r.fillLR(); err != nil {
			return err
		}
	}
	segs := b.up.u32(r.oSegs, kern.SegWords*r.nq)
	var d0, f0, v0, blk0, toff int
	for a, p := range r.qs {
		t := p.terms[0]
		ti := b.info[t.id]
		kern.PutSeg(segs[kern.SegWords*a:], uint64(d0), uint64(f0), uint64(v0), uint32(t.id), uint32(blk0), uint32(a), uint32(toff))
		d0, f0, v0, blk0 = d0+int(ti.dlen), f0+int(ti.flen), v0+int(ti.df), blk0+int(ti.nb)
		toff += len(p.terms)
	}
	base, err := b.upload(r.mem, r.size)
	if err != nil {
		return err
	}
	r.pMeta, r.pTerms = base+cuda.DevicePtr(r.oMeta), base+cuda.DevicePtr(r.oTerms)
	r.pSegs, r.pScr = base+cuda.DevicePtr(r.oSegs), base+cuda.DevicePtr(r.oScr)
	if r.useLR {
		r.pLR, r.levels = base+cuda.DevicePtr(r.oLR), 0
	}
	if r.ctr, err = r.mem.get(16 + 8*r.nq); err != nil {
		return err
	}
	if err := b.stream.Fill32(r.ctr, 0, 0, 4+2*r.nq); err != nil {
		return err
	}
	r.pErr, r.pBlocks, r.pPost = r.ctr.Ptr(), r.ctr.Ptr()+16, r.ctr.Ptr()+16+cuda.DevicePtr(4*r.nq)
	r.st.buf, err = r.mem.get(16 * r.maxM)
	return err
}

// fillLR writes the LR model of every QTerm's skip table but term 0's
// (decoded whole, never searched) into the upload buffer.
func (r *andRun) fillLR() error {
	lr := r.b.up.u32(r.oLR, kern.AndLRWords*r.nterms)
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
// j-th list, wait for the selection totals (and the previous step's exact
// count), decode the selected blocks and keep the candidates found in
// them, with the term's score added.
func (r *andRun) step(j int) error {
	b, s, mem := r.b, r.b.stream, r.mem
	n := r.n
	var blk, sel, part *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&blk, &sel, &part}, 4*n, 32*(n+1), 32*(kern.ScanParts(n)+1)); err != nil {
		return err
	}
	t := b.tm.start(s)
	if err := r.ak.Locate(s, b.terms.Ptr(), b.post.Ptr(), r.pMeta, r.pTerms, r.pLR, j, b.and.active[j], n, b.bs, r.levels, r.keep,
		r.cdoc.Ptr(), r.cq.Ptr(), blk.Ptr(), sel.Ptr(), part.Ptr(), r.pBlocks, r.pPost); err != nil {
		return err
	}
	if err := r.ak.ScanFromPartsS4(s, sel.Ptr(), sel.Ptr(), part.Ptr(), n); err != nil {
		return err
	}
	b.tm.stop(s, t, phIntersect)
	b.prof.Launches += 3
	tot, err := r.totals(sel)
	if err != nil || r.n == 0 {
		return err
	}
	n = r.n
	dd, err := r.decodeSelected(j, blk, sel, tot)
	if err != nil {
		return err
	}
	var pO, pDocs, pFreqs cuda.DevicePtr
	if dd != nil {
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

// totals is the one wait of a step: the selection totals of sel (S4:
// blocks, postings, docID bytes, frequency bytes) and the count of
// candidates the previous step kept (which becomes r.n).
func (r *andRun) totals(sel *cuda.Buffer) ([]uint64, error) {
	b, n := r.b, r.n
	if err := b.andTotals(r.mem, sel, 32*n, r.flag, 4*n); err != nil {
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

// decodeSelected lists the blocks that step j selected (tot: the totals
// of sel) and decodes their docIDs (and frequencies unless bp128 slots are
// read by rank); nil when none was selected.
func (r *andRun) decodeSelected(j int, blk, sel *cuda.Buffer, tot []uint64) (*decodeBufs, error) {
	b, s := r.b, r.b.stream
	nsel, vals, db, fb := int(tot[0]), int(tot[1]), int(tot[2]), int(tot[3])
	if nsel == 0 {
		return nil, nil
	}
	var dd *decodeBufs
	var err error
	if r.randomFreqs {
		dd, err = allocDecodeDocs(r.mem, nsel, db, vals)
	} else {
		dd, err = allocDecode(r.mem, nsel, db, fb, vals)
	}
	if err != nil {
		return nil, err
	}
	t := b.tm.start(s)
	if err := b.qk.AndDesc(s, r.pMeta, r.pTerms, j, r.n, r.cq.Ptr(), blk.Ptr(), sel.Ptr(), dd.blkTerm.Ptr(), dd.blkIdx.Ptr(),
		dd.dOff.Ptr(), dd.fOff.Ptr(), dd.oOff.Ptr()); err != nil {
		return nil, err
	}
	b.tm.stop(s, t, phIntersect)
	t = b.tm.start(s)
	if r.randomFreqs {
		err = b.decodeDocs(dd, nsel, r.st.one(b))
	} else {
		err = b.decode(dd, nsel, r.st.pair(b))
	}
	if err != nil {
		return nil, err
	}
	b.tm.stop(s, t, phDecode)
	b.prof.Launches++
	return dd, nil
}

// bitmapScores adds the bitmap terms' scores by rank after the last step
// (bp128 frequencies only: otherwise those terms took list steps).
func (r *andRun) bitmapScores() error {
	if !r.anyBM || !r.randomFreqs || r.n == 0 {
		return nil
	}
	b, s := r.b, r.b.stream
	t := b.tm.start(s)
	if err := r.ak.BitmapScore(s, b.terms.Ptr(), b.post.Ptr(), r.pMeta, r.pTerms, b.bm.dev, r.n, b.bs, b.norms.Ptr(), b.k1p1,
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
	if err := r.mem.gets([]**cuda.Buffer{&r.res, &r.cnt, &r.total, &scratch}, 8*r.nres, 4*nq, 4*nq, 8*r.scratchWords); err != nil {
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
	dl := []*download{{src: r.cnt, n: 4 * nq}, {src: r.total, n: 4 * nq}, {src: r.ctr, n: 16 + 8*nq},
		{src: r.st.buf, n: 8 * r.st.n}, {src: r.res, n: 8 * r.nres}}
	if err := b.fetch(r.mem, dl); err != nil {
		return err
	}
	b.prof.Syncs++
	cnts, tots := b.down.u32(dl[0].at, nq), b.down.u32(dl[1].at, nq)
	ctrs := b.down.u32(dl[2].at, 4+2*nq)
	if err := b.corruptError(ctrs[kern.QueryErrDocs], b.down.u64(dl[3].at, r.st.n), r.st.codecs); err != nil {
		return err
	}
	if c := ctrs[kern.AndErrFreqs]; c != 0 {
		return fmt.Errorf("%w: %d bp128 frequency blocks read by slot are corrupt", index.ErrCorrupt, c)
	}
	keys := b.down.u64(dl[4].at, r.nres)
	offs, err := resultOffsets(qs, cnts)
	if err != nil {
		return err
	}
	b.convert(nq, func(lo, hi int) {
		for a := lo; a < hi; a++ {
			p := qs[a]
			ti := b.info[p.terms[0].id]
			p.st.BlocksDecoded += int64(ti.nb) + int64(ctrs[4+a])
			p.st.PostingsDecoded += int64(ti.df) + int64(ctrs[4+nq+a])
			p.st.Candidates += int64(tots[a])
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
			b.prof.OrMSCandidates += int64(b.info[p.terms[0].id].df)
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

// stepsOf is planAnd's order key.
func stepsOf(p *prep) int { return p.steps }
