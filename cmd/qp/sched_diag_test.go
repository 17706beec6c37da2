package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/engine/gpu"
)

// TestHistQuantile: the quantiles of the difference of two cumulative
// histogram readings are the upper bounds of the buckets they fall in (the
// lower bound for the open last bucket); an empty difference is 0.
func TestHistQuantile(t *testing.T) {
	b := []float64{0, 1, 2, 4, math.Inf(1)}
	a := &metrics.Float64Histogram{Counts: []uint64{5, 0, 0, 0}, Buckets: b}
	c := &metrics.Float64Histogram{Counts: []uint64{95, 9, 0, 1}, Buckets: b} // +90, +9, 0, +1
	for _, k := range []struct {
		q    float64
		want float64
	}{{0.5, 1}, {0.9, 1}, {0.95, 2}, {0.99, 2}, {1, 4}} {
		if got, n := histQuantile(a, c, k.q); got != k.want || n != 100 {
			t.Errorf("q %v: %v (n %d), want %v (n 100)", k.q, got, n, k.want)
		}
	}
	if got, n := histQuantile(c, c, 0.5); got != 0 || n != 0 {
		t.Errorf("empty difference: %v, %d", got, n)
	}
	if got, n := histQuantile(nil, c, 0.5); got != 0 || n != 0 {
		t.Errorf("unknown reading: %v, %d", got, n)
	}
}

// TestProfileLine: the per-batch figures are the differences of two
// profiles divided by the batches between them.
func TestProfileLine(t *testing.T) {
	a := gpu.Profile{Batches: 10, Queries: 1000, Wall: time.Second}
	b := a
	b.Batches, b.Queries, b.Wall = 12, 3000, time.Second+4*time.Millisecond
	b.HostPrepare, b.HostConvert, b.Decode = 200*time.Microsecond, 600*time.Microsecond, time.Millisecond
	b.HostPlan = 80 * time.Microsecond
	b.DriverCalls, b.OwnerDriver = 296, 80*time.Microsecond
	b.HostFinish, b.Sets, b.PlannedSets = 500*time.Microsecond, 3, 2
	got := profileLine(a, b)
	for _, w := range []string{"2 batches of 1000 queries", "wall 2ms (2.00µs/query)", "prepare 100µs (plan 40µs)", "convert 300µs", "device 500µs (0.50µs/query)",
		"inside 148 driver calls 40µs", "+ finish 250µs (2 of 3 sets planned off the owner)"} {
		if !strings.Contains(got, w) {
			t.Errorf("profile line %q lacks %q", got, w)
		}
	}
	if got := profileLine(a, a); got != "gpu: no batches" {
		t.Errorf("no batches: %q", got)
	}
}

// TestDiagnoseCPUProfile: `qp bench sched --diagnose --cpuprofile FILE`
// writes a complete profile (pprof's gzip stream, closed: the profile was
// started only after the --diagnose branch had returned, so none was
// written). Needs a GPU or the emulator.
func TestDiagnoseCPUProfile(t *testing.T) {
	if ok, why := cuda.Available(); !ok {
		t.Skip(why)
	}
	runWriterIndex(t)
	dir := t.TempDir()
	queries := filepath.Join(dir, "q.tsv")
	if err := commands["queries"].run([]string{rwIndex, "--out", queries, "--n", "40", "--kinds", "and", "--seed", "3"}); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "diag.pb")
	err := commands["bench"].run([]string{"sched", rwIndex, queries, "--mode", "and", "--train", "30", "--replay", "5",
		"--diagnose", "0", "--diagnose-for", "20ms", "--cpuprofile", prof})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatalf("--diagnose --cpuprofile wrote no profile: %v", err)
	}
	// A stopped profile is a whole gzip stream: magic, and the 8-byte
	// trailer after at least a header.
	if len(b) < 18 || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("profile of %d bytes is not a finished gzip stream", len(b))
	}
}
