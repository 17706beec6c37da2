// Package andprune measures, on the CPU and outside any hot path, how many
// of a GPU AND's candidates block maxima could prune (issue 20 §4). The GPU
// AND (cuda/kernels/query_and.cu, docs/GPU-QUERY.md "What runs where")
// makes every posting of a query's shortest list a candidate and locates it
// in each further list; it ignores the skip tables' block maxima. Here, for
// each AND query, every block b of the shortest list gets an upper bound on
// the score of any document in it:
//
//   - block max: w0·blockMax0(b) + Σ_i max over the blocks of list i that
//     overlap b's docID range [BlockBase(b), LastDoc(b)] of w_i·blockMax_i
//     (the conjunctive block-max bound of the CPU's andSkip, Ding & Suel
//     SIGIR'11, taken per candidate block instead of per docID);
//   - list max: w0·blockMax0(b) + Σ_i w_i·MaxScore_i (no skip-table search).
//
// Both are float64 sums raised by the CPU engine's inflation factor
// (engine.inflate: 1 + 1e-5 + m·2^-22), so that a block whose bound is
// strictly below a threshold θ holds no document with score ≥ θ. A block is
// pruned when its bound is strictly below θ, for
//
//   - θ = the query's true k-th score (the best any block-level scheme can
//     do), and
//   - θ_B = the exact k-th score among the results of the B blocks with the
//     highest block-max bounds (what a GPU gets from one first round over B
//     blocks per query; those B blocks count as processed).
//
// Candidate bounds (one candidate d, before step i): the exact scores of
// terms 0..i-1 plus, for each list j >= i, w_j·blockMax of the block that
// would hold d (or, cheaper, that for list i and list maxima after it);
// also with θ_c, the k-th score among the results of the c candidates of
// highest term-0 score (seedWork).
//
// Work is counted as blocks and candidates of the shortest list and as
// lookups: a candidate is searched in the next list only while it matched
// the previous ones (the GPU compacts survivors after every step), so its
// lookups are 1 + the further lists it matched, at most m-1.
package andprune

import (
	"fmt"
	"slices"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/score"
)

// Work is an amount of AND work.
type Work struct {
	Blocks, Cands, Lookups int64
}

func (w *Work) add(o Work) { w.Blocks += o.Blocks; w.Cands += o.Cands; w.Lookups += o.Lookups }

// Scheme is one pruning rule and the work it leaves (processed, not pruned).
type Scheme struct {
	Name string
	Left Work
}

// Report is the outcome over a query log.
type Report struct {
	K       int
	Queries int  // AND queries with every term in the index
	Multi   int  // of which with at least two distinct terms
	Full    Work // without pruning
	Results int64
	Schemes []Scheme
	Unsafe  int64 // results whose block bound is below their score (must be 0)
	// Why blocks prune little: sums over the shortest lists' blocks of
	// blockMax/MaxScore of the shortest list (Own) and of the overlapping
	// blocks' max/MaxScore of each further list (Other, OtherN terms), and
	// over the queries with at least k results of θ / Σ w·MaxScore (Theta,
	// ThetaN queries).
	Own, Other, Theta float64
	OtherN, ThetaN    int64
	ThetaBad          int64 // queries where some θ_B exceeds the true k-th score (must be 0)
}

// Merge adds o (a report of other queries, same k and schemes) to r.
func (r *Report) Merge(o *Report) {
	r.Queries += o.Queries
	r.Multi += o.Multi
	r.Full.add(o.Full)
	r.Results += o.Results
	r.Unsafe += o.Unsafe
	r.Own += o.Own
	r.Other += o.Other
	r.OtherN += o.OtherN
	r.Theta += o.Theta
	r.ThetaN += o.ThetaN
	r.ThetaBad += o.ThetaBad
	for i := range r.Schemes {
		r.Schemes[i].Left.add(o.Schemes[i].Left)
	}
}

// byDescending returns the positions 0..len(key)-1 in idx's storage,
// ordered by descending key, ties by ascending position.
func byDescending[T float32 | float64](idx []int, key []T) []int {
	idx = slices.Grow(idx[:0], len(key))[:len(key)]
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case key[a] > key[b]:
			return -1
		case key[a] < key[b]:
			return 1
		}
		return 0
	})
	return idx
}

// Share is the fraction of w pruned by scheme s.
func (r *Report) Share(s Scheme) (blocks, cands, lookups float64) {
	f := func(left, full int64) float64 {
		if full == 0 {
			return 0
		}
		return 1 - float64(left)/float64(full)
	}
	return f(s.Left.Blocks, r.Full.Blocks), f(s.Left.Cands, r.Full.Cands), f(s.Left.Lookups, r.Full.Lookups)
}

// Measurer measures queries one at a time (Add) into its reports; it
// holds the per-query scratch and is not safe for concurrent use (one per
// goroutine, reports merged with Report.Merge).
type Measurer struct {
	Report Report // all AND queries
	Multi  Report // AND queries of at least two distinct terms (the ones with intersection steps)
	Rich   Report // those of them with at least k results (the only ones a threshold can prune)

	x     *index.Index
	k     int
	bs    []int
	cl    engine.CanonLists // the query's terms and lists
	docs  [][]uint32
	freqs [][]uint32
	theta float64 // the last query's true k-th score (0: fewer than k results)
	// Per posting of the shortest list.
	score []float32 // -1: not in the intersection
	s0    []float32 // its term-0 score
	look  []int32
	step  []float64 // per step i = 1..n-1: the candidate bound (see intersect)
	stepL []float64 // the same with list maxima for the lists after i (no extra search)
	// Per block of the shortest list.
	bmB, lmB   []float64
	own, other float64 // this query's ratio sums (bounds), added by tally
	otherN     int64
	// Scratch of tally and seedWork.
	order []int
	sel   []float32
	idx   []int
	inA   []bool
}

// New returns a Measurer over x for top-k queries and first rounds of
// B ∈ bs blocks.
func New(x *index.Index, k int, bs []int) *Measurer {
	m := &Measurer{x: x, k: k, bs: bs}
	for _, r := range []*Report{&m.Report, &m.Multi, &m.Rich} {
		r.K = k
		r.Schemes = append(r.Schemes, Scheme{Name: "true k-th, block max"}, Scheme{Name: "true k-th, list max"})
		for _, b := range bs {
			r.Schemes = append(r.Schemes, Scheme{Name: fmt.Sprintf("θ of top-%d blocks, block max", b)})
		}
		r.Schemes = append(r.Schemes, Scheme{Name: "true k-th, candidate bounds"})
		for _, b := range bs {
			r.Schemes = append(r.Schemes, Scheme{Name: fmt.Sprintf("θ of top-%d blocks, candidate bounds", b)})
		}
		r.Schemes = append(r.Schemes, Scheme{Name: "true k-th, candidate bounds, later lists by list max"})
		for _, c := range seedCs {
			r.Schemes = append(r.Schemes, Scheme{Name: fmt.Sprintf("θ of top-%d candidates by term-0 score, candidate bounds, later lists by list max", c)})
		}
	}
	return m
}

// Add measures one query (analyzed terms).
func (m *Measurer) Add(terms []string) error {
	if ok, err := m.cl.Load(m.x, engine.Query{Terms: terms, Mode: engine.And, K: m.k}); !ok {
		return err
	}
	n := len(m.cl.Lists)
	for len(m.docs) < n {
		m.docs, m.freqs = append(m.docs, nil), append(m.freqs, nil)
	}
	for i := range m.cl.Lists {
		var err error
		if m.docs[i], m.freqs[i], err = m.cl.Lists[i].Decode(m.docs[i], m.freqs[i]); err != nil {
			return err
		}
	}
	m.intersect(n)
	m.bounds(n)
	m.tally(&m.Report, n)
	if n > 1 {
		m.tally(&m.Multi, n)
		if m.theta > 0 {
			m.tally(&m.Rich, n)
		}
	}
	return nil
}

// intersect scores every posting of the shortest list that is in every list
// (score in canonical order, as engine.term: float32(w·score.Term)),
// counts its lookups and computes its candidate bounds before each step.
func (m *Measurer) intersect(n int) {
	d0 := m.docs[0]
	m.score = slices.Grow(m.score[:0], len(d0))[:len(d0)]
	m.look = slices.Grow(m.look[:0], len(d0))[:len(d0)]
	st := max(n-1, 1)
	m.step = slices.Grow(m.step[:0], len(d0)*st)[:len(d0)*st]
	m.stepL = slices.Grow(m.stepL[:0], len(d0)*st)[:len(d0)*st]
	m.s0 = slices.Grow(m.s0[:0], len(d0))[:len(d0)]
	var lmax [engine.MaxTerms + 1]float64 // suffix sums of w·MaxScore
	for i := n - 1; i >= 1; i-- {
		lmax[i] = lmax[i+1] + float64(m.cl.Terms[i].W)*float64(m.cl.Lists[i].MaxScore)
	}
	var bmi [engine.MaxTerms]float64 // w·blockMax of d's block in list i (-1: past the end)
	var pos [engine.MaxTerms]int
	var part [engine.MaxTerms]float32 // term scores of d (0 where absent)
	var rest [engine.MaxTerms + 1]float64
	norms, k1p1 := m.x.Norms(), m.x.Params().K1p1()
	infl := inflate(n)
	for j, d := range d0 {
		// Locate d in every list (the block of d in list i is the block
		// of its GEQ position); a miss ends the GPU's steps.
		look, ok := int32(0), true
		past := 0 // lists 1..past-1 reach d; list past ends before d
		for i := 1; i < n; i++ {
			ds := m.docs[i]
			p := pos[i] + sortSearchGEQ(ds[pos[i]:], d)
			pos[i] = p
			if ok {
				look++
			}
			if p == len(ds) && past == 0 {
				past = i
			}
			ok = ok && p < len(ds) && ds[p] == d
		}
		m.look[j] = look
		part[0] = m.term(0, m.freqs[0][j], d, norms, k1p1)
		m.s0[j] = part[0]
		rest[n] = 0
		for i := n - 1; i >= 1; i-- {
			part[i] = 0
			bm := -1.0
			if p := pos[i]; p < len(m.docs[i]) {
				bm = float64(m.cl.Terms[i].W) * float64(m.cl.Lists[i].BlockMax(p/m.cl.Lists[i].BlockSize))
				if m.docs[i][p] == d {
					part[i] = m.term(i, m.freqs[i][p], d, norms, k1p1)
				}
			}
			rest[i] = rest[i+1] + bm
			bmi[i] = bm
		}
		// Step i's bound: the exact scores of terms 0..i-1 plus the block
		// maxima of d's blocks in lists i..n-1 (-1: some list ends before d).
		acc := 0.0
		for i := 1; i < n; i++ {
			acc += float64(part[i-1])
			b := (acc + rest[i]) * infl
			bl := (acc + bmi[i] + lmax[i+1]) * infl
			if past != 0 && past >= i {
				b = -1
			}
			if bmi[i] < 0 {
				bl = -1
			}
			m.step[j*st+i-1] = b
			m.stepL[j*st+i-1] = bl
		}
		if !ok {
			m.score[j] = -1
			continue
		}
		var s float32
		for i := 0; i < n; i++ {
			s += part[i]
		}
		m.score[j] = s
	}
}

// term is engine.term: canonical term i's BM25 contribution for (d, tf).
func (m *Measurer) term(i int, tf, d uint32, norms []float32, k1p1 float32) float32 {
	return float32(m.cl.Terms[i].W * score.Term(m.cl.Lists[i].IDF, k1p1, tf, norms[d]))
}

// sortSearchGEQ is the first index of s holding a value >= d (galloping).
func sortSearchGEQ(s []uint32, d uint32) int {
	hi := 1
	for hi < len(s) && s[hi-1] < d {
		hi *= 2
	}
	lo := hi / 2
	hi = min(hi, len(s))
	for lo < hi {
		mid := (lo + hi) / 2
		if s[mid] < d {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// inflate is engine.inflate (unexported there): the factor by which float64
// sums of float32 maxima are raised before a comparison with a score.
func inflate(m int) float64 { return 1 + 1e-5 + float64(m)*(1.0/(1<<22)) }

// bounds computes both bounds of every block of the shortest list. A block
// over which some list has no block gets -1 (it can hold no result).
func (m *Measurer) bounds(n int) {
	l0 := &m.cl.Lists[0]
	nb := l0.NBlocks
	m.bmB = slices.Grow(m.bmB[:0], nb)[:nb]
	m.lmB = slices.Grow(m.lmB[:0], nb)[:nb]
	infl := inflate(n)
	var lm float64
	for i := 1; i < n; i++ {
		lm += float64(m.cl.Terms[i].W) * float64(m.cl.Lists[i].MaxScore)
	}
	m.own, m.other, m.otherN = 0, 0, 0
	var first [engine.MaxTerms]int // per list, first block that may overlap (ranges increase)
	for b := 0; b < nb; b++ {
		lo, hi := l0.BlockBase(b), l0.LastDoc(b)
		own := float64(m.cl.Terms[0].W) * float64(l0.BlockMax(b))
		bm := own
		if l0.MaxScore > 0 {
			m.own += float64(l0.BlockMax(b)) / float64(l0.MaxScore)
		}
		for i := 1; i < n && bm >= 0; i++ {
			l := &m.cl.Lists[i]
			c := first[i]
			for c < l.NBlocks && l.LastDoc(c) < lo {
				c++
			}
			first[i] = c
			if c == l.NBlocks {
				bm = -1
				break
			}
			mx := float32(0)
			for ; c < l.NBlocks && l.BlockBase(c) <= hi; c++ {
				mx = max(mx, l.BlockMax(c))
			}
			bm += float64(m.cl.Terms[i].W) * float64(mx)
			if l.MaxScore > 0 {
				m.other += float64(mx) / float64(l.MaxScore)
				m.otherN++
			}
		}
		if bm >= 0 {
			bm *= infl
		}
		m.bmB[b] = bm
		m.lmB[b] = (own + lm) * infl
	}
}

// kth is the k-th largest of s, or 0 when s has fewer than k values (scores
// are positive: θ = 0 prunes only blocks bounded below 0). It reorders s.
func kth(s []float32, k int) float64 {
	if len(s) < k {
		return 0
	}
	slices.SortFunc(s, func(a, b float32) int {
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	return float64(s[k-1])
}

// blockWork is the work of block b of the shortest list.
func (m *Measurer) blockWork(b int) Work {
	l0 := &m.cl.Lists[0]
	s := b * l0.BlockSize
	e := s + l0.BlockLen(b)
	var lk int64
	for _, v := range m.look[s:e] {
		lk += int64(v)
	}
	return Work{Blocks: 1, Cands: int64(e - s), Lookups: lk}
}

// tally adds the query's work under every scheme to the report.
func (m *Measurer) tally(r *Report, n int) {
	r.Queries++
	if n > 1 {
		r.Multi++
	}
	l0 := &m.cl.Lists[0]
	nb := l0.NBlocks
	m.sel = m.sel[:0]
	for j, s := range m.score {
		if s < 0 {
			continue
		}
		m.sel = append(m.sel, s)
		if b := j / l0.BlockSize; m.bmB[b] < float64(s) || m.lmB[b] < float64(s) {
			r.Unsafe++
		}
		for i, v := range m.step[j*max(n-1, 1) : j*max(n-1, 1)+n-1] {
			if v < float64(s) || m.stepL[j*max(n-1, 1)+i] < float64(s) {
				r.Unsafe++
			}
		}
	}
	r.Results += int64(len(m.sel))
	theta := kth(m.sel, m.k)
	m.theta = theta
	r.Own += m.own
	r.Other += m.other
	r.OtherN += m.otherN
	if theta > 0 {
		var lm float64
		for i := 0; i < n; i++ {
			lm += float64(m.cl.Terms[i].W) * float64(m.cl.Lists[i].MaxScore)
		}
		r.Theta += theta / lm
		r.ThetaN++
	}
	// Blocks by descending block-max bound, ties by ascending block.
	m.order = byDescending(m.order, m.bmB)
	thetaB := make([]float64, len(m.bs))
	for i, B := range m.bs {
		m.sel = m.sel[:0]
		for _, b := range m.order[:min(B, nb)] {
			s := b * l0.BlockSize
			for _, v := range m.score[s : s+l0.BlockLen(b)] {
				if v >= 0 {
					m.sel = append(m.sel, v)
				}
			}
		}
		thetaB[i] = kth(m.sel, m.k)
		if thetaB[i] > theta {
			r.ThetaBad++
		}
	}
	for rank, b := range m.order {
		w := m.blockWork(b)
		r.Full.add(w)
		if !(m.bmB[b] < theta) {
			r.Schemes[0].Left.add(w)
		}
		if !(m.lmB[b] < theta) {
			r.Schemes[1].Left.add(w)
		}
		for i, B := range m.bs {
			if rank < B || !(m.bmB[b] < thetaB[i]) {
				r.Schemes[2+i].Left.add(w)
			}
		}
		c := 2 + len(m.bs)
		r.Schemes[c].Left.add(m.candWork(m.step, b, n, theta))
		for i, B := range m.bs {
			if rank < B {
				r.Schemes[c+1+i].Left.add(w)
			} else {
				r.Schemes[c+1+i].Left.add(m.candWork(m.step, b, n, thetaB[i]))
			}
		}
		r.Schemes[c+1+len(m.bs)].Left.add(m.candWork(m.stepL, b, n, theta))
	}
	for i, c := range seedCs {
		r.Schemes[3+2*len(m.bs)+1+i].Left.add(m.seedWork(n, c))
	}
}

// seedCs are the first rounds of seedWork: candidates per query.
var seedCs = []int{16, 64, 256}

// seedWork is a two-round scheme that needs no block order: round A runs
// all steps for the c candidates of the highest term-0 scores (ties by
// position; qp_query_topk selects them after step 0), its k-th result
// score is θ_c; round B runs the other candidates with every step's check
// of the list-max candidate bound (stepL) against θ_c. Every block of the
// shortest list is still decoded (step 0).
func (m *Measurer) seedWork(n, c int) Work {
	np := len(m.s0)
	m.idx = byDescending(m.idx, m.s0)
	a := m.idx[:min(c, np)]
	w := Work{Blocks: int64(m.cl.Lists[0].NBlocks)} // no block is skipped
	m.sel = m.sel[:0]
	m.inA = slices.Grow(m.inA[:0], np)[:np]
	clear(m.inA)
	for _, j := range a {
		m.inA[j] = true
		w.Cands++
		w.Lookups += int64(m.look[j])
		if m.score[j] >= 0 {
			m.sel = append(m.sel, m.score[j])
		}
	}
	theta := kth(m.sel, m.k)
	if n == 1 {
		return Work{Blocks: w.Blocks, Cands: int64(np)}
	}
	st := n - 1
	for j := 0; j < np; j++ {
		if m.inA[j] {
			continue
		}
		b := m.stepL[j*st : j*st+st]
		if b[0] < theta {
			continue
		}
		w.Cands++
		for i := 0; i < int(m.look[j]) && !(b[i] < theta); i++ {
			w.Lookups++
		}
	}
	return w
}

// candWork is the work left in block b of the shortest list when every
// step i checks each candidate's step-i bound against θ before decoding
// list i's block: candidates are those passing step 1's check, lookups the
// steps each one passes. Blocks counts b if a candidate passes.
func (m *Measurer) candWork(step []float64, b, n int, theta float64) Work {
	l0 := &m.cl.Lists[0]
	s := b * l0.BlockSize
	e := s + l0.BlockLen(b)
	if n == 1 {
		return Work{Blocks: 1, Cands: int64(e - s)}
	}
	st := n - 1
	var w Work
	for j := s; j < e; j++ {
		st0 := step[j*st : j*st+st]
		if st0[0] < theta {
			continue
		}
		w.Cands++
		for i := 0; i < int(m.look[j]) && !(st0[i] < theta); i++ {
			w.Lookups++
		}
	}
	if w.Cands > 0 {
		w.Blocks = 1
	}
	return w
}

// TopK is the query's top k as (docID, score) pairs by descending score,
// ties by ascending docID, from the last Add (for checks against the
// engine).
func (m *Measurer) TopK() (docs []uint32, scores []float32) {
	type ds struct {
		d uint32
		s float32
	}
	var all []ds
	for j, s := range m.score {
		if s >= 0 {
			all = append(all, ds{m.docs[0][j], s})
		}
	}
	slices.SortFunc(all, func(a, b ds) int {
		switch {
		case a.s > b.s:
			return -1
		case a.s < b.s:
			return 1
		case a.d < b.d:
			return -1
		case a.d > b.d:
			return 1
		}
		return 0
	})
	for _, v := range all[:min(m.k, len(all))] {
		docs, scores = append(docs, v.d), append(scores, v.s)
	}
	return docs, scores
}

// Table formats the report as a Markdown table.
func (r *Report) Table() string {
	s := fmt.Sprintf("%d AND queries (%d with ≥ 2 terms), k = %d: %d blocks, %d candidates, %d lookups, %d results (unsafe bounds %d, θ_B > θ %d)\n\n",
		r.Queries, r.Multi, r.K, r.Full.Blocks, r.Full.Cands, r.Full.Lookups, r.Results, r.Unsafe, r.ThetaBad)
	s += fmt.Sprintf("mean over blocks: shortest list's blockMax/MaxScore %.3f; further lists' overlapping blocks' max/MaxScore %.3f; mean over %d queries with ≥ k results: θ/Σ MaxScore %.3f\n\n",
		r.Own/float64(max(r.Full.Blocks, 1)), r.Other/float64(max(r.OtherN, 1)), r.ThetaN, r.Theta/float64(max(r.ThetaN, 1)))
	s += "| scheme | blocks pruned | candidates pruned | lookups pruned |\n|---|---|---|---|\n"
	for _, sc := range r.Schemes {
		b, c, l := r.Share(sc)
		s += fmt.Sprintf("| %s | %.1f%% | %.1f%% | %.1f%% |\n", sc.Name, 100*b, 100*c, 100*l)
	}
	return s
}
