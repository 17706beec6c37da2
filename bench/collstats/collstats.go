// Package collstats measures the statistics that decide how a collection
// behaves under query processing, and sets two indexes side by side: a real
// collection and a synthetic stand-in, or two real ones (issue 20 §2).
//
// For each index (Measure):
//   - document lengths: quantiles p10, p50, p90, p99 and the maximum;
//   - document frequencies: quantiles over terms, the share of hapax terms,
//     the number of lists longer than 4096 and their share of the postings;
//   - compressed size: bits per docID and per frequency with every list
//     re-encoded by bp128 in the index's docID order (ReencodeSizes, as
//     `qp stats --codecs bp128`);
//   - the spread of block maxima within lists of two or more blocks: the
//     mean over lists, weighted by list length, of p90(block max)/list max
//     and of the coefficient of variation of the block maxima (flat bounds,
//     ratio near 1 and CV near 0, leave block-max pruning nothing to skip);
//
// and for each query set (the query text analyzed by the index's own
// analyzer, as `qp query` does):
//   - AND result counts (median, mean, share of empty results; an unknown
//     term gives 0), and the median and empty share over the queries whose
//     terms are all in the index;
//   - Ao et al. (VLDB'11, Appendix C, Table 4) length ratios: for a query of
//     k distinct terms whose lists sorted by length are ℓ1..ℓk, stage x has
//     R = |ℓ1 ∩ … ∩ ℓx| / |ℓx+1| (x = 1..k-1), averaged over the queries of
//     k terms all present in the index, in percent, each with the standard
//     error of that mean (a row "R k=K x=X s.e."): the mean is made by a
//     few queries of long, overlapping lists, so it is noisy on a few
//     hundred queries (docs/GEN.md, Validation);
//   - the share of postings and of blocks that MaxScore and BlockMax-WAND
//     decode for top-k OR (engine.Stats.PostingsDecoded and BlocksDecoded,
//     summed over the set, divided by the postings and blocks of the
//     queries' lists), with the roaring OR path off so that both strategies
//     run on block cursors; and the documents they score fully
//     (engine.Stats.Candidates) per posting of the queries' lists.
package collstats

import (
	"fmt"
	"math"
	"slices"

	"github.com/qpengine/qp/bench/queryset"
	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/report"
)

// QuerySet is a named list of queries (from eval.ReadQueries).
type QuerySet struct {
	Name    string
	Queries []eval.Query
}

// Options configure Measure and Compare; the zero value selects the
// defaults.
type Options struct {
	// Generate lists the query-set kinds (bench/queryset) to draw from each
	// measured index itself, with GenN queries per kind and seed GenSeed,
	// after the common sets: each index is measured with its own generated
	// queries, drawn alike (same buckets, term counts and seed), as a
	// real collection and its synthetic stand-in do not share a vocabulary.
	Generate []queryset.Kind
	GenN     int // default 1000
	GenSeed  uint64
	K        int // top-k of the OR pruning measurements (default 10)
	MaxTerms int // largest query length k of the R ratios (default 6, as Ao's Table 4)
	Workers  int // goroutines over queries (default GOMAXPROCS)
}

func (o Options) resolve() (Options, error) {
	if o.K == 0 {
		o.K = 10
	}
	if o.MaxTerms == 0 {
		o.MaxTerms = 6
	}
	if o.GenN == 0 {
		o.GenN = 1000
	}
	if o.K < 1 || o.K > 10000 {
		return o, fmt.Errorf("collstats: k = %d, want 1..10000", o.K)
	}
	if o.MaxTerms < 2 || o.MaxTerms > 16 {
		return o, fmt.Errorf("collstats: R ratios up to %d terms, want 2..16", o.MaxTerms)
	}
	return o, nil
}

// Metric is one measured value. Value is NaN where it is undefined (no
// query of that length, no list of two blocks).
type Metric struct {
	Section, Name string
	Value         float64
}

// Measure computes every metric of x and the query sets. The metric names
// and their order depend only on opt and the sets' names, never on the
// data, so two indexes' metrics line up row by row.
func Measure(x *index.Index, sets []QuerySet, opt Options) ([]Metric, error) {
	opt, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	var ms []Metric
	ms = append(ms, collectionMetrics(x)...)
	ms = append(ms, dfMetrics(x)...)
	db, fb, err := ReencodeSizes(x, mustBP128())
	if err != nil {
		return nil, err
	}
	p := float64(max(x.Meta.Postings, 1))
	ms = append(ms,
		Metric{"compression", "bp128 bits/docID (input order)", 8 * float64(db) / p},
		Metric{"compression", "bp128 bits/freq", 8 * float64(fb) / p})
	bm, err := blockMaxMetrics(x)
	if err != nil {
		return nil, err
	}
	ms = append(ms, bm...)
	gen, err := generatedSets(x, opt)
	if err != nil {
		return nil, err
	}
	for _, s := range append(slices.Clip(sets), gen...) {
		qm, err := queryMetrics(x, s, opt)
		if err != nil {
			return nil, err
		}
		ms = append(ms, qm...)
	}
	return ms, nil
}

// generatedSets draws opt.Generate's query sets from x, one set per kind,
// named "generated KIND".
func generatedSets(x *index.Index, opt Options) ([]QuerySet, error) {
	if len(opt.Generate) == 0 {
		return nil, nil
	}
	an, err := x.Analyzer()
	if err != nil {
		return nil, fmt.Errorf("collstats: %w", err)
	}
	var out []QuerySet
	for _, k := range opt.Generate {
		qs, _, err := queryset.Generate(x, an.Tokens, queryset.Options{Seed: opt.GenSeed, N: opt.GenN, Kinds: []queryset.Kind{k}})
		if err != nil {
			return nil, err
		}
		s := QuerySet{Name: "generated " + string(k)}
		for _, q := range qs {
			s.Queries = append(s.Queries, eval.Query{ID: q.ID, Text: q.Text()})
		}
		out = append(out, s)
	}
	return out, nil
}

func mustBP128() compress.Codec {
	c, err := compress.ByName("bp128")
	if err != nil {
		panic("BUG: no bp128 codec: " + err.Error())
	}
	return c
}

func collectionMetrics(x *index.Index) []Metric {
	lens := slices.Clone(x.DocLens())
	slices.Sort(lens)
	sec := "documents"
	ms := []Metric{
		{sec, "documents", float64(x.NumDocs())},
		{sec, "terms", float64(x.NumTerms())},
		{sec, "postings", float64(x.Meta.Postings)},
		{sec, "tokens", float64(x.Meta.Tokens)},
		{sec, "length mean", x.AvgDL()},
	}
	for _, q := range []float64{0.10, 0.50, 0.90, 0.99} {
		ms = append(ms, Metric{sec, fmt.Sprintf("length p%g", 100*q), quantile(lens, q)})
	}
	return append(ms, Metric{sec, "length max", quantile(lens, 1)})
}

func dfMetrics(x *index.Index) []Metric {
	nt := x.NumTerms()
	dfs := make([]uint32, nt)
	var long, hapax, total uint64
	nlong := 0
	for t := range dfs {
		df := x.Record(t).DF
		dfs[t] = df
		total += uint64(df)
		if df > 4096 {
			long += uint64(df)
			nlong++
		}
		if df == 1 {
			hapax++
		}
	}
	slices.Sort(dfs)
	sec := "df"
	ms := []Metric{}
	for _, q := range []float64{0.50, 0.90, 0.99, 0.999} {
		ms = append(ms, Metric{sec, fmt.Sprintf("df p%g", 100*q), quantile(dfs, q)})
	}
	return append(ms,
		Metric{sec, "df max", quantile(dfs, 1)},
		Metric{sec, "terms with df 1 (%)", pct(float64(hapax), float64(nt))},
		Metric{sec, "lists with df > 4096", float64(nlong)},
		Metric{sec, "postings in lists > 4096 (%)", pct(float64(long), float64(total))})
}

// blockMaxMetrics: over the lists of at least two blocks, the df-weighted
// means of p90(block max)/list max and of the block maxima's coefficient of
// variation (population standard deviation / mean), and the share of
// postings those lists hold. Block maxima are the index's (BM25 with its
// parameters), read from the skip tables without decoding.
func blockMaxMetrics(x *index.Index) ([]Metric, error) {
	var wsum, p90sum, cvsum, all float64
	var bms []float64
	for t := 0; t < x.NumTerms(); t++ {
		l, err := x.List(t)
		if err != nil {
			return nil, err
		}
		all += float64(l.DF)
		if l.NBlocks < 2 || !(l.MaxScore > 0) {
			continue
		}
		bms = bms[:0]
		var s, s2 float64
		for b := 0; b < l.NBlocks; b++ {
			v := float64(l.BlockMax(b))
			bms = append(bms, v)
			s += v
			s2 += v * v
		}
		n := float64(len(bms))
		mean := s / n
		sd := math.Sqrt(max(s2/n-mean*mean, 0))
		slices.Sort(bms)
		w := float64(l.DF)
		wsum += w
		p90sum += w * quantile(bms, 0.90) / float64(l.MaxScore)
		cvsum += w * sd / mean
	}
	sec := "block maxima"
	return []Metric{
		{sec, "postings in lists of >= 2 blocks (%)", pct(wsum, all)},
		{sec, "p90 block max / list max (df-weighted)", div(p90sum, wsum)},
		{sec, "CV of block maxima (df-weighted)", div(cvsum, wsum)},
	}, nil
}

// quantile is the nearest-rank quantile q of sorted s (NaN when empty):
// the element at rank ceil(q·n), so q = 1 is the maximum.
func quantile[T uint32 | float64](s []T, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	return float64(report.Percentile(s, q))
}

func pct(a, b float64) float64 { return 100 * div(a, b) }

func div(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
