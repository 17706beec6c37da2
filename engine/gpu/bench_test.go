package gpu

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/gen"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/querylog"
)

// genDocs is the size of the synthetic collection of TestGen and the
// benchmark (gen's GOV2-calibrated model: ~233 postings per document);
// $QP_BENCH_DOCS overrides it (e.g. 2000000 or 10000000 on a GPU machine),
// and $QP_BENCH_INDEX names an index (`qp gen --queries ...` output) to
// open instead of generating one.
var genDocs = func() int {
	if v, err := strconv.Atoi(os.Getenv("QP_BENCH_DOCS")); err == nil && v > 0 {
		return v
	}
	return 50000
}()

// buildGenIndex generates the collection like `qp gen --docs 50000` (the
// vocabulary seeded with the TREC 2005/2006 efficiency query terms, bp128,
// blocks of 128) and returns it with the 2006 log's analyzed queries.
func buildGenIndex(path, logDir string) (*index.Index, [][]string, error) {
	logs := []string{filepath.Join(logDir, "05.efficiency_topics.txt"), filepath.Join(logDir, "06.efficiency_topics.txt")}
	qterms, err := gen.LoadQueryTerms(logs...)
	if err != nil {
		return nil, nil, err
	}
	g, err := gen.New(gen.Config{Docs: genDocs, Seed: 1, QueryTerms: qterms})
	if err != nil {
		return nil, nil, err
	}
	w, err := index.NewWriter(path, index.WriterOptions{DocLens: g.DocLengths()})
	if err != nil {
		return nil, nil, err
	}
	n, produce := g.Lists()
	if _, err := w.AddListsParallel(context.Background(), n, 0, produce, nil); err != nil {
		w.Abort()
		return nil, nil, err
	}
	if err := w.Close(); err != nil {
		return nil, nil, err
	}
	x, err := index.Open(path)
	if err != nil {
		return nil, nil, err
	}
	qs, err := loadLogQueries(logs[1])
	if err != nil {
		return nil, nil, err
	}
	return x, qs, nil
}

// loadLogQueries reads a query log and returns its queries analyzed as gen
// analyzes them (empty ones dropped).
func loadLogQueries(path string) ([][]string, error) {
	return querylog.Read(path, -1, gen.Tokenize)
}

// BenchmarkSearchBatch reports the GPU backend's queries/s on the TREC 2006
// efficiency queries (the first 10000, or $QP_BENCH_QUERIES) over the synthetic collection, per
// mode, k, PARA threshold c (0: the default) and OR strategy (or=tiled,
// or=dense), one op = one batch of all
// of them, timed without events; then three more batches with CUDA events
// give the GPU time per batch by phase (*-ms/batch; the events add a little
// time of their own). The CPU backend on all cores runs the same batches
// (BenchmarkSearchBatch/cpu) for comparison.
func BenchmarkSearchBatch(b *testing.B) {
	x, queries := genIndex(b)
	nq := 10000
	if v, err := strconv.Atoi(os.Getenv("QP_BENCH_QUERIES")); err == nil && v > 0 {
		nq = v // e.g. fewer on the CUDA emulator
	}
	queries = queries[:min(len(queries), nq)]
	type cfg struct {
		mode engine.Mode
		k, c int
		or   string  // OR strategy of the GPU rows (Options.Or; "" = default, tiled)
		bm   float64 // bitmap density of the GPU rows (0: default, -1: off)
	}
	cfgs := []cfg{{engine.And, 10, 0, "", 0}, {engine.And, 10, 0, "", -1}, {engine.And, 1000, 0, "", 0},
		{engine.And, 10, 1 << 14, "", 0}, {engine.And, 10, 1 << 16, "", 0}, {engine.And, 10, 1 << 18, "", 0}}
	for _, mode := range []engine.Mode{engine.Or, engine.AndOr} {
		for _, k := range []int{10, 1000} {
			cfgs = append(cfgs, cfg{mode, k, 0, OrTiled, 0}, cfg{mode, k, 0, OrDense, 0})
		}
	}
	mk := func(c cfg) []engine.Query {
		qs := make([]engine.Query, len(queries))
		for i, t := range queries {
			qs[i] = engine.Query{ID: fmt.Sprint(i), Terms: t, Mode: c.mode, K: c.k}
		}
		return qs
	}
	gs := map[string]*Backend{} // by OR strategy, closed when the whole benchmark ends
	backend := func(or string) *Backend {
		if ok, _ := cuda.Available(); !ok {
			return nil
		}
		if gs[or] == nil {
			gs[or] = newBackend(b, x, Options{Or: or})
		}
		return gs[or]
	}
	for _, c := range cfgs {
		qs := mk(c)
		out := make([]engine.Response, len(qs))
		name := fmt.Sprintf("%v/k=%d", c.mode, c.k)
		if c.c != 0 {
			name += fmt.Sprintf("/c=%d", c.c)
		}
		if c.or != "" {
			name += "/or=" + c.or
		}
		if c.bm < 0 {
			name += "/bitmaps=off"
		}
		b.Run("gpu/"+name, func(b *testing.B) {
			g := backend(c.or)
			if g == nil {
				_, why := cuda.Available()
				b.Skip("no usable GPU: " + why)
			}
			g.SetThreshold(c.c)
			if err := g.SetBitmapDensity(c.bm); err != nil {
				b.Fatal(err)
			}
			run := func(n int) {
				for i := 0; i < n; i++ {
					if err := g.SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
						b.Fatal(err)
					}
				}
			}
			run(1) // warm-up: pool, pinned buffers, events
			b.ResetTimer()
			run(b.N)
			b.StopTimer()
			for i, r := range out {
				if r.Err != nil {
					b.Fatalf("query %d: %v", i, r.Err)
				}
			}
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
			b.ReportMetric(per(p.Wall), "wall-ms/batch")
			b.ReportMetric(per(p.Decode), "decode-ms/batch")
			b.ReportMetric(per(p.Intersect), "intersect-ms/batch")
			b.ReportMetric(per(p.Score), "score-ms/batch")
			b.ReportMetric(per(p.TopK), "topk-ms/batch")
			b.ReportMetric(per(p.Transfer), "transfer-ms/batch")
			if p.OrTiles > 0 {
				b.ReportMetric(float64(p.OrTilesRun)/profiled, "or-tiles/batch")
				b.ReportMetric(float64(p.OrSelected)/profiled, "or-selected/batch")
				b.ReportMetric(float64(p.OrEmitted)/profiled, "or-emitted/batch")
				b.ReportMetric(float64(p.OrBlocks)/profiled, "or-blocks/batch")
			}
		})
	}
	for _, c := range cfgs {
		if c.c != 0 || c.or == OrDense || c.bm != 0 {
			continue
		}
		qs := mk(c)
		out := make([]engine.Response, len(qs))
		b.Run(fmt.Sprintf("cpu/%v/k=%d", c.mode, c.k), func(b *testing.B) {
			cpu := engine.NewCPU(x, 0)
			for i := 0; i < b.N; i++ {
				if err := cpu.SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(qs))/b.Elapsed().Seconds(), "queries/s")
		})
	}
}
