package eval

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
)

// Order is how a query's retrieved documents are ranked before measuring.
type Order int

const (
	// OrderTrecEval ranks by score descending, ties broken by docid
	// descending in byte order, ignoring the rank column: trec_eval's
	// comp_sim_docno (form_res_rels.c). The default, so that published
	// numbers are reproduced.
	OrderTrecEval Order = iota
	// OrderRank ranks by the rank column ascending, equal ranks in file
	// order: the engine's own order, immune to score ties created by
	// printing scores with few digits (see FormatScore).
	OrderRank
	// OrderFile takes the entries in the order they appear in the Run.
	OrderFile
)

func (o Order) String() string {
	switch o {
	case OrderTrecEval:
		return "trec_eval"
	case OrderRank:
		return "rank"
	case OrderFile:
		return "file"
	}
	return fmt.Sprintf("Order(%d)", int(o))
}

// DefaultCutoffs are trec_eval's default cutoffs for P and ndcg_cut.
var DefaultCutoffs = []int{5, 10, 15, 20, 30, 100, 200, 500, 1000}

// Options select trec_eval's variants. The zero value is trec_eval's
// default behaviour (trec_eval -m map -m P -m ndcg_cut).
type Options struct {
	// Order ranks each query's documents (default OrderTrecEval).
	Order Order
	// Complete is trec_eval -c: average over every query of the qrels; a
	// qrels query the run has no results for counts 0 in every measure. By
	// default (as trec_eval) only queries in both the run and the qrels are
	// averaged, and such queries are merely listed in Summary.Missing.
	Complete bool
	// Cutoffs for P and ndcg_cut (positive; sorted and de-duplicated here).
	// nil means DefaultCutoffs. 10 is always added, for FormatSummary.
	Cutoffs []int
	// RelevanceLevel is trec_eval -l: a document is relevant when its
	// level is >= this. 0 means 1 (rel > 0). nDCG gains are the levels > 0
	// whatever this is, as in trec_eval's ndcg_cut.
	RelevanceLevel int
	// MaxDocs is trec_eval -M: only the first MaxDocs documents of each
	// ranking are evaluated. 0 means all.
	MaxDocs int
}

// QueryEval holds one query's measures.
type QueryEval struct {
	QID       string
	AP        float64   // average precision (trec_eval "map" for one query)
	P         []float64 // P at Summary.Cutoffs[i]
	NDCG      []float64 // ndcg_cut at Summary.Cutoffs[i]
	NumRet    int       // documents ranked (after MaxDocs)
	NumRel    int       // judged relevant in the qrels
	NumRelRet int       // relevant among the ranked
	Missing   bool      // not in the run (present only with Options.Complete)
}

// Summary holds per-query measures and their means.
type Summary struct {
	Options Options // as given, with Cutoffs and RelevanceLevel filled in
	Cutoffs []int   // ascending; index of P and NDCG
	// Queries are the evaluated queries in trec_eval's order (qid in byte
	// order); the means below are summed in this order, as trec_eval does.
	Queries []QueryEval
	MAP     float64
	P       []float64 // mean P at Cutoffs[i]
	NDCG    []float64 // mean ndcg_cut at Cutoffs[i]
	// Counts over the evaluated queries (trec_eval's num_q, num_ret,
	// num_rel, num_rel_ret).
	NumQ, NumRet, NumRel, NumRelRet int
	// Missing lists (sorted) the qrels queries with at least one relevant
	// document that have no results in the run. Without Options.Complete
	// they are left out of every mean, as trec_eval leaves them out; check
	// this before trusting a mean of a run that may have dropped queries.
	Missing []string
	// Unjudged lists (sorted) the run queries absent from the qrels; they
	// are ignored, as in trec_eval.
	Unjudged []string
	// Duplicates counts entries dropped because their docid was already
	// ranked higher for the same query (ReadRun rejects such files; this
	// only happens with runs built in memory).
	Duplicates int
}

// Precision returns the mean P at cutoff k, or NaN if k was not evaluated.
func (s Summary) Precision(k int) float64 { return s.at(s.P, k) }

// NDCGAt returns the mean ndcg_cut at cutoff k, or NaN if k was not
// evaluated.
func (s Summary) NDCGAt(k int) float64 { return s.at(s.NDCG, k) }

func (s Summary) at(v []float64, k int) float64 {
	if i, ok := slices.BinarySearch(s.Cutoffs, k); ok && i < len(v) {
		return v[i]
	}
	return math.NaN()
}

// Evaluate computes trec_eval's measures with the default Options:
// trec_eval's ranking, averages over the queries in both run and qrels,
// relevance = rel > 0, cutoffs DefaultCutoffs.
func Evaluate(run Run, qrels Qrels) Summary {
	s, err := EvaluateWith(run, qrels, Options{})
	if err != nil {
		panic("BUG: default eval options rejected: " + err.Error())
	}
	return s
}

// EvaluateWith computes trec_eval's measures with opt; it fails only on
// invalid options.
//
// Per query (qid in qrels; with a run ranking D = d_1..d_n after
// Options.Order and Options.MaxDocs; rel(d) = the qrels level, -1 when
// unjudged; R = number of qrels docs with level >= L):
//
//	AP          = (Σ_{i: rel(d_i) >= L} |{j <= i: rel(d_j) >= L}| / i) / R   (0 if none retrieved)
//	P_k         = |{i <= min(k, n): rel(d_i) >= L}| / k
//	ndcg_cut_k  = DCG_k / IDCG_k, DCG_k = Σ_{i <= min(k,n), rel(d_i) > 0} rel(d_i) / log2(i+1),
//	              IDCG_k the same over the qrels levels > 0 sorted descending;
//	              0 when the query has no document with level > 0.
//
// Means are arithmetic means over the evaluated queries: those in both the
// run and the qrels (trec_eval's default; a qrels query with only
// non-relevant judgments is evaluated and scores 0), or with Complete all
// qrels queries. A qid mapped to an empty slice in run counts as absent.
func EvaluateWith(run Run, qrels Qrels, opt Options) (Summary, error) {
	cut := opt.Cutoffs
	if cut == nil {
		cut = DefaultCutoffs
	}
	cut = append(slices.Clone(cut), 10)
	slices.Sort(cut)
	cut = slices.Compact(cut)
	if cut[0] <= 0 {
		return Summary{}, fmt.Errorf("eval: cutoff %d, want > 0", cut[0])
	}
	if opt.RelevanceLevel == 0 {
		opt.RelevanceLevel = 1
	}
	if opt.MaxDocs < 0 {
		return Summary{}, fmt.Errorf("eval: MaxDocs %d, want >= 0", opt.MaxDocs)
	}
	switch opt.Order {
	case OrderTrecEval, OrderRank, OrderFile:
	default:
		return Summary{}, fmt.Errorf("eval: unknown order %v", opt.Order)
	}
	opt.Cutoffs = cut
	s := Summary{Options: opt, Cutoffs: cut, P: make([]float64, len(cut)), NDCG: make([]float64, len(cut))}

	qids := make([]string, 0, len(qrels))
	for q := range qrels {
		qids = append(qids, q)
	}
	sort.Strings(qids) // strcmp order, as trec_eval's qsort of the qrels
	for q, es := range run {
		if _, ok := qrels[q]; !ok && len(es) > 0 {
			s.Unjudged = append(s.Unjudged, q)
		}
	}
	sort.Strings(s.Unjudged)

	var ranked []RunEntry
	for _, q := range qids {
		judged := qrels[q]
		entries := run[q]
		if len(entries) == 0 {
			if hasRelevant(judged, opt.RelevanceLevel) {
				s.Missing = append(s.Missing, q)
			}
			if !opt.Complete {
				continue
			}
		}
		var dups int
		ranked, dups = rank(ranked[:0], entries, opt.Order)
		s.Duplicates += dups
		if opt.MaxDocs > 0 && len(ranked) > opt.MaxDocs {
			ranked = ranked[:opt.MaxDocs]
		}
		qe := evalQuery(q, ranked, judged, cut, opt.RelevanceLevel)
		qe.Missing = len(entries) == 0
		s.Queries = append(s.Queries, qe)
	}

	for _, qe := range s.Queries {
		s.MAP += qe.AP
		for i := range cut {
			s.P[i] += qe.P[i]
			s.NDCG[i] += qe.NDCG[i]
		}
		s.NumRet += qe.NumRet
		s.NumRel += qe.NumRel
		s.NumRelRet += qe.NumRelRet
	}
	s.NumQ = len(s.Queries)
	if s.NumQ > 0 {
		n := float64(s.NumQ)
		s.MAP /= n
		for i := range cut {
			s.P[i] /= n
			s.NDCG[i] /= n
		}
	}
	return s, nil
}

func hasRelevant(judged map[string]int, level int) bool {
	for _, r := range judged {
		if r >= level {
			return true
		}
	}
	return false
}

// rank appends entries to dst in evaluation order, dropping repeated docids
// (keeping the highest-ranked); it returns the number dropped.
func rank(dst, entries []RunEntry, order Order) ([]RunEntry, int) {
	dst = append(dst, entries...)
	switch order {
	case OrderTrecEval:
		// comp_sim_docno: sim descending, then strcmp(d2, d1). The
		// comparison is a total order on distinct docids, so an unstable
		// sort is deterministic.
		sort.Slice(dst, func(i, j int) bool {
			a, b := dst[i], dst[j]
			if a.Score != b.Score {
				return a.Score > b.Score
			}
			return a.DocID > b.DocID
		})
	case OrderRank:
		sort.SliceStable(dst, func(i, j int) bool { return dst[i].Rank < dst[j].Rank })
	}
	var seen map[string]struct{}
	out := dst[:0]
	for _, e := range dst {
		if seen == nil {
			seen = make(map[string]struct{}, len(dst))
		}
		if _, dup := seen[e.DocID]; dup {
			continue
		}
		seen[e.DocID] = struct{}{}
		out = append(out, e)
	}
	return out, len(dst) - len(out)
}

// evalQuery computes one query's measures, following trec_eval's m_map.c,
// m_P.c and m_ndcg_cut.c (including the order of floating-point operations).
func evalQuery(qid string, ranked []RunEntry, judged map[string]int, cut []int, level int) QueryEval {
	qe := QueryEval{QID: qid, P: make([]float64, len(cut)), NDCG: make([]float64, len(cut)), NumRet: len(ranked)}

	// rel_levels: judged documents per level >= 0.
	maxLevel := 0
	for _, r := range judged {
		maxLevel = max(maxLevel, r)
	}
	levels := make([]int, maxLevel+1)
	for _, r := range judged {
		if r >= 0 {
			levels[r]++
		}
		if r >= level {
			qe.NumRel++
		}
	}

	rels := make([]int, len(ranked))
	for i, e := range ranked {
		r, ok := judged[e.DocID]
		if !ok {
			r = -1 // RELVALUE_NONPOOL
		}
		rels[i] = r
	}

	// map
	var sum float64
	relSoFar := 0
	for i, r := range rels {
		if r >= level {
			relSoFar++
			sum += float64(relSoFar) / float64(i+1)
		}
	}
	qe.NumRelRet = relSoFar
	if relSoFar > 0 {
		qe.AP = sum / float64(qe.NumRel)
	}

	// P_k: cutoffs beyond the ranking are filled with non-relevant docs.
	for ci, k := range cut {
		n := 0
		for i := 0; i < k && i < len(rels); i++ {
			if rels[i] >= level {
				n++
			}
		}
		qe.P[ci] = float64(n) / float64(k)
	}

	// ndcg_cut_k: gain = level (> 0), discount log2(rank+1).
	for ci, k := range cut {
		var dcg float64
		for i := 0; i < k && i < len(rels); i++ {
			if rels[i] > 0 {
				dcg += float64(rels[i]) / math.Log2(float64(i+2))
			}
		}
		var ideal float64
		i := 0
		for l := maxLevel; l > 0 && i < k; l-- {
			for c := 0; c < levels[l] && i < k; c++ {
				ideal += float64(l) / math.Log2(float64(i+2))
				i++
			}
		}
		if ideal > 0 {
			dcg /= ideal
		}
		qe.NDCG[ci] = dcg
	}
	return qe
}

// FormatSummary prints s as trec_eval prints its summary ("%-22s\tall\t%.4f"
// per measure): map, P_10, ndcg_cut_10, num_q, num_ret, num_rel,
// num_rel_ret. When qrels queries with relevant documents have no results
// (Summary.Missing), a '#' comment line says how many and whether they were
// averaged as 0 or left out.
func FormatSummary(w io.Writer, s Summary) error {
	var b strings.Builder
	f := func(name string, v float64) { fmt.Fprintf(&b, "%-22s\tall\t%.4f\n", name, v) }
	d := func(name string, v int) { fmt.Fprintf(&b, "%-22s\tall\t%d\n", name, v) }
	f("map", s.MAP)
	f("P_10", s.Precision(10))
	f("ndcg_cut_10", s.NDCGAt(10))
	d("num_q", s.NumQ)
	d("num_ret", s.NumRet)
	d("num_rel", s.NumRel)
	d("num_rel_ret", s.NumRelRet)
	if n := len(s.Missing); n > 0 {
		how := "left out of the means, as trec_eval does; -c counts them as 0"
		if s.Options.Complete {
			how = "averaged as 0 (trec_eval -c)"
		}
		fmt.Fprintf(&b, "# %d judged queries with relevant documents have no results: %s\n", n, how)
	}
	if _, err := w.Write([]byte(b.String())); err != nil {
		return fmt.Errorf("eval: writing summary: %w", err)
	}
	return nil
}
