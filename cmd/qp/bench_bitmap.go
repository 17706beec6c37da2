package main

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/report"
	"github.com/qpengine/qp/topk"
)

func init() {
	registerBench("bitmap", "[INDEX [QUERIES]]", `AND and OR time of list-based vs roaring-bitmap evaluation
across list densities 2^-12..2^-1 (synthetic) and on an
index's own bitmap lists; crossover densities, CSV, SVG`, benchBitmap)
}

// bitmapRow is one measurement: the mean time per query of the list-based
// and the bitmap-based evaluation of the same queries.
type bitmapRow struct {
	source  string // "synthetic" or "index"
	mode    engine.Mode
	density float64 // of the query's terms (synthetic) or its densest bitmap term (index)
	queries int
	list    time.Duration // per query, bitmaps off, block-coded lists
	bitmap  time.Duration // per query, roaring path
	listB   int           // docID bytes of the lists: blocks
	bitmapB int           // and bitmaps
}

func benchBitmap(c command, args []string) error {
	c.name = "bench bitmap"
	c.args = "[INDEX [QUERIES]] [flags]"
	fs := newFlags(c, `Measures where roaring bitmaps beat block-coded lists (docs/BITMAPS.md).

Synthetic: for each density p = 2^-12..2^-1, --terms random lists of density
p over --docs documents are written twice, block-coded (--codec) and as
bitmaps; the query of all of them runs as AND and as OR (top --k), list-based
(engine defaults, bitmaps off) and bitmap-based (roaring path for every
term), each for at least --min-time; results are checked to be identical.
The crossover is the smallest density from which the bitmap path wins at
every larger density (the engine's Options.AndBitmapDensity /
OrBitmapDensity).

INDEX: the queries of QUERIES (qid:query or qid<TAB>query lines), or else
pairs of the index's densest terms, run on the index with the roaring path
off and on, grouped by the density of the query's densest bitmap list. The
index must hold bitmap lists (qp index --bitmaps auto|always).`)
	docs := fs.Int("docs", 1<<20, "documents of the synthetic collections")
	nterms := fs.Int("terms", 2, "terms per synthetic query")
	k := fs.Int("k", 10, "results per query")
	codecName := fs.String("codec", "bp128", "docID codec of the synthetic block-coded lists")
	minTime := fs.Duration("min-time", 200*time.Millisecond, "time per measurement")
	limit := fs.Int("limit", 1000, "INDEX: queries to run")
	csvPath := fs.String("csv", "bitmap.csv", "CSV output")
	svgPath := fs.String("svg", "bitmap.svg", "SVG plot output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 2 || *docs < 2 || *nterms < 1 || *k < 1 || *k > topk.MaxK {
		fs.Usage()
		return errUsage
	}
	codec, err := compress.ByName(*codecName)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "qp-bench-bitmap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var rows []bitmapRow
	fmt.Printf("synthetic: %d documents, %d terms per query, k=%d, %s lists; per query:\n", *docs, *nterms, *k, codec.Name())
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "density\tmode\tlist\tbitmap\tbitmap/list\tblock bytes\tbitmap bytes\t")
	for e := 12; e >= 1; e-- {
		p := math.Ldexp(1, -e)
		rs, err := benchBitmapSynthetic(dir, *docs, *nterms, p, codec, *k, *minTime)
		if err != nil {
			return err
		}
		for _, r := range rs {
			fmt.Fprintf(tw, "2^-%d\t%v\t%v\t%v\t%.2f\t%d\t%d\t\n", e, r.mode, r.list, r.bitmap,
				float64(r.bitmap)/float64(r.list), r.listB, r.bitmapB)
		}
		tw.Flush()
		rows = append(rows, rs...)
	}
	for _, m := range []engine.Mode{engine.And, engine.Or} {
		if lo, hi, ok := bitmapCrossover(rows, "synthetic", m); ok {
			fmt.Printf("crossover %v: bitmaps win from density 2^%.0f to 2^%.0f (engine.Options %sBitmapDensity %g, max %g)\n",
				m, math.Log2(lo), math.Log2(hi), map[engine.Mode]string{engine.And: "And", engine.Or: "Or"}[m], lo, 2*hi)
		} else {
			fmt.Printf("crossover %v: bitmaps never win\n", m)
		}
	}
	if len(pos) >= 1 {
		qpath := ""
		if len(pos) == 2 {
			qpath = pos[1]
		}
		rs, err := benchBitmapIndex(pos[0], qpath, *limit, *k, *minTime)
		if err != nil {
			return err
		}
		rows = append(rows, rs...)
	}
	if err := writeBitmapCSV(*csvPath, rows); err != nil {
		return err
	}
	svg, err := bitmapSVG(rows)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*svgPath, svg, 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s and %s\n", *csvPath, *svgPath)
	return nil
}

// benchBitmapSynthetic measures AND and OR over m random lists of density p.
func benchBitmapSynthetic(dir string, n, m int, p float64, codec compress.Codec, k int, minTime time.Duration) ([]bitmapRow, error) {
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
			return nil, err
		}
	}
	var blockB, bitmapB int
	for t := range terms {
		l0, _ := xs[0].List(t)
		l1, _ := xs[1].List(t)
		blockB += len(l0.DocBytes())
		bitmapB += len(l1.DocBytes())
	}
	var out []bitmapRow
	for _, mode := range []engine.Mode{engine.And, engine.Or} {
		q := engine.Query{ID: "synthetic", Terms: terms, Mode: mode, K: k}
		lt, lr, err := timeQueries(xs[0], []engine.Query{q}, engine.Options{AndBitmapDensity: engine.NoBitmaps, OrBitmapDensity: engine.NoBitmaps}, minTime)
		if err != nil {
			return nil, err
		}
		bt, br, err := timeQueries(xs[1], []engine.Query{q}, engine.Options{AndBitmapDensity: 1e-12, OrBitmapDensity: 1e-12, AndBitmapMaxDensity: engine.NoBitmaps}, minTime)
		if err != nil {
			return nil, err
		}
		if err := sameTopK(lr, br); err != nil {
			return nil, fmt.Errorf("density %g %v: %w", p, mode, err)
		}
		out = append(out, bitmapRow{source: "synthetic", mode: mode, density: p, queries: 1, list: lt, bitmap: bt, listB: blockB, bitmapB: bitmapB})
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

// benchBitmapIndex times the index's queries with the roaring path off and
// on, grouped by the density (power of two) of each query's densest bitmap
// list.
func benchBitmapIndex(path, qpath string, limit, k int, minTime time.Duration) ([]bitmapRow, error) {
	x, err := index.Open(path)
	if err != nil {
		return nil, err
	}
	defer x.Close()
	n := float64(x.NumDocs())
	fmt.Printf("\nindex %s: %d documents, %d terms, %d bitmap lists (--bitmaps %s)\n", path, x.NumDocs(), x.NumTerms(), x.Meta.BitmapLists, x.Meta.Bitmaps)
	if x.Meta.BitmapLists == 0 {
		fmt.Println("no bitmap lists: nothing to compare (index it with --bitmaps auto or always)")
		return nil, nil
	}
	var texts [][]string
	if qpath != "" {
		qs, err := readQueryFile(qpath, limit)
		if err != nil {
			return nil, err
		}
		an, err := x.Analyzer()
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			if ts := an.Tokens(q.Text); len(ts) > 0 {
				texts = append(texts, ts)
			}
		}
	} else {
		ids := make([]int, x.NumTerms())
		for i := range ids {
			ids[i] = i
		}
		sort.Slice(ids, func(a, b int) bool { return x.Record(ids[a]).DF > x.Record(ids[b]).DF })
		ids = ids[:min(len(ids), 33)]
		for i := 0; i+1 < len(ids); i++ {
			texts = append(texts, []string{x.Term(ids[i]), x.Term(ids[i+1])})
		}
	}
	// Group the queries by their densest bitmap list.
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
	if len(groups) == 0 {
		fmt.Println("no query has a bitmap list")
		return nil, nil
	}
	var es []int
	for e := range groups {
		es = append(es, e)
	}
	sort.Ints(es)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "densest bitmap\tqueries\tmode\tlist\tbitmap\tbitmap/list\t")
	var out []bitmapRow
	for _, e := range es {
		for _, mode := range []engine.Mode{engine.And, engine.Or} {
			var qs []engine.Query
			for i, ts := range groups[e] {
				qs = append(qs, engine.Query{ID: fmt.Sprint(i), Terms: ts, Mode: mode, K: k})
			}
			lt, lr, err := timeQueries(x, qs, engine.Options{AndBitmapDensity: engine.NoBitmaps, OrBitmapDensity: engine.NoBitmaps}, minTime)
			if err != nil {
				return nil, err
			}
			bt, br, err := timeQueries(x, qs, engine.Options{AndBitmapDensity: 1e-12, OrBitmapDensity: 1e-12, AndBitmapMaxDensity: engine.NoBitmaps}, minTime)
			if err != nil {
				return nil, err
			}
			if err := sameTopK(lr, br); err != nil {
				return nil, err
			}
			out = append(out, bitmapRow{source: "index", mode: mode, density: math.Ldexp(1, e), queries: len(qs), list: lt, bitmap: bt})
			fmt.Fprintf(tw, "2^%d\t%d\t%v\t%v\t%v\t%.2f\t\n", e, len(qs), mode, lt, bt, float64(bt)/float64(lt))
		}
	}
	tw.Flush()
	fmt.Println("(list: cursors over the same lists, bitmap lists decoded block by block; bitmap: roaring path)")
	return out, nil
}

// bitmapCrossover is the window of densities [lo, hi] where the bitmap path
// is faster: the longest run of consecutive measured densities where it won.
func bitmapCrossover(rows []bitmapRow, source string, m engine.Mode) (lo, hi float64, ok bool) {
	var rs []bitmapRow
	for _, r := range rows {
		if r.source == source && r.mode == m {
			rs = append(rs, r)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].density < rs[j].density })
	best := 0
	for i := 0; i < len(rs); {
		if rs[i].bitmap >= rs[i].list {
			i++
			continue
		}
		j := i
		for j+1 < len(rs) && rs[j+1].bitmap < rs[j+1].list {
			j++
		}
		if j-i+1 > best {
			best, lo, hi, ok = j-i+1, rs[i].density, rs[j].density, true
		}
		i = j + 1
	}
	return lo, hi, ok
}

func writeBitmapCSV(path string, rows []bitmapRow) error {
	header := []string{"source", "mode", "density", "queries", "list_ns", "bitmap_ns", "block_bytes", "bitmap_bytes"}
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = []string{r.source, fmt.Sprint(r.mode), fmt.Sprintf("%g", r.density), fmt.Sprint(r.queries),
			fmt.Sprint(r.list.Nanoseconds()), fmt.Sprint(r.bitmap.Nanoseconds()), fmt.Sprint(r.listB), fmt.Sprint(r.bitmapB)}
	}
	return report.WriteCSVFile(path, header, out)
}

// bitmapSVG plots time per query against density on log-log axes (one
// line per source, mode and path; list-based dashed) with report.Plot.
func bitmapSVG(rows []bitmapRow) ([]byte, error) {
	p := report.Plot{Title: "qp bench bitmap: time per query, list-based vs roaring bitmaps",
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
		if r.mode == engine.Or {
			c = 1
		}
		if r.source == "index" {
			c += 2
		}
		add(fmt.Sprintf("%s %v list", r.source, r.mode), true, c, r.density, r.list)
		add(fmt.Sprintf("%s %v bitmap", r.source, r.mode), false, c, r.density, r.bitmap)
	}
	return p.SVG()
}
