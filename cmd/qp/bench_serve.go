package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/serve"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func init() {
	registerBench("serve", "INDEX QUERIES", `qp serve under load on loopback (vegeta): q/s and p50/p99
at saturation and fixed rates, against the in-process
batch throughput of the same backend; 10,000 connections`, benchServe)
}

// loadRow is one load level's outcome.
type loadRow struct {
	name             string
	rate             float64 // offered requests/s (0: as fast as possible)
	perReq           int     // queries per request
	qps              float64 // queries answered per second
	p50, p99, max    time.Duration
	success          float64
	codes            string
	heapMB, rssMB    float64
	goroutines       int
	requests, errors uint64
}

func benchServe(c command, args []string) error {
	c.name = "bench serve"
	c.args = "INDEX QUERIES [flags]"
	fs := newFlags(c, `Measures qp serve end to end on loopback with vegeta (as a library) in the
same process: first the in-process batch throughput of the backend (qp.Stream
over the whole query log, as qp query does), then HTTP load for --duration
per level: at saturation (--conns connections sending as fast as they are
answered), one query per request (POST /v1/search) and --per-request
queries per request (POST /v1/search/batch); at the fixed --fractions of the
one-query saturation rate; and --many connections at once (memory and
goroutines, no crash). Server and load generator share the machine's cores.`)
	qf := addQueryFlags(fs)
	duration := fs.Duration("duration", 10*time.Second, "length of each load level")
	conns := fs.Int("conns", 64, "connections at saturation")
	perReq := fs.Int("per-request", 100, "queries per batch request at saturation (0: skip)")
	fractions := fs.String("fractions", "0.25,0.5,0.8", "fixed rates as fractions of the one-query saturation rate")
	many := fs.Int("many", 10000, "connections of the many-connections level (0: skip)")
	limit := fs.Int("limit", 0, "use the first N queries of the log (0: all)")
	wait := fs.Duration("batch-wait", serve.DefaultMaxWait, "qp serve --batch-wait")
	jsonOut := fs.String("json", "", "also write the rows as JSON to this file")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return errUsage
	}
	e, mode, opt, err := qf.openEngine(pos[0])
	if err != nil {
		return err
	}
	defer e.Close()
	fq, err := readQueryFile(pos[1], *limit)
	if err != nil {
		return err
	}
	// Queries without searchable terms would be 400s: leave them out of
	// both measurements.
	var texts []string
	for _, q := range fq {
		if len(e.Analyzer().Tokens(q.Text)) > 0 && len(e.Analyzer().Tokens(q.Text)) <= 64 {
			texts = append(texts, q.Text)
		}
	}
	inproc, err := inProcessQPS(e, texts, mode, *qf.k, opt)
	if err != nil {
		return err
	}
	fmt.Printf("in-process batch throughput (%s, %s, k=%d, %d queries): %.0f q/s\n", e.Backend().Name(), mode, *qf.k, len(texts), inproc)

	s, err := serve.New(e, serve.Config{Options: opt, Batch: serve.BatchConfig{MaxWait: *wait},
		Limits: serve.Limits{DefaultK: *qf.k, DefaultMode: mode, MaxBatch: max(*perReq, 1)}, IdleTimeout: time.Minute})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go s.Serve(ln)
	defer s.Shutdown(context.Background())
	url := "http://" + ln.Addr().String()
	one := targets(url, texts, 1, mode, *qf.k)
	var rows []loadRow
	sat := attack("saturation, 1 query/request", one, 0, 1, *conns, *duration)
	rows = append(rows, sat)
	if *perReq > 0 {
		rows = append(rows, attack(fmt.Sprintf("saturation, %d queries/request", *perReq),
			targets(url, texts, *perReq, mode, *qf.k), 0, *perReq, *conns, *duration))
	}
	for _, f := range splitComma(*fractions) {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || x <= 0 {
			return fmt.Errorf("--fractions %q: want positive numbers", *fractions)
		}
		rate := x * sat.qps
		rows = append(rows, attack(fmt.Sprintf("%.0f%% of saturation", 100*x), one, rate, 1, 10*(*conns), *duration))
	}
	if *many > 0 {
		rows = append(rows, attack(fmt.Sprintf("%d connections", *many), one, 0, 1, *many, *duration))
	}
	fmt.Printf("\n%-34s %10s %10s %9s %9s %9s %8s %7s %7s %6s  %s\n", "level", "offered/s", "queries/s", "p50 ms", "p99 ms", "max ms", "success", "heapMB", "rssMB", "gorout", "codes")
	for _, r := range rows {
		offered := "max"
		if r.rate > 0 {
			offered = fmt.Sprintf("%.0f", r.rate)
		}
		fmt.Printf("%-34s %10s %10.0f %9.3f %9.3f %9.1f %7.2f%% %7.0f %7.0f %6d  %s\n", r.name, offered, r.qps, ms(r.p50), ms(r.p99), ms(r.max),
			100*r.success, r.heapMB, r.rssMB, r.goroutines, r.codes)
	}
	best := 0.0
	for _, r := range rows[:min(2, len(rows))] {
		best = max(best, r.qps)
	}
	fmt.Printf("\nHTTP at saturation / in-process: 1 query/request %.0f%%, best %.0f%% (target >= 80%%)\n", 100*sat.qps/inproc, 100*best/inproc)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(map[string]any{"in_process_qps": inproc, "rows": rowsJSON(rows)}, "", " ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// inProcessQPS is the backend's batch throughput on texts: the best of
// three passes of qp.Stream over all of them.
func inProcessQPS(e *qp.Engine, texts []string, mode engine.Mode, k int, opt engine.Options) (float64, error) {
	qs := make([]engine.Query, len(texts))
	for i, t := range texts {
		qs[i] = e.Query(qp.Request{ID: strconv.Itoa(i), Text: t, Mode: mode, K: k})
	}
	best := 0.0
	for range 3 {
		runtime.GC()
		start := time.Now()
		if err := qp.Stream(context.Background(), e.Backend(), qs, opt, 0, func(int, []engine.Response) error { return nil }); err != nil {
			return 0, err
		}
		best = max(best, float64(len(qs))/time.Since(start).Seconds())
	}
	return best, nil
}

// targets are POST requests of per queries each, round-robin over texts.
func targets(url string, texts []string, per int, mode engine.Mode, k int) vegeta.Targeter {
	var ts []vegeta.Target
	hdr := http.Header{"Content-Type": {"application/json"}}
	for lo := 0; lo < len(texts); lo += per {
		var body []byte
		if per == 1 {
			body, _ = json.Marshal(serve.SearchRequest{Q: texts[lo], Mode: mode.String(), K: k})
			ts = append(ts, vegeta.Target{Method: "POST", URL: url + "/v1/search", Body: body, Header: hdr})
			continue
		}
		var br serve.BatchRequest
		for _, t := range texts[lo:min(lo+per, len(texts))] {
			br.Queries = append(br.Queries, serve.SearchRequest{Q: t, Mode: mode.String(), K: k})
		}
		body, _ = json.Marshal(br)
		ts = append(ts, vegeta.Target{Method: "POST", URL: url + "/v1/search/batch", Body: body, Header: hdr})
	}
	return vegeta.NewStaticTargeter(ts...)
}

// attack runs one load level: rate requests/s (0: as fast as conns
// connections are answered) for du.
func attack(name string, tr vegeta.Targeter, rate float64, per, conns int, du time.Duration) loadRow {
	opts := []func(*vegeta.Attacker){vegeta.Connections(conns), vegeta.MaxConnections(conns), vegeta.KeepAlive(true),
		vegeta.Timeout(30 * time.Second), vegeta.Workers(uint64(min(conns, 256))), vegeta.MaxWorkers(uint64(conns))}
	var pacer vegeta.Pacer = vegeta.ConstantPacer{}
	if rate > 0 {
		pacer = vegeta.ConstantPacer{Freq: max(1, int(rate)), Per: time.Second}
	} else {
		opts = append(opts, vegeta.Workers(uint64(conns)))
	}
	a := vegeta.NewAttacker(opts...)
	var m vegeta.Metrics
	var peakHeap uint64
	peakGor := 0
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	results := a.Attack(tr, pacer, du, name)
	for done := false; !done; {
		select {
		case r, ok := <-results:
			if !ok {
				done = true
				break
			}
			m.Add(r)
		case <-tick.C:
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peakHeap = max(peakHeap, ms.HeapInuse)
			peakGor = max(peakGor, runtime.NumGoroutine())
		}
	}
	m.Close()
	a.Stop()
	var codes []string
	for c, n := range m.StatusCodes {
		codes = append(codes, fmt.Sprintf("%s:%d", c, n))
	}
	return loadRow{name: name, rate: rate, perReq: per, qps: m.Throughput * float64(per), p50: m.Latencies.P50,
		p99: m.Latencies.P99, max: m.Latencies.Max, success: m.Success, codes: strings.Join(codes, " "),
		heapMB: float64(peakHeap) / (1 << 20), rssMB: rssMB(), goroutines: peakGor, requests: m.Requests, errors: uint64(len(m.Errors))}
}

// rssMB is the process's resident set (Linux /proc/self/statm), 0 elsewhere.
func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseFloat(f[1], 64)
	return pages * float64(os.Getpagesize()) / (1 << 20)
}

func rowsJSON(rows []loadRow) []map[string]any {
	var out []map[string]any
	for _, r := range rows {
		out = append(out, map[string]any{"level": r.name, "offered_rps": r.rate, "queries_per_request": r.perReq,
			"qps": r.qps, "p50_ms": ms(r.p50), "p99_ms": ms(r.p99), "max_ms": ms(r.max), "success": r.success,
			"codes": r.codes, "peak_heap_mb": r.heapMB, "rss_mb": r.rssMB, "peak_goroutines": r.goroutines})
	}
	return out
}
