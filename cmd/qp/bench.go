package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
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
	registerBench("decode", "INDEX", `decode speed (integers/s) of every codec on the index's
own lists, re-encoded block by block, one core and all
cores, with bits per integer`, benchDecode)
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

// benchDecode re-encodes a sample of the index's lists with each codec and
// times decoding (docIDs and frequencies, block by block, as the engine
// decodes them).
func benchDecode(c command, args []string) error {
	c.name = "bench decode"
	c.args = "INDEX [flags]"
	fs := newFlags(c, `Re-encodes the index's posting lists with each codec (block by block, as
'qp index --codec' would) and measures how fast they decode to absolute
docIDs and frequencies: integers/s on one core and on all cores, and bits
per integer. Lists are sampled up to --postings postings in total.`)
	codecs := fs.String("codecs", "all", "codecs to measure ('all' or a comma-separated list)")
	budget := fs.Int("postings", 20_000_000, "postings to sample from the index")
	minTime := fs.Duration("time", time.Second, "minimum measuring time per codec and thread count")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	x, err := index.Open(pos[0])
	if err != nil {
		return err
	}
	list, err := parseCodecs(*codecs)
	if err != nil {
		return err
	}
	// Sample terms at random until the postings budget is reached.
	rng := rand.New(rand.NewSource(1))
	perm := rng.Perm(x.NumTerms())
	var docs, freqs [][]uint32
	total := 0
	for _, t := range perm {
		if total >= *budget {
			break
		}
		l, err := x.List(t)
		if err != nil {
			return err
		}
		d, f, err := l.Decode(nil, nil)
		if err != nil {
			return err
		}
		docs, freqs = append(docs, d), append(freqs, f)
		total += len(d)
	}
	fmt.Printf("index %s: %d lists sampled, %d postings; GOMAXPROCS %d\n\n", pos[0], len(docs), total, runtime.GOMAXPROCS(0))
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "codec\tbits/docID\tbits/freq\tdocIDs/s 1 core\tdocIDs+freqs/s 1 core\tdocIDs+freqs/s %d cores\t\n", runtime.GOMAXPROCS(0))
	for _, cd := range list {
		dir, err := os.MkdirTemp("", "qp-bench-")
		if err != nil {
			return err
		}
		path := dir + "/x.qp"
		w, err := index.NewWriter(path, index.WriterOptions{BlockSize: x.Meta.BlockSize, DocCodec: cd, DocLens: x.DocLens()})
		if err != nil {
			return err
		}
		for i := range docs {
			if err := w.AddList(fmt.Sprintf("t%08d", i), docs[i], freqs[i]); err != nil {
				w.Abort()
				return err
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
		y, err := index.Open(path)
		os.RemoveAll(dir)
		if err != nil {
			return err
		}
		lists := make([]index.List, y.NumTerms())
		var db, fb int
		for i := range lists {
			if lists[i], err = y.List(i); err != nil {
				return err
			}
			db += len(lists[i].DocBytes())
			fb += len(lists[i].FreqBytes())
		}
		d1, err := decodeRate(lists, 1, false, *minTime)
		if err != nil {
			return err
		}
		b1, err := decodeRate(lists, 1, true, *minTime)
		if err != nil {
			return err
		}
		bn, err := decodeRate(lists, runtime.GOMAXPROCS(0), true, *minTime)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%s\t%s\t%s\t\n", cd.Name(), 8*float64(db)/float64(total), 8*float64(fb)/float64(total),
			humanRate(d1), humanRate(b1), humanRate(bn))
	}
	return tw.Flush()
}

// decodeRate decodes every block of lists repeatedly on `threads`
// goroutines for at least minTime and returns integers per second.
func decodeRate(lists []index.List, threads int, withFreqs bool, minTime time.Duration) (float64, error) {
	var mu sync.Mutex
	var firstErr error
	var ints int64
	start := time.Now()
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			buf := make([]uint32, 1<<16)
			fbuf := make([]uint32, 1<<16)
			var n int64
			for round := 0; time.Since(start) < minTime || round == 0; round++ {
				for i := t; i < len(lists); i += threads {
					l := &lists[i]
					for b := 0; b < l.NBlocks; b++ {
						m, err := l.DecodeDocs(b, buf)
						if err == nil && withFreqs {
							_, err = l.DecodeFreqs(b, fbuf)
							m *= 2
						}
						if err != nil {
							mu.Lock()
							firstErr = err
							mu.Unlock()
							return
						}
						n += int64(m)
					}
				}
			}
			mu.Lock()
			ints += n
			mu.Unlock()
		}(t)
	}
	wg.Wait()
	return float64(ints) / time.Since(start).Seconds(), firstErr
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
pass, and prints queries/s and latency percentiles. Results of every
algorithm are checked to be identical.`)
	qf := addQueryFlags(fs)
	modes := fs.String("modes", "and,or,andor", "modes to run")
	ands := fs.String("and-algos", "all", "AND algorithms ('all' or a list)")
	ors := fs.String("or-algos", "all", "OR strategies ('all' or a list)")
	limit := fs.Int("limit", 10000, "queries to run")
	threadsList := fs.String("thread-counts", "", "comma-separated worker counts (default: 1 and all cores)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return errUsage
	}
	dev := *qf.device
	*qf.device = "cpu"
	x, an, _, _, _, err := qf.openEngine(pos[0])
	if err != nil {
		return err
	}
	// With --device gpu or auto (and a usable GPU), GPU rows follow the CPU
	// rows of each mode, checked identical to them.
	var gpuBe engine.Backend
	if dev != "cpu" {
		*qf.device = dev
		if gpuBe, err = qf.backend(x); err != nil {
			return err
		}
		if gpuBe.Name() != "gpu" {
			gpuBe = nil
		}
	}
	fq, err := readQueryFile(pos[1], *limit)
	if err != nil {
		return err
	}
	counts := []int{1, runtime.GOMAXPROCS(0)}
	if *threadsList != "" {
		counts = nil
		for _, s := range splitComma(*threadsList) {
			var n int
			if _, err := fmt.Sscan(s, &n); err != nil || n < 1 {
				return fmt.Errorf("--thread-counts: bad count %q", s)
			}
			counts = append(counts, n)
		}
	}
	if counts[0] == counts[len(counts)-1] && len(counts) == 2 {
		counts = counts[:1]
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	fmt.Printf("index %s: %d docs, %d terms; %d queries from %s; k=%d\n\n", pos[0], x.NumDocs(), x.NumTerms(), len(fq), pos[1], *qf.k)
	// Rows are printed as they are measured (fixed widths, no tabwriter).
	row := "%-6s %-16s %7s %10s %9s %9s %9s %9s %13s %6s\n"
	fmt.Printf(row, "mode", "algorithm", "threads", "queries/s", "mean ms", "p50 ms", "p95 ms", "p99 ms", "results/query", "failed")
	for _, ms_ := range splitComma(*modes) {
		mode, err := engine.ParseMode(ms_)
		if err != nil {
			return err
		}
		qs := qf.analyzeQueries(an, fq, mode)
		var algos []engine.Options
		if mode != engine.Or {
			for _, a := range pickNames(*ands, engine.AndAlgorithms) {
				algos = append(algos, engine.Options{AndAlgo: a})
			}
		}
		if mode != engine.And {
			for _, o := range pickNames(*ors, engine.OrStrategies) {
				algos = append(algos, engine.Options{OrAlgo: o})
			}
		}
		var ref []engine.Response
		type run struct {
			opt engine.Options
			be  engine.Backend
		}
		var runs []run
		for _, opt := range algos {
			for _, th := range counts {
				runs = append(runs, run{opt, engine.NewCPU(x, th)})
			}
		}
		if gpuBe != nil {
			runs = append(runs, run{engine.Options{}, gpuBe})
		}
		for _, r := range runs {
			opt := r.opt
			name := string(opt.AndAlgo) + string(opt.OrAlgo)
			if mode == engine.AndOr && opt.OrAlgo != "" {
				name = "and+" + name
			} else if mode == engine.AndOr {
				name += "+or"
			}
			{
				be := r.be
				th := "gpu"
				if c, ok := be.(*engine.CPU); ok {
					th = fmt.Sprint(c.Workers())
				} else {
					name = "gpu"
				}
				out := make([]engine.Response, len(qs))
				if err := be.SearchBatch(ctx, qs, opt, out); err != nil { // warm-up
					return err
				}
				start := time.Now()
				if err := be.SearchBatch(ctx, qs, opt, out); err != nil {
					return err
				}
				wall := time.Since(start)
				var lat []time.Duration
				failed, results := 0, 0
				for i := range out {
					if out[i].Err != nil {
						failed++
						continue
					}
					lat = append(lat, out[i].Stats.Time)
					results += len(out[i].Results)
				}
				if ref == nil {
					ref = out
				} else if msg := sameResults(ref, out); msg != "" {
					return fmt.Errorf("%s %s: results differ from the first algorithm: %s", mode, name, msg)
				}
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				var sum time.Duration
				for _, l := range lat {
					sum += l
				}
				mean := time.Duration(0)
				if len(lat) > 0 {
					mean = sum / time.Duration(len(lat))
				}
				fmt.Printf(row, mode, name, th, fmt.Sprintf("%.0f", float64(len(qs))/wall.Seconds()),
					fmt.Sprintf("%.3f", ms(mean)), fmt.Sprintf("%.3f", ms(pctl(lat, .5))), fmt.Sprintf("%.3f", ms(pctl(lat, .95))),
					fmt.Sprintf("%.3f", ms(pctl(lat, .99))), fmt.Sprintf("%.2f", float64(results)/float64(max(1, len(lat)))), fmt.Sprint(failed))
			}
		}
	}
	return nil
}

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

// sameResults compares two batches' results exactly.
func sameResults(a, b []engine.Response) string {
	for i := range a {
		if (a[i].Err == nil) != (b[i].Err == nil) {
			return fmt.Sprintf("query %d: error %v vs %v", i, a[i].Err, b[i].Err)
		}
		ra, rb := a[i].Results, b[i].Results
		if len(ra) != len(rb) {
			return fmt.Sprintf("query %d: %d vs %d results", i, len(ra), len(rb))
		}
		for j := range ra {
			if ra[j] != rb[j] {
				return fmt.Sprintf("query %d rank %d: %v vs %v", i, j+1, ra[j], rb[j])
			}
		}
	}
	return ""
}
