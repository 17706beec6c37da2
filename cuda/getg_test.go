package cuda

import (
	"runtime"
	"sync"
	"testing"
)

// TestGetg: getg is stable within a goroutine (across yields and stack
// growth), non-zero, and differs between live goroutines; onThread, which
// compares it with the owner's, holds on the owner of a fake Context only.
func TestGetg(t *testing.T) {
	me := getg()
	if me == 0 {
		t.Fatal("getg() = 0")
	}
	var grow func(int) uintptr
	grow = func(n int) uintptr { // deep recursion moves the stack
		var pad [256]byte
		if n == 0 {
			return getg() + uintptr(pad[0])
		}
		return grow(n - 1)
	}
	runtime.Gosched()
	if g := grow(200); g != me {
		t.Fatalf("getg changed within a goroutine: %#x, then %#x", me, g)
	}
	const n = 16
	var gs [n]uintptr
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	for i := range gs {
		ready.Add(1)
		done.Go(func() {
			gs[i] = getg()
			ready.Done()
			<-release // alive until every goroutine has read its g
		})
	}
	ready.Wait()
	close(release)
	done.Wait()
	seen := map[uintptr]bool{me: true}
	for i, g := range gs {
		if seen[g] {
			t.Fatalf("goroutine %d shares its getg %#x with another live goroutine", i, g)
		}
		seen[g] = true
	}
	c := &Context{g: me}
	if !c.onThread() {
		t.Error("onThread false on the owner goroutine")
	}
	other := make(chan bool)
	go func() { other <- c.onThread() }()
	if <-other {
		t.Error("onThread true on another goroutine")
	}
	c.dead.Store(true)
	if c.onThread() {
		t.Error("onThread true after the owner exited")
	}
}

// BenchmarkOwnerCheck: the owner check of every driver call, by the thread
// id (gettid, a system call: what onThread used) and by the goroutine
// (getg).
func BenchmarkOwnerCheck(b *testing.B) {
	b.Run("gettid", func(b *testing.B) {
		s := 0
		for b.Loop() {
			s += gettid()
		}
		sinkInt = s
	})
	b.Run("getg", func(b *testing.B) {
		var s uintptr
		for b.Loop() {
			s += getg()
		}
		sinkInt = int(s)
	})
}

var sinkInt int
