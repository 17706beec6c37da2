package engine

import "github.com/qpengine/qp/index"

// orMaxScore is MaxScore (Turtle & Flood, "Query evaluation: strategies and
// optimizations", IP&M 1995), DAAT form. Lists are ordered by their score
// upper bound (List.MaxScore); the shortest prefix whose bounds sum below
// the k-th score is "non-essential": a document occurring only in those
// lists cannot enter the top k, so candidates come from the essential lists
// alone. For each candidate the non-essential lists are probed with NextGEQ
// from the highest bound down, and probing stops as soon as the partial
// score plus the remaining bounds falls strictly below the k-th score. The
// contributions are then summed in canonical order, not probing order.
func (e *Engine) orMaxScore() error {
	e.ensureCursors()
	cs := e.curs
	m := len(cs)
	ord := e.order(m)
	terms := e.terms
	// Ascending upper bound, ties by canonical position.
	for i := 1; i < m; i++ {
		x := ord[i]
		j := i
		for j > 0 && terms[ord[j-1]].max > terms[x].max {
			ord[j] = ord[j-1]
			j--
		}
		ord[j] = x
	}
	if cap(e.ub) < m {
		e.ub = make([]float64, m)
	}
	ub := e.ub[:m] // ub[j] = Σ_{l<=j} max of ord[l]
	sum := 0.0
	for j, i := range ord {
		sum += float64(terms[i].max)
		ub[j] = sum
	}
	infl := inflate(m)
	h := &e.heap
	th := float64(h.Threshold())
	contrib := e.contrib
	fe := 0 // first essential position in ord
	for {
		d := index.Terminated
		for _, i := range ord[fe:] {
			d = min(d, cs[i].DocID())
		}
		if d == index.Terminated {
			break
		}
		lo, hi := m, -1
		partial := 0.0
		for _, i := range ord[fe:] {
			c := &cs[i]
			if c.DocID() == d {
				s := e.term(i, c.freq(), d)
				contrib[i] = s
				partial += float64(s)
				lo, hi = min(lo, i), max(hi, i)
				c.next()
			}
		}
		pruned := false
		for j := fe - 1; j >= 0; j-- {
			if (partial+ub[j])*infl < th {
				pruned = true
				break
			}
			i := ord[j]
			c := &cs[i]
			if c.nextGEQ(d) == d {
				s := e.term(i, c.freq(), d)
				contrib[i] = s
				partial += float64(s)
				lo, hi = min(lo, i), max(hi, i)
			}
		}
		s := e.collect(lo, hi)
		if pruned {
			continue
		}
		e.st.Candidates++
		if h.Push(d, s) && h.Full() {
			th = float64(h.Threshold())
			for fe < m && ub[fe]*infl < th {
				fe++
			}
		}
	}
	return e.finishCursors()
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
