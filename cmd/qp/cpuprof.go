package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startCPUProfile starts a Go CPU profile written to path, which must not
// exist (an existing file is never overwritten), and returns the function
// that stops it and closes the file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "--cpuprofile: %v\n", err)
		}
	}, nil
}
