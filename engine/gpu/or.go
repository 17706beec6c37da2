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
// term) with dense accumulators and writes their results: plan (one step
// per canonical term position j, the j-th lists of every query), upload,
// the steps (decode, accumulate), top-k over the rows, download.
func (b *Backend) runOrDense(mem *devMem, qs []*prep, out []engine.Response) error {
	r := b.planOrDense(mem, qs)
	if err := r.upload(); err != nil {
		return err
	}
	if err := r.accumulate(); err != nil {
		return err
	}
	if err := r.selectTopK(); err != nil {
		return err
	}
	return r.download(out)
}

// orDenseStep is the j-th lists of every query of a dense OR set: Segs
// seg0.. (nseg), their blocks, encoded bytes and postings.
type orDenseStep struct{ seg0, nseg, nblk, dbytes, fbytes, nval int }

// orDenseRun is the state of one runOrDense launch set.
type orDenseRun struct {
	b                          *Backend
	mem                        *devMem
	qs                         []*prep
	nq, nterms                 int
	steps                      []orDenseStep
	big                        orDenseStep // the largest step, for the shared buffers
	oMeta, oTerms, oSegs, oScr int
	size, nres, scratchWords   int
	pMeta, pTerms, pSegs, pScr cuda.DevicePtr
	acc, ctr, res, cnt, total  *cuda.Buffer
	st                         statusSlots
}

// planOrDense counts the set's terms and steps and lays out its upload:
// QMeta | QTerm | Seg (every list, by step) | scratch offsets.
func (b *Backend) planOrDense(mem *devMem, qs []*prep) *orDenseRun {
	r := &orDenseRun{b: b, mem: mem, qs: qs, nq: len(qs)}
	maxM := 0
	for _, p := range qs {
		r.nterms += len(p.terms)
		maxM = max(maxM, len(p.terms))
	}
	r.steps = make([]orDenseStep, maxM)
	var lay layout
	r.oMeta, r.oTerms, r.oSegs, r.oScr = lay.add(16*r.nq), lay.add(16*r.nterms), lay.add(40*r.nterms), lay.add(8*r.nq)
	r.size = lay.size
	return r
}

// upload writes the QMeta, QTerms, the Segs step by step (sizing each
// step; an error matching cuda.ErrOutOfMemory past 2^31) and scratch
// offsets, and uploads them.
func (r *orDenseRun) upload() error {
	b, qs := r.b, r.qs
	if err := b.up.reset(r.size); err != nil {
		return err
	}
	b.up.take(r.size)
	_, r.nres, r.scratchWords = b.fillQueries(qs, r.oMeta, r.oTerms, r.oScr)
	segs := b.up.u32(r.oSegs, kern.SegWords*r.nterms)
	toff := make([]int, r.nq)
	for a := 1; a < r.nq; a++ {
		toff[a] = toff[a-1] + len(qs[a-1].terms)
	}
	big := &r.big
	ns := 0
	for j := range r.steps {
		st := &r.steps[j]
		st.seg0 = ns
		for a, p := range qs {
			if j >= len(p.terms) {
				continue
			}
			t := p.terms[j]
			ti := t.ti
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
	base, err := b.upload(r.mem, r.size)
	if err != nil {
		return err
	}
	r.pMeta, r.pTerms = base+cuda.DevicePtr(r.oMeta), base+cuda.DevicePtr(r.oTerms)
	r.pSegs, r.pScr = base+cuda.DevicePtr(r.oSegs), base+cuda.DevicePtr(r.oScr)
	return nil
}

// accumulate zeroes the rows (N floats per query) and the counters, then
// per step decodes the step's lists and adds them to the rows.
func (r *orDenseRun) accumulate() error {
	b, s, mem, nq := r.b, r.b.stream, r.mem, r.nq
	var stBuf *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&r.acc, &r.ctr, &stBuf}, 4*nq*int(b.n), 16, 16*len(r.steps)); err != nil {
		return err
	}
	t := b.tm.start(s)
	if err := s.Fill32(r.acc, 0, 0, nq*int(b.n)); err != nil {
		return err
	}
	if err := s.Fill32(r.ctr, 0, 0, 4); err != nil {
		return err
	}
	b.tm.stop(s, t, phScore)
	r.st = statusSlots{buf: stBuf}
	d, err := allocDecode(mem, r.big.nblk, r.big.dbytes, r.big.fbytes, r.big.nval)
	if err != nil {
		return err
	}
	for _, stp := range r.steps {
		pSeg := r.pSegs + cuda.DevicePtr(40*stp.seg0)
		if err := b.decodeLists(d, pSeg, stp.nseg, stp.nblk, r.st.pair(b)); err != nil {
			return err
		}
		t = b.tm.start(s)
		if err := b.qk.OrAccumulate(s, pSeg, stp.nseg, r.pTerms, b.norms.Ptr(), b.n, b.k1p1, d.docs.Ptr(), d.freqs.Ptr(),
			stp.nval, r.acc.Ptr(), r.ctr.Ptr()); err != nil {
			return err
		}
		b.tm.stop(s, t, phScore)
		b.prof.Launches += 2
	}
	return nil
}

// selectTopK selects each query's top k over its row (zeros skipped).
func (r *orDenseRun) selectTopK() error {
	b, s, nq := r.b, r.b.stream, r.nq
	var scratch *cuda.Buffer
	if err := r.mem.gets([]**cuda.Buffer{&r.res, &r.cnt, &r.total, &scratch}, 8*r.nres, 4*nq, 4*nq, 8*r.scratchWords); err != nil {
		return err
	}
	t := b.tm.start(s)
	if err := b.qk.TopK(s, true, nq, r.pMeta, 0, 0, 0, 0, r.acc.Ptr(), b.n, r.res.Ptr(), r.cnt.Ptr(), r.total.Ptr(),
		scratch.Ptr(), r.pScr); err != nil {
		return err
	}
	b.tm.stop(s, t, phTopK)
	b.prof.Launches++
	return nil
}

// download fetches the counts, counters, status slots and result keys,
// turns corrupt-data counters into errors and writes the results.
func (r *orDenseRun) download(out []engine.Response) error {
	b, nq, qs := r.b, r.nq, r.qs
	dl := []*download{{src: r.cnt, n: 4 * nq}, {src: r.total, n: 4 * nq}, {src: r.ctr, n: 16},
		{src: r.st.buf, n: 8 * r.st.n}, {src: r.res, n: 8 * r.nres}}
	if err := b.fetch(r.mem, dl); err != nil {
		return err
	}
	cnts, tots := b.down.u32(dl[0].at, nq), b.down.u32(dl[1].at, nq)
	if err := b.corruptError(b.down.u32(dl[2].at, 4)[kern.QueryErrDocs], b.down.u64(dl[3].at, r.st.n), r.st.codecs); err != nil {
		return err
	}
	return b.orResults(qs, b.down.u64(dl[4].at, r.nres), cnts, tots, out)
}

// orResults writes the results of OR queries qs evaluated exhaustively
// (every posting of every list: the dense accumulators, or whole in one
// CTA, orwhole.go): query a's cnts[a] rank keys, packed in query order in
// keys, and its stats (every block and posting of its lists decoded,
// tots[a] documents accumulated).
func (b *Backend) orResults(qs []*prep, keys []uint64, cnts, tots []uint32, out []engine.Response) error {
	offs, err := resultOffsets(qs, cnts)
	if err != nil {
		return err
	}
	b.convert(len(qs), func(lo, hi int) {
		for a := lo; a < hi; a++ {
			p := qs[a]
			p.st.OrAlgo = OrGPU
			for _, t := range p.terms {
				p.st.BlocksDecoded += int64(t.ti.nb)
				p.st.PostingsDecoded += int64(t.df)
			}
			p.st.Candidates += int64(tots[a])
			out[p.i].Results = results(out[p.i].Results[:0], keys[offs[a]:offs[a]+int(cnts[a])])
		}
	})
	return nil
}
