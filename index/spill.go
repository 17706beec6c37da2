package index

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// spillDirPrefix starts the name of a build's spill folder:
// qp-build-<hash of the output's absolute path>-<pid>. The hash ties the
// folder to its output, so that the next build into the same output finds
// the leftovers of a killed one; the process id tells whether their owner
// still runs.
const spillDirPrefix = "qp-build-"

// outputKey is a short hash of the absolute path of out.
func outputKey(out string) string {
	if abs, err := filepath.Abs(out); err == nil {
		out = abs
	}
	h := fnv.New64a()
	h.Write([]byte(out))
	return fmt.Sprintf("%016x", h.Sum64())
}

// makeSpillDir removes the leftovers of dead builds into out (their spill
// folders in tempDir, and a stale out.tmp) and creates this build's spill
// folder. It refuses when a live process is building the same output.
func makeSpillDir(tempDir, out string) (string, error) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	prefix := spillDirPrefix + outputKey(out) + "-"
	old, err := filepath.Glob(filepath.Join(tempDir, prefix+"*"))
	if err != nil {
		return "", fmt.Errorf("index: spill folder: %w", err)
	}
	for _, d := range old {
		owner, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), prefix), ".")
		pid, err := strconv.Atoi(owner)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if processAlive(pid) {
			return "", fmt.Errorf("index: process %d is building %s (spill folder %s); wait for it, or remove the folder if that process is not qp", pid, out, d)
		}
		if err := os.RemoveAll(d); err != nil {
			return "", fmt.Errorf("index: removing the spill folder of an interrupted build: %w", err)
		}
	}
	if err := os.Remove(out + ".tmp"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("index: removing the temporary file of an interrupted build: %w", err)
	}
	dir := filepath.Join(tempDir, prefix+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("index: spill folder: %w", err)
		}
		// Another Build of this process into the same output: a folder of
		// its own.
		if dir, err = os.MkdirTemp(tempDir, prefix+strconv.Itoa(os.Getpid())+"."); err != nil {
			return "", fmt.Errorf("index: spill folder: %w", err)
		}
	}
	return dir, nil
}
