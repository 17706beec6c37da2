//go:build linux

package cuda

import (
	"syscall"

	"github.com/ebitengine/purego"
)

// dlopen opens a shared library by soname (resolved by the dynamic loader).
func dlopen(name string) (uintptr, error) {
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// dlsym returns the address of a symbol of a dlopen'ed library.
func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

// gettid returns the calling OS thread's id.
func gettid() int { return syscall.Gettid() }
