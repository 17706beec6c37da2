//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process is the user plus system CPU time the process has used
// (getrusage(2), RUSAGE_SELF), and whether it is known.
func Process() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
