//go:build linux

package index

import "syscall"

// releasePages drops the process's mapping of the pages of b (a page-aligned
// part of a read-only shared file mapping); it reports whether it did.
func releasePages(b []byte) bool {
	return len(b) > 0 && syscall.Madvise(b, syscall.MADV_DONTNEED) == nil
}
