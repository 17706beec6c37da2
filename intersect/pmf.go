package intersect

// PMFFanout is the fan-out of every level of Parallel Merge Find: a level
// of stride s takes every s-th element of the shorter list as a splitter,
// and the next level splits each piece of s elements again into PMFFanout
// pieces. With L levels the strides are PMFFanout^L, ..., PMFFanout^1, and
// the last pieces (PMFFanout elements of the shorter list each) are
// intersected independently. The GPU version (cuda/kern/intersect.go) uses the
// same constant and so the same partition.
const PMFFanout = 32

// PMFMaxLevels is the deepest recursion PMF accepts (Ding et al. WWW'09 §7,
// Figure 6 measures "1 to 4 recursive levels of splitting").
const PMFMaxLevels = 4

// PMF appends the intersection of lists to dst[:0] by Parallel Merge Find
// (Ding et al. WWW'09 §7) with levels (1..PMFMaxLevels) recursive levels of
// splitting, intersecting shortest first, each step's output with the next
// longer list. One step intersects A (the running result) with B: splitters
// taken from A at stride PMFFanout^levels are located in B (lower bound,
// "Parallel Merge Find"), which cuts both lists into pieces that can be
// intersected independently; each piece is split again at stride
// PMFFanout^(levels−1), each splitter searched only inside its piece of B,
// and so on down to pieces of PMFFanout elements of A, which are merged with
// their range of B. On the GPU every splitter search and every final
// element search is one thread; here the same partition is walked
// sequentially, so that the CPU result is the reference of the GPU's. lists
// is reordered by length. levels outside 1..PMFMaxLevels is a programmer
// bug (panic).
func PMF(dst []uint32, lists [][]uint32, levels int) []uint32 {
	if levels < 1 || levels > PMFMaxLevels {
		panic("BUG: intersect.PMF: levels outside 1..4")
	}
	orderByLength(lists)
	if d, done := fewLists(dst, lists); done {
		return d
	}
	a := lists[0]
	if cap(dst) < len(a) {
		dst = make([]uint32, len(a))
	}
	out := dst[:len(a)]
	stride := 1
	for range levels {
		stride *= PMFFanout
	}
	n := pmfStep(out, 0, a, lists[1], stride)
	for _, l := range lists[2:] {
		if n == 0 {
			break
		}
		// In place: the write index never passes the read index.
		n = pmfStep(out, 0, out[:n], l, stride)
	}
	return dst[:n]
}

// pmfStep writes a ∩ b to out[n:] (out may alias a from n on) and returns
// the new length: a is cut into pieces of stride elements whose first
// elements (the splitters) are located in b by lower bound; each piece and
// its range of b are intersected recursively at stride/PMFFanout; pieces of
// PMFFanout elements (stride PMFFanout) are merged with their range of b.
// stride is a power of PMFFanout, at least PMFFanout.
func pmfStep(out []uint32, n int, a, b []uint32, stride int) int {
	sub := stride / PMFFanout
	lo := lowerBound(b, firstOr(a))
	for p := 0; p < len(a); p += stride {
		e := min(p+stride, len(a))
		hi := len(b)
		if e < len(a) {
			// The next splitter, searched inside the remaining range of b.
			hi = lo + lowerBound(b[lo:], a[e])
		}
		if sub == 1 {
			n += mergeLoop(out[n:], a[p:e], b[lo:hi])
		} else {
			n = pmfStep(out, n, a[p:e], b[lo:hi], sub)
		}
		lo = hi
	}
	return n
}

func firstOr(a []uint32) uint32 {
	if len(a) == 0 {
		return 0
	}
	return a[0]
}
