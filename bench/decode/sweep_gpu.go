package decode

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
)

// The GPU part of the decoding sweep (BenchDecode; see sweep.go for what
// is measured): per list length, plan the launch's layout, upload rotated
// copies of the inputs, time the kernel with CUDA events, verify, report.

// MeasureCopyBandwidth times device-to-device copies of n bytes
// (cuMemcpyDtoDAsync, median of 10 after a warm-up) and returns the bytes
// read plus written per second.
func MeasureCopyBandwidth(c *cuda.Context, n int) (float64, error) {
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
func timeLaunches(c *cuda.Context, s *cuda.Stream, reps int, launch func(rep int) error) ([]float64, error) {
	evs := make([]*cuda.Event, 2*reps)
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
		d, err := cuda.Elapsed(evs[2*r], evs[2*r+1])
		if err != nil {
			return nil, err
		}
		times[r] = d.Seconds()
	}
	return times, nil
}

// BenchDecode measures the GPU decoding of lists of each length of lengths
// encoded with codec (see sweep.go). It returns one result per length;
// Progress, when set, sees each as it is measured.
func BenchDecode(c *cuda.Context, codec compress.Codec, lengths []int, opt BenchOptions) ([]DecodeResult, error) {
	opt.defaults()
	k, err := kern.Load(c)
	if err != nil {
		return nil, err
	}
	dk, err := k.DecodeKernel(codec.ID(), opt.Kernel, opt.Mode)
	if err != nil {
		return nil, fmt.Errorf("%w (codec %s)", err, codec.Name())
	}
	if opt.CopyBW == 0 {
		if opt.CopyBW, err = MeasureCopyBandwidth(c, 512<<20); err != nil {
			return nil, err
		}
	}
	var out []DecodeResult
	for _, L := range lengths {
		r, err := benchOne(c, dk, codec, L, opt)
		if err != nil {
			return out, fmt.Errorf("decode: BenchDecode %s, length %d: %w", codec.Name(), L, err)
		}
		if opt.Progress != nil {
			opt.Progress(r)
		}
		out = append(out, r)
	}
	return out, nil
}

// sweepLayout is one launch of the sweep for list length L: copies of the
// pool (P values, tiles per list, lists per launch), nb blocks, ints
// values, and the host offsets and bases of one set of device inputs.
type sweepLayout struct {
	pool                     benchPool
	L, P, tiles, lists       int
	copies, nb, pb, srcBytes int
	ints                     int64
	srcOff, outOff           []uint64
	base                     []uint32
}

// planSweep builds the pool of length L and the launch's layout (the
// encoded pool repeated, each tile of a list shifted by the pool's span).
func planSweep(codec compress.Codec, L int, opt BenchOptions) (*sweepLayout, error) {
	rng := rand.New(rand.NewSource(opt.Seed + int64(L)))
	P := min(L, opt.PoolInts)
	if L > P {
		L = (L + P - 1) / P * P
	}
	l := &sweepLayout{pool: makePool(codec, rng, P, L, opt.Docs, opt.Mode), L: L, P: P}
	l.tiles = L / P
	l.lists = max(1, opt.BatchInts/L)
	l.copies = l.tiles * l.lists
	l.nb = l.copies * l.pool.blocks
	l.ints = int64(l.copies) * int64(P)
	l.pb = len(l.pool.enc)
	l.srcBytes = l.copies * l.pb
	if l.ints > math.MaxInt32 || l.nb > math.MaxInt32 {
		return nil, fmt.Errorf("%d values per launch is too many", l.ints)
	}
	l.srcOff = make([]uint64, l.nb+1)
	l.outOff = make([]uint64, l.nb+1)
	l.base = make([]uint32, l.nb)
	for cp := 0; cp < l.copies; cp++ {
		shift := uint32(cp%l.tiles) * l.pool.span
		for b := 0; b < l.pool.blocks; b++ {
			i := cp*l.pool.blocks + b
			l.srcOff[i] = uint64(cp*l.pb) + l.pool.off[b]
			l.outOff[i] = uint64(cp*P + b*kern.MaxBlockValues)
			l.base[i] = l.pool.base[b] + shift
		}
	}
	l.srcOff[l.nb] = uint64(l.srcBytes)
	l.outOff[l.nb] = uint64(l.ints)
	return l, nil
}

// benchSet is one copy of the device inputs and output of a launch.
type benchSet struct{ src, srcOff, outOff, base, out, status *cuda.Buffer }

func (s *benchSet) free() {
	for _, b := range []*cuda.Buffer{s.src, s.srcOff, s.outOff, s.base, s.out, s.status} {
		if b != nil {
			_ = b.Free()
		}
	}
}

func freeSets(sets []benchSet) {
	for i := range sets {
		sets[i].free()
	}
}

// uploadSets allocates the rotated copies of l's device inputs (their
// inputs span 3 L2s, at most 16 copies and a quarter of the device's free
// memory), uploads set 0 and copies it to the others, and sets every
// status word to all ones. The caller frees the sets, also on error.
func uploadSets(c *cuda.Context, s *cuda.Stream, l *sweepLayout) ([]benchSet, error) {
	in := int64(l.srcBytes) + 20*int64(l.nb)
	nsets := int(min(16, max(1, (3*int64(c.Device().L2Bytes)+in-1)/in)))
	if free, _, err := c.MemInfo(); err == nil {
		foot := in + 4*l.ints
		nsets = int(max(1, min(int64(nsets), int64(free)/4/foot)))
	}
	sets := make([]benchSet, nsets)
	for i := range sets {
		if err := allocSet(c.Pool(), &sets[i], l); err != nil {
			return sets, err
		}
		var err error
		if i == 0 {
			err = uploadFirst(c, s, &sets[0], l)
		} else {
			err = copySet(s, &sets[i], &sets[0])
		}
		if err != nil {
			return sets, err
		}
		if err := s.Fill32(sets[i].status, 0, math.MaxUint32, 2); err != nil {
			return sets, err
		}
	}
	return sets, s.Synchronize()
}

func allocSet(p *cuda.Pool, st *benchSet, l *sweepLayout) error {
	for _, g := range []struct {
		dst   **cuda.Buffer
		bytes int
	}{{&st.src, l.srcBytes}, {&st.srcOff, 8 * (l.nb + 1)}, {&st.outOff, 8 * (l.nb + 1)},
		{&st.base, 4 * l.nb}, {&st.out, 4 * int(l.ints)}, {&st.status, 8}} {
		var err error
		if *g.dst, err = p.Get(g.bytes); err != nil {
			return err
		}
	}
	return nil
}

// uploadFirst uploads the pool once and the offsets and bases, then
// doubles the pool on the device up to every copy.
func uploadFirst(c *cuda.Context, s *cuda.Stream, st *benchSet, l *sweepLayout) error {
	if err := cuda.CopyToDevice(st.src, 0, l.pool.enc); err != nil {
		return err
	}
	for _, err := range []error{cuda.CopyToDevice(st.srcOff, 0, l.srcOff), cuda.CopyToDevice(st.outOff, 0, l.outOff),
		cuda.CopyToDevice(st.base, 0, l.base), c.Synchronize()} {
		if err != nil {
			return err
		}
	}
	for done := 1; done < l.copies; {
		n := min(done, l.copies-done)
		if err := s.CopyDevice(st.src, done*l.pb, st.src, 0, n*l.pb); err != nil {
			return err
		}
		done += n
	}
	return nil
}

func copySet(s *cuda.Stream, st, s0 *benchSet) error {
	for _, p := range [][2]*cuda.Buffer{{st.src, s0.src}, {st.srcOff, s0.srcOff}, {st.outOff, s0.outOff}, {st.base, s0.base}} {
		if err := s.CopyDevice(p[0], 0, p[1], 0, p[1].Len()); err != nil {
			return err
		}
	}
	return nil
}

// benchOne measures one list length: plan, upload, time the whole launch
// and (when it batches lists) a single list's, verify, report.
func benchOne(c *cuda.Context, dk kern.DecodeKernel, codec compress.Codec, L int, opt BenchOptions) (DecodeResult, error) {
	l, err := planSweep(codec, L, opt)
	if err != nil {
		return DecodeResult{}, err
	}
	s, err := c.NewStream()
	if err != nil {
		return DecodeResult{}, err
	}
	defer s.Destroy()
	sets, err := uploadSets(c, s, l)
	defer freeSets(sets)
	if err != nil {
		return DecodeResult{}, err
	}
	launch := func(set, blocks int) error {
		st := &sets[set]
		a := kern.DecodeArgs{NBlocks: blocks, Mode: opt.Mode, Src: st.src, SrcOff: st.srcOff, OutOff: st.outOff,
			Out: st.out, Status: st.status, Chunk: opt.Chunk}
		if opt.Mode == kern.Docs || dk.Baseline() {
			a.Base = st.base
		}
		return dk.Enqueue(s, a)
	}
	nsets := len(sets)
	times, err := timeLaunches(c, s, opt.Reps, func(r int) error { return launch(r%nsets, l.nb) })
	if err != nil {
		return DecodeResult{}, err
	}
	single := times
	if l.lists > 1 {
		if single, err = timeLaunches(c, s, opt.Reps, func(r int) error { return launch(r%nsets, l.tiles*l.pool.blocks) }); err != nil {
			return DecodeResult{}, err
		}
	}
	if err := verifySets(sets, dk, codec, l, opt); err != nil {
		return DecodeResult{}, err
	}
	r := DecodeResult{
		Device: c.Device().Name, Codec: codec.Name(), Kernel: dk.Name(), Mode: opt.Mode, Length: l.L, Lists: l.lists,
		Ints: l.ints, Blocks: l.nb, EncodedBytes: int64(l.srcBytes), Seconds: median(times), SingleSeconds: median(single),
		CopyBW: opt.CopyBW,
	}
	r.BitsPerInt = 8 * float64(r.EncodedBytes) / float64(l.ints)
	r.IntsPerSec = float64(l.ints) / r.Seconds
	r.SingleIntsPerSec = float64(l.tiles*l.P) / r.SingleSeconds
	r.BytesMoved = r.EncodedBytes + 20*int64(l.nb) + 4*l.ints
	r.BandwidthFrac = float64(r.BytesMoved) / r.Seconds / r.CopyBW
	return r, nil
}

// verifySets checks that every launch succeeded (status words) and, unless
// opt.NoVerify, that the first and last copies of the last launch's output
// equal the pool's values.
func verifySets(sets []benchSet, dk kern.DecodeKernel, codec compress.Codec, l *sweepLayout, opt BenchOptions) error {
	for i := range sets {
		var st [1]uint64
		if err := cuda.CopyFromDevice(st[:], sets[i].status, 0); err != nil {
			return err
		}
		if st[0] != math.MaxUint64 {
			if dk.Baseline() {
				return kern.BP128StatusError(st[0])
			}
			return kern.DecodeStatusError(codec.Name(), st[0])
		}
	}
	if opt.NoVerify {
		return nil
	}
	got := make([]uint32, l.P)
	for _, cp := range []int{0, l.copies - 1} {
		if err := cuda.CopyFromDevice(got, sets[(opt.Reps-1)%len(sets)].out, 4*cp*l.P); err != nil {
			return err
		}
		shift := uint32(0)
		if opt.Mode == kern.Docs {
			shift = uint32(cp%l.tiles) * l.pool.span
		}
		for i, v := range l.pool.vals {
			if got[i] != v+shift {
				return fmt.Errorf("kernel %s: value %d of copy %d is %d, want %d", dk.Name(), i, cp, got[i], v+shift)
			}
		}
	}
	return nil
}
