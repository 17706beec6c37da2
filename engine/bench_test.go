package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
)

// The benchmark collection: N documents, V terms whose document frequencies
// follow a Zipf law (df of rank r = N/2 / r^0.85, about 3 million postings),
// documents drawn uniformly for every term (geometric gaps), tf = 1 + a
// geometric variable. Queries are 2–5 distinct terms with log-uniform ranks
// in [1, 20000], so they mix stopword-like lists (df 100k) with rare ones.
const (
	benchN       = 200000
	benchV       = 100000
	benchQueries = 1000
)

var (
	benchOnce    sync.Once
	benchIdx     *index.Index
	benchQs      [][]string
	benchErr     error
	benchDirOnce string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDirOnce != "" {
		os.RemoveAll(benchDirOnce)
	}
	os.Exit(code)
}

func benchIndex(b *testing.B) (*index.Index, [][]string) {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "qp-engine-bench-")
		if err != nil {
			benchErr = err
			return
		}
		benchDirOnce = dir
		benchIdx, benchQs, benchErr = buildBenchIndex(filepath.Join(dir, "bench.qp"))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchIdx, benchQs
}

func benchTerm(r int) string { return fmt.Sprintf("w%06d", r) }

func buildBenchIndex(path string) (*index.Index, [][]string, error) {
	rng := rand.New(rand.NewSource(42))
	lens := make([]uint32, benchN)
	docs := make([][]uint32, benchV)
	freqs := make([][]uint32, benchV)
	for r := 1; r <= benchV; r++ {
		df := int(float64(benchN) / 2 / math.Pow(float64(r), 0.85))
		df = max(df, 1)
		p := float64(df) / benchN
		var ds, fs []uint32
		d := -1
		for {
			if p >= 1 {
				d++
			} else {
				d += 1 + int(math.Log(1-rng.Float64())/math.Log(1-p))
			}
			if d >= benchN {
				break
			}
			tf := uint32(1)
			for rng.Intn(3) == 0 && tf < 50 {
				tf++
			}
			ds = append(ds, uint32(d))
			fs = append(fs, tf)
			lens[d] += tf
		}
		if len(ds) == 0 {
			ds, fs = []uint32{uint32(rng.Intn(benchN))}, []uint32{1}
			lens[ds[0]]++
		}
		docs[r-1], freqs[r-1] = ds, fs
	}
	bp, err := compress.ByName("bp128")
	if err != nil {
		return nil, nil, err
	}
	w, err := index.NewWriter(path, index.WriterOptions{DocCodec: bp, DocLens: lens})
	if err != nil {
		return nil, nil, err
	}
	for r := 1; r <= benchV; r++ { // benchTerm sorts in rank order
		if err := w.AddList(benchTerm(r), docs[r-1], freqs[r-1]); err != nil {
			return nil, nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, nil, err
	}
	x, err := index.Open(path)
	if err != nil {
		return nil, nil, err
	}
	qs := make([][]string, benchQueries)
	for i := range qs {
		m := 2 + rng.Intn(4)
		seen := map[int]bool{}
		for len(qs[i]) < m {
			r := int(math.Exp(rng.Float64() * math.Log(20000)))
			if !seen[r] {
				seen[r] = true
				qs[i] = append(qs[i], benchTerm(r))
			}
		}
	}
	return x, qs, nil
}

// BenchmarkSearch reports single-thread queries/s per mode and strategy
// (one op = one query, round-robin over 1000 queries, k = 10 unless named).
func BenchmarkSearch(b *testing.B) {
	type cfg struct {
		name string
		mode Mode
		opt  Options
		k    int
	}
	var cfgs []cfg
	for _, a := range AndAlgorithms {
		cfgs = append(cfgs, cfg{"and/" + string(a), And, Options{AndAlgo: a}, 10})
	}
	for _, o := range OrStrategies {
		cfgs = append(cfgs, cfg{"or/" + string(o), Or, Options{OrAlgo: o}, 10})
	}
	for _, o := range OrStrategies {
		cfgs = append(cfgs, cfg{"or-k1000/" + string(o), Or, Options{OrAlgo: o}, 1000})
	}
	for _, o := range OrStrategies {
		cfgs = append(cfgs, cfg{"andor/skip+" + string(o), AndOr, Options{AndAlgo: AndSkip, OrAlgo: o}, 10})
	}
	for _, c := range cfgs {
		b.Run(c.name, func(b *testing.B) {
			x, qs := benchIndex(b)
			e := New(x)
			var postings, cands int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, st, err := e.Search(Query{Terms: qs[i%len(qs)], Mode: c.mode, K: c.k}, c.opt)
				if err != nil {
					b.Fatal(err)
				}
				postings += st.PostingsDecoded
				cands += st.Candidates
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
			b.ReportMetric(float64(postings)/float64(b.N), "postings/q")
			b.ReportMetric(float64(cands)/float64(b.N), "scored/q")
		})
	}
}

// BenchmarkBatch reports queries/s of the CPU backend on all cores (default
// strategies, OR, k = 10); one op = one batch of 1000 queries.
func BenchmarkBatch(b *testing.B) {
	for _, mode := range []Mode{And, Or} {
		b.Run(mode.String(), func(b *testing.B) {
			x, qs := benchIndex(b)
			cpu := NewCPU(x, 0)
			batch := make([]Query, len(qs))
			for i, t := range qs {
				batch[i] = Query{Terms: t, Mode: mode, K: 10}
			}
			out := make([]Response, len(batch))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := cpu.SearchBatch(context.Background(), batch, Options{}, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "queries/s")
		})
	}
}
