// Package codectest is the shared differential test harness for codecs: every
// codec is checked against the reference codec of internal/ref on every
// boundary length and every bit width, and its decoder is fuzzed.
package codectest

import (
	"errors"
	"math/rand"
	"sort"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/internal/ref"
)

// BlockSizes are the block sizes whose boundaries every codec is tested on:
// the index's default block, Ding's PForDelta block, and small codec-internal
// groups.
var BlockSizes = []int{32, 64, 128, 256, 512}

// Lengths returns the boundary lengths {0, 1, 2, B-1, B, B+1} for every B in
// BlockSizes, plus a few multi-block lengths.
func Lengths() []int {
	seen := map[int]bool{}
	var out []int
	add := func(n int) {
		if n >= 0 && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	add(0)
	add(1)
	add(2)
	for _, b := range BlockSizes {
		add(b - 1)
		add(b)
		add(b + 1)
		add(3*b + 7)
	}
	add(5000)
	sort.Ints(out)
	return out
}

// Values returns n values whose maximum has exactly `bits` significant bits
// (bits 0 gives all zeros). For Sorted codecs the values are prefix sums
// capped so that the last value has `bits` bits.
func Values(rng *rand.Rand, n, bits int, kind compress.Kind) []uint32 {
	out := make([]uint32, n)
	if n == 0 || bits == 0 {
		return out
	}
	max := uint64(1)<<uint(bits) - 1
	if kind == compress.Sorted {
		for i := range out {
			out[i] = uint32(rng.Int63n(int64(max) + 1))
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		out[n-1] = uint32(max)
		return out
	}
	for i := range out {
		// Mostly small values with a few large ones, so that patched codecs
		// see exceptions; one value pins the bit width.
		if rng.Intn(10) == 0 {
			out[i] = uint32(rng.Int63n(int64(max) + 1))
		} else {
			out[i] = uint32(rng.Int63n(int64(max/16) + 1))
		}
	}
	out[rng.Intn(n)] = uint32(max)
	return out
}

// RoundTrip checks c on every boundary length and every bit width 0..32
// against the reference codec, and checks Count, random access and the
// short-buffer error.
func RoundTrip(t *testing.T, c compress.Codec) {
	t.Helper()
	rng := rand.New(rand.NewSource(int64(c.ID())))
	for _, n := range Lengths() {
		for bits := 0; bits <= 32; bits++ {
			vals := Values(rng, n, bits, c.Kind())
			Check(t, c, vals)
		}
	}
}

// Check round-trips one array through c and the reference codec.
func Check(t *testing.T, c compress.Codec, vals []uint32) {
	t.Helper()
	want, err := ref.Decode(ref.Encode(vals))
	if err != nil {
		t.Fatalf("ref: %v", err)
	}
	enc := c.AppendEncode([]byte{0xAB}, vals) // must append, not overwrite
	if enc[0] != 0xAB {
		t.Fatalf("%s: AppendEncode overwrote dst", c.Name())
	}
	enc = enc[1:]
	out := make([]uint32, len(vals)+3)
	n, err := c.Decode(out, enc)
	if err != nil {
		t.Fatalf("%s: n=%d: decode: %v", c.Name(), len(vals), err)
	}
	if n != len(want) {
		t.Fatalf("%s: decoded %d values, want %d", c.Name(), n, len(want))
	}
	for i := range want {
		if out[i] != want[i] {
			t.Fatalf("%s: n=%d: value %d = %d, want %d", c.Name(), len(vals), i, out[i], want[i])
		}
	}
	cnt, err := c.Count(enc)
	if err != nil || cnt != len(vals) {
		t.Fatalf("%s: Count = %d, %v; want %d", c.Name(), cnt, err, len(vals))
	}
	if ra, ok := c.(compress.RandomAccess); ok {
		for i := range want {
			v, err := ra.Get(enc, i)
			if err != nil || v != want[i] {
				t.Fatalf("%s: Get(%d) = %d, %v; want %d", c.Name(), i, v, err, want[i])
			}
		}
		if _, err := ra.Get(enc, len(want)); err == nil {
			t.Fatalf("%s: Get past the end succeeded", c.Name())
		}
	}
	if len(vals) > 0 {
		if _, err := c.Decode(make([]uint32, len(vals)-1), enc); !errors.Is(err, compress.ErrShortBuffer) {
			t.Fatalf("%s: short buffer: err = %v, want ErrShortBuffer", c.Name(), err)
		}
	}
}

// Truncations checks that every strict prefix of a valid encoding decodes to
// an error or to fewer values, never a panic.
func Truncations(t *testing.T, c compress.Codec) {
	t.Helper()
	rng := rand.New(rand.NewSource(7))
	for _, n := range []int{1, 2, 127, 128, 129, 513} {
		vals := Values(rng, n, 13, c.Kind())
		enc := c.AppendEncode(nil, vals)
		out := make([]uint32, n+64)
		for cut := 0; cut < len(enc); cut++ {
			if m, err := c.Decode(out, enc[:cut]); err == nil && m == n {
				same := true
				for i := range vals {
					same = same && out[i] == vals[i]
				}
				if same && cut < len(enc) {
					// A prefix decoding to the full array means the tail
					// bytes were never needed: the format is not tight.
					t.Fatalf("%s: n=%d: prefix of %d/%d bytes decodes to the full array", c.Name(), n, cut, len(enc))
				}
			} else if err != nil && !errors.Is(err, compress.ErrCorrupt) && !errors.Is(err, compress.ErrShortBuffer) {
				t.Fatalf("%s: error does not wrap ErrCorrupt: %v", c.Name(), err)
			}
		}
	}
}

// FuzzDecode is the body of every codec's fuzz target: Decode, Count and Get
// must not panic on arbitrary bytes, and must return ErrCorrupt-wrapped
// errors.
func FuzzDecode(f *testing.F, c compress.Codec) {
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 2, 127, 128, 129, 512} {
		f.Add(c.AppendEncode(nil, Values(rng, n, 9, c.Kind())))
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff})
	out := make([]uint32, 1<<16)
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := c.Decode(out, data)
		if err != nil && !errors.Is(err, compress.ErrCorrupt) && !errors.Is(err, compress.ErrShortBuffer) {
			t.Fatalf("error does not wrap ErrCorrupt: %v", err)
		}
		if err == nil && (n < 0 || n > len(out)) {
			t.Fatalf("decoded count %d out of range", n)
		}
		if cnt, err := c.Count(data); err == nil && cnt < 0 {
			t.Fatalf("negative count")
		}
		if ra, ok := c.(compress.RandomAccess); ok {
			for _, i := range []int{0, 1, 63, 64, 1000} {
				_, _ = ra.Get(data, i)
			}
		}
	})
}

// NoAllocs checks that Decode does not allocate.
func NoAllocs(t *testing.T, c compress.Codec) {
	t.Helper()
	rng := rand.New(rand.NewSource(3))
	vals := Values(rng, 128, 17, c.Kind())
	enc := c.AppendEncode(nil, vals)
	out := make([]uint32, 128)
	if a := testing.AllocsPerRun(100, func() { _, _ = c.Decode(out, enc) }); a != 0 {
		t.Fatalf("%s: Decode allocates %.1f times per run", c.Name(), a)
	}
}
