package index

import (
	"fmt"
	"os"
	"slices"
	"sync/atomic"
)

// runPages bounds the pages of the mapped runs that the id merge keeps in
// its address space (RssFile: the kernel counts mapped file pages in the
// process's resident set, on top of the heap). The merge reads each list
// of a run once, in name order, which is not the runs' id order: there is
// no window that slides over a run, and a page of short lists is wanted
// again and again at random times.
//
// When the runs fit the limit (the memory budget) they are read from the
// mapping as they are. Otherwise ("bounded"):
//
//   - a short list (under minRelease bytes) is read with pread into the
//     reader's buffer: its pages stay in the page cache, out of the
//     process's resident set (releasing mapped pages of short lists
//     instead costs a fault, which maps up to 64 KiB, at nearly every
//     read: measured 6× the CPU in docs/GEN.md);
//   - a long list is read from the mapping, then its pages (the edge
//     pages included: short lists never touch the mapping) are released
//     (madvise MADV_DONTNEED: each list is read once; a long neighbour
//     sharing an edge page faults that page back).
//
// So the mapped runs hold at most the long lists being read, one per
// merging goroutine (plus the kernel's fault-around, 64 KiB each).
// MADV_DONTNEED on a read-only shared file mapping only drops the process's
// page-table entries: the page cache keeps the pages, and a concurrent
// reader of a released page faults it back with the same bytes.
type runPages struct {
	bounded bool
	// released counts the bytes of long lists given back, preads the short
	// lists read with pread (statistics and tests).
	released atomic.Int64
	preads   atomic.Int64
}

// minRelease is the size from which a list is long. A variable so that
// tests can change it.
var minRelease int64 = 64 << 10

// onRunPages, when not nil, receives each build's runPages after the
// merge (tests read its counters).
var onRunPages func(*runPages)

var pageSize = int64(os.Getpagesize())

// newRunPages decides whether runs of these sizes must be bounded under
// limit bytes.
func newRunPages(limit int64, sizes []int64) *runPages {
	var total int64
	for _, s := range sizes {
		total += s
	}
	return &runPages{bounded: total > limit}
}

// list returns the bytes [lo, hi) of r: from the mapping, or, for a short
// list of bounded runs, read into *raw.
func (p *runPages) list(r *idRun, lo, hi uint64, raw *[]byte) ([]byte, error) {
	if p == nil || !p.bounded || int64(hi-lo) >= minRelease {
		return r.data[lo:hi], nil
	}
	*raw = slices.Grow((*raw)[:0], int(hi-lo))[:hi-lo]
	if _, err := r.f.ReadAt(*raw, int64(lo)); err != nil {
		return nil, fmt.Errorf("index: reading run %s: %w", r.f.Name(), err)
	}
	p.preads.Add(1)
	return *raw, nil
}

// done releases the pages of a long list of bounded runs once read.
func (p *runPages) done(r *idRun, lo, hi uint64) {
	if p == nil || !p.bounded || int64(hi-lo) < minRelease || r.data == nil {
		return
	}
	a := int64(lo) &^ (pageSize - 1)
	b := min((int64(hi)+pageSize-1)&^(pageSize-1), int64(len(r.data)))
	if releasePages(r.data[a:b]) {
		p.released.Add(b - a)
	}
}
