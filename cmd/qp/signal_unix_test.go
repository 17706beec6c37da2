//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Case 8: an output that cannot be created fails before the input is
// read: the input here is a FIFO nobody writes to, which would block a
// reader for ever.
func TestIndexChecksOutputBeforeReading(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	cmd := qpCmd("index", "--in", fifo, "--out", filepath.Join(dir, "nonexistent", "x.qp"))
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(e.String(), "does not exist") {
			t.Errorf("exit %v, stderr %q", err, e.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("qp index read its input before checking the output")
	}
}

// Case 11: SIGTERM or SIGINT while qp index spills runs and waits for
// input removes the spill folder and OUT.tmp and exits non-zero.
func TestIndexSignalCleansUp(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "in.jsonl")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skip("mkfifo:", err)
		}
		tmp := filepath.Join(dir, "tmp")
		if err := os.Mkdir(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "x.qp")
		cmd := qpCmd("index", "--in", fifo, "--out", out, "--tmp", tmp, "--mem", "64K", "--quiet")
		var e bytes.Buffer
		cmd.Stderr = &e
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for qp to open it
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20000; i++ {
			fmt.Fprintf(w, `{"id":"d%d","text":"w%d x%d y%d z%d common"}`+"\n", i, i, i%977, i%331, i/7)
		}
		// Wait for a spilled run; the FIFO stays open, so qp then waits
		// for more input.
		deadline := time.Now().Add(30 * time.Second)
		for {
			runs, _ := filepath.Glob(filepath.Join(tmp, "qp-build-*", "run-*"))
			if len(runs) > 0 {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("no spilled run after 30 s; stderr %q", e.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%v: qp index did not stop", sig)
		}
		w.Close()
		if err == nil || !strings.Contains(e.String(), "interrupted") {
			t.Errorf("%v: exit %v, stderr %q", sig, err, e.String())
		}
		if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
			t.Errorf("%v: left in --tmp: %v", sig, ents)
		}
		for _, p := range []string{out, out + ".tmp"} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%v: %s left", sig, p)
			}
		}
	}
}
