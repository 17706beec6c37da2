package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/topk"
)

// Backend evaluates batches of queries. The CPU engine (CPU) and the CUDA
// engine implement it; their results for the same index, queries and
// options must be identical.
type Backend interface {
	// Name identifies the backend ("cpu", "cuda", ...).
	Name() string
	// SearchBatch evaluates qs[i] into out[i] (len(out) == len(qs)). A query
	// that fails (empty, too long, bad k, corrupt list) gets its own
	// Response.Err and does not fail the batch. The returned error is for
	// the batch as a whole: invalid options, mismatched lengths, or the
	// context's error when it was cancelled (queries not run then carry
	// that error too). Implementations reuse out[i].Results' storage.
	SearchBatch(ctx context.Context, qs []Query, opt Options, out []Response) error
}

// Response is the outcome of one query of a batch.
type Response struct {
	Results []topk.Result
	Stats   Stats
	Err     error
}

// CPU is the Backend running Engines on CPU cores. It is safe for concurrent
// use; each worker owns an Engine, and Engines are kept between batches so
// that a warmed-up CPU does not allocate per query.
type CPU struct {
	x       *index.Index
	workers int
	mu      sync.Mutex
	idle    []*Engine
}

// NewCPU returns a CPU backend over x running batches on workers goroutines
// (workers <= 0: runtime.GOMAXPROCS(0); 1 runs the batch in the calling
// goroutine, for single-thread measurements).
func NewCPU(x *index.Index, workers int) *CPU {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &CPU{x: x, workers: workers}
}

// Name implements Backend.
func (b *CPU) Name() string { return "cpu" }

// Workers is the number of worker goroutines per batch.
func (b *CPU) Workers() int { return b.workers }

func (b *CPU) get() *Engine {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := len(b.idle); n > 0 {
		e := b.idle[n-1]
		b.idle = b.idle[:n-1]
		return e
	}
	return New(b.x)
}

func (b *CPU) put(e *Engine) {
	b.mu.Lock()
	b.idle = append(b.idle, e)
	b.mu.Unlock()
}

// betweenKey is the context key of WithBetween's function.
type betweenKey struct{}

// WithBetween returns ctx carrying f, which CPU.SearchBatch's workers call
// before each query after their first: a worker beside a GPU runs chunks
// of the GPU's fanned-out host work there (engine/gpu.HelpHost), as the
// scheduler's CPU slots do (scheduler.Config.Assist): beside 15-16
// workers that run queries back to back, the Go runtime ran that work's
// goroutines one after another (issue 24, twelfth round). f must return
// soon; without work open it should cost about an atomic load.
func WithBetween(ctx context.Context, f func() bool) context.Context {
	return context.WithValue(ctx, betweenKey{}, f)
}

// Between is the function WithBetween put into ctx, nil if none (for
// tests, and other CPU-side backends that run queries back to back).
func Between(ctx context.Context) func() bool {
	f, _ := ctx.Value(betweenKey{}).(func() bool)
	return f
}

// SearchBatch implements Backend. Workers take queries in index order from a
// shared counter, so long queries do not hold up a fixed share of the batch.
// A function put into ctx by WithBetween runs before each of a worker's
// queries after its first.
func (b *CPU) SearchBatch(ctx context.Context, qs []Query, opt Options, out []Response) error {
	if len(out) != len(qs) {
		return fmt.Errorf("engine: %d responses for %d queries", len(out), len(qs))
	}
	opt, err := opt.Resolve()
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	help := Between(ctx)
	var next atomic.Int64
	run := func() {
		e := b.get()
		defer b.put(e)
		for first := true; ; first = false {
			i := int(next.Add(1) - 1)
			if i >= len(qs) {
				return
			}
			if help != nil && !first {
				help()
			}
			r := &out[i]
			if err := ctx.Err(); err != nil {
				r.Results, r.Stats, r.Err = r.Results[:0], Stats{}, err
				continue
			}
			r.Results, r.Stats, r.Err = e.SearchInto(r.Results, qs[i], opt)
		}
	}
	w := min(b.workers, len(qs))
	if w <= 1 {
		run()
	} else {
		var wg sync.WaitGroup
		for range w {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run()
			}()
		}
		wg.Wait()
	}
	return ctx.Err()
}

var _ Backend = (*CPU)(nil)
