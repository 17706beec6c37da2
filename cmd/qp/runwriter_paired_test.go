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

// TestRunWriterFormatPaired: format from the id slots (useSlots: one load a
// docid, appended unchecked) writes the bytes of format from ExternalID
// (cliq4's passes: looked up, touched, appended checked) for every grain
// of 16 queries, failed queries among them; with QP_FMT_IDX (an
// index, e.g. GCIDE's) and QP_FMT_Q (a query file, its first 10,000 run
// as AND+OR) it does so on real answers and logs the time of both per
// query, interleaved grain by grain (QP_FMT_EVICT: bytes written between
// grains to evict the caches as the searches do, default 8M; 1m or 0):
// docs/BENCHMARKS.md, cliq4 and cliq5.
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
	rs := newRunWriter(io.Discard, x, "qp")
	if err := rs.useSlots(); err != nil || rs.ids == nil {
		t.Fatalf("useSlots: %v, table %v", err, rs.ids)
	}
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
					b[0], ents[0], err = rw.format(b[0][:0], ents[0], qs[lo:lo+16], out[lo:lo+16])
				} else {
					b[1], ents[1], err = rs.format(b[1][:0], ents[1], qs[lo:lo+16], out[lo:lo+16])
				}
				took[v] += time.Since(t0)
				if err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(b[0], b[1]) || len(b[0]) == 0 {
				t.Fatalf("queries %d..%d: format from the slots wrote %d bytes, from ExternalID %d, not the same", lo, lo+16, len(b[1]), len(b[0]))
			}
		}
	}
	if evict > 0 {
		n := float64(rounds * len(qs))
		t.Logf("per query: format from ExternalID %.0f ns, from the slots %.0f ns (%.3f)", float64(took[0].Nanoseconds())/n, float64(took[1].Nanoseconds())/n, float64(took[1])/float64(took[0]))
	}
}
