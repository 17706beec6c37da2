// Package codectest is the shared differential test harness for codecs: every
// codec is checked against the reference codec of internal/ref on every
// boundary length and every bit width, and its decoder is fuzzed.
//
// It also holds the scaffolding of the per-codec test files: Lookup and As
// (the registered codec and its interfaces), Suite (RoundTrip, Truncations
// and NoAllocs), Golden (pinned encodings), Corrupt (hand-made invalid
// encodings), Mutations (random damage) and the inputs they share.
package codectest

import (
	"encoding/hex"
	"errors"
	"math/rand"
	"reflect"
	"sort"
	"strings"
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

// ValueSets returns Values(rng, n, bits, kind) for every n of ns and,
// within it, every bits of widths, in that order (the arrays the mutation
// tests damage).
func ValueSets(rng *rand.Rand, kind compress.Kind, ns, widths []int) [][]uint32 {
	var arrays [][]uint32
	for _, n := range ns {
		for _, bits := range widths {
			arrays = append(arrays, Values(rng, n, bits, kind))
		}
	}
	return arrays
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
			} else if !Allowed(err) {
				t.Fatalf("%s: error does not wrap ErrCorrupt: %v", c.Name(), err)
			}
		}
	}
}

// Lookup returns the codec registered under the persisted ID id and checks
// that it is registered under name too, and is of kind.
func Lookup(tb testing.TB, id compress.ID, name string, kind compress.Kind) compress.Codec {
	tb.Helper()
	c, err := compress.ByID(id)
	if err != nil {
		tb.Fatal(err)
	}
	if c.Name() != name || c.Kind() != kind {
		tb.Fatalf("codec %d registered as %q kind %d, want %q kind %d", id, c.Name(), c.Kind(), name, kind)
	}
	if byName, err := compress.ByName(name); err != nil || byName.ID() != id {
		tb.Fatalf("ByName(%q) = %v, %v; want codec %d", name, byName, err, id)
	}
	return c
}

// As returns c as an I (compress.RandomAccess or compress.Searcher), and
// fails if c does not implement I.
func As[I compress.Codec](tb testing.TB, c compress.Codec) I {
	tb.Helper()
	x, ok := c.(I)
	if !ok {
		tb.Fatalf("%s does not implement %v", c.Name(), reflect.TypeFor[I]())
	}
	return x
}

// Suite runs the checks every codec passes: RoundTrip, Truncations and
// NoAllocs.
func Suite(t *testing.T, c compress.Codec) {
	t.Helper()
	RoundTrip(t, c)
	Truncations(t, c)
	NoAllocs(t, c)
}

// Allowed reports whether err is an error a codec may return: nil, or one
// wrapping ErrCorrupt or ErrShortBuffer.
func Allowed(err error) bool {
	return err == nil || errors.Is(err, compress.ErrCorrupt) || errors.Is(err, compress.ErrShortBuffer)
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
		if !Allowed(err) {
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

// NoAllocs checks that Decode does not allocate, nor Get and Search where
// c implements them.
func NoAllocs(t *testing.T, c compress.Codec) {
	t.Helper()
	rng := rand.New(rand.NewSource(3))
	vals := Values(rng, 128, 17, c.Kind())
	enc := c.AppendEncode(nil, vals)
	out := make([]uint32, 128)
	if a := testing.AllocsPerRun(100, func() { _, _ = c.Decode(out, enc) }); a != 0 {
		t.Fatalf("%s: Decode allocates %.1f times per run", c.Name(), a)
	}
	if ra, ok := c.(compress.RandomAccess); ok {
		AccessNoAllocs(t, ra, enc, 77, 10, vals[64])
	}
}

// AccessNoAllocs checks that Get(src, i) and, if c is a Searcher,
// Search(src, from, x) do not allocate.
func AccessNoAllocs(t *testing.T, c compress.RandomAccess, src []byte, i, from int, x uint32) {
	t.Helper()
	s, _ := c.(compress.Searcher)
	if a := testing.AllocsPerRun(100, func() {
		if s != nil {
			_, _, _ = s.Search(src, from, x)
		}
		_, _ = c.Get(src, i)
	}); a != 0 {
		t.Fatalf("%s: Get/Search allocate %.1f times per run", c.Name(), a)
	}
}

// Golden pins a persisted format: the encoding of vals must be the hex
// string want exactly (white space in want is ignored, so that a long
// encoding can span lines), the pinned bytes must decode to vals, and vals
// must pass Check.
func Golden(t *testing.T, c compress.Codec, vals []uint32, want string) {
	t.Helper()
	want = strings.Join(strings.Fields(want), "")
	if got := hex.EncodeToString(c.AppendEncode(nil, vals)); got != want {
		t.Errorf("%s: encoding of %d values changed:\n got %s\nwant %s", c.Name(), len(vals), got, want)
	}
	raw, err := hex.DecodeString(want)
	if err != nil {
		t.Fatalf("%s: golden hex: %v", c.Name(), err)
	}
	out := make([]uint32, len(vals))
	n, err := c.Decode(out, raw)
	if err != nil || n != len(vals) {
		t.Fatalf("%s: golden decode: n=%d err=%v", c.Name(), n, err)
	}
	for i := range out {
		if out[i] != vals[i] {
			t.Fatalf("%s: golden value %d = %d, want %d", c.Name(), i, out[i], vals[i])
		}
	}
	Check(t, c, vals)
}

// Bad is a hand-made invalid encoding: a name and the bytes in hex.
type Bad [2]string

// Corrupt checks that Decode rejects every encoding of bad with an error
// wrapping ErrCorrupt, and that Count, and Get where c implements it, do not
// panic on them and return nil or ErrCorrupt-wrapped errors.
func Corrupt(t *testing.T, c compress.Codec, bad []Bad) {
	t.Helper()
	out := make([]uint32, 1024)
	ra, _ := c.(compress.RandomAccess)
	for _, b := range bad {
		name, hexIn := b[0], b[1]
		src, err := hex.DecodeString(hexIn)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := c.Decode(out, src); !errors.Is(err, compress.ErrCorrupt) {
			t.Errorf("%s: %s (%s): Decode err = %v, want ErrCorrupt", c.Name(), name, hexIn, err)
		}
		if _, err := c.Count(src); err != nil && !errors.Is(err, compress.ErrCorrupt) {
			t.Errorf("%s: %s (%s): Count err = %v, want nil or ErrCorrupt", c.Name(), name, hexIn, err)
		}
		if ra != nil {
			if _, err := ra.Get(src, 0); err != nil && !errors.Is(err, compress.ErrCorrupt) {
				t.Errorf("%s: %s (%s): Get err = %v, want nil or ErrCorrupt", c.Name(), name, hexIn, err)
			}
		}
	}
}

// Mutations checks random mutations (bit flips, byte overwrites,
// truncations, extensions) of the encodings of each array: Decode, Count,
// Get and Search never panic and return ErrCorrupt-wrapped errors, and
// whenever Decode accepts a mutation, Get and Search agree with its output.
func Mutations(t *testing.T, c compress.Codec, arrays [][]uint32, rounds int) {
	t.Helper()
	rng := rand.New(rand.NewSource(99))
	out := make([]uint32, 1<<16)
	ra, _ := c.(compress.RandomAccess)
	se, _ := c.(compress.Searcher)
	for _, vals := range arrays {
		enc := c.AppendEncode(nil, vals)
		for r := 0; r < rounds; r++ {
			m := mutate(rng, enc)
			n, err := c.Decode(out, m)
			if !Allowed(err) {
				t.Fatalf("Decode: error does not wrap ErrCorrupt: %v", err)
			}
			if _, cerr := c.Count(m); !Allowed(cerr) {
				t.Fatalf("Count: error does not wrap ErrCorrupt: %v", cerr)
			}
			valid := err == nil
			for k := 0; k < 16; k++ {
				i := rng.Intn(len(vals) + 2)
				if ra != nil {
					v, gerr := ra.Get(m, i)
					if !Allowed(gerr) {
						t.Fatalf("Get: error does not wrap ErrCorrupt: %v", gerr)
					}
					if valid && i < n && (gerr != nil || v != out[i]) {
						t.Fatalf("mutation accepted by Decode: Get(%d) = %d, %v; Decode says %d", i, v, gerr, out[i])
					}
				}
				if se != nil {
					x := uint32(rng.Int63n(int64(vals[len(vals)-1]) + 2))
					si, sv, serr := se.Search(m, i, x)
					if !Allowed(serr) {
						t.Fatalf("Search: error does not wrap ErrCorrupt: %v", serr)
					}
					if valid {
						wi, wv := SearchRef(out[:n], i, x)
						if serr != nil || si != wi || sv != wv {
							t.Fatalf("mutation accepted by Decode: Search(%d, %d) = %d, %d, %v; want %d, %d", i, x, si, sv, serr, wi, wv)
						}
					}
				}
			}
		}
	}
}

// SearchRef is the reference Search: the first i >= max(from, 0) with
// vals[i] >= x and vals[i], or len(vals) and 0.
func SearchRef(vals []uint32, from int, x uint32) (int, uint32) {
	for i := max(from, 0); i < len(vals); i++ {
		if vals[i] >= x {
			return i, vals[i]
		}
	}
	return len(vals), 0
}

// XorShift is one step of Marsaglia's 32-bit xorshift (13, 17, 5), the
// generator of the golden inputs.
func XorShift(x uint32) uint32 {
	x ^= x << 13
	x ^= x >> 17
	x ^= x << 5
	return x
}

// Golden130 is the 130-value input pinned by the golden tests of vbyte,
// bp128, simple8b and rice: two blocks of 128, with one 21-bit value.
func Golden130() []uint32 {
	in := make([]uint32, 130)
	for i := range in {
		in[i] = uint32((i*i*7 + i*13) % 997)
	}
	in[64] = 1 << 20
	return in
}

// GoldenGaps600 is the 600-value input pinned by the golden tests of
// pfordelta and parapfor: d-gap-like values, small with occasional jumps,
// crossing the 512-value sub-block and five 128-value segments.
func GoldenGaps600() []uint32 {
	in := make([]uint32, 600)
	x := uint32(2463534242)
	for i := range in {
		x = XorShift(x)
		in[i] = x % 13
		if x%17 == 0 {
			in[i] = x >> 14
		}
	}
	return in
}

// Skewed returns n values of which about one in `every` is large (up to
// `big` bits, sometimes 2^32-1) and the rest small (up to `small` bits):
// exception-heavy input for patched codecs.
func Skewed(rng *rand.Rand, n, every, small, big int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		if rng.Intn(every) == 0 {
			out[i] = uint32(rng.Int63n(1 << big))
			if rng.Intn(20) == 0 {
				out[i] = 1<<32 - 1 - uint32(rng.Intn(3))
			}
		} else {
			out[i] = uint32(rng.Intn(1 << small))
		}
	}
	return out
}
