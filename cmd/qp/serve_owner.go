package main

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/internal/affinity"
)

// parseOwnerCPU reads qp serve --owner-cpu (off, auto or a CPU number)
// against the CPUs the process may run on: affinity.Off, or the CPU.
func parseOwnerCPU(v string) (int, error) {
	if v == "off" || v == "" {
		return affinity.Off, nil
	}
	allowed, err := affinity.Allowed()
	if err != nil {
		return 0, fmt.Errorf("--owner-cpu %s: %w", v, err)
	}
	return affinity.ParseCPU(v, allowed)
}

// tuneOwner applies qp serve's --owner-cpu (cpu, or affinity.Off),
// --owner-poll and --gpu-profile to e's GPU (issue 25: the served
// batch's device phase against the same batch run alone). Pinning the
// owner thread moves every other thread of the process off its CPU
// (affinity.Pin); GOMAXPROCS is then fixed at its value (the process's
// CPU count unless GOMAXPROCS was set): the Go runtime would otherwise
// lower it to the others' count on its next check of the CPU mask, and
// the owner's goroutine needs a P of its own among them when it runs.
func tuneOwner(e *qp.Engine, cpu int, poll, profile bool) error {
	g := e.GPU()
	if cpu == affinity.Off && !poll && !profile {
		return nil
	}
	if g == nil {
		return errors.New("--owner-cpu, --owner-poll and --gpu-profile need a GPU (--device gpu or auto); this server runs on the CPU")
	}
	if profile {
		g.SetProfile(true)
	}
	if poll {
		g.SetPollWait(true)
	}
	if cpu == affinity.Off {
		return nil
	}
	// Fixed first (a call with any value turns the runtime's automatic
	// updates off), so that no update reads the mask Pin sets.
	procs := runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rest, err := affinity.Pin(g.OwnerThread(), cpu)
	if err != nil {
		return fmt.Errorf("--owner-cpu %d: %w", cpu, err)
	}
	fmt.Fprintf(stderr, "qp serve: the CUDA owner thread on CPU %d, the other threads on CPUs %s (GOMAXPROCS %d)\n",
		cpu, affinity.List(rest), procs)
	return nil
}
