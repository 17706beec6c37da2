//go:build !amd64 && !arm64

package cuda

// getg is the portable fallback of getg.go on architectures without
// getg_*.s: the OS thread id (a system call). It identifies the goroutine
// the same way for the only use, Context.onThread: the owner goroutine is
// locked to its thread, and no other goroutine runs there.
func getg() uintptr { return uintptr(gettid()) }
