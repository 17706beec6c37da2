package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/qpengine/qp/serve"
)

func init() {
	registerBench("pipebound", "[URL] --rate R[,R...]", `the pipelined GPU server's latency floor at given rates
(serve.PipeModel), from a running qp serve's measured
batch fits (its /metrics) or from costs given as flags`, benchPipeBound)
}

// The gauges of a pipelined GPU server's fits (serve/metrics.go).
var pipeGauges = [4]string{"qp_serve_gpu_device_fixed_seconds", "qp_serve_gpu_device_per_query_seconds",
	"qp_serve_gpu_prepare_fixed_seconds", "qp_serve_gpu_prepare_per_query_seconds"}

func benchPipeBound(c command, args []string) error {
	c.name = "bench pipebound"
	c.args = "[URL] --rate R[,R...] [flags]"
	fs := newFlags(c, `Prints, for each rate (queries/s), the pipelined GPU server's latency floor:
the smallest stable batch n* = λa/(1 − λb), its cycle, and the --q quantile
q·T + P(n*) + D(n*) (serve/pipebound.go, docs/BENCHMARKS.md "The p99
floor"), with the device phase D(n) = a + b·n and the host preparation
P(n) = c + d·n fitted by a running qp serve --device gpu on its recent
batches (read from URL/metrics: run it right after a load level, before
the fits move) or given by --device-a, --device-b, --prep-a, --prep-b
(which override the server's). Then the fixed cost a, or the per-query
cost b, that would bring the floor down to --target.`)
	rates := fs.String("rate", "", "arrival rates in queries/s, comma-separated (required)")
	q := fs.Float64("q", 0.99, "the latency quantile, in (0, 1)")
	target := fs.Duration("target", 20*time.Millisecond, "the latency target the costs are solved for")
	devA := fs.Duration("device-a", -1, "the device phase's fixed cost a per batch (default: the server's fit)")
	devB := fs.Duration("device-b", -1, "the device phase's cost b per query (default: the server's fit)")
	prepA := fs.Duration("prep-a", -1, "the host preparation's fixed cost c per batch (default: the server's fit; 0 without URL)")
	prepB := fs.Duration("prep-b", -1, "the host preparation's cost d per query (default: the server's fit; 0 without URL)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fs.Usage()
		return errUsage
	}
	var rs []float64
	for _, f := range splitComma(*rates) {
		r, err := strconv.ParseFloat(f, 64)
		if err != nil || !(r > 0) {
			return fmt.Errorf("--rate %q: want positive numbers", *rates)
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return errors.New("--rate: at least one rate (queries/s)")
	}
	if !(*q > 0 && *q < 1) || *target <= 0 {
		return fmt.Errorf("--q %v: want 0 < q < 1; --target %v: want > 0", *q, *target)
	}
	var m serve.PipeModel
	src := "flags"
	if len(pos) == 1 {
		g, err := scrapeGauges(strings.TrimRight(pos[0], "/")+"/metrics", pipeGauges[:])
		if err != nil {
			return err
		}
		m = serve.PipeModel{DeviceA: g[0], DeviceB: g[1], PrepA: g[2], PrepB: g[3]}
		src = pos[0] + "'s fits"
	} else if *devA < 0 || *devB < 0 {
		return errors.New("without URL, --device-a and --device-b are required")
	}
	for _, f := range []struct {
		d   time.Duration
		dst *float64
	}{{*devA, &m.DeviceA}, {*devB, &m.DeviceB}, {*prepA, &m.PrepA}, {*prepB, &m.PrepB}} {
		if f.d >= 0 {
			*f.dst = f.d.Seconds()
		}
	}
	if m.DeviceA+m.DeviceB <= 0 {
		return fmt.Errorf("%s: no device fit (a = b = 0: no pipelined GPU batch has run)", src)
	}
	fmt.Printf("model (%s): device D(n) = %.3f ms + %.3f us·n, preparation P(n) = %.3f ms + %.3f us·n\n",
		src, 1e3*m.DeviceA, 1e6*m.DeviceB, 1e3*m.PrepA, 1e6*m.PrepB)
	for _, r := range rs {
		fmt.Println(pipeBoundLine(m, r, *q, *target))
	}
	return nil
}

// pipeBoundLine is one rate's line of qp bench pipebound (and of bench
// serve's summary).
func pipeBoundLine(m serve.PipeModel, rate, q float64, target time.Duration) string {
	b := m.Bound(rate, q)
	if !b.Stable {
		return fmt.Sprintf("rate %.0f/s: no stable batch (rate × per-query cost >= 1: above the pipeline's capacity %.0f/s)",
			rate, 1/max(m.DeviceB, m.PrepB))
	}
	s := fmt.Sprintf("rate %.0f/s: batch %.0f, cycle %.2f ms (device %.2f, preparation %.2f), p%g floor %.2f ms",
		rate, b.Batch, ms(b.Period), ms(b.Device), ms(b.Prep), 100*q, ms(b.Latency))
	if b.Latency <= target {
		return s + fmt.Sprintf(" (<= %v)", target)
	}
	a, okA, pb, okB := m.Need(rate, q, target)
	need := func(ok bool, v float64, unit string, scale float64) string {
		if !ok {
			return "none"
		}
		return fmt.Sprintf("<= %.3g %s", v*scale, unit)
	}
	return s + fmt.Sprintf("; %v needs device fixed cost %s (now %.3g) or per query %s (now %.3g)",
		target, need(okA, a, "ms", 1e3), 1e3*m.DeviceA, need(okB, pb, "us", 1e6), 1e6*m.DeviceB)
}

// scrapeGauges reads the values of the unlabelled series names from a
// Prometheus text exposition at url.
func scrapeGauges(url string, names []string) ([]float64, error) {
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return parseGauges(resp.Body, url, names)
}

// parseGauges is scrapeGauges on the exposition r (from src).
func parseGauges(r io.Reader, src string, names []string) ([]float64, error) {
	vals, found := make([]float64, len(names)), make([]bool, len(names))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		for i, n := range names {
			if f[0] == n {
				v, err := strconv.ParseFloat(f[1], 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", src, n, err)
				}
				vals[i], found[i] = v, true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	for i, ok := range found {
		if !ok {
			return nil, fmt.Errorf("%s: no %s (not a qp serve --device gpu, or an older build)", src, names[i])
		}
	}
	return vals, nil
}
