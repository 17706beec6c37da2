package compress_test

import (
	"encoding/hex"
	"math/rand"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func interpolativeCodec(tb testing.TB) compress.Codec {
	tb.Helper()
	return codectest.Lookup(tb, compress.IDInterpolative, "interpolative", compress.General)
}

func TestInterpolativeRoundTrip(t *testing.T) { codectest.Suite(t, interpolativeCodec(t)) }

func FuzzInterpolativeDecode(f *testing.F) { codectest.FuzzDecode(f, interpolativeCodec(f)) }

// TestInterpolativeGolden pins the persisted format. The encodings were
// computed by an independent implementation of the format comment (a
// Python transcription of interpolative.go's format, not of its code); the
// first is worked by hand: vals {1,0,2} have prefix sums {1,1,3}, S = 3;
// P[1] = 1 in range 4 (b = 2, no short codes, o = 2) rotates to 3, written
// as its top bit 1 then its low bit 1; P[0] = 1 in [0, 1] (range 2, o = 1)
// rotates to 0, written as its low bit 0: bits 1,1,0 LSB-first = 0x03.
func TestInterpolativeGolden(t *testing.T) {
	c := interpolativeCodec(t)
	codectest.Golden(t, c, nil, "00")
	codectest.Golden(t, c, []uint32{1, 0, 2}, "030303")
	codectest.Golden(t, c, []uint32{0, 0, 0}, "0300")
	codectest.Golden(t, c, make([]uint32, 128), "800100")
	codectest.Golden(t, c, []uint32{0, 1, 2, 3, 1000, 7, 70000}, "07e5aa0450f596a3fb0401")
	codectest.Golden(t, c, []uint32{5, 1<<32 - 1}, "02848080801000000000")
	codectest.Golden(t, c, codectest.Golden130(), `8201b8e543c2447f47fc0d14bd5f6ffd49df2aa1d6fa64a9b760b0a6273dbbb1214eae0ca0e94f
		543517c86319c5c9429d47d700ffc67f5f1e439fbc29863f8cef86d185d265c4f1ed7dfcf770ce99a916579c5604b5ffe8a5b3
		18d5ff93f3ffff35753481d8254b977912c92554b0488ea5b61489dd2e16c329002d88e4c397bdd5dfe7f9e8c50d8b7f49af2b
		28c7fa3ece4a365d213d62f2a141c7d9b34b3491c0bb06e2db6a3e252c7e312c8a7a77904569cf7ece0f`)
}

// TestInterpolativeCorrupt checks that malformed encodings are rejected.
func TestInterpolativeCorrupt(t *testing.T) {
	codectest.Corrupt(t, interpolativeCodec(t), []codectest.Bad{
		{"no count", ""},
		{"count 1, no sum", "01"},
		{"trailing byte after 0 values", "0000"},
		{"trailing byte after a one-value block", "010500"},
		{"sum of one value above 2^32-1", "018080808010"},
		{"sum of two values above 2·(2^32-1)", "02808080802000"},
		{"bit string missing", "0303"},
		{"bit string cut short", "07e5aa0450f596a3fb04"},
		{"trailing byte after the bit string", "030303" + "00"},
		{"nonzero padding bit", "030383"},
		{"non-minimal count", "8000"},
		{"non-minimal sum", "018000"},
		{"count above 2^31-1", "8080808008"},
		// Two values, S = 2^33: P[0] = 0 makes the second value 2^33.
		{"value above 2^32-1", "028080808020" + "0000000000"},
	})
}

// TestInterpolativeMutations damages valid encodings at random.
func TestInterpolativeMutations(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	arrays := codectest.ValueSets(rng, compress.General, []int{1, 2, 3, 127, 128, 129, 700}, []int{0, 1, 5, 13, 32})
	codectest.Mutations(t, interpolativeCodec(t), arrays, 300)
}

// bpLikeGaps returns n d-gaps minus one shaped as document reordering
// leaves a list: runs of consecutive documents (gap 0) separated by a few
// long jumps. Real BP-ordered lists are graded, not all-or-nothing: this
// is the extreme case the codec is for.
func bpLikeGaps(rng *rand.Rand, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		if rng.Intn(16) == 0 {
			out[i] = uint32(rng.Intn(1 << 14))
		}
	}
	return out
}

// TestInterpolativeClustered checks the property the codec is chosen for:
// a run of consecutive docIDs costs no bits beyond the header, and on
// runs-and-jumps blocks it needs fewer bytes than bp128 (which packs every
// value at the widest jump's width).
func TestInterpolativeClustered(t *testing.T) {
	c := interpolativeCodec(t)
	bp, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	if enc := c.AppendEncode(nil, make([]uint32, 1000)); len(enc) != 3 {
		t.Errorf("1000 consecutive docIDs take %d bytes, want 3 (count and sum)", len(enc))
	}
	rng := rand.New(rand.NewSource(9))
	var ip, bpb int
	for range 200 {
		g := bpLikeGaps(rng, 128)
		codectest.Check(t, c, g)
		ip += len(c.AppendEncode(nil, g))
		bpb += len(bp.AppendEncode(nil, g))
	}
	if ip >= bpb {
		t.Errorf("runs-and-jumps blocks: interpolative %d bytes, bp128 %d; want fewer", ip, bpb)
	}
	t.Logf("runs-and-jumps blocks: interpolative %d bytes, bp128 %d", ip, bpb)
}

// TestInterpolativeLong round-trips arrays long enough for a deep
// recursion (the decoder's explicit stack of pending right halves).
func TestInterpolativeLong(t *testing.T) {
	c := interpolativeCodec(t)
	rng := rand.New(rand.NewSource(4))
	for _, n := range []int{1 << 16, 300_001} {
		codectest.Check(t, c, bpLikeGaps(rng, n))
		codectest.Check(t, c, codectest.Values(rng, n, 32, compress.General))
	}
}

func interpolativeBounded(tb testing.TB) compress.Bounded {
	tb.Helper()
	return codectest.As[compress.Bounded](tb, interpolativeCodec(tb))
}

// TestInterpolativeBounded checks the count-less encodings (the index's
// docID and frequency blocks) against the reference codec.
func TestInterpolativeBounded(t *testing.T) { codectest.BoundedSuite(t, interpolativeBounded(t)) }

func FuzzInterpolativeBounded(f *testing.F) { codectest.FuzzBounded(f, interpolativeBounded(f)) }

// TestInterpolativeBoundedGolden pins the count-less formats: the
// self-delimiting golden encodings without their uvarint(n) (known count)
// and without uvarint(S) too (known sum); a single value, or a run of
// consecutive docIDs, costs no byte when the sum is known.
func TestInterpolativeBoundedGolden(t *testing.T) {
	c := interpolativeBounded(t)
	for _, g := range []struct {
		vals       []uint32
		knownN, ns string
	}{
		{[]uint32{1, 0, 2}, "0303", "03"},
		{[]uint32{0, 0, 0}, "00", ""},
		{[]uint32{77}, "4d", ""},
		{make([]uint32, 1000), "00", ""},
		{[]uint32{0, 1, 2, 3, 1000, 7, 70000}, "e5aa0450f596a3fb0401", "50f596a3fb0401"},
		{[]uint32{5, 1<<32 - 1}, "848080801000000000", "00000000"},
	} {
		if got := hex.EncodeToString(c.AppendEncodeKnownN(nil, g.vals)); got != g.knownN {
			t.Errorf("%v: known count %s, want %s", g.vals[:min(len(g.vals), 8)], got, g.knownN)
		}
		if got := hex.EncodeToString(c.AppendEncodeKnownSum(nil, g.vals)); got != g.ns {
			t.Errorf("%v: known sum %s, want %s", g.vals[:min(len(g.vals), 8)], got, g.ns)
		}
		codectest.BoundedCheck(t, c, g.vals)
	}
}

// TestInterpolativeBoundedCorrupt checks that DecodeKnownSum rejects
// malformed bit strings and sums no values of that count can have.
func TestInterpolativeBoundedCorrupt(t *testing.T) {
	codectest.BoundedCorrupt(t, interpolativeBounded(t), []codectest.BadBounded{
		{Name: "byte for a single value", N: 1, Sum: 7, Hex: "00"},
		{Name: "bytes for no values", N: 0, Sum: 0, Hex: "00"},
		{Name: "sum for no values", N: 0, Sum: 3, Hex: ""},
		{Name: "single value above 2^32-1", N: 1, Sum: 1 << 32, Hex: ""},
		{Name: "sum of two values above 2·(2^32-1)", N: 2, Sum: 1<<33 - 1, Hex: "0000000000"},
		{Name: "bit string missing", N: 3, Sum: 3, Hex: ""},
		{Name: "bit string cut short", N: 7, Sum: 71013, Hex: "50f596a3fb04"},
		{Name: "trailing byte", N: 3, Sum: 3, Hex: "0300"},
		{Name: "nonzero padding bit", N: 3, Sum: 3, Hex: "83"},
		// Two values of sum 2^32: P[0] = 0 makes the second 2^32.
		{Name: "value above 2^32-1", N: 2, Sum: 1 << 32, Hex: "ffffffff01"},
	})
}

// TestInterpolativeBoundedMutations damages count-less encodings at random.
func TestInterpolativeBoundedMutations(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	arrays := codectest.ValueSets(rng, compress.General, []int{1, 2, 3, 127, 128, 129}, []int{0, 1, 5, 13, 32})
	codectest.BoundedMutations(t, interpolativeBounded(t), arrays, 200)
}
