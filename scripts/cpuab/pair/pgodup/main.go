// Command pgodup writes a PGO profile for scripts/cpuab/pair: the samples
// of NEW (the new checkout's cmd/qp/default.pgo) plus those of OLD (the
// old checkout's, "-" for none) with every function renamed from
// github.com/qpengine/qp/ to qpold/, so that each copy of the engine in
// the harness is built with its own checkout's profile, as go build
// ./cmd/qp builds it (a profile names functions by package path). pair.sh
// builds it with the pprof profile package copied from the Go
// distribution (cmd/vendor).
//
//	pgodup NEW OLD OUT
package main

import (
	"fmt"
	"os"
	"strings"

	"qppair/pgodup/profile"
)

func main() {
	if len(os.Args) != 4 {
		fail("usage: pgodup NEW OLD|- OUT")
	}
	ps := []*profile.Profile{parse(os.Args[1])}
	if os.Args[2] != "-" {
		ps = append(ps, parse(os.Args[2]))
		rename(ps[1])
	}
	m, err := profile.Merge(ps)
	if err != nil {
		fail("merge: %v", err)
	}
	o, err := os.Create(os.Args[3])
	if err != nil {
		fail("%v", err)
	}
	if err := m.Write(o); err != nil {
		fail("%s: %v", os.Args[3], err)
	}
	if err := o.Close(); err != nil {
		fail("%s: %v", os.Args[3], err)
	}
}

func parse(path string) *profile.Profile {
	f, err := os.Open(path)
	if err != nil {
		fail("%v", err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		fail("%s: %v", path, err)
	}
	return p
}

// rename moves p's functions of the qp module to the module path qpold.
func rename(p *profile.Profile) {
	for _, fn := range p.Function {
		fn.Name = strings.ReplaceAll(fn.Name, "github.com/qpengine/qp/", "qpold/")
		fn.SystemName = strings.ReplaceAll(fn.SystemName, "github.com/qpengine/qp/", "qpold/")
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pgodup: "+format+"\n", args...)
	os.Exit(1)
}
