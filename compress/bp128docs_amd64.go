package compress

import "golang.org/x/sys/cpu"

// haveDocsSIMD reports whether BP128Docs128's AVX2 routine may run.
var haveDocsSIMD = cpu.X86.HasAVX2

// bp128Docs is the AVX2 routine of BP128Docs (bp128docs_amd64.s): it
// writes out[i] = carry0 + sum of (value_j + 1) for j <= i over the
// 8·groups values of width w at in, and returns the sum over all of them.
// in must have bp128SIMDRead(w, groups) readable bytes.
//
//go:noescape
func bp128Docs(out *uint32, in *byte, w, groups uintptr, shuf *[32]byte, shift *[8]uint32, mask, carry0 uint32) uint32

// bp128Plus1 is the AVX2 routine of BP128Plus1: out[i] = value_i + 1.
//
//go:noescape
func bp128Plus1(out *uint32, in *byte, w, groups uintptr, shuf *[32]byte, shift *[8]uint32, mask uint32)
