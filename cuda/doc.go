// Package cuda is qp's GPU driver binding: a pure-Go (CGO_ENABLED=0)
// binding of the CUDA driver API (contexts, memory, streams, modules, the
// embedded fatbin) on which package cuda/kern's typed launchers of the
// kernels that decode and score posting lists are built.
//
// The driver library, libcuda.so.1, is opened at run time with purego
// (dlopen/dlsym, no cgo), so the qp binary builds and runs without the CUDA
// toolkit and without a GPU: Available then returns false and a reason that
// names the CPU fallback. Every driver call is checked; a failure is an
// *Error whose text names the function and the CUresult, e.g.
// "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)", and out-of-memory errors
// match ErrOutOfMemory so callers can fall back to the CPU.
//
// The kernels (kernels/*.cu, CUDA C++ with CUB) are compiled by `make
// kernels` into one fatbin (sm_80 and sm_90 code, compute_90 PTX), which is
// committed and embedded (fatbin.go) and loaded with cuModuleLoadData.
//
// Threads: a CUDA context is current per OS thread, so a Context owns one
// goroutine locked to its OS thread; every driver call runs there, and other
// goroutines hand it closures (Context.Do). All exported methods do this
// themselves and may be called from any goroutine.
//
// Results: every GPU result must equal the CPU's bit for bit; the tests
// compare against the compress and index packages, and the kernels are
// compiled with --fmad=false so float arithmetic rounds like Go's.
//
// Layout:
//
//	driver.go   binding of libcuda.so.1 (every symbol used, _v2 where the ABI has one)
//	fast.go     the hot calls (launch, async copies, events, waits) by purego.SyscallN
//	            on the symbols, counted and optionally timed (DriverStats)
//	errors.go   CUresult names, *Error, ErrOutOfMemory, ErrUnavailable
//	device.go   Devices, Available
//	context.go  Context: the owner goroutine, Do, Close
//	getg*.go/s  getg: the current goroutine's identity for Do's owner check
//	            (assembly on amd64 and arm64; the thread id elsewhere)
//	memory.go   Buffer, HostBuffer (pinned), Pool (size classes), synchronous copies
//	stream.go   Stream (async copies, fills), Event (record, synchronize, elapsed time)
//	module.go   Module, Function.Launch (kernel parameter safety; LaunchFields
//	            stages parameters in the Context's pinned arena), Fatbin
//	            (the embedded kernels by name, occupancy: ResidentCTAs)
//	fatbin.go   the embedded kernels.fatbin (`make kernels`)
//	kern/       the kernel launchers: decoding, query, intersection, WAH
//	kernels/    the CUDA sources of the fatbin
//	emu/        CPU emulator of the driver API for testing kernels without a GPU
//	scripts/    plot_decode.py: SVG plot and table from bench/decode's CSV
package cuda
