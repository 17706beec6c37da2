package main

import (
	"testing"

	"github.com/qpengine/qp/scheduler"
)

// TestCPUOnlyRun: --device cpu runs the cpu-only setup alone, and refuses
// a GPU setup or --diagnose; any other device is a GPU run.
func TestCPUOnlyRun(t *testing.T) {
	cpu := []scheduler.Setup{scheduler.CPUOnly}
	both := []scheduler.Setup{scheduler.CPUOnly, scheduler.ParallelGPUFirst}
	for _, c := range []struct {
		device  string
		setups  []scheduler.Setup
		diag    []int
		want    bool
		wantErr bool
	}{
		{"cpu", cpu, nil, true, false},
		{"cpu", both, nil, false, true},
		{"cpu", cpu, []int{16}, false, true},
		{"gpu", both, nil, false, false},
		{"auto", cpu, nil, false, false},
	} {
		got, err := cpuOnlyRun(c.device, c.setups, c.diag)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("cpuOnlyRun(%q, %v, %v) = %v, %v; want %v, error %v", c.device, c.setups, c.diag, got, err, c.want, c.wantErr)
		}
	}
}
