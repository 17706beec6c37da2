//go:build linux

package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestThreadGrows: spinning 30 ms on a locked thread adds at least a
// millisecond to that thread's CPU time; the run delay is known and does
// not decrease.
func TestThreadGrows(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, _, ok := Thread()
	d0, okd := ThreadRunDelay()
	if !ok || !okd {
		t.Fatalf("thread CPU time known %v, run delay known %v on Linux", ok, okd)
	}
	x := 0
	for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	c1, _, _ := Thread()
	d1, _ := ThreadRunDelay()
	if c1-c0 < time.Millisecond {
		t.Fatalf("thread CPU time %v then %v after 30 ms of spinning (%d steps)", c0, c1, x)
	}
	if d1 < d0 {
		t.Fatalf("run delay went back: %v then %v", d0, d1)
	}
}
