package index

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/qpengine/qp/compress"
)

// BitmapMode says when the writer stores a list's docIDs as a roaring
// bitmap instead of docID blocks (format.go, "Bitmap lists"). Frequencies
// and the skip table are stored the same way in both representations.
type BitmapMode uint8

const (
	// BitmapsOff never stores bitmaps (the zero value: library callers get
	// block-coded lists unless they ask).
	BitmapsOff BitmapMode = iota
	// BitmapsAuto stores a list as a bitmap when its serialized bitmap is
	// smaller than its docID blocks (the default of `qp index`).
	BitmapsAuto
	// BitmapsAlways stores every list as a bitmap (for tests and
	// benchmarks).
	BitmapsAlways
)

func (m BitmapMode) String() string {
	switch m {
	case BitmapsOff:
		return "off"
	case BitmapsAuto:
		return "auto"
	case BitmapsAlways:
		return "always"
	}
	return fmt.Sprintf("BitmapMode(%d)", uint8(m))
}

// ParseBitmapMode parses "off", "auto" or "always".
func ParseBitmapMode(s string) (BitmapMode, error) {
	switch s {
	case "off":
		return BitmapsOff, nil
	case "auto":
		return BitmapsAuto, nil
	case "always":
		return BitmapsAlways, nil
	}
	return 0, fmt.Errorf("bitmap mode %q: want auto, off or always", s)
}

// IsBitmap reports whether the list's docIDs are stored as a roaring bitmap.
func (l *List) IsBitmap() bool { return l.bm != nil }

// Bitmap returns the list's docIDs as a roaring bitmap (nil for a
// block-coded list). It was verified by Open; it is shared by every reader
// and must not be modified (roaring's read-only operations — Contains,
// iterators, And, FastAnd, FastOr — are safe concurrently).
func (l *List) Bitmap() *roaring.Bitmap { return l.bm }

// iterPool holds roaring iterators for List.DecodeDocs on bitmap lists (an
// IntIterator points into itself, so a local one would escape; the pool keeps
// DecodeDocs free of allocations in the steady state).
var iterPool = sync.Pool{New: func() any { return new(roaring.IntIterator) }}

// decodeBitmapDocs writes the docIDs of block b of a bitmap list (ranks
// [b*B, b*B+BlockLen(b))) to out. it must be positioned at block b's first
// docID when seq is true; otherwise it is re-initialized and moved there by
// AdvanceIfNeeded(BlockBase(b)), since the block's first docID is the
// smallest one above the previous block's last.
func (l *List) decodeBitmapDocs(b int, out []uint32, it *roaring.IntIterator, seq bool) (int, error) {
	if !seq {
		it.Initialize(l.bm)
		it.AdvanceIfNeeded(l.BlockBase(b))
	}
	n := l.BlockLen(b)
	for i := 0; i < n; i++ {
		if !it.HasNext() {
			return 0, l.blockErr(b, "docID bitmap", fmt.Errorf("%d values, want %d", i, n))
		}
		out[i] = it.Next()
	}
	if out[n-1] != l.LastDoc(b) {
		return 0, l.blockErr(b, "docID bitmap", fmt.Errorf("last docID %d, skip table says %d", out[n-1], l.LastDoc(b)))
	}
	return n, nil
}

// BlockCodedList returns list t with its docIDs block-coded by the list's
// doc codec, exactly as a block-coded list of the same postings: for a
// bitmap list the blocks are encoded now (allocating) and their ends checked
// against the skip table's docEnd, which the writer recorded for them
// (format.go); a block-coded list is returned as is. The result has the same
// skip table and frequency blocks, so DocBlock, DocBytes and the GPU upload
// work on it.
//
// The blocks of a bitmap list are encoded once and kept (the GPU backend may
// ask for a list again whenever its cache uploads it); safe for concurrent
// use.
func (x *Index) BlockCodedList(t int) (List, error) {
	l, err := x.List(t)
	if err != nil || !l.IsBitmap() {
		return l, err
	}
	x.bcMu.RLock()
	enc, ok := x.bcDocs[t]
	x.bcMu.RUnlock()
	if !ok {
		if enc, err = l.encodeBlocks(); err != nil {
			return List{}, err
		}
		x.bcMu.Lock()
		if x.bcDocs == nil {
			x.bcDocs = map[int][]byte{}
		}
		x.bcDocs[t] = enc
		x.bcMu.Unlock()
	}
	l.docs, l.bm = enc, nil
	return l, nil
}

// encodeBlocks encodes a bitmap list's docIDs as docID blocks and checks
// their ends against the skip table.
func (l *List) encodeBlocks() ([]byte, error) {
	docs := make([]uint32, l.BlockSize)
	vals := make([]uint32, l.BlockSize)
	var enc []byte
	var it roaring.IntIterator
	it.Initialize(l.bm)
	for b := 0; b < l.NBlocks; b++ {
		n, err := l.decodeBitmapDocs(b, docs, &it, true)
		if err != nil {
			return nil, err
		}
		enc = AppendDocBlock(enc, l.DocCodec, blockValues(l.DocCodec, vals[:n], docs[:n], l.BlockBase(b)))
		if s, e := l.docRange(b); e != len(enc) || s > e {
			return nil, l.blockErr(b, "docID blocks", fmt.Errorf("re-encoded block ends at %d, skip table says %d", len(enc), e))
		}
	}
	return enc, nil
}

// blockValues turns one block's absolute docIDs into the values the doc
// codec encodes (format.go): d - base for Sorted codecs, else gaps minus one
// with the first relative to base.
func blockValues(c compress.Codec, v, docs []uint32, base uint32) []uint32 {
	for i, d := range docs {
		switch {
		case c.Kind() == compress.Sorted:
			v[i] = d - base
		case i == 0:
			v[0] = d - base
		default:
			v[i] = d - docs[i-1] - 1
		}
	}
	return v
}

// bitmapEncoder is a ListEncoder's bitmap scratch.
type bitmapEncoder struct {
	mode BitmapMode
	bm   *roaring.Bitmap
	buf  bytes.Buffer
}

// encode builds the canonical bitmap of docs (AddMany, RunOptimize) and
// returns its serialization when the mode says to store it instead of
// blockBytes of docID blocks, else nil.
func (e *bitmapEncoder) encode(docs []uint32, blockBytes int) []byte {
	if e.mode == BitmapsOff || len(docs) == 0 {
		return nil
	}
	if e.bm == nil {
		e.bm = roaring.New()
	}
	e.bm.Clear()
	e.bm.AddMany(docs)
	e.bm.RunOptimize()
	if e.mode == BitmapsAuto && e.bm.GetSerializedSizeInBytes() >= uint64(blockBytes) {
		return nil
	}
	e.buf.Reset()
	if _, err := e.bm.WriteTo(&e.buf); err != nil {
		panic("BUG: serializing a bitmap to memory: " + err.Error())
	}
	return e.buf.Bytes()
}
