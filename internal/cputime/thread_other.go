//go:build !linux

package cputime

import "time"

// Thread is unknown here (RUSAGE_THREAD is Linux's).
func Thread() (cpu time.Duration, involuntary int64, ok bool) { return 0, 0, false }

// ThreadRunDelay is unknown here (/proc/thread-self/schedstat is Linux's).
func ThreadRunDelay() (time.Duration, bool) { return 0, false }
