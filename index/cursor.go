package index

import (
	"fmt"
	"math"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/qpengine/qp/compress"
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
// The decoded block is a slice the cursor walks with an index, so that Next,
// DocID, Freq and the in-block part of NextGEQ are small inlinable fast
// paths (the layout of PISA's block_posting_list cursor); block changes, the
// skip-table search and frequency decoding are out of line.
//
// On a bitmap list (List.IsBitmap) a block is the B docIDs of ranks
// [b*B, (b+1)*B), read from a roaring iterator that AdvanceIfNeeded moves to
// the block's base docID when blocks are skipped (and that simply continues
// when the next block is loaded), so positions within a block are ranks and
// frequencies, block maxima and ShallowBlock work unchanged.
//
// Every block the cursor loads is checked to lie strictly after the previous
// one and within the skip table's bounds (which Open checked against N), so
// a cursor never moves backwards nor past N, whatever the damage: a corrupt
// block terminates the cursor, and Err reports why.
type Cursor struct {
	docs []uint32 // the decoded block (its postings; empty when terminated)
	pos  int      // position in docs
	cur  uint32   // docs[pos], or Terminated
	last uint32   // last docID of the decoded block (Terminated when terminated)
	fdec bool     // freqs holds the decoded block's frequencies

	blk   int // decoded block (NBlocks when terminated)
	l     List
	dbuf  []uint32
	freqs []uint32
	err   error
	it    roaring.IntIterator // bitmap lists: positioned after block blk

	blocks, postings int64 // docID blocks and their postings decoded since Reset

	// Random access to frequencies (bp128 frequency blocks of one bp128
	// block): the first freqRandomMax frequencies asked for in a block are
	// read from the packed block, later ones from the decoded block.
	fbp   bool   // the list's frequency blocks allow it
	fra   int    // frequencies read by random access in this block
	fdata []byte // packed data of the block's frequencies (fra > 0)
	fw    uint   // their bit width
}

// freqRandomMax is the number of frequencies of a block read by random
// access before the whole block is decoded: a probe (MaxScore's
// non-essential lists, BlockMax-WAND, AND) reads one or a few frequencies
// per block, where decoding 128 would cost far more; a list scored densely
// decodes its blocks after a few reads.
const freqRandomMax = 8

// Reset positions c on the first posting of l.
func (c *Cursor) Reset(l List) {
	c.start(&l)
	c.load(0)
}

// ResetGEQ positions c on the first posting of l with docID >= d and
// returns it (Terminated when none): Reset followed by NextGEQ(d), with the
// same position, frequencies and errors for the blocks it decodes, but the
// block that holds d is found in the skip table first, so that the blocks
// before it are not decoded (Reset decodes block 0). An intersection's
// second and later lists start at a candidate of the rarest list, usually
// past their first block on a frequent term (docs/CPU-ENGINE.md, step 46).
// l is copied (passed by pointer: a List is some 240 bytes, step 47).
func (c *Cursor) ResetGEQ(l *List, d uint32) uint32 {
	c.start(l)
	c.load(c.seekBlock(0, d))
	if d <= c.cur {
		return c.cur
	}
	return c.scan(d)
}

// start sets c to iterate l, before its first block.
func (c *Cursor) start(l *List) {
	c.l = *l
	if cap(c.dbuf) < l.BlockSize {
		c.dbuf = make([]uint32, l.BlockSize)
		c.freqs = make([]uint32, l.BlockSize)
	}
	c.dbuf, c.freqs = c.dbuf[:l.BlockSize], c.freqs[:l.BlockSize]
	c.blk, c.err = -1, nil
	c.blocks, c.postings = 0, 0
	c.fbp = l.BlockSize <= 128 && l.FreqCodec.ID() == compress.IDBP128 && l.FreqCodec.Kind() == compress.General
}

// List is the list the cursor iterates.
func (c *Cursor) List() *List { return &c.l }

// Err is the decoding error that terminated the cursor, if any.
func (c *Cursor) Err() error { return c.err }

// DocID is the current docID, or Terminated.
func (c *Cursor) DocID() uint32 { return c.cur }

// BlocksDecoded and PostingsDecoded count the docID blocks decoded since
// Reset and the postings they hold.
func (c *Cursor) BlocksDecoded() int64   { return c.blocks }
func (c *Cursor) PostingsDecoded() int64 { return c.postings }

// terminate ends the cursor (err, if not nil, says why).
func (c *Cursor) terminate(err error) {
	if err != nil && c.err == nil {
		c.err = err
	}
	c.blk, c.cur, c.last = c.l.NBlocks, Terminated, Terminated
	c.docs, c.pos, c.fdec = c.dbuf[:0], 0, false
}

// load decodes block b (terminating the cursor past the last block) and
// positions the cursor on its first posting.
func (c *Cursor) load(b int) {
	if b >= c.l.NBlocks {
		c.terminate(nil)
		return
	}
	var n int
	var err error
	if c.l.bm != nil {
		n, err = c.l.decodeBitmapDocs(b, c.dbuf, &c.it, b == c.blk+1 && c.blk >= 0)
		if err == nil {
			err = c.checkIncreasing(b, c.dbuf[:n])
		}
	} else {
		n, err = c.l.DecodeDocs(b, c.dbuf)
	}
	if err == nil && n > 0 && c.blk >= 0 && c.blk < c.l.NBlocks && c.dbuf[0] <= c.last {
		err = c.l.blockErr(b, "docIDs", fmt.Errorf("first docID %d not after the previous block's last %d", c.dbuf[0], c.last))
	}
	if err != nil || n == 0 {
		if err == nil {
			err = c.l.blockErr(b, "docIDs", fmt.Errorf("empty block"))
		}
		c.terminate(err)
		return
	}
	c.blocks++
	c.postings += int64(n)
	c.blk, c.docs, c.pos, c.fdec, c.fra = b, c.dbuf[:n], 0, false, 0
	c.cur, c.last = c.docs[0], c.docs[n-1]
}

// checkIncreasing verifies that a bitmap block's docIDs strictly increase
// (the roaring iterator guarantees it for an undamaged bitmap).
func (c *Cursor) checkIncreasing(b int, docs []uint32) error {
	for i := 1; i < len(docs); i++ {
		if docs[i] <= docs[i-1] {
			return c.l.blockErr(b, "docID bitmap", fmt.Errorf("docID %d at %d not increasing", docs[i], i))
		}
	}
	return nil
}

// Next advances to the next posting and returns its docID.
func (c *Cursor) Next() uint32 {
	c.pos++
	if c.pos < len(c.docs) {
		c.cur = c.docs[c.pos]
		return c.cur
	}
	return c.nextBlock()
}

// nextBlock loads the block after the current one (Next's slow path, kept
// out of line so that Next inlines).
//
//go:noinline
func (c *Cursor) nextBlock() uint32 {
	if c.cur != Terminated {
		c.load(c.blk + 1)
	}
	return c.cur
}

// NextGEQ advances to the first posting with docID >= d and returns it.
func (c *Cursor) NextGEQ(d uint32) uint32 {
	if d <= c.cur {
		return c.cur
	}
	return c.nextGEQ(d)
}

// nextGEQ is NextGEQ's move (d > the current docID), out of line.
func (c *Cursor) nextGEQ(d uint32) uint32 {
	if d > c.last {
		return c.nextGEQBlock(d)
	}
	return c.scan(d)
}

// scan moves to the first posting >= d of the decoded block, which holds
// one (d <= last): seekGEQ from the next position.
func (c *Cursor) scan(d uint32) uint32 {
	c.pos = seekGEQ(c.docs, c.pos+1, d)
	c.cur = c.docs[c.pos]
	return c.cur
}

// seekGEQ returns the first position >= p of docs whose docID is >= d;
// docs (increasing) must hold one there (its last docID is >= d). The next
// scanWindow postings are compared with d without branches (the count of
// those below d is the offset of the first >= d: independent compares, no
// mispredicted loop exit for the short jumps of a probe that lands nearby);
// beyond them seekRest searches the rest of the block without a branch on
// the data: an AVX2 count of the postings below d, or a branch-free binary
// search (Khuong & Morin, "Array layouts for comparison-based searching",
// JEA 2017: the conditional move form), either cheaper than a linear
// scan's mispredicted exit over a long jump.
func seekGEQ(docs []uint32, p int, d uint32) int {
	if p+scanWindow <= len(docs) {
		w := docs[p : p+scanWindow : p+scanWindow]
		n := below(w[0], d) + below(w[1], d) + below(w[2], d) + below(w[3], d) +
			below(w[4], d) + below(w[5], d) + below(w[6], d) + below(w[7], d)
		if n < scanWindow {
			return p + n
		}
		p += scanWindow
	}
	return seekRest(docs, p, d)
}

// seekRest is seekGEQ's search of docs[p:] (kept out of seekGEQ so that
// the window inlines into its callers: most moves of a probe or of an
// intersection's zig-zag are a few postings, docs/CPU-ENGINE.md). With
// AVX2 and at least 8 postings left it counts those below d, 8 at a time
// (countLess: no branch on the data, a dozen vector compares where the
// binary search's 7 steps are a chain of dependent loads); otherwise
// seekRestScalar.
func seekRest(docs []uint32, p int, d uint32) int {
	if p >= len(docs) {
		panic(fmt.Sprintf("BUG: index.seekGEQ: docID %d not in the block ending at %d", d, docs[len(docs)-1]))
	}
	if haveSeekSIMD && len(docs)-p >= 8 {
		return p + int(countLess(&docs[p], uintptr(len(docs)-p), d))
	}
	return seekRestScalar(docs, p, d)
}

// seekRestScalar is seekRest's branch-free binary search (p < len(docs)).
func seekRestScalar(docs []uint32, p int, d uint32) int {
	// The first docID >= d of rest lies in rest[lo : lo+n]; each step
	// halves n (the last docID is >= d, so n = 1 ends on it).
	rest := docs[p:]
	lo, n := 0, len(rest)
	for n > 1 {
		half := n >> 1
		lo += half & lessMask(rest[lo+half-1], d)
		n -= half
	}
	return p + lo
}

// lessMask is -1 (all ones) when a < d, else 0, by arithmetic: the
// difference of the zero-extended values is negative exactly when a < d.
// The compiler turns an if around `lo += half` into a conditional jump
// (a loop-carried phi), which a binary search mispredicts half the time;
// this form keeps seekRest's steps branch-free.
func lessMask(a, d uint32) int {
	return int((int64(a) - int64(d)) >> 63)
}

// scanWindow is the number of postings scan compares without branches.
const scanWindow = 8

// below is 1 when a < d, else 0 (a conditional set, no branch).
func below(a, d uint32) int {
	if a < d {
		return 1
	}
	return 0
}

// nextGEQBlock is NextGEQ's slow path: d lies past the decoded block.
//
//go:noinline
func (c *Cursor) nextGEQBlock(d uint32) uint32 {
	if c.cur == Terminated {
		return Terminated
	}
	c.load(c.seekBlock(c.blk+1, d))
	if d <= c.cur {
		return c.cur
	}
	return c.scan(d)
}

// seekBlock returns the first block >= from whose last docID is >= d
// (NBlocks when none): a short linear walk over the skip table (the next
// few blocks are the common case), then galloping and binary search.
func (c *Cursor) seekBlock(from int, d uint32) int {
	l := &c.l
	nb := l.NBlocks
	if from >= nb || l.LastDoc(nb-1) < d {
		return nb
	}
	lo := from
	for end := min(from+4, nb-1); lo < end; lo++ {
		if l.LastDoc(lo) >= d {
			return lo
		}
	}
	step := 1
	for lo+step < nb && l.LastDoc(lo+step) < d {
		lo += step
		step <<= 1
	}
	hi := min(lo+step, nb-1)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.LastDoc(m) < d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Freq is the term frequency of the current posting (0 when terminated, or
// when the block's frequencies fail to decode: the cursor then terminates).
// Frequencies are decoded per block on first use.
func (c *Cursor) Freq() uint32 {
	if c.fdec {
		return c.freqs[c.pos]
	}
	return c.freqSlow()
}

func (c *Cursor) freqSlow() uint32 {
	if c.cur == Terminated {
		return 0
	}
	if c.fbp && c.fra < freqRandomMax {
		if c.fra == 0 {
			data, w, n, ok, err := compress.BP128Single(c.l.FreqBlock(c.blk))
			if err == nil && ok && n != len(c.docs) {
				err = fmt.Errorf("%d values, want %d", n, len(c.docs))
			}
			if err != nil {
				c.terminate(c.l.blockErr(c.blk, "frequencies", err))
				return 0
			}
			if !ok {
				c.fra = freqRandomMax
				return c.freqSlow()
			}
			c.fdata, c.fw = data, w
		}
		c.fra++
		tf := compress.BP128Get(c.fdata, c.pos, c.fw) + 1
		if tf == 0 {
			c.terminate(c.l.blockErr(c.blk, "frequencies", fmt.Errorf("frequency overflows at %d", c.pos)))
		}
		return tf
	}
	if _, err := c.l.DecodeFreqs(c.blk, c.freqs); err != nil {
		c.terminate(err)
		return 0
	}
	c.fdec = true
	return c.freqs[c.pos]
}

// SkipToBlock moves to the first posting of block b (> the current block;
// NBlocks or more terminates the cursor) without decoding the blocks in
// between, and returns its docID.
func (c *Cursor) SkipToBlock(b int) uint32 {
	if c.cur == Terminated {
		return Terminated
	}
	if b <= c.blk {
		panic(fmt.Sprintf("BUG: index.Cursor.SkipToBlock(%d) from block %d", b, c.blk))
	}
	c.load(b)
	return c.cur
}

// Block is the index of the current block (NBlocks when terminated).
func (c *Cursor) Block() int { return c.blk }

// BlockLast is the last docID of the current block (Terminated when
// terminated).
func (c *Cursor) BlockLast() uint32 { return c.last }

// ShallowBlock returns the block that would hold docID d, at or after the
// current block, without decoding it (for BlockMax-WAND's shallow moves);
// NBlocks when d is past the end.
func (c *Cursor) ShallowBlock(d uint32) int {
	if d <= c.last {
		return c.blk
	}
	if c.blk >= c.l.NBlocks {
		return c.l.NBlocks
	}
	return c.seekBlock(c.blk+1, d)
}
