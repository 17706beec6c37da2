package gpu

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/engine"
)

// BenchmarkSearchBatchAnd is BenchmarkSearchBatch's AND rows for every
// Options.AndSearch (binary search, Parallel Merge Find with 1-4 levels)
// and the frequencies of bp128 read by slot or decoded: one op = one batch
// of the first 10000 TREC 2006 efficiency queries ($QP_BENCH_QUERIES) on
// the gen collection, k = 10, PARA c = the default (1 set) and 64K. Three
// more batches with CUDA events give launches, synchronizations and GPU
// time per batch by phase.
func BenchmarkSearchBatchAnd(b *testing.B) {
	x, queries := genIndex(b)
	nq := 10000
	if v, err := strconv.Atoi(os.Getenv("QP_BENCH_QUERIES")); err == nil && v > 0 {
		nq = v
	}
	queries = queries[:min(len(queries), nq)]
	qs := make([]engine.Query, len(queries))
	for i, t := range queries {
		qs[i] = engine.Query{ID: fmt.Sprint(i), Terms: t, Mode: engine.And, K: 10}
	}
	out := make([]engine.Response, len(qs))
	var want []engine.Response
	for _, search := range AndSearches {
		for _, decode := range []bool{false, true} {
			if decode && search != "binsearch" && search != "pmf3" {
				continue
			}
			for _, c := range []int{0, 1 << 16} {
				name := fmt.Sprintf("%s/freqs=%s/c=%d", search, map[bool]string{false: "slot", true: "decode"}[decode], c)
				b.Run(name, func(b *testing.B) {
					if ok, why := cuda.Available(); !ok {
						b.Skip("no usable GPU: " + why)
					}
					g := newBackend(b, x, Options{AndSearch: search, Threshold: c})
					g.and.decodeFreqs = decode
					run := func(n int) {
						for i := 0; i < n; i++ {
							if err := g.SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
								b.Fatal(err)
							}
						}
					}
					run(1)
					// Every variant returns the same results (checked against
					// the first; the tests compare with the CPU).
					if want == nil {
						want = make([]engine.Response, len(out))
						for i, r := range out {
							want[i] = engine.Response{Results: append(r.Results[:0:0], r.Results...), Err: r.Err}
						}
					} else {
						for i := range out {
							if msg := sameResults(out[i], want[i]); msg != "" {
								b.Fatalf("query %d: %s", i, msg)
							}
						}
					}
					b.ResetTimer()
					run(b.N)
					b.StopTimer()
					b.ReportMetric(float64(b.N*len(qs))/b.Elapsed().Seconds(), "queries/s")
					g.SetProfile(true)
					g.ResetProfile()
					const profiled = 3
					run(profiled)
					g.SetProfile(false)
					p := g.Profile()
					per := func(d time.Duration) float64 { return d.Seconds() * 1e3 / profiled }
					b.ReportMetric(float64(p.Sets)/profiled, "sets/batch")
					b.ReportMetric(float64(p.Launches)/profiled, "launches/batch")
					b.ReportMetric(float64(p.Syncs)/profiled, "syncs/batch")
					b.ReportMetric(per(p.Wall), "wall-ms/batch")
					b.ReportMetric(per(p.Decode), "decode-ms/batch")
					b.ReportMetric(per(p.Intersect), "intersect-ms/batch")
					b.ReportMetric(per(p.Score), "score-ms/batch")
					b.ReportMetric(per(p.TopK), "topk-ms/batch")
				})
			}
		}
	}
}

// sameResults compares the documents, scores (bits) and errors of two
// responses.
func sameResults(got, want engine.Response) string {
	if (got.Err == nil) != (want.Err == nil) {
		return fmt.Sprintf("error %v, want %v", got.Err, want.Err)
	}
	if len(got.Results) != len(want.Results) {
		return fmt.Sprintf("%d results, want %d", len(got.Results), len(want.Results))
	}
	for i := range want.Results {
		g, w := got.Results[i], want.Results[i]
		if g.Doc != w.Doc || math.Float32bits(g.Score) != math.Float32bits(w.Score) {
			return fmt.Sprintf("rank %d: %+v, want %+v", i, got.Results[i], want.Results[i])
		}
	}
	return ""
}
