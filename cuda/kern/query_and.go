package kern

import (
	"fmt"

	"github.com/qpengine/qp/cuda"
)

// AND step kernels (kernels/query_and_step.cu): block selection by binary
// search or Parallel Merge Find (Ding et al. WWW'09 §7) fused with the
// marking of the selected blocks, intersection with the term's score
// added (frequencies decoded, or fetched by random access for bp128, Ding
// §8), and compaction that fills the unused tail with AndNone, so that the
// candidate count can stay on the device between steps. Locate and Match
// write the per-tile partial sums of their outputs; Select finishes the
// exclusive scan of Locate's from them and lists the selected blocks,
// Compact scans Match's flags itself (one launch each for at most
// ScanFuseParts tiles).

// AndNone is the query ID of an empty candidate slot: Compact writes it
// after the kept candidates, every AND step kernel treats the slot as a
// dead candidate, and TopK's search by query ends before it.
const AndNone uint32 = 0xffffffff

// AndErrFreqs is the index of the error counter that Match raises for a
// corrupt bp128 frequency block read by random access.
const AndErrFreqs = 1

// MaxAndLevels is the most Parallel Merge Find levels Locate takes.
const MaxAndLevels = 4

// AndKernels are the loaded AND step kernels of one Context.
type AndKernels struct {
	q                  *QueryKernels
	locate, sel, match *cuda.Function
	compact            *cuda.Function
	filter, bmscore    *cuda.Function // kernels/query_and_bitmap.cu
	bmscoreAll         *cuda.Function
	bmwords, bmemit    *cuda.Function // kernels/query_and_bmand.cu
}

// LoadAndKernels looks up the AND step kernels next to q's. It fails when
// the fatbin lacks them (run `make kernels`).
func LoadAndKernels(q *QueryKernels) (*AndKernels, error) {
	a := &AndKernels{q: q}
	for _, f := range []struct {
		dst  **cuda.Function
		name string
	}{{&a.locate, "qp_and_locate"}, {&a.sel, "qp_and_select"}, {&a.match, "qp_and_match"}, {&a.compact, "qp_and_compact"},
		{&a.filter, "qp_and_filter"}, {&a.bmscore, "qp_and_bmscore"}, {&a.bmscoreAll, "qp_and_bmscore_all"},
		{&a.bmwords, "qp_and_bmwords"}, {&a.bmemit, "qp_and_bmemit"}} {
		fn, err := q.k.fb.Function(f.name)
		if err != nil {
			return nil, fmt.Errorf("cuda: the embedded fatbin lacks the AND step kernels (rebuild it with `make kernels`): %w", err)
		}
		*f.dst = fn
	}
	return a, nil
}

// Functions lists the AND step kernels (for resource reports).
func (a *AndKernels) Functions() []*cuda.Function {
	return []*cuda.Function{a.locate, a.sel, a.match, a.compact, a.filter, a.bmscore, a.bmscoreAll, a.bmwords, a.bmemit}
}

// tiles is the grid of the tile kernels (one CTA per ScanTile items).
func tiles(n int) cuda.Dim3 { return cuda.Dim3{X: uint32(ScanParts(n)), Y: 1, Z: 1} }

// Locate writes, for the n candidate slots cdoc/cq (grouped by ascending
// query, docIDs ascending within a query; AndNone slots are empty), blk[i]:
// the block of the j-th list of candidate i's query that can hold it
// (BlockDead: none; BlockPass: a query >= qactive, which has no j-th term),
// and sel[i] (S4): {1, postings, doc bytes, freq bytes} of that block when i
// is the first candidate of its (query, block), else zeros; part[t] is the
// sum of sel over tile t (ScanParts(n) entries), for Select. The
// selected blocks and postings are added to qblocks/qpost (uint32 per
// query). levels = 0 searches every candidate in the whole skip table, or,
// when qlr is not 0, in the safe range of the query term's Linear
// Regression model of the skip table (AndLRWords uint32 per QTerm, parallel
// to qterms: PutAndLR); 1..MaxAndLevels use Parallel Merge Find with that
// many splitter levels (qlr must be 0). The results depend on neither.
// With keep (AndKeepMisses), a candidate past the list's last block gets
// BlockPass instead of BlockDead (Match keeps it).
func (a *AndKernels) Locate(s *cuda.Stream, terms, post, qmeta, qterms, qlr cuda.DevicePtr, j, qactive, n, bs, levels int,
	keep bool, cdoc, cq, blk, sel, part, qblocks, qpost cuda.DevicePtr) error {
	if levels < 0 || levels > MaxAndLevels || (levels > 0 && qlr != 0) {
		panic(fmt.Sprintf("BUG: cuda: AND locate with %d levels and LR models %#x", levels, qlr))
	}
	if n == 0 {
		return nil
	}
	return launch(a.locate, tiles(n), s, &AndLocateParams{
		Terms: terms, Post: post, QMeta: qmeta, QTerms: qterms, QLR: qlr, J: uint32(j),
		QActive: count32("active queries", qactive), N: count32("candidates", n), BS: uint32(bs), Levels: uint32(levels),
		Keep: b32(keep), CDoc: cdoc, CQ: cq, Blk: blk, Sel: sel, Part: part, QBlocks: qblocks, QPost: qpost})
}

// AndLRWords is the size of one Linear Regression model of a skip table in
// Locate's qlr (uint32 words).
const AndLRWords = 4

// PutAndLR writes one model of Locate's qlr: the block holding docID d (the
// first whose lastDoc is >= d) lies in [Pred(d) - l, max(0, Pred(d) + r + 1)], with
// Pred(d) = (d * gamma >> 32) - beta (intersect.LR fitted to the lastDocs;
// gamma = beta = l = 0, r = the number of blocks: the whole table).
func PutAndLR(w []uint32, gamma uint32, beta int32, l, r uint32) {
	w[0], w[1], w[2], w[3] = gamma, uint32(beta), l, r
}

// Select scans Locate's sel (n candidates) in place: sel[i] becomes the
// sum of sel[0..i) and sel[n] the total (part: Locate's tile sums,
// ScanParts(n)+1 entries, scratch); each selected block's entry of the
// list for Gather and the decoders goes to its slot (the scanned blocks
// before it): blkTerm (its list: the j-th term of the candidate's query),
// blkIdx (nsel+1 uint32 room: at most n+1), and its first posting, docID
// byte and frequency byte in the concatenation (oOff, dOff, fOff: uint64,
// with the ends at slot nsel). sel[n+1] = {*prev (0 when prev is 0), cq[0],
// 0, 0} (sel needs n+2 entries): the previous step's kept count (Compact's
// flag[n]) and the first candidate's query next to the totals, for one
// copy. One launch, two when ScanParts(n) > ScanFuseParts.
func (a *AndKernels) Select(s *cuda.Stream, qmeta, qterms cuda.DevicePtr, j, n int, cq, blk, sel, part, prev, blkTerm, blkIdx,
	dOff, fOff, oOff cuda.DevicePtr) error {
	nn := count32("candidates", n)
	if n == 0 {
		return nil
	}
	raw, err := a.q.partialsFirst(1, s, part, ScanParts(n))
	if err != nil {
		return err
	}
	return launch(a.sel, tiles(n), s, &AndSelectParams{
		QMeta: qmeta, QTerms: qterms, J: uint32(j), N: nn, CQ: cq, Blk: blk, Sel: sel, Part: part, Raw: raw, Prev: prev,
		BlkTerm: blkTerm, BlkIdx: blkIdx, DOff: dOff, FOff: fOff, OOff: oOff})
}

// Match looks every candidate with a selected block up in its decoded
// docIDs (docs at oOff; ex: the exclusive scan of Locate's sel), adds the
// j-th term's score to cscore when found, writes flag[i] (1: keep) and the
// per-tile flag sums to part. Frequencies come from freqs, or, when freqs is
// 0, by random access to the encoded bp128 frequency blocks in post (only
// for an index whose frequency codec is bp128); a corrupt one raises
// errs[AndErrFreqs].
//
// ms (the MaxScore OR's keep-misses mode, engine/gpu/orms.go), when
// ms.Keep: a candidate not in the list keeps its score instead of being
// dropped, and flag[i] is 1 only while its score plus the maxima of its
// query's terms after j (QTerm mx) can reach the query's seed threshold:
// the score of key ms.Res0[res+k-1] when ms.Cnt0[q] = k (qp_query_topk's
// output over the step-0 candidates; Res0 = 0: no seed, every candidate
// kept).
func (a *AndKernels) Match(s *cuda.Stream, terms, post, qmeta, qterms cuda.DevicePtr, j, n, bs int, norms cuda.DevicePtr, k1p1 float32, cdoc, cscore, cq, blk, ex, oOff, docs, freqs, flag, part, errs cuda.DevicePtr, ms AndKeep) error {
	if n == 0 {
		return nil
	}
	return launch(a.match, tiles(n), s, &AndMatchParams{
		Terms: terms, Post: post, QMeta: qmeta, QTerms: qterms, J: uint32(j), N: count32("candidates", n),
		BS: uint32(bs), Norms: norms, K1p1: k1p1, CDoc: cdoc, CScore: cscore, CQ: cq, Blk: blk, Ex: ex, OOff: oOff,
		Docs: docs, Freqs: freqs, Flag: flag, Part: part, Errs: errs, Keep: b32(ms.Keep), Res0: ms.Res0, Cnt0: ms.Cnt0})
}

// AndKeep is Match's keep-misses mode (the zero value: AND).
type AndKeep struct {
	Keep       bool
	Res0, Cnt0 cuda.DevicePtr
}

func b32(v bool) uint32 {
	if v {
		return 1
	}
	return 0
}

// Compact keeps the flagged candidates: flag holds the n candidates' 0/1
// flags (n+1 words; as Match and Filter write them) and part their tiles'
// sums (ScanParts(n)+1 entries). Kept candidate i goes to the number of
// kept candidates before it in ndoc/nscore/nq, slots [kept, n) of nq get
// AndNone, and flag[n] = kept; the flags stay, part is scratch. One launch
// (the flags' scan fused with the compaction), two when ScanParts(n) >
// ScanFuseParts (the partials are scanned first).
func (a *AndKernels) Compact(s *cuda.Stream, n int, flag, part, cdoc, cscore, cq, ndoc, nscore, nq cuda.DevicePtr) error {
	nn := count32("candidates", n)
	if n == 0 {
		return nil
	}
	np := ScanParts(n)
	raw, err := a.q.partialsFirst(0, s, part, np)
	if err != nil {
		return err
	}
	return launch(a.compact, tiles(n), s, &AndCompactParams{
		N: nn, Flag: flag, Part: part, NP: uint32(np), Raw: raw, CDoc: cdoc, CScore: cscore, CQ: cq, NDoc: ndoc,
		NScore: nscore, NQ: nq})
}

// AndNoColumn marks a term without a bitmap column in the col table of
// Filter and BitmapScore.
const AndNoColumn uint32 = 0xffffffff

// AndBitmaps are the device bitmaps of Filter and BitmapScore
// (kernels/query_and_bitmap.cu): Col (uint32 per term: its column, or
// AndNoColumn), Mat (the 31-row group bitsets of the columns, D words each,
// as WAHColumns.Decompress writes them) and Rank (S = AndRankEntries(D)
// uint32 per column: the set rows in the groups before each 8-word entry).
type AndBitmaps struct {
	Col, Mat, Rank cuda.DevicePtr
	D              int
}

// AndRankWords is the number of group words per rank directory entry.
const AndRankWords = 8

// AndRankEntries is the rank directory length of a column of D groups.
func AndRankEntries(D int) int { return (D + AndRankWords - 1) / AndRankWords }

// Filter writes flag[i] = 1 when candidate i (cdoc/cq, n slots, AndNone
// slots get 0) is in the list of every bitmap term of its query (the
// longest suffix of its canonical terms, term 0 excepted, whose terms have
// a column in bm.Col) and the per-tile flag sums to part, for
// Compact.
func (a *AndKernels) Filter(s *cuda.Stream, qmeta, qterms cuda.DevicePtr, bm AndBitmaps, n int, cdoc, cq, flag, part cuda.DevicePtr) error {
	if n == 0 {
		return nil
	}
	return launch(a.filter, tiles(n), s, &AndFilterParams{
		QMeta: qmeta, QTerms: qterms, Col: bm.Col, Mat: bm.Mat, D: count32("bitmap groups", bm.D),
		N: count32("candidates", n), CDoc: cdoc, CQ: cq, Flag: flag, Part: part})
}

// BitmapScore adds to cscore the scores of every candidate's bitmap terms
// (Filter's), in canonical order, with frequencies read by slot from the
// bp128 frequency blocks at the candidate's rank in the list (only for an
// index whose frequency codec is bp128, after Filter kept only candidates
// in those lists). With all, it adds those of every term of the
// candidates' queries, term 0 included (BitmapAnd's candidates, whose
// cscore slots hold 0). A corrupt frequency block raises errs[AndErrFreqs].
// One launch: qp_and_bmscore, or with all qp_and_bmscore_all (the same
// kernel body, and_bmscore<All>, and parameters).
func (a *AndKernels) BitmapScore(s *cuda.Stream, all bool, terms, post, qmeta, qterms cuda.DevicePtr, bm AndBitmaps, n, bs int,
	norms cuda.DevicePtr, k1p1 float32, cdoc, cscore, cq, errs cuda.DevicePtr) error {
	if n == 0 {
		return nil
	}
	fn := a.bmscore
	if all {
		fn = a.bmscoreAll
	}
	return launch(fn, gridFor(n, queryThreads), s, &AndBMScoreParams{
		Terms: terms, Post: post, QMeta: qmeta, QTerms: qterms, Col: bm.Col, Mat: bm.Mat, Rank: bm.Rank,
		D: count32("bitmap groups", bm.D), S: count32("rank entries", AndRankEntries(bm.D)), N: count32("candidates", n),
		BS: uint32(bs), Norms: norms, K1p1: k1p1, CDoc: cdoc, CScore: cscore, CQ: cq, Errs: errs})
}

// BitmapAndParts is the length of BitmapAnd's part scratch (uint32) for nq
// queries over bm.
func BitmapAndParts(bm AndBitmaps, nq int) int { return ScanParts(nq*bm.D) + 1 }

// BitmapAnd writes the intersections of the nq queries qmeta/qterms, every
// term of which has a column in bm.Col (kernels/query_and_bmand.cu), as
// candidates: cdoc (ascending docIDs) and cq (the query), grouped by
// ascending query, into the first slots of cdoc/cq (n slots; the caller
// fills cq with AndNone first and sizes n by the sum of the queries'
// shortest lists, which bounds their intersections). cnt (nq*D+1 uint32)
// ends as the exclusive prefix sums of the groups' counts (cnt[nq*D]: the
// total); part has BitmapAndParts entries. Three launches and the scan's
// (ScanU32).
func (a *AndKernels) BitmapAnd(s *cuda.Stream, qmeta, qterms cuda.DevicePtr, bm AndBitmaps, nq int, cnt, part cuda.DevicePtr,
	n int, cdoc, cq cuda.DevicePtr) error {
	if nq == 0 || bm.D == 0 {
		return nil
	}
	if nq > 65535 {
		panic(fmt.Sprintf("BUG: cuda: BitmapAnd of %d queries (at most 65535, one per grid row)", nq))
	}
	D := count32("bitmap groups", bm.D)
	count32("bitmap groups of the queries", nq*bm.D)
	g := gridFor(bm.D, queryThreads)
	g.Y = uint32(nq)
	if err := launch(a.bmwords, g, s, &AndBMWordsParams{QMeta: qmeta, QTerms: qterms, Col: bm.Col, Mat: bm.Mat, D: D,
		NQ: uint32(nq), Cnt: cnt}); err != nil {
		return err
	}
	if err := a.q.ScanU32(s, cnt, cnt, part, nq*bm.D); err != nil {
		return err
	}
	return launch(a.bmemit, g, s, &AndBMEmitParams{QMeta: qmeta, QTerms: qterms, Col: bm.Col, Mat: bm.Mat, D: D,
		NQ: uint32(nq), Pos: cnt, N: count32("candidate slots", n), CDoc: cdoc, CQ: cq})
}
