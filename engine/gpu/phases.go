package gpu

import (
	"fmt"
	"math"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/engine"
)

// decodeBufs are the buffers of one pair of decoding launches (docIDs and
// frequencies of the same nblk blocks).
type decodeBufs struct {
	blkTerm, blkIdx, dOff, fOff, oOff, gdocs, gfreqs, base, last, docs, freqs *cuda.Buffer
}

func (d *decodeBufs) all() []*cuda.Buffer {
	if d == nil {
		return nil
	}
	return []*cuda.Buffer{d.blkTerm, d.blkIdx, d.dOff, d.fOff, d.oOff, d.gdocs, d.gfreqs, d.base, d.last, d.docs, d.freqs}
}

func allocDecode(mem *devMem, nblk, dbytes, fbytes, nval int) (*decodeBufs, error) {
	d := &decodeBufs{}
	err := mem.gets([]**cuda.Buffer{&d.blkTerm, &d.blkIdx, &d.dOff, &d.fOff, &d.oOff, &d.gdocs, &d.gfreqs,
		&d.base, &d.last, &d.docs, &d.freqs},
		4*nblk, 4*nblk, 8*(nblk+1), 8*(nblk+1), 8*(nblk+1), dbytes, fbytes, 4*nblk, 4*nblk, 4*nval, 4*nval)
	return d, err
}

// decode enqueues the gathering of the nblk blocks listed in d and their
// decoding into d.docs and d.freqs; the decoders' status words go to st
// (two views of 8 bytes).
func (b *Backend) decode(d *decodeBufs, nblk int, st [2]*cuda.Buffer) error {
	s := b.stream
	if err := b.qk.Gather(s, b.terms.Ptr(), b.post.Ptr(), nblk, d.blkTerm.Ptr(), d.blkIdx.Ptr(), d.dOff.Ptr(),
		d.fOff.Ptr(), d.gdocs.Ptr(), d.gfreqs.Ptr(), d.base.Ptr(), d.last.Ptr()); err != nil {
		return err
	}
	if err := b.kern.LaunchDecode(s, b.docCodec.ID(), cuda.DecodeArgs{NBlocks: nblk, Mode: cuda.Docs,
		Src: d.gdocs, SrcOff: d.dOff, OutOff: d.oOff, Base: d.base, Last: d.last, Out: d.docs, Status: st[0]}); err != nil {
		return err
	}
	b.prof.Launches += 3
	return b.kern.LaunchDecode(s, b.freqCodec.ID(), cuda.DecodeArgs{NBlocks: nblk, Mode: cuda.Freqs,
		Src: d.gfreqs, SrcOff: d.fOff, OutOff: d.oOff, Out: d.freqs, Status: st[1]})
}

// statusSlots hands out 8-byte views of a buffer for decoder status words.
type statusSlots struct {
	buf    *cuda.Buffer
	n      int
	codecs []string
}

func (s *statusSlots) pair(b *Backend) [2]*cuda.Buffer {
	if 8*(s.n+2) > s.buf.Len() {
		panic("BUG: gpu: too few decoder status slots")
	}
	v := [2]*cuda.Buffer{cuda.BufferView(s.buf, 8*s.n, 8), cuda.BufferView(s.buf, 8*s.n+8, 8)}
	s.n += 2
	s.codecs = append(s.codecs, b.docCodec.Name(), b.freqCodec.Name())
	return v
}

func pow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// queryTables are the per-query uploads of a phase.
type queryTables struct {
	meta, terms, segs, scratchOff cuda.DevicePtr
	nres, scratchWords            int
}

// fillQueries writes QMeta, QTerm and the top-k scratch offsets of qs into
// the upload arena at the given offsets.
func (b *Backend) fillQueries(qs []*prep, oMeta, oTerms, oScr int) (nres, scratchWords int) {
	meta := b.up.u32(oMeta, cuda.QMetaWords*len(qs))
	scr := b.up.u64(oScr, len(qs))
	toff := 0
	for a, p := range qs {
		cuda.PutQMeta(meta[cuda.QMetaWords*a:], uint32(len(p.terms)), uint32(toff), uint32(p.q.K), uint32(nres))
		qt := b.up.u32(oTerms+16*toff, cuda.QTermWords*len(p.terms))
		for j, t := range p.terms {
			cuda.PutQTerm(qt[cuda.QTermWords*j:], uint32(t.id), t.w, t.idf)
		}
		scr[a] = 0
		if p.q.K > 4096 {
			scr[a] = uint64(scratchWords)
			scratchWords += pow2(p.q.K)
		}
		toff += len(p.terms)
		nres += p.q.K
	}
	return nres, scratchWords
}

// upload copies the first n bytes of the upload arena to a new device
// buffer.
func (b *Backend) upload(mem *devMem, n int) (cuda.DevicePtr, error) {
	dev, err := mem.get(n)
	if err != nil {
		return 0, err
	}
	t := b.tm.start(b.stream)
	if err := b.stream.CopyToDevice(dev, 0, b.up.h, 0, n); err != nil {
		return 0, err
	}
	b.tm.stop(b.stream, t, phTransfer)
	return dev.Ptr(), nil
}

// download is one device-to-host copy of a phase's final transfer.
type download struct {
	src *cuda.Buffer
	n   int // bytes
	at  int // offset in the download arena
}

// fetch copies every part to the download arena and waits for the stream.
func (b *Backend) fetch(mem *devMem, parts []*download) error {
	var l layout
	for _, p := range parts {
		p.at = l.add(p.n)
	}
	if err := b.down.reset(l.size); err != nil {
		return err
	}
	b.down.take(l.size)
	s := b.stream
	t := b.tm.start(s)
	for _, p := range parts {
		if err := s.CopyFromDevice(b.down.h, p.at, p.src, 0, p.n); err != nil {
			return err
		}
	}
	b.tm.stop(s, t, phTransfer)
	if err := s.Synchronize(); err != nil {
		return err
	}
	return mem.synced()
}

// total reads n bytes from the end of src (an exclusive scan's total) with a
// synchronization.
func (b *Backend) total(mem *devMem, src *cuda.Buffer, off, n int) error {
	if err := b.small.reset(64); err != nil {
		return err
	}
	s := b.stream
	if err := s.CopyFromDevice(b.small.h, 0, src, off, n); err != nil {
		return err
	}
	if err := s.Synchronize(); err != nil {
		return err
	}
	return mem.synced()
}

// runAnd evaluates the conjunctions of qs (every query has >= 1 term, all
// known) and writes the results of the queries that end there; AndOr
// queries with fewer than K results get needOr.
func (b *Backend) runAnd(mem *devMem, qs []*prep, out []engine.Response) error {
	s := b.stream
	qk := b.qk
	nq := len(qs)
	var nterms, maxM, nblk, dbytes, fbytes, nval int
	for _, p := range qs {
		nterms += len(p.terms)
		maxM = max(maxM, len(p.terms))
		ti := b.info[p.terms[0].id]
		nblk += int(ti.nb)
		dbytes += int(ti.dlen)
		fbytes += int(ti.flen)
		nval += int(ti.df)
	}
	if nval > math.MaxInt32/2 || dbytes > math.MaxInt32 || fbytes > math.MaxInt32 {
		return fmt.Errorf("%w: launch set of %d postings", cuda.ErrOutOfMemory, nval)
	}
	// Uploads: QMeta | QTerm | Seg (the shortest lists) | scratch offsets.
	var lay layout
	oMeta, oTerms, oSegs, oScr := lay.add(16*nq), lay.add(16*nterms), lay.add(40*nq), lay.add(8*nq)
	if err := b.up.reset(lay.size); err != nil {
		return err
	}
	b.up.take(lay.size)
	nres, scratchWords := b.fillQueries(qs, oMeta, oTerms, oScr)
	segs := b.up.u32(oSegs, cuda.SegWords*nq)
	var d0, f0, v0, blk0, toff int
	for a, p := range qs {
		t := p.terms[0]
		ti := b.info[t.id]
		cuda.PutSeg(segs[cuda.SegWords*a:], uint64(d0), uint64(f0), uint64(v0), uint32(t.id), uint32(blk0), uint32(a), uint32(toff))
		d0, f0, v0, blk0 = d0+int(ti.dlen), f0+int(ti.flen), v0+int(ti.df), blk0+int(ti.nb)
		toff += len(p.terms)
	}
	base, err := b.upload(mem, lay.size)
	if err != nil {
		return err
	}
	pMeta, pTerms, pSegs, pScr := base+cuda.DevicePtr(oMeta), base+cuda.DevicePtr(oTerms), base+cuda.DevicePtr(oSegs), base+cuda.DevicePtr(oScr)
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
	t := b.tm.start(s)
	if err := qk.FullDesc(s, pSegs, nq, terms, post, nblk, b.bs, d.blkTerm.Ptr(), d.blkIdx.Ptr(), d.dOff.Ptr(),
		d.fOff.Ptr(), d.oOff.Ptr()); err != nil {
		return err
	}
	if err := b.decode(d, nblk, st.pair(b)); err != nil {
		return err
	}
	b.tm.stop(s, t, phDecode)
	n := nval
	var cdoc, cscore, cq *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&cdoc, &cscore, &cq}, 4*n, 4*n, 4*n); err != nil {
		return err
	}
	t = b.tm.start(s)
	if err := qk.AndInit(s, pSegs, nq, pTerms, norms, b.n, b.k1p1, d.docs.Ptr(), d.freqs.Ptr(), nval,
		cdoc.Ptr(), cscore.Ptr(), cq.Ptr(), pErr); err != nil {
		return err
	}
	b.tm.stop(s, t, phScore)
	b.prof.Launches += 2
	mem.retire(d.all()...)

	// Steps 1..: select blocks, decode them, intersect, compact.
	for j := 1; j < maxM && n > 0; j++ {
		var blk, sel, part, flag, partU *cuda.Buffer
		if err := mem.gets([]**cuda.Buffer{&blk, &sel, &part, &flag, &partU},
			4*n, 32*(n+1), 32*(cuda.ScanParts(n)+1), 4*(n+1), 4*(cuda.ScanParts(n)+1)); err != nil {
			return err
		}
		t = b.tm.start(s)
		if err := qk.AndSelect(s, terms, post, pMeta, pTerms, j, n, cdoc.Ptr(), cq.Ptr(), blk.Ptr()); err != nil {
			return err
		}
		if err := qk.AndHeads(s, terms, post, pMeta, pTerms, j, n, b.bs, cq.Ptr(), blk.Ptr(), sel.Ptr(), pBlocks, pPost); err != nil {
			return err
		}
		if err := qk.ScanS4(s, sel.Ptr(), sel.Ptr(), part.Ptr(), n); err != nil {
			return err
		}
		b.tm.stop(s, t, phIntersect)
		b.prof.Launches += 5
		if err := b.total(mem, sel, 32*n, 32); err != nil {
			return err
		}
		tot := b.small.u64(0, 4)
		nsel, vals, db, fb := int(tot[0]), int(tot[1]), int(tot[2]), int(tot[3])
		if nsel > n || vals > 128*n || db > math.MaxInt32 || fb > math.MaxInt32 {
			return fmt.Errorf("gpu: BUG: block selection totals %v for %d candidates", tot, n)
		}
		var dd *decodeBufs
		var pO, pDocs, pFreqs cuda.DevicePtr
		if nsel > 0 {
			if dd, err = allocDecode(mem, nsel, db, fb, vals); err != nil {
				return err
			}
			t = b.tm.start(s)
			if err := qk.AndDesc(s, pMeta, pTerms, j, n, cq.Ptr(), blk.Ptr(), sel.Ptr(), dd.blkTerm.Ptr(), dd.blkIdx.Ptr(),
				dd.dOff.Ptr(), dd.fOff.Ptr(), dd.oOff.Ptr()); err != nil {
				return err
			}
			b.tm.stop(s, t, phIntersect)
			t = b.tm.start(s)
			if err := b.decode(dd, nsel, st.pair(b)); err != nil {
				return err
			}
			b.tm.stop(s, t, phDecode)
			b.prof.Launches++
			pO, pDocs, pFreqs = dd.oOff.Ptr(), dd.docs.Ptr(), dd.freqs.Ptr()
		}
		t = b.tm.start(s)
		if err := qk.AndIntersect(s, pMeta, pTerms, j, n, norms, b.k1p1, cdoc.Ptr(), cscore.Ptr(), cq.Ptr(), blk.Ptr(),
			sel.Ptr(), pO, pDocs, pFreqs, flag.Ptr()); err != nil {
			return err
		}
		if err := qk.ScanU32(s, flag.Ptr(), flag.Ptr(), partU.Ptr(), n); err != nil {
			return err
		}
		b.tm.stop(s, t, phIntersect)
		b.prof.Launches += 4
		mem.retire(blk, sel, part, partU)
		mem.retire(dd.all()...)
		if err := b.total(mem, flag, 4*n, 4); err != nil {
			return err
		}
		n2 := int(b.small.u32(0, 1)[0])
		if n2 > n {
			return fmt.Errorf("gpu: BUG: %d of %d candidates kept", n2, n)
		}
		if n2 != n && n2 > 0 {
			var ndoc, nscore, nqq *cuda.Buffer
			if err := mem.gets([]**cuda.Buffer{&ndoc, &nscore, &nqq}, 4*n2, 4*n2, 4*n2); err != nil {
				return err
			}
			t = b.tm.start(s)
			if err := qk.Compact(s, n, flag.Ptr(), cdoc.Ptr(), cscore.Ptr(), cq.Ptr(), ndoc.Ptr(), nscore.Ptr(), nqq.Ptr()); err != nil {
				return err
			}
			b.tm.stop(s, t, phIntersect)
			b.prof.Launches++
			mem.retire(cdoc, cscore, cq)
			cdoc, cscore, cq = ndoc, nscore, nqq
		}
		mem.retire(flag)
		n = n2
	}

	// Top-k and the results.
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
	cnts, tots := b.down.u32(dl[0].at, nq), b.down.u32(dl[1].at, nq)
	ctrs := b.down.u32(dl[2].at, 4+2*nq)
	if err := b.corruptError(ctrs[cuda.QueryErrDocs], b.down.u64(dl[3].at, st.n), st.codecs); err != nil {
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

// runOr evaluates the disjunctions of qs (every query has >= 1 known term)
// with dense accumulators and writes their results.
func (b *Backend) runOr(mem *devMem, qs []*prep, out []engine.Response) error {
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
	segs := b.up.u32(oSegs, cuda.SegWords*nterms)
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
			cuda.PutSeg(segs[cuda.SegWords*ns:], uint64(st.dbytes), uint64(st.fbytes), uint64(st.nval), uint32(t.id),
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
		t = b.tm.start(s)
		if err := qk.FullDesc(s, pSeg, stp.nseg, b.terms.Ptr(), b.post.Ptr(), stp.nblk, b.bs, d.blkTerm.Ptr(),
			d.blkIdx.Ptr(), d.dOff.Ptr(), d.fOff.Ptr(), d.oOff.Ptr()); err != nil {
			return err
		}
		if err := b.decode(d, stp.nblk, st.pair(b)); err != nil {
			return err
		}
		b.tm.stop(s, t, phDecode)
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
	if err := b.corruptError(b.down.u32(dl[2].at, 4)[cuda.QueryErrDocs], b.down.u64(dl[3].at, st.n), st.codecs); err != nil {
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
