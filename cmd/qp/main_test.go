package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchQueryCPU runs `qp gen` and `qp bench query` on the CPU in every
// mode, with and without the GPU-only flags (which a CPU run parses and
// ignores), and checks the CSV it writes: a run without a GPU must neither
// fail nor panic (an empty list of GPU OR thresholds once did, in AND mode).
func TestBenchQueryCPU(t *testing.T) {
	dir := t.TempDir()
	qlog := filepath.Join(dir, "queries.txt")
	if err := os.WriteFile(qlog, []byte("1:alpha beta\n2:beta gamma delta\n3:alpha\n4:epsilon zeta alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "g.qp")
	if err := commands["gen"].run([]string{"--docs", "20000", "--out", idx, "--quiet", "--queries", qlog}); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--gpu-or-threshold", "64M,1G", "--gpu-threshold", "1M"}} {
		csv := filepath.Join(dir, "q.csv")
		args := append([]string{"query", idx, qlog, "--device", "cpu", "--limit", "4", "--thread-counts", "1",
			"--and-algos", "skip", "--or-algos", "maxscore", "--csv", csv}, extra...)
		if err := commands["bench"].run(args); err != nil {
			t.Fatalf("qp bench %s: %v", strings.Join(args, " "), err)
		}
		b, err := os.ReadFile(csv)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if !strings.HasPrefix(lines[0], "mode,algorithm,threads,gpu_threshold,gpu_or_threshold,") {
			t.Fatalf("CSV header %q", lines[0])
		}
		// and (skip), or (maxscore), andor (skip+or, and+maxscore): one row each.
		if len(lines) != 1+4 {
			t.Fatalf("%d CSV rows, want 4:\n%s", len(lines)-1, b)
		}
		for _, mode := range []string{"and,", "or,", "andor,"} {
			found := false
			for _, l := range lines[1:] {
				found = found || strings.HasPrefix(l, mode)
			}
			if !found {
				t.Errorf("no %s row in\n%s", strings.TrimSuffix(mode, ","), b)
			}
		}
	}
	for _, bad := range [][]string{{"--thresholds", "0"}, {"--gpu-or-threshold", "64M,x"}} {
		args := append([]string{"query", idx, qlog, "--device", "cpu", "--limit", "4"}, bad...)
		err := commands["bench"].run(args)
		if err == nil || !strings.Contains(err.Error(), "bad threshold") || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("qp bench %s: error %v, want a bad threshold named by its flag", strings.Join(args, " "), err)
		}
	}
}
