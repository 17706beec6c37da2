package scheduler

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
)

// TestPrepGate: while a batch is preparing, the parked slots (index below
// park) wait and the others do not; the last end releases them; a second
// end of the same batch (hook, then return) is ignored.
func TestPrepGate(t *testing.T) {
	g := newPrepGate(2)
	g.wait(0) // nothing preparing: returns at once
	e1, e2 := &endOnce{g: g}, &endOnce{g: g}
	g.begin()
	g.begin()
	g.wait(2) // not a parked slot
	released := make(chan int, 2)
	for slot := range 2 {
		go func() { g.wait(slot); released <- slot }()
	}
	waitFor(t, "two parked slots", func() bool { return g.parked.Load() == 2 })
	e1.end(0)
	e1.end(0) // the same batch again: no effect
	select {
	case s := <-released:
		t.Fatalf("slot %d released with a batch still preparing", s)
	case <-time.After(20 * time.Millisecond):
	}
	if n := g.preparing.Load(); n != 1 {
		t.Fatalf("%d batches preparing after one of two ended, want 1", n)
	}
	e2.end(0)
	for range 2 {
		select {
		case <-released:
		case <-time.After(10 * time.Second):
			t.Fatal("parked slot not released after the last end")
		}
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("end without begin did not panic")
		}
	}()
	g.end()
}

// hookBackend calls the prepare hook in its context (as engine/gpu's
// SearchBatch calls its device hook) before answering, and records
// whether the gate was closed while it prepared.
type hookBackend struct {
	gate   func() *prepGate
	mu     sync.Mutex
	closed []bool
}

type hookKey struct{}

func (*hookBackend) Name() string { return "hook" }

func (h *hookBackend) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	h.mu.Lock()
	h.closed = append(h.closed, h.gate().preparing.Load() > 0)
	h.mu.Unlock()
	if f, ok := ctx.Value(hookKey{}).(func(time.Duration)); ok {
		f(0)
	}
	return nopBackend{}.SearchBatch(ctx, qs, opt, out)
}

// TestPrepareAdapt: with Config.PrepareAdapt the GPU's batches run with
// the gate closed until the hook fires, every query is answered, and a
// negative slot count is an error.
func TestPrepareAdapt(t *testing.T) {
	x := testIndex(t)
	if _, err := New(x, Config{CPU: &Processor{Backend: nopBackend{}}, PrepareAdapt: -1}); err == nil {
		t.Error("negative PrepareAdapt accepted")
	}
	var s *Scheduler
	h := &hookBackend{gate: func() *prepGate { return s.gate }}
	s, err := New(x, Config{
		CPU:          &Processor{Backend: nopBackend{}, Slots: 2, Sequential: true, Batch: BatchPolicy{MaxQueries: 4}},
		GPU:          &Processor{Backend: h, Slots: 2, Batch: BatchPolicy{MaxQueries: 16}},
		PrepareAdapt: 5,
		PrepareHook: func(ctx context.Context, f func(time.Duration)) context.Context {
			return context.WithValue(ctx, hookKey{}, f)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.gate == nil || s.gate.park != 2 {
		t.Fatalf("gate %+v, want one parking the CPU's 2 slots", s.gate)
	}
	qs := testQueries(500, 3)
	procs := runAll(t, s, qs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if procs[CPU]+procs[GPU] != len(qs) {
		t.Errorf("answered cpu %d + gpu %d of %d", procs[CPU], procs[GPU], len(qs))
	}
	if len(h.closed) == 0 || procs[GPU] == 0 {
		t.Errorf("no GPU batch (%d queries)", procs[GPU])
	}
	for i, c := range h.closed {
		if !c {
			t.Errorf("GPU batch %d ran with the gate open", i)
		}
	}
	if n := s.gate.preparing.Load(); n != 0 {
		t.Errorf("%d batches still preparing after Close", n)
	}
}
