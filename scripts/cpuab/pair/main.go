// Command pair is a paired A/B of two builds of the CPU engine in one
// process (scripts/cpuab/pair.sh builds it; docs/CPU-ENGINE.md, "How it
// was measured"): old is the engine of another checkout whose module path
// pair.sh rewrote to qpold, new is github.com/qpengine/qp. Queries run in
// chunks of CHUNK (default 500); in every pass each chunk runs old then
// new or new then old (alternating), every query timed by the monotonic
// clock, and the per-query minima over the passes are summed per build.
// Both builds so see the same machine load at a granularity of tens of
// milliseconds, where separate processes (ab.sh) see it seconds apart:
// on the loaded 2-core dev machine (load average 15-22) an A/A run of
// this harness gave 1.012.
//
//	pair INDEX QUERIES MODE ALGO PASSES [CHUNK]
//
// INDEX is read by both builds, unless the environment names another file
// for the old one, PAIR_OLD_INDEX (the same documents indexed by the old
// checkout's own qp index, as PISA comparisons let each engine read its
// own index; the result hashes then still compare the two builds).
//
// MODE is and or or, ALGO an AND algorithm or an OR strategy; AND keeps
// the queries whose terms all exist (as cpuab does). Prints the per-query
// minima of both builds (µs/query), their ratio old/new, every pass's
// mean, and whether every top-10 list (docIDs and float32 score bits) of
// the two builds is identical.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	newe "github.com/qpengine/qp/engine"
	newi "github.com/qpengine/qp/index"
	newa "github.com/qpengine/qp/index/analysis"
	olde "qpold/engine"
	oldi "qpold/index"
)

func main() {
	if len(os.Args) < 6 {
		fail("usage: pair INDEX QUERIES MODE ALGO PASSES [CHUNK]")
	}
	xn, err := newi.Open(os.Args[1])
	if err != nil {
		fail("%v", err)
	}
	oidx := os.Args[1]
	if p := os.Getenv("PAIR_OLD_INDEX"); p != "" {
		oidx = p
	}
	xo, err := oldi.Open(oidx)
	if err != nil {
		fail("%v", err)
	}
	an, _ := newa.New(newa.Options{Stem: xn.Meta.Stem, Stopwords: xn.Meta.Stopwords})
	and := os.Args[3] == "and"
	passes, err := strconv.Atoi(os.Args[5])
	if err != nil || passes < 1 {
		fail("PASSES %q: want a count >= 1", os.Args[5])
	}
	chunk := 500
	if len(os.Args) > 6 {
		if chunk, err = strconv.Atoi(os.Args[6]); err != nil || chunk < 1 {
			fail("CHUNK %q: want a count >= 1", os.Args[6])
		}
	}
	var qn []newe.Query
	var qo []olde.Query
	f, err := os.Open(os.Args[2])
	if err != nil {
		fail("%v", err)
	}
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		id, text, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			fail("%s:%d: not an ID:text line", os.Args[2], ln)
		}
		terms := an.Tokens(text)
		if and {
			ok := len(terms) > 0
			for _, t := range terms {
				if _, k := xn.Lookup(t); !k {
					ok = false
				}
			}
			if !ok {
				continue
			}
			qn = append(qn, newe.Query{ID: id, Terms: terms, Mode: newe.And, K: 10})
			qo = append(qo, olde.Query{ID: id, Terms: terms, Mode: olde.And, K: 10})
		} else {
			qn = append(qn, newe.Query{ID: id, Terms: terms, Mode: newe.Or, K: 10})
			qo = append(qo, olde.Query{ID: id, Terms: terms, Mode: olde.Or, K: 10})
		}
	}
	on, oo := newe.Options{OrAlgo: newe.OrStrategy(os.Args[4])}, olde.Options{OrAlgo: olde.OrStrategy(os.Args[4])}
	if and {
		on, oo = newe.Options{AndAlgo: newe.AndAlgorithm(os.Args[4])}, olde.Options{AndAlgo: olde.AndAlgorithm(os.Args[4])}
	}
	on, err = on.Resolve()
	if err != nil {
		fail("ALGO: %v", err)
	}
	oo, err = oo.Resolve()
	if err != nil {
		fail("ALGO (old build): %v", err)
	}
	if err := sc.Err(); err != nil {
		fail("%s: %v", os.Args[2], err)
	}
	if len(qn) == 0 {
		fail("%s: no queries", os.Args[2])
	}
	en, eo := newe.New(xn), olde.New(xo)
	hn, ho := fnv.New64a(), fnv.New64a()
	for i := range qn {
		rn, _, err := en.Search(qn[i], on)
		if err != nil && !errors.Is(err, newe.ErrEmptyQuery) {
			fail("query %s: %v", qn[i].ID, err)
		}
		for _, r := range rn {
			fmt.Fprintf(hn, "%d %x;", r.Doc, math.Float32bits(r.Score))
		}
		ro, _, err := eo.Search(qo[i], oo)
		if err != nil && !errors.Is(err, olde.ErrEmptyQuery) {
			fail("query %s (old build): %v", qo[i].ID, err)
		}
		for _, r := range ro {
			fmt.Fprintf(ho, "%d %x;", r.Doc, math.Float32bits(r.Score))
		}
	}
	n := len(qn)
	mn, mo := make([]time.Duration, n), make([]time.Duration, n)
	for i := range mn {
		mn[i], mo[i] = 1<<62, 1<<62
	}
	runN := func(a, b int) {
		t := time.Now()
		for i := a; i < b; i++ {
			en.Search(qn[i], on)
			u := time.Now()
			mn[i] = min(mn[i], u.Sub(t))
			t = u
		}
	}
	runO := func(a, b int) {
		t := time.Now()
		for i := a; i < b; i++ {
			eo.Search(qo[i], oo)
			u := time.Now()
			mo[i] = min(mo[i], u.Sub(t))
			t = u
		}
	}
	var passN, passO []float64
	for p := 0; p < passes; p++ {
		var sn, so time.Duration
		for c, a := 0, 0; a < n; c, a = c+1, a+chunk {
			b := min(n, a+chunk)
			t0 := time.Now()
			if (c+p)%2 == 0 {
				runO(a, b)
				t1 := time.Now()
				so += t1.Sub(t0)
				runN(a, b)
				sn += time.Since(t1)
			} else {
				runN(a, b)
				t1 := time.Now()
				sn += t1.Sub(t0)
				runO(a, b)
				so += time.Since(t1)
			}
		}
		passN = append(passN, float64(sn.Microseconds())/float64(n))
		passO = append(passO, float64(so.Microseconds())/float64(n))
	}
	var sn, so time.Duration
	for i := range mn {
		sn += mn[i]
		so += mo[i]
	}
	id := "identical"
	if hn.Sum64() != ho.Sum64() {
		id = "DIFFER"
	}
	fmt.Printf("%s-%s n=%d qmin old %.2f new %.2f us/q ratio %.3f | passes old %v new %v | %s\n", os.Args[3], os.Args[4], n, float64(so.Microseconds())/float64(n), float64(sn.Microseconds())/float64(n), float64(so)/float64(sn), fmtf(passO), fmtf(passN), id)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pair: "+format+"\n", args...)
	os.Exit(1)
}

func fmtf(v []float64) string {
	s := ""
	for _, x := range v {
		s += fmt.Sprintf(" %.1f", x)
	}
	return s
}
