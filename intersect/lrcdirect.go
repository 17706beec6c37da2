package intersect

import (
	"fmt"

	"github.com/qpengine/qp/compress"
)

// SearchEncoded appends to dst[:0] the elements of shortest that occur in
// every list of encs, each encoded whole (one array, not index blocks) with
// the searchable codec c: the lists are never decoded; every candidate is
// looked up by c.Search, which for the LRC family is the safe-range binary
// search over single random-access slots of Ao et al. VLDB'11 §5.3
// (Algorithm 1: LRC without header lists, LRCSeg/SegLRC with the header
// list H, HS-LRC by hash bucket). It is the CPU reference of the GPU's
// "lrc-direct" intersection. shortest must be strictly increasing; encs
// should be ordered by increasing length. A corrupt encoding is returned as
// an error wrapping compress.ErrCorrupt.
func SearchEncoded(dst, shortest []uint32, encs [][]byte, c compress.Searcher) ([]uint32, error) {
	dst = append(dst[:0], shortest...)
	for j, enc := range encs {
		cnt, err := c.Count(enc)
		if err != nil {
			return dst[:0], fmt.Errorf("intersect: %s list %d: %w", c.Name(), j, err)
		}
		n, from := 0, 0
		for _, x := range dst {
			i, v, err := c.Search(enc, from, x)
			if err != nil {
				return dst[:0], fmt.Errorf("intersect: %s list %d: %w", c.Name(), j, err)
			}
			from = i
			if i < cnt && v == x {
				dst[n] = x
				n++
			}
		}
		dst = dst[:n]
		if n == 0 {
			break
		}
	}
	return dst, nil
}
