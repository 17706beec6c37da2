//go:build !linux

package index

// releasePages is a no-op where madvise is not used (the runs are read
// into the heap, or mapped without release): it reports false.
func releasePages([]byte) bool { return false }
