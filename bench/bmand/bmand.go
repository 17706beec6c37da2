// Package bmand measures, on the CPU and outside any hot path, how much of
// a GPU AND's work comes from queries whose posting lists are all dense
// enough to have device bitmaps, and what a word-wise bitmap AND would cost
// them instead (issues 20 §4 and 25; docs/GPU-QUERY.md "Bitmap AND of
// all-dense queries: the potential").
//
// The GPU AND (cuda/kernels/query_and.cu, query_and_bitmap.cu; engine/gpu
// and.go) makes every posting of a query's shortest list a candidate: the
// list is decoded whole, qp_query_and_init scores each posting with term 0
// (a random norm read), qp_and_filter tests each candidate against the
// query's bitmap terms (the longest suffix of its canonical terms, term 0
// excepted, whose lists have a device bitmap; one bit test each, stopping
// at the first miss), qp_and_compact keeps the survivors, the list steps
// locate them in the other terms' lists, qp_and_bmscore adds the bitmap
// terms' scores by rank and qp_query_topk selects. A word-wise AND of the
// query's group bitsets (31 documents per 4-byte word, wah.Groups) reads
// 4·ceil(N/31) bytes per term, whatever the lists' lengths, and yields the
// intersection directly; its documents are then scored by rank in every
// term (term 0 too).
//
// Per query the Measurer counts, in the GPU's order: candidates (the
// shortest list's df), bit tests of the filter, candidates kept by the
// filter, lookups of the list steps (a candidate is located in list j only
// while it matched every test before), and results (the intersection).
// Traffic turns those counts into device bytes with the per-item costs
// of the kernels' comments (see Costs).
package bmand

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/qpengine/qp/bitmap/wah"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// Query is the measured work of one AND query (terms in canonical order).
type Query struct {
	M        int      // distinct terms
	DF       []uint32 // their df, ascending
	BM       int      // bitmap terms (suffix, term 0 excepted)
	AllBM    bool     // every list, term 0 included, has a device bitmap
	Cands    int64    // candidates: df of term 0
	Tests    int64    // the filter's bit tests
	Filtered int64    // candidates the filter keeps (Cands without bitmap terms)
	Lookups  int64    // list-step lookups (after the filter)
	Results  int64    // the intersection's size
	DBytes   int64    // term 0's encoded docID and frequency bytes (decoded whole)
}

// Costs are the device bytes per item of both plans (the kernels'
// "Memory per ..." comments; a random 4-byte read counts as a 32-byte
// sector). They are a model for ranking plans, not a measurement.
type Costs struct {
	Decode   float64 // per candidate: the decoders' writes (docID, tf) and qp_query_and_init's reads of them
	Init     float64 // per candidate: and_init's norm sector and its 12-byte writes
	Filter   float64 // per candidate: the filter's reads (cdoc, cq), its flag, and the compaction's reads
	Test     float64 // per bit test (a random sector of a column)
	Kept     float64 // per candidate kept by a compaction (12-byte writes)
	Lookup   float64 // per list-step lookup (locate, select, gather/decode share, match, compaction)
	Rank     float64 // per result and term scored by rank (rank entry, words, skip entry, block header and slot)
	Result   float64 // per result: norm sector, score read/write, top-k read
	Emit     float64 // bitmap plan, per result: its docID and query written
	WordPass float64 // bitmap plan: passes over the columns' words (count, then emit)
}

// DefaultCosts are the per-item costs of docs/GPU-QUERY.md's table.
var DefaultCosts = Costs{
	Decode: 16, Init: 32 + 12, Filter: 8 + 4 + 16, Test: 32, Kept: 12,
	Lookup: 100, Rank: 160, Result: 32 + 8 + 12, Emit: 8, WordPass: 2,
}

// Candidate is the candidate plan's device bytes for q (the GPU AND of
// today, with the bitmap terms of q.BM).
func (c Costs) Candidate(q *Query) float64 {
	b := float64(q.DBytes) + float64(q.Cands)*(c.Decode+c.Init)
	if q.BM > 0 {
		b += float64(q.Cands)*c.Filter + float64(q.Tests)*c.Test + float64(q.Filtered)*c.Kept
	}
	b += float64(q.Lookups) * c.Lookup
	return b + float64(q.Results)*(float64(q.BM)*c.Rank+c.Result)
}

// Bitmap is the bitmap plan's device bytes for q over n documents: every
// term's group bitset read WordPass times, the results emitted and scored
// by rank in all M terms.
func (c Costs) Bitmap(q *Query, n uint32) float64 {
	words := float64(4 * wah.Groups(n))
	return c.WordPass*float64(q.M)*words + float64(q.Results)*(c.Emit+float64(q.M)*c.Rank+c.Result)
}

// Measurer measures AND queries over one index with the device bitmaps
// that engine/gpu would build at a density and byte budget. Add is safe
// for concurrent use (the bitset cache is shared under a lock).
type Measurer struct {
	x       *index.Index
	n       uint32
	minDF   uint32
	hasCol  []bool // term -> has a device bitmap
	cols    int
	mu      sync.Mutex
	cache   map[int][]uint64 // bitsets of dense terms (df >= cacheDF)
	cacheDF uint32
}

// New returns a Measurer over x whose device bitmaps are those of
// engine/gpu's initBitmaps: the lists of density >= density, densest first
// (ties by descending term ID), while their group bitsets and rank
// directories fit budget bytes, each sized for target documents (x's own
// count when target is 0: the columns of a larger collection of the same
// densities are fewer for the same budget).
func New(x *index.Index, density float64, budget int64, target uint32) *Measurer {
	n := uint32(x.NumDocs())
	m := &Measurer{x: x, n: n, hasCol: make([]bool, x.NumTerms()), cache: map[int][]uint64{}}
	m.minDF = uint32(max(1, math.Ceil(density*float64(n))))
	m.cacheDF = max(1, n>>10)
	if target == 0 {
		target = n
	}
	D := wah.Groups(target)
	per := 4 * int64(D+kern.AndRankEntries(D))
	type td struct {
		t  int
		df uint32
	}
	var ts []td
	for t := range x.NumTerms() {
		if df := x.Record(t).DF; df >= m.minDF {
			ts = append(ts, td{t, df})
		}
	}
	slices.SortFunc(ts, func(a, b td) int {
		if c := cmp.Compare(b.df, a.df); c != 0 {
			return c
		}
		return cmp.Compare(b.t, a.t)
	})
	for _, e := range ts {
		if int64(m.cols+1)*per > budget {
			break
		}
		m.hasCol[e.t] = true
		m.cols++
	}
	return m
}

// Columns is the number of device bitmaps and the least df they need.
func (m *Measurer) Columns() (int, uint32) { return m.cols, m.minDF }

// bitset returns term t's docIDs as a bitset of N bits (cached for dense
// terms; else built into scratch).
func (m *Measurer) bitset(l *index.List, scratch []uint64, docs []uint32) ([]uint64, []uint32, error) {
	if l.DF >= m.cacheDF {
		m.mu.Lock()
		b, ok := m.cache[l.Term]
		m.mu.Unlock()
		if ok {
			return b, docs, nil
		}
	}
	docs, _, err := l.Decode(docs, nil)
	if err != nil {
		return nil, docs, err
	}
	var b []uint64
	if l.DF >= m.cacheDF {
		b = make([]uint64, (m.n+63)/64)
	} else {
		b = scratch
		clear(b)
	}
	for _, d := range docs {
		b[d>>6] |= 1 << (d & 63)
	}
	if l.DF >= m.cacheDF {
		m.mu.Lock()
		m.cache[l.Term] = b
		m.mu.Unlock()
	}
	return b, docs, nil
}

// Scratch is one goroutine's buffers for Add.
type Scratch struct {
	cl   engine.CanonLists
	sets [][]uint64
	docs []uint32
}

// Add measures one AND query of analyzed terms into q; ok is false when
// the query has no work (no term, or a term not in the index: the GPU
// answers it without a launch).
func (m *Measurer) Add(sc *Scratch, terms []string, q *Query) (ok bool, err error) {
	if ok, err := sc.cl.Load(m.x, engine.Query{Terms: terms, Mode: engine.And, K: 10}); !ok {
		return false, err
	}
	M := len(sc.cl.Lists)
	*q = Query{M: M, DF: q.DF[:0]}
	for _, l := range sc.cl.Lists {
		q.DF = append(q.DF, l.DF)
	}
	for j := M - 1; j >= 1 && m.hasCol[sc.cl.Lists[j].Term]; j-- {
		q.BM++
	}
	q.AllBM = q.BM == M-1 && m.hasCol[sc.cl.Lists[0].Term]
	l0 := &sc.cl.Lists[0]
	q.Cands = int64(l0.DF)
	q.DBytes = int64(len(l0.DocBytes()) + len(l0.FreqBytes()))
	for len(sc.sets) < M {
		sc.sets = append(sc.sets, make([]uint64, (m.n+63)/64))
	}
	// The sets of terms 1..M-1 (scratch j is term j's when not cached).
	sets := make([][]uint64, M)
	for j := 1; j < M; j++ {
		if sets[j], sc.docs, err = m.bitset(&sc.cl.Lists[j], sc.sets[j], sc.docs); err != nil {
			return false, err
		}
	}
	sc.docs, _, err = l0.Decode(sc.docs, nil)
	if err != nil {
		return false, err
	}
	first := M - q.BM // the first bitmap term
	in := func(j int, d uint32) bool { return sets[j][d>>6]>>(d&63)&1 != 0 }
	for _, d := range sc.docs {
		alive := true
		for j := first; j < M && alive; j++ {
			q.Tests++
			alive = in(j, d)
		}
		if !alive {
			continue
		}
		q.Filtered++
		for j := 1; j < first && alive; j++ {
			q.Lookups++
			alive = in(j, d)
		}
		if alive {
			q.Results++
		}
	}
	if q.BM == 0 {
		q.Filtered = q.Cands
	}
	return true, nil
}

// Class is the totals of the queries whose term 0 has density >= MinDensity.
type Class struct {
	Name                   string
	MinDensity             float64 // of term 0 (the shortest list)
	AllBM                  bool    // only queries whose every list has a device bitmap
	Queries                int
	Cands, Tests, Lookups  int64
	Filtered               int64 // candidates kept by the filter (all, without bitmap terms)
	Work                   int64 // tests + lookups
	Results                int64
	CandBytes, BitmapBytes float64 // both plans' modeled device bytes
	BitmapWins             int     // queries whose bitmap plan is cheaper
	WinCandBytes           float64 // candidate-plan bytes of those queries
	WinBitmapBytes         float64 // bitmap-plan bytes of those queries
}

// Report is the totals over a query log.
type Report struct {
	N       uint32
	Cols    int
	MinDF   uint32
	All     Class // every measured AND query of >= 2 terms
	Single  Class // one-term queries (no steps)
	Classes []Class
	Costs   Costs
}

// NewReport returns a report with classes by term-0 density 2^-e, e in
// exps, plus the all-device-bitmap class.
func NewReport(m *Measurer, exps []int, c Costs) *Report {
	r := &Report{N: m.n, Cols: m.cols, MinDF: m.minDF, Costs: c}
	r.All.Name, r.Single.Name = "all AND queries, >= 2 terms", "one-term queries"
	r.Classes = append(r.Classes, Class{Name: "every list has a device bitmap", AllBM: true})
	for _, e := range exps {
		r.Classes = append(r.Classes, Class{Name: fmt.Sprintf("term 0 density >= 2^-%d", e), MinDensity: math.Ldexp(1, -e)})
	}
	return r
}

func (c *Class) add(q *Query, cb, bb float64) {
	c.Queries++
	c.Cands += q.Cands
	c.Tests += q.Tests
	c.Lookups += q.Lookups
	c.Filtered += q.Filtered
	c.Work += q.Tests + q.Lookups
	c.Results += q.Results
	c.CandBytes += cb
	c.BitmapBytes += bb
	if bb < cb {
		c.BitmapWins++
		c.WinCandBytes += cb
		c.WinBitmapBytes += bb
	}
}

// Add adds one measured query.
func (r *Report) Add(q *Query) {
	cb, bb := r.Costs.Candidate(q), r.Costs.Bitmap(q, r.N)
	if q.M < 2 {
		r.Single.add(q, cb, bb)
		return
	}
	r.All.add(q, cb, bb)
	p0 := float64(q.DF[0]) / float64(r.N)
	for i := range r.Classes {
		c := &r.Classes[i]
		if (c.AllBM && q.AllBM) || (!c.AllBM && p0 >= c.MinDensity) {
			c.add(q, cb, bb)
		}
	}
}

// Table prints the report: per class its share of the >= 2-term queries'
// candidates and step work (tests + lookups) and both plans' modeled
// bytes per query.
func (r *Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "N = %d, %d device bitmaps (df >= %d), one-term queries: %d (%d candidates)\n", r.N, r.Cols, r.MinDF, r.Single.Queries, r.Single.Cands)
	fmt.Fprintf(&b, "totals (>= 2 terms): %d candidates, %d bit tests, %d kept by the filters, %d lookups, %d results\n", r.All.Cands, r.All.Tests, r.All.Filtered, r.All.Lookups, r.All.Results)
	fmt.Fprintf(&b, "| class | queries | share of candidates | share of step work | share of bit tests | share of lookups | results/candidate | candidate plan MB/query | bitmap plan MB/query | bitmap/candidate | queries where bitmap wins (their bitmap/candidate) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	row := func(c *Class) {
		sh := func(a, t int64) float64 {
			if t == 0 {
				return 0
			}
			return float64(a) / float64(t)
		}
		pq := func(x float64) float64 {
			if c.Queries == 0 {
				return 0
			}
			return x / float64(c.Queries) / 1e6
		}
		ratio, wr := 0.0, 0.0
		if c.CandBytes > 0 {
			ratio = c.BitmapBytes / c.CandBytes
		}
		if c.WinCandBytes > 0 {
			wr = c.WinBitmapBytes / c.WinCandBytes
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.3f | %.3f | %.3f | %.2f | %d (%.2f) |\n", c.Name, c.Queries,
			100*sh(c.Cands, r.All.Cands), 100*sh(c.Work, r.All.Work), 100*sh(c.Tests, r.All.Tests), 100*sh(c.Lookups, r.All.Lookups), sh(c.Results, c.Cands), pq(c.CandBytes), pq(c.BitmapBytes), ratio, c.BitmapWins, wr)
	}
	row(&r.All)
	for i := range r.Classes {
		row(&r.Classes[i])
	}
	return b.String()
}
