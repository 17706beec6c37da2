package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenTopicsCLI: --save-params then --params regenerates the identical
// index; --fit on it writes a collection of the same size; bad flags fail
// with clear errors and write nothing.
func TestGenTopicsCLI(t *testing.T) {
	dir := t.TempDir()
	qlog := filepath.Join(dir, "queries.txt")
	if err := os.WriteFile(qlog, []byte("1:alpha beta\n2:beta gamma delta\n3:alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) error {
		return commands["gen"].run(append([]string{"--quiet", "--queries", qlog}, args...))
	}
	a, b := filepath.Join(dir, "a.idx"), filepath.Join(dir, "b.idx")
	params := filepath.Join(dir, "p.json")
	if err := run("--docs", "800", "--out", a, "--save-params", params); err != nil {
		t.Fatal(err)
	}
	if err := run("--params", params, "--out", b); err != nil {
		t.Fatal(err)
	}
	ba, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if len(ba) == 0 || len(ba) != len(bb) {
		t.Fatalf("index from saved params: %d bytes, original %d", len(bb), len(ba))
	}
	fit := filepath.Join(dir, "fit.idx")
	if err := run("--fit", a, "--out", fit); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "bogus", "--out", filepath.Join(dir, "x")}, "--model"},
		{[]string{"--model", "independent", "--text", filepath.Join(dir, "x.jsonl"), "--out", filepath.Join(dir, "x")}, "needs --model topics"},
		{[]string{"--params", filepath.Join(dir, "missing.json"), "--out", filepath.Join(dir, "x")}, "missing.json"},
		{[]string{"--fit", filepath.Join(dir, "missing.idx"), "--out", filepath.Join(dir, "x")}, "missing.idx"},
		{[]string{"--docs", "0", "--out", filepath.Join(dir, "x")}, "docs"},
		{[]string{"--docs", "10", "--topics", "-1", "--out", filepath.Join(dir, "x")}, "topics"},
		{[]string{"--docs", "10"}, "--out, --text or --save-params"},
		{[]string{"--params", params, "--fit", a, "--out", filepath.Join(dir, "x")}, "use one"},
		{[]string{"--docs", "10", "--save-params", params}, "exists"},
		{[]string{"--docs", "10", "--mem", "lots", "--out", filepath.Join(dir, "x")}, "--mem"},
	} {
		err := run(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("qp gen %s: err = %v, want it to mention %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a failed qp gen left an output file")
	}
}
