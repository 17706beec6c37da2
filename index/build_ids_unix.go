//go:build unix

package index

import (
	"fmt"
	"os"
	"syscall"
)

// mapRun maps a spilled run read-only for the merge's random reads (the
// page cache holds it; nothing is copied), and returns the function that
// unmaps it.
func mapRun(f *os.File, size int64) ([]byte, func(), error) {
	if size == 0 {
		return nil, func() {}, nil
	}
	if size != int64(int(size)) {
		return nil, nil, fmt.Errorf("index: run %s: %d bytes cannot be mapped", f.Name(), size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("index: mapping run %s: %w", f.Name(), err)
	}
	return b, func() { syscall.Munmap(b) }, nil
}
