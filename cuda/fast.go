package cuda

import (
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The hot driver calls of a query batch (launches, async copies and fills,
// event record and elapsed time, stream and event waits: 142 a GCIDE AND
// batch) call the resolved symbol through purego.SyscallN directly instead
// of the typed wrappers purego.RegisterFunc builds (driver.go): those
// convert every argument and the result by reflection and allocate on each
// call. The emulator (cuda/emu) exports the same symbols, so it runs
// through the same path.
//
// Each wrapper takes the C ABI's argument types (driver.go), widens them
// to uintptr (32-bit values zero-extended: the callee reads the low half
// of the register) and narrows the CUresult back to int32. Pointers are
// converted in the SyscallN call expression itself, which
// //go:uintptrescapes keeps valid for the call (unsafe.Pointer rule 4).
//
// Every wrapper counts the call on its Context (DriverCalls) and, while
// SetDriverTiming is on, adds the time spent inside the driver. They run
// on the owner goroutine only (inside Do).

// fastSym holds the resolved addresses of the hot symbols (bindDriver).
var fastSym struct {
	launch, htod, dtoh, dtod, memset32, evRecord, evSync, evElapsed, streamSync, evQuery, streamQuery uintptr
}

// fastSymbol returns where bindDriver stores the address of a hot symbol,
// nil for the others.
func fastSymbol(name string) *uintptr {
	switch name {
	case "cuLaunchKernel":
		return &fastSym.launch
	case "cuMemcpyHtoDAsync_v2":
		return &fastSym.htod
	case "cuMemcpyDtoHAsync_v2":
		return &fastSym.dtoh
	case "cuMemcpyDtoDAsync_v2":
		return &fastSym.dtod
	case "cuMemsetD32Async":
		return &fastSym.memset32
	case "cuEventRecord":
		return &fastSym.evRecord
	case "cuEventSynchronize":
		return &fastSym.evSync
	case "cuEventElapsedTime":
		return &fastSym.evElapsed
	case "cuStreamSynchronize":
		return &fastSym.streamSync
	case "cuEventQuery":
		return &fastSym.evQuery
	case "cuStreamQuery":
		return &fastSym.streamQuery
	}
	return nil
}

// DriverStats are a Context's driver calls through the hot path (fast.go)
// since Open: how many, and (while SetDriverTiming is on) the time spent
// inside them on the owner goroutine.
type DriverStats struct {
	Calls int64
	Time  time.Duration
}

// DriverStats returns the Context's counts; safe from any goroutine.
func (c *Context) DriverStats() DriverStats {
	return DriverStats{Calls: c.drvCalls.Load(), Time: time.Duration(c.drvNanos.Load())}
}

// SetDriverTiming turns the timing of every hot driver call on or off
// (two clock reads a call; the count is always kept).
func (c *Context) SetDriverTiming(on bool) { c.drvTimed.Store(on) }

// call counts one driver call and returns the time it starts (zero when
// untimed), for done.
func (c *Context) call() time.Time {
	c.drvCalls.Add(1)
	if c.drvTimed.Load() {
		return time.Now()
	}
	return time.Time{}
}

// done adds the time of a call started at t (call) when it was timed.
func (c *Context) done(t time.Time) {
	if !t.IsZero() {
		c.drvNanos.Add(int64(time.Since(t)))
	}
}

// b32 widens a 32-bit argument.
func b32(v uint32) uintptr { return uintptr(v) }

func (c *Context) cuLaunchKernel(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, s uintptr, params unsafe.Pointer) int32 {
	t := c.call()
	r, _, _ := purego.SyscallN(fastSym.launch, f, b32(gx), b32(gy), b32(gz), b32(bx), b32(by), b32(bz), b32(shmem), s,
		uintptr(params), 0)
	c.done(t)
	return int32(r)
}

func (c *Context) cuMemcpyHtoDAsync(dst uint64, src unsafe.Pointer, n uintptr, s uintptr) int32 {
	t := c.call()
	r, _, _ := purego.SyscallN(fastSym.htod, uintptr(dst), uintptr(src), n, s)
	c.done(t)
	return int32(r)
}

func (c *Context) cuMemcpyDtoHAsync(dst unsafe.Pointer, src uint64, n uintptr, s uintptr) int32 {
	t := c.call()
	r, _, _ := purego.SyscallN(fastSym.dtoh, uintptr(dst), uintptr(src), n, s)
	c.done(t)
	return int32(r)
}

func (c *Context) cuMemcpyDtoDAsync(dst, src uint64, n uintptr, s uintptr) int32 {
	t := c.call()
	r, _, _ := purego.SyscallN(fastSym.dtod, uintptr(dst), uintptr(src), n, s)
	c.done(t)
	return int32(r)
}

func (c *Context) cuMemsetD32Async(dst uint64, v uint32, n uintptr, s uintptr) int32 {
	t := c.call()
	r, _, _ := purego.SyscallN(fastSym.memset32, uintptr(dst), b32(v), n, s)
	c.done(t)
	return int32(r)
}

func (c *Context) cuEventRecord(e, s uintptr) int32 {
	t := c.call()
	r, _, _ := purego.SyscallN(fastSym.evRecord, e, s)
	c.done(t)
	return int32(r)
}

func (c *Context) cuEventSynchronize(e uintptr) int32 {
	t := c.call()
	var r uintptr
	if c.pollWait.Load() {
		r = poll(fastSym.evQuery, e)
	} else {
		r, _, _ = purego.SyscallN(fastSym.evSync, e)
	}
	c.done(t)
	return int32(r)
}

func (c *Context) cuEventElapsedTime(ms *float32, start, end uintptr) int32 {
	t := c.call()
	r, _, _ := purego.SyscallN(fastSym.evElapsed, uintptr(unsafe.Pointer(ms)), start, end)
	c.done(t)
	return int32(r)
}

func (c *Context) cuStreamSynchronize(s uintptr) int32 {
	t := c.call()
	var r uintptr
	if c.pollWait.Load() {
		r = poll(fastSym.streamQuery, s)
	} else {
		r, _, _ = purego.SyscallN(fastSym.streamSync, s)
	}
	c.done(t)
	return int32(r)
}

// SetPollWait makes the owner goroutine wait for the stream and for events
// by polling (cuStreamQuery, cuEventQuery, until they answer other than
// CUDA_ERROR_NOT_READY) instead of one blocking call (cuStreamSynchronize,
// cuEventSynchronize); off by default. A driver call is a system call to
// Go's scheduler (purego enters it as cgo does): one that lasts past a
// sysmon tick (20 µs to 10 ms) has its P taken for other goroutines, and
// on return the owner must wait for a P again, behind the runnable
// goroutines of a loaded server (issue 25: the served batch's device phase
// 15-30% longer than the same batch alone). Short queries in a loop keep
// the owner's P (each call a new system call tick, which sysmon does not
// retake), at the cost of the owner's core, busy for the wait as the
// driver's own spin (SyncAuto, SyncSpin) keeps it busy anyway. Meant for
// an owner thread on a CPU of its own (qp serve --owner-cpu). A poll counts
// as one driver call (DriverStats).
func (c *Context) SetPollWait(on bool) { c.pollWait.Store(on) }

// poll calls query(h) until it answers other than CUDA_ERROR_NOT_READY
// and returns that answer.
func poll(query, h uintptr) uintptr {
	for {
		r, _, _ := purego.SyscallN(query, h)
		if Result(int32(r)) != resultNotReady {
			return r
		}
	}
}
