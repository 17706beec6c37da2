package decode

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda/kern"
)

// TestBenchDecodeCPU runs the CPU side of the decode benchmark on small
// lengths, both modes, every codec, and checks the result fields; it needs
// no GPU (the benchmark itself verifies the output against the pool).
func TestBenchDecodeCPU(t *testing.T) {
	lengths := []int{1 << 7, 1000, 1 << 12}
	for _, mode := range []kern.Mode{kern.Docs, kern.Freqs} {
		for _, c := range compress.All() {
			rs, err := BenchDecodeCPU(c, lengths, 2, time.Millisecond, BenchOptions{BatchInts: 1 << 13, PoolInts: 1 << 11, Mode: mode})
			if err != nil {
				t.Fatalf("%s %v: %v", c.Name(), mode, err)
			}
			if len(rs) != len(lengths) {
				t.Fatalf("%s: %d results", c.Name(), len(rs))
			}
			for i, r := range rs {
				if r.Length != lengths[i] || r.Codec != c.Name() || r.Mode != mode || !strings.HasPrefix(r.Device, "CPU") {
					t.Errorf("%s: result %d is %+v", c.Name(), i, r)
				}
				if r.Ints < int64(r.Length) || r.Lists*r.Length != int(r.Ints) || r.IntsPerSec <= 0 || r.BitsPerInt <= 0 {
					t.Errorf("%s L=%d: ints %d lists %d rate %g bits %g", c.Name(), r.Length, r.Ints, r.Lists, r.IntsPerSec, r.BitsPerInt)
				}
			}
		}
	}
}

// TestWriteDecodeSVG checks that the plot is well-formed XML with one line
// per codec and device and a legend entry each.
func TestWriteDecodeSVG(t *testing.T) {
	var rs []DecodeResult
	for _, c := range []string{"bp128", "eliasfano"} {
		for _, l := range []int{1 << 10, 1 << 14, 1 << 20} {
			rs = append(rs, DecodeResult{Codec: c, Kernel: "qp_decode_" + c, Device: "GPU", Length: l, IntsPerSec: 1e11 * float64(l) / (1 << 20)})
			rs = append(rs, DecodeResult{Codec: c, Kernel: "cpu", Device: "CPU (2 threads)", Length: l, IntsPerSec: 1e9})
		}
	}
	var b strings.Builder
	if err := WriteDecodeSVG(&b, "test <plot>", rs); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(strings.NewReader(b.String()))
	lines, texts := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed: %v\n%s", err, b.String())
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "path": // report.Plot draws each series as one path
				lines++
			case "text":
				texts++
			}
		}
	}
	if lines != 4 {
		t.Errorf("%d lines, want 4", lines)
	}
	for _, want := range []string{"bp128, GPU", "bp128, CPU", "eliasfano, GPU", "eliasfano, CPU", "test &lt;plot&gt;"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plot lacks %q", want)
		}
	}
	if err := WriteDecodeSVG(io.Discard, "", nil); err == nil {
		t.Error("no error for an empty plot")
	}
}
