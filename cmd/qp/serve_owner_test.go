package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/internal/affinity"
	"github.com/qpengine/qp/serve"
)

// TestServeOwnerCPU runs `qp serve --device gpu --owner-cpu auto
// --owner-poll --gpu-profile` (a GPU, or the emulator on LD_LIBRARY_PATH)
// and reads its threads' CPU masks back from /proc: exactly one thread
// (the CUDA owner) has the process's highest CPU alone, every other the
// rest; its answers are right (the CPU engine's, via qp query --server),
// and GET /debug/batches has the batches with their CUDA-event time.
func TestServeOwnerCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CPU affinity is Linux only")
	}
	if ok, why := cuda.Available(); !ok {
		t.Skip("no GPU or emulator: " + why)
	}
	allowed, err := affinity.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("the process may run on %s only", affinity.List(allowed))
	}
	cpu := allowed[len(allowed)-1]
	rest := affinity.List(allowed[:len(allowed)-1])
	idx, queries := serveTestIndex(t)
	url, cmd, log := startServe(t, idx, "--device", "gpu", "--owner-cpu", "auto", "--owner-poll", "--gpu-profile")
	if want := fmt.Sprintf("the CUDA owner thread on CPU %d, the other threads on CPUs %s", cpu, rest); !strings.Contains(log.String(), want) {
		t.Errorf("qp serve's log lacks %q:\n%s", want, log)
	}
	dir := t.TempDir()
	local, remote := filepath.Join(dir, "local"), filepath.Join(dir, "remote")
	if err := commands["query"].run([]string{idx, "--device", "cpu", "--mode", "and", "-k", "10", "--queries", queries,
		"--run", local, "--quiet", "--allow-partial"}); err != nil {
		t.Fatal(err)
	}
	if err := commands["query"].run([]string{"--server", url, "--mode", "and", "-k", "10", "--queries", queries,
		"--run", remote, "--allow-partial"}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(local)
	b, _ := os.ReadFile(remote)
	if len(a) == 0 || string(a) != string(b) {
		t.Fatalf("the pinned server's run (%d bytes) differs from qp query's (%d bytes)", len(b), len(a))
	}
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", cmd.Process.Pid))
	if err != nil || len(tasks) < 2 {
		t.Fatalf("the server's threads: %v, %v", tasks, err)
	}
	owners := 0
	for _, f := range tasks {
		st, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		var list string
		for _, line := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				list = strings.TrimSpace(v)
			}
		}
		switch list {
		case fmt.Sprint(cpu):
			owners++
		case rest:
		default:
			t.Errorf("%s: CPUs %q, want %d (the owner) or %s", f, list, cpu, rest)
		}
	}
	if owners != 1 {
		t.Errorf("%d threads on CPU %d alone, want 1 (the CUDA owner)", owners, cpu)
	}
	resp, err := http.Get(url + "/debug/batches")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var rep serve.BatchReport
	if err := json.Unmarshal(body, &rep); err != nil || rep.Batches < 1 || rep.GPU.A+rep.GPU.B <= 0 {
		t.Errorf("/debug/batches after the queries: %v, %s; want batches with CUDA-event time", err, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("qp serve after SIGTERM: %v\n%s", err, log)
	}
}
