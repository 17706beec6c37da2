package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBenchPipeBound: qp bench pipebound computes serve.PipeModel's floor
// from costs given as flags and from a server's /metrics gauges, and
// refuses what it cannot use.
func TestBenchPipeBound(t *testing.T) {
	// The fifteenth session's AND fit at 80% of its in-process rate:
	// batch 1,879.5, cycle 11.70 ms, p99 floor 1.99 × 11.70 = 23.28 ms; 20 ms
	// needs a = 20 ms × (1 − λb) / 1.99 = 2.69 ms. With 2 ms of preparation
	// (from /metrics) the floor is 25.28 ms, and 20 ms needs a <= 2.42 ms
	// or b <= 4.07 µs.
	out, _, code := runQP(t, "bench", "pipebound", "--device-a", "3.13ms", "--device-b", "4.56us", "--rate", "160633,50000")
	for _, want := range []string{"rate 160633/s: batch 1879, cycle 11.70 ms (device 11.70, preparation 0.00), p99 floor 23.28 ms",
		"needs device fixed cost <= 2.69 ms (now 3.13)", "rate 50000/s: batch 203, cycle 4.05 ms", "(<= 20ms)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("flags: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			w.Write([]byte("qp_serve_queue_depth 0\n")) // a server without the fits
			return
		}
		w.Write([]byte("# HELP x\nqp_serve_gpu_device_fixed_seconds 0.00313\nqp_serve_gpu_device_per_query_seconds 4.56e-06\n" +
			"qp_serve_gpu_prepare_fixed_seconds 0.002\nqp_serve_gpu_prepare_per_query_seconds 0\nqp_serve_queue_depth 0\n"))
	}))
	defer hs.Close()
	out, _, code = runQP(t, "bench", "pipebound", hs.URL, "--rate", "160633")
	if want := "p99 floor 25.28 ms; 20ms needs device fixed cost <= 2.42 ms (now 3.13) or per query <= 4.07 us (now 4.56)"; code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "preparation 2.00") {
		t.Errorf("from /metrics: exit %d, output lacks %q:\n%s", code, want, out)
	}
	out, _, code = runQP(t, "bench", "pipebound", hs.URL, "--rate", "300000")
	if code != 0 || !strings.Contains(out, "no stable batch") {
		t.Errorf("above capacity: exit %d:\n%s", code, out)
	}
	for _, args := range [][]string{
		{"--device-a", "3ms", "--device-b", "4us"},                               // no rate
		{"--rate", "1000"},                                                       // no URL, no costs
		{"--rate", "-5", "--device-a", "3ms", "--device-b", "4us"},               // bad rate
		{"--rate", "1000", "--q", "1", "--device-a", "3ms", "--device-b", "4us"}, // bad quantile
		{hs.URL + "/nothing-here/x", "--rate", "1000"},                           // no gauges
	} {
		if _, _, code := runQP(t, append([]string{"bench", "pipebound"}, args...)...); code == 0 {
			t.Errorf("qp bench pipebound %v: exit 0", args)
		}
	}
}

// TestParseGauges: the named unlabelled series' values; a missing one is
// an error naming it.
func TestParseGauges(t *testing.T) {
	in := "# TYPE a gauge\na 1.5\na_total 7\nb{x=\"y\"} 3\nb 2e-06\n"
	v, err := parseGauges(strings.NewReader(in), "t", []string{"b", "a"})
	if err != nil || v[0] != 2e-06 || v[1] != 1.5 {
		t.Errorf("%v %v", v, err)
	}
	if _, err := parseGauges(strings.NewReader(in), "t", []string{"c"}); err == nil || !strings.Contains(err.Error(), "no c") {
		t.Errorf("missing series: %v", err)
	}
}
