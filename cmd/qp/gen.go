package main

import (
	"context"
	"flag"
	"fmt"
	"math"
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
	"github.com/qpengine/qp/score"
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
	c := command{name: "gen", args: "--out INDEX [--docs N] [--seed S] [--model topics|independent] [flags]", summary: "generate a GOV2-like synthetic collection (topic model; or independent lists)"}
	c.run = func(args []string) error {
		fs := newFlags(c, `Writes an index (--out) and/or a JSON Lines text collection (--text) of a
synthetic collection calibrated to GOV2 (25.2M documents, 35.6M terms, 5.74G
postings, 17.35G tokens), scaled to --docs by Heaps' law. Deterministic for a
given --seed, whatever --threads.

--model topics (the default; docs/GEN.md) generates documents: log-normal
lengths, bursty words (a Pólya urn per document), a few topics per document
out of --topics, a Zipf background, and the terms of the TREC 2005/2006
efficiency logs (--queries) placed in the topics of the queries they occur
in, so that real queries intersect as on the web. Documents go through the
same builder as qp index (spilling under --mem, all cores). --text writes the
same documents as {"id","text"} lines (.gz compressed if so named); qp index
--stem none --stopwords none on that file gives the identical index.
--locality puts documents of a "site" (same main topic) next to each other,
as URL order does; without it documents are in random order.
--fit INDEX estimates the parameters from an existing index (lengths, df
law, burstiness, topic strength), prints them and generates a collection of
that size (or --docs). --params FILE reads parameters (JSON, as written by
--save-params FILE); flags given explicitly override them.

--model independent is the previous model (gen/model.go): posting lists
generated term by term, documents uniform samples, no text.`)
		out := fs.String("out", "", "index file to write")
		docs := fs.Int("docs", 1000000, "number of documents (with --fit: default the index's)")
		seed := fs.Int64("seed", 1, "random seed")
		model := fs.String("model", "topics", "collection model: topics or independent")
		codec := fs.String("codec", "bp128", "codec of docID and frequency blocks")
		block := fs.Int("block", index.DefaultBlockSize, "postings per block")
		var qfiles multiFlag
		fs.Var(&qfiles, "queries", "query log whose terms the vocabulary must hold (repeatable; default: the TREC efficiency logs in ../shared/data/queries)")
		threads := fs.Int("threads", 0, "threads (0 = all cores)")
		quiet := fs.Bool("quiet", false, "no progress output")
		text := fs.String("text", "", "topics: also write the collection as JSON Lines to this new file (.gz: gzip)")
		locality := fs.Bool("locality", false, "topics: documents of a site (shared main topic) adjacent")
		paramsIn := fs.String("params", "", "topics: read model parameters from this JSON file")
		paramsOut := fs.String("save-params", "", "topics: write the model parameters (after fitting) to this new JSON file")
		fitIdx := fs.String("fit", "", "topics: fit the parameters to this index")
		topics := fs.Int("topics", 0, "topics: number of topics (0 = default 8192)")
		bgShare := fs.Float64("background", 0, "topics: share of fresh words from the background (0 = default 0.5)")
		mem := fs.String("mem", "1G", "topics: the builder's memory budget: in-memory postings before it spills\na run, then, in the merge, the runs' pages it keeps mapped (never both at\nonce; the model, term names and per-document arrays come on top:\ndocs/GEN.md)")
		tmp := fs.String("tmp", "", "topics: directory for spilled runs")
		validate := fs.Bool("validate", false, "topics, with --fit: compare the stand-in with the fitted index (qp compare's table on the TREC 2006 log and\ngenerated and/known sets) and mark issue 20's targets met or not; without --out the stand-in is a temporary file")
		valLimit := fs.Int("validate-queries", 10000, "with --validate: the first N queries of the TREC 2006 log")
		cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the generation and build to this new file (go tool pprof)")
		if _, err := parse(fs, args); err != nil {
			return err
		}
		if *cpuProfile != "" {
			stop, err := startCPUProfile(*cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if len(qfiles) == 0 {
			qfiles = defaultQueryLogs()
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
		if *out != "" {
			if err := fileguard.Check(indexOutputs(*out), "query log", qfiles...); err != nil {
				return err
			}
			if err := fileguard.Creatable(*out); err != nil {
				return err
			}
		}
		switch *model {
		case "independent":
			for _, f := range []string{"text", "locality", "params", "save-params", "fit", "topics", "background", "mem", "tmp"} {
				if set[f] {
					return fmt.Errorf("--%s needs --model topics", f)
				}
			}
			if *out == "" {
				fs.Usage()
				return fmt.Errorf("--out is required")
			}
			return genIndependent(*out, *docs, *seed, *codec, *block, qfiles, *threads, *quiet)
		case "topics":
		default:
			return fmt.Errorf("--model %q: want topics or independent", *model)
		}
		if *validate {
			if *fitIdx == "" {
				return fmt.Errorf("--validate needs --fit INDEX (the real collection to compare with)")
			}
			if set["docs"] {
				return fmt.Errorf("--validate compares a stand-in of the fitted index's size: drop --docs")
			}
			if *out == "" {
				dir, err := os.MkdirTemp(*tmp, "qp-validate-")
				if err != nil {
					return fmt.Errorf("--validate: %w", err)
				}
				defer os.RemoveAll(dir)
				*out = filepath.Join(dir, "standin.qp")
			}
		}
		if *out == "" && *text == "" && *paramsOut == "" {
			fs.Usage()
			return fmt.Errorf("--out, --text or --save-params is required")
		}
		if *paramsIn != "" && *fitIdx != "" {
			return fmt.Errorf("--params and --fit both give the parameters: use one")
		}
		var p gen.TopicParams
		var err error
		if *paramsIn != "" {
			if p, err = gen.LoadParams(*paramsIn); err != nil {
				return err
			}
		}
		if *fitIdx != "" {
			x, err := index.Open(*fitIdx)
			if err != nil {
				return err
			}
			defer x.Close()
			var fl *gen.QueryLog
			if len(qfiles) > 0 {
				if fl, err = gen.LoadQueryLog(qfiles...); err != nil {
					return err
				}
			}
			fp, err := gen.FitIndex(x, gen.FitOptions{Log: fl, Workers: *threads})
			if err != nil {
				return fmt.Errorf("--fit %s: %w", *fitIdx, err)
			}
			p = fp
			fmt.Fprintf(os.Stderr, "fitted to %s: %s\n", *fitIdx, fp.Summary())
		}
		if set["docs"] || p.Docs == 0 {
			if p.Vocab > 0 && p.Docs > 0 && *docs != p.Docs {
				// Heaps' law from the fitted size to the asked one.
				beta := p.HeapsBeta
				if beta == 0 {
					beta = gen.DefaultHeapsBeta
				}
				p.Vocab = max(1, int(math.Round(float64(p.Vocab)*math.Pow(float64(*docs)/float64(p.Docs), beta))))
			}
			p.Docs = *docs
		}
		if set["topics"] {
			p.Topics = *topics
		}
		if set["background"] {
			p.Background = *bgShare
		}
		dc, err := compress.ByName(*codec)
		if err != nil {
			return err
		}
		budget, err := parseSize(*mem)
		if err != nil {
			return fmt.Errorf("--mem: %w", err)
		}
		var ql *gen.QueryLog
		if len(qfiles) > 0 {
			if ql, err = gen.LoadQueryLog(qfiles...); err != nil {
				return err
			}
		}
		start := time.Now()
		tp, err := gen.NewTopics(gen.TopicsConfig{Params: p, Seed: *seed, Locality: *locality, Log: ql, Workers: *threads})
		if err != nil {
			return err
		}
		fp := tp.Params()
		fi := tp.Fit
		fmt.Fprintf(os.Stderr, "model topics: %s\n  fitted in %.1fs: alpha %.4g, zipf_s %.4g; sample: %.1f distinct terms/doc, %.1f fresh draws/doc; expected vocabulary %.0f; %d query terms placed (%d dropped, %d capped)\n",
			fp.Summary(), time.Since(start).Seconds(), fi.Alpha, fi.ZipfS, fi.SampleDistinct, fi.SampleFresh, fi.ExpectedVocab, fi.QueryTerms, fi.DroppedQueryTerms, fi.CappedQueryTerms)
		if *paramsOut != "" {
			if err := gen.SaveParams(*paramsOut, fp); err != nil {
				return err
			}
		}
		if *out == "" && *text == "" {
			return nil
		}
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer cancel()
		bar := progress.New("generating", "docs", int64(fp.Docs))
		if *quiet {
			bar.Quiet()
		}
		st, err := tp.Build(ctx, gen.BuildOptions{Text: *text, Index: index.BuildOptions{
			Out: *out, BlockSize: *block, DocCodec: dc, FreqCodec: dc, Params: score.Default,
			MemBudget: budget, TempDir: *tmp, Workers: *threads,
			Meta: index.Meta{Source: fmt.Sprintf("qp gen --model topics --docs %d --seed %d --locality=%v", fp.Docs, *seed, *locality)},
			Progress: func(s index.BuildStats) {
				el := time.Since(start).Seconds()
				bar.Set(int64(s.Docs), fmt.Sprintf("%s docs/s, %s postings, %d runs", progress.Human(float64(s.Docs)/el), progress.Human(float64(s.Postings)), s.Runs))
			},
		}})
		if err != nil {
			return err
		}
		bar.Done("")
		el := time.Since(start).Seconds()
		p64 := float64(st.Postings)
		fmt.Printf("generated %d documents (%.0f docs/s), ", st.Docs, float64(st.Docs)/el)
		if *out != "" {
			fmt.Printf("%d terms, ", st.Terms)
		}
		fmt.Printf("%d postings, %d tokens in %.1fs", st.Postings, st.Tokens, el)
		if *out != "" {
			fmt.Printf("; %s: %.3f bits/docID, %.3f bits/freq; %d spilled runs; wrote %s", dc.Name(), 8*float64(st.DocBytes)/p64, 8*float64(st.FreqBytes)/p64, st.Runs, *out)
		}
		if *text != "" {
			fmt.Printf("; wrote %s", *text)
		}
		fmt.Println()
		if *validate {
			return validateStandIn(os.Stdout, *fitIdx, *out, qfiles, *valLimit, *threads)
		}
		return nil
	}
	register(c)
}

// genIndependent is the independent-lists model (gen.Generator).
func genIndependent(out string, docs int, seed int64, codec string, block int, qfiles []string, threads int, quiet bool) error {
	dc, err := compress.ByName(codec)
	if err != nil {
		return err
	}
	var qterms []string
	if len(qfiles) > 0 {
		if qterms, err = gen.LoadQueryTerms(qfiles...); err != nil {
			return err
		}
	}
	start := time.Now()
	g, err := gen.New(gen.Config{Docs: docs, Seed: seed, QueryTerms: qterms, Workers: threads})
	if err != nil {
		return err
	}
	gs := g.Stats()
	fmt.Fprintf(os.Stderr, "model: %d docs, %d terms, %d postings (%d query-log terms)\n", docs, g.Terms(), gs.Postings, len(qterms))
	lens := g.DocLengths()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	w, err := index.NewWriter(out, index.WriterOptions{BlockSize: block, DocCodec: dc, DocLens: lens,
		Meta: index.Meta{Source: fmt.Sprintf("qp gen --docs %d --seed %d", docs, seed)}})
	if err != nil {
		return err
	}
	order := g.SortedRanks()
	bar := progress.New("generating", "terms", int64(len(order)))
	if quiet {
		bar.Quiet()
	}
	st, err := w.AddListsParallel(ctx, len(order), threads, func(i int, d, f []uint32) (string, []uint32, []uint32, error) {
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
		docs, st.Terms, st.Postings, time.Since(start).Seconds(), dc.Name(), 8*float64(st.DocBytes)/p, 8*float64(st.FreqBytes)/p, out)
	return nil
}
