package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/engine/gpu"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/internal/fileguard"
	"github.com/qpengine/qp/report"
	"github.com/qpengine/qp/score"
	"github.com/qpengine/qp/topk"
)

// queryFlags are the flags shared by query and bench query.
type queryFlags struct {
	mode, andAlgo, orAlgo, device *string
	gpuAnd, gpuOr, gpuThreshold   *string
	gpuOrThreshold, gpuBitmaps    *string
	gpuOrBitmaps, gpuBitmapBytes  *string
	k, threads                    *int
	gpuBitmapAnd                  *triFlag
	k1, b                         *float64
	qtf, autoSplit                *bool
	autoProfile                   *string
	// quiet (set by commands with --quiet) suppresses the CPU-fallback
	// notice.
	quiet bool
	// beside, when not nil, runs while the processor opens
	// (qp.Options.Beside).
	beside func(*index.Index)
}

func addQueryFlags(fs interface {
	String(string, string, string) *string
	Int(string, int, string) *int
	Float64(string, float64, string) *float64
	Bool(string, bool, string) *bool
	Var(flag.Value, string, string)
}) *queryFlags {
	return &queryFlags{
		mode:           fs.String("mode", "and", "and, or, or andor (AND; OR when AND finds fewer than k)"),
		k:              fs.Int("k", 10, "results per query (1..10000)"),
		andAlgo:        fs.String("and-algo", string(engine.DefaultAnd), "AND algorithm: merge, galloping or skip"),
		orAlgo:         fs.String("or-algo", string(engine.DefaultOr), "OR strategy: taat, daat, maxscore or bmw"),
		device:         fs.String("device", "auto", "cpu, gpu or auto"),
		autoSplit:      fs.Bool("auto-split", true, "device auto: once both processors are measured, run each large batch\n(8192 queries or more) on the CPU and the GPU at once, split by their\nmeasured speeds; false: each batch on the faster one alone. A --queries\nstream runs each chunk on one processor's own stream either way"),
		autoProfile:    fs.String("auto-profile", "", "device auto: the routing profile, where a --queries stream's measured\nspeeds (per mode and query class) are kept, keyed by the index file, the\nbinary, the host's cores and the GPU: a repeat run starts on the recorded\nfaster processor without a race (re-raced when its margin is under 1.3x\nand every 8th run); default: the user's cache dir, qp/auto-profile.json;\noff: none"),
		threads:        fs.Int("threads", 0, "CPU worker threads (0 = all cores)"),
		k1:             fs.Float64("k1", -1, "BM25 k1 (default: the index's, 0.9)"),
		b:              fs.Float64("b", -1, "BM25 b (default: the index's, 0.4)"),
		qtf:            fs.Bool("qtf", false, "count a repeated query term once per occurrence (Lucene/Anserini); default: once"),
		gpuAnd:         fs.String("gpu-and", "binsearch", "GPU: how AND steps find candidate blocks: binsearch, lr (binary search\nin the Linear Regression range of the skip table) or pmf1..pmf4 (Parallel\nMerge Find with 1-4 levels); bench query: a list, one row each"),
		gpuOr:          fs.String("gpu-or", gpu.OrTiled, "GPU: OR strategy: tiled (shared-memory tiles, block-max bounds,\nthreshold), dense (one accumulator of N floats per query) or maxscore\n(MaxScore over the shortest list where it is short, tiles for the rest);\nbench query: a list, one row each"),
		gpuThreshold:   fs.String("gpu-threshold", "", "GPU: PARA batch threshold c, postings of the queries' shortest lists\nper launch set (e.g. 4M; default 12M: more queries per launch, more\nthroughput, longer batches)"),
		gpuBitmaps:     fs.String("gpu-bitmaps", "", "GPU: lists of at least this density (df/N: 1/128, 2^-7, 0.0078)\nalso get a device bitmap: AND filters its candidates by them and scores\nthem by rank; OR (bp128) decodes only the sparser terms where the\ndensest ones' maxima are below its threshold and adds those by rank\n(default 1/128); off: none; bench query: a list, one row each"),
		gpuOrBitmaps:   fs.String("gpu-or-bitmaps", "", "GPU OR: use the device bitmaps of lists of at least this density\n(df/N; default: --gpu-bitmaps' density; off: none; only lists that have\none, i.e. of at least the lowest --gpu-bitmaps density); bench query: a\nlist, one row each"),
		gpuBitmapBytes: fs.String("gpu-bitmap-bytes", "", "GPU: device memory for the bitmaps of --gpu-bitmaps (a size: 512M, 6G;\ndefault 12G and at most 1/4 of the free memory; when set, at most 1/2):\nthe densest lists get theirs first; every list of density 2^-7 takes\n4.4G at 10M documents, 11G at 25M"),
		gpuBitmapAnd:   triVar(fs, "gpu-bitmap-and", "GPU: run the AND queries whose every list has a device bitmap (see\n--gpu-bitmaps, --gpu-bitmap-bytes) by the word-wise AND of their bitmaps\ninstead of decoding their shortest list (bp128 indexes; same results):\non, off, or auto (the default: on for indexes of at least 1,048,576\ndocuments, where it measured faster); the flag alone means on"),
		gpuOrThreshold: fs.String("gpu-or-threshold", "", "GPU: OR batch threshold, the OR work per launch set: postings of all\nlists of the OR and AND+OR queries plus 2048 per tile of 8192 documents\nthey touch (e.g. 512M; default 1G: OR batches under 10 ms at p99 on\n10M documents); a set closes at whichever threshold it reaches first;\nbench query: a list, one row each"),
	}
}

// validate checks the numeric flags: --threads >= 0, --k1 finite >= 0 and
// 0 <= --b <= 1, or -1 (their default: the index's parameters), and
// --gpu-bitmap-bytes (a positive size) whatever the device.
func (qf *queryFlags) validate() error {
	if *qf.threads < 0 {
		return fmt.Errorf("--threads %d: want 0 (all cores) or a positive count", *qf.threads)
	}
	if v := *qf.k1; v != -1 && (!(v >= 0) || math.IsInf(v, 0)) {
		return fmt.Errorf("--k1 %v: want a finite value >= 0 (or -1: the index's)", v)
	}
	if v := *qf.b; v != -1 && !(v >= 0 && v <= 1) {
		return fmt.Errorf("--b %v: want 0 <= b <= 1 (or -1: the index's)", v)
	}
	if s := *qf.gpuBitmapBytes; s != "" {
		if _, err := parseBitmapBytes(s); err != nil {
			return err
		}
	}
	return nil
}

// openEngine opens the index with the processor the flags name (qp.Open: the
// analyzer from the index, BM25 parameters, device choice and CPU fallback)
// and resolves the query mode and algorithms.
func (qf *queryFlags) openEngine(path string) (*qp.Engine, engine.Mode, engine.Options, error) {
	var zero engine.Options
	mode, err := engine.ParseMode(*qf.mode)
	if err != nil {
		return nil, 0, zero, err
	}
	opt, err := engine.Options{AndAlgo: engine.AndAlgorithm(*qf.andAlgo), OrAlgo: engine.OrStrategy(*qf.orAlgo)}.Resolve()
	if err != nil {
		return nil, 0, zero, err
	}
	if *qf.k < 1 || *qf.k > topk.MaxK {
		return nil, 0, zero, fmt.Errorf("-k %d out of range 1..%d", *qf.k, topk.MaxK)
	}
	if err := qf.validate(); err != nil {
		return nil, 0, zero, err
	}
	o, err := qf.options()
	if err != nil {
		return nil, 0, zero, err
	}
	e, err := qp.Open(path, o)
	if err != nil {
		return nil, 0, zero, err
	}
	if err := qf.applyBitmaps(e.GPU()); err != nil {
		e.Close()
		return nil, 0, zero, err
	}
	return e, mode, opt, nil
}

// options translates the flags into qp.Options. The GPU's bitmap density is
// the lowest of a bench list (it builds the bitmaps every row needs).
func (qf *queryFlags) options() (qp.Options, error) {
	dev, err := qp.ParseDevice(*qf.device)
	if err != nil {
		return qp.Options{}, fmt.Errorf("--%w", err)
	}
	o := qp.Options{Device: dev, Threads: *qf.threads, Notice: func(line string) { deviceNotice(line, qf.quiet) }, Beside: qf.beside,
		NoSplit: !*qf.autoSplit}
	switch p := *qf.autoProfile; p {
	case "off":
	case "":
		o.AutoProfile = qp.DefaultProfilePath()
	default:
		o.AutoProfile = p
	}
	if o.AutoProfile != "" {
		// The profile's notices (ignored, stale, not written) are not the
		// device's once-per-process line.
		o.Notice = func(line string) {
			if strings.HasPrefix(line, "qp: auto profile") {
				if !qf.quiet {
					fmt.Fprintln(stderr, line)
				}
				return
			}
			deviceNotice(line, qf.quiet)
		}
	}
	if *qf.k1 >= 0 || *qf.b >= 0 {
		o.Params = &score.Params{K1: *qf.k1, B: *qf.b} // negative: the index's, filled by qp.Open
	}
	if dev == qp.CPU {
		return o, nil
	}
	g := &o.GPU
	if *qf.gpuThreshold != "" {
		if g.Threshold, err = parseThreshold("gpu-threshold", *qf.gpuThreshold); err != nil {
			return o, err
		}
	}
	if s := firstOf(*qf.gpuOrThreshold); s != "" {
		ot, err := parseThreshold("gpu-or-threshold", s)
		if err != nil {
			return o, err
		}
		g.OrThreshold = int64(ot)
	}
	ds, err := parseDensities("gpu-bitmaps", *qf.gpuBitmaps)
	if err != nil {
		return o, err
	}
	if len(ds) > 0 {
		g.BitmapDensity = -1 // off unless a density is positive
	}
	for _, d := range ds {
		if d > 0 && (g.BitmapDensity < 0 || d < g.BitmapDensity) {
			g.BitmapDensity = d
		}
	}
	if s := firstOf(*qf.gpuOrBitmaps); s != "" {
		if g.OrBitmapDensity, err = parseDensity("gpu-or-bitmaps", s); err != nil {
			return o, err
		}
	}
	if *qf.gpuBitmapBytes != "" {
		if g.BitmapBytes, err = parseBitmapBytes(*qf.gpuBitmapBytes); err != nil {
			return o, err
		}
	}
	g.AndSearch, g.Or = firstOf(*qf.gpuAnd), firstOf(*qf.gpuOr)
	g.BitmapAnd = gpuBitmapAnd(*qf.gpuBitmapAnd)
	return o, nil
}

// gpuBitmapAnd maps --gpu-bitmap-and to the GPU's option (auto: the
// backend's own rule by the index's size, gpu.BitmapAndMinDocs).
func gpuBitmapAnd(v triFlag) gpu.BitmapAndMode {
	switch v {
	case triOn:
		return gpu.BitmapAndOn
	case triOff:
		return gpu.BitmapAndOff
	}
	return gpu.BitmapAndAuto
}

// parseBitmapBytes parses --gpu-bitmap-bytes: a positive size (parseSize:
// 512M, 6G, 6GiB) of at most 1T.
func parseBitmapBytes(s string) (int64, error) {
	v, err := parseSize(s)
	if err != nil || v < 1 || v > 1<<40 {
		return 0, fmt.Errorf("--gpu-bitmap-bytes: bad size %q (a positive size up to 1T, like 512M or 6G)", s)
	}
	return v, nil
}

// applyBitmaps sets the GPU's bitmap density to the first of --gpu-bitmaps'
// list (the bitmaps of the lowest were built at open).
func (qf *queryFlags) applyBitmaps(b *gpu.Backend) error {
	if b == nil {
		return nil
	}
	ds, err := parseDensities("gpu-bitmaps", *qf.gpuBitmaps)
	if err != nil || len(ds) == 0 {
		return err
	}
	return b.SetBitmapDensity(ds[0])
}

// stderr is where notices go (a variable for tests).
var stderr io.Writer = os.Stderr

var noticeOnce sync.Once

// deviceNotice prints qp.Open's line about the processor in use (the GPU,
// or why --device auto falls back to the CPU): once per process (the demo
// opens four indexes), and never when quiet.
func deviceNotice(line string, quiet bool) {
	if quiet {
		return
	}
	noticeOnce.Do(func() { fmt.Fprintln(stderr, line) })
}

// firstOf returns the first of a comma-separated list (bench commands take
// lists where query commands take one value).
func firstOf(list string) string {
	if l := splitComma(list); len(l) > 0 {
		return l[0]
	}
	return ""
}

// analyzeQueries turns query-file lines into engine queries.
func (qf *queryFlags) analyzeQueries(an *analysis.Analyzer, qs []eval.Query, mode engine.Mode) []engine.Query {
	out := make([]engine.Query, len(qs))
	for i, q := range qs {
		out[i] = engine.Query{ID: q.ID, Terms: an.Tokens(q.Text), Mode: mode, K: *qf.k, QTF: *qf.qtf}
	}
	return out
}

// readQueryFile is eval.ReadQueryFile (kept for the callers in cmd/qp,
// sched.go among them).
func readQueryFile(path string, limit int) ([]eval.Query, error) {
	return eval.ReadQueryFile(path, limit)
}

// batchSummary accumulates per-query latencies and outcomes.
type batchSummary struct {
	lat     []time.Duration
	errs    map[string]int
	first   []string
	failed  []string // the first maxFailedIDs qids that failed
	nfailed int
	results int
	orRan   int
}

func (s *batchSummary) add(q engine.Query, r *engine.Response) {
	if r.Err != nil {
		if s.errs == nil {
			s.errs = map[string]int{}
		}
		key := r.Err.Error()
		if i := strings.Index(key, ":"); i > 0 && errors.Is(r.Err, engine.ErrEmptyQuery) {
			key = key[:i]
		}
		s.errs[key]++
		if s.nfailed++; len(s.failed) < maxFailedIDs {
			s.failed = append(s.failed, q.ID)
		}
		if len(s.first) < 5 {
			s.first = append(s.first, fmt.Sprintf("query %s: %v", q.ID, r.Err))
		}
		return
	}
	s.lat = append(s.lat, r.Stats.Time)
	s.results += len(r.Results)
	if r.Stats.OrAlgo != "" {
		s.orRan++
	}
}

// checkRunOutput refuses a run file that is the index or the query file,
// and checks that it can be created, before any query runs.
func checkRunOutput(run, idx, queries string) error {
	outs := []fileguard.Output{{Path: run}}
	if err := fileguard.Check(outs, "index", idx); err != nil {
		return fmt.Errorf("--run: %w", err)
	}
	if queries != "" {
		if err := fileguard.Check(outs, "query file", queries); err != nil {
			return fmt.Errorf("--run: %w", err)
		}
	}
	if err := fileguard.Creatable(run); err != nil {
		return fmt.Errorf("--run: %w", err)
	}
	return nil
}

// maxFailedIDs bounds the failed qids that an error names.
const maxFailedIDs = 10

// failure returns nil when every query succeeded, else an error naming the
// failed qids (the first maxFailedIDs and a count).
func (s *batchSummary) failure(n int) error {
	if s.nfailed == 0 {
		return nil
	}
	ids := strings.Join(s.failed, ", ")
	if s.nfailed > len(s.failed) {
		ids += fmt.Sprintf(", ... (%d more)", s.nfailed-len(s.failed))
	}
	return fmt.Errorf("%d of %d queries failed (qids %s); the run lacks them (--allow-partial accepts a partial run)", s.nfailed, n, ids)
}

func (s *batchSummary) print(n int, wall time.Duration) { s.printTo(os.Stdout, n, wall) }

func (s *batchSummary) printTo(w *os.File, n int, wall time.Duration) {
	sort.Slice(s.lat, func(i, j int) bool { return s.lat[i] < s.lat[j] })
	var sum time.Duration
	for _, l := range s.lat {
		sum += l
	}
	ok := len(s.lat)
	mean := time.Duration(0)
	if ok > 0 {
		mean = sum / time.Duration(ok)
	}
	fmt.Fprintf(w, "queries %d (ok %d, failed %d) in %.3fs: %.1f queries/s\n", n, ok, n-ok, wall.Seconds(), float64(n)/wall.Seconds())
	fmt.Fprintf(w, "latency ms: mean %.3f  p50 %.3f  p95 %.3f  p99 %.3f  max %.3f\n",
		ms(mean), ms(report.Percentile(s.lat, .50)), ms(report.Percentile(s.lat, .95)), ms(report.Percentile(s.lat, .99)), ms(report.Percentile(s.lat, 1)))
	fmt.Fprintf(w, "results %d (%.2f per query)", s.results, float64(s.results)/float64(max(ok, 1)))
	if s.orRan > 0 {
		fmt.Fprintf(w, "; OR ran for %d queries", s.orRan)
	}
	fmt.Fprintln(w)
	for k, v := range s.errs {
		fmt.Fprintf(w, "failed: %d × %s\n", v, k)
	}
	for _, f := range s.first {
		fmt.Fprintln(os.Stderr, "  "+f)
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// queryHelp is qp query's description (before its flags).
const queryHelp = `Runs one query given as text, or every query of a file (lines "qid:query" or
"qid<TAB>query", as the TREC efficiency logs and the test collections' topics),
writing a TREC run file (qid Q0 docid rank score qp) and a summary with
queries/s and latency percentiles. Query text is tokenized like the index's
documents; a term that occurs twice counts once. AND needs every term (an
unknown term gives no results); OR ignores unknown terms; AND+OR runs AND and
falls back to OR when AND finds fewer than k documents. Results are sorted by
BM25 score (k1=0.9, b=0.4 unless changed), ties by ascending docID. Scores
print with 6 significant digits.`

func init() {
	c := command{name: "query", args: "INDEX [flags] [\"query text\" | --queries FILE --run RUN]", summary: "run top-k BM25 AND / OR / AND+OR queries (one, or a batch from a file)"}
	c.run = func(args []string) error {
		fs := newFlags(c, queryHelp)
		qf := addQueryFlags(fs)
		queries := fs.String("queries", "", "file of queries to run as a batch")
		run := fs.String("run", "", "TREC run file to write (batch mode; default: standard output)")
		tag := fs.String("tag", "qp", "run tag")
		limit := fs.Int("limit", 0, "run only the first N queries of the file")
		quiet := fs.Bool("quiet", false, "no progress output, and no notice of a CPU fallback (--device auto)")
		allowPartial := fs.Bool("allow-partial", false, "batch mode: exit 0 even when some queries fail (e.g. empty after\ntokenizing: only stop words); they are counted, named on standard error\nand missing from the run; default: exit 1 naming them")
		chunk := fs.Int("chunk", qp.DefaultChunk, "batch mode: queries handed to the processor at once (the GPU forms its\nlaunch sets within a chunk; the run of one chunk is written while the\nnext runs)")
		server := fs.String("server", "", "send the queries to a qp server at this URL (qp serve; e.g.\nhttp://127.0.0.1:8080) instead of opening an index: the same output;\nthe index argument is left out, and the server's flags rule the processor")
		cacheSize := fs.String("cache", "", "batch mode: keep results in a result cache of this size (e.g. 64M;\nkeyed by normalized query, mode and k) and report its hit rate")
		stats := fs.Bool("stats", false, "batch mode: print the run's timeline on standard error (open, reading and\nanalyzing the queries, each chunk's search and output, idle gaps, GC, the\nstream's CPU time) and its rates: the cold total from process start, the\nstream, the steady state after the first chunk")
		cpuProfile := fs.String("cpuprofile", "", "batch mode: write a Go CPU profile of the stream (its first query to its\nlast run line: the search and the run's output) to this new file (read it\nwith go tool pprof)")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		qf.quiet = *quiet
		var tl batchTimeline
		var tune queryTune
		if *limit < 0 {
			return fmt.Errorf("--limit %d: want 0 (all queries) or a positive count", *limit)
		}
		if *server != "" {
			if (len(pos) == 0) == (*queries == "") {
				fs.Usage()
				return errUsage
			}
			ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			return queryServer(ctx, *server, qf, pos, *queries, *run, *tag, *limit, *allowPartial)
		}
		if len(pos) < 1 || (len(pos) == 1 && *queries == "") || (len(pos) > 1 && *queries != "") {
			fs.Usage()
			return errUsage
		}
		if *run != "" {
			if err := checkRunOutput(*run, pos[0], *queries); err != nil {
				return err
			}
		}
		if *cpuProfile != "" {
			if *queries == "" || *server != "" {
				return fmt.Errorf("--cpuprofile profiles a batch (--queries FILE) run here, not one query or a server's")
			}
			if err := guardOutputs(append([]string{*queries, *run}, pos...), *cpuProfile); err != nil {
				return err
			}
		}
		if *queries != "" {
			if *chunk < 1 {
				return fmt.Errorf("--chunk %d: want at least 1 query", *chunk)
			}
			if tune, err = tuneFromEnv(); err != nil {
				return err
			}
			if tune.noSplit {
				*qf.autoSplit = false
			}
		}
		var early *loadedQueries
		if *queries != "" && tune.early {
			mode, err := engine.ParseMode(*qf.mode)
			if err != nil {
				return err
			}
			qf.beside = qf.besideOpen(&early, *queries, *limit, mode, tune.parAnalyze)
		}
		t0 := time.Now()
		e, mode, opt, err := qf.openEngine(pos[0])
		if err != nil {
			return err
		}
		defer e.Close()
		tl.open = time.Since(t0)
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer cancel()
		if *queries == "" {
			text := strings.Join(pos[1:], " ")
			res, err := e.SearchWith(ctx, qp.Request{ID: "1", Text: text, Mode: mode, K: *qf.k, QTF: *qf.qtf}, opt)
			if err != nil {
				return err
			}
			for i, h := range res.Hits {
				fmt.Printf("%4d  %-24s %s\n", i+1, h.DocID, eval.FormatScore(float64(h.Score)))
			}
			st := res.Stats
			fmt.Fprintf(os.Stderr, "%d results in %.3f ms (terms %d, blocks decoded %d, candidates %d, and=%s or=%s, bitmap terms %d)\n",
				len(res.Hits), ms(st.Time), st.Terms, st.BlocksDecoded, st.Candidates, st.AndAlgo, st.OrAlgo,
				st.AndBitmaps+st.OrBitmaps)
			return nil
		}
		return qf.runBatch(ctx, e, mode, opt, batchArgs{queries: *queries, run: *run, tag: *tag, cacheSize: *cacheSize,
			limit: *limit, chunk: *chunk, quiet: *quiet, allowPartial: *allowPartial, stats: *stats, tune: tune, early: early,
			cpuProfile: *cpuProfile}, &tl)
	}
	register(c)
}
