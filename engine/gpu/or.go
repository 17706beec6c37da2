package gpu

import (
	"fmt"
	"math"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
)

// runOr evaluates the disjunctions of qs (every query has >= 1 known term)
// with the strategy of Options.Or and writes their results.
func (b *Backend) runOr(mem *devMem, qs []*prep, out []engine.Response) error {
	if b.orDense() {
		return b.runOrDense(mem, qs, out)
	}
	return b.runOrTiled(mem, qs, out)
}

// runOrDense evaluates the disjunctions of qs (every query has >= 1 known
// term) with dense accumulators and writes their results.
func (b *Backend) runOrDense(mem *devMem, qs []*prep, out []engine.Response) error {
	s := b.stream
	qk := b.qk
	nq := len(qs)
	var nterms, maxM int
	for _, p := range qs {
		nterms += len(p.terms)
		maxM = max(maxM, len(p.terms))
	}
	type step struct{ seg0, nseg, nblk, dbytes, fbytes, nval int }
	steps := make([]step, maxM)
	var lay layout
	oMeta, oTerms, oSegs, oScr := lay.add(16*nq), lay.add(16*nterms), lay.add(40*nterms), lay.add(8*nq)
	if err := b.up.reset(lay.size); err != nil {
		return err
	}
	b.up.take(lay.size)
	nres, scratchWords := b.fillQueries(qs, oMeta, oTerms, oScr)
	segs := b.up.u32(oSegs, kern.SegWords*nterms)
	toff := make([]int, nq)
	for a := 1; a < nq; a++ {
		toff[a] = toff[a-1] + len(qs[a-1].terms)
	}
	var big step // the largest step, for the shared buffers
	ns := 0
	for j := range steps {
		st := &steps[j]
		st.seg0 = ns
		for a, p := range qs {
			if j >= len(p.terms) {
				continue
			}
			t := p.terms[j]
			ti := b.info[t.id]
			kern.PutSeg(segs[kern.SegWords*ns:], uint64(st.dbytes), uint64(st.fbytes), uint64(st.nval), uint32(t.id),
				uint32(st.nblk), uint32(a), uint32(toff[a]+j))
			st.nblk += int(ti.nb)
			st.dbytes += int(ti.dlen)
			st.fbytes += int(ti.flen)
			st.nval += int(ti.df)
			ns++
		}
		st.nseg = ns - st.seg0
		big.nblk, big.dbytes, big.fbytes, big.nval = max(big.nblk, st.nblk), max(big.dbytes, st.dbytes),
			max(big.fbytes, st.fbytes), max(big.nval, st.nval)
	}
	if big.nval > math.MaxInt32/2 || big.dbytes > math.MaxInt32 || big.fbytes > math.MaxInt32 {
		return fmt.Errorf("%w: OR launch of %d postings", cuda.ErrOutOfMemory, big.nval)
	}
	base, err := b.upload(mem, lay.size)
	if err != nil {
		return err
	}
	pMeta, pTerms, pSegs, pScr := base+cuda.DevicePtr(oMeta), base+cuda.DevicePtr(oTerms), base+cuda.DevicePtr(oSegs), base+cuda.DevicePtr(oScr)

	var acc, ctr, stBuf *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&acc, &ctr, &stBuf}, 4*nq*int(b.n), 16, 16*maxM); err != nil {
		return err
	}
	t := b.tm.start(s)
	if err := s.Fill32(acc, 0, 0, nq*int(b.n)); err != nil {
		return err
	}
	if err := s.Fill32(ctr, 0, 0, 4); err != nil {
		return err
	}
	b.tm.stop(s, t, phScore)
	st := statusSlots{buf: stBuf}
	d, err := allocDecode(mem, big.nblk, big.dbytes, big.fbytes, big.nval)
	if err != nil {
		return err
	}
	for j := range steps {
		stp := steps[j]
		pSeg := pSegs + cuda.DevicePtr(40*stp.seg0)
		if err := b.decodeLists(d, pSeg, stp.nseg, stp.nblk, st.pair(b)); err != nil {
			return err
		}
		t = b.tm.start(s)
		if err := qk.OrAccumulate(s, pSeg, stp.nseg, pTerms, b.norms.Ptr(), b.n, b.k1p1, d.docs.Ptr(), d.freqs.Ptr(),
			stp.nval, acc.Ptr(), ctr.Ptr()); err != nil {
			return err
		}
		b.tm.stop(s, t, phScore)
		b.prof.Launches += 2
	}
	var res, cnt, total, scratch *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&res, &cnt, &total, &scratch}, 8*nres, 4*nq, 4*nq, 8*scratchWords); err != nil {
		return err
	}
	t = b.tm.start(s)
	if err := qk.TopK(s, true, nq, pMeta, 0, 0, 0, 0, acc.Ptr(), b.n, res.Ptr(), cnt.Ptr(), total.Ptr(),
		scratch.Ptr(), pScr); err != nil {
		return err
	}
	b.tm.stop(s, t, phTopK)
	b.prof.Launches++
	dl := []*download{{src: cnt, n: 4 * nq}, {src: total, n: 4 * nq}, {src: ctr, n: 16},
		{src: st.buf, n: 8 * st.n}, {src: res, n: 8 * nres}}
	if err := b.fetch(mem, dl); err != nil {
		return err
	}
	cnts, tots := b.down.u32(dl[0].at, nq), b.down.u32(dl[1].at, nq)
	if err := b.corruptError(b.down.u32(dl[2].at, 4)[kern.QueryErrDocs], b.down.u64(dl[3].at, st.n), st.codecs); err != nil {
		return err
	}
	keys := b.down.u64(dl[4].at, nres)
	offs, err := resultOffsets(qs, cnts)
	if err != nil {
		return err
	}
	parallel(nq, func(lo, hi int) {
		for a := lo; a < hi; a++ {
			p := qs[a]
			p.st.OrAlgo = OrGPU
			for _, t := range p.terms {
				p.st.BlocksDecoded += int64(b.info[t.id].nb)
				p.st.PostingsDecoded += int64(t.df)
			}
			p.st.Candidates += int64(tots[a])
			out[p.i].Results = results(out[p.i].Results[:0], keys[offs[a]:offs[a]+int(cnts[a])])
		}
	})
	return nil
}
