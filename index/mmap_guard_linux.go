package index

import (
	"syscall"
	"unsafe"
)

// guardRange replaces the mapping of data, in one mmap(MAP_FIXED) call, by
// an anonymous mapping without access (PROT_NONE, MAP_NORESERVE): the file's
// pages are released, and the address range is kept reserved (virtual
// address space only, no memory) for the life of the process.
func guardRange(data []byte) bool {
	_, _, errno := syscall.Syscall6(syscall.SYS_MMAP,
		uintptr(unsafe.Pointer(unsafe.SliceData(data))), uintptr(len(data)), syscall.PROT_NONE,
		syscall.MAP_FIXED|syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE, ^uintptr(0), 0)
	return errno == 0
}
