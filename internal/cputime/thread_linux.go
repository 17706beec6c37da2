//go:build linux

package cputime

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// rusageThread is getrusage(2)'s RUSAGE_THREAD (Linux).
const rusageThread = 1

// Thread is the calling OS thread's CPU time (user plus system) and its
// involuntary context switches (getrusage(2), RUSAGE_THREAD: the times it
// was descheduled while runnable), and whether they are known. The caller
// must be locked to its thread (runtime.LockOSThread) for two readings to
// describe the same thread.
func Thread() (cpu time.Duration, involuntary int64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nivcsw, true
}

// ThreadRunDelay is the time the calling OS thread has spent runnable but
// waiting for a CPU (the second field of /proc/thread-self/schedstat,
// kernels with CONFIG_SCHED_INFO), and whether it is known. It costs a
// file read (a few microseconds): for diagnostics, not hot paths.
func ThreadRunDelay() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ns), true
}
