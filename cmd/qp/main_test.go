package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
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
	for _, extra := range [][]string{nil, {"--gpu-or-threshold", "64M,1G", "--gpu-threshold", "1M", "--gpu-bitmaps", "1/128,off,2^-3", "--gpu-or-bitmaps", "1/8,off", "--gpu-bitmap-bytes", "6G", "--gpu-bitmap-and"},
		{"--gpu-bitmap-and=off"}, {"--gpu-bitmap-and=auto"}} {
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
		if !strings.HasPrefix(lines[0], "mode,algorithm,threads,gpu_threshold,gpu_or_threshold,gpu_bitmaps,") {
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
	for _, bad := range [][]string{{"--thresholds", "0"}, {"--gpu-or-threshold", "64M,x"}, {"--gpu-bitmaps", "1/128,2"}, {"--gpu-bitmaps", "2^-x"}, {"--gpu-or-bitmaps", "3/2"},
		{"--gpu-bitmap-bytes", "0"}, {"--gpu-bitmap-bytes", "-2G"}, {"--gpu-bitmap-bytes", "6X"}, {"--gpu-bitmap-bytes", "2T"}, {"--gpu-bitmap-bytes", "NaN"}} {
		args := append([]string{"query", idx, qlog, "--device", "cpu", "--limit", "4"}, bad...)
		err := commands["bench"].run(args)
		if err == nil || !strings.Contains(err.Error(), "bad ") || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("qp bench %s: error %v, want a bad value named by its flag", strings.Join(args, " "), err)
		}
	}
	if err := commands["bench"].run([]string{"query", idx, qlog, "--device", "cpu", "--gpu-only"}); err == nil ||
		!strings.Contains(err.Error(), "--gpu-only") {
		t.Errorf("qp bench query --device cpu --gpu-only: error %v, want one naming --gpu-only", err)
	}
	// --cpuprofile writes a profile to a new file and refuses an existing
	// one, leaving it as it was.
	prof := filepath.Join(dir, "cpu.pb")
	base := []string{"query", idx, qlog, "--device", "cpu", "--limit", "4", "--thread-counts", "1", "--modes", "and", "--and-algos", "skip"}
	if err := commands["bench"].run(append(base, "--cpuprofile", prof)); err != nil {
		t.Fatalf("--cpuprofile: %v", err)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Fatalf("--cpuprofile wrote nothing: %v", err)
	}
	if err := os.WriteFile(prof, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := commands["bench"].run(append(base, "--cpuprofile", prof))
	if b, _ := os.ReadFile(prof); err == nil || !strings.Contains(err.Error(), "--cpuprofile") || string(b) != "keep" {
		t.Errorf("--cpuprofile over an existing file: error %v, file now %q", err, b)
	}
}

// TestParseBitmapBytes checks --gpu-bitmap-bytes' values.
func TestParseBitmapBytes(t *testing.T) {
	for s, want := range map[string]int64{"6G": 6 << 30, "512M": 512 << 20, "6GiB": 6 << 30, "1T": 1 << 40, "1048576": 1 << 20} {
		if v, err := parseBitmapBytes(s); err != nil || v != want {
			t.Errorf("%q: %v, %v; want %v", s, v, err, want)
		}
	}
	for _, s := range []string{"", "0", "-1G", "1.5T", "x", "Inf", "NaN", "6X"} {
		if v, err := parseBitmapBytes(s); err == nil || !strings.Contains(err.Error(), "--gpu-bitmap-bytes") {
			t.Errorf("%q: %v, %v; want an error naming the flag", s, v, err)
		}
	}
}

// TestParseDensity checks --gpu-bitmaps' values.
func TestParseDensity(t *testing.T) {
	for s, want := range map[string]float64{"off": -1, "1/128": 1.0 / 128, "2^-7": 1.0 / 128, "2^-0": 1, "0.25": 0.25, "1": 1, "3/4": 0.75} {
		if d, err := parseDensity("gpu-bitmaps", s); err != nil || d != want {
			t.Errorf("%q: %v, %v; want %v", s, d, err, want)
		}
	}
	for _, s := range []string{"", "0", "2", "-0.5", "1/0", "0/5", "5/4", "1/128x", "2^-x", "2^7", "NaN", "on"} {
		if d, err := parseDensity("gpu-bitmaps", s); err == nil || !strings.Contains(err.Error(), "--gpu-bitmaps") {
			t.Errorf("%q: %v, %v; want an error naming the flag", s, d, err)
		}
	}
}

// TestDemoQueries checks the demo's query log for a synthetic index without
// a TREC log: queries of 2-4 distinct terms of the index, which OR always
// and AND often answer (the terms are the most frequent ones). The demo
// once wrote terms that gen does not name ("t%d" unpadded): every query
// came back empty.
func TestDemoQueries(t *testing.T) {
	dir := t.TempDir()
	idx, qfile := filepath.Join(dir, "g.qp"), filepath.Join(dir, "q.txt")
	if err := commands["gen"].run([]string{"--docs", "5000", "--out", idx, "--quiet"}); err != nil {
		t.Fatal(err)
	}
	if err := demoQueries(idx, qfile, 200); err != nil {
		t.Fatal(err)
	}
	x, err := index.Open(idx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(qfile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 200 {
		t.Fatalf("%d queries, want 200", len(lines))
	}
	e := engine.New(x)
	found := 0
	for i, l := range lines {
		id, q, ok := strings.Cut(l, ":")
		if !ok || id != strconv.Itoa(i+1) {
			t.Fatalf("line %d: %q", i+1, l)
		}
		terms := strings.Fields(q)
		seen := map[string]bool{}
		for _, w := range terms {
			if _, ok := x.Lookup(w); !ok || seen[w] {
				t.Fatalf("line %d: term %q unknown or repeated", i+1, w)
			}
			seen[w] = true
		}
		if len(terms) < 2 || len(terms) > 4 {
			t.Fatalf("line %d: %d terms", i+1, len(terms))
		}
		r, _, err := e.Search(engine.Query{Terms: terms, Mode: engine.And, K: 10}, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r) > 0 {
			found++
		}
		if r, _, err = e.Search(engine.Query{Terms: terms, Mode: engine.Or, K: 10}, engine.Options{}); err != nil || len(r) != 10 {
			t.Fatalf("line %d: OR gave %d results, %v", i+1, len(r), err)
		}
	}
	// 5,000 documents: the 2,000 most frequent terms are sparse here (about
	// a quarter of the queries match in AND; most at the demo's 200,000).
	if found < len(lines)/10 {
		t.Errorf("AND found results for %d of %d queries", found, len(lines))
	}
}
