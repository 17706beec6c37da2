//go:build !unix

package index

import "os"

// processAlive reports whether a process with this id exists (on Windows,
// os.FindProcess opens the process and fails when there is none).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
