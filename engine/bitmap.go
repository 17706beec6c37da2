package engine

import (
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/qpengine/qp/index"
)

// Bitmap paths. A list stored as a roaring bitmap (index/format.go, "Bitmap
// lists") can be evaluated with roaring's operations instead of its cursor:
// AND intersects the bitmaps of the dense terms with roaring.FastAnd and uses
// the result as a candidate filter for the other lists; OR takes the union
// of the dense terms' bitmaps (roaring.FastOr) as the candidate stream. In
// both, each candidate is then scored exactly as by the other algorithms —
// every term's tf read by rank through its cursor, term scores summed in
// canonical order — so results and scores are bit-identical with or without
// bitmaps. The roaring paths allocate the FastAnd / FastOr result when they
// combine two or more bitmaps (roaring has no destination-reusing form);
// everything else, cursors over bitmap lists included, does not allocate.
//
// The planner (bitmapTerms) uses a list's bitmap only when its density
// df/N lies in the window where `qp bench bitmap` measured the roaring path
// faster (docs/BITMAPS.md): from the crossover density up to (excluding) a
// maximum density; denser bitmap lists are read through their cursors.

// DefaultAndBitmapDensity, DefaultAndBitmapMaxDensity and
// DefaultOrBitmapDensity are the crossovers measured on the development
// machine (shared 2-core x86-64 VM, Go 1.26) with `qp bench bitmap` (pairs
// of random lists of density 2^-12..2^-1 on 2^20 documents, k = 10;
// docs/BITMAPS.md has the tables). AND: the roaring filter won from 2^-11 to
// 2^-5 in all three runs and was mixed above (there most candidates match,
// and reading tf by rank through a bitmap block is slower than decoding
// bp128 blocks); OR: it never won, so the default (above 1) disables it.
const (
	DefaultAndBitmapDensity    = 1.0 / 2048
	DefaultAndBitmapMaxDensity = 1.0 / 16
	DefaultOrBitmapDensity     = 2.0
)

// bitmapTerms fills e.bidx with the canonical positions of the terms whose
// lists are bitmaps of density in [minDensity, maxDensity) (in canonical
// order) and returns how many there are.
func (e *Engine) bitmapTerms(minDensity, maxDensity float64) int {
	e.bidx = e.bidx[:0]
	if minDensity > 1 || e.n == 0 {
		return 0
	}
	for i := range e.terms {
		l := &e.terms[i].list
		if d := float64(l.DF) / float64(e.n); l.IsBitmap() && d >= minDensity && d < maxDensity {
			e.bidx = append(e.bidx, i)
		}
	}
	return len(e.bidx)
}

// bitmapSet marks the terms at e.bidx in e.isBm (the caller clears it
// when done) and returns their bitmaps combined by op (roaring.FastAnd or
// FastOr; the one bitmap itself when there is one).
func (e *Engine) bitmapSet(op func(...*roaring.Bitmap) *roaring.Bitmap) *roaring.Bitmap {
	e.isBm = growBool(e.isBm, len(e.terms))
	e.bms = e.bms[:0]
	for _, i := range e.bidx {
		e.isBm[i] = true
		e.bms = append(e.bms, e.terms[i].list.Bitmap())
	}
	if len(e.bms) == 1 {
		return e.bms[0]
	}
	return op(e.bms...)
}

// scoreAll scores document d, which every term contains, in canonical order.
func (e *Engine) scoreAll(d uint32) error {
	var s float32
	for j := range e.curs {
		c := &e.curs[j]
		if c.nextGEQ(d) != d {
			if err := c.err(); err != nil {
				return err
			}
			return fmt.Errorf("%w: term %d: docID %d is in the intersection but not in the list", index.ErrCorrupt, c.list().Term, d)
		}
		s += e.term(j, c.freq(), d)
	}
	e.st.Candidates++
	e.heap.Push(d, s)
	return nil
}

// andBitmap is AND with roaring operations: the bitmaps at e.bidx are
// intersected (roaring.FastAnd; the bitmap itself when there is one), and
// the result filters the candidates of the remaining lists, which intersect
// by DAAT (the shortest leads, Ding et al. WWW'09 §8) leapfrogging with the
// filter's iterator (AdvanceIfNeeded). Each document of the intersection is
// scored in canonical order. Once the heap is full, a candidate whose
// block-max bound (the sum over all terms of the block maxima of the blocks
// that would hold it, as andSkip; Ding & Suel SIGIR'11) is strictly below the
// k-th score is skipped together with every document up to the end of the
// smallest of those blocks, so the top k equals that of the exhaustive
// intersection.
func (e *Engine) andBitmap() error {
	if err := e.ensureCursors(); err != nil {
		return err
	}
	filter := e.bitmapSet(roaring.FastAnd)
	defer clear(e.isBm)
	e.pruneEnd, e.infl = -1, inflate(len(e.terms))
	lead := -1
	for i := range e.terms {
		if !e.isBm[i] {
			lead = i
			break
		}
	}
	it := &e.fit
	it.Initialize(filter)
	if lead < 0 { // only bitmap terms: the filter is the intersection
		for it.HasNext() {
			d := it.PeekNext()
			if skip, to := e.prune(d); skip {
				if to == index.Terminated {
					break
				}
				it.AdvanceIfNeeded(to)
				continue
			}
			it.Next()
			if err := e.scoreAll(d); err != nil {
				return err
			}
		}
		return e.finishCursors(0)
	}
	cs := e.curs
	d := cs[lead].DocID()
outer:
	for d != index.Terminated {
		it.AdvanceIfNeeded(d)
		if !it.HasNext() {
			break
		}
		if f := it.PeekNext(); f != d {
			d = cs[lead].nextGEQ(f)
			continue
		}
		if skip, to := e.prune(d); skip {
			d = cs[lead].nextGEQ(to)
			continue
		}
		for i := lead + 1; i < len(cs); i++ {
			if e.isBm[i] {
				continue
			}
			if nd := cs[i].nextGEQ(d); nd != d {
				d = cs[lead].nextGEQ(nd)
				continue outer
			}
		}
		if err := e.scoreAll(d); err != nil {
			return err
		}
		d = cs[lead].next()
	}
	return e.finishCursors(0)
}

// orBitmap is exhaustive DAAT OR whose candidates for the terms at e.bidx
// come from the union of their bitmaps (roaring.FastOr) instead of a minimum
// over their cursors; the other lists contribute their cursors' docIDs.
// Every candidate is scored by every term that contains it, in canonical
// order (as orDAAT).
func (e *Engine) orBitmap() error {
	if err := e.ensureCursors(); err != nil {
		return err
	}
	union := e.bitmapSet(roaring.FastOr)
	defer clear(e.isBm)
	it := &e.fit
	it.Initialize(union)
	cs := e.curs
	h := &e.heap
	for {
		d := index.Terminated
		if it.HasNext() {
			d = it.PeekNext()
		}
		for i := range cs {
			if !e.isBm[i] {
				d = min(d, cs[i].DocID())
			}
		}
		if d == index.Terminated {
			break
		}
		var s float32
		for i := range cs {
			c := &cs[i]
			if e.isBm[i] {
				if e.terms[i].list.Bitmap().Contains(d) {
					if c.nextGEQ(d) != d {
						return e.orBitmapCorrupt(c, d)
					}
					s += e.term(i, c.freq(), d)
				}
			} else if c.DocID() == d {
				s += e.term(i, c.freq(), d)
				c.next()
			}
		}
		if it.HasNext() && it.PeekNext() == d {
			it.Next()
		}
		e.st.Candidates++
		h.Push(d, s)
	}
	return e.finishCursors(0)
}

func (e *Engine) orBitmapCorrupt(c *cursor, d uint32) error {
	if err := c.err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: term %d: docID %d is in the bitmap but not reached by the cursor", index.ErrCorrupt, c.list().Term, d)
}

// prune reports whether AND candidate d cannot enter the top k (its inflated
// block-max bound is strictly below the k-th score), and then the first
// docID after the range the bound covers (Terminated when a list ends
// before d). The bound is recomputed only past the range of the last one.
func (e *Engine) prune(d uint32) (bool, uint32) {
	h := &e.heap
	if !h.Full() {
		return false, 0
	}
	if int64(d) > e.pruneEnd {
		bound, end := 0.0, int64(index.Terminated)
		for i := range e.curs {
			l := e.curs[i].list()
			b := e.curs[i].ShallowBlock(d)
			if b >= l.NBlocks {
				return true, index.Terminated
			}
			bound += e.blockBound(i, l, b)
			end = min(end, int64(l.LastDoc(b)))
		}
		e.pruneBound, e.pruneEnd = bound*e.infl, end
	}
	if e.pruneBound < float64(h.Threshold()) {
		if e.pruneEnd >= int64(index.Terminated)-1 {
			return true, index.Terminated
		}
		return true, uint32(e.pruneEnd + 1)
	}
	return false, 0
}

func growBool(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n)
	}
	return s[:n]
}
