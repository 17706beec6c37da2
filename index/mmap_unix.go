//go:build unix

package index

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the whole file copy-on-write (MAP_PRIVATE, PROT_READ|
// PROT_WRITE): until a page is written, it is the page cache's, shared by
// every process that opens the same index, and nothing is read until it is
// touched. Writable because the Index's slices were writable when the file
// was read into the heap, and tests damage blocks in place to test the
// decoders' error paths (engine, engine/gpu, index): a write makes a private
// copy of that page and never reaches the file. The returned release
// function unmaps it (see guardRange for what stays behind).
//
// The file must not be truncated or rewritten in place while it is mapped
// (the index writer writes a temporary file and renames it over the old
// one, which leaves the mapped inode intact); a page cut off by truncation
// faults (SIGBUS).
func mapFile(f *os.File, size int64) (data []byte, release func() error, err error) {
	if size <= 0 {
		return nil, func() error { return nil }, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%d bytes do not fit in the address space", size)
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return unmap(data) }, nil
}

// unmap releases the file's pages. Where guardRange can, the address range
// stays reserved without access, so that a slice of the index kept past
// Close faults at once (the Go runtime stops with "unexpected fault
// address") instead of silently reading whatever a later mapping puts there.
func unmap(data []byte) error {
	if guardRange(data) {
		return nil
	}
	return syscall.Munmap(data)
}
