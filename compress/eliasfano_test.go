package compress_test

import (
	"encoding/hex"
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/compress/codectest"
)

func efCodec(tb testing.TB) compress.Searcher {
	tb.Helper()
	return codectest.As[compress.Searcher](tb, codectest.Lookup(tb, compress.IDEliasFano, "eliasfano", compress.Sorted))
}

func TestEliasFanoRoundTrip(t *testing.T) {
	c := efCodec(t)
	codectest.Suite(t, c)
	vals := efSorted(rand.New(rand.NewSource(3)), 2000, 40, 1<<20)
	codectest.AccessNoAllocs(t, c, c.AppendEncode(nil, vals), 1234, 10, vals[1500]+1)
}

func FuzzEliasFanoDecode(f *testing.F) { codectest.FuzzDecode(f, efCodec(f)) }

// FuzzEliasFanoSearch checks that Search never panics on arbitrary bytes
// and agrees with Decode on valid ones.
func FuzzEliasFanoSearch(f *testing.F) {
	c := efCodec(f)
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{1, 2, 7, 200, 600} {
		f.Add(c.AppendEncode(nil, efSorted(rng, n, 5, 1000)), 3, uint32(500))
	}
	out := make([]uint32, 1<<16)
	f.Fuzz(func(t *testing.T, data []byte, from int, x uint32) {
		i, v, err := c.Search(data, from, x)
		if err != nil {
			if !errors.Is(err, compress.ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		n, derr := c.Decode(out, data)
		if derr != nil {
			return // Search validates less than Decode
		}
		wi, wv := codectest.SearchRef(out[:n], from, x)
		if i != wi || v != wv {
			t.Fatalf("Search(%d, %d) = %d, %d; linear scan %d, %d", from, x, i, v, wi, wv)
		}
	})
}

// efSorted returns n non-decreasing values whose gaps are mostly small
// (often zero: duplicates) with a jump of up to `jump` about once in
// `every`.
func efSorted(rng *rand.Rand, n, every int, jump int64) []uint32 {
	out := make([]uint32, n)
	var s uint64
	for i := range out {
		switch r := rng.Intn(every); {
		case r == 0:
			s += uint64(rng.Int63n(jump + 1))
		case r < every/3:
			// duplicate
		default:
			s += uint64(rng.Intn(8))
		}
		s = min(s, 1<<32-1)
		out[i] = uint32(s)
	}
	return out
}

// TestEliasFanoSearch compares Search with a linear scan on random sorted
// arrays with duplicates, for every from and for x at, around and between
// the values.
func TestEliasFanoSearch(t *testing.T) {
	c := efCodec(t)
	rng := rand.New(rand.NewSource(42))
	type tcase struct {
		vals []uint32
		full bool // every from with every x; else every from with some x
	}
	var cases []tcase
	for _, n := range []int{1, 2, 3, 5, 17, 64, 100, 171, 200} {
		for _, jump := range []int64{0, 10, 1000, 1 << 24, 1 << 32} {
			cases = append(cases, tcase{efSorted(rng, n, 6, jump), true})
		}
	}
	for _, n := range []int{511, 512, 513, 1500, 4000} {
		for _, jump := range []int64{3, 5000, 1 << 28} {
			cases = append(cases, tcase{efSorted(rng, n, 6, jump), false})
		}
	}
	cases = append(cases,
		tcase{[]uint32{1<<32 - 1}, true},
		tcase{[]uint32{0, 0, 0, 0}, true},
		tcase{[]uint32{0, 1<<32 - 1, 1<<32 - 1}, true},
		tcase{[]uint32{7, 7, 7, 7, 7, 7, 7, 7, 7, 7}, true},
	)
	for _, tc := range cases {
		vals := tc.vals
		enc := c.AppendEncode(nil, vals)
		n := len(vals)
		var xs []uint32
		for _, v := range vals {
			xs = append(xs, v-1, v, v+1)
		}
		xs = append(xs, 0, 1<<32-1)
		for k := 0; k < 20; k++ {
			xs = append(xs, uint32(rng.Int63n(int64(vals[n-1])+2)))
		}
		check := func(from int, x uint32) {
			i, v, err := c.Search(enc, from, x)
			wi, wv := codectest.SearchRef(vals, from, x)
			if err != nil || i != wi || v != wv {
				t.Fatalf("n=%d max=%d: Search(from=%d, x=%d) = %d, %d, %v; want %d, %d", n, vals[n-1], from, x, i, v, err, wi, wv)
			}
		}
		for from := -1; from <= n+1; from++ {
			if tc.full {
				for _, x := range xs {
					check(from, x)
				}
			} else {
				for k := 0; k < 4; k++ {
					check(from, xs[rng.Intn(len(xs))])
				}
			}
		}
		if !tc.full {
			for _, x := range xs {
				check(0, x)
				check(rng.Intn(n), x)
			}
		}
	}
	// The empty array.
	enc := c.AppendEncode(nil, nil)
	if i, v, err := c.Search(enc, 0, 5); i != 0 || v != 0 || err != nil {
		t.Fatalf("empty: Search = %d, %d, %v", i, v, err)
	}
}

// TestEliasFanoUnsorted checks that unsorted input is a programmer bug.
func TestEliasFanoUnsorted(t *testing.T) {
	c := efCodec(t)
	defer func() {
		r := recover()
		if s, ok := r.(string); !ok || !strings.HasPrefix(s, "BUG: ") {
			t.Fatalf("panic = %v, want a BUG: string", r)
		}
	}()
	c.AppendEncode(nil, []uint32{1, 2, 2, 1})
}

// TestEliasFanoCorrupt checks hand-made invalid encodings and a damaged
// block count.
func TestEliasFanoCorrupt(t *testing.T) {
	c := efCodec(t)
	out := make([]uint32, 1024)
	// [5]: n=1 max=5, l=2, LBA 01, UBA bit 1.
	// [1,0,7] (invalid): n=3 max=7, l=1, LBA 1,0,1 = 05, UBA bits 0,1,5 = 23.
	codectest.Corrupt(t, c, []codectest.Bad{
		{"empty", ""},
		{"missing max", "01"},
		{"max > 2^32-1", "018080808010"},
		{"truncated", "01050102000000000000"},
		{"trailing byte", "0105010200000000000000" + "00"},
		{"LBA padding", "0105050200000000000000"},
		{"UBA padding", "0105010600000000000000"},
		{"last bit not set", "0105010100000000000000"},
		{"last value", "0105000200000000000000"},
		{"too many ones", "0203010700000000000000"},
		{"decreasing", "0307052300000000000000"},
		{"too few ones", "0307052000000000000000"},
		{"count too large", "ff01"},
		{"count zero with data", "0000"},
	})
	if _, err := c.Decode(out, mustHex(t, "0105010200000000000000")); err != nil {
		t.Fatalf("valid [5]: %v", err)
	}
	// A damaged block count: 300 values over more than 512 UBA bits.
	vals := make([]uint32, 300)
	for i := range vals {
		vals[i] = uint32(3 * i)
	}
	enc := c.AppendEncode(nil, vals)
	const hdr = 2 + 2 // uvarint(300), uvarint(897)
	enc[hdr]++
	if _, err := c.Decode(out, enc); !errors.Is(err, compress.ErrCorrupt) {
		t.Errorf("damaged block count: Decode err = %v, want ErrCorrupt", err)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEliasFanoGolden pins the persisted format.
func TestEliasFanoGolden(t *testing.T) {
	c := efCodec(t)
	// ~600 docIDs (minus the block base): small gaps, duplicates-free, a
	// few jumps; more than 512 UBA bits, so one block count is stored.
	in600 := make([]uint32, 600)
	x, s := uint32(2463534242), uint32(0)
	for i := range in600 {
		x = codectest.XorShift(x)
		s += 1 + x%9
		if x%23 == 0 {
			s += x >> 20
		}
		in600[i] = s
	}
	codectest.Golden(t, c, nil, "00")
	codectest.Golden(t, c, []uint32{0, 0, 0}, "0300"+"0700000000000000")
	codectest.Golden(t, c, []uint32{1, 3, 3, 7, 20, 21, 100}, "0764"+"d9ce12"+"cf00040000000000")
	codectest.Golden(t, c, []uint32{1<<32 - 1}, "01ffffffff0f"+"ffffffff"+"0100000000000000")
	codectest.Golden(t, c, in600, "d804c89f02da009400930042b5a88158b47a7116cc3f24f768ed3f2877fd516b"+
		"ee5f18e5a13459f30e48551d6cd67f9405edf5c39c46353850e62e0661d55edd"+
		"493909562d56c481ace62a0e09d68b3527526f3f109bfb0fb318c5bb7fa126e5"+
		"c5c9acbb4830eb414c925b0c04ab17e8c5da8120ca492d0e7b72ee6150cc5ca8"+
		"15f3ee86b557b10fa3b8172f2086bdaa83b8e09c57f7170745fd8f931914f368"+
		"fe2098c59cd5833d68aff6003d48ed0e2741693f80381c94d41be434ca1cd3dd"+
		"871431ffa751fdc3ee409424270f87b5773b206b5a0c8a493277e3ace662cdfc"+
		"518a5573209092ba8b25a9bdfa9362d8833888c566e6d37e5216cdfea315ef26"+
		"e7d98f60d61f1c47f3ee2541ec8b3969c1dc8b6110bb773f1844b95731204bee"+
		"20d262cdc94d8aabb81335b107c7d53ec841ebd1fe05691387d228e620b1da41"+
		"8a3a94143518aab9276b0e2535ba397333ffc126c57e2426a9f500ad8881410b"+
		"5afd877a94ffa2260ec3b0693127c5a4462f386b6e705aa47a8fb3a4ede0bc58"+
		"3140dfeff7effbbdbf030000006000000000000000000000000080f0fe7ebfff"+
		"fededfbf80f7fbeffb7dbfdfefefeff7f7f7f737000000000000004003000000"+
		"0000000000000000000000dfeffdfdfbf7f717000000000080fd00800f000000"+
		"000000006000002000000000c0fdbe000000000000000000ecefeff7f77dbfbf"+
		"7f0f00000000000000000000000000e0feb8030000000078dff7fd7dff3e00de"+
		"bfefbfdf0100000000000000000000000000b00f0000000000fcf7fdbef70500"+
		"e0df1f0000e0fbfd7dff7eefdfdf0100000000000000000000d8dfef37000000"+
		"0000")
}

func TestEliasFanoMutations(t *testing.T) {
	c := efCodec(t)
	rng := rand.New(rand.NewSource(5))
	codectest.Mutations(t, c, [][]uint32{
		efSorted(rng, 7, 5, 100),
		efSorted(rng, 130, 6, 1<<20),
		efSorted(rng, 1100, 6, 50),
		efSorted(rng, 3000, 30, 1<<24),
	}, 1500)
}
