package main

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
)

// formatPerQuery is the run writer's format before cliq4: each query's
// docids looked up, checked and appended before the next query's (the
// reference of TestRunWriterFormatPaired).
func (rw *runWriter) formatPerQuery(b []byte, entries []eval.RunEntry, qs []engine.Query, out []engine.Response) ([]byte, []eval.RunEntry, error) {
	for i := range out {
		r := &out[i]
		if r.Err != nil {
			continue
		}
		entries = entries[:0]
		for j, res := range r.Results {
			entries = append(entries, eval.RunEntry{DocID: rw.x.ExternalID(res.Doc), Rank: j + 1, Score: float64(res.Score)})
		}
		var err error
		if b, err = eval.AppendRun(b, qs[i].ID, entries, rw.tag); err != nil {
			return b, entries, err
		}
	}
	return b, entries, nil
}

// TestRunWriterFormatPaired: format (the grain's docids looked up, then
// touched, then appended) writes the bytes of formatPerQuery for every
// grain of 16 queries, failed queries among them; with QP_FMT_IDX (an
// index, e.g. GCIDE's) and QP_FMT_Q (a query file, its first 10,000 run
// as AND+OR) it does so on real answers and logs the time of both per
// query, interleaved grain by grain (QP_FMT_EVICT: bytes written between
// grains to evict the caches as the searches do, default 8M; 1m or 0):
// docs/BENCHMARKS.md, cliq4.
func TestRunWriterFormatPaired(t *testing.T) {
	x := runWriterIndex(t)
	qs, out := syntheticResponses(x, 640, 10)
	for i := 5; i < len(out); i += 37 {
		out[i].Err = engine.ErrEmptyQuery
	}
	evict := 0
	if path := os.Getenv("QP_FMT_IDX"); path != "" {
		var err error
		if x, err = index.Open(path); err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		an, err := x.Analyzer()
		if err != nil {
			t.Fatal(err)
		}
		fq, err := eval.ReadQueryFile(os.Getenv("QP_FMT_Q"), 10000)
		if err != nil {
			t.Fatal(err)
		}
		qs, out = make([]engine.Query, len(fq)), make([]engine.Response, len(fq))
		en := engine.New(x)
		for i, q := range fq {
			qs[i] = engine.Query{ID: q.ID, Terms: an.Tokens(q.Text), Mode: engine.AndOr, K: 10}
			out[i].Results, out[i].Stats, out[i].Err = en.SearchInto(nil, qs[i], engine.Options{})
		}
		evict = 8 << 20
		switch os.Getenv("QP_FMT_EVICT") {
		case "1m":
			evict = 1 << 20
		case "0":
			evict = 0
		}
	}
	rw := newRunWriter(io.Discard, x, "qp")
	buf := make([]byte, evict)
	var b [2][]byte
	var ents [2][]eval.RunEntry
	var took [2]time.Duration
	rounds := 1
	if evict > 0 {
		rounds = 10
	}
	for round := range rounds {
		for lo := 0; lo+16 <= len(qs); lo += 16 {
			for v := range 2 {
				v = (v + lo/16 + round) % 2
				for i := 0; i < len(buf); i += 64 {
					buf[i]++
				}
				var err error
				t0 := time.Now()
				if v == 0 {
					b[0], ents[0], err = rw.formatPerQuery(b[0][:0], ents[0], qs[lo:lo+16], out[lo:lo+16])
				} else {
					b[1], ents[1], err = rw.format(b[1][:0], ents[1], qs[lo:lo+16], out[lo:lo+16])
				}
				took[v] += time.Since(t0)
				if err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(b[0], b[1]) || len(b[0]) == 0 {
				t.Fatalf("queries %d..%d: format wrote %d bytes, the per-query format %d, not the same", lo, lo+16, len(b[1]), len(b[0]))
			}
		}
	}
	if evict > 0 {
		n := float64(rounds * len(qs))
		t.Logf("per query: per-query format %.0f ns, format %.0f ns (%.3f)", float64(took[0].Nanoseconds())/n, float64(took[1].Nanoseconds())/n, float64(took[1])/float64(took[0]))
	}
}
