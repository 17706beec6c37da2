//go:build !linux

package index

// releasePages is a no-op where madvise is not used (the runs are read
// into the heap, or mapped without release): it reports false.
func releasePages([]byte) bool { return false }

// residentFile is 0 where the pages are not released.
func residentFile() int64 { return 0 }
