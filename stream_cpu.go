package qp

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qpengine/qp/engine"
)

// streamBuffers is the number of chunk buffers of a continuous CPU stream:
// the workers may run two chunks ahead of the one being emitted, so that a
// chunk's slow queries do not stop them.
const streamBuffers = 3

// StreamWith runs qs through the engine's processor as the package's
// StreamWith does with e.Backend(), except that with so.Continuous and the
// CPU processor (Device CPU) the workers take the queries in order across
// chunk boundaries: no chunk waits for the previous one's slowest query
// while cores idle (a SearchBatch per chunk ends when its last query does).
// The answers are those of the CPU backend (the same engine call per
// query); emit still sees the chunks in order, each once answered whole.
// Under Device Auto with a GPU the stream starts, while the processors'
// streams are not both measured, with a race of both on a shared queue
// (auto_race.go: emit sees the GPU's chunks and the CPU's quarter chunks,
// in order), then runs in segments on either processor's own stream, as
// Device CPU's (with so.Continuous) and Device GPU's (so.InFlight chunks
// at once) run (auto_stream.go); a segment after a race may start with the
// rest of a chunk, then keeps the caller's chunk grid.
func (e *Engine) StreamWith(ctx context.Context, qs []engine.Query, opt engine.Options, so StreamOptions,
	emit func(lo int, out []engine.Response) error) error {
	if e.route != nil {
		return e.route.stream(ctx, [2]procStream{procCPU: e.cpuStream(e.route.cpu), procGPU: e.gpuStream(e.route.gpu)}, qs, opt, so, emit)
	}
	return e.cpuStream(e.be)(ctx, qs, opt, so, emit)
}

// cpuStream is the stream of be: with so.Continuous and a CPU backend
// the continuous stream on the engine's stream engines, else the package's
// StreamWith (so.InFlight chunks at once).
func (e *Engine) cpuStream(be engine.Backend) procStream {
	return func(ctx context.Context, qs []engine.Query, opt engine.Options, so StreamOptions,
		emit func(lo int, out []engine.Response) error) error {
		cpu, ok := be.(*engine.CPU)
		if !so.Continuous || !ok {
			return StreamWith(ctx, be, qs, opt, so, emit)
		}
		if so.first > 0 {
			var err error
			if qs, so, emit, err = firstBatch(ctx, be, qs, opt, so, emit); err != nil || len(qs) == 0 {
				return err
			}
		}
		e.streamMu.Lock() // one continuous stream at a time: they share the engines
		defer e.streamMu.Unlock()
		return streamCPU(ctx, e.streamEngines(cpu.Workers()), qs, opt, so, emit)
	}
}

// firstBatch answers a stream's partial first chunk (so.first queries, a
// Device Auto stream resuming mid-chunk) on be as one batch and emits it;
// it returns the rest of the stream, its options and its emit, shifted so
// that the rest starts on the caller's chunk grid.
func firstBatch(ctx context.Context, be engine.Backend, qs []engine.Query, opt engine.Options, so StreamOptions,
	emit func(lo int, out []engine.Response) error) ([]engine.Query, StreamOptions, func(int, []engine.Response) error, error) {
	f := min(so.first, len(qs))
	from := time.Now()
	out := newResponses(f, so.ResultCap)
	if err := be.SearchBatch(ctx, qs[:f], opt, out); err != nil {
		return nil, so, emit, err
	}
	if err := emitTraced(emit, so.Trace, 0, out, from); err != nil {
		return nil, so, emit, err
	}
	so.first = 0
	if a := so.Answered; a != nil {
		so.Answered = func(lo int, out []engine.Response) { a(f+lo, out) }
	}
	if tr := so.Trace; tr != nil {
		so.Trace = func(c ChunkTimes) { c.Lo += f; tr(c) }
	}
	return qs[f:], so, shiftEmit(emit, f), nil
}

// gpuStream is the package's StreamWith over be (the GPU of Device Auto):
// so.InFlight chunks at once; Answered is never called.
func (e *Engine) gpuStream(be engine.Backend) procStream {
	return func(ctx context.Context, qs []engine.Query, opt engine.Options, so StreamOptions,
		emit func(lo int, out []engine.Response) error) error {
		return StreamWith(ctx, be, qs, opt, so, emit)
	}
}

// streamEngines returns the engines of continuous CPU streams, one per
// worker, made at the first call and kept (their buffers stay warm). The
// caller holds e.streamMu while it uses them.
func (e *Engine) streamEngines(workers int) []*engine.Engine {
	for len(e.streamEng) < workers {
		e.streamEng = append(e.streamEng, engine.New(e.x))
	}
	return e.streamEng[:workers]
}

// chunkState tracks one chunk of a continuous stream. It fills a cache
// line of its own, so that the workers decrementing one chunk's count do
// not disturb the next chunk's.
type chunkState struct {
	left    atomic.Int64  // queries not answered yet
	started atomic.Int64  // UnixNano when its first grain was taken
	ended   time.Time     // when its last query was answered (before ready closes)
	ready   chan struct{} // closed once every query is answered
	freed   chan struct{} // closed once emitted: its buffer may be reused
	_       [64]byte
}

// streamGrain is the most queries a worker of a continuous stream takes at
// once. The workers share one counter (and a chunk's count): taken one
// query at a time, on 16 cores and queries of a few µs (AND), that cache
// line and the per-query waits on the buffers' channels cost more than the
// chunk barrier the continuous stream removes (thirteenth session: AND at
// 0.46-0.49 of bench query). A grain of 16 queries is at most 16 × the
// slowest query's time of imbalance at the stream's end.
const streamGrain = 16

// grainSize is the queries per grain for chunks of chunk queries over
// workers: streamGrain, or fewer where a chunk would give each worker less
// than 64 grains.
func grainSize(chunk, workers int) int {
	return max(1, min(streamGrain, chunk/(64*max(workers, 1))))
}

// streamCPU is the continuous stream over engines, one worker goroutine
// each; the engines are the call's alone while it runs.
func streamCPU(ctx context.Context, engines []*engine.Engine, qs []engine.Query, opt engine.Options, so StreamOptions,
	emit func(lo int, out []engine.Response) error) error {
	ropt, err := opt.Resolve()
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	chunk := so.Chunk
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	nch := (len(qs) + chunk - 1) / chunk
	if nch == 0 {
		return nil
	}
	var bufs [streamBuffers][]engine.Response
	for b := range bufs {
		if b < nch {
			bufs[b] = newResponses(min(chunk, len(qs)), so.ResultCap)
		}
	}
	chunks := make([]chunkState, nch)
	for c := range chunks {
		chunks[c].left.Store(int64(min(chunk, len(qs)-c*chunk)))
		chunks[c].ready = make(chan struct{})
		chunks[c].freed = make(chan struct{})
	}
	workers := min(len(engines), len(qs))
	g := grainSize(chunk, workers)
	sw := streamWork{qs: qs, opt: ropt, chunk: chunk, grain: g, perChunk: (chunk + g - 1) / g, chunks: chunks, bufs: &bufs,
		answered: so.Answered, writeFirst: so.ResultCap <= 0}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, en := range engines[:workers] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sw.worker(ctx, en)
		}()
	}
	defer wg.Wait() // after cancel: no worker outlives the call
	defer cancel()
	for c := range chunks {
		ch := &chunks[c]
		select {
		case <-ch.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
		lo := c * chunk
		out := bufs[c%streamBuffers][:min(chunk, len(qs)-lo)]
		t := time.Now()
		if err := emit(lo, out); err != nil {
			return err
		}
		if so.Trace != nil {
			so.Trace(ChunkTimes{Lo: lo, N: len(out), SearchStart: time.Unix(0, ch.started.Load()), SearchEnd: ch.ended,
				EmitStart: t, EmitEnd: time.Now()})
		}
		close(ch.freed)
	}
	return nil
}

// streamWork is what the workers of one continuous stream share. Grain i
// of the stream is grain i%perChunk of chunk i/perChunk: grains never
// cross a chunk's end.
type streamWork struct {
	qs           []engine.Query
	opt          engine.Options
	chunk, grain int
	perChunk     int // grains per chunk
	chunks       []chunkState
	bufs         *[streamBuffers][]engine.Response
	answered     func(lo int, out []engine.Response) // StreamOptions.Answered
	// writeFirst: a worker clears its grain of a buffer's first chunk
	// before it answers into it (the responses hold nothing yet; with
	// StreamOptions.ResultCap they hold their Results and are not).
	// SearchInto reads a response's Results before it stores it, and a
	// fresh page read first maps the zero page: its first store is then a
	// copy-on-write fault that flushes the TLB of every core running the
	// process (internal/pages). Cleared by the workers, the buffers' pages
	// are written first, in parallel, inside the stream.
	writeFirst bool
	_          [64]byte
	next       atomic.Int64 // the next grain to take
}

// worker answers grains taken in order until none is left or ctx ends. A
// grain of chunk c goes into buffer c%streamBuffers once chunk
// c-streamBuffers is emitted (waited for once per chunk the worker
// enters); the worker that answers a chunk's last query marks it ready.
func (sw *streamWork) worker(ctx context.Context, en *engine.Engine) {
	free := streamBuffers - 1 // the last chunk whose buffer is known free
	for {
		gi := int(sw.next.Add(1) - 1)
		c, lo := gi/sw.perChunk, (gi%sw.perChunk)*sw.grain
		clo := c * sw.chunk
		if clo+lo >= len(sw.qs) || ctx.Err() != nil {
			return
		}
		if c > free {
			select {
			case <-sw.chunks[c-streamBuffers].freed:
			case <-ctx.Done():
				return
			}
			free = c
		}
		ch := &sw.chunks[c]
		if lo == 0 {
			ch.started.Store(time.Now().UnixNano())
		}
		hi := min(lo+sw.grain, sw.chunk, len(sw.qs)-clo)
		buf := sw.bufs[c%streamBuffers]
		if sw.writeFirst && c < streamBuffers {
			clear(buf[lo:hi])
		}
		for i := lo; i < hi; i++ {
			r := &buf[i]
			r.Results, r.Stats, r.Err = en.SearchInto(r.Results, sw.qs[clo+i], sw.opt)
		}
		if sw.answered != nil {
			sw.answered(clo+lo, buf[lo:hi])
		}
		if ch.left.Add(int64(lo-hi)) == 0 {
			ch.ended = time.Now()
			close(ch.ready)
			// The emitter, just made runnable, waits for this core:
			// every core runs a worker, and a worker that never blocks
			// gives its core up only when the runtime preempts it (after
			// up to 10 ms). Yield now, so that the chunk is emitted at
			// once and its buffer comes back in time.
			runtime.Gosched()
		}
	}
}
