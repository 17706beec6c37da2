//go:build linux

package index

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// releasePages drops the process's mapping of the pages of b (a page-aligned
// part of a read-only shared file mapping); it reports whether it did.
func releasePages(b []byte) bool {
	return len(b) > 0 && syscall.Madvise(b, syscall.MADV_DONTNEED) == nil
}

// residentFile is the process's resident shared pages (/proc/self/statm's
// third field: file-backed and shared memory), in bytes; 1<<62 when it
// cannot be read (every check then releases).
func residentFile() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 1 << 62
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 1 << 62
	}
	n, err := strconv.ParseInt(string(f[2]), 10, 64)
	if err != nil {
		return 1 << 62
	}
	return n * int64(os.Getpagesize())
}
