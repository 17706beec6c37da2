package query

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"github.com/qpengine/qp/bench/internal/testidx"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/report"
	"github.com/qpengine/qp/topk"
)

// tinyIndex is the random collection of this package's tests.
func tinyIndex(t *testing.T, n, terms int) (*index.Index, *ref.Collection) {
	return testidx.Random{Seed: 1, N: n, Terms: terms, MaxFreq: 4}.Build(t)
}

// TestRunTable: CPU rows for every mode × algorithm × worker count, in
// order, named as the CLI prints them, with the results per query that the
// reference search gives and no failures; OnRow sees every row.
func TestRunTable(t *testing.T) {
	x, col := tinyIndex(t, 600, 12)
	queries := [][]string{{"w00", "w01"}, {"w02", "w05", "w07"}, {"w03"}, {"w01", "w11"}}
	const k = 10
	cfg := Config{
		Modes:    []engine.Mode{engine.And, engine.Or, engine.AndOr},
		AndAlgos: []engine.AndAlgorithm{engine.AndMerge, engine.AndSkip},
		OrAlgos:  []engine.OrStrategy{engine.OrTAAT, engine.OrBMW}, ThreadCounts: []int{1, 2},
		Queries: func(m engine.Mode) []engine.Query {
			qs := make([]engine.Query, len(queries))
			for i, ts := range queries {
				qs[i] = engine.Query{ID: fmt.Sprint(i), Terms: ts, Mode: m, K: k}
			}
			return qs
		},
	}
	var seen []Row
	cfg.OnRow = func(r Row) { seen = append(seen, r) }
	rows, err := Run(context.Background(), x, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"and merge 1", "and merge 2", "and skip 1", "and skip 2",
		"or taat 1", "or taat 2", "or bmw 1", "or bmw 2",
		"andor merge+or 1", "andor merge+or 2", "andor skip+or 1", "andor skip+or 2",
		"andor and+taat 1", "andor and+taat 2", "andor and+bmw 1", "andor and+bmw 2",
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%v %s %s", r.Mode, r.Name, r.Threads))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rows\n%q\nwant\n%q", got, want)
	}
	if len(seen) != len(rows) {
		t.Errorf("OnRow saw %d rows of %d", len(seen), len(rows))
	}
	p := col.Postings()
	for _, r := range rows {
		rm := map[engine.Mode]ref.Mode{engine.And: ref.And, engine.Or: ref.Or, engine.AndOr: ref.AndOr}[r.Mode]
		total := 0
		for _, ts := range queries {
			total += len(ref.Search(p, x.Params(), x.Norms(), x.NumDocs(), ts, rm, k))
		}
		if r.Failed != 0 || r.QPS <= 0 || r.Results != float64(total)/float64(len(queries)) || r.C != 0 {
			t.Errorf("%v %s: failed %d, %.0f q/s, %.2f results/query (reference %.2f)", r.Mode, r.Name, r.Failed, r.QPS, r.Results, float64(total)/float64(len(queries)))
		}
		// The process's CPU time over the batch: never negative (0 where
		// getrusage's resolution saw none of this tiny batch).
		if !(r.CPUPerQuery >= 0) || math.IsInf(r.CPUPerQuery, 0) {
			t.Errorf("%v %s: CPU %v µs per query", r.Mode, r.Name, r.CPUPerQuery)
		}
		if !(r.P50 <= r.P95 && r.P95 <= r.P99) {
			t.Errorf("%v %s: percentiles %v %v %v not ordered", r.Mode, r.Name, r.P50, r.P95, r.P99)
		}
	}
	if _, err := Run(context.Background(), x, Config{GPUOnly: true}); err == nil || !strings.Contains(err.Error(), "--gpu-only") {
		t.Errorf("GPU only without a GPU: %v", err)
	}
}

// TestSummarize: rate, nearest-rank percentiles, mean, results and
// failures of a batch of 100 responses.
func TestSummarize(t *testing.T) {
	out := make([]engine.Response, 101)
	for i := range 100 {
		out[i].Stats.Time = time.Duration(100-i) * time.Millisecond // 100 ms .. 1 ms
		out[i].Results = make([]topk.Result, i%3)
	}
	out[100].Err = fmt.Errorf("bad query")
	r := summarize(out, 2*time.Second)
	if r.QPS != 50.5 || r.Failed != 1 || r.P50 != 50 || r.P95 != 95 || r.P99 != 99 || r.Mean != 50.5 || r.Results != 0.99 {
		t.Fatalf("summary %+v", r)
	}
}

// TestCSVRoundTrip: CSVRows under CSVHeader read back with encoding/csv,
// a name's comma replaced as before.
func TestCSVRoundTrip(t *testing.T) {
	rows := []Row{{Mode: engine.Or, Name: "gpu c=1M, x", Threads: "gpu", C: 1 << 20, OT: 5, BM: "1/64", QPS: 1234.56, Mean: 1, P50: 2, P95: 3, P99: 4, Results: 9.5, Failed: 2}}
	var b bytes.Buffer
	if err := report.WriteCSV(&b, CSVHeader, CSVRows(rows)); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"or", "gpu c=1M; x", "gpu", "1048576", "5", "1/64", "1234.6", "1.0000", "2.0000", "3.0000", "4.0000", "9.500", "2"}
	if len(recs) != 2 || !slices.Equal(recs[0], CSVHeader) || !slices.Equal(recs[1], want) {
		t.Fatalf("read back %q", recs)
	}
}

// TestBitmapPlot draws bench query rows against the bitmap density.
func TestBitmapPlot(t *testing.T) {
	rows := []Row{
		{Mode: engine.And, Name: "skip", Threads: "16", QPS: 5000},
		{Mode: engine.And, Name: "gpu bm off", C: 12 << 20, BM: "off", BMD: -1, QPS: 100000},
		{Mode: engine.And, Name: "gpu bm 2^-6", C: 12 << 20, BM: "2^-6", BMD: 1.0 / 64, QPS: 130000},
		{Mode: engine.And, Name: "gpu bm 1/256", C: 12 << 20, BM: "1/256", BMD: 1.0 / 256, QPS: 140000},
		{Mode: engine.And, Name: "gpu bm 2^-10", C: 1 << 20, BM: "2^-10", BMD: 1.0 / 1024, QPS: 70000},
	}
	p, err := BitmapPlot(rows, 1000, 10, 10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.SVG()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"and GPU c=12M", "and GPU c=12M, no bitmaps", "and GPU c=1M", "and CPU (best row)", "<svg"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("plot lacks %q", want)
		}
	}
	if _, err := BitmapPlot(rows[:1], 1000, 10, 10); err == nil {
		t.Error("a plot of CPU rows only: no error")
	}
	if _, err := ThresholdPlot(rows[:1], 1000, 10, 10); err == nil {
		t.Error("a threshold plot of CPU rows only: no error")
	}
	tp, err := ThresholdPlot(rows, 1000, 10, 10)
	if err != nil || len(tp.Series) != 2 || tp.Series[1].Name != "and CPU (skip 16 threads)" {
		t.Errorf("threshold plot %+v, %v", tp, err)
	}
}
