package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/cache"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/engine/gpu"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/internal/progress"
)

// batchArgs are qp query's batch-mode flags (--queries FILE).
type batchArgs struct {
	queries, run, tag, cacheSize string
	cpuProfile                   string // --cpuprofile: a profile of the stream
	limit, chunk                 int
	quiet, allowPartial, stats   bool
	tune                         queryTune
	early                        *loadedQueries // the early switch's load
}

// runBatch runs every query of ba.queries through e in one stream and
// writes the run, the summary, and with ba.stats the timeline tl (whose
// open time the caller measured).
func (qf *queryFlags) runBatch(ctx context.Context, e *qp.Engine, mode engine.Mode, opt engine.Options, ba batchArgs, tl *batchTimeline) error {
	tl.tune, tl.early = ba.tune.String(), ba.early != nil
	qs, err := qf.loadBatch(ctx, e, mode, opt, ba, tl)
	if err != nil {
		return err
	}
	x, be := e.Index(), e.Backend()
	var rc *cache.Cache
	if ba.cacheSize != "" {
		n, err := parseSize(ba.cacheSize)
		if err != nil || n <= 0 {
			return fmt.Errorf("--cache %q: want a size such as 64M", ba.cacheSize)
		}
		if rc, err = cache.New(cache.Config{MaxBytes: n}); err != nil {
			return err
		}
		defer rc.Close()
		be = cache.NewBackend(rc, x, be)
	}
	out := io.Writer(os.Stdout)
	if ba.run != "" {
		f, err := os.Create(ba.run)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	w := bufio.NewWriterSize(out, 1<<20)
	bar := progress.New("querying", "queries", int64(len(qs)))
	if ba.quiet || ba.run == "" {
		bar.Quiet()
	}
	sum := batchSummary{lat: make([]time.Duration, 0, len(qs))} // no growth inside the stream
	rw := newRunWriter(w, x, ba.tag)
	rw.setProcs(ba.tune.fmtProcs)
	rw.timed = ba.stats
	rw.wordLines = !ba.tune.oldLines
	if !ba.tune.noSlots {
		if err := rw.useSlots(); err != nil {
			return err
		}
	}
	// On the CPU the chunks run without a barrier (qp.Engine.StreamWith,
	// Continuous): a chunk no longer waits for its slowest query while the
	// other cores idle (docs/BENCHMARKS.md, cliq). Other processors ignore it.
	so := qp.StreamOptions{Chunk: ba.chunk, Continuous: !ba.tune.barrier}
	// Device Auto with a GPU streams each segment on one processor's own
	// stream (qp's auto_stream.go): both settings below apply to it.
	auto := rc == nil && e.GPU() != nil && be != engine.Backend(e.GPU())
	if _, cpu := be.(*engine.CPU); (cpu || auto) && so.Continuous && !ba.tune.emitFmt {
		// The workers format their pieces' run lines as they answer them
		// (runWriter.answered); the emit only writes them.
		so.Answered = rw.answered(qs, cmp.Or(max(ba.chunk, 0), qp.DefaultChunk))
	}
	if _, onGPU := be.(*gpu.Backend); (onGPU || auto) && !ba.tune.oneInFlight {
		// Two chunks in flight on the GPU: one's host preparation and
		// plans on the cores while the other's launch sets hold the
		// device (qp.StreamOptions.InFlight).
		so.InFlight = 2
	}
	if ba.tune.prealloc {
		so.ResultCap = *qf.k
	}
	so.GPUHandOff = ba.tune.gpuHandOff
	so.RaceNoHelp = ba.tune.raceNoHelp
	var chunkTime time.Duration
	if ba.stats {
		so.Trace = func(c qp.ChunkTimes) { tl.trace(c, chunkTime) }
	}
	// Collect the garbage of loading and analysis now, as bench query
	// does before its timed batch: the cycle it owes would otherwise run
	// inside the stream and be counted as query time.
	t := time.Now()
	runtime.GC()
	tl.gc = time.Since(t)
	defer setGC(ba.tune)()
	tl.before, tl.gpuBefore = readGC(), gpuProfile(e.GPU())
	stopProfile := func() {}
	if ba.cpuProfile != "" {
		if stopProfile, err = startCPUProfile(ba.cpuProfile); err != nil {
			return err
		}
	}
	start := time.Now()
	tl.streamStart = start
	// One stream through the backend: large chunks fill the GPU's launch
	// sets, and each chunk's run is written while the next runs.
	stream := e.StreamWith
	if rc != nil {
		stream = func(ctx context.Context, qs []engine.Query, opt engine.Options, so qp.StreamOptions, emit func(int, []engine.Response) error) error {
			return qp.StreamWith(ctx, be, qs, opt, so, emit)
		}
	}
	err = stream(ctx, qs, opt, so, func(lo int, out []engine.Response) error {
		chunkTime = 0
		for i := range out {
			sum.add(qs[lo+i], &out[i])
			chunkTime += out[i].Stats.Time
		}
		if err := rw.writeChunk(lo, qs, out); err != nil {
			return err
		}
		bar.Set(int64(lo+len(out)), "")
		return nil
	})
	stopProfile() // the profile covers the stream alone, and ends on its error too
	if err != nil {
		return err
	}
	wall := time.Since(start)
	tl.after, tl.gpuAfter = readGC(), gpuProfile(e.GPU())
	tl.fmtTime = rw.fmtTime
	if err := w.Flush(); err != nil {
		return err
	}
	tl.stream, tl.flush, tl.total = wall, time.Since(start)-wall, time.Since(processStart)
	bar.Done("")
	sw := os.Stdout
	if ba.run == "" {
		sw = os.Stderr
	}
	sum.printTo(sw, len(qs), wall)
	if ba.stats {
		tl.print(os.Stderr, len(qs))
	}
	if rc != nil {
		fmt.Fprintf(os.Stderr, "result cache (%s): %s\n", ba.cacheSize, rc.Stats())
	}
	if r := e.Routing(); r != "" && (!ba.quiet || ba.stats) {
		fmt.Fprintf(os.Stderr, "device auto: %s\n", r)
	}
	if err := sum.failure(len(qs)); err != nil {
		if !ba.allowPartial {
			return err
		}
		fmt.Fprintf(os.Stderr, "qp query: %v\n", err)
	}
	return nil
}

// loadBatch reads and analyzes the query file (unless the early switch
// did it while the processor opened: ba.early); with the warm switch, the
// engine warms up meanwhile.
func (qf *queryFlags) loadBatch(ctx context.Context, e *qp.Engine, mode engine.Mode, opt engine.Options, ba batchArgs, tl *batchTimeline) ([]engine.Query, error) {
	warmed := make(chan error, 1)
	workers := runtime.GOMAXPROCS(0)
	if *qf.threads > 0 {
		workers = *qf.threads
	}
	if n := ba.tune.warmQueries(e.GPU() != nil, ba.chunk, workers); n > 0 {
		tl.warmed = n
		go func() {
			t := time.Now()
			err := e.Warm(ctx, opt, mode, *qf.k, n)
			tl.warm = time.Since(t)
			warmed <- err
		}()
	} else {
		warmed <- nil
	}
	l := ba.early
	if l == nil {
		l = qf.loadQueries(e.Analyzer(), ba.queries, ba.limit, mode, ba.tune.parAnalyze)
	}
	tl.read, tl.analyze = l.read, l.analyze
	err := l.err
	if werr := <-warmed; err == nil && werr != nil {
		err = fmt.Errorf("warming the processor up: %w", werr)
	}
	return l.qs, err
}

// loadedQueries is a query file read and analyzed.
type loadedQueries struct {
	qs            []engine.Query
	read, analyze time.Duration
	err           error
}

// loadQueries reads the query file at path (its first limit queries) and
// analyzes it with an (on all cores with par).
func (qf *queryFlags) loadQueries(an *analysis.Analyzer, path string, limit int, mode engine.Mode, par bool) *loadedQueries {
	t := time.Now()
	fq, err := readQueryFile(path, limit)
	l := &loadedQueries{read: time.Since(t), err: err}
	if err != nil {
		return l
	}
	t = time.Now()
	if par {
		l.qs = qf.analyzeQueriesPar(an, fq, mode)
	} else {
		l.qs = qf.analyzeQueries(an, fq, mode)
	}
	l.analyze = time.Since(t)
	return l
}

// besideOpen returns the qp.Options.Beside hook of the early switch: the
// query file read and analyzed (into *dst) while the processor opens.
func (qf *queryFlags) besideOpen(dst **loadedQueries, path string, limit int, mode engine.Mode, par bool) func(*index.Index) {
	return func(x *index.Index) {
		an, err := x.Analyzer()
		if err != nil {
			*dst = &loadedQueries{err: err}
			return
		}
		*dst = qf.loadQueries(an, path, limit, mode, par)
	}
}

// analyzeQueriesPar is analyzeQueries on all cores.
func (qf *queryFlags) analyzeQueriesPar(an *analysis.Analyzer, fq []eval.Query, mode engine.Mode) []engine.Query {
	qs := make([]engine.Query, len(fq))
	parts(len(fq), 512, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			qs[i] = engine.Query{ID: fq[i].ID, Terms: an.Tokens(fq[i].Text), Mode: mode, K: *qf.k, QTF: *qf.qtf}
		}
	})
	return qs
}

// parts calls f on [lo, hi) pieces of [0, n) of at most size, on all cores.
func parts(n, size int, f func(lo, hi int)) {
	np := (n + size - 1) / size
	w := min(runtime.GOMAXPROCS(0), np)
	next := make(chan int, np)
	for p := range np {
		next <- p
	}
	close(next)
	done := make(chan struct{}, w)
	for range w {
		go func() {
			defer func() { done <- struct{}{} }()
			for p := range next {
				f(p*size, min((p+1)*size, n))
			}
		}()
	}
	for range w {
		<-done
	}
}

// setGC applies the gc switch for the stream and returns what restores the
// collector's settings. With the collector off, a memory limit of the live
// heap plus gcHeadroom still bounds the stream's garbage.
func setGC(t queryTune) func() {
	if !t.gcSet {
		return func() {}
	}
	old := debug.SetGCPercent(t.gcPercent)
	oldLimit := debug.SetMemoryLimit(-1)
	if t.gcPercent < 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		debug.SetMemoryLimit(int64(ms.HeapAlloc) + gcHeadroom)
	}
	return func() {
		debug.SetGCPercent(old)
		debug.SetMemoryLimit(oldLimit)
	}
}

// gcHeadroom is the garbage the stream may leave with the collector off.
const gcHeadroom = 1 << 30
