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
// process's RssFile. Runs within the limit are read from the mapping as
// they are; bounded runs read a long list from the mapping and release its
// pages once read, and read short lists with pread, never mapping them;
// every read gives the file's bytes.
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
	touch := func(b []byte) (sum byte) {
		for i := 0; i < len(b); i += int(pageSize) {
			sum += b[i]
		}
		return sum
	}
	var raw []byte
	read := func(p *runPages, lo, hi uint64) []byte {
		b, err := p.list(r, lo, hi, &raw)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, data[lo:hi]) {
			t.Fatalf("bytes %d..%d differ from the file's", lo, hi)
		}
		sink += touch(b)
		return b
	}
	base := rssFile(t)
	// Within the limit: the mapping, kept.
	p := newRunPages(1<<30, []int64{size})
	read(p, 100, size-100)
	p.done(r, 100, size-100)
	if got := rssFile(t) - base; got < size/2 {
		t.Skipf("reading %d mapped bytes raised RssFile by %d only", size, got)
	}
	if p.released.Load() != 0 || p.preads.Load() != 0 {
		t.Errorf("runs within the limit: %d bytes released, %d preads", p.released.Load(), p.preads.Load())
	}
	// Bounded: a long list's pages go once it is read.
	p = newRunPages(size-1, []int64{size})
	read(p, 100, size-100)
	p.done(r, 100, size-100)
	if got := rssFile(t) - base; got > size/8 {
		t.Errorf("after a long list: %d bytes still resident", got)
	}
	if p.released.Load() < size-2*pageSize {
		t.Errorf("released %d bytes of a %d-byte list", p.released.Load(), size-200)
	}
	// Bounded: short lists are read without the mapping.
	before := rssFile(t)
	for lo := uint64(0); lo+1000 <= size; lo += 1000 {
		read(p, lo, lo+1000)
		p.done(r, lo, lo+1000)
	}
	if got := rssFile(t) - before; got > size/8 || p.preads.Load() != size/1000 {
		t.Errorf("short lists: RssFile grew by %d bytes, %d preads", got, p.preads.Load())
	}
}
