//go:build !unix

package cputime

import "time"

// Process is unknown here (no getrusage).
func Process() (time.Duration, bool) { return 0, false }
