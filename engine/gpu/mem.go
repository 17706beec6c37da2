package gpu

import (
	"errors"

	"github.com/qpengine/qp/cuda"
)

// devMem hands out pooled device buffers for one launch set. A buffer is
// returned to the pool only when the stream is idle (after a
// synchronization): returned earlier, it could be handed to another user of
// the Context's pool while kernels of this stream still use it.
type devMem struct {
	pool    *cuda.Pool
	live    []*cuda.Buffer
	retired []*cuda.Buffer // free at the next synchronization
}

// get returns a buffer of at least bytes bytes (and at least 16).
func (m *devMem) get(bytes int) (*cuda.Buffer, error) {
	b, err := m.pool.Get(max(bytes, 16))
	if err != nil {
		return nil, err
	}
	m.live = append(m.live, b)
	return b, nil
}

// gets fills each *dst with a buffer of the matching size.
func (m *devMem) gets(dst []**cuda.Buffer, sizes ...int) error {
	for i, d := range dst {
		b, err := m.get(sizes[i])
		if err != nil {
			return err
		}
		*d = b
	}
	return nil
}

// retire marks buffers that no launch enqueued from now on uses: they are
// freed at the next synchronization.
func (m *devMem) retire(bs ...*cuda.Buffer) {
	for _, b := range bs {
		if b == nil {
			continue
		}
		for i, l := range m.live {
			if l == b {
				m.live[i] = m.live[len(m.live)-1]
				m.live = m.live[:len(m.live)-1]
				m.retired = append(m.retired, b)
				break
			}
		}
	}
}

// synced frees the retired buffers; call it right after a stream
// synchronization.
func (m *devMem) synced() error {
	var errs []error
	for _, b := range m.retired {
		errs = append(errs, b.Free())
	}
	m.retired = m.retired[:0]
	return errors.Join(errs...)
}

// release frees everything; the stream must be idle.
func (m *devMem) release() error {
	m.retired = append(m.retired, m.live...)
	m.live = m.live[:0]
	return m.synced()
}

// pinned is a growable page-locked host buffer used as a bump arena for the
// asynchronous copies of one phase. It is reset only when no copy from or
// to it is pending.
type pinned struct {
	ctx *cuda.Context
	h   *cuda.HostBuffer
	off int
}

// reset empties the arena and makes room for n bytes.
func (p *pinned) reset(n int) error {
	p.off = 0
	if p.h != nil && p.h.Len() >= n {
		return nil
	}
	// Double the old length (read before free drops it): an arena that
	// grows by a little each batch is reallocated O(log n) times, not
	// every batch (gpuplan2).
	size := max(n, 1<<16)
	if p.h != nil {
		size = max(size, 2*p.h.Len())
	}
	if err := p.free(); err != nil {
		return err
	}
	h, err := p.ctx.AllocHost(size)
	if err != nil {
		return err
	}
	p.h = h
	return nil
}

func (p *pinned) free() error {
	if p.h == nil {
		return nil
	}
	err := p.h.Free()
	p.h = nil
	return err
}

// room reports whether take(n) fits without a reset.
func (p *pinned) room(n int) bool {
	return p.h != nil && (p.off+15)&^15+n <= p.h.Len()
}

// take reserves n bytes at a 16-byte aligned offset and returns it.
func (p *pinned) take(n int) int {
	at := (p.off + 15) &^ 15
	if at+n > p.h.Len() {
		panic("BUG: gpu: pinned arena too small")
	}
	p.off = at + n
	return at
}

// u32 views n uint32 at byte offset at.
func (p *pinned) u32(at, n int) []uint32 { return cuda.HostSlice[uint32](p.h)[at/4 : at/4+n] }

// u64 views n uint64 at byte offset at (a multiple of 8).
func (p *pinned) u64(at, n int) []uint64 { return cuda.HostSlice[uint64](p.h)[at/8 : at/8+n] }

// layout assigns 16-byte aligned offsets to the parts of one transfer.
type layout struct{ size int }

func (l *layout) add(bytes int) int {
	at := (l.size + 15) &^ 15
	l.size = at + bytes
	return at
}

// Phases of the GPU time profile.
type phase int

const (
	phTransfer phase = iota
	phDecode
	phIntersect
	phScore
	phTopK
)

// timer records CUDA events around phases when profiling.
type timer struct {
	ctx   *cuda.Context
	on    bool
	evs   []*cuda.Event
	n     int
	spans []span
}

type span struct {
	a, b int
	ph   phase
}

func (t *timer) record(s *cuda.Stream) (int, error) {
	if t.n == len(t.evs) {
		e, err := t.ctx.NewEvent()
		if err != nil {
			return 0, err
		}
		t.evs = append(t.evs, e)
	}
	t.n++
	return t.n - 1, t.evs[t.n-1].Record(s)
}

// start marks the beginning of a phase (-1 when not profiling).
func (t *timer) start(s *cuda.Stream) int {
	if !t.on {
		return -1
	}
	i, err := t.record(s)
	if err != nil {
		return -1
	}
	return i
}

// stop marks the end of the phase begun at a.
func (t *timer) stop(s *cuda.Stream, a int, ph phase) {
	if !t.on || a < 0 {
		return
	}
	if b, err := t.record(s); err == nil {
		t.spans = append(t.spans, span{a, b, ph})
	}
}

// collect adds the recorded spans to p; the stream must be idle.
func (t *timer) collect(p *Profile) {
	for _, s := range t.spans {
		d, err := cuda.Elapsed(t.evs[s.a], t.evs[s.b])
		if err != nil {
			continue
		}
		switch s.ph {
		case phTransfer:
			p.Transfer += d
		case phDecode:
			p.Decode += d
		case phIntersect:
			p.Intersect += d
		case phScore:
			p.Score += d
		case phTopK:
			p.TopK += d
		}
	}
	t.spans = t.spans[:0]
	t.n = 0
}

// discard drops the recorded spans (after a failed set).
func (t *timer) discard() { t.spans, t.n = t.spans[:0], 0 }

func (t *timer) free() error {
	var errs []error
	for _, e := range t.evs {
		errs = append(errs, e.Destroy())
	}
	t.evs = nil
	return errors.Join(errs...)
}
