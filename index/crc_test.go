package index

import (
	"hash/crc32"
	"math/rand"
	"testing"
)

// TestCRC32CCombine: the combined CRC of two pieces is the CRC of their
// concatenation, for empty, short and odd lengths.
func TestCRC32CCombine(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	buf := make([]byte, 5000)
	rng.Read(buf)
	for _, cut := range [][2]int{{0, 0}, {0, 7}, {7, 7}, {1, 2}, {100, 4999}, {2500, 5000}, {0, 5000}, {4999, 5000}} {
		a, b := buf[:cut[0]], buf[cut[0]:cut[1]]
		got := crc32cCombine(crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli), int64(len(b)))
		if want := crc32.Checksum(buf[:cut[1]], castagnoli); got != want {
			t.Errorf("cut %v: combined %08x, direct %08x", cut, got, want)
		}
	}
}

// TestChecksumParallel: checksum (parallel chunks) equals crc32.Checksum for
// any data length, including lengths that are not multiples of the chunk.
func TestChecksumParallel(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for _, n := range []int{0, 1, crcChunk - 1, crcChunk, crcChunk + 1, 3*crcChunk + 12345} {
		b := make([]byte, n)
		rng.Read(b)
		if got, want := checksum(b), crc32.Checksum(b, castagnoli); got != want {
			t.Errorf("%d bytes: %08x, want %08x", n, got, want)
		}
	}
}
