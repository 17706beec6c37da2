package engine

import (
	"fmt"
	"math/rand"
	"os"
	"testing"

	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/querylog"
)

// BenchmarkCanonicalTerms compares CanonicalTerms ("lists": the lookups
// start the reads of the lists' heads, for the CPU engine) with
// CanonicalTermsDict ("dict": the GPU's prepare, whose lists are on the
// device) over a query log, one pass per op, with the caches flushed
// between passes ("cold", a 64 MiB buffer streamed outside the timer: on
// the GPU host a batch's thousands of queries pass through caches other
// batches' work has filled) or not ("warm"). ns/op is per query. With
// QP_CANON_INDEX (an index, e.g. GCIDE) and QP_CANON_QUERIES (a query
// log, e.g. TREC 2006 efficiency): its first 4,500 non-empty queries on
// that index; otherwise random queries of a small collection.
func BenchmarkCanonicalTerms(b *testing.B) {
	var x *index.Index
	var qs []Query
	if path := os.Getenv("QP_CANON_INDEX"); path != "" {
		var err error
		if x, err = index.Open(path); err != nil {
			b.Fatal(err)
		}
		log, err := querylog.FirstAnalyzed(x, os.Getenv("QP_CANON_QUERIES"), 4500)
		if err != nil {
			b.Fatal(err)
		}
		for _, ts := range log {
			qs = append(qs, Query{Terms: ts, Mode: And, K: 10})
		}
	} else {
		x, _ = smallIndex(b, "bp128", 3000, 128, 1)
		rng := rand.New(rand.NewSource(3))
		for range 4500 {
			q := Query{Mode: And, K: 10}
			for range 1 + rng.Intn(4) {
				q.Terms = append(q.Terms, fmt.Sprintf("t%03d", rng.Intn(24)))
			}
			qs = append(qs, q)
		}
	}
	flush := make([]byte, 64<<20)
	var sink byte
	for _, cold := range []bool{false, true} {
		for _, dict := range []bool{false, true} {
			name := map[bool]string{false: "warm", true: "cold"}[cold] + "/" + map[bool]string{false: "lists", true: "dict"}[dict]
			b.Run(name, func(b *testing.B) {
				var dst []Term
				n := 0
				for b.Loop() {
					if cold {
						b.StopTimer()
						for i := 0; i < len(flush); i += 64 {
							flush[i]++
							sink ^= flush[i]
						}
						b.StartTimer()
					}
					for _, q := range qs {
						if dict {
							dst, _ = CanonicalTermsDict(dst, x, q)
						} else {
							dst, _ = CanonicalTerms(dst, x, q)
						}
						n += len(dst)
					}
				}
				if n == 0 {
					b.Fatal("no term found")
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(qs)), "ns/query")
			})
		}
	}
	_ = sink
}
