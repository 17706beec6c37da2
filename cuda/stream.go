package cuda

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// Stream is a CUDA stream: work submitted to it runs in order,
// asynchronously to the host and to other streams. A nil *Stream means the
// legacy default stream, which is ordered with the synchronous copies
// (CopyToDevice, CopyFromDevice).
type Stream struct {
	ctx       *Context
	h         uintptr
	destroyed atomic.Bool
	// pending: work was enqueued since the last successful Synchronize,
	// which otherwise returns without a driver call (a launch set's
	// final wait after its download's). Every enqueue of this package
	// (launches, async copies, fills, event records) sets it on the owner
	// goroutine, where Synchronize clears it: none can slip in between.
	pending atomic.Bool
}

// enqueued marks work submitted to s (nil: the legacy default stream,
// not tracked).
func (s *Stream) enqueued() {
	if s != nil {
		s.pending.Store(true)
	}
}

// streamNonBlocking is CU_STREAM_NON_BLOCKING: no implicit ordering with the
// legacy default stream.
const streamNonBlocking = 1

// NewStream creates a non-blocking stream.
func (c *Context) NewStream() (*Stream, error) {
	s := &Stream{ctx: c}
	err := c.Do(func() error { return check("cuStreamCreate", drv.cuStreamCreate(&s.h, streamNonBlocking)) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// handle is the CUstream, 0 for nil.
func (s *Stream) handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// Synchronize waits for all work submitted to the stream. (For the legacy
// default stream, nil, use Context.Synchronize.) When nothing was
// submitted through this package since the last successful Synchronize,
// it returns at once, without a driver call.
func (s *Stream) Synchronize() error {
	if s == nil {
		panic("BUG: cuda.Stream.Synchronize on the nil (default) stream; use Context.Synchronize")
	}
	if !s.pending.Load() {
		return nil
	}
	return s.ctx.Do(func() error {
		// On the owner, like every enqueue: none can come in between.
		s.pending.Store(false)
		err := check("cuStreamSynchronize", s.ctx.cuStreamSynchronize(s.h))
		if err != nil {
			s.pending.Store(true)
		}
		return err
	})
}

// Destroy destroys the stream once its pending work is done (the call does
// not wait). Destroying twice is a programmer bug.
func (s *Stream) Destroy() error {
	if s.destroyed.Swap(true) {
		panic("BUG: cuda.Stream destroyed twice")
	}
	return s.ctx.Do(func() error { return check("cuStreamDestroy_v2", drv.cuStreamDestroy_v2(s.h)) })
}

// CopyToDevice enqueues a copy of n bytes from pinned src[srcOff:] to
// dst[dstOff:]. Neither buffer may be freed or (src) modified until the
// stream has passed the copy.
func (s *Stream) CopyToDevice(dst *Buffer, dstOff int, src *HostBuffer, srcOff, n int) error {
	span("Stream.CopyToDevice destination", dstOff, n, dst.size)
	span("Stream.CopyToDevice source", srcOff, n, src.size)
	if n == 0 {
		return nil
	}
	return dst.ctx.Do(func() error {
		s.enqueued()
		return check("cuMemcpyHtoDAsync_v2", dst.ctx.cuMemcpyHtoDAsync(uint64(dst.ptr)+uint64(dstOff),
			unsafe.Add(src.p, srcOff), uintptr(n), s.handle()))
	})
}

// CopyFromDevice enqueues a copy of n bytes from src[srcOff:] to pinned
// dst[dstOff:]; the data is there once the stream (or an event recorded
// after the copy) is synchronized.
func (s *Stream) CopyFromDevice(dst *HostBuffer, dstOff int, src *Buffer, srcOff, n int) error {
	span("Stream.CopyFromDevice destination", dstOff, n, dst.size)
	span("Stream.CopyFromDevice source", srcOff, n, src.size)
	if n == 0 {
		return nil
	}
	return src.ctx.Do(func() error {
		s.enqueued()
		return check("cuMemcpyDtoHAsync_v2", src.ctx.cuMemcpyDtoHAsync(unsafe.Add(dst.p, dstOff),
			uint64(src.ptr)+uint64(srcOff), uintptr(n), s.handle()))
	})
}

// CopyDevice enqueues a copy of n bytes from src[srcOff:] to dst[dstOff:]
// (both device buffers of the same Context; the ranges must not overlap).
func (s *Stream) CopyDevice(dst *Buffer, dstOff int, src *Buffer, srcOff, n int) error {
	span("Stream.CopyDevice destination", dstOff, n, dst.size)
	span("Stream.CopyDevice source", srcOff, n, src.size)
	if n == 0 {
		return nil
	}
	return dst.ctx.Do(func() error {
		s.enqueued()
		return check("cuMemcpyDtoDAsync_v2", dst.ctx.cuMemcpyDtoDAsync(uint64(dst.ptr)+uint64(dstOff),
			uint64(src.ptr)+uint64(srcOff), uintptr(n), s.handle()))
	})
}

// Fill32 enqueues setting n uint32 words of dst, from byte offset off (a
// multiple of 4), to v.
func (s *Stream) Fill32(dst *Buffer, off int, v uint32, n int) error {
	if off%4 != 0 {
		panic(fmt.Sprintf("BUG: cuda.Stream.Fill32 at unaligned offset %d", off))
	}
	span("Stream.Fill32", off, 4*n, dst.size)
	if n == 0 {
		return nil
	}
	return dst.ctx.Do(func() error {
		s.enqueued()
		return check("cuMemsetD32Async", dst.ctx.cuMemsetD32Async(uint64(dst.ptr)+uint64(off), v, uintptr(n), s.handle()))
	})
}

// Event is a CUDA event for ordering and timing stream work.
type Event struct {
	ctx       *Context
	h         uintptr
	destroyed atomic.Bool
}

// NewEvent creates an event that records timing (flags 0).
func (c *Context) NewEvent() (*Event, error) {
	e := &Event{ctx: c}
	err := c.Do(func() error { return check("cuEventCreate", drv.cuEventCreate(&e.h, 0)) })
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Record enqueues the event on s (nil: the legacy default stream).
func (e *Event) Record(s *Stream) error {
	return e.ctx.Do(func() error {
		s.enqueued()
		return check("cuEventRecord", e.ctx.cuEventRecord(e.h, s.handle()))
	})
}

// Synchronize waits until the work before the event's last Record is done.
func (e *Event) Synchronize() error {
	return e.ctx.Do(func() error { return check("cuEventSynchronize", e.ctx.cuEventSynchronize(e.h)) })
}

// Destroy destroys the event. Destroying twice is a programmer bug.
func (e *Event) Destroy() error {
	if e.destroyed.Swap(true) {
		panic("BUG: cuda.Event destroyed twice")
	}
	return e.ctx.Do(func() error { return check("cuEventDestroy_v2", drv.cuEventDestroy_v2(e.h)) })
}

// Elapsed returns the GPU time between two recorded, completed events
// (resolution about 0.5 µs).
func Elapsed(start, end *Event) (time.Duration, error) {
	var ms float32
	err := start.ctx.Do(func() error {
		return check("cuEventElapsedTime", start.ctx.cuEventElapsedTime(&ms, start.h, end.h))
	})
	runtime.KeepAlive(end)
	return time.Duration(float64(ms) * 1e6), err
}
