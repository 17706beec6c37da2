package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/qpengine/qp/report"
)

// benchReport is the report `qp bench report` is assembling, nil otherwise.
// An experiment may add sections with tables and plots to it (e.g. `qp
// bench sched` adds its delay-vs-rate plot); every experiment's standard
// output is also added to the report, as a preformatted block.
var benchReport *report.Report

// benchExpected are rough run times of the experiments with their default
// flags on a 2M-document index (H200 + 16 cores), printed before they run.
var benchExpected = map[string]string{
	"decode":    "1-3 min",
	"query":     "1-5 min",
	"sched":     "2-6 min per mode (training + 3 rates + rate searches)",
	"intersect": "1-2 min",
	"bitmap":    "1-2 min",
	"wah":       "1-2 min",
}

func init() {
	registerBench("report", "INDEX QUERIES", `runs named experiments in sequence (--experiments) and
writes DIR/README.md (--out): device, index, commands,
tables, plots (SVG)`, benchReportRun)
}

func benchReportRun(c command, args []string) error {
	c.name = "bench report"
	c.args = "INDEX QUERIES --out DIR [flags]"
	fs := newFlags(c, `Runs the experiments named by --experiments one after the other on INDEX
(and QUERIES for those that take a query log), with their default flags
or those given by --args NAME='FLAGS', and writes DIR/README.md: the
device, the index, each experiment's command, duration and output, and the
tables and SVG plots that experiments contribute (sched: the delay vs
arrival rate of Ding et al. WWW'09 Figure 7). Failed experiments are
reported and the others still run.`)
	out := fs.String("out", "", "report directory (required)")
	exps := fs.String("experiments", "decode,query,sched", "comma-separated experiments")
	var extra multiFlag
	fs.Var(&extra, "args", "NAME='FLAGS': extra flags of experiment NAME (repeatable), e.g. sched='--mode or --rates 500,2000'")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 || *out == "" {
		fs.Usage()
		return errUsage
	}
	flagsOf := map[string][]string{}
	for _, a := range extra {
		name, f, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("--args %q: want NAME=FLAGS", a)
		}
		flagsOf[name] = append(flagsOf[name], strings.Fields(f)...)
	}
	var run []benchExperiment
	for _, name := range splitComma(*exps) {
		found := false
		for _, e := range benchExperiments {
			if e.name == name && name != "report" {
				run, found = append(run, e), true
			}
		}
		if !found {
			var names []string
			for _, e := range benchExperiments {
				if e.name != "report" {
					names = append(names, e.name)
				}
			}
			return fmt.Errorf("--experiments: unknown experiment %q (one of: %s)", name, strings.Join(names, ", "))
		}
	}
	r := report.New("qp benchmark report")
	host, _ := os.Hostname()
	r.Para("Command: `qp bench %s`", strings.Join(append([]string{"report"}, args...), " "))
	r.Para("Host %s, %d CPU cores (GOMAXPROCS), %s/%s, %s; index %s, query log %s; started %s.", host, runtime.GOMAXPROCS(0),
		runtime.GOOS, runtime.GOARCH, runtime.Version(), pos[0], pos[1], time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintln(os.Stderr, "experiments (expected run times):")
	for _, e := range run {
		exp := benchExpected[e.name]
		if exp == "" {
			exp = "unknown"
		}
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", e.name, exp)
	}
	benchReport = r
	defer func() { benchReport = nil }()
	var failed []string
	for _, e := range run {
		// Positional arguments: INDEX, and QUERIES if the experiment takes it.
		eargs := []string{pos[0]}
		if strings.Contains(e.usage, "QUERIES") {
			eargs = append(eargs, pos[1])
		}
		eargs = append(eargs, flagsOf[e.name]...)
		cmdline := "qp bench " + e.name + " " + strings.Join(eargs, " ")
		fmt.Fprintf(os.Stderr, "== %s\n", cmdline)
		s := r.Section("Experiment " + e.name)
		before := len(r.Sections())
		start := time.Now()
		output, err := captureStdout(func() error { return e.run(command{name: "bench " + e.name}, eargs) })
		el := time.Since(start).Round(time.Second)
		s.Para("Command: `%s` (%v).", cmdline, el)
		if err != nil {
			failed = append(failed, e.name)
			s.Para("**Failed:** %s", strings.ReplaceAll(err.Error(), "\n", " "))
		}
		if strings.TrimSpace(output) != "" {
			s.Code(output)
		}
		if added := len(r.Sections()) - before; added > 0 {
			s.Para("Tables and plots follow in the next %d section(s).", added)
		}
		fmt.Fprintf(os.Stderr, "== %s done in %v\n", e.name, el)
	}
	if err := r.Write(*out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "report written to %s/README.md\n", *out)
	if len(failed) > 0 {
		return fmt.Errorf("experiments failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// captureStdout runs f with os.Stdout also copied into the returned
// string (the experiments print their tables there).
func captureStdout(f func() error) (string, error) {
	rd, wr, err := os.Pipe()
	if err != nil {
		return "", err
	}
	orig := os.Stdout
	os.Stdout = wr
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		io.Copy(io.MultiWriter(orig, &buf), rd)
		close(done)
	}()
	ferr := f()
	os.Stdout = orig
	wr.Close()
	<-done
	rd.Close()
	return buf.String(), ferr
}
