package source

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// lineReader splits a stream into lines with memory bounded by the
// longest line it accepts.
type lineReader struct {
	br   *bufio.Reader
	long []byte // assembles lines longer than the bufio buffer
	max  int
	n    int // number of the last line returned or rejected (1-based)
}

// lineTooLongError reports a line longer than max bytes; the line has been
// consumed and the reader can go on with the next one.
type lineTooLongError struct{ max int }

func (e *lineTooLongError) Error() string { return fmt.Sprintf("line longer than %d bytes", e.max) }

const bufSize = 256 << 10

func newLineReader(r io.Reader, max int) *lineReader {
	if br, ok := r.(*bufio.Reader); ok && br.Size() >= bufSize {
		return &lineReader{br: br, max: max}
	}
	return &lineReader{br: bufio.NewReaderSize(r, bufSize), max: max}
}

// next returns the next line without its "\n" or "\r\n", valid until the
// next call; a last line without a line feed is returned too. It returns
// io.EOF at the end, *lineTooLongError for a line longer than max bytes,
// and other errors from the underlying reader.
func (lr *lineReader) next() ([]byte, error) {
	if cap(lr.long) > 4<<20 {
		lr.long = nil // do not hold on to the memory of one huge line
	}
	line, err := lr.br.ReadSlice('\n')
	switch {
	case err == nil || err == io.EOF && len(line) > 0:
		lr.n++
		return lr.check(trimEOL(line))
	case err == io.EOF:
		return nil, io.EOF
	case !errors.Is(err, bufio.ErrBufferFull):
		return nil, err
	}
	// A line longer than the buffer: assemble it.
	lr.n++
	lr.long = append(lr.long[:0], line...)
	for {
		line, err = lr.br.ReadSlice('\n')
		if len(lr.long)+len(line) > lr.max+2 { // +2: the line terminator
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = lr.br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			lr.long = lr.long[:0]
			return nil, &lineTooLongError{lr.max}
		}
		lr.long = append(lr.long, line...)
		switch {
		case err == nil || err == io.EOF:
			return lr.check(trimEOL(lr.long))
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}

func (lr *lineReader) check(line []byte) ([]byte, error) {
	if len(line) > lr.max {
		return nil, &lineTooLongError{lr.max}
	}
	return line, nil
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}
