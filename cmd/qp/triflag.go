package main

import (
	"flag"
	"fmt"
	"strings"
)

// triFlag is a flag of three values (flag.Value): auto (the zero value and
// the default), on (on, true, 1, or the flag alone) and off (off, false, 0).
// What auto means is the flag's own (resolveAdapt for --prepare-adapt,
// gpuBitmapAnd for --gpu-bitmap-and).
type triFlag int

const (
	triAuto triFlag = iota
	triOn
	triOff
)

func (a *triFlag) String() string {
	switch *a {
	case triOn:
		return "on"
	case triOff:
		return "off"
	}
	return "auto"
}

// Set accepts on/true/1, off/false/0 and auto, in any case.
func (a *triFlag) Set(v string) error {
	switch strings.ToLower(v) {
	case "on", "true", "1":
		*a = triOn
	case "off", "false", "0":
		*a = triOff
	case "auto":
		*a = triAuto
	default:
		return fmt.Errorf("want on, off or auto, not %q", v)
	}
	return nil
}

// IsBoolFlag lets the flag alone mean on (a value then needs "=":
// --prepare-adapt=off).
func (a *triFlag) IsBoolFlag() bool { return true }

// triVar defines a triFlag on fs (auto by default) and returns it.
func triVar(fs interface {
	Var(flag.Value, string, string)
}, name, usage string) *triFlag {
	v := new(triFlag)
	fs.Var(v, name, usage)
	return v
}
