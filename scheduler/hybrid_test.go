package scheduler

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"
)

func TestHybridCPUSlots(t *testing.T) {
	for _, c := range []struct {
		slots int
		host  float64
		want  int
	}{
		{16, -1, 15},   // not measured: the dispatcher's core only
		{16, 0, 15},    //
		{16, 1.02, 14}, // a busy feeder is one core
		{16, 2.5, 12},
		{16, 14.9, 0},
		{16, 40, 0},
		{1, 0.2, 0},
	} {
		if got := HybridCPUSlots(c.slots, c.host); got != c.want {
			t.Errorf("HybridCPUSlots(%d, %v) = %d, want %d", c.slots, c.host, got, c.want)
		}
	}
	for _, c := range []struct {
		set  int
		host float64
		want int
	}{
		{0, 3.2, 11}, {0, -1, 16}, {-1, 3.2, 16}, {5, 3.2, 5},
	} {
		e := &Experiment{CPU: Processor{Slots: 16}, HybridCPUSlots: c.set}
		if got := e.hybridCPUSlots(c.host); got != c.want {
			t.Errorf("Experiment.HybridCPUSlots %d, host cores %v: %d slots, want %d", c.set, c.host, got, c.want)
		}
	}
}

// TestHostCores: the process CPU time of a busy goroutine is counted, and
// f's error comes back. (The value depends on the machine's load; only
// its being measured and finite is asserted.)
func TestHostCores(t *testing.T) {
	cores, ok, err := HostCores(func() error {
		deadline := time.Now().Add(20 * time.Millisecond)
		x := 1.0
		for time.Now().Before(deadline) {
			x = math.Sqrt(x + 1)
		}
		if x < 0 {
			t.Error("unreachable")
		}
		return errTest
	})
	if err != errTest {
		t.Fatalf("error %v, want f's", err)
	}
	if runtime.GOOS == "linux" && !ok {
		t.Fatal("process CPU time not measured on linux")
	}
	if ok && !(cores > 0 && cores < float64(runtime.NumCPU())+1) {
		t.Fatalf("%v cores busy for one spinning goroutine", cores)
	}
}

var errTest = errors.New("test error")

func TestSplitCandidates(t *testing.T) {
	for _, c := range []struct {
		n, avg int
		want   []int
	}{
		{16, 11, []int{0, 3, 7, 11, 15}},
		{16, 9, []int{0, 3, 7, 9, 11, 15}},
		{16, 0, []int{0, 3, 7, 11, 15}},
		{2, 0, []int{0, 1}},
		{1, 0, []int{0}},
	} {
		if got := splitCandidates(c.n, c.avg); !slices.Equal(got, c.want) {
			t.Errorf("splitCandidates(%d, %d) = %v, want %v", c.n, c.avg, got, c.want)
		}
	}
}

// TestBestSplit: the highest rate wins, but more CPU slots must beat
// fewer by 2%.
func TestBestSplit(t *testing.T) {
	p := func(k, q int) SplitProbe { return SplitProbe{CPUSlots: k, GPUQueries: q, Elapsed: time.Second} }
	for _, c := range []struct {
		ps   []SplitProbe
		want int
	}{
		{[]SplitProbe{p(0, 1000), p(4, 1100), p(8, 1050)}, 4},
		{[]SplitProbe{p(0, 1000), p(4, 1010), p(8, 1015)}, 0}, // within the noise
		{[]SplitProbe{p(0, 1000), p(4, 900), p(8, 1030)}, 8},
		{[]SplitProbe{p(0, 1000)}, 0},
	} {
		if got := bestSplit(c.ps).CPUSlots; got != c.want {
			t.Errorf("bestSplit(%v) = %d CPU slots, want %d", c.ps, got, c.want)
		}
	}
}
