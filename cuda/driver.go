package cuda

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// driverLib is the CUDA driver library. Only the driver API is used (no
// libcudart), so the NVIDIA driver is the one runtime dependency, and only
// when a GPU is used.
const driverLib = "libcuda.so.1"

// drv holds the bound driver entry points. Every function is bound by its
// exact ABI symbol: the _v2 names where cuda.h #defines the plain name to a
// _v2 (64-bit sizes, newer semantics), the plain name where there is no _v2.
// The plain (non-_ptsz) symbols give the legacy default stream for stream 0.
//
// Types follow the C ABI on LP64: CUresult, CUdevice, int, unsigned int and
// enums are 32-bit; size_t is uintptr; CUdeviceptr is uint64; opaque handles
// (CUcontext, CUmodule, CUfunction, CUstream, CUevent) are uintptr.
var drv struct {
	once sync.Once
	err  error   // why the driver cannot be used; nil once loaded
	lib  uintptr // dlopen handle
	ver  int32   // cuDriverGetVersion, e.g. 12040

	cuInit                                      func(flags uint32) int32
	cuDriverGetVersion                          func(v *int32) int32
	cuGetErrorName                              func(r int32, s **byte) int32
	cuDeviceGetCount                            func(n *int32) int32
	cuDeviceGet                                 func(dev *int32, ordinal int32) int32
	cuDeviceGetName                             func(name *byte, n int32, dev int32) int32
	cuDeviceTotalMem_v2                         func(bytes *uintptr, dev int32) int32
	cuDeviceGetAttribute                        func(v *int32, attr int32, dev int32) int32
	cuDevicePrimaryCtxRetain                    func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease_v2                func(dev int32) int32
	cuDevicePrimaryCtxSetFlags_v2               func(dev int32, flags uint32) int32
	cuCtxSetCurrent                             func(ctx uintptr) int32
	cuCtxSynchronize                            func() int32
	cuMemGetInfo_v2                             func(free, total *uintptr) int32
	cuMemAlloc_v2                               func(p *uint64, size uintptr) int32
	cuMemFree_v2                                func(p uint64) int32
	cuMemAllocHost_v2                           func(p *unsafe.Pointer, size uintptr) int32
	cuMemFreeHost                               func(p unsafe.Pointer) int32
	cuMemcpyHtoD_v2                             func(dst uint64, src unsafe.Pointer, n uintptr) int32
	cuMemcpyDtoH_v2                             func(dst unsafe.Pointer, src uint64, n uintptr) int32
	cuMemcpyHtoDAsync_v2                        func(dst uint64, src unsafe.Pointer, n uintptr, s uintptr) int32
	cuMemcpyDtoHAsync_v2                        func(dst unsafe.Pointer, src uint64, n uintptr, s uintptr) int32
	cuMemcpyDtoDAsync_v2                        func(dst, src uint64, n uintptr, s uintptr) int32
	cuMemsetD32Async                            func(dst uint64, v uint32, n uintptr, s uintptr) int32
	cuStreamCreate                              func(s *uintptr, flags uint32) int32
	cuStreamSynchronize                         func(s uintptr) int32
	cuStreamQuery                               func(s uintptr) int32
	cuStreamDestroy_v2                          func(s uintptr) int32
	cuEventCreate                               func(e *uintptr, flags uint32) int32
	cuEventRecord                               func(e, s uintptr) int32
	cuEventSynchronize                          func(e uintptr) int32
	cuEventQuery                                func(e uintptr) int32
	cuEventElapsedTime                          func(ms *float32, start, end uintptr) int32
	cuEventDestroy_v2                           func(e uintptr) int32
	cuModuleLoadData                            func(m *uintptr, image unsafe.Pointer) int32
	cuModuleUnload                              func(m uintptr) int32
	cuModuleGetFunction                         func(f *uintptr, m uintptr, name string) int32
	cuFuncGetAttribute                          func(v *int32, attr int32, f uintptr) int32
	cuLaunchKernel                              func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, s uintptr, params, extra unsafe.Pointer) int32
	cuOccupancyMaxActiveBlocksPerMultiprocessor func(n *int32, f uintptr, blockSize int32, dynSmem uintptr) int32
}

// drvBound is set once every symbol is bound, even if cuInit then fails
// (cuGetErrorName works without it); read without drv.once.
var drvBound atomic.Bool

// symbols lists every bound entry point; all are required.
func symbols() []struct {
	fptr any
	name string
} {
	return []struct {
		fptr any
		name string
	}{
		{&drv.cuInit, "cuInit"},
		{&drv.cuDriverGetVersion, "cuDriverGetVersion"},
		{&drv.cuGetErrorName, "cuGetErrorName"},
		{&drv.cuDeviceGetCount, "cuDeviceGetCount"},
		{&drv.cuDeviceGet, "cuDeviceGet"},
		{&drv.cuDeviceGetName, "cuDeviceGetName"},
		{&drv.cuDeviceTotalMem_v2, "cuDeviceTotalMem_v2"},
		{&drv.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
		{&drv.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
		{&drv.cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease_v2"},
		{&drv.cuDevicePrimaryCtxSetFlags_v2, "cuDevicePrimaryCtxSetFlags_v2"},
		{&drv.cuCtxSetCurrent, "cuCtxSetCurrent"},
		{&drv.cuCtxSynchronize, "cuCtxSynchronize"},
		{&drv.cuMemGetInfo_v2, "cuMemGetInfo_v2"},
		{&drv.cuMemAlloc_v2, "cuMemAlloc_v2"},
		{&drv.cuMemFree_v2, "cuMemFree_v2"},
		{&drv.cuMemAllocHost_v2, "cuMemAllocHost_v2"},
		{&drv.cuMemFreeHost, "cuMemFreeHost"},
		{&drv.cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2"},
		{&drv.cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2"},
		{&drv.cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2"},
		{&drv.cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync_v2"},
		{&drv.cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync_v2"},
		{&drv.cuMemsetD32Async, "cuMemsetD32Async"},
		{&drv.cuStreamCreate, "cuStreamCreate"},
		{&drv.cuStreamSynchronize, "cuStreamSynchronize"},
		{&drv.cuStreamQuery, "cuStreamQuery"},
		{&drv.cuStreamDestroy_v2, "cuStreamDestroy_v2"},
		{&drv.cuEventCreate, "cuEventCreate"},
		{&drv.cuEventRecord, "cuEventRecord"},
		{&drv.cuEventSynchronize, "cuEventSynchronize"},
		{&drv.cuEventQuery, "cuEventQuery"},
		{&drv.cuEventElapsedTime, "cuEventElapsedTime"},
		{&drv.cuEventDestroy_v2, "cuEventDestroy_v2"},
		{&drv.cuModuleLoadData, "cuModuleLoadData"},
		{&drv.cuModuleUnload, "cuModuleUnload"},
		{&drv.cuModuleGetFunction, "cuModuleGetFunction"},
		{&drv.cuFuncGetAttribute, "cuFuncGetAttribute"},
		{&drv.cuLaunchKernel, "cuLaunchKernel"},
		{&drv.cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor"},
	}
}

// unavailableError is why the driver (or every GPU) cannot be used. Its text
// is the human reason Available reports; it wraps ErrUnavailable.
type unavailableError struct {
	reason string
	err    error // underlying cause, or nil
}

func (e *unavailableError) Error() string { return e.reason }

func (e *unavailableError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrUnavailable}
	}
	return []error{ErrUnavailable, e.err}
}

// loadDriver opens and binds libcuda.so.1 and calls cuInit(0), once per
// process. The result (nil, or an *unavailableError) is sticky.
func loadDriver() error {
	drv.once.Do(func() { drv.err = bindDriver() })
	return drv.err
}

func bindDriver() error {
	h, err := dlopen(driverLib)
	if err != nil {
		return &unavailableError{
			reason: driverLib + " not found: no NVIDIA driver; using the CPU backend",
			err:    err,
		}
	}
	for _, s := range symbols() {
		sym, err := dlsym(h, s.name)
		if err != nil || sym == 0 {
			return &unavailableError{
				reason: fmt.Sprintf("%s lacks %s: NVIDIA driver too old for CUDA 11.8 kernels; using the CPU backend", driverLib, s.name),
				err:    err,
			}
		}
		purego.RegisterFunc(s.fptr, sym)
		if f := fastSymbol(s.name); f != nil {
			*f = sym // fast.go
		}
	}
	drv.lib = h
	drvBound.Store(true)
	if err := check("cuDriverGetVersion", drv.cuDriverGetVersion(&drv.ver)); err != nil {
		return &unavailableError{reason: "NVIDIA driver unusable: " + err.Error() + "; using the CPU backend", err: err}
	}
	if err := check("cuInit", drv.cuInit(0)); err != nil {
		var why string
		switch err.(*Error).Code {
		case resultNoDevice:
			why = "NVIDIA driver found but no CUDA GPU"
		default:
			why = "NVIDIA driver found but not usable (no GPU, or the kernel module is not loaded)"
		}
		return &unavailableError{reason: why + ": " + err.Error() + "; using the CPU backend", err: err}
	}
	return nil
}

// driverErrorName asks the loaded driver for a CUresult's name; "" when the
// driver is not loaded or does not know the code.
func driverErrorName(r Result) string {
	if !drvBound.Load() {
		return ""
	}
	var p *byte
	if drv.cuGetErrorName(int32(r), &p) != 0 || p == nil {
		return ""
	}
	return cString(p, 128)
}

// cString copies a NUL-terminated C string of at most max bytes.
func cString(p *byte, max int) string {
	b := unsafe.Slice(p, max)
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// DriverVersion returns the CUDA version the driver supports (e.g. 12040 for
// 12.4), or an error wrapping ErrUnavailable.
func DriverVersion() (int, error) {
	if err := loadDriver(); err != nil {
		return 0, err
	}
	return int(drv.ver), nil
}
