// Package wah is the experiment behind `qp bench wah`: the posting lists
// of a query log's terms (or of the most frequent terms, in random queries)
// encoded as WAH bitmaps (bitmap/wah, 32-bit words), and per query batch
// the list path on the CPU (decode + merge), OR/AND on the compressed words
// on the CPU, and on the GPU the batch decompression (Algorithm 2) and the
// reduction patterns (COA, ROA, hybrid, ideal hybrid), every GPU result
// checked against the list path. Queries are bucketed by their terms' mean
// density (df/N) to find where the bitmaps on the GPU beat the lists.
//
// Stages: select the queries (FromLog or FromFrequentTerms), encode the
// lists (Encode), bucket by density (Buckets), the CPU paths (RunCPU), the
// GPU patterns and buckets (RunGPU); then CSVRows and Plot.
package wah

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	wahbm "github.com/qpengine/qp/bitmap/wah"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/intersect"
	"github.com/qpengine/qp/report"
)

// Query is a query as columns (indexes into Data's terms) and the mean
// density of its terms.
type Query struct {
	Cols []uint32
	Dens float64 // mean document frequency of its terms / N
}

// Data is the experiment's input: the terms' lists and bitmaps, and the
// queries over them.
type Data struct {
	N        uint32
	Terms    []int // term IDs, by column
	Lists    [][]uint32
	Bitmaps  []wahbm.Bitmap
	Queries  []Query
	Postings int
	Words    int // WAH words of all bitmaps
	col      map[int]uint32
}

// column returns term t's column, adding it.
func (d *Data) column(t int) uint32 {
	if d.col == nil {
		d.col = map[int]uint32{}
	}
	if i, ok := d.col[t]; ok {
		return i
	}
	d.col[t] = uint32(len(d.Terms))
	d.Terms = append(d.Terms, t)
	return d.col[t]
}

// FromLog takes the first limit queries of a log that have between one and
// kern.WAHMaxColumns distinct indexed terms.
func FromLog(x *index.Index, an *analysis.Analyzer, texts []string, limit int) *Data {
	d := &Data{N: uint32(x.NumDocs())}
	for _, text := range texts {
		if len(d.Queries) == limit {
			break
		}
		var cols []uint32
		seen := map[int]bool{}
		for _, tok := range an.Tokens(text) {
			if t, ok := x.Lookup(tok); ok && !seen[t] {
				seen[t] = true
				cols = append(cols, d.column(t))
			}
		}
		if len(cols) > 0 && len(cols) <= kern.WAHMaxColumns {
			d.Queries = append(d.Queries, Query{Cols: cols})
		}
	}
	return d
}

// FromFrequentTerms makes limit queries of 2..6 terms drawn (by a fixed
// LCG, so runs repeat) from the nterms most frequent terms.
func FromFrequentTerms(x *index.Index, nterms, limit int) *Data {
	d := &Data{N: uint32(x.NumDocs())}
	ts := make([]int, x.NumTerms())
	for i := range ts {
		ts[i] = i
	}
	sort.SliceStable(ts, func(a, b int) bool { return x.Record(ts[a]).DF > x.Record(ts[b]).DF })
	ts = ts[:min(len(ts), nterms)]
	seed := uint64(1)
	for len(d.Queries) < limit && len(ts) > 0 {
		seed = seed*6364136223846793005 + 1442695040888963407
		m := 2 + int(seed>>33)%5
		var cols []uint32
		for j := 0; j < m; j++ {
			seed = seed*6364136223846793005 + 1442695040888963407
			cols = append(cols, d.column(ts[int(seed>>33)%len(ts)]))
		}
		slices.Sort(cols)
		d.Queries = append(d.Queries, Query{Cols: slices.Compact(cols)})
	}
	return d
}

// Encode decodes the terms' lists, encodes them as WAH bitmaps, and sets
// each query's density.
func (d *Data) Encode(x *index.Index) error {
	if len(d.Queries) == 0 {
		return fmt.Errorf("bench wah: no query has a term of the index")
	}
	d.Lists = make([][]uint32, len(d.Terms))
	d.Bitmaps = make([]wahbm.Bitmap, len(d.Terms))
	for i, t := range d.Terms {
		l, err := x.List(t)
		if err != nil {
			return err
		}
		if d.Lists[i], _, err = l.Decode(nil, nil); err != nil {
			return err
		}
		if d.Bitmaps[i], err = wahbm.Encode(nil, d.Lists[i], d.N); err != nil {
			return err
		}
		d.Postings += len(d.Lists[i])
		d.Words += len(d.Bitmaps[i].Words)
	}
	for i := range d.Queries {
		s := 0.0
		for _, c := range d.Queries[i].Cols {
			s += float64(len(d.Lists[c]))
		}
		d.Queries[i].Dens = s / float64(len(d.Queries[i].Cols)) / float64(d.N)
	}
	return nil
}

// Bucket is the queries whose mean term density lies in [Lo, 10·Lo), and
// their times (index 0: OR, 1: AND).
type Bucket struct {
	Lo      float64
	Qs      []int
	CPUList [2]time.Duration // decode the lists from the index and merge
	CPUWAH  [2]time.Duration // reduce the compressed words
	GPU     [2]time.Duration // ideal hybrid reduce (+ candidates for OR), decompressed bitmaps resident
	GPUAll  [2]time.Duration // + decompression of the bucket's bitmaps
	OK      bool             // the GPU times are measured (some query ran on the GPU)
}

// Buckets groups the queries by the power of ten of their density,
// ascending.
func (d *Data) Buckets() []*Bucket {
	var buckets []*Bucket
	byLo := map[float64]*Bucket{}
	for i, q := range d.Queries {
		lo := math.Pow(10, math.Floor(math.Log10(max(q.Dens, 1e-9))))
		b := byLo[lo]
		if b == nil {
			b = &Bucket{Lo: lo}
			byLo[lo] = b
			buckets = append(buckets, b)
		}
		b.Qs = append(b.Qs, i)
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].Lo < buckets[j].Lo })
	return buckets
}

var ops = [2]wahbm.Op{wahbm.OpOr, wahbm.OpAnd}

// RunCPU times, per bucket and operation, the list path (lists decoded
// from the index each time, merged: OR a tree of two-way unions, AND SvS)
// and the reduction of the compressed words (spot-checked against the list
// path on each bucket's first query). It returns the list path's results
// per query and operation: the reference of the GPU.
func (d *Data) RunCPU(x *index.Index, buckets []*Bucket) ([][2][]uint32, error) {
	ref := make([][2][]uint32, len(d.Queries))
	for _, b := range buckets {
		for oi, op := range ops {
			start := time.Now()
			for _, qi := range b.Qs {
				r, err := d.listPath(x, qi, op)
				if err != nil {
					return nil, err
				}
				ref[qi][oi] = r
			}
			b.CPUList[oi] = time.Since(start)
			start = time.Now()
			for _, qi := range b.Qs {
				if err := d.wahPath(qi, op, qi == b.Qs[0], ref[qi][oi]); err != nil {
					return nil, err
				}
			}
			b.CPUWAH[oi] = time.Since(start)
		}
	}
	return ref, nil
}

// listPath decodes query qi's lists from the index and merges them.
func (d *Data) listPath(x *index.Index, qi int, op wahbm.Op) ([]uint32, error) {
	ls := make([][]uint32, 0, len(d.Queries[qi].Cols))
	for _, c := range d.Queries[qi].Cols {
		l, err := x.List(d.Terms[c])
		if err != nil {
			return nil, err
		}
		dd, _, err := l.Decode(nil, nil)
		if err != nil {
			return nil, err
		}
		ls = append(ls, dd)
	}
	if op == wahbm.OpOr {
		return unionAll(ls), nil
	}
	return append([]uint32(nil), intersect.SvS(nil, ls)...), nil
}

// wahPath reduces query qi's bitmaps; check compares the result with want.
func (d *Data) wahPath(qi int, op wahbm.Op, check bool, want []uint32) error {
	in := make([]wahbm.Bitmap, len(d.Queries[qi].Cols))
	for j, c := range d.Queries[qi].Cols {
		in[j] = d.Bitmaps[c]
	}
	r, err := wahbm.Reduce(op, in...)
	if err != nil || !check {
		return err
	}
	got, err := r.DecodeDocs(nil)
	if err != nil {
		return err
	}
	if !slices.Equal(got, want) && len(got)+len(want) > 0 {
		return fmt.Errorf("bench wah: CPU WAH %v of query %d differs from the list path", op, qi)
	}
	return nil
}

// RunGPU times the decompression and every pattern over all queries, then
// each bucket's ideal hybrid (runPatterns, runBucket), checking every
// result against ref. g carries the settings (Reps, MaxCand, ROAN).
func (d *Data) RunGPU(buckets []*Bucket, ref [][2][]uint32, g *GPUResult) error {
	if err := runPatterns(d.Bitmaps, d.Queries, ref, g); err != nil {
		return err
	}
	for _, b := range buckets {
		if err := runBucket(d.Bitmaps, d.Queries, b.Qs, ref, g, &b.GPU, &b.GPUAll); err != nil {
			return err
		}
		b.OK = g.GPUQueries(b.Qs) > 0
	}
	return nil
}

// GPUQueries is how many of qs ran on the GPU (not in g.Skip).
func (g *GPUResult) GPUQueries(qs []int) int {
	n := len(qs)
	for _, qi := range qs {
		if g.Skip[qi] {
			n--
		}
	}
	return n
}

// PerQuery is microseconds per query.
func PerQuery(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(max(n, 1)) }

// BucketTimes are a bucket's us/query: list OR, wah OR, gpu OR, gpu+dec
// OR, then the same for AND (the GPU ones meaningful when b.OK).
func BucketTimes(b *Bucket, g *GPUResult) [8]float64 {
	n, gn := len(b.Qs), g.GPUQueries(b.Qs)
	return [8]float64{PerQuery(b.CPUList[0], n), PerQuery(b.CPUWAH[0], n), PerQuery(b.GPU[0], gn), PerQuery(b.GPUAll[0], gn),
		PerQuery(b.CPUList[1], n), PerQuery(b.CPUWAH[1], n), PerQuery(b.GPU[1], gn), PerQuery(b.GPUAll[1], gn)}
}

// CSVHeader is the header of bench wah's CSV (one row per density bucket).
var CSVHeader = []string{"density_lo", "queries", "cpu_list_or_us", "cpu_wah_or_us", "gpu_or_us", "gpu_dec_or_us",
	"cpu_list_and_us", "cpu_wah_and_us", "gpu_and_us", "gpu_dec_and_us"}

// CSVRows gives a row per bucket (GPU cells empty where not measured).
func CSVRows(buckets []*Bucket, g *GPUResult) [][]string {
	var rows [][]string
	for _, b := range buckets {
		row := []string{fmt.Sprintf("%g", b.Lo), strconv.Itoa(len(b.Qs))}
		for i, f := range BucketTimes(b, g) {
			if !b.OK && (i == 2 || i == 3 || i == 6 || i == 7) {
				row = append(row, "")
				continue
			}
			row = append(row, fmt.Sprintf("%.3f", f))
		}
		rows = append(rows, row)
	}
	return rows
}

// Plot draws OR time per query against the bucket's density, log-log: the
// CPU list and WAH paths, and with gpu the GPU resident and +decompression.
func Plot(buckets []*Bucket, g *GPUResult, gpu bool) *report.Plot {
	p := &report.Plot{Title: "qp bench wah: OR time per query by term density", XLabel: "mean df/N of the query terms (bucket start)",
		YLabel: "us per query", LogX: true, LogY: true}
	names := []string{"CPU list OR", "CPU WAH OR", "GPU OR (resident)", "GPU OR (+decompress)"}
	for si := range names {
		if si >= 2 && !gpu {
			break
		}
		s := report.Series{Name: names[si]}
		for _, b := range buckets {
			n := len(b.Qs)
			if si >= 2 {
				n = g.GPUQueries(b.Qs)
			}
			t := []time.Duration{b.CPUList[0], b.CPUWAH[0], b.GPU[0], b.GPUAll[0]}[si]
			s.X = append(s.X, b.Lo)
			s.Y = append(s.Y, max(PerQuery(t, n), 0.01))
		}
		p.Series = append(p.Series, s)
	}
	return p
}
