package kern

import (
	"fmt"
	"math"

	"github.com/qpengine/qp/cuda"
)

// Tiled OR kernels (kernels/query_ortile.cu): shared-memory accumulators
// per document tile, block-max tile bounds, a running per-query threshold
// on the k-th best rank key, candidate packing and Ding et al. WWW'09 §8's
// multi-level max-tree top-k. engine/gpu/ortile.go orchestrates them; see
// the .cu file for the launch shapes and memory traffic.

// Limits of the tiled OR kernels.
const (
	// OrTileMax is the largest tile (documents per CTA accumulator).
	OrTileMax = 8192
	// OrMaxTiles is the largest number of tiles per query.
	OrMaxTiles = 4096
	// OrTreeItems is the most candidates per query OrMaxTree takes.
	OrTreeItems = 512 * 512
	// OrCntTiles and OrCntBlocks index the work counters of the tiled
	// accumulation in its OrCounters-word error/counter buffer (after
	// QueryErrDocs and AndErrFreqs).
	OrCntTiles, OrCntBlocks = 2, 3
	// OrCntSkipped counts the blocks the fused tiles skipped by their
	// block maxima. OrCounters is the size of the buffer, in 32-bit words.
	OrCntSkipped = 4
	// OrCntSelect counts the tiles whose candidates outnumbered k (they
	// ran the k-th key selection), OrCntEmit those that emitted any.
	OrCntSelect, OrCntEmit = 5, 6
	// OrCntLookups counts the documents whose bitmap terms the fused
	// tiles added by rank (AccumulateBP128 with bitmaps).
	OrCntLookups = 7
	// OrCntPre counts the blocks Predecode decoded (once per launch).
	OrCntPre   = 8
	OrCounters = 9
	// OQueryWords is the size of one OQuery in 32-bit words.
	OQueryWords = 4
	// OrWholeMax and OrWholeTerms bound the OR queries Whole takes: the
	// postings of all their lists and their terms
	// (kernels/query_orwhole.cu kMax, kTerms).
	OrWholeMax, OrWholeTerms = 2048, 32
)

// PutOQuery writes one OQuery: the query's first Seg, its candidate slots
// and its first candidate slot.
func PutOQuery(w []uint32, seg0, cap, coff uint32) { w[0], w[1], w[2], w[3] = seg0, cap, coff, 0 }

// OrTileKernels are the loaded tiled OR kernels of one Context.
type OrTileKernels struct {
	check, bounds, accumulate, accBP128, accBP128Dense, predecode, clamp, compact, maxtree, whole *cuda.Function
}

// LoadOrTileKernels looks the tiled OR kernels up in c's embedded kernels.
func LoadOrTileKernels(c *cuda.Context) (*OrTileKernels, error) {
	k, err := Load(c)
	if err != nil {
		return nil, err
	}
	o := &OrTileKernels{}
	for _, f := range []struct {
		dst  **cuda.Function
		name string
	}{
		{&o.check, "qp_ortile_check"}, {&o.bounds, "qp_ortile_bounds"}, {&o.accumulate, "qp_ortile_accumulate"},
		{&o.accBP128, "qp_ortile_accumulate_bp128"}, {&o.accBP128Dense, "qp_ortile_accumulate_bp128_dense"},
		{&o.clamp, "qp_ortile_clamp"}, {&o.compact, "qp_ortile_compact"}, {&o.maxtree, "qp_ortile_maxtree"},
		{&o.whole, "qp_orwhole_bp128"}, {&o.predecode, "qp_ortile_predecode"},
	} {
		fn, err := k.fb.Function(f.name)
		if err != nil {
			return nil, fmt.Errorf("cuda: the embedded fatbin lacks the tiled OR kernels (rebuild it with `make kernels`): %w", err)
		}
		*f.dst = fn
	}
	return o, nil
}

// Functions lists the kernels (for resource reports).
func (o *OrTileKernels) Functions() []*cuda.Function {
	return []*cuda.Function{o.check, o.bounds, o.accumulate, o.accBP128, o.accBP128Dense, o.predecode, o.clamp, o.compact, o.maxtree, o.whole}
}

// Check counts in errs[QueryErrDocs] the decoded docIDs (nval, in nseg
// Segs by v0) that are >= ndocs or not increasing within their Seg.
func (o *OrTileKernels) Check(s *cuda.Stream, segs cuda.DevicePtr, nseg int, docs cuda.DevicePtr, nval int, ndocs uint32, errs cuda.DevicePtr) error {
	n := count32("values", nval)
	if n == 0 {
		return nil
	}
	return launch(o.check, gridFor(nval, queryThreads), s, &OrTileCheckParams{
		Segs: segs, NSeg: count32("segments", nseg), Docs: docs, NVal: n, NDocs: ndocs, Errs: errs})
}

// Bounds writes order (nq x ntiles uint32), each query's tiles by
// descending upper bound on their documents' scores from the skip
// tables' block maxima (useBM false: the maxima are stale, every tile a
// list touches is unbounded), ub (nq x ntiles float32), those bounds in
// the same order (ub[q][r] bounds tile order[q][r]), and, when
// rng is not 0, for every Seg (query term) s and tile t, rng[s*(ntiles+1)
// + t] = the first block of the list whose last docID is >= t*tile, with
// bit 31 set when the block before it ends at document t*tile-1
// (ntiles+1 entries per term: the blocks AccumulateBP128 decodes), and
// qtm[s] = the TermMeta of Seg s's term (TermMetaWords words each).
func (o *OrTileKernels) Bounds(s *cuda.Stream, nq int, qmeta, oq, segs, qterms, terms, post cuda.DevicePtr, useBM bool,
	tile, ntiles int, ub, order, rng, qtm cuda.DevicePtr) error {
	if nq == 0 {
		return nil
	}
	if ntiles < 1 || ntiles > OrMaxTiles || tile < 1 || tile > OrTileMax {
		panic(fmt.Sprintf("BUG: cuda: tiled OR with %d tiles of %d documents", ntiles, tile))
	}
	var bm uint32
	if useBM {
		bm = 1
	}
	return launch(o.bounds, cuda.Dim3{X: uint32(min(nq, 65535)), Y: 1, Z: 1}, s, &OrTileBoundsParams{
		NQ: count32("queries", nq), QMeta: qmeta, OQ: oq, Segs: segs, QTerms: qterms, Terms: terms, Post: post,
		UseBM: bm, Tile: uint32(tile), NTiles: uint32(ntiles), UB: ub, Order: order, Rng: rng, QTM: qtm})
}

// OrPass is one accumulation pass of the tiled OR kernels: the tile ranks
// [R0, R1) of every one of NQ queries (order from Bounds), Per consecutive
// ranks per work item, queries interleaved.
type OrPass struct {
	NQ, NTiles, Tile int
	Order            cuda.DevicePtr
	R0, R1, Per      int
	// Dense runs the fused tiles' dense passes (AccumulateBP128 only):
	// every tile zeroes and scans all its accumulators (the A/B switch of
	// the sparse passes, which visit only the accumulators the tile's adds
	// touched; query_ortile.cu, acc_add). The results are the same.
	Dense bool
}

func (p OrPass) items() int {
	if p.R1 <= p.R0 || p.NQ == 0 {
		return 0
	}
	if p.Per < 1 || p.R1 > p.NTiles || p.NTiles > OrMaxTiles || p.Tile < 1 || p.Tile > OrTileMax {
		panic(fmt.Sprintf("BUG: cuda: tiled OR pass %+v", p))
	}
	return p.NQ * ((p.R1 - p.R0 + p.Per - 1) / p.Per)
}

// passCounts are a pass's counts as the accumulation kernels take them.
type passCounts struct{ NQ, NItems, NTiles, Tile, R0, R1, Per uint32 }

// params checks the pass's counts for n work items (items).
func (p OrPass) params(n int) passCounts {
	return passCounts{NQ: count32("queries", p.NQ), NItems: count32("tile items", n), NTiles: uint32(p.NTiles),
		Tile: uint32(p.Tile), R0: uint32(p.R0), R1: uint32(p.R1), Per: uint32(p.Per)}
}

func (p OrPass) grid(n int) cuda.Dim3 { return cuda.Dim3{X: uint32(min(n, 1<<16)), Y: 1, Z: 1} }

// Accumulate runs pass p over lists decoded whole (docs/freqs at each
// Seg's v0): per tile, accumulation, selection against theta (uint64 per
// query, ^0 = none) and emission of at most k candidates to
// cdoc/cscore[OQuery.coff + ...], counted in cnt (uint32 per query).
// errs[OrCntTiles] counts the tiles accumulated.
func (o *OrTileKernels) Accumulate(s *cuda.Stream, p OrPass, qmeta, oq, segs, qterms, terms, norms cuda.DevicePtr, ndocs uint32,
	k1p1 float32, docs, freqs, errs, ub, theta, cnt, cdoc, cscore cuda.DevicePtr) error {
	n := p.items()
	if n == 0 {
		return nil
	}
	pp := p.params(n)
	return cuda.LaunchFields(o.accumulate, p.grid(n), block256, 0, s, &OrTileAccumulateParams{
		NQ: pp.NQ, NItems: pp.NItems, NTiles: pp.NTiles, Tile: pp.Tile, Order: p.Order, R0: pp.R0, R1: pp.R1, Per: pp.Per,
		QMeta: qmeta, OQ: oq, Segs: segs, QTerms: qterms, Terms: terms, Norms: norms, NDocs: ndocs, K1p1: k1p1,
		Docs: docs, Freqs: freqs, Errs: errs, UB: ub, Theta: theta, Cnt: cnt, CDoc: cdoc, CScore: cscore})
}

// AccumulateBP128 is Accumulate for indexes whose docID and frequency
// blocks are both bp128 (blocks of at most 128 values, bs per block): the
// tiles decode the blocks they need (rng, from Bounds) from the resident
// postings (post); corrupt blocks are counted in errs[QueryErrDocs]
// (docIDs) and errs[AndErrFreqs] (frequencies) and skipped;
// errs[OrCntTiles] and errs[OrCntBlocks] count the tiles accumulated and
// the blocks decoded.
//
// qtm is Bounds' TermMeta copies. With device bitmaps (bm.Col != 0:
// uint32 per query term, in QTerm order, its column or AndNoColumn;
// query.cuh), a tile whose threshold exceeds the maxima of a suffix of a
// query's canonical terms that all have a column in use (term 0
// excepted) decodes only the terms before it; the documents that can
// still reach the threshold get the suffix's scores by rank (frequencies
// by slot), counted in errs[OrCntLookups]. The results are the same.
//
// pre (Pre, zero: none) gives the lists Predecode decoded: the tiles add
// their postings from it instead of decoding their blocks.
func (o *OrTileKernels) AccumulateBP128(s *cuda.Stream, p OrPass, qmeta, oq, segs, qterms, terms, norms cuda.DevicePtr, ndocs uint32, k1p1 float32, post cuda.DevicePtr, bs int, rng, qtm cuda.DevicePtr, bm AndBitmaps,
	pre OrPre, errs, ub, theta, cnt, cdoc, cscore cuda.DevicePtr) error {
	n := p.items()
	if n == 0 {
		return nil
	}
	if bs < 1 || bs > MaxBlockValues {
		panic(fmt.Sprintf("BUG: cuda: fused bp128 OR with blocks of %d", bs))
	}
	pp := p.params(n)
	fn := o.accBP128
	if p.Dense {
		fn = o.accBP128Dense
	}
	return cuda.LaunchFields(fn, p.grid(n), block256, 0, s, &OrTileAccumulateBP128Params{
		NQ: pp.NQ, NItems: pp.NItems, NTiles: pp.NTiles, Tile: pp.Tile, Order: p.Order, R0: pp.R0, R1: pp.R1, Per: pp.Per,
		QMeta: qmeta, OQ: oq, Segs: segs, QTerms: qterms, Terms: terms, Norms: norms, NDocs: ndocs, K1p1: k1p1,
		Post: post, BS: uint32(bs), Rng: rng, QTM: qtm, Col: bm.Col, Mat: bm.Mat, Rank: bm.Rank,
		D: count32("bitmap groups", bm.D), S: count32("rank entries", AndRankEntries(bm.D)), Dvo: pre.Dvo, Dec: pre.Dec, Errs: errs, UB: ub,
		Theta: theta, Cnt: cnt, CDoc: cdoc, CScore: cscore})
}

// OrPre are the pre-decoded lists of a fused tiled OR launch (Predecode,
// AccumulateBP128): NPre lists, query term PList[2i] with its NBlk blocks
// numbered from PList[2i+1] (ascending); Dvo (uint32 per query term: its
// first posting in Dec, or OrNoPre) and Dec (2 uint32 per posting:
// document, score bits). Dvo 0: none.
type OrPre struct {
	NPre, NBlk      int
	PList, Dvo, Dec cuda.DevicePtr
}

// OrNoPre marks a query term whose list the tiles decode themselves.
const OrNoPre = math.MaxUint32

// Predecode decodes the blocks of the lists of pre once, after Bounds
// (whose rng entries of those terms it replaces by posting numbers: the
// first posting of each tile, df past the last) and before the
// accumulation: per posting, its document and the bits of its term score
// (w * BM25, the tiles' term()) at Dec[2 (Dvo[x] + p)]. Corrupt blocks
// are counted as AccumulateBP128 counts them; errs[OrCntPre] counts the
// blocks decoded.
func (o *OrTileKernels) Predecode(s *cuda.Stream, pre OrPre, segs, qterms, terms, post cuda.DevicePtr, bs int, norms cuda.DevicePtr,
	k1p1 float32, ndocs uint32, tile, ntiles int, rng, errs cuda.DevicePtr) error {
	if pre.NBlk == 0 {
		return nil
	}
	if bs < 1 || bs > MaxBlockValues {
		panic(fmt.Sprintf("BUG: cuda: OR pre-decode with blocks of %d", bs))
	}
	return launch(o.predecode, gridFor(32*pre.NBlk, queryThreads), s, &OrTilePredecodeParams{
		Npre: count32("pre-decoded lists", pre.NPre), Plist: pre.PList, NBlk: count32("pre-decoded blocks", pre.NBlk),
		Segs: segs, QTerms: qterms, Terms: terms, Post: post, BS: uint32(bs), Norms: norms, K1p1: k1p1, NDocs: ndocs,
		Tile: uint32(tile), NTiles: uint32(ntiles), Dvo: pre.Dvo, Rng: rng, Dec: pre.Dec, Errs: errs})
}

// Clamp writes out[q] = min(cnt[q], OQuery.cap).
func (o *OrTileKernels) Clamp(s *cuda.Stream, nq int, oq, cnt, out cuda.DevicePtr) error {
	if nq == 0 {
		return nil
	}
	return launch(o.clamp, gridFor(nq, queryThreads), s, &OrTileClampParams{
		NQ: count32("queries", nq), OQ: oq, Cnt: cnt, Out: out})
}

// Compact packs each query's ex[q+1]-ex[q] candidates (ex: exclusive scan
// of the clamped counts) to ndoc/nscore/ncq at ex[q].
func (o *OrTileKernels) Compact(s *cuda.Stream, nq int, oq, ex, cdoc, cscore, ndoc, nscore, ncq cuda.DevicePtr) error {
	if nq == 0 {
		return nil
	}
	return launch(o.compact, cuda.Dim3{X: uint32(min(nq, 65535)), Y: 1, Z: 1}, s, &OrTileCompactParams{
		NQ: count32("queries", nq), OQ: oq, Ex: ex, CDoc: cdoc, CScore: cscore, NDoc: ndoc, NScore: nscore, NCQ: ncq})
}

// MaxTree selects each query's k best packed candidates (cdoc/cscore/cq,
// cq ascending, at most OrTreeItems per query) in rank order with Ding's
// multi-level max tree, like QueryKernels.TopK: keys at res[QMeta.res...],
// cnt[q] kept, total[q] items. keys is scratch of OQuery.cap words per
// query at OQuery.coff.
func (o *OrTileKernels) MaxTree(s *cuda.Stream, nq int, qmeta, cdoc, cscore, cq cuda.DevicePtr, ncand int, oq, keys, res,
	cnt, total cuda.DevicePtr) error {
	if nq == 0 {
		return nil
	}
	return launch(o.maxtree, cuda.Dim3{X: uint32(min(nq, 65535)), Y: 1, Z: 1}, s, &OrTileMaxTreeParams{
		NQ: count32("queries", nq), QMeta: qmeta, CDoc: cdoc, CScore: cscore, CQ: cq,
		NCand: count32("candidates", ncand), OQ: oq, Keys: keys, Res: res, Cnt: cnt, Total: total})
}

// Whole answers nq OR queries (QMeta, QTerms; each of at most OrWholeTerms
// terms whose lists hold at most OrWholeMax postings, on bp128 docIDs and
// frequencies of block size bs) one CTA each, without tiles: every block
// decoded once, the postings sorted by document, each document's score
// summed in canonical order, the rank keys sorted. It writes query q's
// min(k, documents) result keys at res[QMeta.res], that number at cnt[q]
// (^0: the query was too large) and its documents at total[q]; errs
// (OrCounters words) gets the corrupt-block counts and, at OrCntBlocks,
// the blocks decoded (kernels/query_orwhole.cu).
func (o *OrTileKernels) Whole(s *cuda.Stream, nq int, qmeta, qterms, terms, post cuda.DevicePtr, bs int, norms cuda.DevicePtr,
	ndocs uint32, k1p1 float32, errs, res, cnt, total cuda.DevicePtr) error {
	if nq == 0 {
		return nil
	}
	return launch(o.whole, cuda.Dim3{X: uint32(min(nq, 65535)), Y: 1, Z: 1}, s, &OrWholeParams{
		NQ: count32("queries", nq), QMeta: qmeta, QTerms: qterms, Terms: terms, Post: post, BS: count32("block size", bs),
		Norms: norms, NDocs: ndocs, K1p1: k1p1, Errs: errs, Res: res, Cnt: cnt, Total: total})
}
