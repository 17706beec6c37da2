package index

import "golang.org/x/sys/cpu"

// haveSeekSIMD reports whether seekRest may count with the AVX2 routine.
var haveSeekSIMD = cpu.X86.HasAVX2

// countLess is the AVX2 routine of seekRest (seek_amd64.s): the number of
// the n >= 8 values at docs that are < d (unsigned), 8 lanes a step, the
// last n%8 values from an overlapping load of the last 8 with the lanes
// already counted masked off. For increasing docs that count is the
// position of the first value >= d.
//
//go:noescape
func countLess(docs *uint32, n uintptr, d uint32) uintptr
