package index

import (
	"errors"
	"slices"
	"testing"
)

// TestDecodeBP128Blocks decodes every bp128 docID and frequency
// block (the vector paths where the width allows them) and compares them
// with the written postings, then damages blocks of the widths it covers: a
// flipped data bit changes one value and so the block's sum, which the
// skip table's last docID catches, or sets a padding bit, which the scalar
// path reports; a width of 33 and a width whose length disagrees are
// reported by the scalar path. Every error wraps ErrCorrupt.
func TestDecodeBP128Blocks(t *testing.T) {
	x, _, docs, freqs := bp128Index(t, 128)
	out := make([]uint32, 128)
	covered := 0
	for id := 0; id < x.NumTerms(); id++ {
		l, err := x.List(id)
		if err != nil {
			t.Fatal(err)
		}
		for b := 0; b < l.NBlocks; b++ {
			n, err := l.DecodeDocs(b, out)
			if err != nil || !slices.Equal(out[:n], docs[id][128*b:128*b+l.BlockLen(b)]) {
				t.Fatalf("term %d block %d: err %v, docs differ", id, b, err)
			}
			if n, err := l.DecodeFreqs(b, out); err != nil || !slices.Equal(out[:n], freqs[id][128*b:128*b+l.BlockLen(b)]) {
				t.Fatalf("term %d block %d: err %v, frequencies differ", id, b, err)
			}
			blk := l.DocBlock(b)
			h := 2 // header: uvarint(n), width
			if l.BlockLen(b) == 128 {
				h = 3
			}
			if blk[h-1] == 0 || blk[h-1] > 24 {
				continue
			}
			covered++
			saved := append([]byte(nil), blk...)
			for _, damage := range []struct {
				pos int
				xor byte
			}{{h + (id*7+b)%(len(blk)-h), 1 << (id % 8)}, {h - 1, blk[h-1] ^ 33}, {h - 1, blk[h-1] ^ (blk[h-1] + 8)}} {
				blk[damage.pos] ^= damage.xor
				if _, err := l.DecodeDocs(b, out); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("term %d block %d: byte %d ^ %#x: err %v", id, b, damage.pos, damage.xor, err)
				}
				copy(blk, saved)
			}
		}
	}
	if covered == 0 {
		t.Fatal("no block of width 1..24")
	}
	t.Logf("%d blocks of width 1..24", covered)
}
