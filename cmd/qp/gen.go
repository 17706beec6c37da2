package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/gen"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/fileguard"
	"github.com/qpengine/qp/internal/progress"
)

// defaultQueryLogs are the TREC efficiency query logs shipped beside the
// repository (../shared/data/queries), found relative to the working
// directory or the executable.
func defaultQueryLogs() []string {
	var out []string
	for _, base := range sharedDirs() {
		for _, f := range []string{"05.efficiency_topics.txt", "06.efficiency_topics.txt"} {
			p := filepath.Join(base, "data", "queries", f)
			if _, err := os.Stat(p); err == nil {
				out = append(out, p)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// sharedDirs lists candidate locations of the team's shared/ folder.
func sharedDirs() []string {
	var out []string
	if env := os.Getenv("QP_SHARED"); env != "" {
		out = append(out, env)
	}
	out = append(out, "../shared", "shared")
	if exe, err := os.Executable(); err == nil {
		d := filepath.Dir(exe)
		out = append(out, filepath.Join(d, "..", "..", "shared"), filepath.Join(d, "..", "shared"))
	}
	return out
}

func init() {
	c := command{name: "gen", args: "--out INDEX [--docs N] [--seed S] [flags]", summary: "generate a GOV2-like synthetic index (postings directly, no text)"}
	c.run = func(args []string) error {
		fs := newFlags(c, `Writes an index of a synthetic collection whose statistics are calibrated to
GOV2 (24.6M documents, 35.6M terms, 5.74G postings, ~233 distinct terms per
document, most postings in lists longer than 4096), scaled to --docs by
Heaps' law. Postings are generated directly, term by term, on all cores, so
GOV2 scale needs O(N) memory plus the index. The vocabulary holds every term
of the TREC 2005/2006 efficiency query logs (--queries), so real queries hit
lists of realistic lengths. Deterministic for a given --seed.`)
		out := fs.String("out", "", "index file to write")
		docs := fs.Int("docs", 1000000, "number of documents")
		seed := fs.Int64("seed", 1, "random seed")
		codec := fs.String("codec", "bp128", "codec of docID and frequency blocks")
		block := fs.Int("block", index.DefaultBlockSize, "postings per block")
		var qfiles multiFlag
		fs.Var(&qfiles, "queries", "query log whose terms the vocabulary must hold (repeatable; default: the TREC efficiency logs in ../shared/data/queries)")
		threads := fs.Int("threads", 0, "threads (0 = all cores)")
		quiet := fs.Bool("quiet", false, "no progress output")
		if _, err := parse(fs, args); err != nil {
			return err
		}
		if *out == "" {
			fs.Usage()
			return fmt.Errorf("--out is required")
		}
		if *docs < 1 {
			return fmt.Errorf("--docs %d: want at least 1 document", *docs)
		}
		if *block < 1 || *block > index.MaxBlockSize {
			return fmt.Errorf("--block %d: want 1..%d postings per block", *block, index.MaxBlockSize)
		}
		if *threads < 0 {
			return fmt.Errorf("--threads %d: want 0 (all cores) or a positive count", *threads)
		}
		dc, err := compress.ByName(*codec)
		if err != nil {
			return err
		}
		if len(qfiles) == 0 {
			qfiles = defaultQueryLogs()
		}
		if err := fileguard.Check(indexOutputs(*out), "query log", qfiles...); err != nil {
			return err
		}
		if err := fileguard.Creatable(*out); err != nil {
			return err
		}
		var qterms []string
		if len(qfiles) > 0 {
			if qterms, err = gen.LoadQueryTerms(qfiles...); err != nil {
				return err
			}
		}
		start := time.Now()
		g, err := gen.New(gen.Config{Docs: *docs, Seed: *seed, QueryTerms: qterms, Workers: *threads})
		if err != nil {
			return err
		}
		gs := g.Stats()
		fmt.Fprintf(os.Stderr, "model: %d docs, %d terms, %d postings (%d query-log terms)\n", *docs, g.Terms(), gs.Postings, len(qterms))
		lens := g.DocLengths()
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer cancel()
		w, err := index.NewWriter(*out, index.WriterOptions{BlockSize: *block, DocCodec: dc, DocLens: lens,
			Meta: index.Meta{Source: fmt.Sprintf("qp gen --docs %d --seed %d", *docs, *seed)}})
		if err != nil {
			return err
		}
		order := g.SortedRanks()
		bar := progress.New("generating", "terms", int64(len(order)))
		if *quiet {
			bar.Quiet()
		}
		st, err := w.AddListsParallel(ctx, len(order), *threads, func(i int, d, f []uint32) (string, []uint32, []uint32, error) {
			rank := int(order[i])
			term, _ := g.Term(rank)
			d, f = g.Postings(rank, d, f)
			return term, d, f, nil
		}, func(done int, s index.BuildStats) {
			bar.Set(int64(done), fmt.Sprintf("%s postings", progress.Human(float64(s.Postings))))
		})
		if err != nil {
			w.Abort()
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		bar.Done("")
		p := float64(st.Postings)
		fmt.Printf("generated %d documents, %d terms, %d postings in %.1fs; %s: %.3f bits/docID, %.3f bits/freq; wrote %s\n",
			*docs, st.Terms, st.Postings, time.Since(start).Seconds(), dc.Name(), 8*float64(st.DocBytes)/p, 8*float64(st.FreqBytes)/p, *out)
		return nil
	}
	register(c)
}
