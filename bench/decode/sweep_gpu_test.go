package decode

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda/cudatest"
	"github.com/qpengine/qp/cuda/kern"
)

// The GPU tests share one Context on GPU 0 (cudatest.Context: skipped
// without a usable GPU).
var (
	gpu      = cudatest.Context
	emulated = cudatest.Emulated
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := cudatest.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "decode: Close: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// TestBenchDecodeGPU runs the sweep small (two lengths, one batched, one
// tiled over the pool) for bp128's kernel and the baseline, docIDs and
// frequencies: BenchDecode verifies the decoded copies itself; here the
// rows' shapes and rates are checked.
func TestBenchDecodeGPU(t *testing.T) {
	c := gpu(t)
	bp, err := compress.ByName("bp128")
	if err != nil {
		t.Skip(err)
	}
	lengths := []int{1 << 10, 1 << 13}
	for _, run := range []struct {
		kernel string
		mode   kern.Mode
	}{{"", kern.Docs}, {"", kern.Freqs}, {"bp128-baseline", kern.Docs}} {
		opt := BenchOptions{Kernel: run.kernel, Mode: run.mode, BatchInts: 1 << 12, PoolInts: 1 << 11, Reps: 2, CopyBW: 1e9}
		rs, err := BenchDecode(c, bp, lengths, opt)
		if err != nil {
			t.Fatalf("%q %v: %v", run.kernel, run.mode, err)
		}
		if len(rs) != len(lengths) {
			t.Fatalf("%q %v: %d rows, want %d", run.kernel, run.mode, len(rs), len(lengths))
		}
		for i, r := range rs {
			lists := max(1, opt.BatchInts/lengths[i])
			if r.Length != lengths[i] || r.Lists != lists || r.Ints != int64(lists*lengths[i]) || r.Mode != run.mode ||
				r.Blocks != int(r.Ints)/kern.MaxBlockValues || !(r.IntsPerSec > 0) || !(r.SingleIntsPerSec > 0) ||
				!(r.BitsPerInt > 0 && r.BitsPerInt <= 33) {
				t.Errorf("%q %v: row %+v", run.kernel, run.mode, r)
			}
			if want := map[bool]string{true: "qp_bp128_docs", false: r.Kernel}[run.kernel != ""]; r.Kernel != want {
				t.Errorf("kernel %q, want %q", r.Kernel, want)
			}
		}
	}
	if _, err := BenchDecode(c, bp, lengths, BenchOptions{Kernel: "bp128-baseline", Mode: kern.Freqs, CopyBW: 1}); err == nil {
		t.Error("the baseline kernel accepted frequencies")
	}
}

// benchKernel is a codec and one of its kernels ("": the default one).
type benchKernel struct {
	codec  compress.Codec
	kernel string
}

func (k benchKernel) name() string {
	if k.kernel != "" {
		return k.kernel
	}
	return k.codec.Name()
}

// benchKernels is every kernel BenchDecode measures: each codec's and the
// BP128 baseline.
func benchKernels() []benchKernel {
	var ks []benchKernel
	for _, c := range compress.All() {
		if !kern.Supported(c.ID()) {
			continue // CPU-only codec (interpolative)
		}
		ks = append(ks, benchKernel{c, ""})
		if c.ID() == compress.IDBP128 {
			ks = append(ks, benchKernel{c, "bp128-baseline"})
		}
	}
	return ks
}

// BenchmarkDecode times every codec's kernel (and the BP128 baseline) decoding
// batches of 2^22 docIDs in lists of 2^20 (BenchDecode, CUDA event times of
// the kernel alone, median of -benchtime launches but at least 5).
func BenchmarkDecode(b *testing.B) {
	c := gpu(b)
	bw, err := MeasureCopyBandwidth(c, 512<<20)
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range benchKernels() {
		b.Run(k.name(), func(b *testing.B) {
			rs, err := BenchDecode(c, k.codec, []int{1 << 20}, BenchOptions{Kernel: k.kernel, Reps: max(5, b.N), CopyBW: bw})
			if err != nil {
				b.Fatal(err)
			}
			r := rs[0]
			b.ReportMetric(r.IntsPerSec/1e9, "Gint/s")
			b.ReportMetric(r.BitsPerInt, "bits/int")
			b.ReportMetric(100*r.BandwidthFrac, "%bw")
			b.ReportMetric(r.Seconds*1e6, "µs/launch")
		})
	}
}

// TestDecodeSweep measures every kernel on every list length of
// DecodeBenchLengths and writes the results as CSV to $QP_DECODE_CSV; it is
// skipped unless that is set. QP_DECODE_LENGTHS (comma-separated) and
// QP_DECODE_KERNELS (names as in BenchmarkDecode) narrow it; QP_DECODE_CHUNK
// forces the blocks per warp chunk (BenchOptions.Chunk), QP_DECODE_BATCH the
// integers per launch, and QP_DECODE_NOVERIFY (any value) skips the output
// check (BenchOptions.NoVerify: for experimental kernels that do not decode
// every block).
func TestDecodeSweep(t *testing.T) {
	path := os.Getenv("QP_DECODE_CSV")
	if path == "" {
		t.Skip("QP_DECODE_CSV not set")
	}
	c := gpu(t)
	lengths := DecodeBenchLengths()
	if s := os.Getenv("QP_DECODE_LENGTHS"); s != "" {
		lengths = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			lengths = append(lengths, n)
		}
	}
	only := map[string]bool{}
	if s := os.Getenv("QP_DECODE_KERNELS"); s != "" {
		for _, f := range strings.Split(s, ",") {
			only[f] = true
		}
	}
	opt := BenchOptions{}
	if emulated(c) { // the emulator runs the same code, smaller
		opt.BatchInts, opt.PoolInts, opt.Reps = 1<<14, 1<<11, 3
	}
	if s := os.Getenv("QP_DECODE_CHUNK"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 32 {
			t.Fatalf("QP_DECODE_CHUNK %q: want 0..32", s)
		}
		opt.Chunk = n
	}
	opt.NoVerify = os.Getenv("QP_DECODE_NOVERIFY") != "" // experimental kernels
	if s := os.Getenv("QP_DECODE_BATCH"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		opt.BatchInts = n
	}
	bw, err := MeasureCopyBandwidth(c, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("device %s: device-to-device copy %.1f GB/s (read + write)\n", c.Device().Name, bw/1e9)
	var all []DecodeResult
	for _, k := range benchKernels() {
		if len(only) > 0 && !only[k.name()] {
			continue
		}
		o := opt
		o.Kernel, o.CopyBW, o.Progress = k.kernel, bw, func(r DecodeResult) { fmt.Println(r) }
		rs, err := BenchDecode(c, k.codec, lengths, o)
		all = append(all, rs...)
		if err != nil {
			t.Error(err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if err := WriteDecodeCSV(w, all); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
