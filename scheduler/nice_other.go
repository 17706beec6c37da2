//go:build !linux

package scheduler

import "errors"

// lowerThreadPriority is Linux's (per-thread nice values); elsewhere a
// positive nice is an error.
func lowerThreadPriority(nice int) error {
	if nice <= 0 {
		return nil
	}
	return errors.New("scheduler: per-thread CPU priority needs Linux")
}

func threadNice() (int, error) { return 0, errors.New("scheduler: per-thread nice needs Linux") }
