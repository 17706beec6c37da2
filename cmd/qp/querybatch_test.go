package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/internal/cputime"
)

// TestQuerySwitchesSameRun: every QP_QUERY_TUNE switch of qp query's batch
// path (one at a time, and all together), with the chunk smaller than the
// query set and not dividing it, writes the run of the default path, byte
// for byte, in every mode (and, with a GPU or the emulator, on the GPU);
// a bad switch is an error naming it.
func TestQuerySwitchesSameRun(t *testing.T) {
	runWriterIndex(t)
	idx := rwIndex
	dir := t.TempDir()
	queries := filepath.Join(dir, "q.tsv")
	if err := commands["queries"].run([]string{idx, "--out", queries, "--n", "300", "--kinds", "and,or,known", "--seed", "5"}); err != nil {
		t.Fatal(err)
	}
	switches := []string{"prealloc", "warm=50", "fmt=1", "fmt=3", "gc=off", "gc=400", "par", "cont", "barrier", "early", "prealloc,warm,fmt=2,gc=off,par,cont,early", "prealloc,warm,fmt=2,gc=off,par,barrier,early", "emitfmt", "fmt=1,emitfmt", "nosplit", "noslots", "noslots,emitfmt", "oldlines", "oldlines,emitfmt", "inflight1", "gpuhandoff", "racenohelp"}
	gpuOK, _ := cuda.Available()
	for _, mode := range []string{"and", "or", "andor"} {
		run := func(name, tune string, extra ...string) []byte {
			t.Setenv(tuneEnv, tune)
			path := filepath.Join(dir, mode+"."+name)
			args := append([]string{idx, "--device", "cpu", "--threads", "3", "--mode", mode, "--queries", queries,
				"--run", path, "--quiet", "--allow-partial", "--chunk", "64"}, extra...)
			if err := commands["query"].run(args); err != nil {
				t.Fatalf("%s with %s=%s %v: %v", mode, tuneEnv, tune, extra, err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		want := run("base", "")
		if bytes.Count(want, []byte("\n")) < 100 {
			t.Fatalf("%s: the default run has %d lines", mode, bytes.Count(want, []byte("\n")))
		}
		for i, s := range switches {
			if got := run(fmt.Sprint(i), s); !bytes.Equal(got, want) {
				t.Errorf("%s with %s=%s: the run (%d bytes) differs from the default path's (%d bytes)", mode, tuneEnv, s, len(got), len(want))
			}
		}
		// One worker in chunks of 128: the continuous stream takes grains
		// of 2 queries (qp.grainSize), the last chunk partial.
		if got := run("contgrain", "", "--threads", "1", "--chunk", "128"); !bytes.Equal(got, want) {
			t.Errorf("%s in grains: the run (%d bytes) differs from the one in chunks of 64 (%d bytes)", mode, len(got), len(want))
		}
		if !gpuOK {
			continue
		}
		// The GPU (or the emulator, slow: 60 queries): the switches that
		// act there.
		wantG := run("gpubase", "", "--limit", "60")
		for i, s := range []string{"", "prealloc,warm=64,gc=off,par,early"} {
			if got := run(fmt.Sprint("gpu", i), s, "--device", "gpu", "--limit", "60", "--chunk", "16"); !bytes.Equal(got, wantG) {
				t.Errorf("%s on the GPU with %s=%s: the run (%d bytes) differs from the CPU's (%d bytes)", mode, tuneEnv, s, len(got), len(wantG))
			}
		}
	}
	for _, bad := range []string{"nope", "warm=0", "fmt", "fmt=x", "gc=-3"} {
		t.Setenv(tuneEnv, bad)
		err := commands["query"].run([]string{idx, "--device", "cpu", "--queries", queries, "--run", filepath.Join(dir, "bad"), "--quiet"})
		if err == nil || !strings.Contains(err.Error(), tuneEnv) {
			t.Errorf("%s=%s: %v, want an error naming %s", tuneEnv, bad, err, tuneEnv)
		}
	}
	// A query file that cannot be read while the processor opens.
	t.Setenv(tuneEnv, "early")
	missing := filepath.Join(dir, "missing.txt")
	err := commands["query"].run([]string{idx, "--device", "cpu", "--queries", missing, "--run", filepath.Join(dir, "bad"), "--quiet"})
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("early switch, missing query file: %v, want an error naming it", err)
	}
}

// TestQueryStats: --stats prints the phases, both rates, the GC line and
// one line per chunk on standard error.
func TestQueryStats(t *testing.T) {
	runWriterIndex(t)
	dir := t.TempDir()
	queries := filepath.Join(dir, "q.txt")
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "%d:t%d t%d\n", i, i%40, (i*7)%90)
	}
	if err := os.WriteFile(queries, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tune := range []string{"", "barrier,warm=20,early"} {
		t.Setenv(tuneEnv, tune)
		_, stderr, code := runQP(t, "query", rwIndex, "--device", "cpu", "--threads", "2", "--mode", "or", "--queries", queries,
			"--run", filepath.Join(dir, "run"), "--quiet", "--stats", "--chunk", "64")
		if code != 0 {
			t.Fatalf("%s=%q: exit %d\n%s", tuneEnv, tune, code, stderr)
		}
		for _, want := range []string{"stats: switches: ", "stats: open ", "total ", "stats: rates (queries/s): stream ", "cold total ", "steady ", "stats: during the stream: "} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s=%q: no %q in\n%s", tuneEnv, tune, want, stderr)
			}
		}
		if _, known := cputime.Process(); known && !strings.Contains(stderr, "stats: CPU during the stream: ") {
			t.Errorf("%s=%q: no CPU time of the stream in\n%s", tuneEnv, tune, stderr)
		}
		// The split: the continuous stream's workers format the run (a
		// time above 0), the barrier's emit does (none by the workers).
		if _, known := cputime.Process(); known {
			var search, format float64
			i := strings.Index(stderr, "stats: CPU split (µs per query): ")
			if i < 0 {
				t.Errorf("%s=%q: no CPU split in\n%s", tuneEnv, tune, stderr)
			} else if _, err := fmt.Sscanf(stderr[i:], "stats: CPU split (µs per query): search %f (the engine's own times), formatting by the workers %f", &search, &format); err != nil {
				t.Errorf("%s=%q: the CPU split: %v", tuneEnv, tune, err)
			} else if search <= 0 || (format > 0) != (tune == "") {
				t.Errorf("%s=%q: search %v µs, formatting by the workers %v µs a query", tuneEnv, tune, search, format)
			}
		}
		chunks := 0
		for _, l := range strings.Split(stderr, "\n") {
			if f := strings.Fields(l); len(f) == 13 && f[0] == "stats:" && (f[2] == "0" || f[2] == "64" || f[2] == "128" || f[2] == "192") {
				chunks++
			}
		}
		if chunks != 4 {
			t.Errorf("%s=%q: %d chunk lines, want 4 (200 queries in chunks of 64):\n%s", tuneEnv, tune, chunks, stderr)
		}
	}
}

// TestQueryCPUProfile: --cpuprofile writes a profile of a batch's stream to
// a new file; it refuses an existing file (left as it was) and a run
// without --queries.
func TestQueryCPUProfile(t *testing.T) {
	runWriterIndex(t)
	dir := t.TempDir()
	queries := filepath.Join(dir, "q.txt")
	if err := os.WriteFile(queries, []byte("1:t1 t2\n2:t3\n3:t4 t5 t6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "cpu.pprof")
	args := []string{rwIndex, "--device", "cpu", "--mode", "or", "--queries", queries, "--run", filepath.Join(dir, "run"), "--quiet", "--cpuprofile", prof}
	if err := commands["query"].run(args); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
		t.Fatalf("the profile: %v, %v", st, err)
	}
	args[8] = filepath.Join(dir, "run2")
	if err := commands["query"].run(args); err == nil || !strings.Contains(err.Error(), prof) {
		t.Errorf("an existing profile file: %v, want an error naming it", err)
	}
	if err := commands["query"].run([]string{rwIndex, "--device", "cpu", "--cpuprofile", filepath.Join(dir, "p2"), "t1"}); err == nil || !strings.Contains(err.Error(), "--queries") {
		t.Errorf("--cpuprofile of one query: %v, want an error naming --queries", err)
	}
}
