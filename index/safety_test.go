package index

import (
	"context"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/qpengine/qp/score"
)

// countingSource counts the documents asked for.
type countingSource struct {
	DocSource
	calls int
}

func (c *countingSource) Next() (*Document, error) { c.calls++; return c.DocSource.Next() }

// TestBuildChecksFirst: bad options and an output that cannot be created
// fail before any document is read (issue 19 cases 8 and 12), and an
// input without documents writes nothing (case 7).
func TestBuildChecksFirst(t *testing.T) {
	dir := t.TempDir()
	docs := randomTexts(rand.New(rand.NewSource(1)), 50)
	good := BuildOptions{Out: filepath.Join(dir, "x.qp"), NewAnalyzer: fieldsAnalyzer, TempDir: dir}
	for name, c := range map[string]struct {
		mod  func(*BuildOptions)
		want string
	}{
		"missing dir":  {func(o *BuildOptions) { o.Out = filepath.Join(dir, "nonexistent", "x.qp") }, "does not exist"},
		"out is a dir": {func(o *BuildOptions) { o.Out = dir }, "is a directory"},
		"block -1":     {func(o *BuildOptions) { o.BlockSize = -1 }, "block size -1 out of range 1..65536"},
		"block 2^17":   {func(o *BuildOptions) { o.BlockSize = 1 << 17 }, "out of range"},
		"k1 -5":        {func(o *BuildOptions) { o.Params = score.Params{K1: -5, B: 0.4} }, "k1 = -5"},
		"b 2":          {func(o *BuildOptions) { o.Params = score.Params{K1: 0.9, B: 2} }, "b = 2"},
		"workers -1":   {func(o *BuildOptions) { o.Workers = -1 }, "workers"},
		"order":        {func(o *BuildOptions) { o.DocIDOrder = "nosuch" }, "unknown docid order"},
	} {
		opt := good
		c.mod(&opt)
		src := &countingSource{DocSource: &sliceSource{docs: docs}}
		_, err := Build(context.Background(), src, opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", name, err, c.want)
		}
		if src.calls != 0 {
			t.Errorf("%s: %d documents read before the error", name, src.calls)
		}
	}
	_, err := Build(context.Background(), &sliceSource{}, good)
	if !errors.Is(err, ErrNoDocuments) {
		t.Errorf("no documents: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// blockingSource returns n documents, then blocks until ctx is done (a
// reader waiting for input when the signal comes).
type blockingSource struct {
	docs []Document
	i    int
	ctx  context.Context
	stop func()
}

func (s *blockingSource) Next() (*Document, error) {
	if s.i == len(s.docs) {
		s.stop()
		<-s.ctx.Done()
		<-make(chan struct{}) // as a read that never returns
	}
	s.i++
	d := s.docs[s.i-1]
	return &d, nil
}

// TestBuildCancelCleansUp: a build cancelled (SIGINT/SIGTERM in qp index)
// while its reader waits removes its spill folder and writes no output
// (issue 19 case 11).
func TestBuildCancelCleansUp(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	src := &blockingSource{docs: randomTexts(rand.New(rand.NewSource(2)), 3000), ctx: ctx, stop: cancel}
	out := filepath.Join(dir, "x.qp")
	done := make(chan error)
	go func() {
		_, err := Build(ctx, src, BuildOptions{Out: out, NewAnalyzer: fieldsAnalyzer, TempDir: tmp, MemBudget: 32 << 10})
		done <- err
	}()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("spill folder left: %v", ents)
	}
	for _, p := range []string{out, out + ".tmp"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s written", p)
		}
	}
}

// TestBuildRemovesLeftovers: the spill folder and OUT.tmp of a killed
// build into the same output are removed by the next build; a live
// build into the same output is not disturbed (case 11).
func TestBuildRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	out := filepath.Join(dir, "x.qp")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true command:", err)
	}
	prefix := filepath.Join(tmp, spillDirPrefix+outputKey(out)+"-")
	stale := []string{prefix + strconv.Itoa(dead.Process.Pid), prefix + strconv.Itoa(dead.Process.Pid) + ".123"}
	for _, d := range stale {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "run-00000"), make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(tmp, spillDirPrefix+outputKey(filepath.Join(dir, "y.qp"))+"-"+strconv.Itoa(dead.Process.Pid))
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out+".tmp", []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	docs := randomTexts(rand.New(rand.NewSource(3)), 200)
	if _, err := Build(context.Background(), &sliceSource{docs: docs}, BuildOptions{Out: out, NewAnalyzer: fieldsAnalyzer, TempDir: tmp}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(tmp)
	if len(ents) != 1 || ents[0].Name() != filepath.Base(other) {
		t.Errorf("spill folders after the build: %v; want only the other output's", ents)
	}
	if _, err := os.Stat(out + ".tmp"); err == nil {
		t.Error("OUT.tmp left")
	}
	if _, err := Open(out); err != nil {
		t.Errorf("the new index: %v", err)
	}
	// A live process (this one's parent) building into the same output.
	live := prefix + strconv.Itoa(os.Getppid())
	if err := os.MkdirAll(live, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Build(context.Background(), &sliceSource{docs: docs}, BuildOptions{Out: out, NewAnalyzer: fieldsAnalyzer, TempDir: tmp})
	if err == nil || !strings.Contains(err.Error(), "is building") {
		t.Errorf("a live build into the same output: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live build's folder: %v", err)
	}
}
