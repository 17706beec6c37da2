package main

import (
	"fmt"
	"os"
	"time"

	benchwah "github.com/qpengine/qp/bench/wah"
	"github.com/qpengine/qp/bitmap/wah"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/report"
)

func init() {
	registerBench("wah", "INDEX [QUERIES]", `WAH bitmaps of the query terms' lists on the GPU:
decompression words/s, OR/AND time of the COA, ROA,
hybrid and ideal-hybrid reductions vs the CPU list path
(decode + merge), and the density crossover; CSV + SVG`, benchWAH)
}

// benchWAH parses bench wah's flags, runs the stages of bench/wah (queries,
// encoding, density buckets, CPU paths, GPU patterns and buckets) and
// prints their tables, CSV and plot.
func benchWAH(c command, args []string) error {
	c.name = "bench wah"
	c.args = "INDEX [QUERIES] [flags]"
	fs := newFlags(c, `Encodes the posting lists of the query terms (QUERIES: a query log; without
it, the --terms most frequent terms, in random queries of 2..6 terms) as WAH
bitmaps (32-bit words, bitmap/wah) and measures, per query batch:
  cpu-list   decode the lists and merge (OR: union, AND: SvS), one core
  cpu-wah    OR/AND on the compressed words (bitmap/wah), one core
  gpu        Algorithm 2 decompression of every term's bitmap (words/s), and
             each reduction pattern (COA, ROA, hybrid, ideal hybrid) for OR
             and AND, plus the candidate docIDs of OR (compaction with a scan)
Queries are bucketed by their terms' mean density (df/N) to find where the
bitmaps on the GPU beat the list path. GPU results are checked equal to the
CPU's. Without a usable GPU only the CPU part runs.`)
	qf := addQueryFlags(fs)
	limit := fs.Int("limit", 1000, "queries to use (at most 65535)")
	nterms := fs.Int("terms", 200, "without QUERIES: the most frequent terms to use")
	csvPath := fs.String("csv", "wah.csv", "CSV output (per density bucket)")
	svgPath := fs.String("svg", "wah.svg", "SVG plot output")
	reps := fs.Int("reps", 5, "GPU repetitions per measurement (the best is kept)")
	maxCand := fs.Int("max-candidates", kern.WAHMaxCandidates, "most candidate docIDs (sum of the queries' bounds) per GPU plan; larger batches are split, a query above it runs alone")
	roaN := fs.Int("roa-queries", 250, "ROA (one CTA per row, the slowest pattern) is timed on the first this many queries only (0: all)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 || *limit < 1 || *limit > 65535 || *maxCand < 1 || *maxCand > kern.WAHMaxCandidates || *roaN < 0 {
		fs.Usage()
		return errUsage
	}
	if err := guardOutputs(pos, *csvPath); err != nil {
		return err
	}
	*qf.device = "cpu"
	e, _, _, err := qf.openEngine(pos[0])
	if err != nil {
		return err
	}
	x, an := e.Index(), e.Analyzer()
	var d *benchwah.Data
	if len(pos) == 2 {
		fq, err := readQueryFile(pos[1], 0)
		if err != nil {
			return err
		}
		texts := make([]string, len(fq))
		for i, q := range fq {
			texts[i] = q.Text
		}
		d = benchwah.FromLog(x, an, texts, *limit)
	} else {
		d = benchwah.FromFrequentTerms(x, *nterms, *limit)
	}
	if err := d.Encode(x); err != nil {
		return err
	}
	D := wah.Groups(d.N)
	fmt.Printf("index %s: %d docs; %d queries, %d distinct terms, %d postings\n", pos[0], d.N, len(d.Queries), len(d.Terms), d.Postings)
	fmt.Printf("WAH: %d words (%.2f bits/posting; uncompressed %d words per bitmap)\n\n", d.Words,
		32*float64(d.Words)/float64(max(d.Postings, 1)), D)
	buckets := d.Buckets()
	t0 := time.Now()
	ref, err := d.RunCPU(x, buckets)
	if err != nil {
		return err
	}
	tCPU := time.Since(t0)
	fmt.Fprintf(os.Stderr, "bench wah: CPU list + WAH paths done in %.1f s\n", tCPU.Seconds())
	gpuOK, why := cuda.Available()
	g := &benchwah.GPUResult{Reps: *reps, MaxCand: *maxCand, ROAN: *roaN}
	var tGPU time.Duration
	if gpuOK {
		t0 = time.Now()
		if err := d.RunGPU(buckets, ref, g); err != nil {
			return err
		}
		tGPU = time.Since(t0)
		printWAHPatterns(d, g, D)
	} else {
		fmt.Printf("GPU: absent (%s); CPU part only\n\n", why)
	}
	printWAHBuckets(buckets, g)
	if err := report.WriteCSVFile(*csvPath, benchwah.CSVHeader, benchwah.CSVRows(buckets, g)); err != nil {
		return err
	}
	svg, err := benchwah.Plot(buckets, g, gpuOK).SVG()
	if err != nil {
		return err
	}
	if err := os.WriteFile(*svgPath, svg, 0o644); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s and %s\n", *csvPath, *svgPath)
	fmt.Printf("bench time: cpu %.1f s, gpu %.1f s\n", tCPU.Seconds(), tGPU.Seconds())
	return nil
}

// printWAHPatterns prints the GPU decompression and reduction patterns.
func printWAHPatterns(d *benchwah.Data, g *benchwah.GPUResult, D int) {
	fmt.Printf("GPU decompression (Algorithm 2, %d bitmaps, one batch): %.3f ms, %.2f G compressed words/s, %.2f G groups/s\n",
		len(d.Bitmaps), ms(g.Decomp), float64(d.Words)/g.Decomp.Seconds()/1e9, float64(len(d.Bitmaps)*D)/g.Decomp.Seconds()/1e9)
	nRun := len(d.Queries) - len(g.Skipped)
	fmt.Printf("\nGPU reductions of %d queries in %d plans of at most %d candidates (decompressed bitmaps resident; OR includes candidate docIDs; times summed over the plans):\n",
		nRun, g.Plans, g.MaxCand)
	fmt.Printf("%-14s %8s %12s %12s %14s %14s\n", "pattern", "queries", "OR ms", "AND ms", "OR us/query", "AND us/query")
	for i, p := range kern.WAHPatterns {
		n := nRun
		if p == kern.WAHROA {
			n = g.NROA
		}
		fmt.Printf("%-14s %8d %12.3f %12.3f %14.2f %14.2f\n", p, n, ms(g.Pat[i][0]), ms(g.Pat[i][1]),
			benchwah.PerQuery(g.Pat[i][0], n), benchwah.PerQuery(g.Pat[i][1], n))
	}
	if g.NROA < nRun {
		fmt.Printf("roa: timed on the first %d queries only (--roa-queries; one CTA per row is the slowest pattern): compare its us/query, not its ms\n", g.NROA)
	}
	if g.Alone > 0 {
		fmt.Printf("%d queries have a candidate bound above --max-candidates %d and ran in plans of their own\n", g.Alone, g.MaxCand)
	}
	if len(g.Skipped) > 0 {
		fmt.Printf("%d queries skipped on the GPU (candidate bound above %d, the most one plan holds): %v\n", len(g.Skipped), kern.WAHMaxCandidates, g.Skipped)
	}
	fmt.Println()
}

// printWAHBuckets prints the per-density table and each bucket's winner.
func printWAHBuckets(buckets []*benchwah.Bucket, g *benchwah.GPUResult) {
	fmt.Printf("Per density bucket (mean df/N of the query's terms), us/query; gpu = ideal hybrid, gpu+dec adds decompression of the bucket's bitmaps:\n")
	fmt.Printf("%-10s %7s %10s %10s %10s %10s %10s %10s %10s %10s  %s\n", "density", "queries", "list OR", "wah OR", "gpu OR",
		"gpu+dec OR", "list AND", "wah AND", "gpu AND", "gpu+dec AND", "winner OR")
	for _, b := range buckets {
		v := benchwah.BucketTimes(b, g)
		ok := b.OK
		win := "cpu list"
		if ok && v[3] < v[0] {
			win = "gpu bitmaps (incl. decompression)"
		} else if ok && v[2] < v[0] {
			win = "gpu bitmaps (resident)"
		}
		if !ok {
			win = "-"
		}
		fmt.Printf("%-10.0e %7d %10.1f %10.1f %10s %10s %10.1f %10.1f %10s %10s  %s\n", b.Lo, len(b.Qs), v[0], v[1], gpuCell(ok, v[2]),
			gpuCell(ok, v[3]), v[4], v[5], gpuCell(ok, v[6]), gpuCell(ok, v[7]), win)
	}
}

func gpuCell(ok bool, v float64) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}
