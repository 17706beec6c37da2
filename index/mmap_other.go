//go:build !unix

package index

import (
	"io"
	"os"
)

// mapFile reads the whole file into the heap where mmap is not available
// (the contract of Open and Close is the same; nothing is shared).
func mapFile(f *os.File, size int64) (data []byte, release func() error, err error) {
	data = make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
