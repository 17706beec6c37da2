package gpu

import (
	"fmt"
	"math"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// runOrWholePlanned answers the OR queries of the plan pl (each orWhole),
// filled at pl.upAt of pl.up (orplan.go), with one CTA per query: upload
// QMeta and QTerms, one launch, download the result keys, their counts
// and the counters; with pend the download is left there for the batch's
// goroutine to convert (finishOr), else the results are written here.
func (b *Backend) runOrWholePlanned(mem *devMem, pl *orWholePlan, pend *pendingResults, out []engine.Response) error {
	ok, err := b.tileKernels()
	if err != nil {
		return err
	}
	qs, nq, nres := pl.qs, pl.nq, pl.nres
	dev, err := b.uploadFrom(mem, pl.up, pl.upAt, pl.size, pl.size)
	if err != nil {
		return err
	}
	base, oMeta, oTerms := dev.Ptr(), pl.oMeta, pl.oTerms
	var ctr, res, cnt, total *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&ctr, &res, &cnt, &total}, 4*kern.OrCounters, 8*max(1, nres), 4*nq, 4*nq); err != nil {
		return err
	}
	s := b.stream
	t := b.tm.start(s)
	if err := s.Fill32(ctr, 0, 0, kern.OrCounters); err != nil {
		return err
	}
	if err := ok.Whole(s, nq, base+cuda.DevicePtr(oMeta), base+cuda.DevicePtr(oTerms), b.terms.Ptr(), b.post.Ptr(), b.bs,
		b.norms.Ptr(), b.n, b.k1p1, ctr.Ptr(), res.Ptr(), cnt.Ptr(), total.Ptr()); err != nil {
		return err
	}
	b.tm.stop(s, t, phScore)
	b.prof.Launches++
	dl := []*download{{src: cnt, n: 4 * nq}, {src: total, n: 4 * nq}, {src: ctr, n: 4 * kern.OrCounters},
		{src: res, n: 8 * nres}}
	dn, err := b.fetchTo(mem, pend, dl, out)
	if err != nil {
		return err
	}
	cnts, totals := dn.u32(dl[0].at, nq), dn.u32(dl[1].at, nq)
	ctrs := dn.u32(dl[2].at, kern.OrCounters)
	if err := b.corruptError(ctrs[kern.QueryErrDocs], nil, nil); err != nil {
		return err
	}
	if c := ctrs[kern.AndErrFreqs]; c != 0 {
		return fmt.Errorf("%w: %d bp128 frequency blocks are corrupt", index.ErrCorrupt, c)
	}
	for a, c := range cnts {
		if c == math.MaxUint32 {
			panic(fmt.Sprintf("gpu: BUG: OR query %q routed whole with %d terms and %d postings", qs[a].q.ID,
				len(qs[a].terms), qs[a].postings()))
		}
	}
	b.prof.OrWholeQueries += int64(nq)
	b.prof.OrWholeBlocks += int64(ctrs[kern.OrCntBlocks])
	if pend != nil {
		pend.sets = append(pend.sets, pendingSet{kind: pendOr, qs: qs, cnts: dl[0].at, tots: dl[1].at, keys: dl[3].at, nres: nres})
		return nil
	}
	return b.orResults(qs, dn.u64(dl[3].at, nres), cnts, totals, out)
}
