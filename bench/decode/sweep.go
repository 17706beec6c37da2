package decode

import (
	"fmt"
	"io"
	"math"
	"math/rand"
	"sort"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/report"
)

// Decoding speed on the GPU (BenchDecode): for each list length L, posting
// lists of L docIDs drawn at density L/N from a collection of N documents
// (geometric d-gaps, as in a random sample), cut into index blocks of 128
// and encoded exactly as the index does, are decoded by one kernel launch
// per measurement; lists shorter than BatchInts are batched (BatchInts/L
// lists per launch), so that short lists are measured the way a query
// batch decodes them, and one single-list launch is timed too. Times are
// CUDA event times of the kernel alone, the median of Reps launches, with
// the input already on the device. To keep the cost of building inputs of
// up to 2^26 values low, PoolInts values are generated and encoded per L
// and repeated (as whole blocks, with shifted block bases, so every list is
// still strictly increasing and every block is decoded and written); up to
// 16 copies of the inputs and outputs are rotated, enough that the inputs
// alone span three times the L2 where memory allows, so that the times are
// DRAM times, not cache times. (Until the decoders' cache hints, the copies
// were counted by inputs and outputs together; with outputs stored
// evict-first and inputs prefetched evict-last, the inputs of two copies at
// 2^24 could stay in L2 from one launch to the next.)
//
// The bandwidth bound: a decoder must read the encoded blocks and its
// per-block offsets and base (20 bytes per block) and write 4 bytes per
// value; BandwidthFraction is those bytes over the time, divided by the
// bandwidth of a device-to-device copy (bytes read + written per second)
// measured in the same process (MeasureCopyBandwidth).

// DecodeBenchLengths returns the list lengths 2^10 .. 2^26.
func DecodeBenchLengths() []int {
	var ls []int
	for l := 1 << 10; l <= 1<<26; l <<= 1 {
		ls = append(ls, l)
	}
	return ls
}

// BenchOptions configure BenchDecode; the zero value means the defaults.
type BenchOptions struct {
	Docs      int       // collection size N: docIDs are drawn from [0, N); default 2^27
	BatchInts int       // integers per launch at least: BatchInts/L lists of length L per launch; default 2^22
	PoolInts  int       // distinct integers generated per length, repeated to fill lists; default 2^16
	Reps      int       // timed launches per measurement (median); default 20
	Kernel    string    // "" (the codec's kernel) or "bp128-baseline" (the first BP128 kernel, qp_bp128_docs)
	Mode      kern.Mode // Docs, or Freqs (frequencies 1 + a geometric variable of mean 1.5)
	Chunk     int       // blocks per warp chunk forced on the qp_decode_* kernels (1..32; 0: the kernel's choice)
	Seed      int64     // random seed (0: 1)
	CopyBW    float64   // device-to-device copy bandwidth, bytes read + written per second; 0: measured first
	NoVerify  bool      // skip the check of a sample of the output against the CPU
	Progress  func(r DecodeResult)
}

// DecodeResult is one measurement of BenchDecode.
type DecodeResult struct {
	Device       string
	Codec        string
	Kernel       string
	Mode         kern.Mode
	Length       int     // list length L
	Lists        int     // lists per launch
	Ints         int64   // integers per launch
	Blocks       int     // index blocks per launch
	EncodedBytes int64   // encoded bytes per launch (block headers included, offsets excluded)
	BitsPerInt   float64 // 8 * EncodedBytes / Ints
	Seconds      float64 // median time of one launch
	IntsPerSec   float64 // Ints / Seconds
	// SingleSeconds and SingleIntsPerSec time a launch of one list of L
	// (equal to Seconds and IntsPerSec when Lists is 1).
	SingleSeconds    float64
	SingleIntsPerSec float64
	BytesMoved       int64   // encoded bytes + 20 per block read, 4 per integer written
	CopyBW           float64 // device-to-device copy bandwidth (bytes/s, read + written)
	BandwidthFrac    float64 // BytesMoved / Seconds / CopyBW
}

func (o *BenchOptions) defaults() {
	if o.Docs <= 0 {
		o.Docs = 1 << 27
	}
	if o.BatchInts <= 0 {
		o.BatchInts = 1 << 22
	}
	if o.PoolInts <= 0 {
		o.PoolInts = 1 << 16
	}
	o.PoolInts = max(kern.MaxBlockValues, o.PoolInts/kern.MaxBlockValues*kern.MaxBlockValues)
	if o.Reps <= 0 {
		o.Reps = 20
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
}

func median(x []float64) float64 {
	y := append([]float64(nil), x...)
	sort.Float64s(y)
	if len(y) == 0 {
		return math.NaN()
	}
	if len(y)%2 == 1 {
		return y[len(y)/2]
	}
	return (y[len(y)/2-1] + y[len(y)/2]) / 2
}

// benchPool is the encoded prefix of one list: P values in blocks of 128.
type benchPool struct {
	enc    []byte
	off    []uint64 // block byte offsets, len nb+1
	base   []uint32 // block bases (relative to the list start)
	vals   []uint32 // decoded values (docIDs or frequencies)
	span   uint32   // docIDs: last docID + 1 (the shift of the next copy)
	blocks int
}

func makePool(codec compress.Codec, rng *rand.Rand, p, length, docs int, mode kern.Mode) benchPool {
	var pl benchPool
	vals := make([]uint32, p)
	if mode == kern.Docs {
		dens := math.Min(1, float64(length)/float64(docs))
		d := int64(-1)
		for i := range vals {
			g := int64(1)
			if dens < 1 {
				g = 1 + int64(math.Log(1-rng.Float64())/math.Log1p(-dens))
			}
			d += g
			vals[i] = uint32(d)
		}
		pl.span = vals[p-1] + 1
	} else {
		for i := range vals {
			vals[i] = 1 + uint32(math.Log(1-rng.Float64())/math.Log(1.0/3))
		}
	}
	pl.vals = vals
	pl.off = []uint64{0}
	sorted := codec.Kind() == compress.Sorted
	raw := make([]uint32, kern.MaxBlockValues)
	base := uint32(0)
	for s := 0; s < p; s += kern.MaxBlockValues {
		blk := vals[s:min(p, s+kern.MaxBlockValues)]
		raw = raw[:len(blk)]
		for j, v := range blk {
			switch {
			case mode == kern.Docs && sorted:
				raw[j] = v - base
			case mode == kern.Docs && j == 0:
				raw[j] = v - base
			case mode == kern.Docs:
				raw[j] = v - blk[j-1] - 1
			case sorted: // prefix sums of tf - 1
				raw[j] = v - 1
				if j > 0 {
					raw[j] += raw[j-1]
				}
			default:
				raw[j] = v - 1
			}
		}
		pl.enc = codec.AppendEncode(pl.enc, raw)
		pl.off = append(pl.off, uint64(len(pl.enc)))
		pl.base = append(pl.base, base)
		if mode == kern.Docs {
			base = blk[len(blk)-1] + 1
		}
		pl.blocks++
	}
	return pl
}

// WriteDecodeCSV writes results as CSV with a header line.
func WriteDecodeCSV(w io.Writer, rs []DecodeResult) error {
	header := []string{"device", "codec", "kernel", "mode", "length", "lists", "ints", "blocks", "encoded_bytes", "bits_per_int",
		"seconds", "gints_per_s", "single_seconds", "single_gints_per_s", "bytes_moved", "copy_gbps", "bw_fraction"}
	rows := make([][]string, len(rs))
	for i, r := range rs {
		f := fmt.Sprintf
		rows[i] = []string{r.Device, r.Codec, r.Kernel, fmt.Sprint(r.Mode), f("%d", r.Length), f("%d", r.Lists), f("%d", r.Ints),
			f("%d", r.Blocks), f("%d", r.EncodedBytes), f("%.4f", r.BitsPerInt), f("%.6e", r.Seconds), f("%.3f", r.IntsPerSec/1e9),
			f("%.6e", r.SingleSeconds), f("%.3f", r.SingleIntsPerSec/1e9), f("%d", r.BytesMoved), f("%.1f", r.CopyBW/1e9),
			f("%.4f", r.BandwidthFrac)}
	}
	return report.WriteCSV(w, header, rows)
}

// String is a one-line summary of a result.
func (r DecodeResult) String() string {
	return fmt.Sprintf("%-10s %-26s L=2^%-2d %4d lists %6.2f bits/int %8.1f Gint/s (single list %7.1f) %5.1f%% of copy bandwidth (%v/launch)",
		r.Codec, r.Kernel, int(math.Round(math.Log2(float64(r.Length)))), r.Lists, r.BitsPerInt, r.IntsPerSec/1e9,
		r.SingleIntsPerSec/1e9, 100*r.BandwidthFrac, time.Duration(r.Seconds*1e9).Round(100*time.Nanosecond))
}
