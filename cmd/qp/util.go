package main

import (
	"strings"

	"github.com/qpengine/qp/internal/fileguard"
)

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// guardOutputs refuses an output (the non-empty paths of outs: a bench's
// --csv, --plot or --cpuprofile) that is one of the command's inputs ins
// (its positional arguments: the index, the query log), under any name
// (fileguard.Same): nothing is written before the check.
func guardOutputs(ins []string, outs ...string) error {
	var guarded []fileguard.Output
	for _, o := range outs {
		if o != "" {
			guarded = append(guarded, fileguard.Output{Path: o})
		}
	}
	return fileguard.Check(guarded, "input", ins...)
}
