// Package wah is the Word-Aligned Hybrid (WAH) bitmap code with 32-bit
// words, as used by the GPU range-query paper
// (../shared/papers/wah-bitmap-gpu-range-queries.txt, "Word-Aligned hybrid
// compression", Algorithm 2; the paper uses 64-bit words, this package the
// 32-bit words of Andrzejewski and Wrembel that it cites): the CPU
// reference for the GPU decompression and reductions of package cuda
// (cuda/kern/wah.go, cuda/kernels/wah.cu).
//
// A bitmap of n rows (documents) is cut into G = ceil(n/31) groups of 31
// rows; row r is bit r%31 of group r/31. Each 32-bit word is
//
//	literal  bit 31 = 0; bits 0..30 are one group's rows
//	fill     bit 31 = 1; bit 30 = the fill bit; bits 0..29 = L >= 1, a run
//	         of L groups all equal to the fill bit (all 31 rows)
//
// The rows n..31G-1 of the last group (the padding) are zero, so a
// bitmap whose last group is partial never ends in a one-fill.
//
// The "group bitset" (DecodeGroups) is the decompressed form of Algorithm
// 2: one uint32 per group holding its 31 rows, bit 31 zero; it is the
// layout the GPU decompresses to and reduces.
//
// Encode writes the canonical code: every homogeneous group (all 31 rows
// zero or all one) goes into a fill, consecutive equal fills are merged (a
// run longer than 2^30-1 groups is split), everything else is a literal.
// The decoders accept any valid code (also non-canonical literals of
// homogeneous groups) and return an error wrapping ErrCorrupt for
// anything else: a zero-length fill, a group count other than G, or set
// padding rows.
package wah

import (
	"errors"
	"fmt"
	"math/bits"
)

// Word layout constants.
const (
	GroupBits = 31                // rows per group
	FillFlag  = uint32(1) << 31   // bit 31: the word is a fill
	FillBit   = uint32(1) << 30   // bit 30 of a fill: its rows' value
	MaxRun    = uint32(1)<<30 - 1 // longest run of one fill word
	LitMask   = uint32(1)<<31 - 1 // the 31 rows of a literal; a full group
)

// ErrCorrupt is wrapped by every error about an invalid WAH code.
var ErrCorrupt = errors.New("corrupt WAH bitmap")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("wah: %w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// Bitmap is a WAH-compressed bitmap of N rows.
type Bitmap struct {
	Words []uint32
	N     uint32
}

// Groups is the number of 31-row groups of an n-row bitmap.
func Groups(n uint32) int { return int((uint64(n) + GroupBits - 1) / GroupBits) }

// encoder appends groups to a WAH code, merging homogeneous groups into
// fills (canonical form).
type encoder struct{ w []uint32 }

// run appends k groups all equal to g (g a 31-bit group value).
func (e *encoder) run(g uint32, k uint32) {
	if k == 0 {
		return
	}
	if g != 0 && g != LitMask {
		for ; k > 0; k-- {
			e.w = append(e.w, g)
		}
		return
	}
	fill := FillFlag
	if g == LitMask {
		fill |= FillBit
	}
	if n := len(e.w); n > 0 && e.w[n-1]&(FillFlag|FillBit) == fill {
		last := e.w[n-1] & MaxRun
		add := min(k, MaxRun-last)
		e.w[n-1] += add
		k -= add
	}
	for k > 0 {
		l := min(k, MaxRun)
		e.w = append(e.w, fill|l)
		k -= l
	}
}

// Encode compresses the sorted, strictly increasing docIDs docs (all < n)
// into a bitmap of n rows, appending its words to dst[:0]. Unsorted or
// out-of-range docIDs are an error.
func Encode(dst []uint32, docs []uint32, n uint32) (Bitmap, error) {
	e := encoder{w: dst[:0]}
	G := uint32(Groups(n))
	next := uint32(0) // next group to write
	for i := 0; i < len(docs); {
		d := docs[i]
		if d >= n {
			return Bitmap{}, fmt.Errorf("wah: docID %d >= rows %d", d, n)
		}
		if i > 0 && d <= docs[i-1] {
			return Bitmap{}, fmt.Errorf("wah: docIDs not increasing at %d: %d after %d", i, d, docs[i-1])
		}
		g := d / GroupBits
		e.run(0, g-next)
		var v uint32
		for ; i < len(docs) && docs[i]/GroupBits == g; i++ {
			if i > 0 && docs[i] <= docs[i-1] {
				return Bitmap{}, fmt.Errorf("wah: docIDs not increasing at %d: %d after %d", i, docs[i], docs[i-1])
			}
			if docs[i] >= n {
				return Bitmap{}, fmt.Errorf("wah: docID %d >= rows %d", docs[i], n)
			}
			v |= 1 << (docs[i] % GroupBits)
		}
		e.run(v, 1)
		next = g + 1
	}
	e.run(0, G-next)
	return Bitmap{Words: e.w, N: n}, nil
}

// EncodeBitset compresses the first n rows of a bitset (row r = bit r%64
// of bits[r/64]; rows >= n are ignored), appending to dst[:0]. bits must
// hold at least n rows (a programmer bug otherwise).
func EncodeBitset(dst []uint32, bits []uint64, n uint32) Bitmap {
	if uint64(len(bits))*64 < uint64(n) {
		panic(fmt.Sprintf("BUG: wah.EncodeBitset: %d words for %d rows", len(bits), n))
	}
	e := encoder{w: dst[:0]}
	G := Groups(n)
	for g := 0; g < G; g++ {
		r := uint64(g) * GroupBits
		v := extract(bits, r)
		if rem := uint64(n) - r; rem < GroupBits {
			v &= uint32(1)<<rem - 1
		}
		e.run(v, 1)
	}
	return Bitmap{Words: e.w, N: n}
}

// extract returns the 31 rows r..r+30 of a bitset (rows past its end 0).
func extract(bits []uint64, r uint64) uint32 {
	w, o := r/64, r%64
	v := bits[w] >> o
	if o > 64-GroupBits && w+1 < uint64(len(bits)) {
		v |= bits[w+1] << (64 - o)
	}
	return uint32(v) & LitMask
}

// Validate checks that b is a valid code of b.N rows.
func (b Bitmap) Validate() error {
	G := uint64(Groups(b.N))
	var g uint64
	for i, w := range b.Words {
		if w&FillFlag != 0 {
			l := w & MaxRun
			if l == 0 {
				return corrupt("word %d: fill of length 0", i)
			}
			g += uint64(l)
		} else {
			g++
		}
		if g > G {
			return corrupt("word %d: more than %d groups for %d rows", i, G, b.N)
		}
	}
	if g != G {
		return corrupt("%d groups, want %d for %d rows", g, G, b.N)
	}
	if rem := b.N % GroupBits; rem != 0 {
		last := b.Words[len(b.Words)-1]
		if last&FillFlag != 0 && last&FillBit != 0 || last&FillFlag == 0 && last>>rem != 0 {
			return corrupt("rows past %d set in the last group", b.N)
		}
	}
	return nil
}

// walk validates b and calls f(first group, count, value) for each word.
func (b Bitmap) walk(f func(g, k, v uint32)) error {
	if err := b.Validate(); err != nil {
		return err
	}
	g := uint32(0)
	for _, w := range b.Words {
		if w&FillFlag != 0 {
			v := uint32(0)
			if w&FillBit != 0 {
				v = LitMask
			}
			f(g, w&MaxRun, v)
			g += w & MaxRun
		} else {
			f(g, 1, w)
			g++
		}
	}
	return nil
}

// DecodeGroups decompresses b into its group bitset (Groups(N) words,
// Algorithm 2's DecompData), appending to dst[:0].
func (b Bitmap) DecodeGroups(dst []uint32) ([]uint32, error) {
	out := dst[:0]
	err := b.walk(func(_, k, v uint32) {
		for ; k > 0; k-- {
			out = append(out, v)
		}
	})
	return out, err
}

// Decode decompresses b into a bitset of ceil(N/64) words (row r = bit
// r%64 of word r/64), appending to dst[:0].
func (b Bitmap) Decode(dst []uint64) ([]uint64, error) {
	if err := b.Validate(); err != nil {
		return dst[:0], err
	}
	out := append(dst[:0], make([]uint64, (uint64(b.N)+63)/64)...)
	clear(out)
	_ = b.walk(func(g, k, v uint32) {
		if v == 0 {
			return
		}
		for ; k > 0; k-- {
			r := uint64(g) * GroupBits
			w, o := r/64, r%64
			out[w] |= uint64(v) << o
			if hi := uint64(v) >> (64 - o); o > 64-GroupBits && hi != 0 {
				out[w+1] |= hi
			}
			g++
		}
	})
	return out, nil
}

// DecodeDocs returns the set rows of b in increasing order, appended to
// dst[:0].
func (b Bitmap) DecodeDocs(dst []uint32) ([]uint32, error) {
	out := dst[:0]
	err := b.walk(func(g, k, v uint32) {
		for ; k > 0; k-- {
			base := g * GroupBits
			for x := v; x != 0; x &= x - 1 {
				out = append(out, base+uint32(bits.TrailingZeros32(x)))
			}
			g++
		}
	})
	return out, err
}

// Count returns the number of set rows of a valid bitmap (no validation).
func (b Bitmap) Count() int {
	n := 0
	for _, w := range b.Words {
		if w&FillFlag == 0 {
			n += bits.OnesCount32(w)
		} else if w&FillBit != 0 {
			n += GroupBits * int(w&MaxRun)
		}
	}
	return n
}

// GroupsToBitset converts a group bitset of n rows into a bitset of
// ceil(n/64) uint64 words, appended to dst[:0].
func GroupsToBitset(dst []uint64, groups []uint32, n uint32) []uint64 {
	if len(groups) < Groups(n) {
		panic(fmt.Sprintf("BUG: wah.GroupsToBitset: %d groups for %d rows", len(groups), n))
	}
	out := append(dst[:0], make([]uint64, (uint64(n)+63)/64)...)
	clear(out)
	for g, v := range groups[:Groups(n)] {
		r := uint64(g) * GroupBits
		w, o := r/64, r%64
		out[w] |= uint64(v) << o
		if o > 64-GroupBits && w+1 < uint64(len(out)) {
			out[w+1] |= uint64(v) >> (64 - o)
		}
	}
	return out
}
