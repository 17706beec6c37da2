//go:build !unix

package index

import (
	"fmt"
	"io"
	"os"
)

// mapRun reads a spilled run into memory (systems without mmap).
func mapRun(f *os.File, size int64) ([]byte, func(), error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), b); err != nil {
		return nil, nil, fmt.Errorf("index: reading run %s: %w", f.Name(), err)
	}
	return b, func() {}, nil
}
