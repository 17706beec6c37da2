package main

import (
	"context"
	"flag"
	"fmt"
	"io"
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
	"github.com/qpengine/qp/reorder"
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

// genHelp is qp gen's description (before its flags).
const genHelp = `Writes an index (--out) and/or a JSON Lines text collection (--text) of a
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
law, burstiness, and the topics' specificity --topic-spread from how the
terms of sampled documents co-occur), prints them and generates a collection
of that size (or --docs). --params FILE reads parameters (JSON, as written by
--save-params FILE); flags given explicitly override them.

--model independent is the previous model (gen/model.go): posting lists
generated term by term, documents uniform samples, no text.`

func init() {
	c := command{name: "gen", args: "--out INDEX [--docs N] [--seed S] [--model topics|independent] [flags]", summary: "generate a GOV2-like synthetic collection (topic model; or independent lists)"}
	c.run = func(args []string) error {
		fs := newFlags(c, genHelp)
		var f genFlags
		f.define(fs)
		if _, err := parse(fs, args); err != nil {
			return err
		}
		f.set = map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
		return f.run(fs)
	}
	register(c)
}

// genFlags are qp gen's flags; set names those given on the command line.
type genFlags struct {
	out, model, codec, text, paramsIn, paramsOut string
	fitIdx, mem, tmp, cpuProfile                 string
	docs, block, threads, topics, valLimit       int
	valGen                                       int
	seed                                         int64
	quiet, locality, validate, fitSites          bool
	fitTopics, fitTopical                        bool
	bgShare, siteShare, queryTopical             float64
	siteVocab, topicSpread                       int
	qfiles                                       multiFlag
	set                                          map[string]bool
}

// define defines the flags on fs.
func (f *genFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.out, "out", "", "index file to write")
	fs.IntVar(&f.docs, "docs", 1000000, "number of documents (with --fit: default the index's)")
	fs.Int64Var(&f.seed, "seed", 1, "random seed")
	fs.StringVar(&f.model, "model", "topics", "collection model: topics or independent")
	fs.StringVar(&f.codec, "codec", "bp128", "codec of docID and frequency blocks")
	fs.IntVar(&f.block, "block", index.DefaultBlockSize, "postings per block")
	fs.Var(&f.qfiles, "queries", "query log whose terms the vocabulary must hold (repeatable; default: the TREC efficiency logs in ../shared/data/queries)")
	fs.IntVar(&f.threads, "threads", 0, "threads (0 = all cores)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress output")
	fs.StringVar(&f.text, "text", "", "topics: also write the collection as JSON Lines to this new file (.gz: gzip)")
	fs.BoolVar(&f.locality, "locality", false, "topics: documents of a site (shared main topic) adjacent")
	fs.StringVar(&f.paramsIn, "params", "", "topics: read model parameters from this JSON file")
	fs.StringVar(&f.paramsOut, "save-params", "", "topics: write the model parameters (after fitting) to this new JSON file")
	fs.StringVar(&f.fitIdx, "fit", "", "topics: fit the parameters to this index")
	fs.IntVar(&f.topics, "topics", 0, "topics: number of topics (0 = default 8192)")
	fs.Float64Var(&f.bgShare, "background", 0, "topics: share of fresh words from the background (0 = default 0.5)")
	fs.Float64Var(&f.queryTopical, "query-topical", 0, "topics: φ, the share of a query-log term's documents that come from the topics of its\nqueries rather than the background (0 = default 0.95, or fitted with --fit; docs/GEN.md)")
	fs.Float64Var(&f.siteShare, "site-share", 0, "topics: share of fresh words from the document's site vocabulary; > 0 gives every\ndocument a site (shared main topic and words), in random order too (docs/GEN.md, Sites)")
	fs.BoolVar(&f.fitSites, "fit-sites", false, "topics, with --fit: also fit --site-share so that BP gains on a random sample of the\ngenerated documents what it gains on the index's (docs/GEN.md, Sites; about a minute)")
	fs.IntVar(&f.siteVocab, "site-vocab", 0, "topics: word slots of a site's vocabulary (0 = default 1000)")
	fs.IntVar(&f.topicSpread, "topic-spread", 0, "topics: how specific a topic's words are (word m of a topic is background rank about\nm·S; larger S, stronger co-occurrence of a document's words; 0 = default 16, or\nfitted with --fit; docs/GEN.md)")
	fs.BoolVar(&f.fitTopics, "fit-topics", true, "topics, with --fit: fit --topic-spread so that known-item queries on a 20,000-document\nsample of the generated collection intersect as on a sample of the index\n(docs/GEN.md, --fit; tens of seconds); false keeps the default 16")
	fs.BoolVar(&f.fitTopical, "fit-query-topical", true, "topics, with --fit: raise --query-topical from 0.95 (up to 0.999) while the query log's\nqueries intersect less on a 20,000-document sample of the generated collection than on a\nsample of the index (docs/GEN.md, --fit; seconds); false keeps 0.95")
	fs.StringVar(&f.mem, "mem", "1G", "topics: the builder's memory budget: in-memory postings before it spills\na run, then, in the merge, the runs' pages it keeps mapped (never both at\nonce; the model, term names and per-document arrays come on top:\ndocs/GEN.md)")
	fs.StringVar(&f.tmp, "tmp", "", "topics: directory for spilled runs")
	fs.BoolVar(&f.validate, "validate", false, "topics, with --fit: compare the stand-in with the fitted index (qp compare's table on the TREC 2006 log and\ngenerated and/known sets) and mark issue 20's targets met or not; without --out the stand-in is a temporary file")
	fs.IntVar(&f.valLimit, "validate-queries", 10000, "with --validate: the first N queries of the TREC 2006 log")
	fs.IntVar(&f.valGen, "validate-gen", defaultValidateGen, "with --validate: queries per generated set (and, known), a quarter of each length 2-5;\nthe known-item R ratios are means over few heavy queries, noisy below thousands")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the generation and build to this new file (go tool pprof)")
}

// run checks the flags and generates the collection of the chosen model.
func (f *genFlags) run(fs *flag.FlagSet) error {
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if len(f.qfiles) == 0 {
		f.qfiles = defaultQueryLogs()
	}
	if err := f.check(); err != nil {
		return err
	}
	switch f.model {
	case "independent":
		for _, name := range []string{"text", "locality", "params", "save-params", "fit", "topics", "background", "query-topical", "site-share", "site-vocab", "fit-sites", "topic-spread", "fit-topics", "fit-query-topical", "mem", "tmp"} {
			if f.set[name] {
				return fmt.Errorf("--%s needs --model topics", name)
			}
		}
		if f.out == "" {
			fs.Usage()
			return fmt.Errorf("--out is required")
		}
		return genIndependent(f.out, f.docs, f.seed, f.codec, f.block, f.qfiles, f.threads, f.quiet)
	case "topics":
	default:
		return fmt.Errorf("--model %q: want topics or independent", f.model)
	}
	if f.validate {
		cleanup, err := f.prepareValidate()
		if err != nil {
			return err
		}
		defer cleanup()
	}
	if f.out == "" && f.text == "" && f.paramsOut == "" {
		fs.Usage()
		return fmt.Errorf("--out, --text or --save-params is required")
	}
	if f.paramsIn != "" && f.fitIdx != "" {
		return fmt.Errorf("--params and --fit both give the parameters: use one")
	}
	p, err := f.topicParams()
	if err != nil {
		return err
	}
	return f.genTopics(p)
}

// check validates the numeric flags and the output (not an input, and
// creatable) before anything is read.
func (f *genFlags) check() error {
	if f.docs < 1 {
		return fmt.Errorf("--docs %d: want at least 1 document", f.docs)
	}
	if f.block < 1 || f.block > index.MaxBlockSize {
		return fmt.Errorf("--block %d: want 1..%d postings per block", f.block, index.MaxBlockSize)
	}
	if f.threads < 0 {
		return fmt.Errorf("--threads %d: want 0 (all cores) or a positive count", f.threads)
	}
	if f.set["fit-sites"] && f.fitSites && f.fitIdx == "" {
		return fmt.Errorf("--fit-sites needs --fit INDEX")
	}
	if f.set["fit-topics"] && f.fitTopics && f.fitIdx == "" {
		return fmt.Errorf("--fit-topics needs --fit INDEX")
	}
	if f.set["fit-query-topical"] && f.fitTopical && f.fitIdx == "" {
		return fmt.Errorf("--fit-query-topical needs --fit INDEX")
	}
	if !(f.queryTopical >= 0 && f.queryTopical < 1) {
		return fmt.Errorf("--query-topical %g: want 0 (the default 0.95) or 0 < φ < 1", f.queryTopical)
	}
	if f.valGen < 1 || f.valGen > 1000000 {
		return fmt.Errorf("--validate-gen %d: want 1..1000000 queries per generated set", f.valGen)
	}
	if f.set["validate-gen"] && !f.validate {
		return fmt.Errorf("--validate-gen needs --validate")
	}
	if f.topicSpread < 0 || f.topicSpread > gen.MaxTopicSpread {
		return fmt.Errorf("--topic-spread %d: want 0 (default or fitted) or 1..%d", f.topicSpread, gen.MaxTopicSpread)
	}
	if f.out != "" {
		if err := fileguard.Check(indexOutputs(f.out), "query log", f.qfiles...); err != nil {
			return err
		}
		if err := fileguard.Creatable(f.out); err != nil {
			return err
		}
	}
	return nil
}

// prepareValidate checks --validate's needs and, without --out, points
// --out at a temporary file that cleanup removes.
func (f *genFlags) prepareValidate() (cleanup func(), err error) {
	if f.fitIdx == "" {
		return nil, fmt.Errorf("--validate needs --fit INDEX (the real collection to compare with)")
	}
	if f.set["docs"] {
		return nil, fmt.Errorf("--validate compares a stand-in of the fitted index's size: drop --docs")
	}
	if f.out != "" {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp(f.tmp, "qp-validate-")
	if err != nil {
		return nil, fmt.Errorf("--validate: %w", err)
	}
	f.out = filepath.Join(dir, "standin.qp")
	return func() { os.RemoveAll(dir) }, nil
}

// topicParams resolves the topic model's parameters: --params or --fit (or
// the defaults), then --docs (scaling the vocabulary by Heaps' law from a
// fitted size), --topics and --background where given.
func (f *genFlags) topicParams() (gen.TopicParams, error) {
	var p gen.TopicParams
	var err error
	if f.paramsIn != "" {
		if p, err = gen.LoadParams(f.paramsIn); err != nil {
			return p, err
		}
	}
	if f.fitIdx != "" {
		if p, err = fitParams(f.fitIdx, f.qfiles, f.threads); err != nil {
			return p, err
		}
	}
	if f.set["docs"] || p.Docs == 0 {
		if p.Vocab > 0 && p.Docs > 0 && f.docs != p.Docs {
			// Heaps' law from the fitted size to the asked one.
			beta := p.HeapsBeta
			if beta == 0 {
				beta = gen.DefaultHeapsBeta
			}
			p.Vocab = max(1, int(math.Round(float64(p.Vocab)*math.Pow(float64(f.docs)/float64(p.Docs), beta))))
		}
		p.Docs = f.docs
	}
	if f.set["topics"] {
		p.Topics = f.topics
	}
	if f.set["site-share"] {
		p.SiteShare = f.siteShare
	}
	if f.set["site-vocab"] {
		p.SiteVocab = f.siteVocab
	}
	if f.set["topic-spread"] {
		p.TopicSpread = f.topicSpread
	}
	if f.set["query-topical"] {
		p.QueryTopical = f.queryTopical
	}
	if f.set["background"] {
		p.Background = f.bgShare
	}
	return p, nil
}

// fitParams estimates the topic model's parameters from the index at path
// (with the query logs' terms, when given) and prints them.
func fitParams(path string, qfiles []string, threads int) (gen.TopicParams, error) {
	x, err := index.Open(path)
	if err != nil {
		return gen.TopicParams{}, err
	}
	defer x.Close()
	var fl *gen.QueryLog
	if len(qfiles) > 0 {
		if fl, err = gen.LoadQueryLog(qfiles...); err != nil {
			return gen.TopicParams{}, err
		}
	}
	fp, err := gen.FitIndex(x, gen.FitOptions{Log: fl, Workers: threads})
	if err != nil {
		return gen.TopicParams{}, fmt.Errorf("--fit %s: %w", path, err)
	}
	fmt.Fprintf(os.Stderr, "fitted to %s: %s\n", path, fp.Summary())
	return fp, nil
}

// fitSiteShare measures BP's gain on a random sample of the --fit index's
// documents and fits SiteShare to it (gen.FitSiteShare).
func (f *genFlags) fitSiteShare(p gen.TopicParams, ql *gen.QueryLog) (float64, error) {
	if f.locality {
		return 0, fmt.Errorf("--fit-sites fits sites in random order: leave out --locality (or give --site-share)")
	}
	x, err := index.Open(f.fitIdx)
	if err != nil {
		return 0, err
	}
	n := validateSampleDocs
	if p.Docs != x.NumDocs() {
		// The same share of the documents as the generated sample.
		n = max(2, int(float64(n)*float64(x.NumDocs())/float64(p.Docs)))
	}
	sg, err := reorder.MeasureSampleGain(context.Background(), x, n, 2, 1, f.threads)
	x.Close()
	if err != nil {
		return 0, fmt.Errorf("--fit-sites: %w", err)
	}
	fmt.Fprintf(os.Stderr, "--fit-sites: BP on %d documents of %s: mean log2 gap %.3f -> %.3f (gain %.1f%%)\n",
		sg.Docs, f.fitIdx, sg.Random, sg.BP, 100*sg.Gain())
	share, gain, err := gen.FitSiteShare(context.Background(),
		gen.TopicsConfig{Params: p, Seed: f.seed, Log: ql, Workers: f.threads},
		gen.SiteFitOptions{Target: sg.Gain(), SampleDocs: validateSampleDocs, Log: f.fitLog()})
	if err != nil {
		return 0, fmt.Errorf("--fit-sites: %w", err)
	}
	fmt.Fprintf(os.Stderr, "--fit-sites: site_share %.4f (BP gain %.1f%%)\n", share, 100*gain)
	return share, nil
}

// measureFitIndex opens the --fit index and measures it with measure on a
// sample of n of its documents: gen.CooccurSampleDocs, or the same share of
// them as that many of the p.Docs generated ones.
func (f *genFlags) measureFitIndex(p gen.TopicParams, measure func(x *index.Index, n int) (gen.CooccurStats, error)) (gen.CooccurStats, error) {
	x, err := index.Open(f.fitIdx)
	if err != nil {
		return gen.CooccurStats{}, err
	}
	defer x.Close()
	n := gen.CooccurSampleDocs
	if p.Docs != x.NumDocs() {
		n = max(2, int(float64(n)*float64(x.NumDocs())/float64(p.Docs)))
	}
	return measure(x, n)
}

// fitLog is where the fits log their steps: standard error, none with --quiet.
func (f *genFlags) fitLog() io.Writer {
	if f.quiet {
		return nil
	}
	return os.Stderr
}

// fitTopicSpread measures the known-item co-occurrence of a random sample
// of the --fit index's documents and fits TopicSpread to it
// (gen.FitTopicSpread).
func (f *genFlags) fitTopicSpread(p gen.TopicParams, ql *gen.QueryLog) (int, error) {
	start := time.Now()
	target, err := f.measureFitIndex(p, func(x *index.Index, n int) (gen.CooccurStats, error) {
		return gen.MeasureIndexCooccur(x, n, uint64(f.seed))
	})
	if err != nil {
		return 0, fmt.Errorf("--fit-topics: %w", err)
	}
	fmt.Fprintf(os.Stderr, "--fit-topics: known-item co-occurrence of %s: %s\n", f.fitIdx, target)
	lw := f.fitLog()
	s, score, err := gen.FitTopicSpread(context.Background(),
		gen.TopicsConfig{Params: p, Seed: f.seed, Locality: f.locality, Log: ql, Workers: f.threads},
		gen.SpreadFitOptions{Target: target, SampleDocs: gen.CooccurSampleDocs, Seed: uint64(f.seed), Log: lw})
	if err != nil {
		return 0, fmt.Errorf("--fit-topics: %w", err)
	}
	fmt.Fprintf(os.Stderr, "--fit-topics: topic_spread %d (score %+.3f) in %.1fs\n", s, score, time.Since(start).Seconds())
	return s, nil
}

// fitQueryTopical measures how the query log's queries intersect on a
// random sample of the --fit index's documents and raises QueryTopical
// until the generated sample's do as much (gen.FitQueryTopical).
func (f *genFlags) fitQueryTopical(p gen.TopicParams, ql *gen.QueryLog) (float64, error) {
	start := time.Now()
	target, err := f.measureFitIndex(p, func(x *index.Index, n int) (gen.CooccurStats, error) {
		return gen.MeasureIndexQueryCooccur(x, n, uint64(f.seed), ql)
	})
	if err != nil {
		return 0, fmt.Errorf("--fit-query-topical: %w", err)
	}
	fmt.Fprintf(os.Stderr, "--fit-query-topical: query-log co-occurrence of %s: %s\n", f.fitIdx, target)
	lw := f.fitLog()
	phi, score, err := gen.FitQueryTopical(context.Background(),
		gen.TopicsConfig{Params: p, Seed: f.seed, Log: ql, Workers: f.threads},
		gen.TopicalFitOptions{Target: target, SampleDocs: gen.CooccurSampleDocs, Log: lw})
	if err != nil {
		return 0, fmt.Errorf("--fit-query-topical: %w", err)
	}
	fmt.Fprintf(os.Stderr, "--fit-query-topical: query_topical %.4g (score %+.3f) in %.1fs\n", phi, score, time.Since(start).Seconds())
	return phi, nil
}

// genTopics fits the topic model's remaining parameters to p, saves them
// (--save-params), generates and builds the collection (--out, --text) and
// validates it (--validate).
func (f *genFlags) genTopics(p gen.TopicParams) error {
	dc, err := compress.ByName(f.codec)
	if err != nil {
		return err
	}
	budget, err := parseSize(f.mem)
	if err != nil {
		return fmt.Errorf("--mem: %w", err)
	}
	var ql *gen.QueryLog
	if len(f.qfiles) > 0 {
		if ql, err = gen.LoadQueryLog(f.qfiles...); err != nil {
			return err
		}
	}
	if f.fitIdx != "" && f.fitSites && !f.set["site-share"] {
		if p.SiteShare, err = f.fitSiteShare(p, ql); err != nil {
			return err
		}
	}
	if f.fitIdx != "" && f.fitTopical && !f.set["query-topical"] && ql != nil {
		if p.QueryTopical, err = f.fitQueryTopical(p, ql); err != nil {
			return err
		}
	}
	if f.fitIdx != "" && f.fitTopics && !f.set["topic-spread"] {
		if p.TopicSpread, err = f.fitTopicSpread(p, ql); err != nil {
			return err
		}
	}
	start := time.Now()
	tp, err := gen.NewTopics(gen.TopicsConfig{Params: p, Seed: f.seed, Locality: f.locality, Log: ql, Workers: f.threads})
	if err != nil {
		return err
	}
	fp := tp.Params()
	fi := tp.Fit
	fmt.Fprintf(os.Stderr, "model topics: %s\n  fitted in %.1fs: alpha %.4g, zipf_s %.4g; sample: %.1f distinct terms/doc, %.1f fresh draws/doc; expected vocabulary %.0f; %d query terms placed (%d dropped, %d capped)\n",
		fp.Summary(), time.Since(start).Seconds(), fi.Alpha, fi.ZipfS, fi.SampleDistinct, fi.SampleFresh, fi.ExpectedVocab, fi.QueryTerms, fi.DroppedQueryTerms, fi.CappedQueryTerms)
	if f.paramsOut != "" {
		if err := gen.SaveParams(f.paramsOut, fp); err != nil {
			return err
		}
	}
	if f.out == "" && f.text == "" {
		return nil
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	bar := progress.New("generating", "docs", int64(fp.Docs))
	if f.quiet {
		bar.Quiet()
	}
	st, err := tp.Build(ctx, gen.BuildOptions{Text: f.text, Index: index.BuildOptions{
		Out: f.out, BlockSize: f.block, DocCodec: dc, FreqCodec: dc, Params: score.Default,
		MemBudget: budget, TempDir: f.tmp, Workers: f.threads,
		Meta: index.Meta{Source: fmt.Sprintf("qp gen --model topics --docs %d --seed %d --locality=%v", fp.Docs, f.seed, f.locality)},
		Progress: func(s index.BuildStats) {
			el := time.Since(start).Seconds()
			bar.Set(int64(s.Docs), fmt.Sprintf("%s docs/s, %s postings, %d runs", progress.Human(float64(s.Docs)/el), progress.Human(float64(s.Postings)), s.Runs))
		},
	}})
	if err != nil {
		return err
	}
	bar.Done("")
	f.printSummary(st, dc, time.Since(start).Seconds())
	if f.validate {
		return validateStandIn(os.Stdout, f.fitIdx, f.out, f.qfiles, f.valLimit, f.valGen, f.threads)
	}
	return nil
}

// printSummary prints the one-line summary of a topics build of el seconds.
func (f *genFlags) printSummary(st index.BuildStats, dc compress.Codec, el float64) {
	p64 := float64(st.Postings)
	fmt.Printf("generated %d documents (%.0f docs/s), ", st.Docs, float64(st.Docs)/el)
	if f.out != "" {
		fmt.Printf("%d terms, ", st.Terms)
	}
	fmt.Printf("%d postings, %d tokens in %.1fs", st.Postings, st.Tokens, el)
	if f.out != "" {
		fmt.Printf("; %s: %.3f bits/docID, %.3f bits/freq; %d spilled runs; wrote %s", dc.Name(), 8*float64(st.DocBytes)/p64, 8*float64(st.FreqBytes)/p64, st.Runs, f.out)
	}
	if f.text != "" {
		fmt.Printf("; wrote %s", f.text)
	}
	fmt.Println()
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
	n, produce := g.Lists()
	bar := progress.New("generating", "terms", int64(n))
	if quiet {
		bar.Quiet()
	}
	st, err := w.AddListsParallel(ctx, n, threads, produce, func(done int, s index.BuildStats) {
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
