package engine

import (
	"fmt"

	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/topk"
)

// runOr evaluates the disjunction of e.terms and writes the top K to dst.
// opt is resolved. MaxScore and BlockMax-WAND run a query whose lists are
// all short (Options.OrTAATPostings) by OrTAAT, and one whose shortest
// lists are short (or, with two or more lists, none is) by orTAATMaxScore;
// e.st.OrAlgo records what ran.
func (e *Engine) runOr(dst []topk.Result, k int, opt Options) ([]topk.Result, error) {
	e.heap.Reset(k)
	if len(e.terms) == 0 {
		return dst[:0], nil
	}
	var err error
	algo := opt.OrAlgo
	if e.bitmapTerms(opt.OrBitmapDensity, NoBitmaps) > 0 {
		e.st.OrBitmaps = len(e.bidx)
		algo = "bitmap"
	} else if algo == OrMaxScore || algo == OrBMW {
		p := e.taatPrefix(opt.OrTAATPostings)
		if p == 0 && len(e.terms) >= 2 && e.taatLong(opt.OrTAATPostings) {
			// No short list, two or more long ones: the TAAT plan
			// with the shortest list as its prefix (step 29,
			// docs/CPU-ENGINE.md) beats MaxScore (three or more
			// lists) and BMW (two or more) over all of them.
			p = 1
		}
		if p == 0 && len(e.terms) == 1 && opt.OrTAATPostings >= 0 {
			// One long list: MaxScore's one-list loop (maxScoreOne,
			// block-max skipping) is BMW's best case too, without
			// BMW's pivot bookkeeping (step 31, docs/CPU-ENGINE.md).
			// NoTAAT keeps the strategy asked for.
			algo = OrMaxScore
		}
		switch {
		case p == len(e.terms):
			algo = OrTAAT
		case p > 0:
			e.st.OrAlgo = OrTAATMaxScore
			if err := e.orTAATMaxScore(p, opt.OrTAATPostings); err != nil {
				return dst[:0], err
			}
			return e.heap.Results(dst), nil
		}
		e.st.OrAlgo = algo
	}
	switch algo {
	case "bitmap":
		err = e.orBitmap()
	case OrTAAT:
		return e.orTAAT(dst, k)
	case OrDAAT:
		err = e.orDAAT()
	case OrMaxScore:
		err = e.orMaxScore()
	case OrBMW:
		err = e.orBMW()
	default:
		panic(fmt.Sprintf("BUG: unresolved OR strategy %q", algo))
	}
	if err != nil {
		return dst[:0], err
	}
	return e.heap.Results(dst), nil
}

// orDAAT is exhaustive document-at-a-time evaluation: every document of
// every list is scored, its terms visited in canonical order.
func (e *Engine) orDAAT() error {
	if err := e.ensureCursors(); err != nil {
		return err
	}
	cs := e.curs
	h := &e.heap
	d := index.Terminated
	for i := range cs {
		d = min(d, cs[i].DocID())
	}
	for d != index.Terminated {
		var s float32
		nd := index.Terminated
		for i := range cs {
			c := &cs[i]
			if c.DocID() == d {
				s += e.term(i, c.freq(), d)
				c.next()
			}
			nd = min(nd, c.DocID())
		}
		e.st.Candidates++
		h.Push(d, s)
		d = nd
	}
	return e.finishCursors(0)
}
