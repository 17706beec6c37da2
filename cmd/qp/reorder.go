package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/qpengine/qp/internal/progress"
	"github.com/qpengine/qp/reorder"
)

func init() {
	c := command{name: "reorder", args: "IN OUT [flags]", summary: "renumber an index's documents by recursive graph bisection"}
	c.run = func(args []string) error {
		fs := newFlags(c, `Reads the index IN, computes a new docID order by recursive graph bisection
(BP: Dhulipala et al., KDD 2016; parameters of Mackenzie et al., ECIR 2019)
over its document-term graph, and writes the index OUT with the documents
renumbered: posting lists re-sorted, document lengths, external ids and
stored fields following their documents, the same codecs, block size,
bitmap mode and BM25 parameters as IN. Queries return the same documents
and scores; the lists get smaller gaps (docs/REORDER.md).

BP runs on all cores (--threads) and its result depends only on IN and on
--seed, --depth, --iters and --min-df, not on the number of threads.
Memory: IN in memory, plus 4 bytes per posting of the lists kept
(df >= --min-df) and per thread about 25 bytes per kept term.

OUT must differ from IN; it is written to OUT.tmp and renamed when
complete. Progress goes to stderr.

Example:
  qp reorder gcide.qp gcide-bp.qp
  qp stats gcide-bp.qp --codecs all`)
		seed := fs.Uint64("seed", 1, "orders documents of equal move gain (a different seed, a different but equally good order)")
		threads := fs.Int("threads", 0, "goroutines (0 = all cores)")
		depth := fs.Int("depth", 0, "bisection levels (0 = floor(log2 N) - 5, parts of 32-64 documents)")
		iters := fs.Int("iters", 20, "swap rounds per bisection")
		refine := fs.Int("refine", reorder.DefaultRefine, "further levels below --depth, each with --refine-iters rounds:\nthey order the documents inside PISA's final parts (0 = none, PISA's behaviour)")
		refineIters := fs.Int("refine-iters", reorder.DefaultRefineIters, "swap rounds per bisection of the refinement levels")
		minDF := fs.Int("min-df", 2, "leave lists with fewer postings out of the graph (they cannot be compressed better)")
		quiet := fs.Bool("quiet", false, "no progress output")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 2 {
			fs.Usage()
			return fmt.Errorf("want IN and OUT, got %d arguments", len(pos))
		}
		if err := checkReorderFlags(*threads, *depth, *iters, *minDF); err != nil {
			return err
		}
		if err := checkRefineFlags(*refine, *refineIters); err != nil {
			return err
		}
		if *refine == 0 {
			*refine = -1 // reorder.Options: negative is none, 0 the default
		}
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
		defer cancel()
		st, err := runReorder(ctx, pos[0], pos[1], reorder.Config{
			Options: reorder.Options{Depth: *depth, Iters: *iters, Refine: *refine, RefineIters: *refineIters, Seed: *seed, Workers: *threads},
			MinDF:   *minDF,
		}, *quiet)
		if err != nil {
			return err
		}
		printReorderStats(st, pos[1])
		return nil
	}
	register(c)
}

func checkRefineFlags(refine, iters int) error {
	switch {
	case refine < 0 || refine > 32:
		return fmt.Errorf("--refine %d: want 0 (none) to 32", refine)
	case iters < 1:
		return fmt.Errorf("--refine-iters %d: want >= 1", iters)
	}
	return nil
}

func checkReorderFlags(threads, depth, iters, minDF int) error {
	switch {
	case threads < 0:
		return fmt.Errorf("--threads %d: want >= 0", threads)
	case depth < 0 || depth > 32:
		return fmt.Errorf("--depth %d: want 0 (default) to 32", depth)
	case iters < 1:
		return fmt.Errorf("--iters %d: want >= 1", iters)
	case minDF < 1:
		return fmt.Errorf("--min-df %d: want >= 1", minDF)
	}
	return nil
}

// runReorder runs reorder.Run with a progress bar per stage on stderr.
func runReorder(ctx context.Context, in, out string, cfg reorder.Config, quiet bool) (reorder.Stats, error) {
	var bar *progress.Bar
	stage := ""
	start := time.Now()
	cfg.Progress = func(s string, done, total int64) {
		if s != stage {
			if bar != nil {
				bar.Done("")
			}
			stage = s
			unit := "documents"
			if s == "write" {
				unit = "lists"
			}
			bar = progress.New("reorder: "+s, unit, total)
			if quiet {
				bar.Quiet()
			}
		}
		bar.Set(done, fmt.Sprintf("%.0fs", time.Since(start).Seconds()))
	}
	st, err := reorder.Run(ctx, in, out, cfg)
	if bar != nil {
		bar.Done("")
	}
	return st, err
}

func printReorderStats(st reorder.Stats, out string) {
	fmt.Printf("reordered %d documents: graph of %d terms, %d postings (of %d, %d); depth %d + %d refinement levels\n",
		st.Docs, st.GraphTerms, st.GraphPostings, st.Terms, st.Postings, st.Depth, st.Refine)
	fmt.Printf("log2 gap (bits per gap, graph lists): %.3f -> %.3f (%.1f%%)\n",
		st.CostBefore, st.CostAfter, 100*(st.CostAfter-st.CostBefore)/st.CostBefore)
	p := float64(st.Out.Postings)
	fmt.Printf("time: load %.1fs, graph %.1fs, bisection %.1fs, cost %.1fs, write %.1fs\n",
		st.Load.Seconds(), st.Graph.Seconds(), st.Bisect.Seconds(), st.Cost.Seconds(), st.Write.Seconds())
	fmt.Printf("wrote %s: %.3f bits/docID, %.3f bits/freq\n", out, 8*float64(st.Out.DocBytes)/p, 8*float64(st.Out.FreqBytes)/p)
}
