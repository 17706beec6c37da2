// Package bitmap is the experiment behind `qp bench bitmap`: where roaring
// bitmaps beat block-coded lists (docs/BITMAPS.md). Synthetic: random lists
// of density 2^-12..2^-1 written block-coded and as bitmaps, one query of
// all of them as AND and OR, list path against roaring path (Synthetic).
// Index: an index's queries grouped by the density of their densest bitmap
// list, the roaring path off and on (RunIndex). Every pair of results is
// checked identical. Crossover gives the densities where bitmaps win; CSV
// and Plot the outputs.
package bitmap

import (
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/report"
	"github.com/qpengine/qp/topk"
)

// Row is one measurement: the mean time per query of the list-based and
// the bitmap-based evaluation of the same queries.
type Row struct {
	Source  string // "synthetic" or "index"
	Mode    engine.Mode
	Density float64 // of the query's terms (synthetic) or its densest bitmap term (index)
	Queries int
	List    time.Duration // per query, bitmaps off, block-coded lists
	Bitmap  time.Duration // per query, roaring path
	ListB   int           // docID bytes of the lists: blocks
	BitmapB int           // and bitmaps
}

// listOpt and bitmapOpt are the engine options of the two paths.
var (
	listOpt   = engine.Options{AndBitmapDensity: engine.NoBitmaps, OrBitmapDensity: engine.NoBitmaps}
	bitmapOpt = engine.Options{AndBitmapDensity: 1e-12, OrBitmapDensity: 1e-12, AndBitmapMaxDensity: engine.NoBitmaps}
)

// RunIndex times the queries (analyzed terms) on x with the roaring path
// off and on, grouped by the density (power of two) of each query's
// densest bitmap list; queries without a bitmap list are left out. Rows
// come by ascending density, AND then OR.
func RunIndex(x *index.Index, texts [][]string, k int, minTime time.Duration) ([]Row, error) {
	n := float64(x.NumDocs())
	groups := map[int][][]string{}
	for _, ts := range texts {
		best := 0.0
		for _, t := range ts {
			if id, ok := x.Lookup(t); ok && x.Record(id).Bitmap() {
				best = max(best, float64(x.Record(id).DF)/n)
			}
		}
		if best > 0 {
			e := int(math.Floor(math.Log2(best)))
			groups[e] = append(groups[e], ts)
		}
	}
	var es []int
	for e := range groups {
		es = append(es, e)
	}
	sort.Ints(es)
	var out []Row
	for _, e := range es {
		for _, mode := range []engine.Mode{engine.And, engine.Or} {
			var qs []engine.Query
			for i, ts := range groups[e] {
				qs = append(qs, engine.Query{ID: fmt.Sprint(i), Terms: ts, Mode: mode, K: k})
			}
			lt, lr, err := timeQueries(x, qs, listOpt, minTime)
			if err != nil {
				return nil, err
			}
			bt, br, err := timeQueries(x, qs, bitmapOpt, minTime)
			if err != nil {
				return nil, err
			}
			if err := sameTopK(lr, br); err != nil {
				return nil, err
			}
			out = append(out, Row{Source: "index", Mode: mode, Density: math.Ldexp(1, e), Queries: len(qs), List: lt, Bitmap: bt})
		}
	}
	return out, nil
}

// DensestPairs are queries of two terms: each of the n densest terms of x
// with the next one.
func DensestPairs(x *index.Index, n int) [][]string {
	ids := make([]int, x.NumTerms())
	for i := range ids {
		ids[i] = i
	}
	sort.Slice(ids, func(a, b int) bool { return x.Record(ids[a]).DF > x.Record(ids[b]).DF })
	ids = ids[:min(len(ids), n)]
	var texts [][]string
	for i := 0; i+1 < len(ids); i++ {
		texts = append(texts, []string{x.Term(ids[i]), x.Term(ids[i+1])})
	}
	return texts
}

// CSVHeader is the header of bench bitmap's CSV.
var CSVHeader = []string{"source", "mode", "density", "queries", "list_ns", "bitmap_ns", "block_bytes", "bitmap_bytes"}

// CSVRows gives the rows as CSV records.
func CSVRows(rows []Row) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = []string{r.Source, r.Mode.String(), fmt.Sprintf("%g", r.Density), strconv.Itoa(r.Queries),
			fmt.Sprint(r.List.Nanoseconds()), fmt.Sprint(r.Bitmap.Nanoseconds()), strconv.Itoa(r.ListB), strconv.Itoa(r.BitmapB)}
	}
	return out
}

// Synthetic measures AND and OR over m random lists of density p.
func Synthetic(dir string, n, m int, p float64, codec compress.Codec, k int, minTime time.Duration) ([]Row, error) {
	rng := rand.New(rand.NewSource(int64(p * 1e9)))
	lens := make([]uint32, n)
	for i := range lens {
		lens[i] = uint32(50 + rng.Intn(200))
	}
	terms := make([]string, m)
	docs := make([][]uint32, m)
	freqs := make([][]uint32, m)
	for t := range terms {
		terms[t] = fmt.Sprintf("t%d", t)
		for d := 0; d < n; d++ {
			if rng.Float64() < p {
				docs[t] = append(docs[t], uint32(d))
				freqs[t] = append(freqs[t], uint32(1+rng.Intn(4)))
			}
		}
		if len(docs[t]) == 0 {
			docs[t], freqs[t] = []uint32{uint32(rng.Intn(n))}, []uint32{1}
		}
	}
	var xs [2]*index.Index
	for i, mode := range []index.BitmapMode{index.BitmapsOff, index.BitmapsAlways} {
		path := filepath.Join(dir, fmt.Sprintf("x%d.qp", i))
		w, err := index.NewWriter(path, index.WriterOptions{DocCodec: codec, DocLens: lens, Bitmaps: mode})
		if err != nil {
			return nil, err
		}
		for t := range terms {
			if err := w.AddList(terms[t], docs[t], freqs[t]); err != nil {
				w.Abort()
				return nil, err
			}
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		if xs[i], err = index.Open(path); err != nil {
			if i == 1 {
				xs[0].Close()
			}
			return nil, err
		}
	}
	defer xs[0].Close()
	defer xs[1].Close()
	var blockB, bitmapB int
	for t := range terms {
		l0, _ := xs[0].List(t)
		l1, _ := xs[1].List(t)
		blockB += len(l0.DocBytes())
		bitmapB += len(l1.DocBytes())
	}
	var out []Row
	for _, mode := range []engine.Mode{engine.And, engine.Or} {
		q := engine.Query{ID: "synthetic", Terms: terms, Mode: mode, K: k}
		lt, lr, err := timeQueries(xs[0], []engine.Query{q}, listOpt, minTime)
		if err != nil {
			return nil, err
		}
		bt, br, err := timeQueries(xs[1], []engine.Query{q}, bitmapOpt, minTime)
		if err != nil {
			return nil, err
		}
		if err := sameTopK(lr, br); err != nil {
			return nil, fmt.Errorf("density %g %v: %w", p, mode, err)
		}
		out = append(out, Row{Source: "synthetic", Mode: mode, Density: p, Queries: 1, List: lt, Bitmap: bt, ListB: blockB, BitmapB: bitmapB})
	}
	return out, nil
}

// timeQueries runs qs on one engine until minTime has passed (after one
// warm-up pass) and returns the mean time per query and the results of the
// last pass.
func timeQueries(x *index.Index, qs []engine.Query, opt engine.Options, minTime time.Duration) (time.Duration, [][]topk.Result, error) {
	e := engine.New(x)
	res := make([][]topk.Result, len(qs))
	run := func() error {
		for i, q := range qs {
			r, _, err := e.Search(q, opt)
			if err != nil {
				return err
			}
			res[i] = append(res[i][:0], r...)
		}
		return nil
	}
	if err := run(); err != nil {
		return 0, nil, err
	}
	start := time.Now()
	passes := 0
	for passes == 0 || time.Since(start) < minTime {
		if err := run(); err != nil {
			return 0, nil, err
		}
		passes++
	}
	return time.Since(start) / time.Duration(passes*len(qs)), res, nil
}

func sameTopK(a, b [][]topk.Result) error {
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return fmt.Errorf("query %d: %d vs %d results", i, len(a[i]), len(b[i]))
		}
		for j := range a[i] {
			if a[i][j].Doc != b[i][j].Doc || math.Float32bits(a[i][j].Score) != math.Float32bits(b[i][j].Score) {
				return fmt.Errorf("query %d rank %d: list path %+v, bitmap path %+v", i, j, a[i][j], b[i][j])
			}
		}
	}
	return nil
}

// Crossover is the window of densities [lo, hi] where the bitmap path
// is faster: the longest run of consecutive measured densities where it won.
func Crossover(rows []Row, source string, m engine.Mode) (lo, hi float64, ok bool) {
	var rs []Row
	for _, r := range rows {
		if r.Source == source && r.Mode == m {
			rs = append(rs, r)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Density < rs[j].Density })
	best := 0
	for i := 0; i < len(rs); {
		if rs[i].Bitmap >= rs[i].List {
			i++
			continue
		}
		j := i
		for j+1 < len(rs) && rs[j+1].Bitmap < rs[j+1].List {
			j++
		}
		if j-i+1 > best {
			best, lo, hi, ok = j-i+1, rs[i].Density, rs[j].Density, true
		}
		i = j + 1
	}
	return lo, hi, ok
}

// Plot plots time per query against density on log-log axes (one
// line per source, mode and path; list-based dashed) with report.Plot.
func Plot(rows []Row) *report.Plot {
	p := &report.Plot{Title: "qp bench bitmap: time per query, list-based vs roaring bitmaps",
		XLabel: "list density df/N", YLabel: "µs per query", LogX: true, LogY: true}
	idx := map[string]int{}
	add := func(name string, dashed bool, color int, x float64, y time.Duration) {
		i, ok := idx[name]
		if !ok {
			i = len(p.Series)
			idx[name] = i
			p.Series = append(p.Series, report.Series{Name: name, Dashed: dashed, Color: report.Color(color)})
		}
		p.Series[i].X = append(p.Series[i].X, x)
		p.Series[i].Y = append(p.Series[i].Y, float64(y.Nanoseconds())/1e3)
	}
	for _, r := range rows {
		c := 0
		if r.Mode == engine.Or {
			c = 1
		}
		if r.Source == "index" {
			c += 2
		}
		add(fmt.Sprintf("%s %v list", r.Source, r.Mode), true, c, r.Density, r.List)
		add(fmt.Sprintf("%s %v bitmap", r.Source, r.Mode), false, c, r.Density, r.Bitmap)
	}
	return p
}
