package qp_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/engine"
)

// TestAutoGPU: Device Auto over a usable GPU (the CUDA emulator counts)
// answers 3 streams of 20,000 queries in chunks of 16,384 (large enough to
// be split between the processors once both are measured,
// auto_split.go) exactly as the CPU engine does, split or not, and with
// NoSplit too. It skips without a GPU.
func TestAutoGPU(t *testing.T) {
	path := writeIndex(t)
	ctx := context.Background()
	qs, want := cpuAnswers(t, path, 20000)
	for _, noSplit := range []bool{false, true} {
		var notes []string
		e, err := qp.Open(path, qp.Options{Threads: 2, NoSplit: noSplit, Notice: func(s string) { notes = append(notes, s) }})
		if err != nil {
			t.Fatal(err)
		}
		if e.GPU() == nil {
			e.Close()
			t.Skipf("no usable GPU: %q", notes)
		}
		for range 3 {
			next := 0
			err := qp.Stream(ctx, e.Backend(), qs, engine.Options{}, qp.DefaultChunk, inOrder(want, qp.DefaultChunk, &next))
			if err != nil || next != len(qs) {
				t.Fatalf("NoSplit %v: %v\n%s", noSplit, err, e.Routing())
			}
		}
		t.Logf("NoSplit %v: %s", noSplit, e.Routing())
		e.Close()
	}
}

// TestAutoGPUStream: Engine.StreamWith under Device Auto (a race of both
// processors on a shared queue, then segments on one processor's own
// stream: the continuous CPU stream with Answered, the GPU's with two
// chunks in flight) answers every query as the CPU engine does, in order,
// with Answered's pieces inside their chunks: as the router measures (a
// race: the emulator's GPU answers its first two chunks while the CPU
// answers the rest), with the segments sent to the GPU's stream, then to
// the CPU's, by measured stream times set by hand, and in a race again.
// An emit error and a cancelled context end a race and a GPU stream (the
// CPU's stream resuming mid-chunk after a race: TestStreamContinuousFirst).
// It skips without a GPU.
func TestAutoGPUStream(t *testing.T) {
	path := writeIndex(t)
	ctx := context.Background()
	qs, want := cpuAnswers(t, path, 6000)
	var notes []string
	e, err := qp.Open(path, qp.Options{Threads: 2, Notice: func(s string) { notes = append(notes, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.GPU() == nil {
		t.Skipf("no usable GPU: %q", notes)
	}
	const chunk = 1000
	for i, force := range [][2]float64{{}, {1, 1e-9}, {1e-9, 1}, {-1, -1}} {
		switch {
		case force[0] < 0:
			// The measurements forgotten: a race again, after the
			// streams forced on either processor.
			qp.ResetRouteStreams(e, qs)
		case force[0] > 0:
			qp.SetStreamTimes(e, qs, force[0], force[1])
		}
		next := 0
		var answered atomic.Int64
		so := qp.StreamOptions{Chunk: chunk, InFlight: 2, Continuous: true, Answered: func(lo int, out []engine.Response) {
			if len(out) == 0 || lo/chunk != (lo+len(out)-1)/chunk {
				t.Errorf("run %d: Answered piece [%d, %d) crosses a chunk's end", i, lo, lo+len(out))
			}
			answered.Add(int64(len(out)))
		}}
		if err := e.StreamWith(ctx, qs, engine.Options{}, so, inOrder(want, chunk, &next)); err != nil || next != len(qs) {
			t.Fatalf("run %d: %v after %d of %d queries\n%s", i, err, next, len(qs), e.Routing())
		}
		t.Logf("run %d: %d queries formatted by Answered; %s", i, answered.Load(), e.Routing())
	}
	// An emit error or a cancelled context ends the stream, in a
	// calibration and on the GPU's stream.
	stream := func(ctx context.Context, emit func(int, []engine.Response) error) error {
		return e.StreamWith(ctx, qs, engine.Options{}, qp.StreamOptions{Chunk: chunk, InFlight: 2, Continuous: true}, emit)
	}
	qp.ResetRouteStreams(e, qs)
	checkStreamStops(t, ctx, stream)
	qp.SetStreamTimes(e, qs, 1, 1e-9)
	checkStreamStops(t, ctx, stream)
}

// TestStreamGPUInFlight: a GPU processor's stream with two and three
// chunks in flight (qp query's GPU path: one chunk's preparation beside
// another's device work) answers every query as the CPU engine does, in
// order. It skips without a GPU.
func TestStreamGPUInFlight(t *testing.T) {
	path := writeIndex(t)
	ctx := context.Background()
	qs, want := cpuAnswers(t, path, 3000)
	var notes []string
	e, err := qp.Open(path, qp.Options{Device: qp.GPU, Threads: 2, Notice: func(s string) { notes = append(notes, s) }})
	if err != nil || e.GPU() == nil {
		if e != nil {
			e.Close()
		}
		t.Skipf("no usable GPU: %v %q", err, notes)
	}
	defer e.Close()
	for _, f := range []int{2, 3} {
		next := 0
		err := qp.StreamWith(ctx, e.Backend(), qs, engine.Options{}, qp.StreamOptions{Chunk: 700, InFlight: f}, inOrder(want, 700, &next))
		if err != nil || next != len(qs) {
			t.Fatalf("%d in flight: %v after %d of %d queries", f, err, next, len(qs))
		}
	}
}

// cpuAnswers returns at least n of streamQueries' queries over the index
// at path and the CPU engine's answers to them.
func cpuAnswers(t *testing.T, path string, n int) ([]engine.Query, []engine.Response) {
	t.Helper()
	cpu, err := qp.Open(path, qp.Options{Device: qp.CPU, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	var qs []engine.Query
	for len(qs) < n {
		qs = append(qs, streamQueries(cpu)...)
	}
	want := make([]engine.Response, len(qs))
	if err := cpu.SearchBatch(context.Background(), qs, engine.Options{}, want); err != nil {
		t.Fatal(err)
	}
	return qs, want
}
