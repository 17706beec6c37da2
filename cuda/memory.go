package cuda

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// DevicePtr is a device memory address (CUdeviceptr).
type DevicePtr uint64

// Elem is an element type that can be copied between host and device
// memory byte for byte: fixed-size numbers, never Go pointers.
type Elem interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~uint64 | ~int64 | ~float32 | ~float64
}

func sizeOf[T Elem]() int { var z T; return int(unsafe.Sizeof(z)) }

// Buffer is device memory of one Context: from Context.Alloc (freed with
// cuMemFree) or from a Pool (returned to it). cuMemAlloc memory is aligned
// to at least 256 bytes.
type Buffer struct {
	ctx   *Context
	ptr   DevicePtr
	size  int   // bytes the caller asked for
	cap   int   // bytes allocated (the pool's size class)
	pool  *Pool // nil when not pooled
	freed atomic.Bool
}

// Ptr is the buffer's device address (0 for an empty buffer).
func (b *Buffer) Ptr() DevicePtr { return b.ptr }

// Len is the buffer's usable size in bytes (what was asked for).
func (b *Buffer) Len() int { return b.size }

// Cap is the allocated size in bytes (>= Len); bytes past Len are readable
// and writable but hold garbage.
func (b *Buffer) Cap() int { return b.cap }

// Alloc allocates size bytes of device memory outside the pool. The error
// matches ErrOutOfMemory (errors.Is) when the device is full.
func (c *Context) Alloc(size int) (*Buffer, error) {
	if size < 0 {
		panic("BUG: cuda.Context.Alloc of negative size")
	}
	b := &Buffer{ctx: c, size: size, cap: size}
	if size == 0 {
		return b, nil
	}
	err := c.Do(func() error {
		var p uint64
		if err := check("cuMemAlloc_v2", drv.cuMemAlloc_v2(&p, uintptr(size))); err != nil {
			return err
		}
		b.ptr = DevicePtr(p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: allocating %d bytes: %w", size, err)
	}
	return b, nil
}

// Free releases the buffer (to its pool when pooled). Freeing twice is a
// programmer bug.
func (b *Buffer) Free() error {
	if b.freed.Swap(true) {
		panic("BUG: cuda.Buffer freed twice")
	}
	if b.ptr == 0 {
		return nil
	}
	if b.pool != nil {
		return b.pool.put(b.ptr, b.cap)
	}
	return b.ctx.Do(func() error { return check("cuMemFree_v2", drv.cuMemFree_v2(uint64(b.ptr))) })
}

// CheckSpan panics (a programmer bug) unless [off, off+n) lies inside
// [0, size): the bounds check of every copy and view of a buffer.
func CheckSpan(what string, off, n, size int) { span(what, off, n, size) }

// span panics unless [off, off+n) lies inside [0, size).
func span(what string, off, n, size int) {
	if off < 0 || n < 0 || off > size || n > size-off {
		panic(fmt.Sprintf("BUG: cuda: %s [%d, %d+%d) outside a %d-byte buffer", what, off, off, n, size))
	}
}

// BufferView returns a Buffer that aliases bytes [off, off+n) of b, for
// APIs that take a *Buffer (kern.DecodeArgs.Status, ...). It owns nothing
// and is valid while b is; freeing it is a programmer bug (it panics).
func BufferView(b *Buffer, off, n int) *Buffer {
	span("BufferView", off, n, b.size)
	v := &Buffer{ctx: b.ctx, ptr: b.ptr + DevicePtr(off), size: n, cap: b.cap - off}
	v.freed.Store(true)
	return v
}

// Context is the Context that owns b.
func (b *Buffer) Context() *Context { return b.ctx }

// CopyToDevice copies src into dst at byte offset off and returns when src
// may be reused. src may be any Go memory: the driver reads it during the
// call only (cuMemcpyHtoD_v2 stages pageable memory before returning); the
// copy is ordered on the legacy default stream, so work on non-blocking
// streams must be ordered after it by the caller (Context.Synchronize).
func CopyToDevice[T Elem](dst *Buffer, off int, src []T) error {
	n := len(src) * sizeOf[T]()
	span("CopyToDevice", off, n, dst.size)
	if n == 0 {
		return nil
	}
	err := dst.ctx.Do(func() error {
		return check("cuMemcpyHtoD_v2", drv.cuMemcpyHtoD_v2(uint64(dst.ptr)+uint64(off), unsafe.Pointer(unsafe.SliceData(src)), uintptr(n)))
	})
	runtime.KeepAlive(src)
	return err
}

// CopyFromDevice copies len(dst) elements from src at byte offset off into
// dst and returns when they have arrived (cuMemcpyDtoH_v2 is synchronous:
// it waits for prior work on the legacy default stream, not for
// non-blocking streams).
func CopyFromDevice[T Elem](dst []T, src *Buffer, off int) error {
	n := len(dst) * sizeOf[T]()
	span("CopyFromDevice", off, n, src.size)
	if n == 0 {
		return nil
	}
	err := src.ctx.Do(func() error {
		return check("cuMemcpyDtoH_v2", drv.cuMemcpyDtoH_v2(unsafe.Pointer(unsafe.SliceData(dst)), uint64(src.ptr)+uint64(off), uintptr(n)))
	})
	runtime.KeepAlive(dst)
	return err
}

// HostBuffer is page-locked ("pinned") host memory from cuMemAllocHost:
// the only host memory asynchronous copies accept, since the DMA engine
// reads or writes it after the call returns (Go memory could be freed or
// reused by then). It is C memory, invisible to the Go garbage collector;
// the slices Bytes and HostSlice return are valid until Free.
type HostBuffer struct {
	ctx   *Context
	p     unsafe.Pointer
	size  int
	freed atomic.Bool
}

// AllocHost allocates size bytes of pinned host memory (page-aligned).
func (c *Context) AllocHost(size int) (*HostBuffer, error) {
	if size < 0 {
		panic("BUG: cuda.Context.AllocHost of negative size")
	}
	h := &HostBuffer{ctx: c, size: size}
	if size == 0 {
		return h, nil
	}
	err := c.Do(func() error {
		return check("cuMemAllocHost_v2", drv.cuMemAllocHost_v2(&h.p, uintptr(size)))
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: allocating %d pinned host bytes: %w", size, err)
	}
	return h, nil
}

// Bytes is the buffer's memory; valid until Free.
func (h *HostBuffer) Bytes() []byte {
	if h.p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(h.p), h.size)
}

// Len is the buffer's size in bytes.
func (h *HostBuffer) Len() int { return h.size }

// HostSlice views h as []T (len = h.Len()/sizeof(T)); valid until Free.
// Pinned memory is page-aligned, so any T is aligned.
func HostSlice[T Elem](h *HostBuffer) []T {
	if h.p == nil {
		return nil
	}
	return unsafe.Slice((*T)(h.p), h.size/sizeOf[T]())
}

// Free releases the pinned memory; every slice of it becomes invalid.
// Freeing twice is a programmer bug.
func (h *HostBuffer) Free() error {
	if h.freed.Swap(true) {
		panic("BUG: cuda.HostBuffer freed twice")
	}
	if h.p == nil {
		return nil
	}
	return h.ctx.Do(func() error { return check("cuMemFreeHost", drv.cuMemFreeHost(h.p)) })
}

// Pool is a device memory pool with size classes, so that query batches
// reuse allocations instead of calling cuMemAlloc (which synchronizes the
// device) per batch. Sizes up to 256 bytes share one class; above that each
// power-of-two range (2^(k-1), 2^k] has four classes spaced 2^(k-3) apart,
// so at most 25% of a buffer is rounding. Freed buffers are cached per class
// up to a byte limit (half the device memory by default) and released on
// Trim, on Close, or when an allocation runs out of memory.
type Pool struct {
	ctx *Context

	mu        sync.Mutex
	free      map[int][]DevicePtr // class size → cached buffers
	cached    uint64              // bytes in free
	maxCached uint64
	closed    bool
	stats     PoolStats
}

// PoolStats counts a Pool's activity.
type PoolStats struct {
	Allocs      int64  // cuMemAlloc calls
	Reuses      int64  // Gets served from the cache
	Frees       int64  // cuMemFree calls
	CachedBytes uint64 // bytes cached now
}

func newPool(c *Context, maxCached uint64) *Pool {
	return &Pool{ctx: c, free: map[int][]DevicePtr{}, maxCached: maxCached}
}

// poolMinClass is the smallest size class in bytes.
const poolMinClass = 256

// classSize is the size class of an n-byte request.
func classSize(n int) int {
	if n <= poolMinClass {
		return poolMinClass
	}
	k := bits.Len(uint(n - 1)) // 2^(k-1) < n <= 2^k
	step := 1 << (k - 3)
	return (n + step - 1) &^ (step - 1)
}

// Get returns a buffer of at least size bytes (Len() == size), from the
// cache when one of its class is free. When the device is full it releases
// the cache and tries once more; the error then matches ErrOutOfMemory.
func (p *Pool) Get(size int) (*Buffer, error) {
	if size < 0 {
		panic("BUG: cuda.Pool.Get of negative size")
	}
	b := &Buffer{ctx: p.ctx, size: size, pool: p}
	if size == 0 {
		return b, nil
	}
	cs := classSize(size)
	b.cap = cs
	p.mu.Lock()
	if l := p.free[cs]; len(l) > 0 {
		b.ptr = l[len(l)-1]
		p.free[cs] = l[:len(l)-1]
		p.cached -= uint64(cs)
		p.stats.Reuses++
		p.mu.Unlock()
		return b, nil
	}
	p.stats.Allocs++
	p.mu.Unlock()
	alloc := func() error {
		var d uint64
		if err := check("cuMemAlloc_v2", drv.cuMemAlloc_v2(&d, uintptr(cs))); err != nil {
			return err
		}
		b.ptr = DevicePtr(d)
		return nil
	}
	err := p.ctx.Do(alloc)
	if err != nil && isOOM(err) {
		if terr := p.Trim(); terr != nil {
			return nil, terr
		}
		err = p.ctx.Do(alloc)
	}
	if err != nil {
		return nil, fmt.Errorf("cuda pool: allocating %d bytes (class %d): %w", size, cs, err)
	}
	return b, nil
}

func isOOM(err error) bool {
	e, ok := err.(*Error)
	return ok && e.Code == resultOutOfMemory
}

// put caches or frees a pooled allocation.
func (p *Pool) put(ptr DevicePtr, cs int) error {
	p.mu.Lock()
	if !p.closed && p.cached+uint64(cs) <= p.maxCached {
		p.free[cs] = append(p.free[cs], ptr)
		p.cached += uint64(cs)
		p.mu.Unlock()
		return nil
	}
	closed := p.closed
	p.stats.Frees++
	p.mu.Unlock()
	if closed {
		return nil // the context released the memory
	}
	return p.ctx.Do(func() error { return check("cuMemFree_v2", drv.cuMemFree_v2(uint64(ptr))) })
}

// Trim frees every cached buffer.
func (p *Pool) Trim() error {
	p.mu.Lock()
	var ptrs []DevicePtr
	for cs, l := range p.free {
		ptrs = append(ptrs, l...)
		delete(p.free, cs)
	}
	p.cached = 0
	p.stats.Frees += int64(len(ptrs))
	p.mu.Unlock()
	if len(ptrs) == 0 {
		return nil
	}
	return p.ctx.Do(func() error {
		var first error
		for _, d := range ptrs {
			if err := check("cuMemFree_v2", drv.cuMemFree_v2(uint64(d))); err != nil && first == nil {
				first = err
			}
		}
		return first
	})
}

// close trims the pool and stops caching (Context.Close).
func (p *Pool) close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return p.Trim()
}

// SetMaxCached sets how many bytes of freed buffers the pool keeps.
func (p *Pool) SetMaxCached(bytes uint64) {
	p.mu.Lock()
	p.maxCached = bytes
	p.mu.Unlock()
}

// Stats returns the pool's counters.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.CachedBytes = p.cached
	return s
}
