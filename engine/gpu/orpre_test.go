package gpu

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/engine"
)

// TestOrPreDecoded compares the fused OR tiles with lists of fewer blocks
// than tiles decoded once per launch (kern.OrTileKernels.Predecode) and
// without (Options.orNoPre) against the CPU engine, bit for bit: bp128
// (fused) and another codec (the decoded path, where nothing is
// pre-decoded), blocks of 16 and 128, ties, k from 1 to 10,000 (beyond
// every list), one-term queries, repeated terms (QTF) and an unknown term,
// OR and AND+OR. With pre-decoding the tiles must decode fewer blocks and
// Predecode must have run.
func TestOrPreDecoded(t *testing.T) {
	c := testContext(t)
	nq := 8
	if emulated(c) {
		nq = 4
	}
	bp, _ := compress.ByName("bp128")
	for _, codec := range []compress.Codec{bp, gpuCodecs()[0]} {
		for _, bs := range []int{16, 128} {
			ties := bs == 16
			rng := rand.New(rand.NewSource(int64(40 + bs)))
			col := genCollection(rng, 3000, 24, bs, ties)
			x := col.write(t, codec)
			a, b := col.terms[0], col.terms[len(col.terms)/2]
			terms := randomQueries(rng, col.terms, nq, [][]string{{a}, {b}, {a, a, b}, {b, "zz-unknown", b}})
			qs := orQueries(terms, []int{1, 10, 10000})
			var blocks [2]int64
			for i, off := range []bool{false, true} {
				name := fmt.Sprintf("%s/B%d/noPre=%v", codec.Name(), bs, off)
				g := newBackend(t, x, Options{orTile: 64, orNoWhole: true, orNoPre: off})
				if results, _ := compare(t, x, g, qs); results == 0 {
					t.Fatalf("%s: no results", name)
				}
				p := g.Profile()
				blocks[i] = p.OrBlocks
				t.Logf("%s: %d tiles run, %d blocks decoded by tiles, %d lists (%d blocks) pre-decoded", name, p.OrTilesRun,
					p.OrBlocks, p.OrPreLists, p.OrPreBlocks)
				fused := codec.ID() == compress.IDBP128
				if pre := p.OrPreLists > 0 && p.OrPreBlocks > 0; pre != (fused && !off) {
					t.Errorf("%s: %d lists, %d blocks pre-decoded", name, p.OrPreLists, p.OrPreBlocks)
				}
			}
			if codec.ID() == compress.IDBP128 && blocks[0] >= blocks[1] {
				t.Errorf("B%d: the tiles decoded %d blocks with pre-decoded lists, no fewer than %d without", bs, blocks[0], blocks[1])
			}
		}
	}
}

// TestOrPreDecodedCorrupt damages a block of a list that the tiles' launch
// pre-decodes (fewer blocks than tiles): the OR queries holding its term
// fail with index.ErrCorrupt, like the CPU's, whether or not the tiles
// would have reached the block; the others are answered exactly.
func TestOrPreDecodedCorrupt(t *testing.T) {
	testContext(t)
	for _, what := range []string{"docID header", "frequency header", "docID values"} {
		t.Run(what, func(t *testing.T) {
			rng := rand.New(rand.NewSource(6))
			col := genCollection(rng, 3000, 12, 32, false)
			x := col.bp128(t)
			// 47 tiles of 64 documents: lists of at most 46 blocks of 32
			// are pre-decoded.
			tid := damageMiddleBlock(t, x, 46*32, what)
			term := x.Term(tid)
			others := []string{x.Term((tid + 1) % x.NumTerms()), x.Term((tid + 5) % x.NumTerms())}
			var qs []engine.Query
			for _, k := range []int{10, 10000} {
				for i, ts := range [][]string{{term}, {term, others[0]}, {others[1], term}, others} {
					qs = append(qs, engine.Query{ID: fmt.Sprintf("k%d/%d", k, i), Terms: ts, Mode: engine.Or, K: k})
				}
			}
			g := newBackend(t, x, Options{orTile: 64, orNoWhole: true})
			checkDamaged(t, x, g, qs, term)
			if p := g.Profile(); p.OrPreLists == 0 {
				t.Errorf("no list pre-decoded: %+v", p)
			}
		})
	}
}
