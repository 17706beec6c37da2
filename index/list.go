package index

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/qpengine/qp/compress"
)

// List is a view of one compressed posting list. It is a small value that
// points into the loaded index; copying it is cheap.
type List struct {
	Term      int
	DF        uint32
	CF        uint64
	IDF       float32
	MaxScore  float32 // max BM25 term score over the list
	DocCodec  compress.Codec
	FreqCodec compress.Codec
	NBlocks   int
	BlockSize int

	// docB and freqB are DocCodec and FreqCodec when they are
	// compress.Bounded (their blocks are stored without count and sum,
	// blockcode.go), else nil.
	docB, freqB compress.Bounded
	// docBP, freqBP: DocCodec, FreqCodec is bp128 (its blocks take the
	// vector routines: decodeBP128, DecodeFreqs).
	docBP, freqBP bool

	skips, docs, freqs []byte
	blockMax           []float32
	path               string
	bm                 *roaring.Bitmap // docIDs of a bitmap list (docs is then its serialization), else nil
}

// LastDoc is the last docID of block b.
func (l *List) LastDoc(b int) uint32 {
	return binary.LittleEndian.Uint32(l.skips[skipEntrySize*b:])
}

// BlockBase is the smallest docID block b may hold (previous last + 1).
func (l *List) BlockBase(b int) uint32 {
	if b == 0 {
		return 0
	}
	return l.LastDoc(b-1) + 1
}

// BlockLen is the number of postings in block b.
func (l *List) BlockLen(b int) int {
	if b == l.NBlocks-1 {
		return int(l.DF) - b*l.BlockSize
	}
	return l.BlockSize
}

// BlockMax is the largest BM25 term score in block b.
func (l *List) BlockMax(b int) float32 {
	if l.blockMax != nil {
		return l.blockMax[b]
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(l.skips[skipEntrySize*b+12:]))
}

func (l *List) docRange(b int) (int, int) {
	var a uint32
	if b > 0 {
		a = binary.LittleEndian.Uint32(l.skips[skipEntrySize*(b-1)+4:])
	}
	return int(a), int(binary.LittleEndian.Uint32(l.skips[skipEntrySize*b+4:]))
}

func (l *List) freqRange(b int) (int, int) {
	var a uint32
	if b > 0 {
		a = binary.LittleEndian.Uint32(l.skips[skipEntrySize*(b-1)+8:])
	}
	return int(a), int(binary.LittleEndian.Uint32(l.skips[skipEntrySize*b+8:]))
}

// DocBlock returns the encoded docIDs of block b. A bitmap list has no
// docID blocks: use Index.BlockCodedList to get them (calling DocBlock on a
// bitmap list is a bug).
func (l *List) DocBlock(b int) []byte {
	if l.bm != nil {
		panic(fmt.Sprintf("BUG: DocBlock on bitmap list of term %d (use Index.BlockCodedList)", l.Term))
	}
	s, e := l.docRange(b)
	return l.docs[s:e]
}

// FreqBlock returns the encoded frequencies of block b.
func (l *List) FreqBlock(b int) []byte { s, e := l.freqRange(b); return l.freqs[s:e] }

// DocBytes and FreqBytes are the whole encoded areas (for size statistics
// and for shipping lists to a GPU). DocBytes of a bitmap list is its
// serialized bitmap, which the skip table's docEnd offsets do not index
// (Index.BlockCodedList gives the blocks).
func (l *List) DocBytes() []byte  { return l.docs }
func (l *List) FreqBytes() []byte { return l.freqs }

// SkipBytes is the raw skip table (NBlocks × 16 bytes, see format.go).
func (l *List) SkipBytes() []byte { return l.skips }

func (l *List) blockErr(b int, what string, err error) error {
	return fmt.Errorf("index %s: %w: term %d block %d %s: %v", l.path, ErrCorrupt, l.Term, b, what, err)
}

// DecodeDocs decodes the absolute docIDs of block b into out (len >=
// BlockSize) and returns their number. It does not allocate (in the steady
// state, for bitmap lists: their iterators come from a pool).
func (l *List) DecodeDocs(b int, out []uint32) (int, error) {
	if l.bm != nil {
		it := iterPool.Get().(*roaring.IntIterator)
		n, err := l.decodeBitmapDocs(b, out, it, false)
		iterPool.Put(it)
		return n, err
	}
	if l.docB != nil {
		return l.decodeKnownSum(b, out)
	}
	if l.docBP && len(out) >= 128 {
		if n, ok, err := l.decodeBP128(b, out); ok {
			return n, err
		}
	}
	n, err := l.DocCodec.Decode(out, l.DocBlock(b))
	if err != nil {
		return 0, l.blockErr(b, "docIDs", err)
	}
	if n != l.BlockLen(b) {
		return 0, l.blockErr(b, "docIDs", fmt.Errorf("%d values, want %d", n, l.BlockLen(b)))
	}
	last := uint64(l.LastDoc(b))
	base := uint64(l.BlockBase(b))
	if l.DocCodec.Kind() == compress.Sorted {
		return n, l.checkSorted(b, out[:n], base, last)
	}
	// Rebuild absolute docIDs from the gaps (d-gap - 1) in 64 bits: every
	// step adds at least 1, so the docIDs strictly increase and cannot wrap
	// around, and when the last one equals the skip table's last docID
	// (which Open checked against N) every one lies in [base, last].
	if d := prefixGaps(out[:n], base); d != last {
		return 0, l.blockErr(b, "docIDs", fmt.Errorf("last docID %d, skip table says %d (docIDs not increasing, or past the block's last docID)", d, last))
	}
	return n, nil
}

// decodeBP128 is DecodeDocs for a bp128 docID block by compress.BP128Docs
// (unpacking and prefix sum in one vector pass). It checks what Decode and
// the scalar path check: the count (its canonical uvarint, BlockLen), the
// width (1..32; 0 and the widths the routine does not cover take the scalar
// path, ok false), the length (no truncation, no trailing bytes), the
// padding bits (BP128Docs declines nonzero ones), and the last docID
// against the skip table, computed in 64 bits: when it matches, the docIDs
// strictly increase within [base, last] (every gap adds at least 1).
func (l *List) decodeBP128(b int, out []uint32) (int, bool, error) {
	n := l.BlockLen(b)
	data, w, ok := bp128Header(l.DocBlock(b), n)
	if !ok {
		return 0, false, nil // the scalar path reports it
	}
	d, ok := compress.BP128Docs(out, data, n, w, uint32(l.BlockBase(b)))
	if !ok {
		return 0, false, nil
	}
	if last := uint64(l.LastDoc(b)); d != last {
		return 0, true, l.blockErr(b, "docIDs", fmt.Errorf("last docID %d, skip table says %d (docIDs not increasing, or past the block's last docID)", d, last))
	}
	return n, true, nil
}

// bp128Header parses a bp128 encoding of one block of n values (1..128):
// the canonical uvarint of n, a width byte (<= 32) and exactly the packed
// bytes of n values; ok is false for anything else (the codec's Decode
// then decodes it or reports the damage).
func bp128Header(src []byte, n int) (data []byte, width uint, ok bool) {
	h := 2
	if n >= 128 {
		if n > 128 || len(src) < 3 || src[0] != 0x80 || src[1] != 0x01 {
			return nil, 0, false
		}
		h = 3
	} else if n < 1 || len(src) < 2 || int(src[0]) != n {
		return nil, 0, false
	}
	w := uint(src[h-1])
	if w > 32 || len(src)-h != (n*int(w)+7)/8 {
		return nil, 0, false
	}
	return src[h:], w, true
}

// decodeKnownSum is DecodeDocs for a compress.Bounded doc codec, whose
// blocks hold neither count nor sum (blockcode.go): the count is BlockLen,
// the values (gaps minus one, the first relative to the base) add up to
// lastDoc - base - (n-1).
func (l *List) decodeKnownSum(b int, out []uint32) (int, error) {
	n := l.BlockLen(b)
	if len(out) < n {
		return 0, l.blockErr(b, "docIDs", compress.ErrShortBuffer)
	}
	last := uint64(l.LastDoc(b))
	base := uint64(l.BlockBase(b))
	if last+1 < base+uint64(n) {
		return 0, l.blockErr(b, "docIDs", fmt.Errorf("%d docIDs cannot lie in [%d, %d] (skip table)", n, base, last))
	}
	if err := l.docB.DecodeKnownSum(out[:n], l.DocBlock(b), last-base-uint64(n-1)); err != nil {
		return 0, l.blockErr(b, "docIDs", err)
	}
	if d := prefixGaps(out[:n], base); d != last { // the decoder guarantees the sum: a bug
		panic(fmt.Sprintf("BUG: %s decoded docIDs ending at %d, the sum says %d", l.DocCodec.Name(), d, last))
	}
	return n, nil
}

// prefixGaps turns docs, d-gaps minus 1 after a first value relative to
// base, into absolute docIDs, and returns the last one computed in 64 bits.
// Four values a step: their sum is the only addition on the dependency
// chain of the running docID, the partial sums within a step are
// independent of it.
func prefixGaps(docs []uint32, base uint64) uint64 {
	d := base + uint64(docs[0])
	docs[0] = uint32(d)
	i := 1
	for ; i+4 <= len(docs); i += 4 {
		g := docs[i : i+4 : i+4]
		x0 := uint64(g[0]) + 1
		x01 := x0 + uint64(g[1]) + 1
		x012 := x01 + uint64(g[2]) + 1
		x0123 := x012 + uint64(g[3]) + 1
		g[0], g[1], g[2], g[3] = uint32(d+x0), uint32(d+x01), uint32(d+x012), uint32(d+x0123)
		d += x0123
	}
	for ; i < len(docs); i++ {
		d += uint64(docs[i]) + 1
		docs[i] = uint32(d)
	}
	return d
}

// checkSorted turns the values of a Sorted codec (docID - base) into
// docIDs and verifies that they strictly increase and end at last.
func (l *List) checkSorted(b int, out []uint32, base, last uint64) error {
	prev := int64(-1)
	for i, v := range out {
		d := base + uint64(v)
		if int64(d) <= prev || d > last {
			return l.blockErr(b, "docIDs", fmt.Errorf("docID %d at %d not increasing or past the block's last docID %d", d, i, last))
		}
		out[i] = uint32(d)
		prev = int64(d)
	}
	if uint64(out[len(out)-1]) != last {
		return l.blockErr(b, "docIDs", fmt.Errorf("last docID %d, skip table says %d", out[len(out)-1], last))
	}
	return nil
}

// DecodeFreqs decodes the term frequencies of block b into out.
func (l *List) DecodeFreqs(b int, out []uint32) (int, error) {
	if l.freqBP && len(out) >= 128 {
		// The vector routine adds the 1 (tf-1 is stored; no overflow at
		// the widths it covers). The header is checked as Decode checks
		// it; anything else takes Decode.
		n := l.BlockLen(b)
		if data, w, ok := bp128Header(l.FreqBlock(b), n); ok && compress.BP128Plus1(out, data, n, w) {
			return n, nil
		}
	}
	n, err := l.decodeFreqValues(b, out)
	if err != nil {
		return 0, l.blockErr(b, "frequencies", err)
	}
	if n != l.BlockLen(b) {
		return 0, l.blockErr(b, "frequencies", fmt.Errorf("%d values, want %d", n, l.BlockLen(b)))
	}
	if l.FreqCodec.Kind() == compress.Sorted {
		prev := uint32(0)
		for i := 0; i < n; i++ {
			v := out[i]
			if v < prev || v-prev == math.MaxUint32 {
				return 0, l.blockErr(b, "frequencies", fmt.Errorf("prefix sums decrease at %d", i))
			}
			out[i] = v - prev + 1
			prev = v
		}
	} else {
		// tf - 1 is stored: add 1, and an overflow (a stored 2^32-1) shows
		// as a zero minimum.
		fs := out[:n]
		if incMin(fs) == 0 {
			return 0, l.blockErr(b, "frequencies", fmt.Errorf("frequency overflows at %d", slices.Index(fs, 0)))
		}
	}
	return n, nil
}

// incMin adds 1 to every value of fs in place and returns the smallest
// result (0 exactly when a value was 2^32-1 and wrapped; MaxUint32 for an
// empty fs). Four values per iteration with four independent minima, so
// the minimum is not one dependency chain through the block.
func incMin(fs []uint32) uint32 {
	m0, m1, m2, m3 := uint32(math.MaxUint32), uint32(math.MaxUint32), uint32(math.MaxUint32), uint32(math.MaxUint32)
	i := 0
	for ; i+4 <= len(fs); i += 4 {
		f := fs[i : i+4 : i+4]
		a, b, c, d := f[0]+1, f[1]+1, f[2]+1, f[3]+1
		f[0], f[1], f[2], f[3] = a, b, c, d
		m0, m1, m2, m3 = min(m0, a), min(m1, b), min(m2, c), min(m3, d)
	}
	for ; i < len(fs); i++ {
		v := fs[i] + 1
		fs[i] = v
		m0 = min(m0, v)
	}
	return min(m0, m1, m2, m3)
}

// decodeFreqValues decodes the stored values of frequency block b: its
// count is BlockLen for a compress.Bounded codec (blockcode.go), else
// stored.
func (l *List) decodeFreqValues(b int, out []uint32) (int, error) {
	if l.freqB == nil {
		return l.FreqCodec.Decode(out, l.FreqBlock(b))
	}
	n := l.BlockLen(b)
	if len(out) < n {
		return 0, compress.ErrShortBuffer
	}
	return n, l.freqB.DecodeKnownN(out[:n], l.FreqBlock(b))
}

// Freq returns the frequency of posting i of block b by random access where
// the frequency codec allows it; ok is false when it does not (the caller
// then decodes the block).
func (l *List) Freq(b, i int) (tf uint32, ok bool, err error) {
	ra, isRA := l.FreqCodec.(compress.RandomAccess)
	if !isRA {
		return 0, false, nil
	}
	src := l.FreqBlock(b)
	v, err := ra.Get(src, i)
	if err != nil {
		return 0, true, l.blockErr(b, "frequency", err)
	}
	if l.FreqCodec.Kind() == compress.Sorted {
		var p uint32
		if i > 0 {
			if p, err = ra.Get(src, i-1); err != nil {
				return 0, true, l.blockErr(b, "frequency", err)
			}
		}
		if v < p || v-p == math.MaxUint32 {
			return 0, true, l.blockErr(b, "frequency", fmt.Errorf("prefix sums decrease at %d", i))
		}
		return v - p + 1, true, nil
	}
	if v == math.MaxUint32 {
		return 0, true, l.blockErr(b, "frequency", fmt.Errorf("frequency overflows at %d", i))
	}
	return v + 1, true, nil
}

// Decode decodes the whole list into docs and freqs (grown as needed).
func (l *List) Decode(docs, freqs []uint32) ([]uint32, []uint32, error) {
	docs, freqs = grow(docs, int(l.DF)), grow(freqs, int(l.DF))
	for b := 0; b < l.NBlocks; b++ {
		s := b * l.BlockSize
		if _, err := l.DecodeDocs(b, docs[s:cap(docs)]); err != nil {
			return nil, nil, err
		}
		if _, err := l.DecodeFreqs(b, freqs[s:cap(freqs)]); err != nil {
			return nil, nil, err
		}
	}
	return docs, freqs, nil
}

// grow returns s resized to n (reallocated only when its capacity is short).
func grow(s []uint32, n int) []uint32 {
	if cap(s) < n {
		s = make([]uint32, n)
	}
	return s[:n]
}
