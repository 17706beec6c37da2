package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchServe: qp bench serve runs every level against a live server,
// with the load generator in its own process (qp bench load, GOMAXPROCS
// bounded) and in this one, and writes rows that account for the server's
// CPU, its batches and the generator's CPU. Short levels on a small gen
// index: the figures are not asserted, only that every level answered and
// was measured.
func TestBenchServe(t *testing.T) {
	idx, queries := serveTestIndex(t)
	old := loadCommand
	loadCommand = func(args ...string) (*exec.Cmd, error) { return qpCmd(args...), nil }
	t.Cleanup(func() { loadCommand = old })
	for _, run := range []struct{ gen, client string }{{"1", "vegeta"}, {"0", "vegeta"}, {"1", "raw"}} {
		gen := run.gen
		out := filepath.Join(t.TempDir(), "rows.json")
		err := commands["bench"].run([]string{"serve", idx, queries, "--device", "cpu", "--threads", "2", "--duration", "300ms",
			"--conns-one", "2,8", "--conns", "2", "--per-request", "5", "--fractions", "0.5", "--many", "50", "--gen-procs", gen, "--json", out,
			"--client", run.client})
		if err != nil {
			t.Fatalf("--gen-procs %s: %v", gen, err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			InProcessQPS float64   `json:"in_process_qps"`
			Rows         []loadRow `json:"rows"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if res.InProcessQPS <= 0 || len(res.Rows) != 5 {
			t.Fatalf("--gen-procs %s: in-process %v q/s, %d rows; want > 0 and 5 (2 one-query, batch, 50%%, many)", gen, res.InProcessQPS, len(res.Rows))
		}
		for _, r := range res.Rows {
			if r.QPS <= 0 || r.Requests == 0 || !strings.Contains(r.Codes, "200:") || r.Wall <= 0 || r.BatchMean < 1 ||
				(r.Success != 1 && !generatorBehind(r)) || r.P50 <= 0 || r.P99 < r.P50 || r.Max < r.P99 {
				t.Errorf("--gen-procs %s --client %s, %s: %+v", gen, run.client, r.Name, r)
			}
			if gen == "1" && r.ClientCPU <= 0 {
				t.Errorf("%s: a separate generator's CPU not reported (%v)", r.Name, r.ClientCPU)
			}
			if gen == "0" && r.ClientCPU != 0 {
				t.Errorf("%s: in-process generator with its own CPU %v", r.Name, r.ClientCPU)
			}
		}
		if r := res.Rows[2]; r.PerReq != 5 || r.Conns != 2 {
			t.Errorf("batch row: %d per request, %d connections", r.PerReq, r.Conns)
		}
	}
}

// generatorBehind reports whether a level's only failures are requests
// its own generator did not send in time (--client raw on a loaded
// machine: the schedule's requests still due at the end of the level)
// while every request sent was answered 200: the server lost nothing, and
// the row says so in its errors.
func generatorBehind(r loadRow) bool {
	if len(r.Errors) == 0 {
		return false
	}
	for _, c := range strings.Split(r.Codes, " ") {
		if c != "" && !strings.HasPrefix(c, "200:") {
			return false
		}
	}
	for _, e := range r.Errors {
		if !strings.Contains(e, "the generator was behind its schedule") {
			return false
		}
	}
	return true
}

// TestBenchLoadFlags: qp bench load refuses bad flags and a bad mode.
func TestBenchLoadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"load", "http://127.0.0.1:1", "q.txt", "--per-request", "0"},
		{"load", "http://127.0.0.1:1", "q.txt", "--mode", "xor"},
		{"load", "http://127.0.0.1:1", "q.txt", "--client", "curl"},
		{"load", "http://127.0.0.1:1"},
	} {
		if err := commands["bench"].run(args); err == nil {
			t.Errorf("qp bench %v: no error", args)
		}
	}
}
