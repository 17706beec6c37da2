//go:build !unix

package main

// cpuSeconds is 0 where getrusage is not available.
func cpuSeconds() float64 { return 0 }
