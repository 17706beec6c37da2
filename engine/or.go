package engine

import (
	"fmt"

	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/score"
	"github.com/qpengine/qp/topk"
)

// runOr evaluates the disjunction of e.terms and writes the top K to dst.
func (e *Engine) runOr(dst []topk.Result, k int, algo OrStrategy, bitmapDensity float64) ([]topk.Result, error) {
	e.heap.Reset(k)
	if len(e.terms) == 0 {
		return dst[:0], nil
	}
	var err error
	if e.bitmapTerms(bitmapDensity, NoBitmaps) > 0 {
		e.st.OrBitmaps = len(e.bidx)
		algo = "bitmap"
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

// orTAAT is Ding et al.'s brute-force TAAT for disjunctive queries (WWW'09
// §8: "we maintain a score accumulator for every document in the collection
// ... go over the lists for the query terms one after the other, compute the
// contribution of each posting ... and add the score to the corresponding
// accumulator"), with the lists in canonical order so that each accumulator
// receives its terms in exactly the order of score/bm25.go. A touched list
// records the documents whose accumulator left zero (term scores are always
// > 0: idf > 0 and tf >= 1), so topk.Select and the final reset cost
// O(touched), not O(N).
func (e *Engine) orTAAT(dst []topk.Result, k int) ([]topk.Result, error) {
	if len(e.acc) != int(e.n) {
		e.acc = make([]float32, e.n)
	}
	acc := e.acc
	touched := e.touched[:0]
	defer func() {
		// Leave the accumulator zeroed for the next query, also on errors.
		for _, d := range touched {
			acc[d] = 0
		}
		e.touched = touched[:0]
	}()
	norms := e.norms
	k1p1 := e.k1p1
	for i := range e.terms {
		t := &e.terms[i]
		l := &t.list
		e.dbuf = growU32(e.dbuf, l.BlockSize)
		e.fbuf = growU32(e.fbuf, l.BlockSize)
		prev := int64(-1)
		for b := 0; b < l.NBlocks; b++ {
			n, err := l.DecodeDocs(b, e.dbuf)
			if err != nil {
				return dst[:0], err
			}
			if _, err := l.DecodeFreqs(b, e.fbuf); err != nil {
				return dst[:0], err
			}
			docs, freqs := e.dbuf[:n], e.fbuf[:n]
			if err := checkDocs(l, docs, prev, e.n); err != nil {
				return dst[:0], err
			}
			prev = int64(docs[n-1])
			idf, w := t.idf, t.w
			for j, d := range docs {
				if acc[d] == 0 {
					touched = append(touched, d)
				}
				acc[d] += float32(w * score.Term(idf, k1p1, freqs[j], norms[d]))
			}
		}
		e.st.BlocksDecoded += int64(l.NBlocks)
		e.st.PostingsDecoded += int64(l.DF)
	}
	e.st.Candidates += int64(len(touched))
	return topk.Select(dst, acc, touched, k), nil
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
	return e.finishCursors()
}
