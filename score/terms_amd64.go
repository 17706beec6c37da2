package score

import "golang.org/x/sys/cpu"

// haveTermsSIMD reports whether Terms may run termsAVX2.
var haveTermsSIMD = cpu.X86.HasAVX2

// termsAVX2 is the AVX2 routine of Terms (terms_amd64.s): it computes
// dst[j] for the values of the n/8 full groups of 8, stopping before the
// first group that holds a frequency >= 2^31, and returns how many values
// it wrote (a multiple of 8).
//
//go:noescape
func termsAVX2(dst *float32, freqs *uint32, norms *float32, n uintptr, idf, k1p1, w float32) uintptr
