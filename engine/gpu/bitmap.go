package gpu

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/qpengine/qp/bitmap/wah"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/index"
)

// Bitmap lists in the GPU AND (issue #6; docs/BITMAPS.md "GPU"). The
// densest lists also live on the device as bitmaps: New encodes their
// docIDs as WAH bitmaps (bitmap/wah) and decompresses them on the GPU with
// Algorithm 2 of the WAH range-query paper (kern.WAHColumns) into 31-row
// group bitsets, with a rank directory built on the host. An AND query's
// bitmap terms are the longest suffix of its canonical order (ascending
// df, so its densest terms), term 0 excepted, whose lists have a bitmap in
// use; the planner uses a list's bitmap when its density df/N is at least
// the bitmap density (Options.BitmapDensity, SetBitmapDensity). Then, in
// runAnd:
//
//   - after the candidates of the shortest lists are made, one filter
//     launch (qp_and_filter) keeps those whose document is in every bitmap
//     term's list (a bit test each) and compaction drops the others, so the
//     list steps see only candidates that can still match;
//   - with bp128 frequencies the bitmap terms then need no list step at
//     all: their scores are added last (qp_and_bmscore), with each
//     frequency read by slot at the candidate's rank in the list (Ding et
//     al. WWW'09 §8: frequencies only for the candidates); with other
//     frequency codecs they stay list steps (over the filtered candidates).
//
// The fused OR tiles (bp128 indexes, runOrTiled) use the same columns: a
// tile whose threshold exceeds the maxima of a suffix of the query's
// canonical terms that all have a bitmap in use decodes only the other
// terms and adds the suffix's scores by rank for the documents that can
// still reach the threshold (MaxScore over bitmaps,
// kernels/query_ortile.cu). Profile.OrLookups counts those documents.
//
// The results are the list path's, bit for bit (same candidates, the same
// float32 sums in canonical order).

// Defaults of Options.BitmapDensity and Options.BitmapBytes.
const (
	// DefaultBitmapDensity: lists of at least this density (df/N) get a
	// device bitmap and the AND planner uses it. Measured on a
	// 10M-document gen index with 10,000 TREC 2006 queries (H100 and
	// H200, docs/BENCHMARKS.md "Third session"): AND went from 93-102k
	// queries/s without bitmaps to 127-152k at densities 2^-6..2^-9 on
	// H100s; at the default c = 12M, 2^-7 was ahead of 2^-8 in the three
	// runs that measured both (146.7k, 151.8k; 175.8k on the H200), at
	// c = 4M and 1M (one run) behind; 2^-4 gains less (120-124k), and
	// 2^-10 was erratic (119-137k). Those runs had the 2 GiB budget of the
	// time, which holds only the 1,479 densest lists at 10M documents, so
	// every density from 2^-6 down gave the same lists.
	DefaultBitmapDensity = 1.0 / 128
	// DefaultBitmapBytes bounds the device bitmaps (group bitsets and rank
	// directories, 1.16 bits per document each: 1.45 MB a list at 10M
	// documents, 3.6 MB at 25M); the densest lists get theirs first. New
	// also keeps them under bitmapFreeShare of the free device memory
	// (bitmapFreeShareSet when Options.BitmapBytes is set). 12 GiB holds
	// every list of density >= 2^-7 of the topic-model gen index up to
	// 25M documents (3,271 lists, 11.06 GiB there; 4.4 GiB at 10M). The
	// former 2 GiB held 1,479 lists at 10M and 591 at 25M; on an H200 at
	// 25M, 12 GiB took the AND from 87-89k to 112k queries/s, the intersect
	// phase from 77.6 to 57.6 ms per 10,000 queries, the OR unchanged
	// (docs/GPU-QUERY.md "Bitmap AND of all-dense queries: the potential",
	// GPU-TESTS twentieth session run 4).
	DefaultBitmapBytes = 12 << 30
	bitmapFreeShare    = 0.25
	bitmapFreeShareSet = 0.5
	// bitmapChunkBytes is the group bitsets decompressed per batch (the
	// WAH scratch doubles it for the batch).
	bitmapChunkBytes = 256 << 20
)

// bitmaps are the device bitmaps of the AND planner and the OR tiles.
type bitmaps struct {
	col    []int32      // term -> column, -1 without one
	use    []uint32     // host copy of the device col table (kern.AndNoColumn: not in use)
	colBuf *cuda.Buffer // device col table
	mat    *cuda.Buffer // group bitsets, column c at 4*c*D bytes
	rank   *cuda.Buffer // rank directories, column c at 4*c*S bytes
	d, s   int          // groups and rank entries per column
	ncols  int          // columns
	bytes  int64        // device bytes of mat and rank
	useDF  uint32       // columns in use: lists of df >= useDF
	errs   []error      // lists left without a bitmap (corrupt blocks)
	dev    kern.AndBitmaps
}

// bitmapDF is the smallest df of density d over n documents (at least 1).
func bitmapDF(d float64, n uint32) uint32 {
	return uint32(max(1, math.Ceil(d*float64(n))))
}

// bitmapOff reports whether a density turns the bitmaps off.
func bitmapOff(d float64) bool { return d < 0 || d > 1 || math.IsNaN(d) }

// bitmapBudget is the device bytes the bitmaps may take: budget
// (Options.BitmapBytes after defaults) and at most bitmapFreeShare of the
// free device memory, bitmapFreeShareSet when the budget was set.
func bitmapBudget(budget int64, set bool, free int64) int64 {
	share := bitmapFreeShare
	if set {
		share = bitmapFreeShareSet
	}
	return min(budget, int64(share*float64(free)))
}

// initBitmaps builds the device bitmaps of the lists of density >=
// opt.BitmapDensity (densest first, within opt.BitmapBytes and
// bitmapFreeShare of the free memory). lists are x's block-coded lists.
func (b *Backend) initBitmaps(lists []index.List) error {
	d, budget := b.opt.BitmapDensity, b.opt.BitmapBytes
	if bitmapOff(d) || budget < 0 || b.n == 0 {
		return nil
	}
	free, _, err := b.ctx.MemInfo()
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	budget = bitmapBudget(budget, b.bmBytesSet, int64(free))
	D := wah.Groups(b.n)
	S := kern.AndRankEntries(D)
	per := 4 * int64(D+S)
	minDF := bitmapDF(d, b.n)
	var terms []int
	for t := range lists {
		if b.info[t].df >= minDF {
			terms = append(terms, t)
		}
	}
	// Densest first, ties by descending term ID: the columns taken are a
	// suffix of the canonical order (ascending df, then term ID).
	slices.SortFunc(terms, func(x, y int) int {
		if c := cmp.Compare(b.info[y].df, b.info[x].df); c != 0 {
			return c
		}
		return cmp.Compare(y, x)
	})
	terms = terms[:min(len(terms), int(budget/per))]
	if len(terms) == 0 {
		return nil
	}
	bm := &bitmaps{col: make([]int32, len(lists)), use: make([]uint32, len(lists)), d: D, s: S}
	for t := range bm.col {
		bm.col[t] = -1
	}
	wk, err := kern.LoadWAHKernels(b.ctx)
	if err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	// Encode on the host in chunks, decompress each chunk on the device and
	// copy its columns into the matrix.
	chunk := max(1, bitmapChunkBytes/(4*D))
	type enc struct {
		bm   wah.Bitmap
		rank []uint32
		err  error
	}
	encs := make([]enc, min(chunk, len(terms)))
	var cols []int // terms of the columns, in column order
	var allocErr error
	if bm.mat, allocErr = b.ctx.Alloc(4 * D * len(terms)); allocErr == nil {
		bm.rank, allocErr = b.ctx.Alloc(4 * S * len(terms))
	}
	if allocErr != nil {
		bm.free()
		if errors.Is(allocErr, cuda.ErrOutOfMemory) {
			return nil // an optimization: the AND runs on the lists alone
		}
		return fmt.Errorf("gpu: %d list bitmaps: %w", len(terms), allocErr)
	}
	for lo := 0; lo < len(terms); lo += chunk {
		part := terms[lo:min(lo+chunk, len(terms))]
		// Every index of [lo, hi): parallelChunks hands the whole range to
		// one call when it runs in the caller (GOMAXPROCS 1), and encoding
		// only its first list left the others empty, so New failed.
		parallelChunks(len(part), 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				e := &encs[i]
				e.bm, e.rank, e.err = encodeList(&lists[part[i]], b.n, e.bm.Words, e.rank, D, S)
			}
		})
		var bms []wah.Bitmap
		c0 := len(cols)
		for i, t := range part {
			if e := &encs[i]; e.err != nil {
				bm.errs = append(bm.errs, e.err)
			} else {
				bms = append(bms, e.bm)
				if err := cuda.CopyToDevice(bm.rank, 4*S*len(cols), e.rank); err != nil {
					bm.free()
					return fmt.Errorf("gpu: list bitmaps: %w", err)
				}
				bm.col[t] = int32(len(cols))
				cols = append(cols, t)
			}
		}
		if len(bms) == 0 {
			continue
		}
		if err := b.decompress(wk, bms, bm.mat, 4*D*c0); err != nil {
			bm.free()
			if errors.Is(err, cuda.ErrOutOfMemory) {
				return nil // no room for the decompression's scratch: no bitmaps
			}
			return err
		}
	}
	bm.ncols = len(cols)
	bm.bytes = per * int64(bm.ncols)
	if bm.colBuf, err = b.ctx.Alloc(4*len(lists) + 16); err != nil {
		bm.free()
		return fmt.Errorf("gpu: list bitmaps: %w", err)
	}
	b.bm = bm
	return b.useBitmaps(minDF)
}

// encodeList decodes l's docIDs and returns their WAH bitmap (into words)
// and rank directory (into rank): rank[s] = the documents in groups
// [0, 8s).
func encodeList(l *index.List, n uint32, words, rank []uint32, D, S int) (wah.Bitmap, []uint32, error) {
	docs := make([]uint32, 0, l.DF)
	buf := make([]uint32, l.BlockSize)
	for blk := 0; blk < l.NBlocks; blk++ {
		k, err := l.DecodeDocs(blk, buf)
		if err != nil {
			return wah.Bitmap{}, rank, err
		}
		docs = append(docs, buf[:k]...)
	}
	bm, err := wah.Encode(words, docs, n)
	if err != nil {
		return wah.Bitmap{}, rank, fmt.Errorf("%w: term %d: %v", index.ErrCorrupt, l.Term, err)
	}
	rank = slices.Grow(rank[:0], S)[:S]
	clear(rank)
	for _, d := range docs {
		if s := int(d/wah.GroupBits)/kern.AndRankWords + 1; s < S {
			rank[s]++
		}
	}
	for s := 1; s < S; s++ {
		rank[s] += rank[s-1]
	}
	return bm, rank, nil
}

// decompress runs Algorithm 2 over bms on the device and copies the group
// bitsets to mat at byte offset off.
func (b *Backend) decompress(wk *kern.WAHKernels, bms []wah.Bitmap, mat *cuda.Buffer, off int) error {
	c, err := wk.Upload(bms)
	if err != nil {
		return fmt.Errorf("gpu: list bitmaps: %w", err)
	}
	defer c.Free()
	s := b.stream
	if err := c.Decompress(s); err != nil {
		return fmt.Errorf("gpu: list bitmaps: %w", err)
	}
	if err := s.CopyDevice(mat, off, c.Mat, 0, 4*c.D*c.NCols); err != nil {
		return fmt.Errorf("gpu: list bitmaps: %w", err)
	}
	if err := c.Check(s); err != nil {
		return fmt.Errorf("gpu: BUG: list bitmaps encoded here: %w", err)
	}
	return nil
}

// useBitmaps puts the columns of the lists of df >= minDF in use.
func (b *Backend) useBitmaps(minDF uint32) error {
	bm := b.bm
	bm.useDF = minDF
	for t := range bm.col {
		bm.use[t] = b.column(t, minDF)
	}
	if err := b.stream.Synchronize(); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	if err := cuda.CopyToDevice(bm.colBuf, 0, bm.use); err != nil {
		return fmt.Errorf("gpu: list bitmaps: %w", err)
	}
	if err := b.ctx.Synchronize(); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	bm.dev = kern.AndBitmaps{Col: bm.colBuf.Ptr(), Mat: bm.mat.Ptr(), Rank: bm.rank.Ptr(), D: bm.d}
	b.refreshPlanCfg()
	return nil
}

func (bm *bitmaps) free() error {
	var errs []error
	for _, p := range []**cuda.Buffer{&bm.mat, &bm.rank, &bm.colBuf} {
		if *p != nil {
			errs = append(errs, (*p).Free())
			*p = nil
		}
	}
	return errors.Join(errs...)
}

// SetBitmapDensity changes the density from which the AND planner uses a
// list's device bitmap (Options.BitmapDensity; DefaultBitmapDensity when
// 0; negative or above 1: none). Only lists that got a bitmap in New can
// use one: a density below New's uses those.
func (b *Backend) SetBitmapDensity(d float64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d == 0 {
		d = DefaultBitmapDensity
	}
	b.opt.BitmapDensity = d
	if b.bm == nil {
		return nil
	}
	minDF := uint32(math.MaxUint32)
	if !bitmapOff(d) {
		minDF = bitmapDF(d, b.n)
	}
	return b.useBitmaps(minDF)
}

// BitmapDensity is the density in use (Options.BitmapDensity).
func (b *Backend) BitmapDensity() float64 { return b.opt.BitmapDensity }

// SetOrBitmapDensity changes Options.OrBitmapDensity: the density from
// which the fused OR tiles use a list's device bitmap (0: the AND
// planner's; negative or above 1: none).
func (b *Backend) SetOrBitmapDensity(d float64) {
	b.mu.Lock()
	b.opt.OrBitmapDensity = d
	b.refreshPlanCfg()
	b.mu.Unlock()
}

// column is term t's column when it has a bitmap and df >= minDF, else
// kern.AndNoColumn: the rule of the AND planner (useBitmaps) and of the
// OR tiles (orMinDF).
func (b *Backend) column(t int, minDF uint32) uint32 {
	return b.columnDF(t, b.info[t].df, minDF)
}

// columnDF is column for a term whose df the caller holds (a prepared
// qterm's copy of b.info[t]: no random read of the term table).
func (b *Backend) columnDF(t int, df, minDF uint32) uint32 {
	if c := b.bm.col[t]; c >= 0 && df >= minDF {
		return uint32(c)
	}
	return kern.AndNoColumn
}

// orMinDF is the smallest df whose bitmap the fused OR tiles use: the AND
// planner's, or that of Options.OrBitmapDensity (MaxUint32: none).
func (b *Backend) orMinDF() uint32 {
	d := b.opt.OrBitmapDensity
	switch {
	case d == 0:
		return b.bm.useDF
	case bitmapOff(d):
		return math.MaxUint32
	}
	return bitmapDF(d, b.n)
}

// BitmapStats describes the device bitmaps: lists with one, those the
// planner uses at the current density, their device bytes, and the lists
// left without one because their blocks are corrupt.
type BitmapStats struct {
	Lists, InUse int
	Bytes        int64
	Corrupt      int
}

// Bitmaps reports the device bitmaps.
func (b *Backend) Bitmaps() BitmapStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bm == nil {
		return BitmapStats{}
	}
	s := BitmapStats{Lists: b.bm.ncols, Bytes: b.bm.bytes, Corrupt: len(b.bm.errs)}
	for _, c := range b.bm.use {
		if c != kern.AndNoColumn {
			s.InUse++
		}
	}
	return s
}
