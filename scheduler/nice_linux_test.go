//go:build linux

package scheduler

import "testing"

// TestLowerThreadPriority: a goroutine that lowers its thread's priority
// by 5 reads a nice value 5 above (at most 19) the one it had, and the
// test's own thread keeps its nice value.
func TestLowerThreadPriority(t *testing.T) {
	before, err := threadNice()
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		n   int
		err error
	}
	ch := make(chan res)
	go func() {
		if err := lowerThreadPriority(5); err != nil {
			ch <- res{err: err}
			return
		}
		n, err := threadNice()
		ch <- res{n, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	if want := min(before+5, 19); r.n != want {
		t.Fatalf("nice after lowering by 5: %d, want %d", r.n, want)
	}
	if n, _ := threadNice(); n != before {
		t.Fatalf("the test's thread: nice %d, want %d", n, before)
	}
	if err := lowerThreadPriority(0); err != nil {
		t.Fatalf("nice 0: %v", err)
	}
}
