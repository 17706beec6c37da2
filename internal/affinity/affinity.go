// Package affinity gives one OS thread a CPU of its own (issue 25: the
// CUDA owner goroutine's thread of a pipelined GPU server, which issues
// ~211 driver calls per launch set and waits on the stream, shares the
// host's cores with the HTTP path's tens of µs per request; when the
// kernel deschedules it, the batch's device phase, measured by the
// server, grows by the time it was off a CPU). Pin (Linux) pins the
// thread to the CPU and every other thread of the process to the rest of
// the process's CPUs (sched_setaffinity(2), golang.org/x/sys/unix: no
// cgo); threads started later inherit their creator's mask, and the Go
// runtime starts new threads from unpinned ones (a thread locked with
// runtime.LockOSThread asks the runtime's template thread to clone for
// it), so they stay off the CPU too.
package affinity

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Off is ParseCPU's answer for "" and "off": no pinning.
const Off = -1

// ParseCPU reads an --owner-cpu value against allowed, the CPUs the
// process may run on (ascending): "" or "off" is Off; "auto" the highest
// of allowed (the others keep the low-numbered CPUs, where taskset lists
// and interrupt affinities usually start); a number must be one of
// allowed. Pinning needs at least two allowed CPUs (one for the thread,
// one or more for the rest).
func ParseCPU(v string, allowed []int) (int, error) {
	switch v {
	case "", "off":
		return Off, nil
	}
	n := 0
	if v == "auto" {
		if len(allowed) > 0 {
			n = allowed[len(allowed)-1]
		}
	} else {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			return 0, fmt.Errorf("--owner-cpu %q: want auto, off or a CPU number", v)
		}
		if !slices.Contains(allowed, n) {
			return 0, fmt.Errorf("--owner-cpu %d: not a CPU this process may run on (%s)", n, List(allowed))
		}
	}
	if len(allowed) < 2 {
		return 0, fmt.Errorf("--owner-cpu %s: the process may run on %s only; a CPU of its own needs at least two", v, List(allowed))
	}
	return n, nil
}

// List writes cpus (ascending) as taskset -c does: "0-3,8,10-11".
func List(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		} else {
			b.WriteString(strconv.Itoa(cpus[i]))
		}
		i = j + 1
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}
