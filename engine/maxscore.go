package engine

import (
	"math"

	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/score"
)

// orMaxScore is MaxScore (Turtle & Flood, "Query evaluation: strategies and
// optimizations", IP&M 1995), DAAT form, with the block-max refinement of
// PISA's block_max_maxscore (Mallia, Siedlaczek & Suel, "An experimental
// study of index compression and DAAT query processing methods", ECIR
// 2019). Lists are ordered by their score upper bound (List.MaxScore); the
// shortest prefix whose bounds sum below the k-th score is "non-essential":
// a document occurring only in those lists cannot enter the top k, so
// candidates come from the essential lists alone. For each candidate the
// non-essential lists are probed with NextGEQ from the highest bound down;
// before each probe the partial score plus the remaining lists' bounds is
// compared with the k-th score, first with the list maxima and then with the
// maxima of the blocks that would hold the candidate (ShallowBlock, no
// decoding), and probing stops as soon as a bound falls strictly below it.
// The contributions are then summed in canonical order, not probing order.
func (e *Engine) orMaxScore() error {
	if err := e.ensureCursors(); err != nil {
		return err
	}
	e.maxScore(0, math.Inf(-1), nil)
	return e.finishCursors(0)
}

// maxScore is MaxScore over the lists of canonical positions lo..m-1, whose
// cursors are reset, adding to e.heap. th0 is a threshold known in advance
// (-Inf for none): a lower bound of the k-th best score, which lets the
// lists whose bounds sum below it start non-essential (every document
// scoring th0 or more is still found: its bound is at least its score). A
// document whose bit is set in skip (nil: none) is not scored (the caller
// has already pushed it).
func (e *Engine) maxScore(lo int, th0 float64, skip []uint64) {
	cs := e.curs
	m := len(cs)
	ord := e.order(m - lo)
	for j := range ord {
		ord[j] += lo
	}
	n := len(ord)
	terms := e.terms
	// Ascending upper bound, ties by canonical position.
	for i := 1; i < n; i++ {
		x := ord[i]
		j := i
		for j > 0 && terms[ord[j-1]].max > terms[x].max {
			ord[j] = ord[j-1]
			j--
		}
		ord[j] = x
	}
	if cap(e.ub) < n {
		e.ub = make([]float64, n)
		e.bub = make([]float64, n)
	}
	ub := e.ub[:n] // ub[j] = Σ_{l<=j} max of ord[l]
	sum := 0.0
	for j, i := range ord {
		sum += float64(terms[i].max)
		ub[j] = sum
	}
	infl := inflate(m)
	h := &e.heap
	th := max(th0, float64(h.Threshold()))
	contrib := e.contrib
	norms := e.norms
	k1p1 := e.k1p1
	fe := 0 // first essential position in ord
	for fe < n-1 && ub[fe]*infl < th {
		fe++
	}
	ess := e.essential(ord[fe:])
	d := index.Terminated
	for k := range ess {
		d = min(d, ess[k].c.DocID())
	}
	for d != index.Terminated {
		if fe == n-1 {
			// One essential list left (or one list in all): it stays
			// the only one until the end (fe only grows), so a
			// dedicated loop takes over.
			e.maxScoreOne(fe, th, infl, skip)
			break
		}
		if skip != nil && skip[d>>6]&(1<<(d&63)) != 0 {
			d = e.passEssential(ess, d)
			continue
		}
		// Essential lists: score the ones on d, move them on, and find the
		// next candidate. Contributions go to contrib by canonical
		// position; collect sums all m positions (the others hold +0).
		partial := 0.0
		nd := index.Terminated
		nrm := norms[d]
		for k := range ess {
			x := &ess[k]
			c := x.c
			if c.DocID() == d {
				s := float32(x.w * score.Term(x.idf, k1p1, c.Freq(), nrm))
				contrib[x.i] = s
				partial += float64(s)
				c.Next()
			}
			nd = min(nd, c.DocID())
		}
		if fe > 0 && ((partial+ub[fe-1])*infl < th || e.probeNonEssential(d, fe, partial, th, infl)) {
			clear(contrib)
			d = nd
			continue
		}
		s := e.collect(0, m-1)
		e.st.Candidates++
		if h.Push(d, s) && h.Full() {
			th = float64(h.Threshold())
			old := fe
			for fe < n && ub[fe]*infl < th {
				fe++
			}
			if fe != old {
				ess = e.essential(ord[fe:])
				nd = index.Terminated
				for k := range ess {
					nd = min(nd, ess[k].c.DocID())
				}
			}
		}
		d = nd
	}
}

// passEssential moves the essential cursors on d past it and returns the
// next candidate.
func (e *Engine) passEssential(ess []msTerm, d uint32) uint32 {
	nd := index.Terminated
	for k := range ess {
		c := ess[k].c
		if c.DocID() == d {
			c.Next()
		}
		nd = min(nd, c.DocID())
	}
	return nd
}

// msTerm is the hot state of one essential list in MaxScore's loop.
type msTerm struct {
	c      *cursor
	idf, w float32
	i      int // canonical position
}

// essential fills e.ess with the lists of ord (canonical positions).
func (e *Engine) essential(ord []int) []msTerm {
	e.ess = e.ess[:0]
	for _, i := range ord {
		e.ess = append(e.ess, msTerm{c: &e.curs[i], idf: e.terms[i].idf, w: e.terms[i].w, i: i})
	}
	return e.ess
}

// maxScoreOne finishes MaxScore when one essential list is left (ord[fe],
// fe = n-1 >= 0: with fe = 0 it is the only list, a one-term query or
// orTAATMaxScore's continuation over one long list), from its current
// posting. Every document it proposes is bounded by its own contribution
// plus ub[fe-1] (0 when fe = 0); whole blocks are skipped
// without decoding while their block maximum plus ub[fe-1] stays strictly
// below the k-th score (the block-max skipping of the essential list in
// block_max_maxscore), and a posting whose contribution plus ub[fe-1] is
// below it is dropped before the non-essential lists are probed.
func (e *Engine) maxScoreOne(fe int, th, infl float64, skip []uint64) {
	cs, terms, ord, ub := e.curs, e.terms, e.ord, e.ub
	m := len(cs)
	i := ord[fe]
	c := &cs[i]
	t := &terms[i]
	l := c.List()
	w := float64(t.w)
	rest := 0.0
	if fe > 0 {
		rest = ub[fe-1]
	}
	norms, k1p1, contrib, h := e.norms, e.k1p1, e.contrib, &e.heap
	d := c.DocID()
	bb := -1 // block whose bound was checked at threshold th
	for d != index.Terminated {
		if b := c.Block(); b != bb {
			if (w*float64(l.BlockMax(b))+rest)*infl < th {
				for b++; b < l.NBlocks && (w*float64(l.BlockMax(b))+rest)*infl < th; b++ {
				}
				d = c.SkipToBlock(b)
				continue
			}
			bb = b
		}
		if skip != nil && skip[d>>6]&(1<<(d&63)) != 0 {
			d = c.Next()
			continue
		}
		s := float32(t.w * score.Term(t.idf, k1p1, c.Freq(), norms[d]))
		if (float64(s)+rest)*infl < th {
			d = c.Next()
			continue
		}
		contrib[i] = s
		if e.probeNonEssential(d, fe, float64(s), th, infl) {
			clear(contrib)
			d = c.Next()
			continue
		}
		sc := e.collect(0, m-1)
		e.st.Candidates++
		if h.Push(d, sc) && h.Full() {
			th = float64(h.Threshold())
			bb = -1
			if ub[fe]*infl < th {
				return // no list is essential any more
			}
		}
		d = c.Next()
	}
}

// probeNonEssential adds the contributions of the non-essential lists
// (ord[:fe]) for candidate d to e.contrib, from the highest bound down, and
// reports whether d was pruned: its partial score plus an upper bound of the
// rest fell strictly below th (the caller then clears e.contrib).
func (e *Engine) probeNonEssential(d uint32, fe int, partial, th, infl float64) bool {
	cs, terms, ord, ub := e.curs, e.terms, e.ord, e.ub
	contrib := e.contrib
	// Block-max bound of the non-essential lists at d: bub[j] = Σ_{l<=j}
	// block max of ord[l] (0 for a list that ends before d).
	bub := e.bub
	bs := 0.0
	for j := 0; j < fe; j++ {
		i := ord[j]
		c := &cs[i]
		l := c.List()
		if b := c.ShallowBlock(d); b < l.NBlocks {
			bs += e.blockBound(i, l, b)
		}
		bub[j] = bs
	}
	norms, k1p1 := e.norms, e.k1p1
	for j := fe - 1; j >= 0; j-- {
		if (partial+min(ub[j], bub[j]))*infl < th {
			return true
		}
		i := ord[j]
		c := &cs[i]
		if c.NextGEQ(d) == d {
			t := &terms[i]
			s := float32(t.w * score.Term(t.idf, k1p1, c.Freq(), norms[d]))
			contrib[i] = s
			partial += float64(s)
		}
	}
	return false
}

// order returns e.ord sized m holding 0..m-1.
func (e *Engine) order(m int) []int {
	if cap(e.ord) < m {
		e.ord = make([]int, m)
	}
	ord := e.ord[:m]
	for i := range ord {
		ord[i] = i
	}
	return ord
}
