package kern

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/qpengine/qp/cuda"
)

// Query-processing kernels (kernels/query_*.cu, kernels/query.cuh): the
// building blocks of GPU AND, OR and top-k over a device-resident index,
// orchestrated by package engine/gpu. Each launcher below enqueues one
// kernel on a stream and does not wait; the layouts of the structures the
// kernels read (TermMeta, QMeta, QTerm, Seg, S4) are written with the Put*
// helpers. See the .cu files for each kernel's launch shape and memory
// traffic.

// Layout sizes, in 32-bit words, of the structures of kernels/query.cuh
// (their Go mirrors in layout.go; the Put* helpers write them into word
// staging buffers).
const (
	TermMetaWords = 8  // {skip, doc, freq uint64; nblocks, df uint32}
	QMetaWords    = 4  // {terms, first QTerm, k, first result slot uint32}
	QTermWords    = 4  // {term uint32; weight, idf, max float32}
	SegWords      = 10 // {d0, f0, v0 uint64; term, blk0, query, qterm uint32}
	S4Words       = 8  // {blocks, postings, doc bytes, freq bytes uint64}
)

// The word sizes are the mirrors' (a constant index out of range, a
// compile error, otherwise).
var (
	_ = [1]int{}[TermMetaWords*4-unsafe.Sizeof(TermMeta{})]
	_ = [1]int{}[QMetaWords*4-unsafe.Sizeof(QMeta{})]
	_ = [1]int{}[QTermWords*4-unsafe.Sizeof(QTerm{})]
	_ = [1]int{}[SegWords*4-unsafe.Sizeof(Seg{})]
	_ = [1]int{}[S4Words*4-unsafe.Sizeof(S4{})]
	_ = [1]int{}[OQueryWords*4-unsafe.Sizeof(OQuery{})]
)

// Block markers of qp_and_locate (query.cuh kPass, kDead).
const (
	BlockPass uint32 = 0xffffffff
	BlockDead uint32 = 0xfffffffe
)

// QueryErrDocs is the index of the error counter that the kernels raise
// for decoded docIDs that are >= N or not increasing (query.cuh kErrDocs).
const QueryErrDocs = 0

// ScanTile is the number of items one CTA of the scan kernels covers.
const ScanTile = 1024

// ScanParts is the number of partial sums (plus one for the total) that
// ScanU32 and ScanS4 need for n items.
func ScanParts(n int) int { return (n + ScanTile - 1) / ScanTile }

func put64(w []uint32, v uint64) { w[0], w[1] = uint32(v), uint32(v>>32) }

// PutTermMeta writes one TermMeta: the byte offsets of a list's skip table,
// docID blocks and frequency blocks in the resident postings, its number
// of blocks and its document frequency.
func PutTermMeta(w []uint32, skip, doc, freq uint64, nblocks, df uint32) {
	put64(w[0:], skip)
	put64(w[2:], doc)
	put64(w[4:], freq)
	w[6], w[7] = nblocks, df
}

// PutQMeta writes one QMeta: the query's number of distinct terms, the
// index of its first QTerm, its k and its first result slot.
func PutQMeta(w []uint32, terms, first, k, res uint32) { w[0], w[1], w[2], w[3] = terms, first, k, res }

// PutQTerm writes one QTerm: term ID, query weight, idf and the term's
// maximum score in the query (weight times the list's largest block
// maximum; math.MaxFloat32 when the maxima are stale).
func PutQTerm(w []uint32, term uint32, weight, idf, max float32) {
	w[0], w[1], w[2], w[3] = term, math.Float32bits(weight), math.Float32bits(idf), math.Float32bits(max)
}

// PutSeg writes one Seg: a whole list (term) decoded in one launch, its
// first block blk0 in the launch, its offsets d0, f0 in the staged docID and
// frequency bytes and v0 in the decoded values, the query (row) q and the
// QTerm qt it belongs to.
func PutSeg(w []uint32, d0, f0, v0 uint64, term, blk0, q, qt uint32) {
	put64(w[0:], d0)
	put64(w[2:], f0)
	put64(w[4:], v0)
	w[6], w[7], w[8], w[9] = term, blk0, q, qt
}

// QueryKernels are the loaded query-processing kernels of one Context.
type QueryKernels struct {
	k *Kernels

	fullDesc, gather, andInit, orAccumulate, topk *cuda.Function
	scanReduce, scanPartials, scanApply           [2]*cuda.Function // u32, S4
}

// LoadQueryKernels looks up the query kernels in c's embedded kernels. It
// fails when the fatbin lacks them (run `make kernels`).
func LoadQueryKernels(c *cuda.Context) (*QueryKernels, error) {
	k, err := Load(c)
	if err != nil {
		return nil, err
	}
	q := &QueryKernels{k: k}
	for _, f := range []struct {
		dst  **cuda.Function
		name string
	}{
		{&q.fullDesc, "qp_query_full_desc"}, {&q.gather, "qp_query_gather"},
		{&q.andInit, "qp_query_and_init"},
		{&q.orAccumulate, "qp_query_or_accumulate"}, {&q.topk, "qp_query_topk"},
		{&q.scanReduce[0], "qp_query_scan_reduce_u32"}, {&q.scanPartials[0], "qp_query_scan_partials_u32"},
		{&q.scanApply[0], "qp_query_scan_apply_u32"}, {&q.scanReduce[1], "qp_query_scan_reduce_s4"},
		{&q.scanPartials[1], "qp_query_scan_partials_s4"}, {&q.scanApply[1], "qp_query_scan_apply_s4"},
	} {
		fn, err := k.fb.Function(f.name)
		if err != nil {
			return nil, fmt.Errorf("cuda: the embedded fatbin lacks the query kernels (rebuild it with `make kernels`): %w", err)
		}
		*f.dst = fn
	}
	return q, nil
}

// Kernels are the decoding kernels of the same Context.
func (q *QueryKernels) Kernels() *Kernels { return q.k }

// Functions lists the query kernels (for resource reports).
func (q *QueryKernels) Functions() []*cuda.Function {
	return []*cuda.Function{q.fullDesc, q.gather, q.andInit, q.orAccumulate, q.topk, q.scanReduce[0], q.scanPartials[0], q.scanApply[0],
		q.scanReduce[1], q.scanPartials[1], q.scanApply[1]}
}

const queryThreads = 256

// count32 checks that n fits a kernel's uint32 count (a programmer bug
// otherwise: the host sizes launch sets below 2^31 items).
func count32(what string, n int) uint32 {
	if n < 0 || n > math.MaxInt32 {
		panic(fmt.Sprintf("BUG: cuda: %s = %d outside 0..2^31-1", what, n))
	}
	return uint32(n)
}

// gridFor is the grid of a grid-stride kernel over n items of one thread
// each (capped; the kernels loop).
func gridFor(n, perCTA int) cuda.Dim3 {
	g := (n + perCTA - 1) / perCTA
	g = max(1, min(g, 1<<20))
	return cuda.Dim3{X: uint32(g), Y: 1, Z: 1}
}

var block256 = cuda.Dim3{X: queryThreads, Y: 1, Z: 1}

// FullDesc lists every block of nseg whole lists (segs: nseg Seg) for
// Gather and the decoders: blkTerm, blkIdx (nblk uint32), dOff, fOff, oOff
// (nblk+1 uint64). bs is the index's block size.
func (q *QueryKernels) FullDesc(s *cuda.Stream, segs cuda.DevicePtr, nseg int, terms, post cuda.DevicePtr, nblk, bs int,
	blkTerm, blkIdx, dOff, fOff, oOff cuda.DevicePtr) error {
	n := count32("blocks", nblk)
	if n == 0 {
		return nil
	}
	return launch(q.fullDesc, gridFor(nblk, queryThreads), s, &FullDescParams{
		Segs: segs, NSeg: count32("segments", nseg), Terms: terms, Post: post, NBlk: n, BS: uint32(bs), BlkTerm: blkTerm,
		BlkIdx: blkIdx, DOff: dOff, FOff: fOff, OOff: oOff})
}

// Gather copies the listed blocks' encoded docIDs to gdocs at dOff (and,
// when fOff is not 0, their frequencies to gfreqs at fOff) and writes the
// decoders' base and last arrays (nblk uint32 each).
func (q *QueryKernels) Gather(s *cuda.Stream, terms, post cuda.DevicePtr, nblk int, blkTerm, blkIdx, dOff, fOff,
	gdocs, gfreqs, base, last cuda.DevicePtr) error {
	n := count32("blocks", nblk)
	if n == 0 {
		return nil
	}
	return launch(q.gather, gridFor(nblk, queryThreads/32), s, &GatherParams{
		Terms: terms, Post: post, NBlk: n, BlkTerm: blkTerm, BlkIdx: blkIdx, DOff: dOff, FOff: fOff, GDocs: gdocs,
		GFreqs: gfreqs, Base: base, Last: last})
}

// AndInit makes the AND candidates (cdoc, cscore, cq: nval each) of the
// decoded shortest lists docs/freqs (one Seg per query), scored with their
// first term; err counts corrupt docIDs.
func (q *QueryKernels) AndInit(s *cuda.Stream, segs cuda.DevicePtr, nseg int, qterms, norms cuda.DevicePtr, ndocs uint32,
	k1p1 float32, docs, freqs cuda.DevicePtr, nval int, cdoc, cscore, cq, errs cuda.DevicePtr) error {
	n := count32("values", nval)
	if n == 0 {
		return nil
	}
	return launch(q.andInit, gridFor(nval, queryThreads), s, &AndInitParams{
		Segs: segs, NSeg: count32("segments", nseg), QTerms: qterms, Norms: norms, NDocs: ndocs, K1p1: k1p1, Docs: docs,
		Freqs: freqs, NVal: n, CDoc: cdoc, CScore: cscore, CQ: cq, Errs: errs})
}

// OrAccumulate adds the decoded lists (one Seg each, at most one per query)
// to the dense accumulators acc (rows of ndocs float32, row = Seg.q).
func (q *QueryKernels) OrAccumulate(s *cuda.Stream, segs cuda.DevicePtr, nseg int, qterms, norms cuda.DevicePtr, ndocs uint32,
	k1p1 float32, docs, freqs cuda.DevicePtr, nval int, acc, errs cuda.DevicePtr) error {
	n := count32("values", nval)
	if n == 0 {
		return nil
	}
	return launch(q.orAccumulate, gridFor(nval, queryThreads), s, &OrAccumulateParams{
		Segs: segs, NSeg: count32("segments", nseg), QTerms: qterms, Norms: norms, NDocs: ndocs, K1p1: k1p1, Docs: docs,
		Freqs: freqs, NVal: n, Acc: acc, Errs: errs})
}

// TopK selects each query's k best items in rank order as 64-bit keys
// (~float32bits(score) << 32 | doc) at res[QMeta.res...], with cnt[q] the
// number kept and total[q] the number of items. Items are the candidates
// cdoc/cscore/cq (ncand, grouped by ascending query) or, when dense, the
// accumulator rows acc (ndocs each; zeros skipped). scratch/scratchOff
// hold the sort buffers of queries with k > 4096 (next power of two >= k
// words each).
func (q *QueryKernels) TopK(s *cuda.Stream, dense bool, nq int, qmeta, cdoc, cscore, cq cuda.DevicePtr, ncand int,
	acc cuda.DevicePtr, ndocs uint32, res, cnt, total, scratch, scratchOff cuda.DevicePtr) error {
	if nq == 0 {
		return nil
	}
	var d uint32
	if dense {
		d = 1
	}
	g := cuda.Dim3{X: uint32(min(nq, 65535)), Y: 1, Z: 1}
	return launch(q.topk, g, s, &TopKParams{
		Dense: d, NQ: count32("queries", nq), QMeta: qmeta, CDoc: cdoc, CScore: cscore, CQ: cq,
		NCand: count32("candidates", ncand), Acc: acc, NDocs: ndocs, Res: res, Cnt: cnt, Total: total, Scratch: scratch,
		ScratchOff: scratchOff})
}

// ScanU32 writes the exclusive prefix sums of in[0..n) (uint32) to out
// (n+1 entries, out[n] = total; out may equal in); part needs
// ScanParts(n)+1 entries (scratch: its contents afterwards are
// unspecified). Two launches, three when ScanParts(n) > ScanFuseParts.
func (q *QueryKernels) ScanU32(s *cuda.Stream, in, out, part cuda.DevicePtr, n int) error {
	return q.scan(0, s, in, out, part, n)
}

// ScanS4 is ScanU32 for S4 items.
func (q *QueryKernels) ScanS4(s *cuda.Stream, in, out, part cuda.DevicePtr, n int) error {
	return q.scan(1, s, in, out, part, n)
}

func (q *QueryKernels) scan(t int, s *cuda.Stream, in, out, part cuda.DevicePtr, n int) error {
	nn := count32("scan items", n)
	if n == 0 {
		return nil
	}
	np := ScanParts(n)
	g := cuda.Dim3{X: uint32(np), Y: 1, Z: 1}
	var err error
	if t == 0 {
		err = launch(q.scanReduce[t], g, s, &ScanReduceU32Params{In: in, Part: part, N: nn})
	} else {
		err = launch(q.scanReduce[t], g, s, &ScanReduceS4Params{In: in, Part: part, N: nn})
	}
	if err != nil {
		return err
	}
	return q.scanRest(t, s, in, out, part, np, g, nn)
}

// ScanFuseParts is the most partial sums for which a scan skips its
// partials launch: each CTA of the apply launch sums the raw partials of
// the tiles before its own (kernels/query_scan.cu, tile_prefix). At 512 a
// CTA reads on average at most half a tile more than its tile; above it
// the single-CTA partials launch runs first (docs/GPU-QUERY.md, "Fewer
// launches per step"). A variable for the tests of both paths.
var ScanFuseParts = 512

// ScanLaunches is the number of launches of a scan from partials of n items
// (AndKernels.Select and AndKernels.Compact; ScanU32/S4 launch one more,
// their reduce).
func ScanLaunches(n int) int {
	switch {
	case n == 0:
		return 0
	case ScanParts(n) <= ScanFuseParts:
		return 1
	}
	return 2
}

// scanRest is the scan's last kernels: each tile's items from the sum of
// the tiles before it (grid g), after the partials of the np tiles are
// scanned by one CTA when np > ScanFuseParts.
func (q *QueryKernels) scanRest(t int, s *cuda.Stream, in, out, part cuda.DevicePtr, np int, g cuda.Dim3, nn uint32) error {
	raw, err := q.partialsFirst(t, s, part, np)
	if err != nil {
		return err
	}
	if t == 0 {
		return launch(q.scanApply[t], g, s, &ScanApplyU32Params{In: in, Out: out, Part: part, N: nn, Raw: raw})
	}
	return launch(q.scanApply[t], g, s, &ScanApplyS4Params{In: in, Out: out, Part: part, N: nn, Raw: raw})
}

// partialsFirst scans the np tile partials in part with one CTA (t: 0
// uint32, 1 S4 items) when np > ScanFuseParts, and returns the Raw flag of
// the fused kernel that follows: 1 when that kernel sums the raw partials
// before each tile itself (no launch here), 0 when they were scanned.
func (q *QueryKernels) partialsFirst(t int, s *cuda.Stream, part cuda.DevicePtr, np int) (uint32, error) {
	if np <= ScanFuseParts {
		return 1, nil
	}
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	if t == 0 {
		return 0, launch(q.scanPartials[t], one, s, &ScanPartialsU32Params{Part: part, NP: uint32(np)})
	}
	return 0, launch(q.scanPartials[t], one, s, &ScanPartialsS4Params{Part: part, NP: uint32(np)})
}

// launch enqueues f, whose parameters are the fields of *p in order
// (layout.go; query_params.cuh's QP_SIGNATURE_ asserts check the kernel's
// list at compile time), with blocks of 256 threads.
func launch[P any](f *cuda.Function, grid cuda.Dim3, s *cuda.Stream, p *P) error {
	return cuda.LaunchFields(f, grid, block256, 0, s, p)
}
