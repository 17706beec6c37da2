//go:build !amd64

package compress

// haveDocsSIMD is false: BP128Docs128 has no vector routine here.
const haveDocsSIMD = false

func bp128Docs128(out *uint32, in *byte, w uintptr, shuf *[32]byte, shift *[8]uint32, mask, carry0 uint32) uint32 {
	panic("BUG: compress.bp128Docs128 without a vector routine")
}

func bp128Plus1x128(out *uint32, in *byte, w uintptr, shuf *[32]byte, shift *[8]uint32, mask uint32) {
	panic("BUG: compress.bp128Plus1x128 without a vector routine")
}
