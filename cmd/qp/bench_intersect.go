package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	benchisect "github.com/qpengine/qp/bench/intersect"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/report"
)

func init() {
	registerBench("intersect", "INDEX QUERIES", `list intersection only (docIDs, no scoring): CPU merge,
galloping, binsearch, PMF, LR, HS and GPU PARA batches
(binsearch, PMF1-4, LR, HS, LRC-family direct search) per
batch threshold c; queries/s, ns per shortest-list element`, benchIntersect)
}

// benchIntersect parses the flags of bench intersect and prints the table
// of bench/intersect (the experiment: CPU algorithms of package intersect,
// GPU PARA batches of kern.IsectBatch, every result checked against merge).
func benchIntersect(c command, args []string) error {
	c.name = "bench intersect"
	c.args = "INDEX QUERIES [flags]"
	fs := newFlags(c, `Decodes the posting lists of each query's terms (AND semantics: queries
with an unknown term, or fewer than two distinct terms, are skipped) and
intersects them with every algorithm: on the CPU (one thread) merge,
galloping (SvS), binsearch, pmf1..4 (Ding et al. WWW'09 §7), lr and hs
(Ao et al. PVLDB'11 §4.3, §4.4); on the GPU in PARA batches closed when the
sum of shortest-list lengths reaches each threshold c (§4.1): binsearch,
pmf1..4, lr, hs, and search inside whole-list lrc, lrcseg, seglrc and hslrc
encodings (§5.3). Lists, LR models, HS tables and encodings are built once
and kept resident (not timed); a GPU batch's time includes uploading its
query descriptors, the kernels and copying the results back. Every
algorithm's results must equal merge's, or the command fails.`)
	device := fs.String("device", "auto", "cpu, gpu or auto (GPU rows when a GPU is usable)")
	thr := fs.String("thresholds", "65536,262144,1048576,4194304", "GPU PARA batch thresholds c (shortest-list elements)")
	limit := fs.Int("limit", 10000, "use the first N queries of the file (0: all)")
	div := fs.Int("hs-div", 16, "HS<div>: buckets of about div elements (16, 32, 256, ...)")
	csvPath := fs.String("csv", "", "also write the table as CSV to this file")
	pos, err := parseArgs(fs, args, 2)
	if err != nil {
		return err
	}
	if err := guardOutputs(pos, *csvPath); err != nil {
		return err
	}
	var cs []int
	for _, s := range splitComma(*thr) {
		v, err := parseCount(s)
		if err != nil || v < 1 {
			return fmt.Errorf("--thresholds: bad value %q", s)
		}
		cs = append(cs, v)
	}
	cfg := benchisect.Config{Device: *device, Thresholds: cs, HSDiv: *div,
		Notice: func(s string) { fmt.Fprintln(os.Stderr, s) }}
	if *div < 1 {
		return fmt.Errorf("--hs-div %d: want >= 1", *div)
	}
	switch *device {
	case "cpu", "gpu", "auto":
	default:
		return fmt.Errorf("--device %q: want cpu, gpu or auto", *device)
	}
	x, err := index.Open(pos[0])
	if err != nil {
		return err
	}
	defer x.Close()
	an, err := x.Analyzer()
	if err != nil {
		return err
	}
	fq, err := readQueryFile(pos[1], *limit)
	if err != nil {
		return err
	}
	texts := make([]string, len(fq))
	for i, q := range fq {
		texts[i] = q.Text
	}
	t0 := time.Now()
	d, err := benchisect.Prepare(x, an, texts, *div)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[1], err)
	}
	fmt.Fprintf(os.Stderr, "qp: %d queries (%d skipped), %d distinct lists, %d postings, %d shortest-list elements; decoded and modelled in %v; LR contraction ratio %.4f (posting-weighted)\n",
		len(d.Queries), d.Skipped, len(d.Lists), d.Postings, d.Elems, time.Since(t0).Round(time.Millisecond), d.Contraction)
	rows, err := benchisect.Run(d, cfg)
	if err != nil {
		return err
	}
	fmt.Printf("%-5s %-10s %9s %8s %12s %12s\n", "dev", "algo", "c", "queries", "queries/s", "ns/elem")
	for _, r := range rows {
		cstr := "-"
		if r.C > 0 {
			cstr = strconv.Itoa(r.C)
		}
		fmt.Printf("%-5s %-10s %9s %8d %12.0f %12.3f\n", r.Device, r.Algo, cstr, r.Queries, r.QPS(), r.NsPerElem())
	}
	if *csvPath != "" {
		return report.WriteCSVFile(*csvPath, benchisect.CSVHeader, benchisect.CSVRows(rows))
	}
	return nil
}
