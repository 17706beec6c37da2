//go:build linux

package scheduler

import (
	"fmt"
	"runtime"
	"syscall"
)

// lowerThreadPriority locks the calling goroutine to its OS thread and
// raises that thread's nice value by nice (setpriority(2) on the thread
// id: Linux applies PRIO_PROCESS with a thread id to that thread alone),
// so that the kernel prefers the process's other threads — the GPU side's
// owner thread, feeder and helpers — when more threads are runnable than
// there are cores (issue 24). The goroutine must not unlock its thread:
// the thread ends with it (LockOSThread without UnlockOSThread), and no
// other goroutine ever runs at the lowered priority. Raising a nice value
// needs no privilege.
func lowerThreadPriority(nice int) error {
	if nice <= 0 {
		return nil
	}
	runtime.LockOSThread()
	tid := syscall.Gettid()
	cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return fmt.Errorf("scheduler: getpriority of thread %d: %w", tid, err)
	}
	// The raw syscall returns 20 - nice.
	now := 20 - cur
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(now+nice, 19)); err != nil {
		return fmt.Errorf("scheduler: setpriority of thread %d to nice %d: %w", tid, min(now+nice, 19), err)
	}
	return nil
}

// threadNice is the calling thread's nice value.
func threadNice() (int, error) {
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	return 20 - p, err
}
