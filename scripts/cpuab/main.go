// Command cpuab times the CPU engine single-threaded by process CPU time
// (getrusage), which a machine shared with other work disturbs far less
// than wall time, for old-vs-new comparisons (ab.sh builds it against two
// checkouts; it uses only APIs that both have).
//
//	cpuab INDEX QUERIES MODE ALGO PASSES
//
// MODE is and or or, ALGO an AND algorithm (skip) or an OR strategy
// (maxscore, bmw). QUERIES is a TREC efficiency log (ID:text lines),
// analyzed as the index was; AND keeps only the queries whose terms all
// exist in the index (the others return at once). After a warm-up pass over all queries (which
// also hashes every result list: document and float32 score bits), PASSES
// timed passes run; it prints the smallest CPU microseconds per query, the
// wall microseconds per query of that pass and the hash, so that two builds
// can be checked to return bit-identical results. Environment: QB_PROF=FILE
// writes a CPU profile of the timed passes, QB_STATS=1 prints blocks,
// postings and candidates per query, QB_QMIN=1 replaces the CPU time by
// the sum over queries of each query's smallest wall time over the passes
// (queryMinima), QB_DIST=1 the share of time taken by
// the slowest queries.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
)

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// allKnown reports whether terms is not empty and the index holds every one.
func allKnown(x *index.Index, terms []string) bool {
	for _, t := range terms {
		if _, ok := x.Lookup(t); !ok {
			return false
		}
	}
	return len(terms) > 0
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "cpuab: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 6 {
		fail("usage: cpuab INDEX QUERIES MODE ALGO PASSES")
	}
	x, err := index.Open(os.Args[1])
	if err != nil {
		fail("%v", err)
	}
	// analysis.New over the metadata, not Index.Analyzer: the old checkout
	// the harness compares with (b3d41c3) has no Index.Analyzer.
	an, err := analysis.New(analysis.Options{Stem: x.Meta.Stem, Stopwords: x.Meta.Stopwords})
	if err != nil {
		fail("%v", err)
	}
	mode, err := engine.ParseMode(os.Args[3])
	if err != nil || mode == engine.AndOr {
		fail("MODE %q: want and or or", os.Args[3])
	}
	opt := engine.Options{}
	if mode == engine.And {
		opt.AndAlgo = engine.AndAlgorithm(os.Args[4])
	} else {
		opt.OrAlgo = engine.OrStrategy(os.Args[4])
	}
	if opt, err = opt.Resolve(); err != nil {
		fail("ALGO %q: %v", os.Args[4], err)
	}
	passes, err := strconv.Atoi(os.Args[5])
	if err != nil || passes < 1 {
		fail("PASSES %q: want a count >= 1", os.Args[5])
	}
	f, err := os.Open(os.Args[2])
	if err != nil {
		fail("%v", err)
	}
	sc := bufio.NewScanner(f)
	var qs []engine.Query
	for ln := 1; sc.Scan(); ln++ {
		id, text, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			fail("%s:%d: not an ID:text line", os.Args[2], ln)
		}
		q := engine.Query{ID: id, Terms: an.Tokens(text), Mode: mode, K: 10}
		if mode == engine.And && !allKnown(x, q.Terms) {
			continue // AND: only queries whose terms all exist (PISA's ranked AND runs)
		}
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		fail("%s: %v", os.Args[2], err)
	}
	if len(qs) == 0 {
		fail("%s: no queries", os.Args[2])
	}
	e := engine.New(x)
	h := fnv.New64a()
	var sb, sp, scand, sq int64
	for _, q := range qs { // warm-up + checksum
		res, st, err := e.Search(q, opt)
		sb += st.BlocksDecoded
		sp += st.PostingsDecoded
		scand += st.Candidates
		sq += int64(st.Terms)
		if err != nil && !errors.Is(err, engine.ErrEmptyQuery) {
			fail("query %s: %v", q.ID, err)
		}
		for _, r := range res {
			fmt.Fprintf(h, "%d %x;", r.Doc, math.Float32bits(r.Score))
		}
		fmt.Fprintln(h)
	}
	if pf := os.Getenv("QB_PROF"); pf != "" {
		f, err := os.OpenFile(pf, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			fail("QB_PROF: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail("QB_PROF: %v", err)
		}
		defer pprof.StopCPUProfile()
	}
	best, bestWall := time.Duration(1<<62), time.Duration(0)
	if os.Getenv("QB_QMIN") != "" {
		best, bestWall = queryMinima(e, qs, opt, passes)
		passes = 0
	}
	for p := 0; p < passes; p++ {
		c0, w0 := cpu(), time.Now()
		for _, q := range qs {
			e.Search(q, opt)
		}
		c, w := cpu()-c0, time.Since(w0)
		if c < best {
			best, bestWall = c, w
		}
	}
	if os.Getenv("QB_DIST") != "" {
		ts := make([]time.Duration, len(qs))
		var tot time.Duration
		for i, q := range qs {
			t0 := time.Now()
			for r := 0; r < 3; r++ {
				e.Search(q, opt)
			}
			ts[i] = time.Since(t0) / 3
			tot += ts[i]
		}
		idx := make([]int, len(qs))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return ts[idx[a]] > ts[idx[b]] })
		var acc time.Duration
		for k, i := range idx {
			acc += ts[i]
			if k == 9 || k == 99 || k == 999 || k == len(idx)/2 {
				fmt.Printf("top %d queries: %.1f%% of time\n", k+1, 100*float64(acc)/float64(tot))
			}
		}
		for _, i := range idx[:5] {
			_, st, _ := e.Search(qs[i], opt)
			fmt.Printf("%v %q terms=%d blocks=%d cand=%d\n", ts[i], qs[i].Terms, st.Terms, st.BlocksDecoded, st.Candidates)
		}
	}
	n := float64(len(qs))
	if os.Getenv("QB_STATS") != "" {
		fmt.Printf("per query: blocks %.1f postings %.0f candidates %.1f terms %.2f\n", float64(sb)/n, float64(sp)/n, float64(scand)/n, float64(sq)/n)
	}
	fmt.Printf("%.3f %.3f %x\n", float64(best.Microseconds())/n, float64(bestWall.Microseconds())/n, h.Sum64())
}

// queryMinima runs passes passes over qs, timing every query by the
// monotonic clock, and returns the sum over queries of each one's smallest
// time, and the sum of their largest. On a machine shared with other work
// the interference (preemption, another process's cache traffic) hits a
// few queries of a pass, not the same query in every pass, so the sum of
// the minima is far steadier than a pass's total, while each query still
// runs in a full pass's cache state (the others' data in between), unlike
// repeating one query. Every timing includes one clock read (~20-50 ns).
func queryMinima(e *engine.Engine, qs []engine.Query, opt engine.Options, passes int) (time.Duration, time.Duration) {
	mins := make([]time.Duration, len(qs))
	maxs := make([]time.Duration, len(qs))
	for i := range mins {
		mins[i] = time.Duration(1 << 62)
	}
	for p := 0; p < passes; p++ {
		t := time.Now()
		for i, q := range qs {
			e.Search(q, opt)
			u := time.Now()
			d := u.Sub(t)
			mins[i], maxs[i] = min(mins[i], d), max(maxs[i], d)
			t = u
		}
	}
	var lo, hi time.Duration
	for i := range mins {
		lo += mins[i]
		hi += maxs[i]
	}
	return lo, hi
}
