//go:build unix

package cputime

import (
	"testing"
	"time"
)

// TestProcessGrows: the CPU time is known, and spinning 50 ms of wall time
// on one goroutine adds at least a millisecond to it.
func TestProcessGrows(t *testing.T) {
	c0, ok := Process()
	if !ok {
		t.Fatal("CPU time unknown on a unix system")
	}
	x := 0
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	c1, ok := Process()
	if !ok || c1-c0 < time.Millisecond {
		t.Fatalf("CPU time %v then %v (known %v) after 50 ms of spinning (%d steps)", c0, c1, ok, x)
	}
}
