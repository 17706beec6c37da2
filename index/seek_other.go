//go:build !amd64

package index

// haveSeekSIMD is false: seekRest has no vector routine here.
const haveSeekSIMD = false

func countLess(docs *uint32, n uintptr, d uint32) uintptr {
	panic("BUG: index.countLess without a vector routine")
}
