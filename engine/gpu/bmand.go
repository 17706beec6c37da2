package gpu

import (
	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
)

// The bitmap AND (Options.BitmapAnd, issues 20 §4 and 25; docs/GPU-QUERY.md
// "Bitmap AND of all-dense queries"): a query every term of which has a
// device bitmap in use, term 0 included (its shortest list is then dense
// too), gets its candidates from the word-wise AND of its columns
// (kern.AndKernels.BitmapAnd: N/31 words a term, the intersection
// directly) instead of decoding its shortest list and testing each
// posting against the other columns; qp_and_bmscore_all then scores every
// term by rank (bp128 frequencies by slot), from term 0 on in canonical
// order, so the float32 sums and the results are the candidate plan's.
// Such queries of a launch set run as a sub-run of their own after the
// set's other AND queries (runBitmapAnd: upload, the AND, the scores,
// top-k, download), planned on the owner.

// BitmapAndMode is Options.BitmapAnd: auto (the zero value), on or off.
type BitmapAndMode int8

const (
	// BitmapAndAuto runs the bitmap AND on indexes of at least
	// BitmapAndMinDocs documents.
	BitmapAndAuto BitmapAndMode = iota
	// BitmapAndOn runs it on any index.
	BitmapAndOn
	// BitmapAndOff never runs it.
	BitmapAndOff
)

// BitmapAndMinDocs is where BitmapAndAuto turns the bitmap AND on. Measured
// (docs/GPU-QUERY.md, "Bitmap AND of all-dense queries", topic-model gen
// and real text, TREC'06, top-10): AND 1.14x at 10M documents (H200) and
// 1.15x at 25M (H100), against 0.95-0.98x on GCIDE (126k documents: its
// many all-dense queries have short lists, and a word-wise AND reads
// N/31 words a term) and 0.99-1.05x on RFC pages (209k). The per-query
// cost (columns of N/31 words against the shortest list's postings)
// is the finer rule, not measured yet.
const BitmapAndMinDocs = 1 << 20

// bitmapAndOn reports whether the bitmap AND can run: the option is on
// (or auto on a large enough index), the frequencies are bp128 and read
// by slot (qp_and_bmscore_all's rank access), and use (the columns in
// use) is not nil.
func (b *Backend) bitmapAndOn(use []uint32) bool {
	on := b.opt.BitmapAnd == BitmapAndOn || (b.opt.BitmapAnd == BitmapAndAuto && b.n >= BitmapAndMinDocs)
	return on && use != nil && b.freqCodec.ID() == compress.IDBP128 && !b.and.decodeFreqs
}

// bitmapAndQuery reports whether p runs the bitmap AND: at least two
// terms, each with a column in use.
func bitmapAndQuery(use []uint32, p *prep) bool {
	if len(p.terms) < 2 {
		return false
	}
	for _, t := range p.terms {
		if use[t.id] == kern.AndNoColumn {
			return false
		}
	}
	return true
}

// splitBitmapAnd moves the bitmap-AND queries of qs (bitmapAndQuery by
// use) into bm, keeping both in qs's order; rest and bm reuse the given
// slices' storage (rest must not alias qs).
func splitBitmapAnd(qs []*prep, use []uint32, rest, bm []*prep) ([]*prep, []*prep) {
	rest, bm = rest[:0], bm[:0]
	for _, p := range qs {
		if bitmapAndQuery(use, p) {
			bm = append(bm, p)
		} else {
			rest = append(rest, p)
		}
	}
	return rest, bm
}

// runBitmapAnd evaluates the AND queries qs, each a bitmapAndQuery of the
// columns in use, by the bitmap AND and writes their results (AndOr
// queries with fewer than K results get needOr), on the owner.
func (b *Backend) runBitmapAnd(mem *devMem, qs []*prep, out []engine.Response) error {
	r, err := b.planAnd(mem, qs, false)
	if err != nil {
		return err
	}
	r.bmAnd = true
	if err := r.fill(); err != nil {
		return err
	}
	if err := r.upload(); err != nil {
		return err
	}
	if err := r.bitmapAndCandidates(); err != nil {
		return err
	}
	if err := r.selectTopK(); err != nil {
		return err
	}
	return r.download(out)
}

// bitmapAndCandidates makes the candidates of the set's queries from the
// AND of their columns and scores them: r.nval slots (the sum of the
// shortest lists, which bounds the intersections), the intersections
// first, grouped by ascending query, the rest AndNone.
func (r *andRun) bitmapAndCandidates() error {
	b, s, mem := r.b, r.b.stream, r.mem
	n, D := r.nval, b.bm.d
	var cnt, part *cuda.Buffer
	if err := mem.gets([]**cuda.Buffer{&r.cdoc, &r.cscore, &r.cq, &cnt, &part}, 4*n, 4*n, 4*n, 4*(r.nq*D+1),
		4*kern.BitmapAndParts(b.bm.dev, r.nq)); err != nil {
		return err
	}
	t := b.tm.start(s)
	for _, f := range []struct {
		buf *cuda.Buffer
		v   uint32
	}{{r.cdoc, 0}, {r.cscore, 0}, {r.cq, kern.AndNone}} {
		if err := s.Fill32(f.buf, 0, f.v, n); err != nil {
			return err
		}
	}
	if err := r.ak.BitmapAnd(s, r.pMeta, r.pTerms, b.bm.dev, r.nq, cnt.Ptr(), part.Ptr(), n, r.cdoc.Ptr(), r.cq.Ptr()); err != nil {
		return err
	}
	b.tm.stop(s, t, phIntersect)
	b.prof.Launches += 3 + int64(kern.ScanLaunches(r.nq*D)) // words, the scan's reduce and rest, emit
	t = b.tm.start(s)
	if err := r.ak.BitmapScore(s, true, b.terms.Ptr(), b.post.Ptr(), r.pMeta, r.pTerms, b.bm.dev, n, b.bs, b.norms.Ptr(), b.k1p1,
		r.cdoc.Ptr(), r.cscore.Ptr(), r.cq.Ptr(), r.pErr); err != nil {
		return err
	}
	b.tm.stop(s, t, phScore)
	b.prof.Launches++
	b.prof.BitmapAndQueries += int64(r.nq)
	mem.retire(cnt, part)
	r.n = n
	return nil
}
