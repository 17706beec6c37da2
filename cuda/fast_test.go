package cuda

import (
	"reflect"
	"runtime"
	"testing"
	"unsafe"
)

// streamFixture returns the test GPU's Context with a stream, an event, 64
// bytes of device memory and 64 of pinned host memory, freed at the test's
// end.
func streamFixture(t *testing.T) (*Context, *Stream, *Event, *Buffer, *HostBuffer) {
	t.Helper()
	c := gpu(t)
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Destroy() })
	e, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Destroy() })
	d, err := c.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Free() })
	h, err := c.AllocHost(64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Free() })
	return c, s, e, d, h
}

// TestFastCalls: the hot driver calls through fast.go reach the driver
// (an event recorded after a fill and an async copy orders them: the copy
// lands), are counted, are timed only while SetDriverTiming is on, and do
// allocate at most their argument block.
func TestFastCalls(t *testing.T) {
	c, s, e, d, h := streamFixture(t)
	c.SetDriverTiming(false)
	s0 := c.DriverStats()
	if err := s.Fill32(d, 0, 0xdeadbeef, 16); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyFromDevice(h, 0, d, 0, 64); err != nil {
		t.Fatal(err)
	}
	if err := e.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := e.Synchronize(); err != nil {
		t.Fatal(err)
	}
	s1 := c.DriverStats()
	if s1.Calls-s0.Calls != 4 || s1.Time != s0.Time {
		t.Fatalf("4 untimed hot calls: stats went from %+v to %+v", s0, s1)
	}
	for i, w := range HostSlice[uint32](h) {
		if w != 0xdeadbeef {
			t.Fatalf("word %d after fill and copy: %#x", i, w)
		}
	}
	c.SetDriverTiming(true)
	defer c.SetDriverTiming(false)
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if s2 := c.DriverStats(); s2.Calls != s1.Calls+1 || s2.Time <= s1.Time {
		t.Fatalf("a timed call: stats went from %+v to %+v", s1, s2)
	}
	err := c.Do(func() error {
		allocs := testing.AllocsPerRun(50, func() {
			if r := c.cuEventRecord(e.h, s.h); r != 0 {
				t.Fatalf("cuEventRecord: %d", r)
			}
		})
		// One: SyscallN's variadic argument block, which its
		// //go:uintptrescapes makes escape.
		if allocs > 1 {
			t.Errorf("a fast driver call allocates %.1f times, want at most 1", allocs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkDriverCall: one cuEventRecord on the owner goroutine through
// purego's reflection-based RegisterFunc wrapper (driver.go) and through
// SyscallN on the symbol (fast.go).
func BenchmarkDriverCall(b *testing.B) {
	c := gpu(b)
	s, err := c.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Destroy()
	e, err := c.NewEvent()
	if err != nil {
		b.Fatal(err)
	}
	defer e.Destroy()
	for _, v := range []struct {
		name string
		f    func() int32
	}{
		{"registered", func() int32 { return drv.cuEventRecord(e.h, s.h) }},
		{"syscalln", func() int32 { return c.cuEventRecord(e.h, s.h) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			_ = c.Do(func() error {
				for b.Loop() {
					if r := v.f(); r != 0 {
						b.Fatalf("cuEventRecord: %d", r)
					}
				}
				return nil
			})
		})
	}
}

// TestStreamSyncIdle: Stream.Synchronize makes no driver call when no
// work was enqueued since the last one, and waits again after any enqueue.
func TestStreamSyncIdle(t *testing.T) {
	c := gpu(t)
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	buf, err := c.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	calls := func(f func() error) int64 {
		t.Helper()
		c0 := c.DriverStats().Calls
		if err := f(); err != nil {
			t.Fatal(err)
		}
		return c.DriverStats().Calls - c0
	}
	fill := func() error { return s.Fill32(buf, 0, 7, 16) }
	if n := calls(fill) + calls(s.Synchronize); n != 2 {
		t.Errorf("fill and wait: %d driver calls, want 2", n)
	}
	if n := calls(s.Synchronize); n != 0 {
		t.Errorf("wait on an idle stream: %d driver calls, want 0", n)
	}
	if n := calls(fill) + calls(s.Synchronize) + calls(s.Synchronize); n != 2 {
		t.Errorf("fill and two waits: %d driver calls, want 2", n)
	}
}

// BenchmarkLaunchFields: one LaunchFields of a kernel that does nothing
// (qp_query_scan_partials_u32 over no partials, one thread) from the
// owner goroutine: the host cost of a launch (on the emulator, its
// kernel call included). The parameters are staged in the Context's
// arena, with no runtime.Pinner and no allocation but Do's closure.
func BenchmarkLaunchFields(b *testing.B) {
	c := gpu(b)
	fb, err := c.Fatbin()
	if err != nil {
		b.Fatal(err)
	}
	f, err := fb.Function("qp_query_scan_partials_u32")
	if err != nil {
		b.Fatal(err)
	}
	s, err := c.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Destroy()
	part, err := c.Alloc(16)
	if err != nil {
		b.Fatal(err)
	}
	defer part.Free()
	p := struct {
		Part DevicePtr
		NP   uint32
	}{part.Ptr(), 0}
	one := Dim3{X: 1, Y: 1, Z: 1}
	for _, v := range []struct {
		name   string
		launch func() error
	}{
		{"arena", func() error { return LaunchFields(f, one, one, 0, s, &p) }},
		{"pinned", func() error { return launchFieldsPinned(f, one, one, 0, s, &p) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			err := c.Do(func() error {
				for b.Loop() {
					if err := v.launch(); err != nil {
						return err
					}
				}
				return s.Synchronize()
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// launchFieldsPinned is LaunchFields as it was before the arena (gpuhost2):
// the pointers into *p and their array pinned by runtime.Pinner.
func launchFieldsPinned[P any](f *Function, grid, block Dim3, sharedMem int, s *Stream, p *P) error {
	offs := fieldOffsets(reflect.TypeFor[P]())
	var pinner runtime.Pinner
	defer pinner.Unpin()
	pinner.Pin(p)
	ptrs := make([]unsafe.Pointer, len(offs))
	for i, off := range offs {
		ptrs[i] = unsafe.Add(unsafe.Pointer(p), off)
	}
	pinner.Pin(&ptrs[0])
	return f.launch(grid, block, sharedMem, s, unsafe.Pointer(&ptrs[0]))
}

// TestPollWait: with SetPollWait the stream and event waits poll
// (cuStreamQuery, cuEventQuery: the emulator answers "not ready" every
// other call, so the loop runs) and still order the work before them: a
// fill and a copy land; each wait counts one driver call.
func TestPollWait(t *testing.T) {
	c, s, e, d, h := streamFixture(t)
	c.SetPollWait(true)
	defer c.SetPollWait(false)
	for round, v := range []uint32{0xfeedface, 0x01234567, 0x89abcdef} {
		c0 := c.DriverStats().Calls
		if err := s.Fill32(d, 0, v, 16); err != nil {
			t.Fatal(err)
		}
		if err := s.CopyFromDevice(h, 0, d, 0, 64); err != nil {
			t.Fatal(err)
		}
		wait := s.Synchronize
		if round%2 == 1 {
			if err := e.Record(s); err != nil {
				t.Fatal(err)
			}
			wait = e.Synchronize
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		want := int64(3 + round%2)
		if n := c.DriverStats().Calls - c0; n != want {
			t.Errorf("round %d: %d driver calls, want %d (a poll counts one)", round, n, want)
		}
		for i, w := range HostSlice[uint32](h) {
			if w != v {
				t.Fatalf("round %d: word %d after fill, copy and a polled wait: %#x, want %#x", round, i, w, v)
			}
		}
	}
}
