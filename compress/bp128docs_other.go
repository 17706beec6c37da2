//go:build !amd64

package compress

// haveDocsSIMD is false: BP128Docs and BP128Plus1 have no vector routine
// here.
const haveDocsSIMD = false

func bp128Docs(out *uint32, in *byte, w, groups uintptr, shuf *[32]byte, shift *[8]uint32, mask, carry0 uint32) uint32 {
	panic("BUG: compress.bp128Docs without a vector routine")
}

func bp128Plus1(out *uint32, in *byte, w, groups uintptr, shuf *[32]byte, shift *[8]uint32, mask uint32) {
	panic("BUG: compress.bp128Plus1 without a vector routine")
}
