//go:build !amd64

package score

// haveTermsSIMD is false: Terms has no vector routine here.
const haveTermsSIMD = false

func termsAVX2(dst *float32, freqs *uint32, norms *float32, n uintptr, idf, k1p1, w float32) uintptr {
	panic("BUG: score.termsAVX2 without a vector routine")
}
