package score

// Terms sets dst[j] = float32(w * Term(idf, k1p1, freqs[j], norms[j])) for
// every j < len(dst): a block's term contributions at once, as the CPU
// engine's term-at-a-time loop adds them (engine.taatList; step 43 of
// docs/CPU-ENGINE.md). freqs and norms must be at least as long as dst; dst
// may be norms itself (each value is read before it is written). Where the
// CPU has AVX2 (amd64), groups of 8 run through termsAVX2 with the same
// IEEE float32 operations in the same order, none fused (VCVTDQ2PS,
// VMULPS, VADDPS, VDIVPS: the products and sums are commutative, so the
// bits are Term's); the rest, and any group holding a frequency >= 2^31
// (which VCVTDQ2PS would read as negative), run termsScalar.
// TestTermsTwins compares the two paths.
func Terms(dst []float32, freqs []uint32, norms []float32, idf, k1p1, w float32) {
	n := len(dst)
	freqs, norms = freqs[:n], norms[:n]
	j := 0
	if haveTermsSIMD && n >= 8 {
		j = int(termsAVX2(&dst[0], &freqs[0], &norms[0], uintptr(n), idf, k1p1, w))
	}
	termsScalar(dst[j:], freqs[j:], norms[j:], idf, k1p1, w)
}

// termsScalar is Terms one value at a time (the twin of termsAVX2).
func termsScalar(dst []float32, freqs []uint32, norms []float32, idf, k1p1, w float32) {
	freqs, norms = freqs[:len(dst)], norms[:len(dst)]
	for j := range dst {
		dst[j] = float32(w * Term(idf, k1p1, freqs[j], norms[j]))
	}
}
