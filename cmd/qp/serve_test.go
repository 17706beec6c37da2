package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// startServe runs `qp serve args...` in a child process on a free
// loopback port and returns its base URL and the command.
func startServe(t *testing.T, args ...string) (string, *exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := qpCmd(append([]string{"serve"}, append(args, "--addr", "127.0.0.1:0", "--log-level", "warn")...)...)
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	re := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+)/`)
	sc := bufio.NewScanner(pr)
	var log bytes.Buffer
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(&log, pr)
			return m[1], cmd, &log
		}
	}
	t.Fatalf("qp serve did not start:\n%s", log.String())
	return "", nil, nil
}

// serveIndex builds a synthetic index (qp gen: Zipfian terms, unlike real
// text in its vocabulary but with the same list-length skew) and a query
// set drawn from it (qp queries: AND and OR queries of 2-5 terms and
// known-item queries).
func serveTestIndex(t *testing.T) (idx, queries string) {
	t.Helper()
	dir := t.TempDir()
	idx = filepath.Join(dir, "s.qp")
	if err := commands["gen"].run([]string{"--docs", "5000", "--out", idx, "--quiet"}); err != nil {
		t.Fatal(err)
	}
	queries = filepath.Join(dir, "q.tsv")
	if err := commands["queries"].run([]string{idx, "--out", queries, "--n", "150", "--kinds", "and,or,known", "--seed", "3"}); err != nil {
		t.Fatal(err)
	}
	return idx, queries
}

// TestServeMatchesQuery: `qp query --server URL` (the client, the server,
// live batching) writes exactly the run of a local `qp query` on the same
// index and queries, in every mode; the single-query output is the same
// too.
func TestServeMatchesQuery(t *testing.T) {
	idx, queries := serveTestIndex(t)
	for _, lean := range []string{"--lean-http=false", "--lean-http"} {
		t.Run(lean, func(t *testing.T) { serveMatchesQuery(t, idx, queries, lean) })
	}
}

func serveMatchesQuery(t *testing.T, idx, queries, lean string) {
	url, cmd, log := startServe(t, idx, "--device", "cpu", "--threads", "2", lean)
	dir := t.TempDir()
	for _, mode := range []string{"and", "or", "andor"} {
		local, remote := filepath.Join(dir, mode+".local"), filepath.Join(dir, mode+".remote")
		if err := commands["query"].run([]string{idx, "--device", "cpu", "--mode", mode, "-k", "20", "--queries", queries,
			"--run", local, "--quiet", "--allow-partial"}); err != nil {
			t.Fatal(err)
		}
		if err := commands["query"].run([]string{"--server", url, "--mode", mode, "-k", "20", "--queries", queries,
			"--run", remote, "--allow-partial"}); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(local)
		b, _ := os.ReadFile(remote)
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("%s: the server's run (%d bytes) differs from qp query's (%d bytes)", mode, len(b), len(a))
		}
	}
	lo, _, code1 := runQP(t, "query", idx, "--device", "cpu", "--quiet", "--mode", "or", "t1 t2 t3")
	ro, _, code2 := runQP(t, "query", "--server", url, "--mode", "or", "t1 t2 t3")
	if code1 != 0 || code2 != 0 || lo != ro {
		t.Errorf("one query: local (exit %d)\n%s\nserver (exit %d)\n%s", code1, lo, code2, ro)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("qp serve after SIGTERM: %v\n%s", err, log)
	}
}

// TestServeSIGTERM: SIGTERM under load answers every request the server
// accepted (200; 503 shutting_down at most) and exits 0; after it,
// connections are refused.
func TestServeSIGTERM(t *testing.T) {
	idx, _ := serveTestIndex(t)
	for _, lean := range []string{"--lean-http=false", "--lean-http"} {
		t.Run(lean, func(t *testing.T) { serveSIGTERM(t, idx, lean) })
	}
}

func serveSIGTERM(t *testing.T, idx, lean string) {
	url, cmd, log := startServe(t, idx, "--device", "cpu", "--threads", "2", lean)
	var ok, refused, bad atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var firstBad atomic.Value
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/search", strings.NewReader(`{"q":"t1 t2","mode":"or","k":100}`))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					refused.Add(1) // after the listener closed
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == 200 && bytes.Contains(b, []byte(`"hits":[{"rank":1`)):
					ok.Add(1)
				case resp.StatusCode == 503 && bytes.Contains(b, []byte("shutting_down")):
					return
				default:
					bad.Add(1)
					firstBad.CompareAndSwap(nil, string(b))
					return
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	before := ok.Load()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	wg.Wait()
	if err != nil {
		t.Fatalf("qp serve exit after SIGTERM: %v\n%s", err, log)
	}
	if bad.Load() > 0 || before == 0 {
		t.Fatalf("%d answered before SIGTERM, %d bad answers (first: %v)", before, bad.Load(), firstBad.Load())
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("qp serve still answers after exiting")
	}
	t.Logf("%d requests answered, %d clients refused after the listener closed", ok.Load(), refused.Load())
}

// TestServeFlags: bad flags are errors naming the flag, exit 1.
func TestServeFlags(t *testing.T) {
	idx, _ := serveTestIndex(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--batch-max", "-1"}, "--batch-max -1"},
		{[]string{"--inflight", "-2"}, "--inflight -2"},
		{[]string{"--max-body", "x"}, "--max-body"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--batch-wait", "-1s"}, "--batch-wait"},
		{[]string{"--addr", "127.0.0.1:99999"}, "--addr"},
		{[]string{"--device", "tpu"}, "tpu"},
	} {
		_, stderr, code := runQP(t, append([]string{"serve", idx}, c.args...)...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("qp serve %v: exit %d, stderr %q; want exit 1 naming %s", c.args, code, stderr, c.want)
		}
	}
	_, _, code := runQP(t, "query", "--server", "ftp://x", "q")
	if code != 1 {
		t.Errorf("qp query --server ftp://x: exit %d", code)
	}
	if err := commands["query"].run([]string{"--server", "http://127.0.0.1:1", "q"}); err == nil || errors.Is(err, errUsage) {
		t.Errorf("qp query --server to a closed port: %v", err)
	}
}
