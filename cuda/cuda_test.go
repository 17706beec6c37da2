package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// The GPU tests share one Context on GPU 0. They skip (t.Skip, visible
// with -v) when Available says no GPU can be used, and fail when it says
// one can but it does not work.
var (
	testOnce sync.Once
	testCtx  *Context
	testErr  error
)

func gpu(t testing.TB) *Context {
	t.Helper()
	if ok, why := Available(); !ok {
		t.Skip("no usable GPU: " + why)
	}
	testOnce.Do(func() { testCtx, testErr = Open(0) })
	if testErr != nil {
		t.Fatalf("Available() said a GPU is usable, but Open(0): %v", testErr)
	}
	return testCtx
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testCtx != nil {
		if err := testCtx.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "cuda: Close: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func TestErrorText(t *testing.T) {
	e := &Error{Func: "cuMemAlloc_v2", Code: 2}
	if got, want := e.Error(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(fmt.Errorf("wrapped: %w", e), ErrOutOfMemory) {
		t.Error("an out-of-memory *Error does not match ErrOutOfMemory")
	}
	if errors.Is(&Error{Func: "cuMemAlloc_v2", Code: 1}, ErrOutOfMemory) {
		t.Error("CUDA_ERROR_INVALID_VALUE matches ErrOutOfMemory")
	}
	for code, name := range map[Result]string{0: "CUDA_SUCCESS", 100: "CUDA_ERROR_NO_DEVICE", 209: "CUDA_ERROR_NO_BINARY_FOR_GPU", 700: "CUDA_ERROR_ILLEGAL_ADDRESS", 999: "CUDA_ERROR_UNKNOWN"} {
		if got := code.Name(); got != name {
			t.Errorf("Result(%d).Name() = %q, want %q", code, got, name)
		}
	}
	if got := Result(123456).Name(); got != "CUDA_ERROR_123456" {
		t.Errorf("unknown code named %q", got)
	}
	for code, name := range resultNames {
		if !strings.HasPrefix(name, "CUDA_") {
			t.Errorf("code %d named %q", code, name)
		}
	}
}

func TestAvailable(t *testing.T) {
	ok, why := Available()
	if !ok {
		if !strings.Contains(why, "CPU backend") {
			t.Errorf("reason %q does not name the CPU fallback", why)
		}
		if _, err := Open(0); !errors.Is(err, ErrUnavailable) {
			t.Errorf("Open without a usable GPU: %v, want ErrUnavailable", err)
		}
		t.Skip("no usable GPU: " + why)
	}
	if why != "" {
		t.Errorf("usable, yet reason %q", why)
	}
}

func TestClassSize(t *testing.T) {
	prev := 0
	for n := 0; n < 1<<20; n += 1 + n/7 {
		c := classSize(n)
		if c < n || c < prev || classSize(c) != c {
			t.Fatalf("classSize(%d) = %d (previous %d, class of class %d)", n, c, prev, classSize(c))
		}
		if n > poolMinClass && 4*(c-n) >= n {
			t.Fatalf("classSize(%d) = %d wastes more than 25%%", n, c)
		}
		prev = c
	}
	if c := classSize(1 << 40); c != 1<<40 {
		t.Errorf("classSize(2^40) = %d", c)
	}
}

func TestPackParams(t *testing.T) {
	b := &Buffer{ptr: 0x7f0000001000}
	var nilBuf *Buffer
	got := packParams([]any{DevicePtr(5), b, nilBuf, uint32(7), int32(-1), uint64(1 << 40), int64(-2), float32(1.5), float64(-0.25)})
	want := []uint64{5, 0x7f0000001000, 0, 7, 0xffffffff, 1 << 40, 0xfffffffffffffffe, uint64(math.Float32bits(1.5)), math.Float64bits(-0.25)}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("slot %d = %#x, want %#x", i, got[i], want[i])
		}
	}
	// A 4-byte parameter is read from the slot's first 4 bytes.
	if v := *(*uint32)(unsafe.Pointer(&got[3])); v != 7 {
		t.Errorf("uint32 slot reads %d through a 4-byte load", v)
	}
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "BUG:") {
			t.Errorf("int argument: recover() = %v, want a BUG panic", r)
		}
	}()
	packParams([]any{1})
}

// TestParamStructs: LaunchFields passes each field of a struct of 4- and
// 8-byte numbers at its offset and rejects other fields; LaunchParams
// rejects a struct over the driver's parameter limit (no GPU needed: the
// checks come before the launch).
func TestParamStructs(t *testing.T) {
	type ok struct {
		A uint32
		P DevicePtr
		F float32
		B int32
		C uint64
	}
	offs := fieldOffsets(reflect.TypeFor[ok]())
	if want := []uintptr{0, 8, 16, 20, 24}; !slices.Equal(offs, want) {
		t.Errorf("field offsets %v, want %v", offs, want)
	}
	bug := func(what string, f func()) {
		t.Helper()
		defer func() {
			if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "BUG:") {
				t.Errorf("%s: recover() = %v, want a BUG panic", what, r)
			}
		}()
		f()
	}
	bug("int field", func() { fieldOffsets(reflect.TypeFor[struct{ N int }]()) })
	bug("pointer field", func() { fieldOffsets(reflect.TypeFor[struct{ P *int }]()) })
	bug("not a struct", func() { fieldOffsets(reflect.TypeFor[uint32]()) })
	bug("5 KiB of parameters", func() {
		var big [MaxParamBytes/4 + 1]uint32
		_ = LaunchParams(&Function{name: "k"}, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil, &big)
	})
}

func TestDevices(t *testing.T) {
	c := gpu(t)
	devs, err := Devices()
	if err != nil || len(devs) == 0 {
		t.Fatalf("Devices() = %v, %v", devs, err)
	}
	for _, d := range devs {
		t.Logf("device %s (clock %d MHz, memory clock %d MHz, bus %d bits, PCI %s)",
			d, d.ClockKHz/1000, d.MemClockKHz/1000, d.BusWidth, d.PCIBusID)
		if d.Name == "" || d.TotalMemory == 0 || d.SMs == 0 || d.Major == 0 || d.L2Bytes == 0 {
			t.Errorf("incomplete device info %+v", d)
		}
	}
	v, err := DriverVersion()
	t.Logf("driver supports CUDA %d.%d", v/1000, v%1000/10)
	if err != nil || v < 11000 {
		t.Errorf("DriverVersion() = %d, %v", v, err)
	}
	free, total, err := c.MemInfo()
	if err != nil || free == 0 || free > total {
		t.Errorf("MemInfo() = %d, %d, %v", free, total, err)
	}
}

func TestContextDo(t *testing.T) {
	c := gpu(t)
	var tids [8]int
	var wg sync.WaitGroup
	for i := range tids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Do(func() error {
				tids[i] = gettid()
				// Nested Do runs inline instead of deadlocking.
				return c.Do(func() error { return nil })
			})
		}()
	}
	wg.Wait()
	for i, tid := range tids {
		if tid != c.tid {
			t.Errorf("Do closure %d ran on thread %d, owner is %d", i, tid, c.tid)
		}
	}
	want := errors.New("x")
	if err := c.Do(func() error { return want }); err != want {
		t.Errorf("Do returned %v, want the closure's error", err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recover() = %v, want the closure's panic", r)
			}
		}()
		_ = c.Do(func() error { panic("boom") })
	}()
	if err := c.Do(func() error { return nil }); err != nil {
		t.Errorf("Do after a panicking closure: %v", err)
	}
}

func TestMemory(t *testing.T) {
	c := gpu(t)
	rng := rand.New(rand.NewSource(1))
	src := make([]uint32, 100003)
	for i := range src {
		src[i] = rng.Uint32()
	}
	b, err := c.Alloc(4 * len(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := CopyToDevice(b, 0, src); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, len(src)-1)
	if err := CopyFromDevice(got, b, 4); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != src[i+1] {
			t.Fatalf("round trip: value %d = %#x, want %#x", i, got[i], src[i+1])
		}
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}

	// Pool: a freed buffer is reused by a request of the same class.
	p := c.Pool()
	x, err := p.Get(1000)
	if err != nil {
		t.Fatal(err)
	}
	ptr := x.Ptr()
	if err := x.Free(); err != nil {
		t.Fatal(err)
	}
	s0 := p.Stats()
	y, err := p.Get(classSize(1000))
	if err != nil {
		t.Fatal(err)
	}
	if y.Ptr() != ptr || p.Stats().Reuses != s0.Reuses+1 {
		t.Errorf("pool did not reuse a freed buffer: %#x vs %#x, stats %+v", y.Ptr(), ptr, p.Stats())
	}
	_ = y.Free()

	// Out of memory is typed, from Alloc and from the pool.
	if _, err := c.Alloc(1 << 50); !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("Alloc(1 PiB): %v, want ErrOutOfMemory", err)
	} else {
		t.Logf("Alloc(1 PiB): %v", err)
	}
	if _, err := p.Get(1 << 50); !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("Pool.Get(1 PiB): %v, want ErrOutOfMemory", err)
	}

	// Pinned buffers, a stream, async copies, a fill and events.
	const n = 1 << 20
	h, err := c.AllocHost(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Free()
	hv := HostSlice[uint32](h)
	for i := range hv {
		hv[i] = uint32(i) * 2654435761
	}
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	e0, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer e0.Destroy()
	e1, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer e1.Destroy()
	d, err := p.Get(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free()
	steps := []func() error{
		func() error { return e0.Record(s) },
		func() error { return s.CopyToDevice(d, 0, h, 0, 4*n) },
		func() error { return s.Fill32(d, 4*10, 0xdeadbeef, 5) },
		func() error { return s.CopyFromDevice(h, 0, d, 0, 4*n) },
		func() error { return e1.Record(s) },
		e1.Synchronize,
	}
	for i, f := range steps {
		if err := f(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	for i, v := range hv {
		want := uint32(i) * 2654435761
		if i >= 10 && i < 15 {
			want = 0xdeadbeef
		}
		if v != want {
			t.Fatalf("async round trip: value %d = %#x, want %#x", i, v, want)
		}
	}
	el, err := Elapsed(e0, e1)
	if err != nil || el <= 0 || el > time.Second {
		t.Errorf("Elapsed = %v, %v", el, err)
	}
	t.Logf("4 MiB host→device + fill + device→host (pinned): %v (%.1f GB/s)", el, 8*n/el.Seconds()/1e9)
	if err := s.Synchronize(); err != nil {
		t.Error(err)
	}
}
