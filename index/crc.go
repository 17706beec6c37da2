package index

import (
	"hash/crc32"
	"runtime"
	"sync"
)

// crcChunk is the piece of a section one goroutine checksums. Large enough
// that combining costs nothing, small enough that a multi-GiB POSTINGS
// section spreads over all cores.
const crcChunk = 32 << 20

// checksum is crc32.Checksum(b, castagnoli), computed in crcChunk pieces on
// up to GOMAXPROCS goroutines and combined (crc32cCombine). Over a mapped
// file the pieces are also the page faults that bring the file in, so they
// are spread over the cores as well.
func checksum(b []byte) uint32 {
	n := (len(b) + crcChunk - 1) / crcChunk
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		return crc32.Checksum(b, castagnoli)
	}
	crcs := make([]uint32, n)
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				crcs[i] = crc32.Checksum(b[i*crcChunk:min(len(b), (i+1)*crcChunk)], castagnoli)
			}
		}()
	}
	wg.Wait()
	crc := crcs[0]
	for i := 1; i < n; i++ {
		crc = crc32cCombine(crc, crcs[i], int64(min(len(b), (i+1)*crcChunk)-i*crcChunk))
	}
	return crc
}

// crc32cCombine returns the CRC-32C of A‖B from crcA = CRC(A), crcB = CRC(B)
// and len(B): zlib's crc32_combine (Mark Adler), which appends len(B) zero
// bytes to A's register by repeated squaring of the GF(2) operator "shift
// one zero bit through the reflected polynomial" and xors in crcB. Go's
// crc32 has zlib's pre- and post-inversion, so the same identity holds.
func crc32cCombine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd [32]uint32
	odd[0] = crc32.Castagnoli // the reflected polynomial: one zero bit
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four zero bits
	for {
		gf2Square(&even, &odd) // first pass: one zero byte
		if lenB&1 != 0 {
			crcA = gf2Times(&even, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
		gf2Square(&odd, &even)
		if lenB&1 != 0 {
			crcA = gf2Times(&odd, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := range square {
		square[n] = gf2Times(mat, mat[n])
	}
}
