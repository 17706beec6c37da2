//go:build !unix

package scheduler

import "time"

// processCPUTime is unknown here (no getrusage).
func processCPUTime() (time.Duration, bool) { return 0, false }
