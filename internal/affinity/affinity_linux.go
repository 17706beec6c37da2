package affinity

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Allowed returns the CPUs the calling thread may run on (the process's
// unless a thread was pinned), ascending.
func Allowed() ([]int, error) {
	var m unix.CPUSet
	if err := unix.SchedGetaffinity(0, &m); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	return cpus(&m), nil
}

// ThreadCPUs returns the CPUs thread tid may run on, ascending.
func ThreadCPUs(tid int) ([]int, error) {
	var m unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &m); err != nil {
		return nil, fmt.Errorf("sched_getaffinity(%d): %w", tid, err)
	}
	return cpus(&m), nil
}

func cpus(m *unix.CPUSet) []int {
	var out []int
	for c := 0; c < len(m)*64; c++ {
		if m.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// Pin pins thread tid (of this process) to cpu and every other thread of
// the process to the calling thread's CPUs less cpu, and returns those
// CPUs. The calling thread must not be tid, and its CPUs must hold cpu
// and at least one other. Threads are read from /proc/self/task until a
// pass finds none not yet set (a thread started during a pass by one not
// yet set may have the old mask); one that exits meanwhile is skipped.
func Pin(tid, cpu int) (rest []int, err error) {
	if tid == unix.Gettid() {
		panic("BUG: affinity.Pin called on the thread it pins")
	}
	var all, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	if cpu < 0 || cpu >= len(all)*64 || !all.IsSet(cpu) {
		return nil, fmt.Errorf("CPU %d is not one this process may run on (%s)", cpu, List(cpus(&all)))
	}
	others := all
	others.Clear(cpu)
	if others.Count() == 0 {
		return nil, fmt.Errorf("CPU %d is the only one this process may run on", cpu)
	}
	one.Set(cpu)
	if err := unix.SchedSetaffinity(tid, &one); err != nil {
		return nil, fmt.Errorf("sched_setaffinity(thread %d, CPU %d): %w", tid, cpu, err)
	}
	if err := setOthers(tid, &others); err != nil {
		return nil, err
	}
	return cpus(&others), nil
}

// Unpin gives every thread of the process the CPUs cpus (Pin's undoing,
// for tests).
func Unpin(cpus []int) error {
	var m unix.CPUSet
	for _, c := range cpus {
		m.Set(c)
	}
	return setOthers(-1, &m)
}

// setOthers sets the mask m on every thread of the process but skip.
func setOthers(skip int, m *unix.CPUSet) error {
	done := map[int]bool{skip: true}
	for pass := 0; pass < 10; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("the process's threads: %w", err)
		}
		fresh := 0
		for _, e := range ents {
			t, err := strconv.Atoi(e.Name())
			if err != nil || done[t] {
				continue
			}
			done[t] = true
			fresh++
			if err := unix.SchedSetaffinity(t, m); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("sched_setaffinity(thread %d): %w", t, err)
			}
		}
		if fresh == 0 {
			return nil
		}
	}
	return errors.New("the process's threads kept changing while their CPUs were set")
}
