package compress

import (
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestUnpack128MatchesGeneric checks every generated routine against the
// generic packUnpack (its pure-Go twin) on random values of every width,
// including all-ones values that fill every bit.
func TestUnpack128MatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for w := uint(1); w <= 32; w++ {
		for trial := 0; trial < 20; trial++ {
			vals := make([]uint32, bpBlock)
			mask := uint32(1<<w - 1)
			for i := range vals {
				switch trial {
				case 0:
					vals[i] = mask
				case 1:
					vals[i] = uint32(i) & mask
				default:
					vals[i] = rng.Uint32() & mask
				}
			}
			data := packAppend(nil, vals, w)
			if len(data) != 16*int(w) {
				t.Fatalf("width %d: %d bytes", w, len(data))
			}
			var got [bpBlock]uint32
			want := make([]uint32, bpBlock)
			unpack128[w](&got, data)
			packUnpack(want, data, w)
			for i := range want {
				if got[i] != want[i] || want[i] != vals[i] {
					t.Fatalf("width %d trial %d value %d: generated %d, generic %d, packed %d", w, trial, i, got[i], want[i], vals[i])
				}
			}
		}
	}
}

// TestUnpackGenUpToDate regenerates unpack_gen.go into a temporary file and
// compares: the committed file is exactly the generator's output.
func TestUnpackGenUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	out := filepath.Join(t.TempDir(), "unpack_gen.go")
	cmd := exec.Command("go", "run", "./internal/genunpack", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot run the generator here: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("unpack_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("unpack_gen.go differs from the generator's output: run go generate ./compress")
	}
}

// TestBP128FullBlockDecodeAllocs: the generated path does not allocate.
func TestBP128FullBlockDecodeAllocs(t *testing.T) {
	vals := make([]uint32, 3*bpBlock+5)
	for i := range vals {
		vals[i] = uint32(i * 7)
	}
	c := bp128Codec{}
	enc := c.AppendEncode(nil, vals)
	out := make([]uint32, len(vals))
	if a := testing.AllocsPerRun(100, func() { _, _ = c.Decode(out, enc) }); a != 0 {
		t.Fatalf("%v allocations", a)
	}
	if _, err := c.Decode(out, enc); err != nil {
		t.Fatal(err)
	}
	for i := range vals {
		if out[i] != vals[i] {
			t.Fatalf("value %d: %d, want %d", i, out[i], vals[i])
		}
	}
}
