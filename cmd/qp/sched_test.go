package main

import (
	"runtime"
	"testing"

	"github.com/qpengine/qp/engine"
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

// TestPrepareAdapt: --prepare-adapt's values, and auto parking for OR only
// with the measured core cap unless --prepare-cores was given.
func TestPrepareAdapt(t *testing.T) {
	var a triFlag
	for _, c := range []struct {
		in   string
		want triFlag
	}{{"on", triOn}, {"true", triOn}, {"off", triOff}, {"false", triOff}, {"auto", triAuto}, {"AUTO", triAuto}} {
		if err := a.Set(c.in); err != nil || a != c.want {
			t.Errorf("Set(%q) = %v, %v; want %v", c.in, a, err, c.want)
		}
	}
	if err := a.Set("sometimes"); err == nil {
		t.Error("Set(sometimes) accepted")
	}
	if !a.IsBoolFlag() {
		t.Error("--prepare-adapt alone must mean on")
	}
	for _, c := range []struct {
		a         triFlag
		mode      engine.Mode
		cores     int
		set       bool
		park      bool
		wantCores int
	}{
		{triAuto, engine.Or, 0, false, true, min(autoPrepareCores, runtime.GOMAXPROCS(0))},
		{triAuto, engine.Or, 2, true, true, 2},
		{triAuto, engine.And, 0, false, false, 0},
		{triAuto, engine.AndOr, 3, true, false, 3},
		{triOn, engine.And, 0, false, true, 0},
		{triOff, engine.Or, 0, false, false, 0},
	} {
		park, cores := resolveAdapt(c.a, c.mode, c.cores, c.set)
		if park != c.park || cores != c.wantCores {
			t.Errorf("resolveAdapt(%v, %v, %d, %v) = %v, %d; want %v, %d", c.a.String(), c.mode, c.cores, c.set, park, cores, c.park, c.wantCores)
		}
	}
}
