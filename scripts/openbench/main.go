// Command openbench measures index.Open: wall time of Open (and of the
// first pass over every list's skip table and blocks, which brings a
// mapped file in), and the process's memory after Open from
// /proc/self/status (RssAnon: private heap; RssFile: file pages mapped,
// shared with the page cache and other processes). Linux only.
//
//	go run ./scripts/openbench INDEX...
//
// Prints one line per index: path, open seconds, RssAnon MiB, RssFile MiB,
// scan seconds. Build it from two checkouts (before/after) and run the
// binaries interleaved (A B A B) to compare.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/qpengine/qp/index"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: openbench INDEX...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		runtime.GC()
		t0 := time.Now()
		x, err := index.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		open := time.Since(t0)
		runtime.GC()
		anon, file := rss()
		t1 := time.Now()
		var sum int
		for t := 0; t < x.NumTerms(); t++ {
			l, err := x.List(t)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			sum += len(l.DocBytes()) + len(l.FreqBytes())
		}
		scan := time.Since(t1)
		fmt.Printf("%s\topen_s %.3f\trss_anon_mib %.0f\trss_file_mib %.0f\tlists_s %.3f\tpostings_mib %.0f\n",
			path, open.Seconds(), anon, file, scan.Seconds(), float64(sum)/(1<<20))
		if c, ok := any(x).(interface{ Close() error }); ok {
			c.Close()
		}
	}
}

// rss reads RssAnon and RssFile (MiB) of this process.
func rss() (anon, file float64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1, -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb float64
		if n, _ := fmt.Sscanf(line, "RssAnon: %f kB", &kb); n == 1 {
			anon = kb / 1024
		}
		if n, _ := fmt.Sscanf(line, "RssFile: %f kB", &kb); n == 1 {
			file = kb / 1024
		}
	}
	return anon, file
}
