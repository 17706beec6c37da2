//go:build linux

package index

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rssFile is the process's resident file-backed pages (/proc/self/status
// RssFile), in bytes.
func rssFile(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "RssFile:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// sink keeps the test's reads of mapped pages from being optimized away.
var sink byte

// TestRunPagesRelease: reading a mapped run counts its pages in the
// process's RssFile; runPages releases the pages wholly inside a list as
// soon as it is read, and all of a run past its limit, and the bytes read
// again after a release are the file's.
func TestRunPagesRelease(t *testing.T) {
	const size = 16 << 20
	data := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(data)
	path := filepath.Join(t.TempDir(), "run")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, unmap, err := mapRun(f, size)
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	r := &idRun{f: f, data: m}
	touch := func(lo, hi int) (sum byte) {
		for i := lo; i < hi; i += int(pageSize) {
			sum += m[i]
		}
		return sum
	}
	base := rssFile(t)
	sink += touch(0, size)
	if got := rssFile(t) - base; got < size/2 {
		t.Skipf("touching %d mapped bytes raised RssFile by %d only", size, got)
	}
	// One long list: its whole pages go at once.
	p := newRunPages(1<<30, []*idRun{r})
	p.read(r, 100, size-100)
	if got := rssFile(t) - base; got > size/8 {
		t.Errorf("after a long list: %d bytes still resident, want at most the edges", got)
	}
	if p.released.Load() < size-2*pageSize || p.full.Load() != 0 {
		t.Errorf("released %d bytes in %d full releases", p.released.Load(), p.full.Load())
	}
	// Short lists: kept until the limit, then all released.
	p = newRunPages(minLimit, []*idRun{r})
	sink += touch(0, size)
	for lo := int64(0); lo+1000 <= size; lo += 1000 {
		p.read(r, uint64(lo), uint64(lo+1000))
	}
	if p.full.Load() == 0 || rssFile(t)-base > size/2 {
		t.Errorf("short lists: %d full releases, %d bytes resident (limit %d)", p.full.Load(), rssFile(t)-base, p.limit)
	}
	if !bytes.Equal(m, data) {
		t.Fatal("the run reads back different bytes after its pages were released")
	}
}
