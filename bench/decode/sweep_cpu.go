package decode

import (
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda/kern"
)

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
			return out, fmt.Errorf("decode: BenchDecodeCPU %s, length %d: %w", codec.Name(), L, err)
		}
		dst = d
		if opt.Progress != nil {
			opt.Progress(r)
		}
		out = append(out, r)
	}
	return out, nil
}

// cpuLaunch is one "launch" of the CPU sweep: copies of the encoded pool
// (materialized in src, unlike the GPU's rotated sets) decoded into dst.
type cpuLaunch struct {
	codec            compress.Codec
	pool             benchPool
	P, tiles, nb, pb int
	src              []byte
	dst              []uint32
	mode             kern.Mode
}

// decode decodes blocks [b0, b1) of the launch into dst as
// index.List.DecodeDocs / DecodeFreqs do, checking each block's count and
// (docIDs) last docID.
func (l *cpuLaunch) decode(b0, b1 int) error {
	sorted := l.codec.Kind() == compress.Sorted
	pool, P := &l.pool, l.P
	for i := b0; i < b1; i++ {
		cp, b := i/pool.blocks, i%pool.blocks
		s := l.src[cp*l.pb+int(pool.off[b]) : cp*l.pb+int(pool.off[b+1])]
		o := cp*P + b*kern.MaxBlockValues
		m := min(kern.MaxBlockValues, P-b*kern.MaxBlockValues)
		out := l.dst[o : o+m]
		n, err := l.codec.Decode(out, s)
		if err != nil {
			return err
		}
		if n != m {
			return fmt.Errorf("block %d: %d values, want %d", i, n, m)
		}
		if l.mode != kern.Docs {
			freqsOf(out, sorted)
			continue
		}
		base := pool.base[b] + uint32(cp%l.tiles)*pool.span
		docsOf(out, base, sorted)
		want := pool.vals[b*kern.MaxBlockValues+m-1] + uint32(cp%l.tiles)*pool.span
		if out[m-1] != want {
			return fmt.Errorf("block %d: last docID %d, want %d", i, out[m-1], want)
		}
	}
	return nil
}

// docsOf turns a decoded docID block into absolute docIDs from base.
func docsOf(out []uint32, base uint32, sorted bool) {
	if sorted {
		for j := range out {
			out[j] += base
		}
		return
	}
	d := base - 1
	for j, v := range out {
		d += v + 1
		out[j] = d
	}
}

// freqsOf turns a decoded frequency block into frequencies.
func freqsOf(out []uint32, sorted bool) {
	if sorted {
		prev := uint32(0)
		for j, v := range out {
			out[j] = v - prev + 1
			prev = v
		}
		return
	}
	for j := range out {
		out[j]++
	}
}

// pass decodes the whole launch once on threads goroutines, each taking a
// contiguous share of the blocks, and returns its wall time in seconds.
func (l *cpuLaunch) pass(threads int) (float64, error) {
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, threads)
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			errs[t] = l.decode(l.nb*t/threads, l.nb*(t+1)/threads)
		}(t)
	}
	wg.Wait()
	return time.Since(start).Seconds(), errors.Join(errs...)
}

// verify checks the first and last copies of dst against the pool.
func (l *cpuLaunch) verify(copies int) error {
	for _, cp := range []int{0, copies - 1} {
		shift := uint32(0)
		if l.mode == kern.Docs {
			shift = uint32(cp%l.tiles) * l.pool.span
		}
		for i, v := range l.pool.vals {
			if got := l.dst[cp*l.P+i]; got != v+shift {
				return fmt.Errorf("CPU: value %d of copy %d is %d, want %d", i, cp, got, v+shift)
			}
		}
	}
	return nil
}

// benchOneCPU measures one list length on the CPU (see BenchDecodeCPU); dst
// is reused across lengths.
func benchOneCPU(codec compress.Codec, L, threads int, minTime time.Duration, opt BenchOptions, dst []uint32) (DecodeResult, []uint32, error) {
	rng := rand.New(rand.NewSource(opt.Seed + int64(L)))
	P := min(L, opt.PoolInts)
	if L > P {
		L = (L + P - 1) / P * P
	}
	l := &cpuLaunch{codec: codec, pool: makePool(codec, rng, P, L, opt.Docs, opt.Mode), P: P, mode: opt.Mode}
	l.tiles = L / P
	lists := max(1, opt.BatchInts/L)
	copies := l.tiles * lists
	l.nb = copies * l.pool.blocks
	ints := int64(copies) * int64(P)
	l.pb = len(l.pool.enc)
	l.src = make([]byte, 0, copies*l.pb)
	for cp := 0; cp < copies; cp++ {
		l.src = append(l.src, l.pool.enc...)
	}
	if int64(cap(dst)) < ints {
		dst = make([]uint32, ints)
	}
	l.dst = dst[:ints]
	var times []float64
	for start := time.Now(); len(times) < 3 || time.Since(start) < minTime; {
		s, err := l.pass(threads)
		if err != nil {
			return DecodeResult{}, l.dst, err
		}
		times = append(times, s)
	}
	if !opt.NoVerify {
		if err := l.verify(copies); err != nil {
			return DecodeResult{}, l.dst, err
		}
	}
	r := DecodeResult{
		Device: fmt.Sprintf("CPU (%d threads)", threads), Codec: codec.Name(), Kernel: "cpu", Mode: opt.Mode,
		Length: L, Lists: lists, Ints: ints, Blocks: l.nb, EncodedBytes: int64(l.pb) * int64(copies), Seconds: median(times),
	}
	r.BitsPerInt = 8 * float64(r.EncodedBytes) / float64(ints)
	r.IntsPerSec = float64(ints) / r.Seconds
	r.BytesMoved = r.EncodedBytes + 20*int64(l.nb) + 4*ints
	return r, l.dst, nil
}
