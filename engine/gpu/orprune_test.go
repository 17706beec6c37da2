package gpu

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
)

// TestOrPruneShares measures the fused OR tiles' pruning on a real index
// (issue #20 part 4) and checks the results against the CPU engine: the
// OR top-k queries of $QP_ORPRUNE_QUERIES (a TREC query log, the first
// $QP_ORPRUNE_N, default 100, analyzed with the index's analyzer) on
// $QP_ORPRUNE_INDEX (skipped when unset), with the previous bounds (the
// terms' global maxima, no gated phase: Options.orGlobal) and the new
// ones (per-tile term maxima, the gated MaxScore phase). It logs, per
// variant, the tiles run, the blocks and postings decoded as shares of
// the queries' lists and the blocks skipped, gated and added by rank, and
// the CPU's MaxScore and BMW decode shares on the same queries. The
// counts are algorithmic (the CUDA emulator gives the device's, up to the
// order in which CTAs see each other's thresholds). Both variants must
// return the CPU's results, and the new one must decode no more postings.
func TestOrPruneShares(t *testing.T) {
	path, qpath := os.Getenv("QP_ORPRUNE_INDEX"), os.Getenv("QP_ORPRUNE_QUERIES")
	if path == "" || qpath == "" {
		t.Skip("QP_ORPRUNE_INDEX and QP_ORPRUNE_QUERIES name the index and the query log")
	}
	n := 100
	if v, err := strconv.Atoi(os.Getenv("QP_ORPRUNE_N")); err == nil && v > 0 {
		n = v
	}
	k := 10
	if v, err := strconv.Atoi(os.Getenv("QP_ORPRUNE_K")); err == nil && v > 0 {
		k = v
	}
	x, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	qs := pruneQueries(t, x, qpath, n, k)
	for _, algo := range []engine.OrStrategy{engine.OrMaxScore, engine.OrBMW} {
		resp := make([]engine.Response, len(qs))
		if err := engine.NewCPU(x, 0).SearchBatch(context.Background(), qs, engine.Options{OrAlgo: algo}, resp); err != nil {
			t.Fatal(err)
		}
		var blocks, posts, allPosts int64
		for i, r := range resp {
			if r.Err != nil {
				t.Fatalf("CPU %s query %s: %v", algo, qs[i].ID, r.Err)
			}
			blocks += r.Stats.BlocksDecoded
			posts += r.Stats.PostingsDecoded
			seen := map[int]bool{}
			for _, term := range qs[i].Terms {
				if id, ok := x.Lookup(term); ok && !seen[id] {
					seen[id] = true
					l, err := x.List(id)
					if err != nil {
						t.Fatal(err)
					}
					allPosts += int64(l.DF)
				}
			}
		}
		t.Logf("%s: %d queries k=%d: CPU %s decoded %d blocks, %d postings (%.1f%% of the query terms' %d postings)",
			path, len(qs), k, algo, blocks, posts, 100*float64(posts)/float64(max(1, allPosts)), allPosts)
	}
	var decoded [2]int64
	for i, global := range []bool{true, false} {
		g := newBackend(t, x, Options{orGlobal: global})
		compare(t, x, g, qs)
		p := g.Profile()
		if p.OrListBlocks == 0 || p.OrListPostings == 0 {
			t.Fatalf("global=%v: no OR lists counted (%+v)", global, p)
		}
		decoded[i] = p.OrPostings
		t.Logf("%s global=%v: %s", path, global, pruneShares(p))
	}
	if decoded[1] > decoded[0] {
		t.Errorf("tile bounds and the gated phase decoded %d postings, more than the %d with global bounds", decoded[1], decoded[0])
	}
}

// pruneShares formats the OR pruning counts of p.
func pruneShares(p Profile) string {
	pct := func(a, b int64) float64 { return 100 * float64(a) / float64(max(1, b)) }
	return fmt.Sprintf("tiles run %d of %d (%.1f%%); blocks decoded %d of %d (%.1f%%): skipped by block max %d, gated %d, by rank %d; postings decoded %d of %d (%.1f%%); documents completed by rank %d",
		p.OrTilesRun, p.OrTiles, pct(p.OrTilesRun, p.OrTiles), p.OrBlocks, p.OrListBlocks, pct(p.OrBlocks, p.OrListBlocks),
		p.OrSkipped, p.OrGated, p.OrRanked, p.OrPostings, p.OrListPostings, pct(p.OrPostings, p.OrListPostings), p.OrLookups)
}

// pruneQueries reads the first n queries of a TREC log as OR top-k
// queries analyzed like the index's documents (queries without terms are
// dropped).
func pruneQueries(t *testing.T, x *index.Index, path string, n, k int) []engine.Query {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	eq, err := eval.ReadQueries(f)
	if err != nil {
		t.Fatal(err)
	}
	an, err := x.Analyzer()
	if err != nil {
		t.Fatal(err)
	}
	var qs []engine.Query
	for _, q := range eq {
		if len(qs) == n {
			break
		}
		if ts := an.Tokens(q.Text); len(ts) > 0 {
			qs = append(qs, engine.Query{ID: q.ID, Terms: ts, Mode: engine.Or, K: k})
		}
	}
	return qs
}
