package scheduler

import "testing"

// TestSimGPUFirstIndependent: two simulated processors of independent
// capacity (no shared cores, a free dispatcher): the GPU-first hybrid
// sustains at least 0.9 of the sum of their rates alone and never less
// than the better, for a GPU about as fast as the CPU and one about 5×
// faster.
func TestSimGPUFirstIndependent(t *testing.T) {
	for _, fast := range []bool{false, true} {
		if fast && testing.Short() {
			continue
		}
		t.Run(map[bool]string{false: "even", true: "fast-gpu"}[fast], func(t *testing.T) {
			e := simWorkload(t)
			if fast {
				fastGPU(e)
			}
			r := simRates(t, e, CPUOnly, GPUOnly, ParallelGPUFirst)
			checkHybrid(t, r, ParallelGPUFirst, 1, 0.9)
		})
	}
}
