package cuda

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Context is one GPU's CUDA primary context together with the goroutine that
// owns it. CUDA makes a context current per OS thread, so the owner
// goroutine is locked to its OS thread (runtime.LockOSThread) for its whole
// life and every driver call of this package runs on it: other goroutines
// send it closures through Do and wait for their results.
//
// All methods of Context and of the objects it creates (Buffer, HostBuffer,
// Pool, Stream, Event, Module, Function, Kernels) are safe for concurrent
// use and may also be called inside a Do closure (Do runs inline when it is
// already on the owner thread).
type Context struct {
	dev   Device
	cuDev int32
	cu    uintptr     // CUcontext (the device's primary context)
	tid   int         // OS thread id of the owner goroutine
	g     uintptr     // getg() of the owner goroutine (onThread)
	sched SyncMode    // how the owner thread waits for the GPU
	dead  atomic.Bool // set by the owner goroutine just before it exits

	// Hot driver calls (fast.go): count, time inside them, timing on.
	drvCalls, drvNanos atomic.Int64
	drvTimed           atomic.Bool
	pollWait           atomic.Bool // SetPollWait (fast.go)

	mu     sync.RWMutex // guards closed against sends on work
	closed bool
	work   chan func()
	exited chan struct{}

	closeOnce sync.Once
	closeErr  error

	pool *Pool
	// params is LaunchFields' parameter arena (owner goroutine only).
	params *HostBuffer

	fatbinOnce sync.Once
	fatbin     *Fatbin
	fatbinErr  error
}

// Open starts a Context on the GPU with the given ordinal: it retains the
// device's primary context and makes it current on a new locked OS thread.
// The error wraps ErrUnavailable when there is no usable driver or GPU.
// Close releases it.
func Open(ordinal int) (*Context, error) {
	if err := loadDriver(); err != nil {
		return nil, err
	}
	var n int32
	if err := check("cuDeviceGetCount", drv.cuDeviceGetCount(&n)); err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= int(n) {
		return nil, &unavailableError{reason: fmt.Sprintf("no CUDA GPU %d (%d found); using the CPU backend", ordinal, n)}
	}
	d, err := deviceInfo(ordinal)
	if err != nil {
		return nil, err
	}
	if ok, why := d.Usable(); !ok {
		return nil, &unavailableError{reason: fmt.Sprintf("GPU %d (%s): %s; using the CPU backend", ordinal, d.Name, why)}
	}
	sched, err := SyncModeFromEnv()
	if err != nil {
		return nil, err
	}
	c := &Context{dev: d, sched: sched, work: make(chan func()), exited: make(chan struct{})}
	ready := make(chan error, 1)
	go c.loop(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	c.pool = newPool(c, d.TotalMemory/2)
	return c, nil
}

// loop is the owner goroutine. It never unlocks its OS thread: when it
// returns, the runtime terminates the thread, and with it the thread's CUDA
// state.
func (c *Context) loop(ready chan<- error) {
	runtime.LockOSThread()
	defer func() {
		// Set while still on the thread: once it exits its id may be reused.
		c.dead.Store(true)
		close(c.exited)
	}()
	c.tid, c.g = gettid(), getg()
	if err := check("cuDeviceGet", drv.cuDeviceGet(&c.cuDev, int32(c.dev.Ordinal))); err != nil {
		ready <- err
		return
	}
	if c.sched != SyncAuto {
		if err := check("cuDevicePrimaryCtxSetFlags_v2", drv.cuDevicePrimaryCtxSetFlags_v2(c.cuDev, uint32(c.sched))); err != nil {
			ready <- err
			return
		}
	}
	if err := check("cuDevicePrimaryCtxRetain", drv.cuDevicePrimaryCtxRetain(&c.cu, c.cuDev)); err != nil {
		ready <- err
		return
	}
	if err := check("cuCtxSetCurrent", drv.cuCtxSetCurrent(c.cu)); err != nil {
		drv.cuDevicePrimaryCtxRelease_v2(c.cuDev)
		ready <- err
		return
	}
	ready <- nil
	for f := range c.work {
		f()
	}
}

// Device describes the Context's GPU.
func (c *Context) Device() Device { return c.dev }

// OwnerThread is the OS thread id of the owner goroutine, the thread every
// driver call runs on (-1 where the OS has no thread ids): to pin it to a
// CPU (internal/affinity, qp serve --owner-cpu).
func (c *Context) OwnerThread() int { return c.tid }

// Pool is the Context's device memory pool.
func (c *Context) Pool() *Pool { return c.pool }

// onThread reports whether the caller runs on the owner goroutine, and so
// on the owner's OS thread, where the CUDA context is current. The owner
// is locked to its thread (runtime.LockOSThread in loop, never unlocked)
// for its whole life, so goroutine identity implies thread identity: the
// check compares the caller's g (getg, a register or TLS read) with the
// owner's instead of asking the kernel for the thread id (gettid, a system
// call on every driver call: 1,411 ns against 5.9 ns on the GPU host).
// After the owner exits its g may be reused by a new goroutine, hence dead.
func (c *Context) onThread() bool { return !c.dead.Load() && getg() == c.g }

// panicked carries a panic out of a Do closure to the calling goroutine.
type panicked struct{ v any }

// Do runs f on the owner goroutine, with the Context's CUDA context current,
// and returns f's error. It blocks until f returns. Called on the owner
// goroutine (inside another Do closure) it runs f inline. A panic in f is
// re-raised in the caller. After Close it returns ErrClosed without running f.
func (c *Context) Do(f func() error) error {
	if c.onThread() {
		return f()
	}
	var err error
	var p *panicked
	done := make(chan struct{})
	job := func() {
		defer close(done)
		defer func() {
			if v := recover(); v != nil {
				p = &panicked{v}
			}
		}()
		err = f()
	}
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return ErrClosed
	}
	c.work <- job
	c.mu.RUnlock()
	<-done
	if p != nil {
		panic(p.v)
	}
	return err
}

// Synchronize waits until all work on the GPU has finished
// (cuCtxSynchronize).
func (c *Context) Synchronize() error {
	return c.Do(func() error { return check("cuCtxSynchronize", drv.cuCtxSynchronize()) })
}

// MemInfo returns the free and total device memory in bytes.
func (c *Context) MemInfo() (free, total uint64, err error) {
	err = c.Do(func() error {
		var f, t uintptr
		if err := check("cuMemGetInfo_v2", drv.cuMemGetInfo_v2(&f, &t)); err != nil {
			return err
		}
		free, total = uint64(f), uint64(t)
		return nil
	})
	return free, total, err
}

// Close frees the pool's cached memory, unloads the kernels, releases the
// primary context and ends the owner goroutine. Buffers, streams and events
// still alive become invalid (the driver frees them with the context once
// no other Context retains it). Close is idempotent; calling it inside a Do
// closure is a programmer bug (it would wait for itself).
func (c *Context) Close() error {
	if c.onThread() {
		panic("BUG: cuda.Context.Close called inside Do")
	}
	c.closeOnce.Do(func() {
		var errs []error
		errs = append(errs, c.pool.close())
		errs = append(errs, c.Do(func() error {
			if c.params == nil {
				return nil
			}
			return c.params.Free()
		}))
		// Wait for a concurrent first Fatbin call; make later ones fail.
		c.fatbinOnce.Do(func() { c.fatbinErr = ErrClosed })
		if c.fatbin != nil {
			errs = append(errs, c.fatbin.mod.Unload())
		}
		errs = append(errs, c.Do(func() error {
			return check("cuDevicePrimaryCtxRelease_v2", drv.cuDevicePrimaryCtxRelease_v2(c.cuDev))
		}))
		c.mu.Lock()
		c.closed = true
		close(c.work)
		c.mu.Unlock()
		<-c.exited
		for _, e := range errs {
			if e != nil && c.closeErr == nil {
				c.closeErr = e
			}
		}
	})
	return c.closeErr
}
