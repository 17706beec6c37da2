package index

import (
	"os"
	"sync"
	"sync/atomic"
)

// runPages bounds the pages of the mapped runs that the id merge keeps in
// its address space (RssFile: the kernel counts mapped file pages in the
// process's resident set, on top of the heap). The merge reads each list
// of a run once, in name order, which is not the runs' id order, so there
// is no window that slides over a run. Instead:
//
//   - after a list is read, the pages wholly inside it are released at once
//     (madvise MADV_DONTNEED: no other list shares them, so they are never
//     touched again); that is most of the bytes, as long lists hold most
//     postings;
//   - the rest (pages shared by several short lists, the edge pages of long
//     ones, and the neighbours the kernel maps with each fault: its
//     "fault-around", up to 64 KiB, so that a read of a few bytes can map
//     64 KiB) is measured: every `every` bytes read (a page charged per
//     read, besides its bytes kept), the process's resident file pages
//     (/proc/self/statm) are compared with limit (above those resident when
//     the merge began), and past it every run is released whole. A page
//     still needed is faulted back from the page cache (or the file) by the
//     next read of it, with the same bytes.
//
// So the mapped runs stay under about limit plus what fault-around can map
// between two checks (16 × every: at most 256 MiB, limit/4 below 1 GiB;
// measured in docs/GEN.md). MADV_DONTNEED on a read-only shared
// file mapping only drops the process's page-table entries: the page cache
// keeps the pages, and concurrent readers of a released page fault it back.
type runPages struct {
	limit   int64
	base    int64        // resident file bytes when the merge began (the binary, ...)
	pending atomic.Int64 // bytes read and not released since the last check
	mu      sync.Mutex   // one check at a time
	runs    []*idRun
	// released counts the bytes given back, full the full releases
	// (statistics and tests).
	released atomic.Int64
	full     atomic.Int64
}

// minRelease is the smallest whole-page span released after one list
// (smaller spans are left to the full release: one system call per short
// list would cost more than the pages); minLimit is the smallest limit.
// Variables so that tests can release at every read.
var (
	minRelease int64 = 64 << 10
	minLimit   int64 = 1 << 20
)

// onRunPages, when not nil, receives each build's runPages after the
// merge (tests read its counters).
var onRunPages func(*runPages)

var pageSize = int64(os.Getpagesize())

func newRunPages(limit int64, runs []*idRun) *runPages {
	return &runPages{limit: max(limit, minLimit), base: residentFile(), runs: runs}
}

// read accounts for the bytes [lo, hi) of r just read: releases the pages
// wholly inside, counts the rest, and releases every run past the limit.
func (p *runPages) read(r *idRun, lo, hi uint64) {
	if p == nil || r.data == nil {
		return
	}
	a := (int64(lo) + pageSize - 1) &^ (pageSize - 1)
	b := int64(hi) &^ (pageSize - 1)
	kept := int64(hi-lo) + pageSize
	if b-a >= minRelease && releasePages(r.data[a:b]) {
		kept -= b - a
		p.released.Add(b - a)
	}
	if p.pending.Add(kept) > p.every() {
		p.check()
	}
}

// every is the bytes read between two checks: limit/64, between minRelease
// and 16 MiB (a check reads /proc: about 10 µs).
func (p *runPages) every() int64 { return min(max(p.limit/64, minRelease), 16<<20) }

// check releases every run's pages when the resident file pages exceed the
// limit (the one reader past limit/64 bytes checks; the others go on
// reading).
func (p *runPages) check() {
	if !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	if p.pending.Load() <= p.every() {
		return
	}
	p.pending.Store(0)
	if residentFile()-p.base <= p.limit {
		return
	}
	for _, r := range p.runs {
		if r.data != nil && releasePages(r.data) {
			p.released.Add(int64(len(r.data)))
		}
	}
	p.full.Add(1)
}
