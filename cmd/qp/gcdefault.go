package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// serviceGCPercent is the GOGC of the long-running query processes (qp
// serve, qp bench sched) when the environment sets none. Their per-query
// garbage is small but its rate is high (a million queries a second) and
// the live heap of a small index is small, so at Go's default of 100 the
// collector runs tens of times a second; on the H100 host GOGC=400 raised
// the sustained rates of bench sched by 4-30% (docs/BENCHMARKS.md, issue
// 24: GPU-alone AND+OR +10%, CPU+GPU AND+OR +30%).
const serviceGCPercent = 400

// serviceMemFraction is the share of the machine's memory set as the soft
// memory limit with serviceGCPercent: a large live heap (a 10M-document
// index) then collects at GOGC 400 until it nears that limit, and more
// often from there, instead of growing to five times its live size.
const serviceMemFraction = 0.5

// gcDefault applies serviceGCPercent and the memory limit when neither
// GOGC nor GOMEMLIMIT is set, and says what it did (for the process's
// log line): the collector as the environment set it, or the defaults
// applied. Where the machine's memory is unknown (no /proc/meminfo) it
// leaves Go's defaults.
func gcDefault() string {
	if v, ok := os.LookupEnv("GOGC"); ok {
		return "GOGC=" + v + " (environment)"
	}
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return "GOMEMLIMIT=" + v + " (environment), GOGC 100"
	}
	total, err := memTotal()
	if err != nil || total == 0 {
		return "GOGC 100 (machine memory unknown)"
	}
	limit := int64(float64(total) * serviceMemFraction)
	debug.SetGCPercent(serviceGCPercent)
	debug.SetMemoryLimit(limit)
	return fmt.Sprintf("GOGC %d, memory limit %d MiB (half the machine's; set GOGC or GOMEMLIMIT to override)", serviceGCPercent, limit>>20)
}

// memTotal is the machine's memory in bytes, from /proc/meminfo.
func memTotal() (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseMemTotal(f)
}

// parseMemTotal reads the MemTotal line ("MemTotal:  16318412 kB") of a
// /proc/meminfo text.
func parseMemTotal(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("meminfo: bad MemTotal line %q", sc.Text())
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("meminfo: bad MemTotal line %q: %w", sc.Text(), err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("meminfo: no MemTotal line")
}
