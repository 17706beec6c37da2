// Package query is the experiment behind `qp bench query`: the queries of a
// log run in each mode (AND, OR, AND+OR) with each selected algorithm, on
// the CPU with several worker counts and on the GPU with several settings,
// each row after one warm-up pass; queries/s and latency percentiles
// (report.Percentile, nearest rank) per row, and every row's results
// checked identical to the first row of its mode.
//
// The stages of Run: plan (the rows of a mode: planRuns), configure (the GPU
// settings of a row: configure), measure (warm-up, timed batch: measure),
// check (sameResults) and summarize (summarize). The CLI parses flags into
// a Config and prints the rows as Config.OnRow reports them.
package query

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/engine/gpu"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/cputime"
	"github.com/qpengine/qp/report"
)

// Density is a GPU list-bitmap density setting: Name as the user wrote it
// ("" for the backend's default, which is not changed), D its value (-1:
// off).
type Density struct {
	Name string
	D    float64
}

// Config says which rows to measure.
type Config struct {
	Modes        []engine.Mode
	AndAlgos     []engine.AndAlgorithm // CPU AND algorithms (modes And, AndOr)
	OrAlgos      []engine.OrStrategy   // CPU OR strategies (modes Or, AndOr)
	ThreadCounts []int                 // CPU worker counts, one row each (default 1 and GOMAXPROCS)

	// GPU rows, when GPU is not nil: every combination of the settings
	// below (nil lists: the backend's current setting).
	GPU          *gpu.Backend
	GPUOnly      bool // no CPU rows (GPU rows are checked against the first GPU row)
	Thresholds   []int
	OrThresholds []int
	AndSearch    []string // --gpu-and values
	OrStrategy   []string // --gpu-or values
	Bitmaps      []Density
	OrBitmaps    []Density
	Profile      bool // after each GPU row, one profiled batch (Row.Profile)

	// Queries gives the analyzed queries of a mode.
	Queries func(engine.Mode) []engine.Query
	// OnRow, if set, is called with each row as it is measured.
	OnRow func(Row)
}

// Row is one measured configuration.
type Row struct {
	Mode    engine.Mode
	Name    string  // algorithm, or "gpu" and the settings that vary
	Threads string  // CPU workers, or "gpu"
	C, OT   int     // GPU PARA and OR thresholds (0: CPU row)
	BM      string  // GPU bitmap density as given ("": default or CPU)
	BMD     float64 // its value (-1: off; 0 when BM is "")

	QPS                 float64 // queries/s of the timed batch
	Mean, P50, P95, P99 float64 // latency, ms
	Results             float64 // results per answered query
	Failed              int     // queries that returned an error
	// CPUPerQuery is the process's CPU time (user + system, getrusage)
	// over the timed batch per query, in µs; 0 where unknown. Set against
	// qp query --stats' "CPU during the stream", it tells work the stream
	// adds (more CPU a query) from cores it leaves idle (issue 23's last
	// paragraph; docs/BENCHMARKS.md, cliq4).
	CPUPerQuery float64

	Profile *gpu.Profile // with Config.Profile, GPU rows
}

// run is one planned row.
type run struct {
	opt   engine.Options
	be    engine.Backend
	gpu   bool
	c, ot int
	and   string
	orst  string
	bm    Density
	obm   Density
}

// Run measures every row of cfg over x and returns them in order.
func Run(ctx context.Context, x *index.Index, cfg Config) ([]Row, error) {
	cfg = cfg.withDefaults()
	if cfg.GPUOnly && cfg.GPU == nil {
		return nil, fmt.Errorf("--gpu-only: no GPU to run on (--device gpu)")
	}
	var rows []Row
	for _, mode := range cfg.Modes {
		qs := cfg.Queries(mode)
		var ref []engine.Response
		runs := planRuns(x, cfg, mode)
		vary := varying(runs)
		for _, r := range runs {
			name, threads := rowName(mode, r, vary)
			if r.gpu {
				if err := configure(cfg.GPU, r); err != nil {
					return rows, err
				}
			}
			out, wall, cpu, err := measure(ctx, r.be, qs, r.opt)
			if err != nil {
				return rows, err
			}
			if ref == nil {
				ref = out
			} else if msg := sameResults(ref, out); msg != "" {
				return rows, fmt.Errorf("%s %s: results differ from the first algorithm: %s", mode, name, msg)
			}
			row := summarize(out, wall)
			if cpu > 0 {
				row.CPUPerQuery = float64(cpu.Nanoseconds()) / 1e3 / float64(max(len(qs), 1))
			}
			row.Mode, row.Name, row.Threads, row.C, row.OT, row.BM, row.BMD = mode, name, threads, r.c, r.ot, r.bm.Name, r.bm.D
			if cfg.Profile && r.gpu {
				p, err := profileBatch(ctx, cfg.GPU, qs, r.opt)
				if err != nil {
					return rows, err
				}
				row.Profile = &p
			}
			rows = append(rows, row)
			if cfg.OnRow != nil {
				cfg.OnRow(row)
			}
		}
	}
	return rows, nil
}

func (cfg Config) withDefaults() Config {
	if len(cfg.ThreadCounts) == 0 {
		cfg.ThreadCounts = []int{1, runtime.GOMAXPROCS(0)}
	}
	if c := cfg.ThreadCounts; len(c) == 2 && c[0] == c[1] {
		cfg.ThreadCounts = c[:1]
	}
	if cfg.GPU != nil {
		if len(cfg.Thresholds) == 0 {
			cfg.Thresholds = []int{cfg.GPU.Threshold()}
		}
		if len(cfg.OrThresholds) == 0 {
			cfg.OrThresholds = []int{int(cfg.GPU.OrThreshold())}
		}
		if len(cfg.Bitmaps) == 0 {
			cfg.Bitmaps = []Density{{}}
		}
		if len(cfg.OrBitmaps) == 0 {
			cfg.OrBitmaps = []Density{{}}
		}
		if len(cfg.AndSearch) == 0 {
			cfg.AndSearch = []string{""}
		}
		if len(cfg.OrStrategy) == 0 {
			cfg.OrStrategy = []string{""}
		}
	}
	return cfg
}

// planRuns lists a mode's rows: each CPU algorithm with each worker count,
// then the GPU settings' combinations (settings that do not apply to the
// mode, e.g. OR ones for AND, take their first value only).
func planRuns(x *index.Index, cfg Config, mode engine.Mode) []run {
	var algos []engine.Options
	if mode != engine.Or {
		for _, a := range cfg.AndAlgos {
			algos = append(algos, engine.Options{AndAlgo: a})
		}
	}
	if mode != engine.And {
		for _, o := range cfg.OrAlgos {
			algos = append(algos, engine.Options{OrAlgo: o})
		}
	}
	var runs []run
	if !cfg.GPUOnly {
		for _, opt := range algos {
			for _, th := range cfg.ThreadCounts {
				runs = append(runs, run{opt: opt, be: engine.NewCPU(x, th)})
			}
		}
	}
	if cfg.GPU == nil {
		return runs
	}
	first := func(s []string) []string { return s[:min(1, len(s))] }
	gands, gors, ots, obms := cfg.AndSearch, cfg.OrStrategy, cfg.OrThresholds, cfg.OrBitmaps
	if mode == engine.Or {
		gands = first(gands)
	}
	if mode == engine.And {
		gors = first(gors)
		ots = ots[:min(1, len(ots))]
		obms = obms[:min(1, len(obms))]
	}
	for _, c := range cfg.Thresholds {
		for _, ot := range ots {
			for _, ga := range gands {
				for _, gor := range gors {
					for _, bm := range cfg.Bitmaps {
						for _, obm := range obms {
							runs = append(runs, run{be: cfg.GPU, gpu: true, c: c, ot: ot, and: ga, orst: gor, bm: bm, obm: obm})
						}
					}
				}
			}
		}
	}
	return runs
}

// variation says which GPU settings take more than one value among a
// mode's rows (they name the row).
type variation struct{ c, ot, and, orst, bm, obm bool }

func varying(runs []run) variation {
	seen := [6]map[any]bool{}
	for i := range seen {
		seen[i] = map[any]bool{}
	}
	for _, r := range runs {
		if !r.gpu {
			continue
		}
		for i, v := range []any{r.c, r.ot, r.and, r.orst, r.bm.Name, r.obm.Name} {
			seen[i][v] = true
		}
	}
	return variation{len(seen[0]) > 1, len(seen[1]) > 1, len(seen[2]) > 1, len(seen[3]) > 1, len(seen[4]) > 1, len(seen[5]) > 1}
}

// rowName names a row as the CLI prints it: the CPU algorithm (and+X /
// X+or in AND+OR mode) and its worker count, or "gpu" and the settings
// that vary.
func rowName(mode engine.Mode, r run, v variation) (name, threads string) {
	if !r.gpu {
		name = string(r.opt.AndAlgo) + string(r.opt.OrAlgo)
		if mode == engine.AndOr && r.opt.OrAlgo != "" {
			name = "and+" + name
		} else if mode == engine.AndOr {
			name += "+or"
		}
		return name, fmt.Sprint(r.be.(*engine.CPU).Workers())
	}
	name = "gpu"
	if v.c {
		name += " c=" + SICount(r.c)
	}
	if v.and {
		name += " " + r.and
	}
	if v.orst {
		name += " " + r.orst
	}
	if v.ot {
		name += " or<" + SICount(r.ot)
	}
	if v.bm {
		name += " bm " + r.bm.Name
	}
	if v.obm {
		name += " orbm " + r.obm.Name
	}
	return name, "gpu"
}

// configure applies a GPU row's settings to the backend.
func configure(g *gpu.Backend, r run) error {
	if r.obm.Name != "" {
		g.SetOrBitmapDensity(r.obm.D)
	}
	if r.bm.Name != "" {
		if err := g.SetBitmapDensity(r.bm.D); err != nil {
			return err
		}
	}
	g.SetThreshold(r.c)
	g.SetOrThreshold(int64(r.ot))
	if r.and != "" {
		if err := g.SetAndSearch(r.and); err != nil {
			return fmt.Errorf("--gpu-and: %w", err)
		}
	}
	if r.orst != "" {
		if err := g.SetOr(r.orst); err != nil {
			return fmt.Errorf("--gpu-or: %w", err)
		}
	}
	return nil
}

// measure runs the batch once to warm up, collects garbage (so that a GC
// pause does not land inside the timed batch), and times a second run: its
// wall time and the process's CPU time over it (0 where unknown).
func measure(ctx context.Context, be engine.Backend, qs []engine.Query, opt engine.Options) ([]engine.Response, time.Duration, time.Duration, error) {
	out := make([]engine.Response, len(qs))
	if err := be.SearchBatch(ctx, qs, opt, out); err != nil {
		return nil, 0, 0, err
	}
	runtime.GC()
	cpu0, ok0 := cputime.Process()
	start := time.Now()
	if err := be.SearchBatch(ctx, qs, opt, out); err != nil {
		return nil, 0, 0, err
	}
	wall := time.Since(start)
	cpu1, ok1 := cputime.Process()
	if !ok0 || !ok1 {
		cpu0, cpu1 = 0, 0
	}
	return out, wall, cpu1 - cpu0, nil
}

// summarize computes a row's rate, latency percentiles (report.Percentile)
// and results per query from a timed batch.
func summarize(out []engine.Response, wall time.Duration) Row {
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
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	mean := time.Duration(0)
	if len(lat) > 0 {
		mean = sum / time.Duration(len(lat))
	}
	return Row{QPS: float64(len(out)) / wall.Seconds(), Mean: ms(mean), P50: ms(report.Percentile(lat, .5)),
		P95: ms(report.Percentile(lat, .95)), P99: ms(report.Percentile(lat, .99)),
		Results: float64(results) / float64(max(1, len(lat))), Failed: failed}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// profileBatch runs one more batch with the GPU's CUDA-event profile on and
// returns it (the timed rows run without events).
func profileBatch(ctx context.Context, b *gpu.Backend, qs []engine.Query, opt engine.Options) (gpu.Profile, error) {
	b.SetProfile(true)
	defer b.SetProfile(false)
	b.ResetProfile()
	out := make([]engine.Response, len(qs))
	if err := b.SearchBatch(ctx, qs, opt, out); err != nil {
		return gpu.Profile{}, err
	}
	return b.Profile(), nil
}

// sameResults compares two batches' results exactly ("" when equal).
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

// SICount writes n as 64K, 1M, ... when it is a multiple of a power of 1024.
func SICount(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}
