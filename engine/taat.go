package engine

import (
	"math"

	"github.com/qpengine/qp/internal/pages"
	"github.com/qpengine/qp/score"
	"github.com/qpengine/qp/topk"
)

// orTAAT is Ding et al.'s brute-force TAAT for disjunctive queries (WWW'09
// §8: "we maintain a score accumulator for every document in the collection
// ... go over the lists for the query terms one after the other, compute the
// contribution of each posting ... and add the score to the corresponding
// accumulator"), with the lists in canonical order so that each accumulator
// receives its terms in exactly the order of score/bm25.go (0 + s = s, so
// the first addition is exact). A touched list records the documents whose
// accumulator left zero (term scores are always > 0: idf > 0 and tf >= 1),
// so topk.SelectZero (the selection and the reset) costs O(touched), not O(N).
func (e *Engine) orTAAT(dst []topk.Result, k int) ([]topk.Result, error) {
	if len(e.acc) != int(e.n) {
		e.acc = pages.Zeroed[float32](int(e.n)) // written first: no copy-on-write faults
	}
	acc := e.acc
	nt := 0
	for i := range e.terms {
		var err error
		if nt, err = e.taatList(i, nt); err != nil {
			// Leave the accumulator zeroed for the next query.
			for _, d := range e.touched[:nt] {
				acc[d] = 0
			}
			return dst[:0], err
		}
	}
	e.st.Candidates += int64(nt)
	// The selection zeroes each accumulator as it reads it (step 45,
	// docs/CPU-ENGINE.md): no pass of its own for the reset.
	return topk.SelectZero(dst, acc, e.touched[:nt], k), nil
}

// taatList adds canonical term i's contributions to e.acc, appending the
// documents it touches first to e.touched[:nt], and returns the new count.
func (e *Engine) taatList(i, nt int) (int, error) {
	t := &e.terms[i]
	l := &t.list // not copied (step 47)
	if l.IsBitmap() {
		bl, err := e.blockList(i)
		if err != nil {
			return nt, err
		}
		l = &bl
	}
	e.dbuf = growU32(e.dbuf, l.BlockSize)
	e.fbuf = growU32(e.fbuf, l.BlockSize)
	if cap(e.xbuf) < l.BlockSize {
		e.xbuf = make([]float32, l.BlockSize)
	}
	acc, norms, k1p1, idf, w := e.acc, e.norms, e.k1p1, t.idf, t.w
	prev := int64(-1)
	for b := 0; b < l.NBlocks; b++ {
		n, err := l.DecodeDocs(b, e.dbuf)
		if err != nil {
			return nt, err
		}
		if _, err := l.DecodeFreqs(b, e.fbuf); err != nil {
			return nt, err
		}
		docs := e.dbuf[:n]
		freqs := e.fbuf[:len(docs)]
		// DecodeDocs checked that the block's docIDs increase up to the
		// skip table's last docID, which Open checked to increase below
		// N: only the order across blocks is left to check.
		if int64(docs[0]) <= prev {
			return nt, checkDocs(l, docs, prev, e.n)
		}
		prev = int64(docs[n-1])
		if cap(e.touched) < nt+n {
			grown := make([]uint32, 2*(nt+n))
			copy(grown, e.touched[:nt])
			e.touched = grown
		}
		e.touched = e.touched[:cap(e.touched)]
		touched := e.touched[nt : nt+n]
		// The block's contributions first, 8 at a time where the CPU
		// can (score.Terms; step 43, docs/CPU-ENGINE.md), from its
		// documents' norms gathered in place.
		xs := e.xbuf[:n]
		for j, d := range docs {
			xs[j] = norms[d]
		}
		score.Terms(xs, freqs, xs, idf, k1p1, w)
		m := 0
		for j, d := range docs {
			a := acc[d]
			// Branch-free append of d when a == 0: a is +0 or a sum of
			// positive float32s (bits 1..0x7f800000), so bits-1 has its
			// top bit set exactly when a == 0.
			touched[m] = d
			m += int((math.Float32bits(a) - 1) >> 31)
			acc[d] = a + xs[j]
		}
		nt += m
	}
	e.st.BlocksDecoded += int64(l.NBlocks)
	e.st.PostingsDecoded += int64(l.DF)
	return nt, nil
}
