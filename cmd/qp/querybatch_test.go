package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/eval"
)

// referenceRun answers each query of the file alone (Engine.SearchWith,
// the single-query path) and formats the TREC run with eval.AppendRun,
// skipping the queries that fail: what qp query --queries must write.
func referenceRun(t *testing.T, idx, queries string, mode engine.Mode, k int) []byte {
	t.Helper()
	e, err := qp.Open(idx, qp.Options{Device: qp.CPU, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	fq, err := eval.ReadQueryFile(queries, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, q := range fq {
		res, err := e.SearchWith(context.Background(), qp.Request{ID: q.ID, Text: q.Text, Mode: mode, K: k}, engine.Options{})
		if errors.Is(err, qp.ErrNoTerms) {
			continue
		}
		if err != nil {
			t.Fatalf("query %s: %v", q.ID, err)
		}
		var ents []eval.RunEntry
		for i, h := range res.Hits {
			ents = append(ents, eval.RunEntry{DocID: h.DocID, Rank: i + 1, Score: float64(h.Score)})
		}
		if b, err = eval.AppendRun(b, q.ID, ents, "qp"); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestQueryRunMatchesSingleQueries: the batch path (the query file read
// and analyzed while the processor opens, StreamWith's rising and falling
// chunks searched two at a time on the CPU, runs formatted on all cores)
// writes byte for byte the run of the queries answered one by one, in
// every mode, whatever the chunk size and the number of workers; its
// summary reports the cold total and the steady state; without --run the
// same run goes to standard output.
func TestQueryRunMatchesSingleQueries(t *testing.T) {
	idx, queries := serveTestIndex(t)
	dir := t.TempDir()
	timeLine := regexp.MustCompile(`(?m)^time: total [0-9.]+s from start \(open [0-9.]+s, while the queries were read and analyzed in [0-9.]+s; stream [0-9.]+s\); first chunk of (\d+) in [0-9.]+s, then [0-9.]+ queries/s$`)
	fq, err := eval.ReadQueryFile(queries, 0)
	if err != nil {
		t.Fatal(err)
	}
	type variant struct {
		chunk   int
		threads string
	}
	for _, mode := range []engine.Mode{engine.And, engine.Or, engine.AndOr} {
		want := referenceRun(t, idx, queries, mode, 20)
		if len(want) == 0 {
			t.Fatalf("%s: the reference run is empty", mode)
		}
		vs := []variant{{qp.DefaultChunk, "3"}}
		if mode == engine.Or { // the chunk plans and worker counts, in one mode (each run is a process)
			vs = append(vs, variant{1, "1"}, variant{7, "3"}, variant{64, "1"}, variant{64, "3"})
		}
		for _, v := range vs {
			chunk, threads := v.chunk, v.threads
			run := filepath.Join(dir, mode.String()+"-"+strconv.Itoa(chunk)+"-"+threads)
			out, errOut, code := runQP(t, "query", idx, "--device", "cpu", "--threads", threads, "--mode", mode.String(), "-k", "20",
				"--queries", queries, "--run", run, "--chunk", strconv.Itoa(chunk), "--quiet", "--allow-partial")
			if code != 0 {
				t.Fatalf("%s chunk %d threads %s: exit %d: %s", mode, chunk, threads, code, errOut)
			}
			got, err := os.ReadFile(run)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s chunk %d threads %s: the run (%d bytes) differs from the single queries' (%d bytes)", mode, chunk, threads, len(got), len(want))
			}
			m := timeLine.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("%s chunk %d: no time line in\n%s", mode, chunk, out)
			}
			if n, _ := strconv.Atoi(m[1]); n != min(chunk, qp.FirstChunk, len(fq)) {
				t.Errorf("%s chunk %d: first chunk of %d queries, want %d", mode, chunk, n, min(chunk, qp.FirstChunk, len(fq)))
			}
		}
	}
	// Without --run the run goes to standard output and the summary to
	// standard error.
	want, err := os.ReadFile(filepath.Join(dir, "or-64-3"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runQP(t, "query", idx, "--device", "cpu", "--threads", "3", "--mode", "or", "-k", "20", "--chunk", "64",
		"--queries", queries, "--allow-partial")
	if code != 0 || out != string(want) {
		t.Fatalf("exit %d; standard output (%d bytes) differs from the run file (%d bytes)", code, len(out), len(want))
	}
	if !regexp.MustCompile(`(?m)^queries \d+ \(ok \d+, failed \d+\) in .*\n(.*\n)*time: total `).MatchString(errOut) {
		t.Errorf("standard error lacks the summary:\n%s", errOut)
	}
}
