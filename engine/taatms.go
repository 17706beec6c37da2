package engine

import (
	"fmt"
	"math"

	"github.com/qpengine/qp/internal/pages"
	"github.com/qpengine/qp/score"
	"github.com/qpengine/qp/topk"
)

// orTAATMaxScore evaluates an OR query whose first p canonical lists are
// short (p >= 1) and whose others are long: a term-at-a-time prefix
// followed by MaxScore-style probes of the long lists (the "TAAT for the
// short lists, then probe" plan of term-at-a-time MaxScore, Turtle & Flood
// IP&M 1995 §4; the accumulators are the candidates).
//
//  1. Lists 0..p-1 are added TAAT into the dense accumulator (taatList), so
//     acc[d] is d's exact float32 prefix sum in canonical order; a bitset
//     orders the touched documents by docID.
//  2. The k-th largest prefix sum th0 is a lower bound of the k-th best
//     score (scores only grow with the rest of the lists).
//  3. Each touched document, ascending, continues its float32 sum over
//     lists p..m-1 in canonical order by NextGEQ, stopping as soon as its
//     partial score plus the maxima of the lists left falls strictly below
//     the threshold; the survivors go to the heap.
//  4. A document in none of the short lists scores at most R, the sum of
//     the long lists' maxima, and its score is its canonical sum over the
//     long lists alone. When R (inflated) is below the threshold the heap
//     is the result; otherwise MaxScore runs over the long lists with that
//     threshold, skipping the documents of step 3 (maxScore's skip).
//
// The sums are the canonical float32 sums of score/bm25.go, so results are
// bit-identical to every other strategy.
func (e *Engine) orTAATMaxScore(p, limit int) error {
	if len(e.acc) != int(e.n) {
		e.acc = pages.Zeroed[float32](int(e.n)) // written first: no copy-on-write faults
	}
	words := (int(e.n) + 63) / 64
	if len(e.bits) != words {
		e.bits = pages.Zeroed[uint64](words)
	}
	acc, bs := e.acc, e.bits
	nt := 0
	// Leave the accumulator and the bitset zeroed, also on errors. Once
	// the probes have run, the filter below and the probes have zeroed
	// every touched accumulator and flattenBits the bitset; only the
	// continuation's bits are left.
	probed, skipSet := false, false
	defer func() {
		if !probed {
			for _, d := range e.touched[:nt] {
				acc[d] = 0
			}
		}
		if skipSet {
			for _, d := range e.touched[:nt] {
				bs[d>>6] = 0
			}
		}
	}()
	for i := 0; i < p; i++ {
		var err error
		if nt, err = e.taatList(i, nt); err != nil {
			return err
		}
	}
	h := &e.heap
	m := len(e.terms)
	infl := inflate(m)
	var th float64
	final := false // the prefix takes no more lists, whatever th
	for {
		if m-p < 2 || int64(e.terms[p].df) > absorbFactor*int64(limit) {
			final = true
			break
		}
		th = math.Inf(-1)
		if nt >= h.K() {
			e.sel = topk.Select(e.sel[:0], acc, e.touched[:nt], h.K())
			th = float64(e.sel[h.K()-1].Score)
		}
		if !e.absorb(p, th, infl) {
			break
		}
		// Absorb list p into the prefix (step 28,
		// docs/CPU-ENGINE.md): MaxScore over two or more long lists would run.
		var err error
		if nt, err = e.taatList(p, nt); err != nil {
			return err
		}
		p++
	}
	// Only the documents that pass the probes' first bound at th (their
	// prefix sum plus the maxima of the lists left, inflated, not strictly
	// below th) go into the bitset: the probes would skip the others, th
	// only rising (step 41, docs/CPU-ENGINE.md). Branch-free: about a third
	// pass on RFC pages, a branch the probes used to mispredict. The
	// others' accumulators are zeroed here, on the line just read (the
	// probes zero the candidates' after reading them; step 42).
	rem := e.remSums()
	rp := rem[p]
	var np int
	if final {
		th, np = e.selectFilter(nt, rp, infl)
	} else {
		for _, d := range e.touched[:nt] {
			a := acc[d]
			pass := b2u((float64(a)+rp)*infl >= th)
			bs[d>>6] |= uint64(pass) << (d & 63)
			acc[d] = math.Float32frombits(math.Float32bits(a) & -pass)
			np += int(pass)
		}
	}
	if cap(e.sorted) < np+1 {
		e.sorted = make([]uint32, np+1, 2*(np+1))
	}
	nc := flattenBits(e.sorted[:np+1], bs)
	if nc != np {
		panic(fmt.Sprintf("BUG: %d candidates flatten to %d", np, nc))
	}
	if err := e.resetCursors(p); err != nil {
		return err
	}
	if p == len(e.terms)-1 {
		th = e.probeOne(p, th, e.sorted[:nc])
	} else {
		th = e.probeLong(p, th, e.sorted[:nc])
	}
	probed = true
	e.st.Candidates += int64(nt)
	if rem[p]*inflate(len(e.terms)) >= th {
		// Documents in none of the short lists may still enter: MaxScore
		// over the long lists, from their first postings, skipping the
		// documents already scored: every touched document's bit.
		skipSet = true
		for _, d := range e.touched[:nt] {
			bs[d>>6] |= 1 << (d & 63)
		}
		if err := e.finishCursors(p); err != nil {
			return err
		}
		if err := e.resetCursors(p); err != nil {
			return err
		}
		e.maxScore(p, th, e.bits)
	}
	return e.finishCursors(p)
}

// selectFilter is the filter of orTAATMaxScore (steps 41-42) for a final
// prefix of nt touched documents, fused with the selection of its
// threshold (step 44, docs/CPU-ENGINE.md): one pass over the accumulators
// instead of topk.Select's and the filter's. It returns th, the k-th
// largest prefix sum (-Inf below k documents), and the number of
// documents it put into the bitset. Those are the documents that pass
// the probes' first bound at the k-th largest sum of the documents before
// them, a threshold at most th: a superset of those passing at th, whose
// extra members the probes skip with the same bound at th. A document
// that fails has its accumulator zeroed here.
func (e *Engine) selectFilter(nt int, rp, infl float64) (float64, int) {
	k := e.heap.K()
	if cap(e.selv) < k {
		e.selv = make([]float32, k)
	}
	hv := e.selv[:k] // min-heap of the k largest sums so far
	acc, bs := e.acc, e.bits
	thc, hn, np := math.Inf(-1), 0, 0
	for _, d := range e.touched[:nt] {
		a := acc[d]
		if hn < k {
			hv[hn] = a
			hn++
			if hn == k {
				for i := k/2 - 1; i >= 0; i-- {
					siftDownF32(hv, i)
				}
				thc = float64(hv[0])
			}
		} else if a > hv[0] {
			hv[0] = a
			siftDownF32(hv, 0)
			thc = float64(hv[0])
		}
		pass := b2u((float64(a)+rp)*infl >= thc)
		bs[d>>6] |= uint64(pass) << (d & 63)
		acc[d] = math.Float32frombits(math.Float32bits(a) & -pass)
		np += int(pass)
	}
	return thc, np
}

// siftDownF32 restores the min-heap order of h below position i.
func siftDownF32(h []float32, i int) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h[c+1] < h[c] {
			c++
		}
		if !(h[c] < h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// absorb reports whether the TAAT prefix should take list p (of two or
// more long lists p..m-1, short enough: at most absorbFactor ×
// Options.OrTAATPostings postings, which the caller checked) too: after
// the prefix of p lists, whose k-th largest sum is th, a document in none
// of them could still reach th (the long lists' maxima sum, inflated, to
// th or more), so MaxScore over the long lists would follow the probes,
// and adding list p term-at-a-time costs less than that traversal.
func (e *Engine) absorb(p int, th, infl float64) bool {
	r := 0.0
	for i := p; i < len(e.terms); i++ {
		r += float64(e.terms[i].max)
	}
	return r*infl >= th
}

// remSums sets e.rem[i], for i = 0..m, to the sum of the maxima of
// canonical lists i..m-1 (e.rem[m] = 0) and returns e.rem[:m+1].
func (e *Engine) remSums() []float64 {
	m := len(e.terms)
	if cap(e.rem) < m+1 {
		e.rem = make([]float64, m+1)
	}
	rem := e.rem[:m+1]
	rem[m] = 0
	for i := m - 1; i >= 0; i-- {
		rem[i] = rem[i+1] + float64(e.terms[i].max)
	}
	return rem
}

// b2u is 1 for true and 0 for false (compiled to a SETcc, no branch).
func b2u(b bool) uint32 {
	var u uint32
	if b {
		u = 1
	}
	return u
}

// probeLong is step 3 of orTAATMaxScore over cand (the touched documents
// that pass the first bound at th, ascending: flattenBits of e.bits), and
// returns the final threshold (at least th). e.rem must hold remSums.
// Every candidate's accumulator is read once and zeroed.
//
// Besides the list maxima, a document that would make a list's cursor
// decode a new block is first bounded by the block maxima of the blocks of
// the lists left that would hold it (found from the skip tables without
// decoding; PISA's block_max_maxscore bound, as probeNonEssential uses): a
// document whose partial sum plus those falls strictly below the threshold
// is dropped before the block is decoded. Documents that stay within the
// decoded blocks skip that bound (its skip-table walk would cost more than
// the probe).
func (e *Engine) probeLong(p int, th float64, cand []uint32) float64 {
	m := len(e.terms)
	if cap(e.brem) < m+1 {
		e.brem, e.sblk = make([]float64, m+1), make([]int, m+1)
	}
	rem, brem, sblk := e.rem[:m+1], e.brem[:m+1], e.sblk[:m]
	brem[m] = 0
	for i := range sblk {
		sblk[i] = 0
	}
	infl := inflate(m)
	acc, norms, k1p1, cs, terms, h := e.acc, e.norms, e.k1p1, e.curs, e.terms, &e.heap
	for _, d := range cand {
		s := acc[d]
		acc[d] = 0 // orTAATMaxScore's cleanup (step 42)
		partial := float64(s)
		if (partial+rem[p])*infl < th {
			continue
		}
		i := p
		bounded := false // brem[i:] holds d's block-max bounds
		for ; i < m; i++ {
			if (partial+rem[i])*infl < th {
				break
			}
			c := &cs[i]
			if !bounded && d > c.BlockLast() {
				// NextGEQ would decode a block: first bound d by
				// the block maxima of lists i..m-1.
				e.blockRem(i, d)
				bounded = true
			}
			if bounded && (partial+brem[i])*infl < th {
				break
			}
			if c.NextGEQ(d) == d {
				t := &terms[i]
				x := float32(t.w * score.Term(t.idf, k1p1, c.Freq(), norms[d]))
				s += x
				partial += float64(x)
			}
		}
		if i < m {
			continue
		}
		if h.Push(d, s) && h.Full() {
			th = max(th, float64(h.Threshold()))
		}
	}
	return th
}

// absorbFactor bounds the lists orTAATMaxScore absorbs into its TAAT
// prefix: absorbFactor × Options.OrTAATPostings postings.
const absorbFactor = 8

// probeOne is probeLong for a single long list (p = m-1): the same bounds
// and pushes in the same order, without the loop over lists and its
// per-list bound checks (about half of the taat+maxscore queries of the
// TREC'06 log on RFC pages have one long list).
func (e *Engine) probeOne(p int, th float64, cand []uint32) float64 {
	m := len(e.terms)
	if p != m-1 {
		panic(fmt.Sprintf("BUG: probeOne at list %d of %d", p, m))
	}
	if cap(e.brem) < m+1 {
		e.brem, e.sblk = make([]float64, m+1), make([]int, m+1)
	}
	mx := e.rem[p]
	infl := inflate(m)
	acc, norms, k1p1, h := e.acc, e.norms, e.k1p1, &e.heap
	c := &e.curs[p]
	t := &e.terms[p]
	l := c.List()
	w, idf := t.w, t.idf
	b := 0 // the block of l that would hold d (only moves forward)
	for _, d := range cand {
		s := acc[d]
		acc[d] = 0 // orTAATMaxScore's cleanup (step 42)
		partial := float64(s)
		if (partial+mx)*infl < th {
			continue
		}
		if d > c.BlockLast() {
			// NextGEQ would decode a block: first bound d by the
			// maximum of the block that would hold it (0 past the end).
			for b < l.NBlocks && l.LastDoc(b) < d {
				b++
			}
			v := 0.0
			if b < l.NBlocks {
				v = e.blockBound(p, l, b)
			}
			if (partial+v)*infl < th {
				continue
			}
		}
		if c.NextGEQ(d) == d {
			s += float32(w * score.Term(idf, k1p1, c.Freq(), norms[d]))
		}
		if h.Push(d, s) && h.Full() {
			th = max(th, float64(h.Threshold()))
		}
	}
	return th
}

// blockRem sets e.brem[i], for i = p..m-1 (p: the first list not yet probed), to the sum over lists i..m-1 of
// the maximum of the block that would hold d (0 for a list that ends before
// d). e.sblk[i] is that block: it only moves forward, since probeLong's
// documents ascend, so the skip-table walk costs O(blocks) per query.
func (e *Engine) blockRem(p int, d uint32) {
	m := len(e.terms)
	brem, sblk, cs := e.brem[:m+1], e.sblk[:m], e.curs
	for j := m - 1; j >= p; j-- {
		l := cs[j].List()
		b := sblk[j]
		for b < l.NBlocks && l.LastDoc(b) < d {
			b++
		}
		sblk[j] = b
		v := 0.0
		if b < l.NBlocks {
			v = e.blockBound(j, l, b)
		}
		brem[j] = brem[j+1] + v
	}
}

// resetCursors sizes e.curs for the query's terms and resets those of
// canonical positions p..m-1 on their lists (the others are not used).
func (e *Engine) resetCursors(p int) error {
	m := len(e.terms)
	if cap(e.curs) < m {
		e.curs = append(e.curs[:cap(e.curs)], make([]cursor, m-cap(e.curs))...)
	}
	e.curs = e.curs[:m]
	for i := p; i < m; i++ {
		if err := e.resetCursor(i); err != nil {
			return err
		}
	}
	return nil
}

// taatLong reports whether a query with no short list may still run
// orTAATMaxScore with its first list as the prefix: TAAT is on (limit >= 0)
// and the collection fits the dense accumulator. (Bounding the first
// list's length by absorbFactor × limit was slower on RFC pages.)
func (e *Engine) taatLong(limit int) bool {
	return limit >= 0 && e.n <= TAATMaxDocs
}

// taatPrefix is the number p of canonical lists, from the first, whose
// postings sum to at most limit (0 when limit < 0 or the collection is too
// large for the dense accumulator).
func (e *Engine) taatPrefix(limit int) int {
	if limit < 0 || e.n > TAATMaxDocs {
		return 0
	}
	sum, p := 0, 0
	for p < len(e.terms) && sum+int(e.terms[p].df) <= limit {
		sum += int(e.terms[p].df)
		p++
	}
	return p
}
