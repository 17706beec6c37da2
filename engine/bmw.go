package engine

import (
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/score"
)

// orBMW is BlockMax-WAND (Ding & Suel, "Faster top-k document retrieval
// using block-max indexes", SIGIR 2011, Algorithm 2). Cursors are kept
// sorted by docID. The pivot is the first cursor at which the running sum
// of list upper bounds reaches the k-th score (WAND, Broder et al. CIKM'03);
// every document before the pivot docID pd is bounded below it. Then the
// block maxima of the blocks that would hold pd (Cursor.ShallowBlock, no
// decoding) bound every document from pd to the end of the first of those
// blocks; when that bound is strictly below the k-th score the cursors skip
// to the next block boundary or the next cursor's docID, whichever comes
// first. Otherwise pd is scored once all lists up to the pivot stand on it.
// Contributions are summed in canonical order.
func (e *Engine) orBMW() error {
	if err := e.ensureCursors(); err != nil {
		return err
	}
	cs := e.curs
	m := len(cs)
	terms := e.terms
	ord := e.order(m)
	sortByDoc(cs, ord)
	infl := inflate(m)
	h := &e.heap
	th := float64(h.Threshold())
	contrib := e.contrib
	norms, k1p1 := e.norms, e.k1p1
	for {
		// Pivot selection by list upper bounds.
		p := -1
		acc := 0.0
		for j, i := range ord {
			if cs[i].DocID() == index.Terminated {
				break
			}
			acc += float64(terms[i].max)
			if !(acc*infl < th) {
				p = j
				break
			}
		}
		if p < 0 {
			break
		}
		pd := cs[ord[p]].DocID()
		for p+1 < m && cs[ord[p+1]].DocID() == pd {
			p++
		}
		// Block-max bound at pd over the lists up to the pivot.
		bsum := 0.0
		end := int64(index.Terminated)
		for _, i := range ord[:p+1] {
			l := cs[i].list()
			b := cs[i].ShallowBlock(pd)
			if b >= l.NBlocks {
				continue // the list ends before pd: no contribution
			}
			bsum += e.blockBound(i, l, b)
			end = min(end, int64(l.LastDoc(b)))
		}
		if bsum*infl < th {
			// No document in [pd, nd) can enter: lists after the pivot
			// start at or after nd, those up to it stay in their blocks.
			nd := end + 1
			if p+1 < m {
				nd = min(nd, int64(cs[ord[p+1]].DocID()))
			}
			best := 0
			for j := 1; j <= p; j++ {
				if terms[ord[j]].max > terms[ord[best]].max {
					best = j
				}
			}
			cs[ord[best]].nextGEQ(uint32(min(nd, int64(index.Terminated))))
			bubble(cs, ord, best)
			continue
		}
		if cs[ord[0]].DocID() == pd {
			// Score pd by the lists up to the pivot (all stand on it) and
			// move them on; collect sums all m positions (others are +0).
			nrm := norms[pd]
			for _, i := range ord[:p+1] {
				c := &cs[i]
				t := &terms[i]
				contrib[i] = float32(t.w * score.Term(t.idf, k1p1, c.Freq(), nrm))
				c.Next()
			}
			s := e.collect(0, m-1)
			e.st.Candidates++
			if h.Push(pd, s) && h.Full() {
				th = float64(h.Threshold())
			}
			sortByDoc(cs, ord)
			continue
		}
		// Move the strongest list that lies before pd up to pd.
		best := 0
		for j := 1; j <= p && cs[ord[j]].DocID() < pd; j++ {
			if terms[ord[j]].max > terms[ord[best]].max {
				best = j
			}
		}
		cs[ord[best]].nextGEQ(pd)
		bubble(cs, ord, best)
	}
	return e.finishCursors(0)
}

// sortByDoc insertion-sorts ord by the cursors' docIDs (nearly sorted after
// a step, so this is linear in practice).
func sortByDoc(cs []cursor, ord []int) {
	for i := 1; i < len(ord); i++ {
		x := ord[i]
		d := cs[x].DocID()
		j := i
		for j > 0 && cs[ord[j-1]].DocID() > d {
			ord[j] = ord[j-1]
			j--
		}
		ord[j] = x
	}
}

// bubble moves ord[j], whose docID just grew, right to its sorted place.
func bubble(cs []cursor, ord []int, j int) {
	x := ord[j]
	d := cs[x].DocID()
	for j+1 < len(ord) && cs[ord[j+1]].DocID() < d {
		ord[j] = ord[j+1]
		j++
	}
	ord[j] = x
}
