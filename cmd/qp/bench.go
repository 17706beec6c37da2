package main

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/qpengine/qp"
	benchdecode "github.com/qpengine/qp/bench/decode"
	benchquery "github.com/qpengine/qp/bench/query"
	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/engine/gpu"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/report"
)

// benchExperiment is one named experiment of `qp bench`. Experiments
// register themselves (registerBench) from the file that implements them.
type benchExperiment struct {
	name, usage, summary string
	run                  func(c command, args []string) error
}

var benchExperiments []benchExperiment

// registerBench adds an experiment to `qp bench`; usage is its argument
// synopsis ("INDEX QUERIES") and summary the lines of its help entry.
func registerBench(name, usage, summary string, run func(c command, args []string) error) {
	for _, e := range benchExperiments {
		if e.name == name {
			panic("BUG: qp bench: experiment " + name + " registered twice")
		}
	}
	benchExperiments = append(benchExperiments, benchExperiment{name, usage, summary, run})
}

func benchHelp() string {
	var b strings.Builder
	b.WriteString("Usage: qp bench <experiment> [flags]\n\nExperiments:\n")
	sort.Slice(benchExperiments, func(i, j int) bool { return benchExperiments[i].name < benchExperiments[j].name })
	for _, e := range benchExperiments {
		head := "  " + e.name + " " + e.usage
		lines := strings.Split(strings.TrimSpace(e.summary), "\n")
		if len(head) < 26 {
			fmt.Fprintf(&b, "%-26s%s\n", head, lines[0])
		} else {
			fmt.Fprintf(&b, "%s\n%26s%s\n", head, "", lines[0])
		}
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "%26s%s\n", "", strings.TrimSpace(l))
		}
	}
	b.WriteString("\nRun 'qp bench <experiment> --help' for its flags.\n")
	return b.String()
}

func init() {
	registerBench("decode", "INDEX", `decode speed (integers/s) of every codec per list length
on the GPU and all CPU cores (bits/int, fraction of the
bandwidth bound, CSV, SVG plot), then on the index's own
lists re-encoded block by block, one core and all cores`, benchDecode)
	registerBench("query", "INDEX QUERIES", `queries/s and latency (mean, p50, p95, p99) of AND, OR
and AND+OR for every algorithm, single thread and all
cores (and the GPU with --device gpu|auto), on a query
log (qid:query or qid<TAB>query)`, benchQuery)
	registerBench("sched", "INDEX QUERIES", `Poisson replay: CPU only, GPU only, best-of-two, CPU+GPU
scheduler; delay per rate and highest sustained rate`, benchSched)
	c := command{name: "bench", args: "EXPERIMENT INDEX [QUERIES] [flags]", summary: "run a named experiment: decode speed, query throughput, scheduler, ..."}
	c.run = func(args []string) error {
		if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
			fmt.Fprint(os.Stderr, benchHelp())
			return nil
		}
		var names []string
		for _, e := range benchExperiments {
			if e.name == args[0] {
				return e.run(c, args[1:])
			}
			names = append(names, e.name)
		}
		sort.Strings(names)
		return fmt.Errorf("unknown experiment %q (one of: %s)", args[0], strings.Join(names, ", "))
	}
	register(c)
}

// benchDecode measures decoding speed two ways: per codec and list-length
// bin (2^10 .. 2^26 by default), synthetic lists decoded on the GPU
// (benchdecode.BenchDecode) and on all CPU cores (benchdecode.BenchDecodeCPU) with bits
// per integer and the fraction of the GPU's copy-bandwidth bound, as a
// table, a CSV and an SVG plot (issue #3); then the index's own lists,
// re-encoded block by block with each codec, decoded on one core and all
// cores (docIDs and frequencies, as the engine decodes them).
func benchDecode(c command, args []string) error {
	c.name = "bench decode"
	c.args = "INDEX [flags]"
	fs := newFlags(c, `Part 1, per codec and list length: lists of L docIDs drawn at density
L/2^27 (geometric d-gaps), cut into blocks of 128 and encoded as the index
encodes them, lists shorter than --batch batched per launch, decoded on the
GPU (kernel time, median of --reps launches) and on all CPU cores; prints
integers/s on each, bits per integer, and the fraction of the bandwidth
bound reached on the GPU (bytes read + written over the measured
device-to-device copy bandwidth). --csv and --plot save the results.

Part 2 (skipped with --postings 0): re-encodes the index's posting lists
with each codec (block by block, as 'qp index --codec' would) and measures
how fast they decode to absolute docIDs and frequencies on one core and on
all cores. Lists are sampled up to --postings postings in total.`)
	codecs := fs.String("codecs", "all", "codecs to measure ('all' or a comma-separated list)")
	device := fs.String("device", "auto", "part 1 on: gpu (GPU and CPU; fails without a GPU), cpu, or auto (the GPU when usable)")
	gpuOrd := fs.Int("gpu", 0, "GPU ordinal")
	lengthsFlag := fs.String("lengths", "2^10..2^26", "list lengths of part 1: A..B (powers of two from A to B) or a comma-separated list; 'none' skips part 1")
	batch := fs.String("batch", "2^22", "part 1: integers per launch at least (short lists are batched)")
	reps := fs.Int("reps", 20, "part 1: timed GPU launches per point (median)")
	cpuTime := fs.Duration("cpu-time", 100*time.Millisecond, "part 1: minimum CPU measuring time per point")
	modeFlag := fs.String("mode", "docs", "part 1: decode docs (absolute docIDs) or freqs")
	csvPath := fs.String("csv", "", "part 1: write every measurement as CSV to this file")
	plotPath := fs.String("plot", "", "part 1: write an SVG plot of integers/s against list length to this file")
	budget := fs.Int("postings", 20_000_000, "part 2: postings to sample from the index (0: skip part 2)")
	minTime := fs.Duration("time", time.Second, "part 2: minimum measuring time per codec and thread count")
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if err := guardOutputs(pos, *csvPath, *plotPath); err != nil {
		return err
	}
	x, err := index.Open(pos[0])
	if err != nil {
		return err
	}
	defer x.Close()
	list, err := parseCodecs(*codecs)
	if err != nil {
		return err
	}
	var lengths []int
	if *lengthsFlag != "none" {
		if lengths, err = parseLengths(*lengthsFlag); err != nil {
			return fmt.Errorf("--lengths: %w", err)
		}
	}
	batchInts, err := parsePow(*batch)
	if err != nil {
		return fmt.Errorf("--batch: %w", err)
	}
	var mode kern.Mode
	switch *modeFlag {
	case "docs":
		mode = kern.Docs
	case "freqs":
		mode = kern.Freqs
	default:
		return fmt.Errorf("--mode %q: docs or freqs", *modeFlag)
	}
	if len(lengths) > 0 {
		if err := benchDecodeLengths(list, lengths, *device, *gpuOrd, benchdecode.BenchOptions{BatchInts: batchInts, Reps: *reps, Mode: mode},
			*cpuTime, *csvPath, *plotPath); err != nil {
			return err
		}
	}
	if *budget <= 0 {
		return nil
	}
	return benchDecodeIndex(x, pos[0], list, *budget, *minTime)
}

// benchDecodeLengths is part 1 of benchDecode.
func benchDecodeLengths(list []compress.Codec, lengths []int, device string, ordinal int, opt benchdecode.BenchOptions,
	cpuTime time.Duration, csvPath, plotPath string) (err error) {
	var ctx *cuda.Context
	switch device {
	case "cpu":
	case "gpu", "auto":
		ok, why := cuda.Available()
		if !ok && device == "gpu" {
			return fmt.Errorf("--device gpu: %s", why)
		}
		if !ok {
			fmt.Printf("no usable GPU (%s): measuring the CPU only\n", why)
			break
		}
		if ctx, err = cuda.Open(ordinal); err != nil {
			return err
		}
		defer func() {
			if cerr := ctx.Close(); err == nil {
				err = cerr
			}
		}()
		if opt.CopyBW, err = benchdecode.MeasureCopyBandwidth(ctx, 512<<20); err != nil {
			return err
		}
		fmt.Printf("GPU %d: %s, %d SMs; device-to-device copy %.0f GB/s (read + written)\n", ordinal, ctx.Device().Name,
			ctx.Device().SMs, opt.CopyBW/1e9)
	default:
		return fmt.Errorf("--device %q: gpu, cpu or auto", device)
	}
	threads := runtime.GOMAXPROCS(0)
	fmt.Printf("CPU: %d threads (GOMAXPROCS); mode %v; lists of L drawn from 2^27 docIDs, at least %d integers per launch\n\n",
		threads, opt.Mode, opt.BatchInts)
	// Fixed-width rows (not a tabwriter): each codec's rows are printed as
	// soon as they are measured.
	if ctx != nil {
		fmt.Printf("%-14s %5s %6s %8s %10s %10s %8s %10s %7s\n", "codec", "L", "lists", "bits/int", "GPU Gint/s", "GPU 1 list", "of bound", "CPU Gint/s", "GPU/CPU")
	} else {
		fmt.Printf("%-14s %5s %6s %8s %10s\n", "codec", "L", "lists", "bits/int", "CPU Gint/s")
	}
	var all []benchdecode.DecodeResult
	best := map[string]map[int]float64{} // codec → length → GPU ints/s
	var labels []string
	record := func(label string, rs []benchdecode.DecodeResult) {
		if best[label] == nil {
			best[label] = map[int]float64{}
			labels = append(labels, label)
		}
		for _, r := range rs {
			best[label][r.Length] = r.IntsPerSec
		}
	}
	for _, cd := range list {
		var g []benchdecode.DecodeResult
		if ctx != nil {
			if !kern.Supported(cd.ID()) {
				fmt.Printf("%-14s (no GPU decoder)\n", cd.Name())
			} else if g, err = benchdecode.BenchDecode(ctx, cd, lengths, opt); err != nil {
				return err
			}
			record(cd.Name(), g)
		}
		cp, err := benchdecode.BenchDecodeCPU(cd, lengths, threads, cpuTime, opt)
		if err != nil {
			return err
		}
		for i, r := range cp {
			if ctx == nil {
				fmt.Printf("%-14s %5s %6d %8.2f %10.2f\n", cd.Name(), pow2(r.Length), r.Lists, r.BitsPerInt, r.IntsPerSec/1e9)
				continue
			}
			if i >= len(g) {
				continue
			}
			gr := g[i]
			fmt.Printf("%-14s %5s %6d %8.2f %10.1f %10.1f %8.2f %10.2f %6.0f×\n", cd.Name(), pow2(gr.Length), gr.Lists, gr.BitsPerInt,
				gr.IntsPerSec/1e9, gr.SingleIntsPerSec/1e9, gr.BandwidthFrac, r.IntsPerSec/1e9, gr.IntsPerSec/r.IntsPerSec)
		}
		all = append(all, g...)
		all = append(all, cp...)
	}
	if ctx != nil {
		// The targets of issue #3: long lists >= 300 G ints/s (BP128,
		// PForDelta) and 200 G (Elias-Fano, also below 2^26); batched 2^14
		// lists a third of that.
		fmt.Println()
		goals := map[string]float64{"bp128": 300e9, "pfordelta": 300e9, "eliasfano": 200e9}
		for _, label := range labels {
			goal, ok := goals[label]
			if !ok {
				continue
			}
			m := best[label]
			var longest int
			for l := range m {
				longest = max(longest, l)
			}
			line := fmt.Sprintf("target %-15s >= %3.0f G ints/s at %s: %6.1f %s", label, goal/1e9, pow2(longest), m[longest]/1e9, metStr(m[longest] >= goal))
			if v, ok := m[1<<24]; ok && longest > 1<<24 {
				line += fmt.Sprintf("; at 2^24: %6.1f %s", v/1e9, metStr(v >= goal))
			}
			if v, ok := m[1<<14]; ok {
				line += fmt.Sprintf("; 2^14 batched >= %3.0f: %6.1f %s", goal/3e9, v/1e9, metStr(v >= goal/3))
			}
			fmt.Println(line)
		}
	}
	fmt.Println()
	if csvPath != "" {
		f, err := os.Create(csvPath)
		if err != nil {
			return err
		}
		if err := benchdecode.WriteDecodeCSV(f, all); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if plotPath != "" {
		title := fmt.Sprintf("qp decode speed (%v), CPU %d threads", opt.Mode, threads)
		if ctx != nil {
			title = fmt.Sprintf("qp decode speed (%v): %s vs CPU %d threads", opt.Mode, ctx.Device().Name, threads)
		}
		f, err := os.Create(plotPath)
		if err != nil {
			return err
		}
		if err := benchdecode.WriteDecodeSVG(f, title, all); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return nil
}

func metStr(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// pow2 prints n as 2^k when it is a power of two.
func pow2(n int) string {
	if n > 0 && n&(n-1) == 0 {
		return fmt.Sprintf("2^%d", bits.TrailingZeros(uint(n)))
	}
	return strconv.Itoa(n)
}

// parsePow parses a positive integer written N or 2^K.
func parsePow(s string) (int, error) {
	s = strings.TrimSpace(s)
	if k, ok := strings.CutPrefix(s, "2^"); ok {
		e, err := strconv.Atoi(k)
		if err != nil || e < 0 || e > 40 {
			return 0, fmt.Errorf("bad power of two %q", s)
		}
		return 1 << e, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad count %q", s)
	}
	return n, nil
}

// parseLengths parses "A..B" (powers of two from A to B, A rounded up to a
// power of two) or a comma-separated list of lengths (N or 2^K).
func parseLengths(s string) ([]int, error) {
	if a, b, ok := strings.Cut(s, ".."); ok {
		lo, err := parsePow(a)
		if err != nil {
			return nil, err
		}
		hi, err := parsePow(b)
		if err != nil {
			return nil, err
		}
		if hi < lo {
			return nil, fmt.Errorf("empty range %q", s)
		}
		var ls []int
		for l := 1 << bits.Len(uint(lo-1)); l <= hi; l <<= 1 {
			ls = append(ls, l)
		}
		return ls, nil
	}
	var ls []int
	for _, f := range strings.Split(s, ",") {
		n, err := parsePow(f)
		if err != nil {
			return nil, err
		}
		ls = append(ls, n)
	}
	return ls, nil
}

// benchDecodeIndex prints part 2 of benchDecode (bench/decode): the
// index's own lists re-encoded with each codec.
func benchDecodeIndex(x *index.Index, path string, list []compress.Codec, budget int, minTime time.Duration) error {
	docs, freqs, total, err := benchdecode.Sample(x, budget)
	if err != nil {
		return err
	}
	fmt.Printf("index %s: %d lists sampled, %d postings; GOMAXPROCS %d\n\n", path, len(docs), total, runtime.GOMAXPROCS(0))
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "codec\tbits/docID\tbits/freq\tdocIDs/s 1 core\tdocIDs+freqs/s 1 core\tdocIDs+freqs/s %d cores\t\n", runtime.GOMAXPROCS(0))
	for _, cd := range list {
		rows, err := benchdecode.Run(x, docs, freqs, []compress.Codec{cd}, minTime)
		if err != nil {
			return err
		}
		r := rows[0]
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%s\t%s\t%s\t\n", r.Codec, r.BitsDoc, r.BitsTF, humanRate(r.Docs1), humanRate(r.Both1), humanRate(r.BothN))
	}
	return tw.Flush()
}

func humanRate(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2f G", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.1f M", v/1e6)
	}
	return fmt.Sprintf("%.0f", v)
}

// benchQuery runs a query log in every mode and algorithm.
func benchQuery(c command, args []string) error {
	c.name = "bench query"
	c.args = "INDEX QUERIES [flags]"
	fs := newFlags(c, `Runs the queries of a log (first --limit) in each mode (and, or, andor) with
each selected algorithm, single-threaded and on all cores, after one warm-up
pass, and prints queries/s, latency percentiles and the CPU µs per query
of the timed batch (the process's, getrusage). Results of every
algorithm are checked to be identical.`)
	qf := addQueryFlags(fs)
	modes := fs.String("modes", "and,or,andor", "modes to run")
	ands := fs.String("and-algos", "all", "AND algorithms ('all' or a list)")
	ors := fs.String("or-algos", "all", "OR strategies ('all' or a list)")
	limit := fs.Int("limit", 10000, "queries to run")
	threadsList := fs.String("thread-counts", "", "comma-separated worker counts (default: 1 and all cores)")
	thresholds := fs.String("thresholds", "", "GPU: comma-separated PARA batch thresholds c (postings of the queries'\nshortest lists per launch set; default: the backend's, 12M)")
	csvOut := fs.String("csv", "", "write every row (mode, algorithm, threads or GPU settings, queries/s,\nlatencies) to this CSV file")
	plotOut := fs.String("plot", "", "write an SVG plot of queries/s against the GPU PARA threshold c per\nmode (GPU rows), with the best CPU row of each mode as a dashed line")
	plotBM := fs.String("plot-bitmaps", "", "write an SVG plot of queries/s against --gpu-bitmaps' density per mode\nand threshold c (GPU rows), their rows without bitmaps and the best CPU\nrow of each mode as dashed lines: where the device bitmaps win")
	gpuOnly := fs.Bool("gpu-only", false, "GPU rows only, no CPU rows (for tuning runs; the GPU rows are then\nchecked identical to the first GPU row of their mode, not to the CPU)")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the whole measurement (every row, warm-up\npasses included: they repeat the timed work) to this new file (read it\nwith go tool pprof)")
	profile := fs.Bool("profile", false, "GPU: after each GPU row, run the batch again with CUDA events and\nprint where the GPU time went (decode, intersect, score, top-k,\ntransfers; Ding et al. WWW'09 Table 3)")
	pos, err := parseArgs(fs, args, 2)
	if err != nil {
		return err
	}
	if err := guardOutputs(pos, *csvOut, *plotOut, *plotBM, *cpuProfile); err != nil {
		return err
	}
	dev := *qf.device
	*qf.device = "cpu"
	ce, _, _, err := qf.openEngine(pos[0])
	if err != nil {
		return err
	}
	defer ce.Close()
	x, an := ce.Index(), ce.Analyzer()
	// With --device gpu or auto (and a usable GPU), GPU rows follow the CPU
	// rows of each mode, checked identical to them.
	var gpuBe engine.Backend
	if dev != "cpu" {
		*qf.device = dev
		o, err := qf.options()
		if err != nil {
			return err
		}
		ge, err := qp.New(x, o)
		if err != nil {
			return err
		}
		defer ge.Close()
		if err := qf.applyBitmaps(ge.GPU()); err != nil {
			return err
		}
		if ge.GPU() != nil {
			gpuBe = ge.GPU()
		}
	}
	fq, err := readQueryFile(pos[1], *limit)
	if err != nil {
		return err
	}
	gb, _ := gpuBe.(*gpu.Backend)
	if *gpuOnly && gb == nil {
		return fmt.Errorf("--gpu-only: no GPU to run on (--device gpu)")
	}
	if *plotBM != "" && gb == nil {
		return fmt.Errorf("--plot-bitmaps draws the GPU rows against the bitmap density: it needs a GPU (--device gpu)")
	}
	if *plotOut != "" && gb == nil {
		return fmt.Errorf("--plot draws the GPU rows against the threshold: it needs a GPU (--device gpu)")
	}
	var counts []int
	for _, s := range splitComma(*threadsList) {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n < 1 {
			return fmt.Errorf("--thread-counts: bad count %q", s)
		}
		counts = append(counts, n)
	}
	var modeList []engine.Mode
	for _, s := range splitComma(*modes) {
		mode, err := engine.ParseMode(s)
		if err != nil {
			return err
		}
		modeList = append(modeList, mode)
	}
	cfg := benchquery.Config{Modes: modeList, AndAlgos: pickNames(*ands, engine.AndAlgorithms),
		OrAlgos: pickNames(*ors, engine.OrStrategies), ThreadCounts: counts, GPUOnly: *gpuOnly, Profile: *profile,
		Queries: func(m engine.Mode) []engine.Query { return qf.analyzeQueries(an, fq, m) }}
	if err := qf.gpuRows(&cfg, gb, *thresholds); err != nil {
		return err
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	fmt.Printf("index %s: %d docs, %d terms; %d queries from %s; k=%d\n", pos[0], x.NumDocs(), x.NumTerms(), len(fq), pos[1], *qf.k)
	if gb != nil {
		bs := gb.Bitmaps()
		fmt.Printf("gpu: %d device bitmaps (%.2f GiB), %d in use at the first density\n", bs.Lists, float64(bs.Bytes)/(1<<30), bs.InUse)
	}
	fmt.Println()
	// Rows are printed as they are measured (fixed widths, no tabwriter).
	row := "%-6s %-22s %7s %10s %9s %9s %9s %9s %13s %6s %9s\n"
	fmt.Printf(row, "mode", "algorithm", "threads", "queries/s", "mean ms", "p50 ms", "p95 ms", "p99 ms", "results/query", "failed", "cpu µs/q")
	pr := &queryRowPrinter{format: row, nq: len(fq)}
	cfg.OnRow = pr.row
	rows, err := benchquery.Run(ctx, x, cfg)
	pr.flush()
	if err != nil {
		return err
	}
	if *csvOut != "" {
		if err := report.WriteCSVFile(*csvOut, benchquery.CSVHeader, benchquery.CSVRows(rows)); err != nil {
			return err
		}
	}
	if *plotBM != "" {
		if err := writePlot(*plotBM)(benchquery.BitmapPlot(rows, x.NumDocs(), len(fq), *qf.k)); err != nil {
			return err
		}
	}
	if *plotOut != "" {
		if err := writePlot(*plotOut)(benchquery.ThresholdPlot(rows, x.NumDocs(), len(fq), *qf.k)); err != nil {
			return err
		}
	}
	return nil
}

// gpuRows fills cfg's GPU settings from the flags (--thresholds and the
// GPU query flags, each a list: one row per combination) when gb is a GPU.
// The lists are validated even without a GPU.
func (qf *queryFlags) gpuRows(cfg *benchquery.Config, gb *gpu.Backend, thresholds string) error {
	cs, err := parseThresholds("thresholds", thresholds)
	if err != nil {
		return err
	}
	ots, err := parseThresholds("gpu-or-threshold", *qf.gpuOrThreshold)
	if err != nil {
		return err
	}
	bms, err := densitySettings("gpu-bitmaps", splitComma(*qf.gpuBitmaps))
	if err != nil {
		return err
	}
	obms, err := densitySettings("gpu-or-bitmaps", splitComma(*qf.gpuOrBitmaps))
	if err != nil || gb == nil {
		return err
	}
	cfg.GPU, cfg.Thresholds, cfg.OrThresholds, cfg.Bitmaps, cfg.OrBitmaps = gb, cs, ots, bms, obms
	cfg.AndSearch, cfg.OrStrategy = splitComma(*qf.gpuAnd), splitComma(*qf.gpuOr)
	return nil // empty lists: the backend's settings (benchquery.Config)
}

// queryRowPrinter prints bench query's rows as they are measured and, with
// --profile, each mode's GPU time split after its rows.
type queryRowPrinter struct {
	format   string
	nq       int
	splits   []string
	lastMode engine.Mode
}

func (p *queryRowPrinter) row(qr benchquery.Row) {
	if qr.Mode != p.lastMode {
		p.flush()
		p.lastMode = qr.Mode
	}
	fmt.Printf(p.format, qr.Mode, qr.Name, qr.Threads, fmt.Sprintf("%.0f", qr.QPS), fmt.Sprintf("%.3f", qr.Mean),
		fmt.Sprintf("%.3f", qr.P50), fmt.Sprintf("%.3f", qr.P95), fmt.Sprintf("%.3f", qr.P99),
		fmt.Sprintf("%.2f", qr.Results), fmt.Sprint(qr.Failed), cpuPerQuery(qr.CPUPerQuery))
	if sp := qr.Profile; sp != nil {
		p.splits = append(p.splits, fmt.Sprintf(splitRow, qr.Mode, qr.Name, sp.Sets, sp.Launches, ms(sp.Wall), ms(sp.Decode),
			ms(sp.Intersect), ms(sp.Score), ms(sp.TopK), ms(sp.Transfer)))
		p.splits = append(p.splits, fmt.Sprintf("%-6s %-22s host: %s\n", "", "", profileLine(gpu.Profile{}, *sp)))
		if sp.BitmapAndQueries > 0 {
			p.splits = append(p.splits, fmt.Sprintf("%-6s %-22s AND queries by the bitmap AND: %d\n", qr.Mode, qr.Name, sp.BitmapAndQueries))
		}
		if sp.OrTiles > 0 {
			p.splits = append(p.splits, fmt.Sprintf("%-6s %-22s OR tiles accumulated: %d of %d (%.1f%%), %d of them selected a k-th key, %d emitted; blocks decoded by tiles: %d, skipped by their maxima: %d; documents completed from device bitmaps: %d\n",
				"", "", sp.OrTilesRun, sp.OrTiles, 100*float64(sp.OrTilesRun)/float64(sp.OrTiles), sp.OrSelected, sp.OrEmitted, sp.OrBlocks, sp.OrSkipped, sp.OrLookups))
		}
		if sp.OrPreLists > 0 {
			p.splits = append(p.splits, fmt.Sprintf("%-6s %-22s OR lists pre-decoded once per launch (fewer blocks than tiles): %d, their blocks: %d\n",
				"", "", sp.OrPreLists, sp.OrPreBlocks))
		}
		if sp.OrWholeQueries > 0 {
			p.splits = append(p.splits, fmt.Sprintf("%-6s %-22s OR queries answered whole (one CTA each, no tiles): %d, blocks they decoded: %d\n",
				"", "", sp.OrWholeQueries, sp.OrWholeBlocks))
		}
		if sp.OrMSQueries > 0 {
			p.splits = append(p.splits, fmt.Sprintf("%-6s %-22s OR MaxScore: %d queries routed, %d answered by the shortest list; %d later passes (query x pass), %d queries answered by them; the rest on the tiles; candidates %d, %.1f%% dropped by their bounds\n",
				"", "", sp.OrMSQueries, sp.OrMSCertified, sp.OrMSSecond, sp.OrMSCertified2, sp.OrMSCandidates,
				100*(1-float64(sp.OrMSKept)/float64(max(sp.OrMSCandidates, 1)))))
		}
	}
}

// cpuPerQuery prints a row's CPU µs per query ("-" where unknown).
func cpuPerQuery(us float64) string {
	if us <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", us)
}

// flush prints the splits collected for the last mode.
func (p *queryRowPrinter) flush() {
	if len(p.splits) > 0 {
		printSplits(p.splits, p.nq)
		p.splits = nil
	}
}

// printSplits prints the GPU time split of a mode's rows (--profile).
func printSplits(splits []string, nq int) {
	fmt.Printf("\nGPU time split per batch of %d queries (ms; CUDA events; spans include time the GPU waits for launches):\n", nq)
	fmt.Printf(strings.ReplaceAll(splitRow, ".2f", "s"), "mode", "config", "sets", "launches", "wall", "decode", "intersect", "score", "top-k", "transfer")
	for _, l := range splits {
		fmt.Print(l)
	}
	fmt.Println()
}

// densitySettings parses --gpu-bitmaps values ("" keeps the backend's).
func densitySettings(flag string, names []string) ([]benchquery.Density, error) {
	out := make([]benchquery.Density, len(names))
	for i, n := range names {
		out[i].Name = n
		if n == "" {
			continue
		}
		d, err := parseDensity(flag, n)
		if err != nil {
			return nil, err
		}
		out[i].D = d
	}
	return out, nil
}

// writePlot returns a function that writes a plot's SVG to path, or
// returns the error of building the plot.
func writePlot(path string) func(p *report.Plot, err error) error {
	return func(p *report.Plot, err error) error {
		if err != nil {
			return err
		}
		svg, err := p.SVG()
		if err != nil {
			return err
		}
		return os.WriteFile(path, svg, 0o644)
	}
}

const splitRow = "%-6s %-22s %5v %8v %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n"

// parseCount reads a count with an optional binary suffix: 64K = 65536,
// 1M = 1<<20, 1G = 1<<30.
func parseCount(s string) (int, error) {
	mul := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mul, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mul, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	return n * mul, nil
}

// parseThreshold parses the value of a GPU batch threshold flag: a count
// of at least 1.
func parseThreshold(flag, s string) (int, error) {
	n, err := parseCount(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("--%s: bad threshold %q (a count like 65536, 64K, 1M or 1G)", flag, s)
	}
	return n, nil
}

// parseThresholds parses a comma-separated list of thresholds.
func parseThresholds(flag, list string) ([]int, error) { return parseList(flag, list, parseThreshold) }

// parseList parses a comma-separated list of a flag's values.
func parseList[T any](flag, list string, parse func(flag, s string) (T, error)) ([]T, error) {
	var out []T
	for _, s := range splitComma(list) {
		v, err := parse(flag, s)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// parseDensity parses a list density for --gpu-bitmaps: off (-1), a
// fraction (1/128), a power of two (2^-7) or a decimal in (0, 1].
func parseDensity(flag, s string) (float64, error) {
	bad := fmt.Errorf("--%s: bad density %q (off, or a fraction of the documents in (0, 1] like 1/128, 2^-7 or 0.0078)", flag, s)
	var d float64
	var a, b int
	switch {
	case s == "off":
		return -1, nil
	case strings.HasPrefix(s, "2^-"):
		if _, err := fmt.Sscanf(s, "2^-%d", &a); err != nil || a < 0 || a > 40 || fmt.Sprintf("2^-%d", a) != s {
			return 0, bad
		}
		d = math.Ldexp(1, -a)
	case strings.Contains(s, "/"):
		if _, err := fmt.Sscanf(s, "%d/%d", &a, &b); err != nil || a < 1 || b < 1 || fmt.Sprintf("%d/%d", a, b) != s {
			return 0, bad
		}
		d = float64(a) / float64(b)
	default:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, bad
		}
		d = v
	}
	if !(d > 0 && d <= 1) {
		return 0, bad
	}
	return d, nil
}

// parseDensities parses a comma-separated list of densities.
func parseDensities(flag, list string) ([]float64, error) { return parseList(flag, list, parseDensity) }

func pickNames[T ~string](spec string, all []T) []T {
	if spec == "all" || spec == "" {
		return all
	}
	var out []T
	for _, s := range splitComma(spec) {
		out = append(out, T(s))
	}
	return out
}
