//go:build !linux

package affinity

import "errors"

var errUnsupported = errors.New("--owner-cpu: CPU affinity is supported on Linux only")

// Allowed is Linux only.
func Allowed() ([]int, error) { return nil, errUnsupported }

// ThreadCPUs is Linux only.
func ThreadCPUs(int) ([]int, error) { return nil, errUnsupported }

// Pin is Linux only.
func Pin(int, int) ([]int, error) { return nil, errUnsupported }

// Unpin is Linux only.
func Unpin([]int) error { return errUnsupported }
