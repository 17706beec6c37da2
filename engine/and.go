package engine

import (
	"fmt"

	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/intersect"
)

// runAnd pushes every document of the intersection (or, with AndSkip, every
// one that may rank) into e.heap, scored in canonical order.
func (e *Engine) runAnd(algo AndAlgorithm, bitmapDensity, bitmapMax float64) error {
	if e.unknown || len(e.terms) == 0 {
		return nil
	}
	if len(e.terms) > 1 && e.bitmapTerms(bitmapDensity, bitmapMax) > 0 {
		e.st.AndBitmaps = len(e.bidx)
		return e.andBitmap()
	}
	switch algo {
	case AndSkip:
		return e.andSkip()
	case AndMerge, AndGalloping:
		return e.andDecoded(algo)
	}
	panic(fmt.Sprintf("BUG: unresolved AND algorithm %q", algo))
}

// andSkip is DAAT intersection over block-skipping cursors: the shortest
// list (canonical position 0) proposes a candidate d, every other list moves
// to NextGEQ(d); a mismatch restarts the lead at the larger docID (Ding et
// al. WWW'09 §8: only blocks that may hold a candidate are decoded). Once
// the heap is full, the sum of the block maxima of the blocks that would hold
// d (Cursor.ShallowBlock, no decoding) bounds the score of every document up
// to the smallest of those blocks' last docIDs; when it is strictly below
// the k-th score the whole range is skipped (the block-max idea of Ding &
// Suel SIGIR'11 applied to conjunctions). Skipped documents cannot enter the
// top k, so the result equals scoring the full intersection.
//
// The cursors of the third and later lists are reset only when a candidate
// first reaches them (ready counts the positioned ones): the lead and the
// second list often have no common docID, or none that the block-max bound
// lets through, and such a query then never reads the rarer-last lists'
// first blocks. The block-max bound reads every cursor, but only once the
// heap is full, which takes k candidates that reached every list. Every
// list but the lead starts at its first candidate (Cursor.ResetGEQ: the
// blocks before it are not decoded).
func (e *Engine) andSkip() error {
	e.sizeCursors()
	cs := e.curs
	m := len(cs)
	ready := min(m, 2)
	d, err := e.resetCursorGEQ(0, 0) // Reset, without copying the List twice
	if err != nil {
		return err
	}
	lead := &cs[0]
	if m > 1 {
		// The second list starts at the lead's first docID: its blocks
		// before that one are not decoded (step 46).
		if _, err := e.resetCursorGEQ(1, d); err != nil {
			return err
		}
	}
	h := &e.heap
	infl := inflate(m)
	var bound float64     // inflated block-max bound, valid for docs <= boundEnd
	boundEnd := int64(-1) // -1: no bound computed
	for d != index.Terminated {
		lim := index.Terminated - 1 // the lead's docIDs up to lim may match
		if h.Full() {
			if int64(d) > boundEnd {
				if ready < m {
					panic(fmt.Sprintf("BUG: engine.andSkip: heap full with %d of %d cursors reset", ready, m))
				}
				bound, boundEnd = 0, int64(index.Terminated)
				for i := range cs {
					l := cs[i].list()
					b := cs[i].ShallowBlock(d)
					if b >= l.NBlocks { // list i ends before d
						bound, boundEnd = -1, -1
						d = index.Terminated
						break
					}
					bound += e.blockBound(i, l, b)
					boundEnd = min(boundEnd, int64(l.LastDoc(b)))
				}
				if d == index.Terminated {
					break
				}
				bound *= infl
			}
			if bound < float64(h.Threshold()) {
				d = lead.nextGEQ(uint32(boundEnd + 1))
				continue
			}
			lim = uint32(boundEnd) // past it, the bound is recomputed
		}
		if m > 1 {
			// The lead and the second list to their next common docID
			// (or the lead past lim, to check the bound again).
			d = index.Leapfrog(&lead.Cursor, &cs[1].Cursor, lim)
			if d == index.Terminated {
				break
			}
			if d != cs[1].DocID() {
				continue
			}
		}
		i := 2
		for ; i < m; i++ {
			if i == ready {
				// Started at d (step 46): as reset, then nextGEQ(d).
				di, err := e.resetCursorGEQ(i, d)
				if err != nil {
					return err
				}
				ready++
				if di != d {
					break
				}
				continue
			}
			if cs[i].nextGEQ(d) != d {
				break
			}
		}
		if i < m {
			d = lead.nextGEQ(cs[i].DocID()) // > d, or Terminated
			continue
		}
		// The norm's load first: d's line of the norms array is usually a
		// cache miss (one per candidate), which then overlaps with the
		// frequency reads instead of following them.
		nd := e.norms[d]
		var s float32
		for j := range cs {
			s += e.termNorm(j, cs[j].freq(), nd)
		}
		e.st.Candidates++
		h.Push(d, s)
		d = lead.next()
	}
	return e.finishCursorRange(0, ready)
}

// andDecoded decodes every list completely, intersects the docID arrays with
// intersect.Merge or intersect.SvS (shortest first, Ding et al. WWW'09 §7),
// then scores each document of the intersection, locating it in every list
// with a forward linear scan (merge) or galloping search (galloping).
func (e *Engine) andDecoded(algo AndAlgorithm) error {
	m := len(e.terms)
	for len(e.docs) < m {
		e.docs = append(e.docs, nil)
		e.freqs = append(e.freqs, nil)
	}
	e.lists = e.lists[:0]
	for i := range e.terms {
		l := &e.terms[i].list
		var err error
		e.docs[i], e.freqs[i], err = l.Decode(e.docs[i], e.freqs[i])
		if err != nil {
			return err
		}
		e.st.BlocksDecoded += int64(l.NBlocks)
		e.st.PostingsDecoded += int64(l.DF)
		if err := checkDocs(l, e.docs[i], -1, e.n); err != nil {
			return err
		}
		e.lists = append(e.lists, e.docs[i])
	}
	// The canonical order is ascending df, i.e. already shortest first.
	if algo == AndMerge {
		e.cand = intersect.Merge(e.cand, e.lists)
	} else {
		e.cand = intersect.SvS(e.cand, e.lists)
	}
	if cap(e.pos) < m {
		e.pos = make([]int, m)
	}
	pos := e.pos[:m]
	clear(pos)
	h := &e.heap
	for _, d := range e.cand {
		var s float32
		for i := 0; i < m; i++ {
			docs := e.docs[i]
			p := pos[i]
			if algo == AndMerge {
				for docs[p] < d {
					p++
				}
			} else {
				p = intersect.GallopGEQ(docs, p, d)
			}
			pos[i] = p
			s += e.term(i, e.freqs[i][p], d)
		}
		e.st.Candidates++
		h.Push(d, s)
	}
	return nil
}
