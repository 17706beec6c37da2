package cuda

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Module is a loaded CUDA module (cuModuleLoadData).
type Module struct {
	ctx      *Context
	h        uintptr
	unloaded atomic.Bool
}

// LoadModule loads a fatbin, cubin or NUL-terminated PTX image. The image is
// copied into 8-byte-aligned memory first (fatbin and cubin headers are read
// as 64-bit words; embedded data carries no alignment guarantee); the driver
// reads the image only during the call.
func (c *Context) LoadModule(image []byte) (*Module, error) {
	buf := make([]uint64, len(image)/8+2) // >= 8 zero bytes after the image
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), 8*len(buf)), image)
	m := &Module{ctx: c}
	err := c.Do(func() error {
		return check("cuModuleLoadData", drv.cuModuleLoadData(&m.h, unsafe.Pointer(&buf[0])))
	})
	runtime.KeepAlive(buf)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Unload unloads the module; its Functions become invalid. Unloading twice
// is a programmer bug.
func (m *Module) Unload() error {
	if m.unloaded.Swap(true) {
		panic("BUG: cuda.Module unloaded twice")
	}
	return m.ctx.Do(func() error { return check("cuModuleUnload", drv.cuModuleUnload(m.h)) })
}

// Function is a kernel of a Module.
type Function struct {
	mod  *Module
	h    uintptr
	name string
}

// Function looks up a kernel by its (extern "C") name.
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{mod: m, name: name}
	err := m.ctx.Do(func() error { return check("cuModuleGetFunction", drv.cuModuleGetFunction(&f.h, m.h, name)) })
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", name, err)
	}
	return f, nil
}

// Name is the kernel's name.
func (f *Function) Name() string { return f.name }

// FuncAttrs are a kernel's compiled resource needs (cuFuncGetAttribute).
type FuncAttrs struct {
	MaxThreadsPerBlock int
	StaticSharedBytes  int
	LocalBytes         int // per thread; nonzero means register spills or stack arrays
	Registers          int // per thread
}

// Attrs returns the kernel's resource needs.
func (f *Function) Attrs() (FuncAttrs, error) {
	var a FuncAttrs
	err := f.mod.ctx.Do(func() error {
		for _, q := range []struct {
			attr int32
			dst  *int
		}{{0, &a.MaxThreadsPerBlock}, {1, &a.StaticSharedBytes}, {3, &a.LocalBytes}, {4, &a.Registers}} {
			var v int32
			if err := check("cuFuncGetAttribute", drv.cuFuncGetAttribute(&v, q.attr, f.h)); err != nil {
				return err
			}
			*q.dst = int(v)
		}
		return nil
	})
	return a, err
}

// Dim3 is a grid or thread-block shape.
type Dim3 struct{ X, Y, Z uint32 }

// packParams stores each kernel argument in its own 8-byte slot, in the
// byte order the kernel reads it (little-endian: a 4-byte parameter is the
// slot's low half). Accepted: DevicePtr, *Buffer (its address, 0 for nil),
// uint32, int32, uint64, int64, float32, float64. Any other type (int and
// uint included: their C size is ambiguous) is a programmer bug.
func packParams(args []any) []uint64 {
	slots := make([]uint64, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case DevicePtr:
			slots[i] = uint64(v)
		case *Buffer:
			if v != nil {
				slots[i] = uint64(v.ptr)
			}
		case uint32:
			slots[i] = uint64(v)
		case int32:
			slots[i] = uint64(uint32(v))
		case uint64:
			slots[i] = v
		case int64:
			slots[i] = uint64(v)
		case float32:
			slots[i] = uint64(math.Float32bits(v))
		case float64:
			slots[i] = math.Float64bits(v)
		default:
			panic(fmt.Sprintf("BUG: cuda kernel argument %d has unsupported type %T", i, a))
		}
	}
	return slots
}

// Launch enqueues the kernel on s (nil: the legacy default stream) with the
// given grid and block shapes, dynamic shared memory bytes and arguments
// (see packParams for the accepted types; they must match the kernel's
// parameter list in number and size).
//
// Pointer safety. cuLaunchKernel takes void **kernelParams: an array of
// pointers, each to one argument value, which the driver reads during the
// call (the values are copied into the launch; nothing is retained after it
// returns). Both the array and the values live in Go memory here, and the
// array holds Go pointers, which the cgo rules (that purego calls follow)
// allow only when the memory pointed to is pinned. So the values' slots and
// the pointer array are pinned with a runtime.Pinner for the duration of the
// call: pinned objects are heap objects (Pin makes them escape), never move
// and are not freed, and the GC may see Go pointers in memory that C reads.
// They are unpinned after the call returns, when the driver is done with
// them.
func (f *Function) Launch(grid, block Dim3, sharedMem int, s *Stream, args ...any) error {
	slots := packParams(args)
	var pinner runtime.Pinner
	defer pinner.Unpin()
	var params unsafe.Pointer
	if len(slots) > 0 {
		ptrs := make([]unsafe.Pointer, len(slots))
		pinner.Pin(&slots[0])
		for i := range slots {
			ptrs[i] = unsafe.Pointer(&slots[i])
		}
		pinner.Pin(&ptrs[0])
		params = unsafe.Pointer(&ptrs[0])
	}
	return f.launch(grid, block, sharedMem, s, params)
}

// launch checks the shapes and calls cuLaunchKernel with the (pinned)
// kernelParams array params.
func (f *Function) launch(grid, block Dim3, sharedMem int, s *Stream, params unsafe.Pointer) error {
	f.checkShape(grid, block, sharedMem)
	return f.mod.ctx.Do(func() error { return f.launchOwner(grid, block, sharedMem, s, params) })
}

// checkShape panics on an empty shape or a shared memory size out of range.
func (f *Function) checkShape(grid, block Dim3, sharedMem int) {
	if grid.X == 0 || grid.Y == 0 || grid.Z == 0 || block.X == 0 || block.Y == 0 || block.Z == 0 {
		panic(fmt.Sprintf("BUG: cuda launch of %s with empty shape grid %v block %v", f.name, grid, block))
	}
	if sharedMem < 0 || sharedMem > math.MaxUint32 {
		panic(fmt.Sprintf("BUG: cuda launch of %s with %d bytes of shared memory", f.name, sharedMem))
	}
}

// launchOwner is launch's driver call, on the owner goroutine.
func (f *Function) launchOwner(grid, block Dim3, sharedMem int, s *Stream, params unsafe.Pointer) error {
	s.enqueued()
	err := check("cuLaunchKernel", f.mod.ctx.cuLaunchKernel(f.h, grid.X, grid.Y, grid.Z, block.X, block.Y, block.Z,
		uint32(sharedMem), s.handle(), params))
	if err != nil {
		return fmt.Errorf("kernel %s: %w", f.name, err)
	}
	return nil
}

// MaxParamBytes is the driver's limit on a kernel's parameters (4 KiB
// before CUDA 12.1 and Volta; qp's kernels stay under it).
const MaxParamBytes = 4096

// LaunchParams enqueues f, a kernel whose one parameter is a struct passed
// by value (`__global__ void k(const __grid_constant__ P p)`), with *p as
// that parameter: the typed alternative to Launch's argument list. P must
// mirror the kernel's struct exactly (cuda/kern/layout.go, checked by its
// TestLayout) and hold no Go pointers (device addresses are DevicePtr);
// one of more than MaxParamBytes is a programmer bug. Shapes as Launch.
//
// Pointer safety as Launch: the driver reads *p during the call through
// the one-entry pointer array; both are pinned for the call.
//
// qp's kernels do not take struct parameters (cuda/kern passes its structs
// with LaunchFields): with nvcc 11.8 the same kernel bodies compiled to
// other code, and the GPU AND ran slower (docs/ARCHITECTURE.md).
func LaunchParams[P any](f *Function, grid, block Dim3, sharedMem int, s *Stream, p *P) error {
	if n := unsafe.Sizeof(*p); n == 0 || n > MaxParamBytes {
		panic(fmt.Sprintf("BUG: cuda launch of %s with a %d-byte parameter struct", f.name, n))
	}
	var pinner runtime.Pinner
	defer pinner.Unpin()
	pinner.Pin(p)
	ptrs := []unsafe.Pointer{unsafe.Pointer(p)}
	pinner.Pin(&ptrs[0])
	return f.launch(grid, block, sharedMem, s, unsafe.Pointer(&ptrs[0]))
}

// LaunchFields enqueues f, a kernel with positional parameters, with the
// fields of *p as its parameters, in order: the typed alternative to
// Launch's argument list, and how cuda/kern launches every kernel (a
// struct parameter changes the code nvcc generates for the kernel). Every
// field must be a 4- or 8-byte number (uint32, int32, float32, uint64,
// DevicePtr, ...) matching the kernel's parameter of the same position
// (cuda/kern checks the list at compile time); anything else, or more than
// MaxParamBytes, is a programmer bug. Shapes as Launch.
//
// Pointer safety: on the owner goroutine, *p is copied into the Context's
// parameter arena (pinned host memory, outside the Go heap) and the
// pointer array built there; cuLaunchKernel copies the parameters before
// it returns, so one arena serves every launch, and no Go memory is
// pinned per launch (runtime.Pinner took about 0.4-0.7 µs of the owner's
// time a launch; issue 20).
func LaunchFields[P any](f *Function, grid, block Dim3, sharedMem int, s *Stream, p *P) error {
	offs := fieldOffsets(reflect.TypeFor[P]())
	n := unsafe.Sizeof(*p)
	f.checkShape(grid, block, sharedMem)
	c := f.mod.ctx
	return c.Do(func() error {
		a, err := c.paramArena()
		if err != nil {
			return err
		}
		vals := a.p
		copy(unsafe.Slice((*byte)(vals), n), unsafe.Slice((*byte)(unsafe.Pointer(p)), n))
		ptrs := unsafe.Add(a.p, MaxParamBytes)
		pa := unsafe.Slice((*uintptr)(ptrs), len(offs))
		for i, off := range offs {
			pa[i] = uintptr(vals) + off // addresses outside the Go heap
		}
		return f.launchOwner(grid, block, sharedMem, s, ptrs)
	})
}

// paramArena returns the Context's parameter arena (LaunchFields),
// allocating it on first use: MaxParamBytes of values, then one pointer a
// 4-byte field at most. Owner goroutine only.
func (c *Context) paramArena() (*HostBuffer, error) {
	if c.params == nil {
		h, err := c.AllocHost(MaxParamBytes + MaxParamBytes/4*int(unsafe.Sizeof(uintptr(0))))
		if err != nil {
			return nil, err
		}
		c.params = h
	}
	return c.params, nil
}

var fieldOffsetCache sync.Map // reflect.Type -> []uintptr

// fieldOffsets returns the offsets of t's fields, checking that t is a
// struct of 4- and 8-byte numbers no larger than MaxParamBytes.
func fieldOffsets(t reflect.Type) []uintptr {
	if v, ok := fieldOffsetCache.Load(t); ok {
		return v.([]uintptr)
	}
	if t.Kind() != reflect.Struct || t.NumField() == 0 || t.Size() > MaxParamBytes {
		panic(fmt.Sprintf("BUG: cuda.LaunchFields of %v: not a struct of 1..%d bytes", t, MaxParamBytes))
	}
	offs := make([]uintptr, t.NumField())
	for i := range offs {
		fl := t.Field(i)
		switch fl.Type.Kind() {
		case reflect.Uint32, reflect.Int32, reflect.Float32, reflect.Uint64, reflect.Int64, reflect.Float64:
		default:
			panic(fmt.Sprintf("BUG: cuda.LaunchFields of %v: field %s is a %v", t, fl.Name, fl.Type))
		}
		offs[i] = fl.Offset
	}
	fieldOffsetCache.Store(t, offs)
	return offs
}

// Fatbin is the embedded fatbin (kernels.fatbin, fatbin.go) loaded into
// one Context. Its kernels are looked up by name on first use and kept;
// the typed launchers of package cuda/kern are built on it. Safe for
// concurrent use.
type Fatbin struct {
	mod *Module
	ctx *Context

	mu    sync.Mutex
	fns   map[string]*Function
	order []*Function
	occ   map[occKey]int // resident CTAs per SM
}

type occKey struct {
	f         *Function
	blockSize int
}

// Fatbin loads the embedded fatbin into c on first use and returns it.
func (c *Context) Fatbin() (*Fatbin, error) {
	c.fatbinOnce.Do(func() { c.fatbin, c.fatbinErr = loadFatbin(c) })
	return c.fatbin, c.fatbinErr
}

func loadFatbin(c *Context) (*Fatbin, error) {
	m, err := c.LoadModule(fatbinImage)
	if err != nil {
		return nil, fmt.Errorf("cuda: loading the embedded kernels (sm_80, sm_90, compute_90 PTX) on %s (compute capability %d.%d, driver %d): %w",
			c.dev.Name, c.dev.Major, c.dev.Minor, drv.ver, err)
	}
	return &Fatbin{mod: m, ctx: c, fns: map[string]*Function{}, occ: map[occKey]int{}}, nil
}

// Context is the Context the fatbin is loaded into.
func (k *Fatbin) Context() *Context { return k.ctx }

// Function returns the kernel of that (extern "C") name, looked up on the
// first call. A name the fatbin lacks is an error that says to rebuild it.
func (k *Fatbin) Function(name string) (*Function, error) {
	k.mu.Lock()
	f, ok := k.fns[name]
	k.mu.Unlock()
	if ok {
		return f, nil
	}
	// The driver call runs without the lock: a Do closure on the owner
	// goroutine may look kernels up while another goroutine waits here.
	f, err := k.mod.Function(name)
	if err != nil {
		return nil, fmt.Errorf("cuda: the embedded fatbin lacks a kernel (rebuild it with `make kernels`): %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if g, ok := k.fns[name]; ok {
		return g, nil
	}
	k.fns[name] = f
	k.order = append(k.order, f)
	return f, nil
}

// Functions lists the kernels looked up so far, in lookup order (for
// resource reports).
func (k *Fatbin) Functions() []*Function {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]*Function(nil), k.order...)
}

// ResidentCTAs returns how many CTAs of blockSize threads of f fit on one
// SM at once (cuOccupancyMaxActiveBlocksPerMultiprocessor, no dynamic
// shared memory), at least 1; cached per kernel and block size.
func (k *Fatbin) ResidentCTAs(f *Function, blockSize int) int {
	key := occKey{f, blockSize}
	k.mu.Lock()
	c, ok := k.occ[key]
	k.mu.Unlock()
	if ok {
		return c
	}
	var n int32
	err := k.ctx.Do(func() error {
		return check("cuOccupancyMaxActiveBlocksPerMultiprocessor",
			drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f.h, int32(blockSize), 0))
	})
	if err != nil || n < 1 {
		n = 1
	}
	k.mu.Lock()
	k.occ[key] = int(n)
	k.mu.Unlock()
	return int(n)
}
