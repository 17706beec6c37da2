package collstats

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
)

// qres is what one query contributes to its set's metrics.
type qres struct {
	empty    bool  // no terms after analysis: not counted
	known    bool  // every term is in the index
	k        int   // distinct terms found in the index
	and      int64 // AND result count (0 when a term is unknown)
	r        []float64
	or       [2]orWork // MaxScore, BMW
	lists    int64     // postings of the distinct known terms' lists
	blocks   int64     // their blocks
	measured bool      // OR ran (k >= 1)
}

type orWork struct{ postings, blocks, candidates int64 }

var orStrategies = [2]engine.OrStrategy{engine.OrMaxScore, engine.OrBMW}

// worker holds one goroutine's scratch.
type worker struct {
	x    *index.Index
	an   *analysis.Analyzer
	eng  *engine.Engine
	cur  index.Cursor
	buf  []uint32
	cand []uint32
	can  []engine.Term
	opt  Options
}

func queryMetrics(x *index.Index, s QuerySet, opt Options) ([]Metric, error) {
	res := make([]qres, len(s.Queries))
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(s.Queries)))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		an, err := x.Analyzer()
		if err != nil {
			return nil, fmt.Errorf("collstats: %w", err)
		}
		wk := &worker{x: x, an: an, eng: engine.New(x), opt: opt}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(s.Queries); i += workers {
				if res[i], errs[w] = wk.run(s.Queries[i].ID, s.Queries[i].Text); errs[w] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("collstats: query set %s: %w", s.Name, err)
		}
	}
	return aggregate(s.Name, res, opt), nil
}

// run measures one query.
func (w *worker) run(id, text string) (qres, error) {
	terms := w.an.Tokens(text)
	if len(terms) == 0 {
		return qres{empty: true}, nil
	}
	q := engine.Query{ID: id, Terms: terms, Mode: engine.Or, K: w.opt.K}
	var unknown bool
	w.can, unknown = engine.CanonicalTerms(w.can, w.x, q)
	r := qres{known: !unknown, k: len(w.can)}
	if r.k == 0 {
		return r, nil
	}
	for _, t := range w.can {
		l, err := w.x.List(t.ID)
		if err != nil {
			return r, err
		}
		r.lists += int64(l.DF)
		r.blocks += int64(l.NBlocks)
	}
	if r.known {
		var err error
		if r.and, r.r, err = w.stages(r.k <= w.opt.MaxTerms); err != nil {
			return r, err
		}
	}
	r.measured = true
	for i, s := range orStrategies {
		// NoTAAT: the work of the strategy itself, not of the TAAT plans
		// MaxScore and BMW switch to on short queries.
		_, st, err := w.eng.Search(q, engine.Options{OrAlgo: s, OrBitmapDensity: engine.NoBitmaps, OrTAATPostings: engine.NoTAAT})
		if err != nil {
			return r, err
		}
		r.or[i] = orWork{st.PostingsDecoded, st.BlocksDecoded, st.Candidates}
	}
	return r, nil
}

// stages intersects the lists of w.can (canonical order: ascending df, so
// ℓ1 is the shortest) one after the other, and returns the size of the
// whole conjunction and, when withR, Ao's R for each stage x = 1..k-1:
// |ℓ1 ∩ … ∩ ℓx| / |ℓx+1|. ℓ1 is decoded; each later list is probed with a
// block-skipping cursor at the surviving docIDs only.
func (w *worker) stages(withR bool) (int64, []float64, error) {
	l, err := w.x.List(w.can[0].ID)
	if err != nil {
		return 0, nil, err
	}
	if w.cand, err = decodeDocs(&l, w.cand[:0], &w.buf); err != nil {
		return 0, nil, err
	}
	var rs []float64
	for x := 1; x < len(w.can); x++ {
		l, err := w.x.List(w.can[x].ID)
		if err != nil {
			return 0, nil, err
		}
		if withR {
			rs = append(rs, float64(len(w.cand))/float64(l.DF))
		}
		w.cur.Reset(l)
		keep := w.cand[:0]
		for _, d := range w.cand {
			got := w.cur.NextGEQ(d)
			if got == index.Terminated {
				break
			}
			if got == d {
				keep = append(keep, d)
			}
		}
		if err := w.cur.Err(); err != nil {
			return 0, nil, err
		}
		w.cand = keep
	}
	return int64(len(w.cand)), rs, nil
}

// decodeDocs appends every docID of l to dst.
func decodeDocs(l *index.List, dst []uint32, buf *[]uint32) ([]uint32, error) {
	if cap(*buf) < l.BlockSize {
		*buf = make([]uint32, l.BlockSize)
	}
	b := (*buf)[:l.BlockSize]
	for i := 0; i < l.NBlocks; i++ {
		n, err := l.DecodeDocs(i, b)
		if err != nil {
			return dst, err
		}
		dst = append(dst, b[:n]...)
	}
	return dst, nil
}

// aggregate turns the per-query results of one set into its metrics; the
// row names depend only on name and opt.
func aggregate(name string, res []qres, opt Options) []Metric {
	sec := "queries " + name
	var n, known, terms float64
	var ands, kands []float64
	var empty, kempty float64
	perK := make([]float64, opt.MaxTerms+1)
	rsum := make([][]float64, opt.MaxTerms+1)
	rsq := make([][]float64, opt.MaxTerms+1) // sums of squares, for the standard errors
	for k := range rsum {
		rsum[k] = make([]float64, k)
		rsq[k] = make([]float64, k)
	}
	var lists, blocks float64
	var or [2]orWork
	for _, r := range res {
		if r.empty {
			continue
		}
		n++
		terms += float64(r.k)
		ands = append(ands, float64(r.and))
		if r.and == 0 {
			empty++
		}
		if r.known {
			known++
			kands = append(kands, float64(r.and))
			if r.and == 0 {
				kempty++
			}
			if r.k <= opt.MaxTerms {
				perK[r.k]++
				for x, v := range r.r {
					rsum[r.k][x+1] += v
					rsq[r.k][x+1] += v * v
				}
			}
		}
		if r.measured {
			lists += float64(r.lists)
			blocks += float64(r.blocks)
			for i := range or {
				or[i].postings += r.or[i].postings
				or[i].blocks += r.or[i].blocks
				or[i].candidates += r.or[i].candidates
			}
		}
	}
	slices.Sort(ands)
	slices.Sort(kands)
	var sum float64
	for _, v := range ands {
		sum += v
	}
	ms := []Metric{
		{sec, "queries (non-empty after analysis)", n},
		{sec, "all terms in the index (%)", pct(known, n)},
		{sec, "distinct known terms, mean", div(terms, n)},
		{sec, "AND results median", quantile(ands, 0.5)},
		{sec, "AND results mean", div(sum, n)},
		{sec, "AND empty (%)", pct(empty, n)},
		{sec, "AND results median (all terms known)", quantile(kands, 0.5)},
		{sec, "AND empty (% of all-known)", pct(kempty, known)},
	}
	for k := 2; k <= opt.MaxTerms; k++ {
		ms = append(ms, Metric{sec, fmt.Sprintf("k=%d queries (%% of all-known)", k), pct(perK[k], known)})
		for x := 1; x < k; x++ {
			ms = append(ms, Metric{sec, fmt.Sprintf("R k=%d x=%d (%%)", k, x), pct(rsum[k][x], perK[k])},
				Metric{sec, fmt.Sprintf("R k=%d x=%d s.e. (%%)", k, x), 100 * stdErr(rsum[k][x], rsq[k][x], perK[k])})
		}
	}
	for i, s := range orStrategies {
		ms = append(ms,
			Metric{sec, fmt.Sprintf("OR top-%d %s postings decoded (%%)", opt.K, s), pct(float64(or[i].postings), lists)},
			Metric{sec, fmt.Sprintf("OR top-%d %s blocks decoded (%%)", opt.K, s), pct(float64(or[i].blocks), blocks)},
			Metric{sec, fmt.Sprintf("OR top-%d %s documents scored (%% of postings)", opt.K, s), pct(float64(or[i].candidates), lists)})
	}
	return ms
}

// stdErr is the standard error of a mean of n values whose sum and sum
// of squares are given: sqrt(sample variance / n); NaN below 2 values.
func stdErr(sum, sq, n float64) float64 {
	if n < 2 {
		return math.NaN()
	}
	m := sum / n
	v := max(0, (sq-n*m*m)/(n-1))
	return math.Sqrt(v / n)
}
