package compress_test

import (
	"math/rand"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func bp128ipCodec(tb testing.TB) compress.Codec {
	tb.Helper()
	return codectest.Lookup(tb, compress.IDBP128IP, "bp128ip", compress.General)
}

func TestBP128IPRoundTrip(t *testing.T) { codectest.Suite(t, bp128ipCodec(t)) }

func FuzzBP128IPDecode(f *testing.F) { codectest.FuzzDecode(f, bp128ipCodec(f)) }

// TestBP128IPGolden pins the persisted format: full blocks are bp128's
// bytes, the tail is interpolative's encoding without its count.
func TestBP128IPGolden(t *testing.T) {
	c := bp128ipCodec(t)
	codectest.Golden(t, c, nil, "00")
	codectest.Golden(t, c, []uint32{1, 0, 2}, "030303") // interpolative's, hand-worked there
	codectest.Golden(t, c, []uint32{0, 1, 2, 3, 1000, 7, 70000}, "07e5aa0450f596a3fb0401")
	// 130 values: bp128's first block (its width byte and packed bytes),
	// then the last two values as interpolative codes them (without the
	// count): both pinned by their own golden tests.
	g := codectest.Golden130()
	bp, _ := compress.ByName("bp128")
	ip, _ := compress.ByName("interpolative")
	full := bp.AppendEncode(nil, g[:128])[2:] // drop bp128's count (2 bytes)
	tail := ip.AppendEncode(nil, g[128:])[1:] // drop interpolative's count
	want := append(append([]byte{0x82, 0x01}, full...), tail...)
	if got := c.AppendEncode(nil, g); string(got) != string(want) {
		t.Fatalf("130 values: encoding is not bp128's block then interpolative's tail")
	}
	codectest.Check(t, c, g)
}

// TestBP128IPCorrupt checks that malformed encodings are rejected.
func TestBP128IPCorrupt(t *testing.T) {
	codectest.Corrupt(t, bp128ipCodec(t), []codectest.Bad{
		{"no count", ""},
		{"count 1, no tail", "01"},
		{"trailing byte after 0 values", "0000"},
		{"128 values, no block header", "8001"},
		{"128 values, width 33", "800121"},
		{"128 values, width 1, 15 of 16 data bytes", "800101" + "000000000000000000000000000000"},
		{"128 values, width 0, trailing byte", "80010000"},
		{"129 values, tail missing", "810100"},
		{"tail with nonzero padding", "030383"},
		{"tail cut short", "07e5aa0450f596a3fb04"},
		{"huge count", "ffffffffff0f"},
	})
}

// TestBP128IPMutations damages valid encodings at random.
func TestBP128IPMutations(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	arrays := codectest.ValueSets(rng, compress.General, []int{1, 2, 127, 128, 129, 300}, []int{0, 3, 13, 32})
	codectest.Mutations(t, bp128ipCodec(t), arrays, 300)
}

func bp128ipBounded(tb testing.TB) compress.Bounded {
	tb.Helper()
	return codectest.As[compress.Bounded](tb, bp128ipCodec(tb))
}

// TestBP128IPBounded checks the count-less encodings (the index's blocks)
// against the reference codec.
func TestBP128IPBounded(t *testing.T) { codectest.BoundedSuite(t, bp128ipBounded(t)) }

func FuzzBP128IPBounded(f *testing.F) { codectest.FuzzBounded(f, bp128ipBounded(f)) }

// TestBP128IPBoundedFormat pins the count-less formats to their parts: the
// self-delimiting encoding without its count (known count), and without the
// tail's sum too (known sum), whose decoder derives the tail's sum from the
// full blocks'.
func TestBP128IPBoundedFormat(t *testing.T) {
	c := bp128ipBounded(t)
	ip := interpolativeBounded(t)
	g := codectest.Golden130()
	self := c.AppendEncode(nil, g)
	if got := c.AppendEncodeKnownN(nil, g); string(got) != string(self[2:]) {
		t.Fatalf("130 values, known count: not the encoding without its count")
	}
	want := append(append([]byte(nil), self[2:len(self)-len(ip.AppendEncodeKnownN(nil, g[128:]))]...), ip.AppendEncodeKnownSum(nil, g[128:])...)
	if got := c.AppendEncodeKnownSum(nil, g); string(got) != string(want) {
		t.Fatalf("130 values, known sum: not bp128's block then the tail's bit string")
	}
	codectest.BoundedCheck(t, c, g)
}

// TestBP128IPBoundedCorrupt checks that DecodeKnownSum rejects full blocks
// that do not fit the sum and malformed tails.
func TestBP128IPBoundedCorrupt(t *testing.T) {
	zero128 := "00" // one full block of width 0
	codectest.BoundedCorrupt(t, bp128ipBounded(t), []codectest.BadBounded{
		{Name: "full block summing to 0, sum 1", N: 128, Sum: 1, Hex: zero128},
		{Name: "full block of ones (width 1), sum 1", N: 128, Sum: 1, Hex: "01" + "ffffffffffffffffffffffffffffffff"},
		{Name: "full block above the sum, then a tail", N: 129, Sum: 0, Hex: "01" + "ffffffffffffffffffffffffffffffff"},
		{Name: "no block header", N: 128, Sum: 0, Hex: ""},
		{Name: "width 33", N: 128, Sum: 0, Hex: "21"},
		{Name: "trailing byte after a full block", N: 128, Sum: 0, Hex: zero128 + "00"},
		{Name: "tail: byte for a single value", N: 129, Sum: 5, Hex: zero128 + "00"},
		{Name: "tail: nonzero padding", N: 131, Sum: 3, Hex: zero128 + "83"},
	})
}

// TestBP128IPBoundedMutations damages count-less encodings at random.
func TestBP128IPBoundedMutations(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	arrays := codectest.ValueSets(rng, compress.General, []int{1, 2, 127, 128, 129, 300}, []int{0, 3, 13, 32})
	codectest.BoundedMutations(t, bp128ipBounded(t), arrays, 200)
}
