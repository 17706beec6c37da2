package scheduler

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// prepGate parks some CPU slots while a GPU batch is being prepared on the
// host (Config.PrepareAdapt, issue 24). A GPU batch's host preparation
// (dictionary lookups, canonical order) fans out over the host's cores; at
// more than a million queries a second on 16 cores, with every core busy
// with a CPU query, it waited for cores and the GPU idled behind it. A
// parked slot does not start its next query until no batch is preparing,
// so that the preparation gets its cores; the slots with an index below
// park are the ones parked (the others never wait).
//
// The GPU slot calls begin before its SearchBatch call and end when the
// batch takes the device (Config.PrepareHook's callback) or, when the
// backend never calls it, once SearchBatch has returned; ends pair with
// begins (endOnce).
type prepGate struct {
	park      int          // slots 0..park-1 wait
	preparing atomic.Int32 // batches preparing now
	mu        sync.Mutex
	cond      sync.Cond
	parked    atomic.Int64 // times a slot waited (for tests and reports)
}

func newPrepGate(park int) *prepGate {
	g := &prepGate{park: park}
	g.cond.L = &g.mu
	return g
}

// begin marks a batch preparing.
func (g *prepGate) begin() {
	g.mu.Lock()
	g.preparing.Add(1)
	g.mu.Unlock()
}

// end marks a batch's preparation done, waking the parked slots when none
// is left.
func (g *prepGate) end() {
	g.mu.Lock()
	n := g.preparing.Add(-1)
	if n < 0 {
		g.mu.Unlock()
		panic("BUG: scheduler: prepGate.end without begin")
	}
	if n == 0 {
		g.cond.Broadcast()
	}
	g.mu.Unlock()
}

// wait blocks CPU slot slot while a batch is preparing, if slot is one of
// the parked ones. Without a batch preparing it costs one atomic load.
func (g *prepGate) wait(slot int) {
	if slot >= g.park || g.preparing.Load() == 0 {
		return
	}
	g.mu.Lock()
	if g.preparing.Load() > 0 {
		g.parked.Add(1)
	}
	for g.preparing.Load() > 0 {
		g.cond.Wait()
	}
	g.mu.Unlock()
}

// endOnce is one batch's end: called from the backend's hook or after the
// batch returned, whichever comes first.
type endOnce struct {
	g    *prepGate
	done atomic.Bool
}

func (e *endOnce) end(time.Duration) {
	if e.done.CompareAndSwap(false, true) {
		e.g.end()
	}
}

// gateBatch runs call between begin and end on g (nil: call alone), giving
// call a context that carries end through hook (Config.PrepareHook; nil:
// end when call returns).
func gateBatch(ctx context.Context, g *prepGate, hook func(context.Context, func(time.Duration)) context.Context, call func(context.Context) error) error {
	if g == nil {
		return call(ctx)
	}
	e := &endOnce{g: g}
	g.begin()
	defer e.end(0)
	if hook != nil {
		ctx = hook(ctx, e.end)
	}
	return call(ctx)
}
