package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/internal/cputime"
	"github.com/qpengine/qp/serve"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func init() {
	registerBench("serve", "INDEX QUERIES", `qp serve under load on loopback (vegeta): q/s and p50/p99
at saturation and fixed rates, against the in-process
batch throughput of the same backend; 10,000 connections`, benchServe)
	registerBench("load", "URL QUERIES", `one level of HTTP load (vegeta) on a running qp serve;
prints one JSON row (the load generator of bench serve
--gen-procs, usable alone)`, benchLoad)
}

// loadRow is one load level's outcome. The client fields come from the
// load generator; the server fields from the serving process.
type loadRow struct {
	Name   string        `json:"level"`
	Rate   float64       `json:"offered_rps"`         // offered requests/s (0: as fast as possible)
	PerReq int           `json:"queries_per_request"` // queries per request
	Conns  int           `json:"connections"`
	QPS    float64       `json:"qps"` // queries answered (2xx) per second
	P50    time.Duration `json:"p50_ns"`
	P90    time.Duration `json:"p90_ns,omitempty"` // raw client only
	P99    time.Duration `json:"p99_ns"`
	P999   time.Duration `json:"p999_ns,omitempty"` // raw client only
	Max    time.Duration `json:"max_ns"`
	// Raw client only (bench_rawload.go): the service time (answer − send)
	// and the send lag (send − due time) percentiles; the latency fields
	// above count from the due time (service + lag).
	SvcP50 time.Duration `json:"service_p50_ns,omitempty"`
	SvcP99 time.Duration `json:"service_p99_ns,omitempty"`
	LagP50 time.Duration `json:"send_lag_p50_ns,omitempty"`
	LagP99 time.Duration `json:"send_lag_p99_ns,omitempty"`
	LagMax time.Duration `json:"send_lag_max_ns,omitempty"`
	// OwnLagP99 and OwnLagMax: the send lag less the wait for a free
	// connection (send − max(due, the connection's claim of the request)):
	// the generator's own lateness (its timers and CPU), which no server
	// causes; Short counts the requests claimed more than 1 ms after their
	// due time (no connection free: rate × latency above the connections).
	OwnLagP99 time.Duration `json:"gen_lag_p99_ns,omitempty"`
	OwnLagMax time.Duration `json:"gen_lag_max_ns,omitempty"`
	Short     int           `json:"short_of_conns,omitempty"`
	Redials   int           `json:"redials,omitempty"` // connections dialed again in the level
	// GenPeakRSSMB is the generator process's peak resident set (VmHWM;
	// in-process, the server's and the generator's together).
	GenPeakRSSMB float64  `json:"gen_peak_rss_mb,omitempty"`
	Success      float64  `json:"success"`
	Codes        string   `json:"codes"`
	Requests     uint64   `json:"requests"`
	Errors       []string `json:"errors,omitempty"` // the first few distinct client errors
	ClientCPU    float64  `json:"client_cpu_s"`     // the generator's CPU seconds (separate process only)
	Wall         float64  `json:"wall_s"`
	ServerCPU    float64  `json:"server_cpu_s"` // the serving process's CPU seconds (the generator's too when in-process)
	BatchMean    float64  `json:"mean_batch"`   // queries per batch on the processor
	QueueMeanMS  float64  `json:"mean_queue_ms"`
	HeapMB       float64  `json:"peak_heap_mb"`
	RSSMB        float64  `json:"rss_mb"`
	Goroutines   int      `json:"peak_goroutines"`
	// ListenOverflows counts the connections the kernel dropped because
	// the listen queue was full (Linux TcpExt ListenOverflows, the whole
	// machine's, during the level): a client whose handshake is dropped
	// retries after 1, 3, 7 s... and may time out without the server ever
	// seeing its request.
	ListenOverflows int64 `json:"listen_overflows"`
}

func benchServe(c command, args []string) error {
	c.name = "bench serve"
	c.args = "INDEX QUERIES [flags]"
	fs := newFlags(c, `Measures qp serve end to end on loopback with vegeta: first the in-process
batch throughput of the backend (qp.Stream over the whole query log, as qp
query does), then HTTP load for --duration per level: at saturation (each
of --conns-one connections sending one query per request (POST /v1/search)
as fast as answered; --conns connections with --per-request queries per
request (POST /v1/search/batch)); at the fixed --fractions of the best
one-query saturation rate (rate × 100 ms connections, at least 64); and --many connections at once (memory,
goroutines, shedding, no crash). With --gen-procs N the load generator
runs as a separate process (qp bench load) with GOMAXPROCS=N, and the
server's CPU use is its own; with 0 it runs in this process (vegeta as a
library) and competes with the server inside one Go runtime. The server's
CPU seconds per level (cpu/q: microseconds per answered query) say how
much of the machine each query takes end to end.`)
	qf := addQueryFlags(fs)
	duration := fs.Duration("duration", 10*time.Second, "length of each load level")
	conns := fs.Int("conns", 64, "connections of the batch-request saturation level")
	connsOne := fs.String("conns-one", "64,1024", "connections of the one-query saturation levels (a list: one level each;\nthe best sets the fixed rates). 64 connections keep at most 64 queries\nin flight, 64 x --per-request do the batch requests")
	perReq := fs.Int("per-request", 100, "queries per batch request at saturation (0: skip)")
	fractions := fs.String("fractions", "0.25,0.5,0.8", "fixed rates as fractions of the one-query saturation rate")
	many := fs.Int("many", 10000, "connections of the many-connections level (0: skip)")
	limit := fs.Int("limit", 0, "use the first N queries of the log (0: all)")
	genProcs := fs.Int("gen-procs", 0, "run the load generator as a separate process with GOMAXPROCS=N\n(0: in this process)")
	wait := fs.Duration("batch-wait", serve.DefaultMaxWait, "qp serve --batch-wait")
	budget := fs.Duration("batch-budget", 0, "qp serve --batch-budget (negative: no cap; 0: its default)")
	maxBatch := fs.Int("batch-max", 0, "qp serve --batch-max (0: its default)")
	inflight := fs.Int("inflight", 0, "qp serve --inflight (0: its default)")
	queueWait := fs.Duration("max-queue-wait", 0, "qp serve --max-queue-wait (0: none)")
	lean := fs.Bool("lean-http", false, "qp serve --lean-http (the lean HTTP/1.1 path for whole POST /v1/search requests)")
	jsonOut := fs.String("json", "", "also write the rows as JSON to this file")
	client := fs.String("client", "vegeta", "the load generator's client: vegeta, or raw (plain HTTP/1.1 connections,\nabout a third of vegeta's CPU per request; qp bench load --client)")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the HTTP levels (server, and the load generator\nwhen it runs in-process) to this new file (go tool pprof)")
	pos, err := parseArgs(fs, args, 2)
	if err != nil {
		return err
	}
	var connList []int
	for _, f := range splitComma(*connsOne) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return fmt.Errorf("--conns-one %q: want positive integers", *connsOne)
		}
		connList = append(connList, n)
	}
	var fracs []float64
	for _, f := range splitComma(*fractions) {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || x <= 0 {
			return fmt.Errorf("--fractions %q: want positive numbers", *fractions)
		}
		fracs = append(fracs, x)
	}
	if *client != "vegeta" && *client != "raw" {
		return fmt.Errorf("--client %q: want vegeta or raw", *client)
	}
	if len(connList) == 0 || *conns < 1 || *genProcs < 0 {
		return errors.New("--conns-one needs a connection count; --conns at least 1; --gen-procs at least 0")
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
		if n := len(e.Analyzer().Tokens(q.Text)); n > 0 && n <= 64 {
			texts = append(texts, q.Text)
		}
	}
	if len(texts) == 0 {
		return fmt.Errorf("%s: no query with searchable terms", pos[1])
	}
	inproc, inCPU, err := inProcessQPS(e, texts, mode, *qf.k, opt)
	if err != nil {
		return err
	}
	fmt.Printf("in-process batch throughput (%s, %s, k=%d, %d queries): %.0f q/s, %.0f us of CPU per query\n",
		e.Backend().Name(), mode, *qf.k, len(texts), inproc, 1e6*inCPU)

	s, err := serve.New(e, serve.Config{Options: opt, Batch: serve.BatchConfig{MaxWait: *wait, Budget: *budget,
		MaxBatch: *maxBatch, Inflight: *inflight, MaxQueueWait: *queueWait},
		Limits: serve.Limits{DefaultK: *qf.k, DefaultMode: mode, MaxBatch: max(*perReq, 1)}, IdleTimeout: time.Minute, LeanHTTP: *lean})
	if err != nil {
		return err
	}
	bc := s.Batch()
	budgetText := bc.Budget.String()
	if bc.Pipelined() && bc.Budget == 0 {
		budgetText = "auto (pipelined GPU)"
	}
	fmt.Printf("server: inflight %d, batch max %d, budget %s, max wait %v, max queue wait %v, lean HTTP %v; load generator: %s, client %s\n",
		bc.Inflight, bc.MaxBatch, budgetText, bc.MaxWait, bc.MaxQueueWait, *lean, genWhere(*genProcs), *client)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go s.Serve(ln)
	defer s.Shutdown(context.Background())
	url := "http://" + ln.Addr().String()
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	lg := &loader{s: s, url: url, texts: texts, mode: mode, k: *qf.k, procs: *genProcs, du: *duration, client: *client}
	if *genProcs > 0 {
		if lg.textFile, err = writeTexts(texts); err != nil {
			return err
		}
		defer os.Remove(lg.textFile)
	}
	var rows []loadRow
	best := 0.0
	for _, n := range connList {
		r, err := lg.level(fmt.Sprintf("saturation, 1 query/request, %d conns", n), 1, 0, n)
		if err != nil {
			return err
		}
		rows = append(rows, r)
		best = max(best, r.QPS)
	}
	bestBatch := 0.0
	if *perReq > 0 {
		r, err := lg.level(fmt.Sprintf("saturation, %d queries/request, %d conns", *perReq, *conns), *perReq, 0, *conns)
		if err != nil {
			return err
		}
		rows = append(rows, r)
		bestBatch = r.QPS
	}
	for _, x := range fracs {
		r, err := lg.level(fmt.Sprintf("%.0f%% of saturation", 100*x), 1, x*best, rateConns(x*best))
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	if *many > 0 {
		r, err := lg.level(fmt.Sprintf("%d connections", *many), 1, 0, *many)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	printRows(rows)
	fmt.Printf("\nHTTP at saturation / in-process: 1 query/request %.0f%%, %d/request %.0f%% (target >= 80%%)\n",
		100*best/inproc, *perReq, 100*bestBatch/inproc)
	fmt.Printf("server CPU per query, in-process / HTTP at saturation:%s\n", cpuRatios(rows[:len(connList)+min(1, *perReq)], inCPU))
	if pm, ok := s.PipeModel(); ok {
		// The pipelined GPU's latency floor (serve.PipeModel) from the
		// server's own fits after the levels: issue 25's 80% of the
		// in-process rate, then each fixed rate.
		fmt.Printf("pipelined GPU model (serve.PipeModel, the server's fits now): device %.3f ms + %.3f us/query, preparation %.3f ms + %.3f us/query\n",
			1e3*pm.DeviceA, 1e6*pm.DeviceB, 1e3*pm.PrepA, 1e6*pm.PrepB)
		fmt.Printf("  80%% of in-process, %s\n", pipeBoundLine(pm, 0.8*inproc, 0.99, 20*time.Millisecond))
		for _, x := range fracs {
			fmt.Printf("  %.0f%% of saturation, %s\n", 100*x, pipeBoundLine(pm, x*best, 0.99, 20*time.Millisecond))
		}
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(map[string]any{"in_process_qps": inproc, "in_process_cpu_s_per_query": inCPU,
			"gen_procs": *genProcs, "rows": rows}, "", " ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// rateConns is the connections of a fixed-rate level of rate requests/s:
// rate × 100 ms (Little's law: the requests in flight at a latency of
// 100 ms), at least 64. Fewer would cap the rate the generator can offer
// whenever latency passes conns/rate (the raw client's send lag shows it).
func rateConns(rate float64) int {
	return max(64, int(math.Ceil(0.1*rate)))
}

// cpuRatios says, per saturation row, the in-process CPU per query over
// the server's CPU per answered query: the share of in-process throughput
// HTTP would reach with the server alone on the machine's cores (CPU
// bound backends only; with the generator in-process its CPU counts too).
func cpuRatios(rows []loadRow, inCPU float64) string {
	var b strings.Builder
	for _, r := range rows {
		if n := r.QPS * r.Wall; n > 0 && r.ServerCPU > 0 {
			fmt.Fprintf(&b, " %s %.0f%%;", r.Name[len("saturation, "):], 100*inCPU/(r.ServerCPU/n))
		}
	}
	return b.String()
}

func genWhere(procs int) string {
	if procs == 0 {
		return "in this process"
	}
	return fmt.Sprintf("a separate process, GOMAXPROCS=%d", procs)
}

func printRows(rows []loadRow) {
	fmt.Printf("\n%-40s %9s %9s %8s %8s %8s %8s %8s %8s %7s %7s %7s %7s %6s %6s %6s  %s\n", "level", "offered/s", "queries/s", "p50 ms", "p99 ms",
		"p99.9 ms", "lag99 ms", "max ms", "success", "srv cpu", "cpu/q", "gen cpu", "batch", "queue", "rssMB", "gorout", "codes")
	for _, r := range rows {
		offered := "max"
		if r.Rate > 0 {
			offered = fmt.Sprintf("%.0f", r.Rate)
		}
		perQ := 0.0
		if ans := r.QPS * r.Wall; ans > 0 {
			perQ = 1e6 * r.ServerCPU / ans
		}
		fmt.Printf("%-40s %9s %9.0f %8.2f %8.2f %8.2f %8.2f %8.0f %7.2f%% %6.1fc %6.0fus %6.1fc %7.1f %5.1fms %6.0f %6d  %s\n", r.Name, offered, r.QPS,
			ms(r.P50), ms(r.P99), ms(r.P999), ms(r.LagP99), ms(r.Max), 100*r.Success, r.ServerCPU/max(r.Wall, 1e-9), perQ, r.ClientCPU/max(r.Wall, 1e-9),
			r.BatchMean, r.QueueMeanMS, r.RSSMB, r.Goroutines, r.Codes)
		for _, e := range r.Errors {
			fmt.Printf("    client error: %s\n", e)
		}
		if r.ListenOverflows > 0 {
			fmt.Printf("    listen queue overflowed %d times (connections dropped by the kernel before accept)\n", r.ListenOverflows)
		}
	}
	fmt.Println("(latencies from each request's due time; p99.9 and lag99, the 99th percentile of send time − due time: raw client only;\n srv cpu, gen cpu: cores used by the server process and by a separate generator; cpu/q: server CPU per answered query;\n batch: mean queries per batch on the processor; queue: mean wait from arrival to batch start)")
}

// loader runs load levels against a server of this process.
type loader struct {
	s        *serve.Server
	url      string
	texts    []string
	textFile string // the texts for a separate generator
	mode     engine.Mode
	k        int
	procs    int // 0: generate in this process
	du       time.Duration
	client   string // vegeta or raw
}

// level runs one load level and adds the server's side: its CPU seconds,
// batches, queueing and peak memory.
func (l *loader) level(name string, per int, rate float64, conns int) (loadRow, error) {
	st0, cpu0, t0, lo0 := l.s.Stats(), cpuSeconds(), time.Now(), listenOverflows()
	peak := startPeakSampler()
	var row loadRow
	var err error
	if l.procs == 0 {
		row, err = load(l.client, name, l.url, l.texts, per, l.mode, l.k, rate, conns, l.du)
	} else {
		row, err = l.child(name, per, rate, conns)
	}
	heap, gor := peak()
	if err != nil {
		return row, err
	}
	st1 := l.s.Stats()
	row.ServerCPU, row.Wall = cpuSeconds()-cpu0, time.Since(t0).Seconds()
	row.HeapMB, row.Goroutines, row.RSSMB = float64(heap)/(1<<20), gor, rssMB()
	row.ListenOverflows = listenOverflows() - lo0
	if nb := st1.Batches - st0.Batches; nb > 0 {
		nq := st1.Queries - st0.Queries
		row.BatchMean = float64(nq) / float64(nb)
		row.QueueMeanMS = ms(st1.QueueWait-st0.QueueWait) / float64(nq)
	}
	return row, nil
}

// child runs the level in a separate process: qp bench load, GOMAXPROCS
// bounded, one JSON row on its standard output.
func (l *loader) child(name string, per int, rate float64, conns int) (loadRow, error) {
	cmd, err := loadCommand("bench", "load", l.url, l.textFile, "--name", name, "--per-request", strconv.Itoa(per),
		"--rate", strconv.FormatFloat(rate, 'f', 0, 64), "--conns", strconv.Itoa(conns), "--duration", l.du.String(),
		"--mode", l.mode.String(), "-k", strconv.Itoa(l.k), "--client", l.client)
	if err != nil {
		return loadRow{}, err
	}
	cmd.Env = append(cmd.Environ(), fmt.Sprintf("GOMAXPROCS=%d", l.procs))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return loadRow{}, fmt.Errorf("load generator (%s): %w", name, err)
	}
	var row loadRow
	if err := json.Unmarshal(out, &row); err != nil {
		return loadRow{}, fmt.Errorf("load generator (%s): its output %.200q: %w", name, out, err)
	}
	return row, nil
}

// loadCommand is the command that runs qp with args: this executable
// (tests replace it with their re-executed test binary).
var loadCommand = func(args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(exe, args...), nil
}

// writeTexts writes texts as a query file (qid:text lines) for a separate
// generator.
func writeTexts(texts []string) (string, error) {
	f, err := os.CreateTemp("", "qp-bench-load-*.txt")
	if err != nil {
		return "", err
	}
	w := bufio.NewWriter(f)
	for i, t := range texts {
		fmt.Fprintf(w, "%d:%s\n", i+1, t)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

// benchLoad is qp bench load: one level of load on a running server.
func benchLoad(c command, args []string) error {
	c.name = "bench load"
	c.args = "URL QUERIES [flags]"
	fs := newFlags(c, `Loads a running qp serve at URL (e.g. http://127.0.0.1:8080) with the
queries of QUERIES (qid:text lines) for --duration: --per-request queries
per request (1: POST /v1/search; more: POST /v1/search/batch), at --rate
requests/s (0: as fast as --conns connections are answered). Prints one
JSON row: queries/s, latency percentiles in ns, status codes, and the
generator's own CPU seconds (client_cpu_s). With --client raw the fixed
rate is one open-loop schedule shared by the connections (the next free
connection sends the next due request), latency counts from each
request's due time, and the row adds p90/p99.9, the service time (send to
answer) and the send lag (due to send: when it grows, the generator, not
the server, sets the tail; give it about rate x latency connections),
redials and the generator's peak RSS. qp bench serve --gen-procs runs
it; bound its cores with GOMAXPROCS.`)
	name := fs.String("name", "load", "the row's name")
	per := fs.Int("per-request", 1, "queries per request")
	rate := fs.Float64("rate", 0, "requests per second (0: as fast as answered)")
	conns := fs.Int("conns", 64, "connections")
	du := fs.Duration("duration", 10*time.Second, "length of the load")
	modeS := fs.String("mode", "and", "and, or or andor")
	k := fs.Int("k", 10, "results per query")
	fs.IntVar(k, "n", 10, "alias of -k")
	limit := fs.Int("limit", 0, "use the first N queries (0: all)")
	client := fs.String("client", "vegeta", "vegeta (net/http's client), or raw: HTTP/1.1 over plain connections,\nabout a third of vegeta's CPU per request (see bench_rawload.go)")
	maxGenLag := fs.Duration("max-gen-lag", 0, "raw client at a fixed rate: fail (exit 1, after the row) when the\ngenerator's own send lag p99 (gen_lag_p99_ns: late on a free connection,\nits timers or CPU) exceeds this: the level then measured the generator,\nnot the server (0: no check)")
	pos, err := parseArgs(fs, args, 2)
	if err != nil {
		return err
	}
	mode, err := engine.ParseMode(*modeS)
	if err != nil {
		return err
	}
	if *per < 1 || *conns < 1 || *du <= 0 || *rate < 0 {
		return errors.New("--per-request and --conns must be at least 1, --duration positive, --rate >= 0")
	}
	if *client != "vegeta" && *client != "raw" {
		return fmt.Errorf("--client %q: want vegeta or raw", *client)
	}
	if *maxGenLag < 0 || (*maxGenLag > 0 && (*client != "raw" || *rate == 0)) {
		return fmt.Errorf("--max-gen-lag %v: want >= 0, with --client raw and a --rate", *maxGenLag)
	}
	fq, err := readQueryFile(pos[1], *limit)
	if err != nil {
		return err
	}
	texts := make([]string, len(fq))
	for i, q := range fq {
		texts[i] = q.Text
	}
	if len(texts) == 0 {
		return fmt.Errorf("%s: no queries", pos[1])
	}
	cpu0, t0 := cpuSeconds(), time.Now()
	row, err := load(*client, *name, strings.TrimRight(pos[0], "/"), texts, *per, mode, *k, *rate, *conns, *du)
	if err != nil {
		return err
	}
	row.ClientCPU, row.Wall = cpuSeconds()-cpu0, time.Since(t0).Seconds()
	if err := json.NewEncoder(os.Stdout).Encode(row); err != nil {
		return err
	}
	return checkGenLag(row, *maxGenLag)
}

// checkGenLag fails a level whose generator was late on its own (row's
// OwnLagP99 above max > 0): its latencies are the generator's.
func checkGenLag(row loadRow, max time.Duration) error {
	if max > 0 && row.OwnLagP99 > max {
		return fmt.Errorf("level %s: the generator's own send lag p99 %v > --max-gen-lag %v (late with a free connection: its timers or CPU): the level measured the generator, not the server; give it more cores (GOMAXPROCS, taskset) or fewer connections",
			row.Name, row.OwnLagP99.Round(time.Microsecond), max)
	}
	return nil
}

// startPeakSampler samples the process's heap in use and goroutines every
// 200 ms until the returned function is called, which returns the peaks.
func startPeakSampler() func() (heap uint64, goroutines int) {
	stop, done := make(chan struct{}), make(chan struct{})
	var heap uint64
	var gor int
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		heap, gor = max(heap, m.HeapInuse), max(gor, runtime.NumGoroutine())
	}
	go func() {
		defer close(done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				sample()
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() (uint64, int) { close(stop); <-done; return heap, gor }
}

// inProcessQPS is the backend's batch throughput on texts: the best of
// three passes of qp.Stream over all of them, and that pass's CPU seconds
// per query (the process's: on a shared machine the throughput depends on
// the cores it got, the CPU per query much less).
func inProcessQPS(e *qp.Engine, texts []string, mode engine.Mode, k int, opt engine.Options) (qps, cpu float64, err error) {
	qs := make([]engine.Query, len(texts))
	for i, t := range texts {
		qs[i] = e.Query(qp.Request{ID: strconv.Itoa(i), Text: t, Mode: mode, K: k})
	}
	for range 3 {
		runtime.GC()
		start, c0 := time.Now(), cpuSeconds()
		if err := qp.Stream(context.Background(), e.Backend(), qs, opt, 0, func(int, []engine.Response) error { return nil }); err != nil {
			return 0, 0, err
		}
		if r := float64(len(qs)) / time.Since(start).Seconds(); r > qps {
			qps, cpu = r, (cpuSeconds()-c0)/float64(len(qs))
		}
	}
	return qps, cpu, nil
}

// targets are POST requests of per queries each, round-robin over texts.
func targets(url string, texts []string, per int, mode engine.Mode, k int) vegeta.Targeter {
	return vegeta.NewStaticTargeter(targetList(url, texts, per, mode, k)...)
}

// targetList are the requests of targets.
func targetList(url string, texts []string, per int, mode engine.Mode, k int) []vegeta.Target {
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
	return ts
}

// load runs one level with client "vegeta" or "raw" (bench_rawload.go).
func load(client, name, base string, texts []string, per int, mode engine.Mode, k int, rate float64, conns int, du time.Duration) (loadRow, error) {
	if client == "vegeta" {
		return attack(name, targets(base, texts, per, mode, k), rate, per, conns, du), nil
	}
	addr, err := rawAddr(base)
	if err != nil {
		return loadRow{}, err
	}
	ts, err := rawTargets(addr, targetList(base, texts, per, mode, k))
	if err != nil {
		return loadRow{}, err
	}
	return rawAttack(name, addr, ts, rate, per, conns, du), nil
}

// attack runs one load level: rate requests/s (0: as fast as conns
// connections are answered) for du; the client's side of a row.
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
	for r := range a.Attack(tr, pacer, du, name) {
		m.Add(r)
	}
	m.Close()
	a.Stop()
	var codes []string
	for c, n := range m.StatusCodes {
		codes = append(codes, fmt.Sprintf("%s:%d", c, n))
	}
	slices.Sort(codes)
	ok := 0
	for c, n := range m.StatusCodes {
		if strings.HasPrefix(c, "2") {
			ok += n
		}
	}
	// Queries answered per second: 2xx requests over the attack's wall
	// time (vegeta's Throughput, successes/s, scaled to queries).
	qps := 0.0
	if m.Duration+m.Wait > 0 {
		qps = float64(ok*per) / (m.Duration + m.Wait).Seconds()
	}
	return loadRow{Name: name, Rate: rate, PerReq: per, Conns: conns, QPS: qps, P50: m.Latencies.P50,
		P99: m.Latencies.P99, Max: m.Latencies.Max, Success: m.Success, Codes: strings.Join(codes, " "),
		Requests: m.Requests, Errors: m.Errors[:min(3, len(m.Errors))]}
}

// listenOverflows is the machine's count of connections dropped on a
// full listen queue (/proc/net/netstat TcpExt ListenOverflows; 0 where
// there is none).
func listenOverflows() int64 {
	b, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		return 0
	}
	var keys []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "TcpExt:" {
			continue
		}
		if keys == nil {
			keys = f
			continue
		}
		for i, k := range keys {
			if k == "ListenOverflows" && i < len(f) {
				n, _ := strconv.ParseInt(f[i], 10, 64)
				return n
			}
		}
	}
	return 0
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

// cpuSeconds is the CPU time (user and system) this process has used; 0
// where it is unknown.
func cpuSeconds() float64 {
	d, _ := cputime.Process()
	return d.Seconds()
}
