package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/cache"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/internal/progress"
)

// batchRun is what `qp query --queries` runs: its flags past queryFlags.
type batchRun struct {
	index, queries, run, tag, cacheSize string
	limit, chunk                        int
	quiet, allowPartial                 bool
	start                               time.Time // when the command began (before the index opened)
}

// batchPhases are the wall times of a batch run, for its summary: the
// cold total a user waits, and the steady state that bench query's warm
// batch compares with.
type batchPhases struct {
	open     time.Duration // the index and the processor (GPU upload), from start
	load     time.Duration // reading and analyzing the query file (while open ran)
	stream   time.Duration // first query handed to the processor .. last run line written
	first    time.Duration // the stream's first chunk: answered and its run formatted
	firstN   int           // queries of the first chunk
	total    time.Duration // start .. last run line flushed
	nQueries int
}

// steady is the queries per second after the first chunk (the processor
// warm): the chunks that follow, their output included.
func (p batchPhases) steady() float64 {
	d := p.stream - p.first
	if d <= 0 || p.nQueries <= p.firstN {
		return 0
	}
	return float64(p.nQueries-p.firstN) / d.Seconds()
}

func (p batchPhases) print(w io.Writer) {
	fmt.Fprintf(w, "time: total %.3fs from start (open %.3fs, while the queries were read and analyzed in %.3fs; stream %.3fs); first chunk of %d in %.3fs, then %.1f queries/s\n",
		p.total.Seconds(), p.open.Seconds(), p.load.Seconds(), p.stream.Seconds(), p.firstN, p.first.Seconds(), p.steady())
}

// loaded is the query file read and analyzed.
type loaded struct {
	fq  []eval.Query
	qs  []engine.Query
	err error
	dur time.Duration
}

// loadQueries reads the query file and analyzes it on all cores.
func (qf *queryFlags) loadQueries(path string, limit int, an *analysis.Analyzer, mode engine.Mode) loaded {
	t := time.Now()
	fq, err := readQueryFile(path, limit)
	if err != nil {
		return loaded{err: err}
	}
	qs := make([]engine.Query, len(fq))
	parts(len(fq), 512, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			qs[i] = engine.Query{ID: fq[i].ID, Terms: an.Tokens(fq[i].Text), Mode: mode, K: *qf.k, QTF: *qf.qtf}
		}
	})
	return loaded{fq: fq, qs: qs, dur: time.Since(t)}
}

// parts calls f on [lo, hi) pieces of [0, n) of at most size, on all cores.
func parts(n, size int, f func(lo, hi int)) {
	np := (n + size - 1) / size
	w := min(runtime.GOMAXPROCS(0), np)
	var wg sync.WaitGroup
	next := make(chan int, np)
	for p := range np {
		next <- p
	}
	close(next)
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				f(p*size, min((p+1)*size, n))
			}
		}()
	}
	wg.Wait()
}

// openBatch opens the index, then reads and analyzes the query file while
// the processor opens (the GPU's context, modules and postings upload take
// longer than a query file), and returns the engine and the queries. The
// caller closes the engine, then the index.
func (qf *queryFlags) openBatch(br batchRun) (*index.Index, *qp.Engine, loaded, error) {
	mode, _, o, err := qf.resolve()
	if err != nil {
		return nil, nil, loaded{}, err
	}
	x, err := index.Open(br.index)
	if err != nil {
		return nil, nil, loaded{}, err
	}
	an, err := x.Analyzer()
	if err != nil {
		x.Close()
		return nil, nil, loaded{}, fmt.Errorf("%s: %w", br.index, err)
	}
	lc := make(chan loaded, 1)
	go func() { lc <- qf.loadQueries(br.queries, br.limit, an, mode) }()
	e, err := qf.newEngine(x, o)
	l := <-lc
	if err == nil {
		err = l.err
	}
	if err != nil {
		if e != nil {
			e.Close()
		}
		x.Close()
		return nil, nil, loaded{}, err
	}
	return x, e, l, nil
}

// runBatch runs every query of br.queries through the engine in one
// stream and writes the run (qp query --queries).
func (qf *queryFlags) runBatch(ctx context.Context, br batchRun) error {
	if br.chunk < 1 {
		return fmt.Errorf("--chunk %d: want at least 1 query", br.chunk)
	}
	_, opt, _, err := qf.resolve()
	if err != nil {
		return err
	}
	x, e, l, err := qf.openBatch(br)
	if err != nil {
		return err
	}
	defer x.Close()
	defer e.Close()
	var ph batchPhases
	ph.open, ph.load, ph.nQueries = time.Since(br.start), l.dur, len(l.qs)
	qs, be := l.qs, e.Backend()
	var rc *cache.Cache
	if br.cacheSize != "" {
		n, err := parseSize(br.cacheSize)
		if err != nil || n <= 0 {
			return fmt.Errorf("--cache %q: want a size such as 64M", br.cacheSize)
		}
		if rc, err = cache.New(cache.Config{MaxBytes: n}); err != nil {
			return err
		}
		defer rc.Close()
		be = cache.NewBackend(rc, x, be)
	}
	out := io.Writer(os.Stdout)
	if br.run != "" {
		f, err := os.Create(br.run)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	w := bufio.NewWriterSize(out, 1<<20)
	bar := progress.New("querying", "queries", int64(len(qs)))
	if br.quiet || br.run == "" {
		bar.Quiet()
	}
	var sum batchSummary
	rw := newRunWriter(w, x, br.tag)
	// Collect the garbage of loading and analysis now, as bench query
	// does before its timed batch: the cycle it owes would otherwise run
	// inside the stream and be counted as query time.
	runtime.GC()
	start := time.Now()
	// One stream through the backend: large chunks fill the GPU's launch
	// sets, small first and last ones pay the warm-up on few queries and
	// leave little output after the last search; each chunk's run is
	// written while the next chunks run.
	err = qp.StreamWith(ctx, be, qs, opt, qp.StreamOptions{Chunk: br.chunk, Ramp: true}, func(lo int, out []engine.Response) error {
		for i := range out {
			sum.add(qs[lo+i], &out[i])
		}
		if err := rw.write(qs[lo:lo+len(out)], out); err != nil {
			return err
		}
		if lo == 0 {
			ph.first, ph.firstN = time.Since(start), len(out)
		}
		bar.Set(int64(lo+len(out)), "")
		return nil
	})
	if err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing the run: %w", err)
	}
	ph.stream = time.Since(start)
	ph.total = time.Since(br.start)
	bar.Done("")
	sw := os.Stdout
	if br.run == "" {
		sw = os.Stderr
	}
	sum.printTo(sw, len(qs), ph.stream)
	ph.print(sw)
	if rc != nil {
		fmt.Fprintf(os.Stderr, "result cache (%s): %s\n", br.cacheSize, rc.Stats())
	}
	if r := e.Routing(); r != "" && !br.quiet {
		fmt.Fprintf(os.Stderr, "device auto: %s\n", r)
	}
	if err := sum.failure(len(qs)); err != nil {
		if !br.allowPartial {
			return err
		}
		fmt.Fprintf(os.Stderr, "qp query: %v\n", err)
	}
	return nil
}

// processStart is when the process began: batch runs report their cold
// total from it.
var processStart = time.Now()
