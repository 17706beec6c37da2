package index

import (
	"math"

	"github.com/RoaringBitmap/roaring"
)

// Terminated is the docID a cursor returns once it is exhausted. It is larger
// than every valid docID.
const Terminated uint32 = math.MaxUint32

// Cursor iterates over a posting list in docID order, decoding only the
// blocks it visits: NextGEQ skips whole blocks by their last docID in the
// skip table (Ding et al. WWW'09 §8, block skipping). A Cursor reuses its
// buffers across Reset calls; it does not allocate after the first Reset
// with a given block size.
//
// On a bitmap list (List.IsBitmap) a block is the B docIDs of ranks
// [b*B, (b+1)*B), read from a roaring iterator that AdvanceIfNeeded moves to
// the block's base docID when blocks are skipped (and that simply continues
// when the next block is loaded), so positions within a block are ranks and
// frequencies, block maxima and ShallowBlock work unchanged.
//
// A corrupt block terminates the cursor; Err reports why.
type Cursor struct {
	l     List
	docs  []uint32
	freqs []uint32
	blk   int // decoded block, -1 none
	n     int // postings in the decoded block
	pos   int // position in the decoded block
	fdec  bool
	cur   uint32
	err   error
	it    roaring.IntIterator // bitmap lists: positioned after block blk
}

// Reset positions c on the first posting of l.
func (c *Cursor) Reset(l List) {
	c.l = l
	if cap(c.docs) < l.BlockSize {
		c.docs = make([]uint32, l.BlockSize)
		c.freqs = make([]uint32, l.BlockSize)
	}
	c.docs, c.freqs = c.docs[:l.BlockSize], c.freqs[:l.BlockSize]
	c.blk, c.n, c.pos, c.err = -1, 0, 0, nil
	if l.NBlocks == 0 {
		c.cur, c.blk = Terminated, 0
		return
	}
	c.load(0)
}

// List is the list the cursor iterates.
func (c *Cursor) List() *List { return &c.l }

// Err is the decoding error that terminated the cursor, if any.
func (c *Cursor) Err() error { return c.err }

// DocID is the current docID, or Terminated.
func (c *Cursor) DocID() uint32 { return c.cur }

func (c *Cursor) load(b int) {
	if b >= c.l.NBlocks {
		c.blk, c.cur = c.l.NBlocks, Terminated
		return
	}
	var n int
	var err error
	if c.l.bm != nil {
		n, err = c.l.decodeBitmapDocs(b, c.docs, &c.it, b == c.blk+1 && c.blk >= 0)
	} else {
		n, err = c.l.DecodeDocs(b, c.docs)
	}
	if err != nil {
		c.err, c.cur, c.blk = err, Terminated, c.l.NBlocks
		return
	}
	c.blk, c.n, c.pos, c.fdec = b, n, 0, false
	c.cur = c.docs[0]
}

// Next advances to the next posting and returns its docID.
func (c *Cursor) Next() uint32 {
	if c.cur == Terminated {
		return Terminated
	}
	c.pos++
	if c.pos < c.n {
		c.cur = c.docs[c.pos]
		return c.cur
	}
	c.load(c.blk + 1)
	return c.cur
}

// NextGEQ advances to the first posting with docID >= d and returns it.
func (c *Cursor) NextGEQ(d uint32) uint32 {
	if d <= c.cur {
		return c.cur
	}
	if c.cur == Terminated {
		return Terminated
	}
	if c.l.LastDoc(c.blk) < d {
		b := c.seekBlock(c.blk+1, d)
		c.load(b)
		if c.cur == Terminated {
			return Terminated
		}
	}
	// The target is in the decoded block: gallop then binary search.
	p, step := c.pos, 1
	for p+step < c.n && c.docs[p+step] < d {
		p += step
		step <<= 1
	}
	hi0 := min(p+step, c.n-1)
	lo, hi := p, hi0
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c.docs[m] < d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	c.pos = lo
	c.cur = c.docs[lo]
	return c.cur
}

// seekBlock returns the first block >= from whose last docID is >= d
// (NBlocks when none), galloping over the skip table.
func (c *Cursor) seekBlock(from int, d uint32) int {
	nb := c.l.NBlocks
	if from >= nb || c.l.LastDoc(nb-1) < d {
		return nb
	}
	lo, step := from, 1
	for lo+step < nb && c.l.LastDoc(lo+step) < d {
		lo += step
		step <<= 1
	}
	hi := min(lo+step, nb-1)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c.l.LastDoc(m) < d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Freq is the term frequency of the current posting (0 when terminated).
// Frequencies are decoded per block on first use.
func (c *Cursor) Freq() uint32 {
	if c.cur == Terminated {
		return 0
	}
	if !c.fdec {
		if _, err := c.l.DecodeFreqs(c.blk, c.freqs); err != nil {
			c.err, c.cur, c.blk = err, Terminated, c.l.NBlocks
			return 0
		}
		c.fdec = true
	}
	return c.freqs[c.pos]
}

// Block is the index of the current block (NBlocks when terminated).
func (c *Cursor) Block() int { return c.blk }

// ShallowBlock returns the block that would hold docID d, at or after the
// current block, without decoding it (for BlockMax-WAND's shallow moves);
// NBlocks when d is past the end.
func (c *Cursor) ShallowBlock(d uint32) int {
	if c.blk >= c.l.NBlocks {
		return c.l.NBlocks
	}
	if c.l.LastDoc(c.blk) >= d {
		return c.blk
	}
	return c.seekBlock(c.blk+1, d)
}
