package qp

import (
	"context"
	"fmt"
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
func (e *Engine) StreamWith(ctx context.Context, qs []engine.Query, opt engine.Options, so StreamOptions,
	emit func(lo int, out []engine.Response) error) error {
	cpu, ok := e.be.(*engine.CPU)
	if !so.Continuous || !ok {
		return StreamWith(ctx, e.be, qs, opt, so, emit)
	}
	e.streamMu.Lock() // one continuous stream at a time: they share the engines
	defer e.streamMu.Unlock()
	return streamCPU(ctx, e.streamEngines(cpu.Workers()), qs, opt, so, emit)
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

// chunkState tracks one chunk of a continuous stream.
type chunkState struct {
	left    atomic.Int64  // queries not answered yet
	started atomic.Int64  // UnixNano of the first query taken; 0 before
	ended   time.Time     // when its last query was answered (before ready closes)
	ready   chan struct{} // closed once every query is answered
	freed   chan struct{} // closed once emitted: its buffer may be reused
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
	ctx, cancel := context.WithCancel(ctx)
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, en := range engines[:min(len(engines), len(qs))] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			streamWorker(ctx, en, qs, ropt, chunk, chunks, &bufs, &next)
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

// streamWorker answers queries taken in order from next until none is
// left or ctx ends. The query of chunk c goes into buffer c%streamBuffers
// once chunk c-streamBuffers is emitted; the worker that answers a chunk's
// last query marks it ready.
func streamWorker(ctx context.Context, en *engine.Engine, qs []engine.Query, opt engine.Options, chunk int,
	chunks []chunkState, bufs *[streamBuffers][]engine.Response, next *atomic.Int64) {
	for {
		i := int(next.Add(1) - 1)
		if i >= len(qs) || ctx.Err() != nil {
			return
		}
		c := i / chunk
		if c >= streamBuffers {
			select {
			case <-chunks[c-streamBuffers].freed:
			case <-ctx.Done():
				return
			}
		}
		ch := &chunks[c]
		if ch.started.Load() == 0 {
			ch.started.CompareAndSwap(0, time.Now().UnixNano())
		}
		r := &bufs[c%streamBuffers][i-c*chunk]
		r.Results, r.Stats, r.Err = en.SearchInto(r.Results, qs[i], opt)
		if ch.left.Add(-1) == 0 {
			ch.ended = time.Now()
			close(ch.ready)
		}
	}
}
