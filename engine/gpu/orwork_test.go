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

// TestOrWorkShares measures where the fused OR tiles' work goes on a real
// index (issue #20 part 4) and checks the results against the CPU engine:
// the OR top-k queries of $QP_ORWORK_QUERIES (a TREC query log, the first
// $QP_ORWORK_N, default 100, analyzed with the index's analyzer; k is
// $QP_ORWORK_K, default 10) on $QP_ORWORK_INDEX (skipped when unset). It
// logs the profile's tile counts against the queries' lists (blocks,
// postings, tiles) and the CPU MaxScore's decoded postings, for two
// variants: every query on the tiles, and the queries of few postings
// answered whole (orwhole.go; the default); QP_ORWORK_VARIANT=tiles or
// whole runs one. The whole variant must decode no more blocks. On the
// CUDA emulator, QP_EMU_ORSTATS=FILE also writes the tile kernel's finer
// counts (accumulators touched, candidates, k-th key passes;
// query_ortile.cu) to FILE.
func TestOrWorkShares(t *testing.T) {
	path, qpath := os.Getenv("QP_ORWORK_INDEX"), os.Getenv("QP_ORWORK_QUERIES")
	if path == "" || qpath == "" {
		t.Skip("QP_ORWORK_INDEX and QP_ORWORK_QUERIES name the index and the query log")
	}
	n, k := envInt("QP_ORWORK_N", 100), envInt("QP_ORWORK_K", 10)
	x, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	qs := workQueries(t, x, qpath, n, k)
	resp := make([]engine.Response, len(qs))
	if err := engine.NewCPU(x, 0).SearchBatch(context.Background(), qs, engine.Options{OrAlgo: engine.OrMaxScore}, resp); err != nil {
		t.Fatal(err)
	}
	var cpuPosts, listBlocks, listPosts, shortBlocks int64
	// Queries by the postings of all their lists (a whole-query path's
	// reach): at most 1k, 2k, 4k, 8k.
	caps := []int64{1024, 2048, 4096, 8192}
	small := make([]int, len(caps))
	g := newBackend(t, x, Options{orNoWhole: true})
	tile, ntiles, _ := g.tiling()
	for i, r := range resp {
		if r.Err != nil {
			t.Fatalf("CPU query %s: %v", qs[i].ID, r.Err)
		}
		cpuPosts += r.Stats.PostingsDecoded
		qPosts := listPosts
		seen := map[int]bool{}
		for _, term := range qs[i].Terms {
			if id, ok := x.Lookup(term); ok && !seen[id] {
				seen[id] = true
				l, err := x.List(id)
				if err != nil {
					t.Fatal(err)
				}
				listPosts += int64(l.DF)
				nb := int64(l.NBlocks)
				listBlocks += nb
				if nb < int64(ntiles) {
					shortBlocks += nb
				}
			}
		}
		for c, cp := range caps {
			if listPosts-qPosts <= cp {
				small[c]++
			}
		}
	}
	nq := float64(len(qs))
	per := func(v int64) float64 { return float64(v) / nq }
	t.Logf("%s: %d queries, k=%d, tiles of %d documents, %d per query", path, len(qs), k, tile, ntiles)
	t.Logf("lists per query: %.1f blocks (%.1f in lists of fewer blocks than tiles), %.0f postings; CPU MaxScore decoded %.0f postings per query",
		per(listBlocks), per(shortBlocks), per(listPosts), per(cpuPosts))
	var blocks [2]int64
	for i, v := range []string{"tiles", "whole"} {
		if w := os.Getenv("QP_ORWORK_VARIANT"); w != "" && w != v {
			continue
		}
		if i > 0 {
			g = newBackend(t, x, Options{})
		}
		results, _ := compare(t, x, g, qs)
		if results == 0 {
			t.Fatal("no results")
		}
		p := g.Profile()
		if p.OrTilesRun == 0 && p.OrWholeQueries == 0 {
			t.Fatalf("%s: no tiles or whole queries counted: %+v", v, p)
		}
		blocks[i] = p.OrBlocks + p.OrWholeBlocks
		t.Logf("%s: queries answered whole %.1f%%, their blocks decoded per query %.1f", v, 100*per(p.OrWholeQueries), per(p.OrWholeBlocks))
		t.Logf("%s: tiles per query: %.2f run of %.2f; %.2f selected a k-th key, %.2f emitted", v, per(p.OrTilesRun), per(p.OrTiles),
			per(p.OrSelected), per(p.OrEmitted))
		t.Logf("%s: blocks decoded by tiles per query: %.1f, skipped by maxima %.1f; documents completed by rank %.1f", v,
			per(p.OrBlocks), per(p.OrSkipped), per(p.OrLookups))
		t.Logf("%s: lists pre-decoded once per launch per query: %.2f, their blocks %.1f", v, per(p.OrPreLists), per(p.OrPreBlocks))
		blocks[i] += p.OrPreBlocks
		t.Logf("%s: blocks decoded per query, all: %.1f (%.2fx the lists'); accumulators zeroed and scanned per query by the dense passes: %.0f (QP_EMU_ORSTATS' accumulators_scanned: those the passes visit)", v,
			per(blocks[i]), float64(blocks[i])/float64(max(1, listBlocks)), per(p.OrTilesRun)*float64(tile))
	}
	if blocks[0] > 0 && blocks[1] > blocks[0] {
		t.Errorf("whole queries decoded %d blocks, more than the tiles' %d", blocks[1], blocks[0])
	}
	for c, cp := range caps {
		t.Logf("queries whose lists hold at most %d postings: %.1f%%", cp, 100*float64(small[c])/nq)
	}
}

// envInt is the positive integer in $name, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// workQueries reads the first n queries of a TREC log as OR top-k queries
// analyzed like the index's documents (queries without terms are
// dropped).
func workQueries(t *testing.T, x *index.Index, path string, n, k int) []engine.Query {
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
			qs = append(qs, engine.Query{ID: fmt.Sprint(q.ID), Terms: ts, Mode: engine.Or, K: k})
		}
	}
	return qs
}
