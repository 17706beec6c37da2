package index

import (
	"bytes"
	"errors"
	"math"
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

// TestCursorResetGEQ: ResetGEQ(l, d) lands where Reset then NextGEQ(d)
// does (docID and frequency), for targets before, inside, between and
// after the lists' postings, with the same reuse of one cursor across
// lists, and decodes no block before the one that holds d.
func TestCursorResetGEQ(t *testing.T) {
	rng := rand.New(rand.NewSource(46))
	for _, bs := range []int{128, 16} {
		x, _, docs, freqs := bp128Index(t, bs)
		var c, ref Cursor
		for id := 0; id < x.NumTerms(); id++ {
			l, err := x.List(id)
			if err != nil {
				t.Fatal(err)
			}
			ds := docs[id]
			targets := []uint32{0, ds[0], ds[0] + 1, ds[len(ds)-1], ds[len(ds)-1] + 1, Terminated}
			for range 4 {
				targets = append(targets, ds[rng.Intn(len(ds))]+uint32(rng.Intn(3)))
			}
			for _, d := range targets {
				got := c.ResetGEQ(&l, d)
				ref.Reset(l)
				want := ref.NextGEQ(d)
				if got != want || c.DocID() != want || c.Err() != nil {
					t.Fatalf("B%d term %d: ResetGEQ(%d) = %d (cursor %d, err %v), want %d", bs, id, d, got, c.DocID(), c.Err(), want)
				}
				if want == Terminated {
					continue
				}
				i := 0
				for ds[i] != want {
					i++
				}
				if tf := c.Freq(); tf != freqs[id][i] {
					t.Fatalf("B%d term %d: ResetGEQ(%d): tf %d, want %d", bs, id, d, tf, freqs[id][i])
				}
				if c.BlocksDecoded() != 1 {
					t.Fatalf("B%d term %d: ResetGEQ(%d) decoded %d blocks, want 1", bs, id, d, c.BlocksDecoded())
				}
				if n := c.Next(); i+1 < len(ds) && n != ds[i+1] {
					t.Fatalf("B%d term %d: Next after ResetGEQ(%d) = %d, want %d", bs, id, d, n, ds[i+1])
				}
			}
		}
	}
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

// TestSeekRestTwins compares seekRest's two forms (countLess where the CPU
// has it, and the scalar binary search) with a linear scan on increasing
// blocks of every length up to 130, including docIDs at and above 2^31
// (the vector compare is unsigned), for targets before, inside and at the
// end of the block.
func TestSeekRestTwins(t *testing.T) {
	rng := rand.New(rand.NewSource(36))
	for _, base := range []uint32{0, 1<<31 - 200, 1 << 31, math.MaxUint32 - 8000} {
		for n := 1; n <= 130; n++ {
			for rep := 0; rep < 4; rep++ {
				docs := make([]uint32, n)
				d := base
				for i := range docs {
					d += 1 + uint32(rng.Intn(1+rng.Intn(60)))
					docs[i] = d
				}
				for p := 0; p < n; p++ {
					lo := uint32(0)
					if p > 0 {
						lo = docs[p-1] + 1
					}
					for _, x := range []uint32{lo, docs[p], docs[p] + 1, docs[n-1], lo + uint32(rng.Int63n(int64(docs[n-1]-lo)+1))} {
						if x > docs[n-1] || (p > 0 && x <= docs[p-1]) {
							continue
						}
						want := checkSeekRest(t, docs, p, x)
						if haveSeekSIMD && n-p >= 8 {
							if got := p + int(countLess(&docs[p], uintptr(n-p), x)); got != want {
								t.Fatalf("docs %v: countLess from %d, %d = %d, want %d", docs, p, x, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// FuzzSeekRest: random increasing blocks (gaps from the fuzzer's bytes)
// and targets; seekRest and its scalar twin agree with a linear scan.
func FuzzSeekRest(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, uint32(0), uint8(0), uint32(7))
	f.Add(bytes.Repeat([]byte{200}, 128), uint32(1<<31), uint8(9), uint32(900))
	f.Fuzz(func(t *testing.T, gaps []byte, base uint32, p8 uint8, off uint32) {
		if len(gaps) == 0 || len(gaps) > 256 {
			return
		}
		docs := make([]uint32, len(gaps))
		d := uint64(base)
		for i, g := range gaps {
			d += 1 + uint64(g)
			if d > math.MaxUint32 {
				return
			}
			docs[i] = uint32(d)
		}
		n := len(docs)
		p := int(p8) % n
		lo := uint64(0)
		if p > 0 {
			lo = uint64(docs[p-1]) + 1
		}
		x := uint32(lo + uint64(off)%(uint64(docs[n-1])-lo+1))
		checkSeekRest(t, docs, p, x)
	})
}

// checkSeekRest checks seekRestScalar and seekRest from p for x (docs[p-1]
// < x <= the block's last docID) against a linear scan, and returns the
// scan's position.
func checkSeekRest(t *testing.T, docs []uint32, p int, x uint32) int {
	t.Helper()
	want := p
	for docs[want] < x {
		want++
	}
	if got := seekRestScalar(docs, p, x); got != want {
		t.Fatalf("docs %v: seekRestScalar(%d, %d) = %d, want %d", docs, p, x, got, want)
	}
	if got := seekRest(docs, p, x); got != want {
		t.Fatalf("docs %v: seekRest(%d, %d) = %d, want %d", docs, p, x, got, want)
	}
	return want
}

// BenchmarkSeekRest times seekRest's forms on blocks of 128 increasing
// docIDs with targets spread over the rest of the block past the 8-wide
// window (4096 precomputed searches, so that no branch learns them):
// countLess (where the CPU has AVX2), the branch-free binary search
// (seekRestScalar) and, for reference, the binary search with a branch on
// the data that the compiler made of main's form before step 36
// (docs/CPU-ENGINE.md). On the device: go test -c ./index, then
// index.test -test.run '^$' -test.bench SeekRest.
func BenchmarkSeekRest(b *testing.B) {
	rng := rand.New(rand.NewSource(37))
	const nb, ns = 64, 4096
	blocks := make([][]uint32, nb)
	for i := range blocks {
		docs := make([]uint32, 128)
		d := uint32(rng.Intn(1000))
		for j := range docs {
			d += 1 + uint32(rng.Intn(200))
			docs[j] = d
		}
		blocks[i] = docs
	}
	type search struct {
		blk, p int
		d      uint32
	}
	ss := make([]search, ns)
	for i := range ss {
		blk := rng.Intn(nb)
		docs := blocks[blk]
		p := 8 + rng.Intn(8)
		ss[i] = search{blk, p, docs[p-1] + 1 + uint32(rng.Int63n(int64(docs[127]-docs[p-1])))}
	}
	branchy := func(docs []uint32, p int, d uint32) int {
		rest := docs[p:]
		lo, n := 0, len(rest)
		for n > 1 {
			half := n >> 1
			if rest[lo+half-1] < d {
				lo += half
			}
			n -= half
		}
		return p + lo
	}
	forms := []struct {
		name string
		f    func([]uint32, int, uint32) int
	}{{"seekRest", seekRest}, {"scalar", seekRestScalar}, {"branchy", branchy}}
	for _, fm := range forms {
		b.Run(fm.name, func(b *testing.B) {
			if fm.name == "seekRest" && !haveSeekSIMD {
				b.Skip("no AVX2: seekRest is the scalar form")
			}
			sum := 0
			for i := 0; i < b.N; i++ {
				s := &ss[i&(ns-1)] // ns is a power of 2
				sum += fm.f(blocks[s.blk], s.p, s.d)
			}
			if sum < 0 {
				b.Fatal("negative positions")
			}
		})
	}
}
