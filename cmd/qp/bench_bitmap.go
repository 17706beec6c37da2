package main

import (
	"fmt"
	"math"
	"os"
	"text/tabwriter"
	"time"

	benchbm "github.com/qpengine/qp/bench/bitmap"
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
	if err := guardOutputs(pos, *csvPath); err != nil {
		return err
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
	var rows []benchbm.Row
	fmt.Printf("synthetic: %d documents, %d terms per query, k=%d, %s lists; per query:\n", *docs, *nterms, *k, codec.Name())
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "density\tmode\tlist\tbitmap\tbitmap/list\tblock bytes\tbitmap bytes\t")
	for e := 12; e >= 1; e-- {
		p := math.Ldexp(1, -e)
		rs, err := benchbm.Synthetic(dir, *docs, *nterms, p, codec, *k, *minTime)
		if err != nil {
			return err
		}
		for _, r := range rs {
			fmt.Fprintf(tw, "2^-%d\t%v\t%v\t%v\t%.2f\t%d\t%d\t\n", e, r.Mode, r.List, r.Bitmap,
				float64(r.Bitmap)/float64(r.List), r.ListB, r.BitmapB)
		}
		tw.Flush()
		rows = append(rows, rs...)
	}
	for _, m := range []engine.Mode{engine.And, engine.Or} {
		if lo, hi, ok := benchbm.Crossover(rows, "synthetic", m); ok {
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
	if err := report.WriteCSVFile(*csvPath, benchbm.CSVHeader, benchbm.CSVRows(rows)); err != nil {
		return err
	}
	svg, err := benchbm.Plot(rows).SVG()
	if err != nil {
		return err
	}
	if err := os.WriteFile(*svgPath, svg, 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s and %s\n", *csvPath, *svgPath)
	return nil
}

// benchBitmapIndex prints the index part of bench bitmap: the index's
// queries (or pairs of its densest terms) with the roaring path off and on,
// grouped by the density of each query's densest bitmap list.
func benchBitmapIndex(path, qpath string, limit, k int, minTime time.Duration) ([]benchbm.Row, error) {
	x, err := index.Open(path)
	if err != nil {
		return nil, err
	}
	defer x.Close()
	fmt.Printf("\nindex %s: %d documents, %d terms, %d bitmap lists (--bitmaps %s)\n", path, x.NumDocs(), x.NumTerms(), x.Meta.BitmapLists, x.Meta.Bitmaps)
	if x.Meta.BitmapLists == 0 {
		fmt.Println("no bitmap lists: nothing to compare (index it with --bitmaps auto or always)")
		return nil, nil
	}
	texts := benchbm.DensestPairs(x, 33)
	if qpath != "" {
		qs, err := readQueryFile(qpath, limit)
		if err != nil {
			return nil, err
		}
		an, err := x.Analyzer()
		if err != nil {
			return nil, err
		}
		texts = nil
		for _, q := range qs {
			if ts := an.Tokens(q.Text); len(ts) > 0 {
				texts = append(texts, ts)
			}
		}
	}
	rows, err := benchbm.RunIndex(x, texts, k, minTime)
	if err != nil || len(rows) == 0 {
		if err == nil {
			fmt.Println("no query has a bitmap list")
		}
		return nil, err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "densest bitmap\tqueries\tmode\tlist\tbitmap\tbitmap/list\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "2^%.0f\t%d\t%v\t%v\t%v\t%.2f\t\n", math.Log2(r.Density), r.Queries, r.Mode, r.List, r.Bitmap, float64(r.Bitmap)/float64(r.List))
	}
	tw.Flush()
	fmt.Println("(list: cursors over the same lists, bitmap lists decoded block by block; bitmap: roaring path)")
	return rows, nil
}
