package engine

import (
	"fmt"

	"github.com/qpengine/qp/index"
)

// cursor wraps index.Cursor for the DAAT algorithms: it mirrors the current
// docID in a field, counts decoded blocks, and turns a cursor that moves
// backwards or past N (corrupt blocks whose docIDs decode to garbage without
// a codec error) into a terminated cursor with an error, so that no loop can
// spin and no norm lookup can go out of range.
type cursor struct {
	c        index.Cursor
	doc      uint32 // current docID or index.Terminated
	n        uint32 // documents in the index
	nb       int    // blocks in the list
	blk      int    // last block counted
	blocks   int64
	postings int64
	bad      error
}

func (w *cursor) reset(l index.List, n uint32) {
	w.c.Reset(l)
	w.n, w.nb, w.blk = n, l.NBlocks, -1
	w.blocks, w.postings, w.bad = 0, 0, nil
	w.doc = w.c.DocID()
	w.count()
	if w.doc >= n && w.doc != index.Terminated {
		w.corrupt(0, w.doc)
	}
}

func (w *cursor) list() *index.List { return w.c.List() }

// count notes a newly decoded block.
func (w *cursor) count() {
	if b := w.c.Block(); b != w.blk {
		w.blk = b
		if b >= 0 && b < w.nb {
			w.blocks++
			w.postings += int64(w.c.List().BlockLen(b))
		}
	}
}

// next advances to the next posting.
func (w *cursor) next() uint32 {
	d := w.doc
	nd := w.c.Next()
	w.count()
	if (nd <= d || nd >= w.n) && nd != index.Terminated {
		return w.corrupt(d, nd)
	}
	w.doc = nd
	return nd
}

// nextGEQ advances to the first posting >= t.
func (w *cursor) nextGEQ(t uint32) uint32 {
	nd := w.c.NextGEQ(t)
	w.count()
	if (nd < t || nd >= w.n) && nd != index.Terminated {
		return w.corrupt(t, nd)
	}
	w.doc = nd
	return nd
}

// freq is the term frequency of the current posting. A frequency block that
// fails to decode terminates the cursor (tf 0; err reports it).
func (w *cursor) freq() uint32 {
	tf := w.c.Freq()
	if tf == 0 {
		w.doc = index.Terminated
	}
	return tf
}

func (w *cursor) corrupt(from, got uint32) uint32 {
	if w.bad == nil && w.c.Err() == nil {
		w.bad = fmt.Errorf("%w: term %d: cursor moved from %d to docID %d (blocks not increasing, or docID >= N = %d)", index.ErrCorrupt, w.c.List().Term, from, got, w.n)
	}
	w.doc = index.Terminated
	return index.Terminated
}

// err is the decoding error that terminated the cursor, if any.
func (w *cursor) err() error {
	if err := w.c.Err(); err != nil {
		return err
	}
	if w.bad == nil && w.doc == index.Terminated && w.c.DocID() != index.Terminated {
		// freq failed without a cursor error: cannot happen with a valid
		// cursor, since tf >= 1 always.
		return fmt.Errorf("%w: term %d: zero term frequency", index.ErrCorrupt, w.c.List().Term)
	}
	return w.bad
}
