package cuda

import (
	"errors"
	"fmt"
	"github.com/qpengine/qp/report"
	"io"
	"math"
	"math/rand"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/qpengine/qp/compress"
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
	Docs      int     // collection size N: docIDs are drawn from [0, N); default 2^27
	BatchInts int     // integers per launch at least: BatchInts/L lists of length L per launch; default 2^22
	PoolInts  int     // distinct integers generated per length, repeated to fill lists; default 2^16
	Reps      int     // timed launches per measurement (median); default 20
	Kernel    string  // "" (the codec's kernel) or "bp128-baseline" (the first BP128 kernel, qp_bp128_docs)
	Mode      Mode    // Docs, or Freqs (frequencies 1 + a geometric variable of mean 1.5)
	Chunk     int     // blocks per warp chunk forced on the qp_decode_* kernels (1..32; 0: the kernel's choice)
	Seed      int64   // random seed (0: 1)
	CopyBW    float64 // device-to-device copy bandwidth, bytes read + written per second; 0: measured first
	NoVerify  bool    // skip the check of a sample of the output against the CPU
	Progress  func(r DecodeResult)
}

// DecodeResult is one measurement of BenchDecode.
type DecodeResult struct {
	Device       string
	Codec        string
	Kernel       string
	Mode         Mode
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
	o.PoolInts = max(MaxBlockValues, o.PoolInts/MaxBlockValues*MaxBlockValues)
	if o.Reps <= 0 {
		o.Reps = 20
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
}

// MeasureCopyBandwidth times device-to-device copies of n bytes
// (cuMemcpyDtoDAsync, median of 10 after a warm-up) and returns the bytes
// read plus written per second.
func MeasureCopyBandwidth(c *Context, n int) (float64, error) {
	a, err := c.Alloc(n)
	if err != nil {
		return 0, err
	}
	defer a.Free()
	b, err := c.Alloc(n)
	if err != nil {
		return 0, err
	}
	defer b.Free()
	s, err := c.NewStream()
	if err != nil {
		return 0, err
	}
	defer s.Destroy()
	if err := s.Fill32(a, 0, 0x12345678, n/4); err != nil {
		return 0, err
	}
	times, err := timeLaunches(c, s, 10, func(int) error { return s.CopyDevice(b, 0, a, 0, n) })
	if err != nil {
		return 0, err
	}
	return 2 * float64(n) / median(times), nil
}

// timeLaunches runs launch once to warm up, then reps times, each between
// two events, all enqueued on the owner thread behind a long fill of a
// scratch buffer so that the GPU does not wait for the host between them;
// it returns the event times in seconds.
func timeLaunches(c *Context, s *Stream, reps int, launch func(rep int) error) ([]float64, error) {
	evs := make([]*Event, 2*reps)
	for i := range evs {
		e, err := c.NewEvent()
		if err != nil {
			return nil, err
		}
		defer e.Destroy()
		evs[i] = e
	}
	scratch, err := c.Pool().Get(512 << 20)
	if err != nil {
		return nil, err
	}
	defer scratch.Free()
	err = c.Do(func() error {
		if err := launch(0); err != nil {
			return err
		}
		if err := s.Fill32(scratch, 0, 0, scratch.Len()/4); err != nil {
			return err
		}
		for r := 0; r < reps; r++ {
			if err := evs[2*r].Record(s); err != nil {
				return err
			}
			if err := launch(r); err != nil {
				return err
			}
			if err := evs[2*r+1].Record(s); err != nil {
				return err
			}
		}
		return evs[2*reps-1].Synchronize()
	})
	if err != nil {
		return nil, err
	}
	times := make([]float64, reps)
	for r := range times {
		d, err := Elapsed(evs[2*r], evs[2*r+1])
		if err != nil {
			return nil, err
		}
		times[r] = d.Seconds()
	}
	return times, nil
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

func makePool(codec compress.Codec, rng *rand.Rand, p, length, docs int, mode Mode) benchPool {
	var pl benchPool
	vals := make([]uint32, p)
	if mode == Docs {
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
	raw := make([]uint32, MaxBlockValues)
	base := uint32(0)
	for s := 0; s < p; s += MaxBlockValues {
		blk := vals[s:min(p, s+MaxBlockValues)]
		raw = raw[:len(blk)]
		for j, v := range blk {
			switch {
			case mode == Docs && sorted:
				raw[j] = v - base
			case mode == Docs && j == 0:
				raw[j] = v - base
			case mode == Docs:
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
		if mode == Docs {
			base = blk[len(blk)-1] + 1
		}
		pl.blocks++
	}
	return pl
}

// benchSet is one copy of the device inputs and output of a launch.
type benchSet struct{ src, srcOff, outOff, base, out, status *Buffer }

func (s *benchSet) free() {
	for _, b := range []*Buffer{s.src, s.srcOff, s.outOff, s.base, s.out, s.status} {
		if b != nil {
			_ = b.Free()
		}
	}
}

// BenchDecode measures the GPU decoding of lists of each length of lengths
// encoded with codec (see the comment above). It returns one result per
// length; Progress, when set, sees each as it is measured.
func BenchDecode(c *Context, codec compress.Codec, lengths []int, opt BenchOptions) ([]DecodeResult, error) {
	opt.defaults()
	k, err := c.Kernels()
	if err != nil {
		return nil, err
	}
	kname := ""
	baseline := false
	switch opt.Kernel {
	case "":
		dk, ok := decodeKernels[codec.ID()]
		if !ok {
			return nil, fmt.Errorf("cuda: no GPU decoder for codec %s", codec.Name())
		}
		kname = dk.name
	case "bp128-baseline":
		if codec.ID() != compress.IDBP128 || opt.Mode != Docs {
			return nil, errors.New("cuda: the baseline kernel decodes bp128 docIDs only")
		}
		kname, baseline = "qp_bp128_docs", true
	default:
		return nil, fmt.Errorf("cuda: no kernel %q for codec %s", opt.Kernel, codec.Name())
	}
	f := k.fns[kname]
	if opt.CopyBW == 0 {
		if opt.CopyBW, err = MeasureCopyBandwidth(c, 512<<20); err != nil {
			return nil, err
		}
	}
	var out []DecodeResult
	for _, L := range lengths {
		r, err := benchOne(c, k, f, kname, baseline, codec, L, opt)
		if err != nil {
			return out, fmt.Errorf("cuda: BenchDecode %s, length %d: %w", codec.Name(), L, err)
		}
		if opt.Progress != nil {
			opt.Progress(r)
		}
		out = append(out, r)
	}
	return out, nil
}

func benchOne(c *Context, k *Kernels, f *Function, kname string, baseline bool, codec compress.Codec, L int, opt BenchOptions) (DecodeResult, error) {
	rng := rand.New(rand.NewSource(opt.Seed + int64(L)))
	P := min(L, opt.PoolInts)
	if L > P {
		L = (L + P - 1) / P * P
	}
	pool := makePool(codec, rng, P, L, opt.Docs, opt.Mode)
	tiles := L / P
	lists := max(1, opt.BatchInts/L)
	copies := tiles * lists
	nb := copies * pool.blocks
	ints := int64(copies) * int64(P)
	pb := len(pool.enc)
	srcBytes := copies * pb
	if ints > math.MaxInt32 || nb > math.MaxInt32 {
		return DecodeResult{}, fmt.Errorf("%d values per launch is too many", ints)
	}

	// Host offsets and bases of one set.
	srcOff := make([]uint64, nb+1)
	outOff := make([]uint64, nb+1)
	base := make([]uint32, nb)
	for cp := 0; cp < copies; cp++ {
		shift := uint32(cp%tiles) * pool.span
		for b := 0; b < pool.blocks; b++ {
			i := cp*pool.blocks + b
			srcOff[i] = uint64(cp*pb) + pool.off[b]
			outOff[i] = uint64(cp*P + b*MaxBlockValues)
			base[i] = pool.base[b] + shift
		}
	}
	srcOff[nb] = uint64(srcBytes)
	outOff[nb] = uint64(ints)

	s, err := c.NewStream()
	if err != nil {
		return DecodeResult{}, err
	}
	defer s.Destroy()
	// Copies: the inputs of all of them span 3 L2s, at most 16 copies and
	// a quarter of the device's free memory.
	in := int64(srcBytes) + 20*int64(nb)
	nsets := int(min(16, max(1, (3*int64(c.Device().L2Bytes)+in-1)/in)))
	if free, _, err := c.MemInfo(); err == nil {
		foot := in + 4*ints
		nsets = int(max(1, min(int64(nsets), int64(free)/4/foot)))
	}
	sets := make([]benchSet, nsets)
	defer func() {
		for i := range sets {
			sets[i].free()
		}
	}()
	pool0 := k.ctx.Pool()
	for i := range sets {
		st := &sets[i]
		for _, g := range []struct {
			dst   **Buffer
			bytes int
		}{{&st.src, srcBytes}, {&st.srcOff, 8 * (nb + 1)}, {&st.outOff, 8 * (nb + 1)},
			{&st.base, 4 * nb}, {&st.out, 4 * int(ints)}, {&st.status, 8}} {
			if *g.dst, err = pool0.Get(g.bytes); err != nil {
				return DecodeResult{}, err
			}
		}
		if i == 0 {
			if err := CopyToDevice(st.src, 0, pool.enc); err != nil {
				return DecodeResult{}, err
			}
			for _, err := range []error{CopyToDevice(st.srcOff, 0, srcOff), CopyToDevice(st.outOff, 0, outOff),
				CopyToDevice(st.base, 0, base), c.Synchronize()} {
				if err != nil {
					return DecodeResult{}, err
				}
			}
			for done := 1; done < copies; {
				n := min(done, copies-done)
				if err := s.CopyDevice(st.src, done*pb, st.src, 0, n*pb); err != nil {
					return DecodeResult{}, err
				}
				done += n
			}
		} else {
			s0 := &sets[0]
			for _, p := range [][2]*Buffer{{st.src, s0.src}, {st.srcOff, s0.srcOff}, {st.outOff, s0.outOff}, {st.base, s0.base}} {
				if err := s.CopyDevice(p[0], 0, p[1], 0, p[1].Len()); err != nil {
					return DecodeResult{}, err
				}
			}
		}
		if err := s.Fill32(st.status, 0, math.MaxUint32, 2); err != nil {
			return DecodeResult{}, err
		}
	}
	if err := s.Synchronize(); err != nil {
		return DecodeResult{}, err
	}

	launch := func(set, blocks int) error {
		st := &sets[set]
		if baseline {
			return f.Launch(Dim3{uint32(blocks), 1, 1}, Dim3{bp128BlockValues, 1, 1}, 0, s,
				st.src, st.srcOff, st.outOff, st.base, (*Buffer)(nil), st.out, st.status)
		}
		grid := min((blocks+decodeWarps-1)/decodeWarps, c.Device().SMs*k.residentCTAs(f, 32*decodeWarps))
		var b *Buffer
		if opt.Mode == Docs {
			b = st.base
		}
		return f.Launch(Dim3{uint32(grid), 1, 1}, Dim3{32 * decodeWarps, 1, 1}, 0, s,
			st.src, st.srcOff, st.outOff, b, (*Buffer)(nil), st.out, st.status, (*Buffer)(nil), uint32(blocks), uint32(opt.Mode)|uint32(opt.Chunk)<<8)
	}
	times, err := timeLaunches(c, s, opt.Reps, func(r int) error { return launch(r%nsets, nb) })
	if err != nil {
		return DecodeResult{}, err
	}
	single := times
	if lists > 1 {
		if single, err = timeLaunches(c, s, opt.Reps, func(r int) error { return launch(r%nsets, tiles*pool.blocks) }); err != nil {
			return DecodeResult{}, err
		}
	}

	// Every launch must have succeeded; a sample of the output must equal the CPU's.
	for i := range sets {
		var st [1]uint64
		if err := CopyFromDevice(st[:], sets[i].status, 0); err != nil {
			return DecodeResult{}, err
		}
		if st[0] != math.MaxUint64 {
			if baseline {
				return DecodeResult{}, BP128StatusError(st[0])
			}
			return DecodeResult{}, DecodeStatusError(codec.Name(), st[0])
		}
	}
	if !opt.NoVerify {
		got := make([]uint32, P)
		for _, cp := range []int{0, copies - 1} {
			if err := CopyFromDevice(got, sets[(opt.Reps-1)%nsets].out, 4*cp*P); err != nil {
				return DecodeResult{}, err
			}
			shift := uint32(0)
			if opt.Mode == Docs {
				shift = uint32(cp%tiles) * pool.span
			}
			for i, v := range pool.vals {
				if got[i] != v+shift {
					return DecodeResult{}, fmt.Errorf("kernel %s: value %d of copy %d is %d, want %d", kname, i, cp, got[i], v+shift)
				}
			}
		}
	}

	r := DecodeResult{
		Device: c.Device().Name, Codec: codec.Name(), Kernel: kname, Mode: opt.Mode, Length: L, Lists: lists,
		Ints: ints, Blocks: nb, EncodedBytes: int64(srcBytes), Seconds: median(times), SingleSeconds: median(single),
		CopyBW: opt.CopyBW,
	}
	r.BitsPerInt = 8 * float64(r.EncodedBytes) / float64(ints)
	r.IntsPerSec = float64(ints) / r.Seconds
	r.SingleIntsPerSec = float64(tiles*P) / r.SingleSeconds
	r.BytesMoved = r.EncodedBytes + 20*int64(nb) + 4*ints
	r.BandwidthFrac = float64(r.BytesMoved) / r.Seconds / r.CopyBW
	return r, nil
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

// BenchDecodeCPU measures the inputs BenchDecode measures (the same lists of
// each length, seed for seed) decoded on the CPU by threads goroutines (0:
// GOMAXPROCS), each taking a contiguous share of the launch's blocks and
// decoding them as index.List.DecodeDocs / DecodeFreqs do: codec.Decode,
// then the docID prefix sum (or frequency differences) and the last-docID
// check. Unlike the GPU, the encoded input is materialized (every copy of
// the pool has its own bytes, read from memory), and the time of one pass
// is the median of passes repeated for at least minTime (at least 3).
// SingleSeconds and the bandwidth fields are left zero: a CPU has no
// single-launch latency and no copy bound measured here. It needs no GPU.
func BenchDecodeCPU(codec compress.Codec, lengths []int, threads int, minTime time.Duration, opt BenchOptions) ([]DecodeResult, error) {
	opt.defaults()
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	var out []DecodeResult
	var dst []uint32
	for _, L := range lengths {
		r, d, err := benchOneCPU(codec, L, threads, minTime, opt, dst)
		if err != nil {
			return out, fmt.Errorf("cuda: BenchDecodeCPU %s, length %d: %w", codec.Name(), L, err)
		}
		dst = d
		if opt.Progress != nil {
			opt.Progress(r)
		}
		out = append(out, r)
	}
	return out, nil
}

func benchOneCPU(codec compress.Codec, L, threads int, minTime time.Duration, opt BenchOptions, dst []uint32) (DecodeResult, []uint32, error) {
	rng := rand.New(rand.NewSource(opt.Seed + int64(L)))
	P := min(L, opt.PoolInts)
	if L > P {
		L = (L + P - 1) / P * P
	}
	pool := makePool(codec, rng, P, L, opt.Docs, opt.Mode)
	tiles := L / P
	lists := max(1, opt.BatchInts/L)
	copies := tiles * lists
	nb := copies * pool.blocks
	ints := int64(copies) * int64(P)
	pb := len(pool.enc)
	src := make([]byte, 0, copies*pb)
	for cp := 0; cp < copies; cp++ {
		src = append(src, pool.enc...)
	}
	if int64(cap(dst)) < ints {
		dst = make([]uint32, ints)
	}
	dst = dst[:ints]
	sorted := codec.Kind() == compress.Sorted
	// decode decodes blocks [b0, b1) of the launch into dst.
	decode := func(b0, b1 int) error {
		for i := b0; i < b1; i++ {
			cp, b := i/pool.blocks, i%pool.blocks
			s := src[cp*pb+int(pool.off[b]) : cp*pb+int(pool.off[b+1])]
			o := cp*P + b*MaxBlockValues
			m := min(MaxBlockValues, P-b*MaxBlockValues)
			out := dst[o : o+m]
			n, err := codec.Decode(out, s)
			if err != nil {
				return err
			}
			if n != m {
				return fmt.Errorf("block %d: %d values, want %d", i, n, m)
			}
			if opt.Mode == Docs {
				base := pool.base[b] + uint32(cp%tiles)*pool.span
				if sorted {
					for j := range out {
						out[j] += base
					}
				} else {
					d := base - 1
					for j, v := range out {
						d += v + 1
						out[j] = d
					}
				}
				want := pool.vals[b*MaxBlockValues+m-1] + uint32(cp%tiles)*pool.span
				if out[m-1] != want {
					return fmt.Errorf("block %d: last docID %d, want %d", i, out[m-1], want)
				}
			} else if sorted {
				prev := uint32(0)
				for j, v := range out {
					out[j] = v - prev + 1
					prev = v
				}
			} else {
				for j := range out {
					out[j]++
				}
			}
		}
		return nil
	}
	pass := func() (float64, error) {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, threads)
		for t := 0; t < threads; t++ {
			wg.Add(1)
			go func(t int) {
				defer wg.Done()
				errs[t] = decode(nb*t/threads, nb*(t+1)/threads)
			}(t)
		}
		wg.Wait()
		return time.Since(start).Seconds(), errors.Join(errs...)
	}
	var times []float64
	for start := time.Now(); len(times) < 3 || time.Since(start) < minTime; {
		s, err := pass()
		if err != nil {
			return DecodeResult{}, dst, err
		}
		times = append(times, s)
	}
	if !opt.NoVerify {
		for _, cp := range []int{0, copies - 1} {
			shift := uint32(0)
			if opt.Mode == Docs {
				shift = uint32(cp%tiles) * pool.span
			}
			for i, v := range pool.vals {
				if got := dst[cp*P+i]; got != v+shift {
					return DecodeResult{}, dst, fmt.Errorf("CPU: value %d of copy %d is %d, want %d", i, cp, got, v+shift)
				}
			}
		}
	}
	r := DecodeResult{
		Device: fmt.Sprintf("CPU (%d threads)", threads), Codec: codec.Name(), Kernel: "cpu", Mode: opt.Mode,
		Length: L, Lists: lists, Ints: ints, Blocks: nb, EncodedBytes: int64(pb) * int64(copies), Seconds: median(times),
	}
	r.BitsPerInt = 8 * float64(r.EncodedBytes) / float64(ints)
	r.IntsPerSec = float64(ints) / r.Seconds
	r.BytesMoved = r.EncodedBytes + 20*int64(nb) + 4*ints
	return r, dst, nil
}
