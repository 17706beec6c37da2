// Package reorder reassigns docIDs so that documents sharing terms get close
// docIDs, which shrinks the gaps that the codecs compress. It implements
// recursive graph bisection (BP; Dhulipala et al., "Compressing graphs and
// indexes with recursive graph bisection", KDD 2016) with the practical
// parameters of Mackenzie et al. ("Compressing inverted indexes with
// recursive graph bisection: a reproducibility study", ECIR 2019), and
// writes an index whose documents follow the new order (apply.go).
package reorder

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/qpengine/qp/index"
)

// Graph is the document-term graph of BP as a forward index in compressed
// sparse row form: the terms of document d are Terms[Offs[d]:Offs[d+1]],
// ascending. Term ids are dense (0..NumTerms-1) over the kept terms.
type Graph struct {
	Offs     []uint64 // N+1
	Terms    []uint32
	NumTerms int
}

// NumDocs is N.
func (g *Graph) NumDocs() int { return len(g.Offs) - 1 }

// DocTerms returns the term ids of document d (do not modify).
func (g *Graph) DocTerms(d uint32) []uint32 { return g.Terms[g.Offs[d]:g.Offs[d+1]] }

// GraphBytesPerPosting is the memory of a Graph per kept posting (a uint32
// term id); the graph also needs 8 bytes per document (offsets), and
// FromIndex 12 more per document while it runs.
const GraphBytesPerPosting = 4

// FromLists builds a graph of n documents from posting lists (each strictly
// increasing, docIDs < n); lists with fewer than minDF postings are left
// out, as they cannot bring documents together (a list of one posting has
// no gap).
func FromLists(n int, lists [][]uint32, minDF int) (*Graph, error) {
	return build(context.Background(), n, len(lists), minDF, 1,
		func(t int) int { return len(lists[t]) },
		func(t int, _ []uint32) ([]uint32, error) { return lists[t], nil })
}

// FromIndex builds the graph of the lists of x with at least minDF
// postings, decoding them on workers goroutines (0 = all cores).
func FromIndex(ctx context.Context, x *index.Index, minDF, workers int) (*Graph, error) {
	return build(ctx, x.NumDocs(), x.NumTerms(), minDF, workers,
		func(t int) int { return int(x.Record(t).DF) },
		func(t int, buf []uint32) ([]uint32, error) {
			l, err := x.List(t)
			if err != nil {
				return nil, err
			}
			// DecodeDocs may write a whole block past the last posting.
			full := l.NBlocks * l.BlockSize
			buf = slices.Grow(buf[:0], full)[:full]
			for b := 0; b < l.NBlocks; b++ {
				if _, err := l.DecodeDocs(b, buf[b*l.BlockSize:]); err != nil {
					return nil, err
				}
			}
			return buf[:l.DF], nil
		})
}

// build makes the graph in two passes over the kept lists (count postings
// per document, then scatter term ids), both parallel over lists; every
// document's terms are sorted at the end, so the result does not depend on
// the number of workers.
func build(ctx context.Context, n, nt, minDF, workers int, df func(int) int, docs func(int, []uint32) ([]uint32, error)) (*Graph, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	minDF = max(minDF, 1)
	kept := make([]int32, nt) // term -> dense id, or -1
	k := 0
	for t := range nt {
		kept[t] = -1
		if df(t) >= minDF {
			kept[t] = int32(k)
			k++
		}
	}
	counts := make([]uint64, n+1)
	err := forLists(ctx, nt, workers, kept, docs, func(_ int32, ds []uint32) error {
		for _, d := range ds {
			if int(d) >= n {
				return fmt.Errorf("docID %d >= N = %d", d, n)
			}
			atomic.AddUint64(&counts[d], 1)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// counts becomes the offsets; pos the next free slot per document.
	var sum uint64
	for d := range n {
		c := counts[d]
		counts[d] = sum
		sum += c
	}
	counts[n] = sum
	g := &Graph{Offs: counts, Terms: make([]uint32, sum), NumTerms: k}
	pos := slices.Clone(counts[:n])
	err = forLists(ctx, nt, workers, kept, docs, func(id int32, ds []uint32) error {
		for _, d := range ds {
			g.Terms[atomic.AddUint64(&pos[d], 1)-1] = uint32(id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	pos = nil
	parallelRange(n, workers, func(lo, hi int) {
		for d := lo; d < hi; d++ {
			slices.Sort(g.Terms[g.Offs[d]:g.Offs[d+1]])
		}
	})
	return g, nil
}

// forLists calls fn for every kept list, on workers goroutines.
func forLists(ctx context.Context, nt, workers int, kept []int32, docs func(int, []uint32) ([]uint32, error), fn func(int32, []uint32) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []uint32
			for {
				t := int(next.Add(1) - 1)
				if t >= nt || ctx.Err() != nil {
					return
				}
				if kept[t] < 0 {
					continue
				}
				ds, err := docs(t, buf)
				if err == nil {
					err = fn(kept[t], ds)
				}
				if err != nil {
					errs[w] = fmt.Errorf("reorder: list %d: %w", t, err)
					next.Store(int64(nt))
					return
				}
				buf = ds
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// parallelRange splits [0, n) into workers contiguous chunks and runs fn on
// each concurrently.
func parallelRange(n, workers int, fn func(lo, hi int)) {
	if workers <= 1 || n < 1024 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(lo+chunk, n))
	}
	wg.Wait()
}
