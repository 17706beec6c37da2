package scheduler

import (
	"math"
	"time"
)

// Core budget of the hybrid setups (issue 24). A GPU backend is not free
// for the host: it prepares queries, feeds the device and converts results
// on host cores, and the dispatcher and the query submitter are host
// goroutines too. GPU alone has every core for that. CPU+GPU with one CPU
// slot per core leaves none: the busy CPU slots slow the GPU's host side
// (and the dispatcher) by time-sharing, and the hybrid can serve fewer
// queries than the GPU alone (the simulation's host-contention model
// reproduces it: sim_test.go, TestSimHostContention). So the hybrid's CPU
// gets only the cores the GPU side leaves: CPU+GPU is then the GPU alone
// plus a CPU of fewer cores, never less than the GPU alone.

// HostCores is the mean number of cores the process used while f ran: its
// CPU time (user + system, all goroutines) over f's wall time. ok is false
// where the process CPU time is not available, or f took no time.
func HostCores(f func() error) (cores float64, ok bool, err error) {
	c0, ok0 := processCPUTime()
	start := time.Now()
	err = f()
	wall := time.Since(start)
	c1, ok1 := processCPUTime()
	if !ok0 || !ok1 || wall <= 0 {
		return 0, false, err
	}
	return float64(c1-c0) / float64(wall), true, err
}

// HybridCPUSlots is the number of CPU slots CPU+GPU runs with: the CPU's
// slots alone (one per core) less the cores the GPU's host side was
// measured to use at full load (gpuHostCores, rounded up) and one for the
// dispatcher and the submitter; 0 when none is left (CPU+GPU is then the
// GPU alone). With gpuHostCores unknown (< 0) only the dispatcher's core is
// reserved.
func HybridCPUSlots(cpuSlots int, gpuHostCores float64) int {
	reserve := 1
	if gpuHostCores > 0 {
		reserve += int(math.Ceil(gpuHostCores - 0.05)) // 1.02 cores of a busy feeder is one core
	}
	return max(cpuSlots-reserve, 0)
}

// hybridCPUSlots resolves Experiment.HybridCPUSlots given the GPU's
// measured host cores (-1: not measured).
func (e *Experiment) hybridCPUSlots(gpuHostCores float64) int {
	n := max(e.CPU.Slots, 1)
	switch {
	case e.HybridCPUSlots > 0:
		return e.HybridCPUSlots
	case e.HybridCPUSlots < 0 || gpuHostCores < 0:
		return n
	}
	return HybridCPUSlots(n, gpuHostCores)
}
