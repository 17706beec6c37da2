//go:build amd64 || arm64

package cuda

// getg returns the address of the calling goroutine's runtime g, read from
// the g register (arm64) or thread-local storage (amd64) by getg_*.s: a
// few instructions where syscall.Gettid is a system call (1,411 against
// 5.9 ns on the GPU host's Xeon, BenchmarkOwnerCheck).
//
// Contract: the value identifies the goroutine while it lives (the runtime
// neither moves nor frees g structs; an exited goroutine's g may be reused
// by a new goroutine, so callers must know the goroutine they compare with
// is alive). It is an identity only: never converted back to a pointer.
//
//go:noescape
func getg() uintptr
