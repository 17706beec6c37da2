package qp_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// streamQueries are 50 queries of every mode and several k over the tiny
// index.
func streamQueries(e *qp.Engine) []engine.Query {
	texts := []string{"sorting", "parallel gpu", "compression lists", "query", "the", "maxscore wand", "inverted index"}
	var qs []engine.Query
	for i := range 50 {
		qs = append(qs, e.Query(qp.Request{ID: fmt.Sprint(i), Text: texts[i%len(texts)], Mode: engine.Mode(i % 3), K: 1 + i%5}))
	}
	return qs
}

// TestStreamContinuous: Engine.StreamWith with Continuous on the CPU gives
// SearchBatch's responses, in order, chunk by chunk, with and without
// preallocated results, for chunk sizes below, at and above the query
// count and more chunks than buffers; its trace has one ordered timeline
// per chunk; an emit error stops it; a cancelled context is returned.
func TestStreamContinuous(t *testing.T) {
	e, err := qp.Open(writeIndex(t), qp.Options{Device: qp.CPU, Threads: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	qs := streamQueries(e)
	ctx := context.Background()
	checkContinuous(t, e, qs, []int{1, 4, 7, 50, 64, 0})
	// 1,500 queries: chunks of 384 or more take grains of 2 to 16 queries
	// (a chunk of 385: its last grain shorter), the last chunk partial.
	var many []engine.Query
	for range 30 {
		many = append(many, qs...)
	}
	checkContinuous(t, e, many, []int{384, 385, 1000, 3072, 0})
	checkStreamStops(t, ctx, func(ctx context.Context, emit func(int, []engine.Response) error) error {
		return e.StreamWith(ctx, qs, engine.Options{}, qp.StreamOptions{Chunk: 5, Continuous: true}, emit)
	})
	if err := e.StreamWith(ctx, qs, engine.Options{OrAlgo: "nope"}, qp.StreamOptions{Continuous: true}, func(int, []engine.Response) error { return nil }); err == nil {
		t.Fatal("an unknown OR strategy streamed without error")
	}
}

// checkContinuous: Engine.StreamWith with Continuous gives SearchBatch's
// responses for each chunk size, in order, with and without preallocated
// results, and one ordered timeline per chunk; StreamOptions.Answered sees
// each response once, in its emit buffer, before the emit.
func checkContinuous(t *testing.T, e *qp.Engine, qs []engine.Query, chunks []int) {
	t.Helper()
	ctx := context.Background()
	want := make([]engine.Response, len(qs))
	if err := e.SearchBatch(ctx, qs, engine.Options{}, want); err != nil {
		t.Fatal(err)
	}
	for _, chunk := range chunks {
		for _, prealloc := range []int{0, 5} {
			next := 0
			var trace []qp.ChunkTimes
			// Answered sees every query once, in pieces inside one chunk,
			// before the chunk's emit, in the buffer emit gets.
			size := cmp.Or(chunk, qp.DefaultChunk)
			var mu sync.Mutex
			seen := make([]*engine.Response, len(qs))
			var pieceErr error
			answered := func(lo int, out []engine.Response) {
				mu.Lock()
				defer mu.Unlock()
				if len(out) == 0 || lo/size != (lo+len(out)-1)/size {
					pieceErr = fmt.Errorf("piece at %d of %d queries crosses a chunk of %d", lo, len(out), size)
				}
				for i := range out {
					if seen[lo+i] != nil {
						pieceErr = fmt.Errorf("query %d answered twice", lo+i)
					}
					seen[lo+i] = &out[i]
				}
			}
			so := qp.StreamOptions{Chunk: chunk, Continuous: true, ResultCap: prealloc, Trace: func(c qp.ChunkTimes) { trace = append(trace, c) }, Answered: answered}
			err := e.StreamWith(ctx, qs, engine.Options{}, so, func(lo int, out []engine.Response) error {
				if lo != next || len(out) == 0 || (chunk > 0 && len(out) > chunk) {
					return fmt.Errorf("chunk at %d of %d responses, want at %d", lo, len(out), next)
				}
				mu.Lock()
				defer mu.Unlock()
				if pieceErr != nil {
					return pieceErr
				}
				for i := range out {
					if seen[lo+i] != &out[i] {
						return fmt.Errorf("query %d: emitted without Answered seeing its response first", lo+i)
					}
				}
				for i := range out {
					w := &want[lo+i]
					if fmt.Sprint(out[i].Results) != fmt.Sprint(w.Results) || fmt.Sprint(out[i].Err) != fmt.Sprint(w.Err) {
						return fmt.Errorf("query %d: %v %v, want %v %v", lo+i, out[i].Results, out[i].Err, w.Results, w.Err)
					}
				}
				next = lo + len(out)
				return nil
			})
			if err != nil || next != len(qs) {
				t.Fatalf("chunk %d prealloc %d: %v after %d of %d queries", chunk, prealloc, err, next, len(qs))
			}
			checkTrace(t, trace, len(qs))
		}
	}
}

// checkTrace: one timeline per chunk, covering the queries in order, each
// searched before emitted.
func checkTrace(t *testing.T, trace []qp.ChunkTimes, n int) {
	t.Helper()
	lo := 0
	for _, c := range trace {
		if c.Lo != lo || c.N < 1 || c.SearchStart.IsZero() || c.SearchEnd.Before(c.SearchStart) ||
			c.EmitStart.Before(c.SearchEnd) || c.EmitEnd.Before(c.EmitStart) {
			t.Fatalf("chunk %+v after %d queries", c, lo)
		}
		lo += c.N
	}
	if lo != n {
		t.Fatalf("the trace covers %d of %d queries", lo, n)
	}
}

// TestWarm: Warm answers its synthetic queries without error on the CPU,
// and the engine's answers afterwards are unchanged.
func TestWarm(t *testing.T) {
	e, err := qp.Open(writeIndex(t), qp.Options{Device: qp.CPU, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	qs := streamQueries(e)
	ctx := context.Background()
	before := make([]engine.Response, len(qs))
	if err := e.SearchBatch(ctx, qs, engine.Options{}, before); err != nil {
		t.Fatal(err)
	}
	for _, m := range []engine.Mode{engine.And, engine.Or, engine.AndOr} {
		if err := e.Warm(ctx, engine.Options{}, m, 10, 100); err != nil {
			t.Fatalf("mode %v: %v", m, err)
		}
	}
	after := make([]engine.Response, len(qs))
	if err := e.SearchBatch(ctx, qs, engine.Options{}, after); err != nil {
		t.Fatal(err)
	}
	for i := range qs {
		if fmt.Sprint(before[i].Results, before[i].Err) != fmt.Sprint(after[i].Results, after[i].Err) {
			t.Fatalf("query %d changed after Warm: %v, was %v", i, after[i].Results, before[i].Results)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, -time.Second)
	defer cancel()
	if err := e.Warm(cctx, engine.Options{}, engine.Or, 10, 100); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Warm with an expired context: %v", err)
	}
}

// TestOpenBeside: Open calls Options.Beside once with the loaded index and
// returns only after it did, also when the processor fails to open.
func TestOpenBeside(t *testing.T) {
	path := writeIndex(t)
	calls, docs := 0, 0
	e, err := qp.Open(path, qp.Options{Device: qp.CPU, Beside: func(x *index.Index) {
		time.Sleep(10 * time.Millisecond)
		calls++
		docs = x.NumDocs()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if calls != 1 || docs != e.Index().NumDocs() || docs == 0 {
		t.Fatalf("Beside called %d times with %d documents, want once with %d", calls, docs, e.Index().NumDocs())
	}
	calls = 0
	_, err = qp.Open(path, qp.Options{Device: "tpu", Beside: func(*index.Index) { calls++ }})
	if err == nil {
		t.Fatal("Open with device tpu succeeded")
	}
	{
		calls = 0
		e, err := qp.Open(path, qp.Options{Device: qp.GPU, Beside: func(*index.Index) { time.Sleep(10 * time.Millisecond); calls++ }})
		if err == nil {
			e.Close()
		}
		if calls != 1 {
			t.Fatalf("Device GPU (err %v): Beside called %d times before Open returned, want once", err, calls)
		}
	}
}

// TestStreamContinuousFirst: the continuous CPU stream resuming in the
// middle of a chunk (a Device Auto stream after a race the CPU won:
// StreamOptions' unexported first) answers the partial chunk as one batch,
// then chunks on the caller's grid, every answer SearchBatch's, in order,
// with Answered's pieces inside the grid's chunks and never for the
// partial one.
func TestStreamContinuousFirst(t *testing.T) {
	e, err := qp.Open(writeIndex(t), qp.Options{Device: qp.CPU, Threads: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var qs []engine.Query
	for range 10 {
		qs = append(qs, streamQueries(e)...)
	}
	ctx := context.Background()
	want := make([]engine.Response, len(qs))
	if err := e.SearchBatch(ctx, qs, engine.Options{}, want); err != nil {
		t.Fatal(err)
	}
	const chunk, first = 64, 20
	var mu sync.Mutex
	var answered int
	so := qp.WithFirst(qp.StreamOptions{Chunk: chunk, Continuous: true, Answered: func(lo int, out []engine.Response) {
		mu.Lock()
		defer mu.Unlock()
		if lo < first || (lo-first)/chunk != (lo-first+len(out)-1)/chunk {
			t.Errorf("Answered piece [%d, %d) outside the grid's chunks after %d", lo, lo+len(out), first)
		}
		answered += len(out)
	}}, first)
	var got []string
	next := 0
	check := inOrder(want, chunk, &next)
	err = e.StreamWith(ctx, qs, engine.Options{}, so, func(lo int, out []engine.Response) error {
		got = append(got, fmt.Sprintf("%d+%d", lo, len(out)))
		return check(lo, out)
	})
	if err != nil || next != len(qs) {
		t.Fatalf("%v after %d of %d queries", err, next, len(qs))
	}
	if got[0] != fmt.Sprintf("0+%d", first) || got[1] != fmt.Sprintf("%d+%d", first, chunk) {
		t.Errorf("chunks %v, want 0+%d then %d+%d", got, first, first, chunk)
	}
	if answered != len(qs)-first {
		t.Errorf("Answered saw %d queries, want %d", answered, len(qs)-first)
	}
}
