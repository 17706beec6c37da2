//go:build !linux

package cuda

import (
	"errors"
	"runtime"
)

var errNotLinux = errors.New("the CUDA backend supports linux only, not " + runtime.GOOS)

func dlopen(string) (uintptr, error)         { return 0, errNotLinux }
func dlsym(uintptr, string) (uintptr, error) { return 0, errNotLinux }
func gettid() int                            { return -1 }
