package gpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/score"
)

// orVariants are the OR strategies and tiled configurations every OR test
// below runs: dense, tiled with the default tile (N < T here), tiled with
// small tiles (many tiles, N not a multiple of T), with each selector, and
// on bp128 indexes both the fused tiles (decoding their own blocks) and
// the decoded path; "tiled" answers the queries of few postings whole
// (orwhole.go), the small-tile variants run every query on the tiles.
var orVariants = []struct {
	name string
	opt  Options
}{
	{"dense", Options{Or: OrDense}},
	{"tiled", Options{}},
	{"tiled/T64/tree", Options{orTile: 64, orSelect: "tree", orNoWhole: true}},
	{"tiled/T64/runs", Options{orTile: 64, orPer: 5, orNoWhole: true}},       // items of 5 tiles: term metadata kept across tiles
	{"tiled/T64/dense", Options{orTile: 64, orNoWhole: true, orDense: true}}, // the accumulator passes before the touch marks
	{"tiled/T100/radix", Options{orTile: 100, orSelect: "radix", orNoWhole: true}},
	{"tiled/T1/tree", Options{orTile: 1, orSelect: "tree", orNoWhole: true}},
	{"tiled/T64/decoded", Options{orTile: 64, orDecoded: true}},
	{"tiled/T100/decoded/radix", Options{orTile: 100, orSelect: "radix", orDecoded: true}},
}

// orQueries keeps the OR and AND+OR variants of expand's queries.
func orQueries(terms [][]string, ks []int) []engine.Query {
	var qs []engine.Query
	for _, q := range expand(terms, ks) {
		if q.Mode != engine.And {
			qs = append(qs, q)
		}
	}
	return qs
}

// TestOrStrategies is TestDifferentialRandom's comparison with the CPU for
// every OR variant (codecs bp128 and one other, block sizes, ties, QTF, k
// from 1 to 10000 > items).
func TestOrStrategies(t *testing.T) {
	c := testContext(t)
	nq := 10
	emu := emulated(c)
	if emu {
		nq = 3
	}
	bp, _ := compress.ByName("bp128")
	combo := 0
	for _, codec := range []compress.Codec{bp, gpuCodecs()[0]} {
		for _, bs := range []int{1, 16, 128} {
			for _, n := range []int{1, 37, 400, 1500} {
				combo++
				if emu && (combo%3 != 0 || n > 400) {
					continue // the emulator runs every CTA's threads on one core
				}
				ties := combo%2 == 0
				rng := rand.New(rand.NewSource(int64(100 + combo)))
				col := genCollection(rng, n, 24, bs, ties)
				x := col.write(t, codec)
				terms := randomQueries(rng, col.terms, nq, nil)
				qs := orQueries(terms, []int{1, 10, 100, 10000})
				for _, v := range orVariants {
					if emu && v.opt.orTile == 1 && n > 40 {
						continue
					}
					t.Run(fmt.Sprintf("%s/B%d/N%d/ties=%v/%s", codec.Name(), bs, n, ties, v.name), func(t *testing.T) {
						compare(t, x, newBackend(t, x, v.opt), qs)
					})
				}
			}
		}
	}
}

// TestOrTileBoundaries puts postings on both sides of every tile edge
// (documents T-1, T, 2T-1, 2T, ... and the last one), with N not a
// multiple of T, N < T and N == T.
func TestOrTileBoundaries(t *testing.T) {
	testContext(t)
	const tile = 64
	bp, _ := compress.ByName("bp128")
	for _, n := range []int{tile - 1, tile, tile + 1, 5*tile + 17, 12 * tile} {
		t.Run(fmt.Sprint("N", n), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(n)))
			col := genCollection(rng, n, 12, 16, false)
			// Extra lists on the tile edges.
			var edge, edge2 []uint32
			for d := tile - 1; d < n; d += tile {
				edge = append(edge, uint32(d))
				if d+1 < n {
					edge = append(edge, uint32(d+1))
				}
			}
			if len(edge) == 0 || edge[len(edge)-1] != uint32(n-1) {
				edge = append(edge, uint32(n-1))
			}
			for d := 0; d < n; d += tile {
				edge2 = append(edge2, uint32(d))
			}
			for i, l := range [][]uint32{edge, edge2} {
				f := make([]uint32, len(l))
				for j, d := range l {
					f[j] = uint32(1 + j%3)
					col.lens[d] += f[j]
				}
				col.terms = append(col.terms, fmt.Sprintf("zedge%d", i))
				col.docs = append(col.docs, l)
				col.freqs = append(col.freqs, f)
			}
			x := col.write(t, bp)
			terms := [][]string{{"zedge0"}, {"zedge1"}, {"zedge0", "zedge1"}, {"zedge0", col.terms[0], col.terms[6]},
				{"zedge1", col.terms[7], col.terms[8], col.terms[9]}}
			qs := orQueries(terms, []int{1, 3, 10, 1000})
			for _, v := range orVariants {
				if v.opt.orTile == 1 {
					continue // T is the test's tile
				}
				opt := v.opt
				if opt.orTile != 0 {
					opt.orTile = tile
				}
				t.Run(v.name, func(t *testing.T) { compare(t, x, newBackend(t, x, opt), qs) })
			}
		})
	}
}

// TestOrSparsePasses runs the fused tiles' accumulator passes over the
// touch marks (query_ortile.cu acc_add) and the dense ones
// (Options.orDense) at the default tile of 8,192 documents, where a mark
// word holds 32 positions 256 apart: a list holding every document (every
// accumulator of a tile touched, every bit of every word), lists on both
// sides of each tile edge and on one mark word's positions only, N not a
// multiple of T; ties (equal lengths, tf 1: many documents share a score,
// so the k-th key selection ranks by docID) and not; k from 1 past every
// list. Both must return the CPU's results bit for bit.
func TestOrSparsePasses(t *testing.T) {
	c := testContext(t)
	const tile = 8192
	n := 2*tile + 300
	nq := 6
	if emulated(c) {
		nq = 2
	}
	bp, _ := compress.ByName("bp128")
	for _, ties := range []bool{true, false} {
		rng := rand.New(rand.NewSource(31))
		col := genCollection(rng, n, 16, 128, ties)
		var all, edge, word []uint32
		for d := 0; d < n; d++ {
			all = append(all, uint32(d))
			if d%tile == 0 || d%tile == tile-1 || d == n-1 {
				edge = append(edge, uint32(d))
			}
			if d%256 == 255 { // positions 255, 511, ...: all in the last mark word
				word = append(word, uint32(d))
			}
		}
		for i, l := range [][]uint32{all, edge, word} {
			f := make([]uint32, len(l))
			for j := range l {
				f[j] = 1
				if !ties {
					f[j] = uint32(1 + (j*7)%5)
				}
			}
			col.terms = append(col.terms, []string{"zall", "zedge", "zword"}[i])
			col.docs = append(col.docs, l)
			col.freqs = append(col.freqs, f)
		}
		x := col.write(t, bp)
		terms := [][]string{{"zall"}, {"zall", "zedge"}, {"zedge", "zword"}, {"zword"},
			{"zall", col.terms[3], col.terms[8]}, {"zedge", col.terms[6], col.terms[7], col.terms[9]}}
		terms = append(terms, randomQueries(rng, col.terms, nq, nil)...)
		qs := orQueries(terms, []int{1, 10, 300, 40000})
		for _, dense := range []bool{false, true} {
			t.Run(fmt.Sprintf("ties=%v/dense=%v", ties, dense), func(t *testing.T) {
				g := newBackend(t, x, Options{orNoWhole: true, orDense: dense})
				if results, _ := compare(t, x, g, qs); results == 0 {
					t.Fatal("no results")
				}
				if p := g.Profile(); p.OrTilesRun == 0 {
					t.Fatal("no tiles run")
				}
			})
		}
	}
}

// TestOrTiledLarge has many tiles and many blocks per list (20000
// documents, B=32), so the bounds skip tiles; k up to 10000; and the
// index's BM25 parameters changed after building (stale block maxima: no
// tile skipping).
func TestOrTiledLarge(t *testing.T) {
	c := testContext(t)
	if testing.Short() {
		t.Skip("short")
	}
	nq := 30
	if emulated(c) {
		nq = 2
	}
	for _, params := range []bool{false, true} {
		t.Run(fmt.Sprintf("setparams=%v", params), func(t *testing.T) {
			rng := rand.New(rand.NewSource(7))
			col := genCollection(rng, 20000, 40, 32, false)
			codec, _ := compress.ByName("bp128")
			x := col.write(t, codec)
			if params {
				if err := x.SetParams(score.Params{K1: 1.2, B: 0.75}); err != nil {
					t.Fatal(err)
				}
			}
			terms := randomQueries(rng, col.terms, nq, nil)
			qs := orQueries(terms, []int{1, 10, 100, 1000, 10000})
			vs := []Options{{orTile: 512}, {orTile: 512, orSelect: "radix"}, {}}
			if emulated(c) {
				qs = orQueries(terms, []int{10, 10000})
				vs = vs[:1]
			}
			for _, v := range vs {
				compare(t, x, newBackend(t, x, v), qs)
			}
		})
	}
}

// TestOrTiledOverflow forces small candidate regions so that queries
// overflow and rerun with every slot they can use, fused and decoded.
func TestOrTiledOverflow(t *testing.T) {
	testContext(t)
	saved := orCapMin
	orCapMin = 1
	t.Cleanup(func() { orCapMin = saved })
	rng := rand.New(rand.NewSource(11))
	col := genCollection(rng, 3000, 20, 16, true)
	x := col.bp128(t)
	qs := orQueries(randomQueries(rng, col.terms, 6, nil), []int{1, 10, 50})
	compare(t, x, newBackend(t, x, Options{orTile: 128}), qs)
	compare(t, x, newBackend(t, x, Options{orTile: 128, orDecoded: true}), qs)
}

// TestOrPruning checks that the fused tiles' block-max skipping (term
// maxima in QTerm, a block skipped when its maximum plus the other terms'
// cannot reach the threshold) returns the CPU's results and decodes fewer
// blocks than the same tiles without it: single-term and multi-term
// queries on a collection whose scores rarely tie.
func TestOrPruning(t *testing.T) {
	c := testContext(t)
	nq := 30
	if emulated(c) {
		nq = 8
	}
	rng := rand.New(rand.NewSource(21))
	col := genCollection(rng, 20000, 30, 32, false)
	x := col.bp128(t)
	terms := randomQueries(rng, col.terms, nq, [][]string{{col.terms[0]}, {col.terms[1]}, {col.terms[2], col.terms[3]}})
	qs := orQueries(terms, []int{1, 10, 100})
	blocks := map[bool]int64{}
	for _, off := range []bool{false, true} {
		g := newBackend(t, x, Options{orTile: 1024, orNoPrune: off, orNoWhole: true})
		compare(t, x, g, qs)
		p := g.Profile()
		if p.OrTilesRun == 0 || p.OrBlocks == 0 {
			t.Fatalf("noprune=%v: no tiles (%d) or blocks (%d) counted", off, p.OrTilesRun, p.OrBlocks)
		}
		if off && p.OrSkipped != 0 {
			t.Errorf("noprune: %d blocks skipped", p.OrSkipped)
		}
		blocks[off] = p.OrBlocks
		t.Logf("noprune=%v: %d of %d tiles run, %d blocks decoded, %d skipped", off, p.OrTilesRun, p.OrTiles,
			p.OrBlocks, p.OrSkipped)
	}
	if blocks[false] >= blocks[true] {
		t.Errorf("block-max skipping decoded %d blocks, no fewer than the %d without it", blocks[false], blocks[true])
	}
}

// TestOrCorruptBlocks damages one block of a list in the loaded index (as
// if the section checksums had missed it) before the backend uploads the
// postings: the fused bp128 tiles (and AND+OR's OR part) must report the
// queries holding that term as corrupt, like the CPU engine does, and
// answer the others. k exceeds every list, so no tile or block is skipped
// by a threshold and the damaged block is always decoded.
func TestOrCorruptBlocks(t *testing.T) {
	testContext(t)
	for _, what := range []string{"docID header", "frequency header", "docID values"} {
		t.Run(what, func(t *testing.T) {
			rng := rand.New(rand.NewSource(5))
			col := genCollection(rng, 3000, 12, 32, false)
			x := col.bp128(t)
			tid := damageMiddleBlock(t, x, math.MaxInt, what)
			term := x.Term(tid)
			others := []string{x.Term((tid + 1) % x.NumTerms()), x.Term((tid + 5) % x.NumTerms())}
			var qs []engine.Query
			for _, mode := range []engine.Mode{engine.Or, engine.AndOr} {
				for i, ts := range [][]string{{term}, {term, others[0]}, {others[1], term}, others} {
					qs = append(qs, engine.Query{ID: fmt.Sprintf("%v/%d", mode, i), Terms: ts, Mode: mode, K: 10000})
				}
			}
			for _, dense := range []bool{false, true} { // the accumulator passes over the touch marks, and all of them
				// the tiles' checks (TestOrWholeCorrupt: the whole queries')
				g := newBackend(t, x, Options{orNoWhole: true, orDense: dense})
				checkCorruptOr(t, x, g, qs, term)
			}
		})
	}
}

// checkCorruptOr runs qs on g and the CPU: the queries holding the damaged
// term fail with index.ErrCorrupt as the CPU's do, the others are exact.
func checkCorruptOr(t *testing.T, x *index.Index, g *Backend, qs []engine.Query, term string) {
	t.Helper()
	got, want := searchBoth(t, x, g, qs)
	for i, q := range qs {
		damaged := slices.Contains(q.Terms, term)
		switch {
		case damaged && (q.Mode == engine.Or || len(q.Terms) == 1):
			if !errors.Is(got[i].Err, index.ErrCorrupt) || !errors.Is(want[i].Err, index.ErrCorrupt) {
				t.Errorf("query %s %q: GPU error %v, CPU error %v, want index.ErrCorrupt", q.ID, q.Terms, got[i].Err, want[i].Err)
			}
		case damaged: // AND+OR: as the CPU (its AND part may or may not reach the block)
			if (got[i].Err == nil) != (want[i].Err == nil) || got[i].Err != nil && !errors.Is(got[i].Err, index.ErrCorrupt) {
				t.Errorf("query %s %q: GPU error %v, CPU error %v", q.ID, q.Terms, got[i].Err, want[i].Err)
			}
		default:
			if msg := sameResponse(got[i], want[i]); msg != "" {
				t.Errorf("query %s %q without the damaged term: %s", q.ID, q.Terms, msg)
			}
		}
	}
}

// damageMiddleBlock damages the middle block of the longest list of at
// most maxDF postings whose middle block holds packed values (the densest
// lists have gaps of 0 bits: no value bytes) and at least 3 blocks, as
// what says: its "frequency header" or "docID header" (the first byte:
// not the block's count), or else one of its docID gaps (the docIDs then
// miss the skip table's last docID). It returns the list's term ID (the
// test fails when no list qualifies).
func damageMiddleBlock(t *testing.T, x *index.Index, maxDF int, what string) int {
	t.Helper()
	tid, most := -1, 0
	for i := range x.NumTerms() {
		l, err := x.List(i)
		if err != nil {
			t.Fatal(err)
		}
		if int(l.DF) <= maxDF && l.NBlocks > most && len(l.DocBlock(l.NBlocks/2)) >= 6 {
			tid, most = i, l.NBlocks
		}
	}
	if tid < 0 || most < 3 {
		t.Fatalf("no list of at most %d postings and 3 blocks (longest: %d blocks)", maxDF, most)
	}
	l, _ := x.List(tid)
	b := l.NBlocks / 2
	blk := l.DocBlock(b)
	switch what {
	case "frequency header":
		blk = l.FreqBlock(b)
		blk[0] = 0xff
	case "docID header":
		blk[0] = 0xff
	default:
		blk[len(blk)/2+1] ^= 0x01
	}
	return tid
}
