package affinity

import (
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPin pins a locked thread (as the CUDA owner goroutine's) to the
// highest allowed CPU and reads the masks back: that thread has the CPU
// alone, the test's thread and a thread started afterwards the others;
// Unpin restores them.
func TestPin(t *testing.T) {
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("the process may run on %s only", List(allowed))
	}
	cpu, err := ParseCPU("auto", allowed)
	if err != nil {
		t.Fatal(err)
	}
	tids, stop := make(chan int), make(chan struct{})
	defer close(stop)
	lockedThread := func() int {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- unix.Gettid()
			<-stop
		}()
		return <-tids
	}
	owner := lockedThread()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rest, err := Pin(owner, cpu)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := Unpin(allowed); err != nil {
			t.Error(err)
		}
		if got, _ := ThreadCPUs(owner); !slices.Equal(got, allowed) {
			t.Errorf("after Unpin the pinned thread has %s, want %s", List(got), List(allowed))
		}
	}()
	want := slices.DeleteFunc(slices.Clone(allowed), func(c int) bool { return c == cpu })
	if !slices.Equal(rest, want) {
		t.Errorf("Pin's others %s, want %s", List(rest), List(want))
	}
	if got, err := ThreadCPUs(owner); err != nil || !slices.Equal(got, []int{cpu}) {
		t.Errorf("pinned thread's CPUs %s (%v), want %d", List(got), err, cpu)
	}
	if got, err := ThreadCPUs(unix.Gettid()); err != nil || !slices.Equal(got, want) {
		t.Errorf("the caller's CPUs %s (%v), want %s", List(got), err, List(want))
	}
	// A thread started now (by the runtime, from an unpinned thread)
	// inherits the others' mask.
	if got, err := ThreadCPUs(lockedThread()); err != nil || !slices.Equal(got, want) {
		t.Errorf("a new thread's CPUs %s (%v), want %s", List(got), err, List(want))
	}
	if _, err := Pin(owner, 1<<20); err == nil {
		t.Error("Pin to a CPU the process may not run on: no error")
	}
}
