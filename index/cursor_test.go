package index

import (
	"errors"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/qpengine/qp/compress"
)

// bp128Index writes and opens an index of random lists with bp128 docIDs
// and frequencies and block size bs.
func bp128Index(t *testing.T, bs int) (*Index, []string, [][]uint32, [][]uint32) {
	t.Helper()
	rng := rand.New(rand.NewSource(int64(bs)))
	terms, docs, freqs, lens := randomLists(rng, 2000, bs)
	bp, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "x.qp")
	writeIndex(t, path, bp, bs, terms, docs, freqs, lens)
	x, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return x, terms, docs, freqs
}

// TestCursorRandomAccessFreqs reads frequencies by random access (the
// first freqRandomMax of a block), then by decoding, in one block, and
// compares both with the written values; with B > 128 (several bp128
// blocks per frequency block) it falls back to decoding.
func TestCursorRandomAccessFreqs(t *testing.T) {
	for _, bs := range []int{128, 64, 200} {
		x, _, docs, freqs := bp128Index(t, bs)
		for id := 0; id < x.NumTerms(); id++ {
			l, err := x.List(id)
			if err != nil {
				t.Fatal(err)
			}
			var c Cursor
			c.Reset(l)
			for i := range docs[id] {
				if c.DocID() != docs[id][i] {
					t.Fatalf("B%d term %d posting %d: doc %d, want %d", bs, id, i, c.DocID(), docs[id][i])
				}
				// Ask twice: a random-access read must not count as a decode.
				if tf, tf2 := c.Freq(), c.Freq(); tf != freqs[id][i] || tf2 != tf {
					t.Fatalf("B%d term %d posting %d: tf %d, %d, want %d", bs, id, i, tf, tf2, freqs[id][i])
				}
				c.Next()
			}
			if c.Err() != nil || c.DocID() != Terminated || c.Freq() != 0 {
				t.Fatalf("B%d term %d: end: err %v doc %d tf %d", bs, id, c.Err(), c.DocID(), c.Freq())
			}
		}
	}
}

// TestCursorCorruptFreqBlockRandomAccess damages a frequency block's width
// byte, then its padding bits: a random-access read terminates the cursor
// with an error wrapping ErrCorrupt, exactly as decoding the block does.
func TestCursorCorruptFreqBlockRandomAccess(t *testing.T) {
	x, _, _, _ := bp128Index(t, 128)
	var l List
	for id := 0; id < x.NumTerms(); id++ {
		if l, _ = x.List(id); l.NBlocks >= 2 && l.BlockLen(0) == 128 {
			break
		}
	}
	blk := l.FreqBlock(0)
	// blk = uvarint(128) (2 bytes), width, data.
	for _, damage := range []struct {
		name string
		pos  int
		val  byte
	}{{"width 33", 2, 33}, {"truncated", 2, 32}} {
		saved := append([]byte(nil), blk...)
		blk[damage.pos] = damage.val
		var c Cursor
		c.Reset(l)
		if tf := c.Freq(); tf != 0 || !errors.Is(c.Err(), ErrCorrupt) || c.DocID() != Terminated {
			t.Errorf("%s: tf %d, err %v, doc %d", damage.name, tf, c.Err(), c.DocID())
		}
		copy(blk, saved)
	}
}

// TestCursorSkipToBlock: SkipToBlock lands on the first posting of the
// block, terminates past the end and does not decode the blocks between.
func TestCursorSkipToBlock(t *testing.T) {
	x, _, docs, _ := bp128Index(t, 16)
	for id := 0; id < x.NumTerms(); id++ {
		l, _ := x.List(id)
		if l.NBlocks < 4 {
			continue
		}
		var c Cursor
		c.Reset(l)
		if got := c.SkipToBlock(3); got != docs[id][3*16] || c.BlocksDecoded() != 2 {
			t.Fatalf("term %d: SkipToBlock(3) = %d (want %d), %d blocks decoded (want 2)", id, got, docs[id][48], c.BlocksDecoded())
		}
		if got := c.SkipToBlock(l.NBlocks); got != Terminated || c.DocID() != Terminated || c.Err() != nil {
			t.Fatalf("term %d: SkipToBlock past the end = %d, err %v", id, got, c.Err())
		}
		return
	}
	t.Fatal("no list of 4 blocks")
}

// TestSeekGEQ compares seekGEQ (window, then binary search) from every
// start position with a linear scan, for every target of blocks of every
// length up to 130 with random gaps.
func TestSeekGEQ(t *testing.T) {
	rng := rand.New(rand.NewSource(23))
	for n := 1; n <= 130; n++ {
		docs := make([]uint32, n)
		d := uint32(rng.Intn(3))
		for i := range docs {
			d += 1 + uint32(rng.Intn(1+rng.Intn(40)))
			docs[i] = d
		}
		linear := func(p int, x uint32) int {
			for docs[p] < x {
				p++
			}
			return p
		}
		for x := uint32(0); x <= docs[n-1]; x++ {
			for p := 0; p < n; p++ {
				if p > 0 && docs[p-1] >= x {
					break // seekGEQ's contract: the target lies past p-1
				}
				if got, want := seekGEQ(docs, p, x), linear(p, x); got != want {
					t.Fatalf("n %d, docs %v: seekGEQ(%d, %d) = %d, want %d", n, docs, p, x, got, want)
				}
			}
		}
	}
}
