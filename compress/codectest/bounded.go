package codectest

import (
	"encoding/hex"
	"errors"
	"math/rand"
	"slices"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/internal/ref"
)

// sum64 is the sum of vals in 64 bits.
func sum64(vals []uint32) uint64 {
	var s uint64
	for _, v := range vals {
		s += uint64(v)
	}
	return s
}

// BoundedSuite checks a Bounded codec's two count-less encodings on every
// boundary length and bit width against the reference codec (BoundedCheck),
// their truncations, and that their decoders do not allocate.
func BoundedSuite(t *testing.T, c compress.Bounded) {
	t.Helper()
	rng := rand.New(rand.NewSource(int64(c.ID()) + 100))
	for _, n := range Lengths() {
		for bits := 0; bits <= 32; bits++ {
			BoundedCheck(t, c, Values(rng, n, bits, c.Kind()))
		}
	}
	boundedTruncations(t, c)
	vals := Values(rng, 128, 17, c.Kind())
	encN := c.AppendEncodeKnownN(nil, vals)
	encS := c.AppendEncodeKnownSum(nil, vals)
	s := sum64(vals)
	out := make([]uint32, 128)
	if a := testing.AllocsPerRun(100, func() { _ = c.DecodeKnownN(out, encN) }); a != 0 {
		t.Fatalf("%s: DecodeKnownN allocates %.1f times per run", c.Name(), a)
	}
	if a := testing.AllocsPerRun(100, func() { _ = c.DecodeKnownSum(out, encS, s) }); a != 0 {
		t.Fatalf("%s: DecodeKnownSum allocates %.1f times per run", c.Name(), a)
	}
}

// BoundedCheck round-trips vals through both count-less encodings of c and
// compares with the reference codec; the known-sum encoding must not be
// longer than the known-count one, nor that than the self-delimiting one.
// A wrong sum must be an error (a sum one off changes the decoded values,
// which must then still add up to the sum given: never silently wrong).
func BoundedCheck(t *testing.T, c compress.Bounded, vals []uint32) {
	t.Helper()
	want, err := ref.Decode(ref.Encode(vals))
	if err != nil {
		t.Fatalf("ref: %v", err)
	}
	s := sum64(vals)
	encN := c.AppendEncodeKnownN([]byte{0xAB}, vals)
	encS := c.AppendEncodeKnownSum([]byte{0xAB}, vals)
	if encN[0] != 0xAB || encS[0] != 0xAB {
		t.Fatalf("%s: AppendEncodeKnown* overwrote dst", c.Name())
	}
	encN, encS = encN[1:], encS[1:]
	if full := len(c.AppendEncode(nil, vals)); len(encS) > len(encN) || len(encN) > full {
		t.Fatalf("%s: n=%d: known sum %d bytes, known count %d, self-delimiting %d", c.Name(), len(vals), len(encS), len(encN), full)
	}
	out := make([]uint32, len(vals))
	if err := c.DecodeKnownN(out, encN); err != nil {
		t.Fatalf("%s: n=%d: DecodeKnownN: %v", c.Name(), len(vals), err)
	}
	sameValues(t, c, "DecodeKnownN", out, want)
	clear(out)
	if err := c.DecodeKnownSum(out, encS, s); err != nil {
		t.Fatalf("%s: n=%d: DecodeKnownSum: %v", c.Name(), len(vals), err)
	}
	sameValues(t, c, "DecodeKnownSum", out, want)
	for _, d := range []int64{-1, 1} {
		ws := uint64(int64(s) + d)
		if s == 0 && d < 0 {
			continue
		}
		if err := c.DecodeKnownSum(out, encS, ws); err == nil && sum64(out) != ws {
			t.Fatalf("%s: n=%d: DecodeKnownSum with sum %d accepted values adding up to %d", c.Name(), len(vals), ws, sum64(out))
		} else if !Allowed(err) {
			t.Fatalf("%s: error does not wrap ErrCorrupt: %v", c.Name(), err)
		}
	}
}

func sameValues(t *testing.T, c compress.Codec, what string, got, want []uint32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %s: %d values, want %d", c.Name(), what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: %s: n=%d: value %d = %d, want %d", c.Name(), what, len(want), i, got[i], want[i])
		}
	}
}

// boundedTruncations checks that no strict prefix of a count-less encoding
// decodes, with the same count (and sum), to the full array (the format
// would not be tight), and that the decoders return only ErrCorrupt-wrapped
// errors on them.
func boundedTruncations(t *testing.T, c compress.Bounded) {
	t.Helper()
	rng := rand.New(rand.NewSource(8))
	for _, n := range []int{1, 2, 127, 128, 129, 513} {
		vals := Values(rng, n, 13, c.Kind())
		s := sum64(vals)
		out := make([]uint32, n)
		encN := c.AppendEncodeKnownN(nil, vals)
		encS := c.AppendEncodeKnownSum(nil, vals)
		for cut := 0; cut < max(len(encN), len(encS)); cut++ {
			var errs [2]error
			if cut < len(encN) {
				errs[0] = c.DecodeKnownN(out, encN[:cut])
				if errs[0] == nil && slices.Equal(out, vals) {
					t.Fatalf("%s: n=%d: prefix of %d/%d bytes decodes to the full array (DecodeKnownN)", c.Name(), n, cut, len(encN))
				}
			}
			if cut < len(encS) {
				errs[1] = c.DecodeKnownSum(out, encS[:cut], s)
				if errs[1] == nil && slices.Equal(out, vals) {
					t.Fatalf("%s: n=%d: prefix of %d/%d bytes decodes to the full array (DecodeKnownSum)", c.Name(), n, cut, len(encS))
				}
			}
			for _, err := range errs {
				if !Allowed(err) {
					t.Fatalf("%s: error does not wrap ErrCorrupt: %v", c.Name(), err)
				}
			}
		}
	}
}

// BoundedCorrupt checks that DecodeKnownSum rejects each bad encoding
// (hex) of count n and sum s with an error wrapping ErrCorrupt.
func BoundedCorrupt(t *testing.T, c compress.Bounded, bad []BadBounded) {
	t.Helper()
	for _, b := range bad {
		src, err := hex.DecodeString(b.Hex)
		if err != nil {
			t.Fatalf("%s: %v", b.Name, err)
		}
		out := make([]uint32, b.N)
		if err := c.DecodeKnownSum(out, src, b.Sum); !errors.Is(err, compress.ErrCorrupt) {
			t.Errorf("%s: %s (n=%d sum=%d %s): DecodeKnownSum err = %v, want ErrCorrupt", c.Name(), b.Name, b.N, b.Sum, b.Hex, err)
		}
	}
}

// BadBounded is a hand-made invalid known-sum encoding of N values of sum
// Sum.
type BadBounded struct {
	Name string
	N    int
	Sum  uint64
	Hex  string
}

// BoundedMutations damages the count-less encodings of each array at
// random: the decoders never panic, return only ErrCorrupt-wrapped errors,
// and DecodeKnownSum's accepted values add up to the sum.
func BoundedMutations(t *testing.T, c compress.Bounded, arrays [][]uint32, rounds int) {
	t.Helper()
	rng := rand.New(rand.NewSource(98))
	for _, vals := range arrays {
		s := sum64(vals)
		out := make([]uint32, len(vals))
		for _, enc := range [][]byte{c.AppendEncodeKnownN(nil, vals), c.AppendEncodeKnownSum(nil, vals)} {
			for r := 0; r < rounds; r++ {
				m := mutate(rng, enc)
				if err := c.DecodeKnownN(out, m); !Allowed(err) {
					t.Fatalf("DecodeKnownN: error does not wrap ErrCorrupt: %v", err)
				}
				ws := s
				if rng.Intn(4) == 0 {
					ws = uint64(rng.Int63n(int64(s) + 1000))
				}
				err := c.DecodeKnownSum(out, m, ws)
				if !Allowed(err) {
					t.Fatalf("DecodeKnownSum: error does not wrap ErrCorrupt: %v", err)
				}
				if err == nil && sum64(out) != ws {
					t.Fatalf("DecodeKnownSum accepted values adding up to %d, sum given %d", sum64(out), ws)
				}
			}
		}
	}
}

// mutate returns a copy of enc with one random damage (bit flip, byte
// overwrites, truncation, inserted byte), or one added byte when enc is
// empty.
func mutate(rng *rand.Rand, enc []byte) []byte {
	m := append([]byte(nil), enc...)
	if len(m) == 0 {
		return append(m, byte(rng.Intn(256)))
	}
	switch k := rng.Intn(len(m)); rng.Intn(5) {
	case 0, 1:
		m[k] ^= 1 << rng.Intn(8)
	case 2:
		m[k] = byte(rng.Intn(256))
		m[rng.Intn(len(m))] = byte(rng.Intn(256))
	case 3:
		m = m[:k]
	case 4:
		m = append(m[:k], append([]byte{byte(rng.Intn(256))}, m[k:]...)...)
	}
	return m
}

// FuzzBounded is the body of a Bounded codec's fuzz target: both
// count-less decoders, on arbitrary bytes, counts up to 4096 and sums, must
// not panic, must return only ErrCorrupt-wrapped errors, and
// DecodeKnownSum's accepted values must add up to the sum given.
func FuzzBounded(f *testing.F, c compress.Bounded) {
	rng := rand.New(rand.NewSource(2))
	for _, n := range []int{0, 1, 2, 127, 128, 129, 512} {
		vals := Values(rng, n, 9, c.Kind())
		f.Add(uint16(n), sum64(vals), c.AppendEncodeKnownSum(nil, vals))
		f.Add(uint16(n), sum64(vals), c.AppendEncodeKnownN(nil, vals))
	}
	f.Add(uint16(1), uint64(1)<<32, []byte{})
	f.Add(uint16(3), uint64(1)<<40, []byte{0xff, 0xff, 0xff, 0xff, 0xff})
	out := make([]uint32, 4096)
	f.Fuzz(func(t *testing.T, n uint16, sum uint64, data []byte) {
		o := out[:int(n)%(len(out)+1)]
		if err := c.DecodeKnownN(o, data); !Allowed(err) {
			t.Fatalf("DecodeKnownN: error does not wrap ErrCorrupt: %v", err)
		}
		err := c.DecodeKnownSum(o, data, sum)
		if !Allowed(err) {
			t.Fatalf("DecodeKnownSum: error does not wrap ErrCorrupt: %v", err)
		}
		if err == nil && sum64(o) != sum {
			t.Fatalf("DecodeKnownSum accepted %d values adding up to %d, sum given %d", len(o), sum64(o), sum)
		}
	})
}
