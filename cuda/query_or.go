package cuda

import "fmt"

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
	// OQueryWords is the size of one OQuery in 32-bit words.
	OQueryWords = 4
	// OrNoTile marks an unused seed slot.
	OrNoTile uint32 = 0xffffffff
)

// PutOQuery writes one OQuery: the query's first Seg, its candidate slots
// and its first candidate slot.
func PutOQuery(w []uint32, seg0, cap, coff uint32) { w[0], w[1], w[2], w[3] = seg0, cap, coff, 0 }

// OrTileKernels are the loaded tiled OR kernels of one Context.
type OrTileKernels struct {
	check, bounds, accumulate, clamp, compact, maxtree *Function
}

// LoadOrTileKernels looks the tiled OR kernels up in c's embedded kernels.
func LoadOrTileKernels(c *Context) (*OrTileKernels, error) {
	k, err := c.Kernels()
	if err != nil {
		return nil, err
	}
	o := &OrTileKernels{}
	for _, f := range []struct {
		dst  **Function
		name string
	}{
		{&o.check, "qp_ortile_check"}, {&o.bounds, "qp_ortile_bounds"}, {&o.accumulate, "qp_ortile_accumulate"},
		{&o.clamp, "qp_ortile_clamp"}, {&o.compact, "qp_ortile_compact"}, {&o.maxtree, "qp_ortile_maxtree"},
	} {
		fn, err := k.mod.Function(f.name)
		if err != nil {
			return nil, fmt.Errorf("cuda: the embedded fatbin lacks the tiled OR kernels (rebuild it with `make kernels`): %w", err)
		}
		*f.dst = fn
	}
	return o, nil
}

// Functions lists the kernels (for resource reports).
func (o *OrTileKernels) Functions() []*Function {
	return []*Function{o.check, o.bounds, o.accumulate, o.clamp, o.compact, o.maxtree}
}

// Check counts in errs[QueryErrDocs] the decoded docIDs (nval, in nseg
// Segs by v0) that are >= ndocs or not increasing within their Seg.
func (o *OrTileKernels) Check(s *Stream, segs DevicePtr, nseg int, docs DevicePtr, nval int, ndocs uint32, errs DevicePtr) error {
	n := count32("values", nval)
	if n == 0 {
		return nil
	}
	return o.check.Launch(gridFor(nval, queryThreads), block256, 0, s, segs, count32("segments", nseg), docs, n, ndocs, errs)
}

// Bounds writes ub (nq x ntiles float32), each tile's upper bound on its
// documents' scores from the skip tables' block maxima (useBM false: the
// maxima are stale, every tile a list touches is unbounded), and seeds
// (nq x nseed uint32), each query's nseed tiles of largest bound, whose ub
// it sets to -1.
func (o *OrTileKernels) Bounds(s *Stream, nq int, qmeta, oq, segs, qterms, terms, post DevicePtr, useBM bool,
	tile, ntiles, nseed int, ub, seeds DevicePtr) error {
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
	return o.bounds.Launch(Dim3{uint32(min(nq, 65535)), 1, 1}, block256, 0, s, count32("queries", nq), qmeta, oq, segs,
		qterms, terms, post, bm, uint32(tile), uint32(ntiles), uint32(nseed), ub, seeds)
}

// Accumulate runs the tiled accumulation, selection and candidate emission
// over nitems work items: the seeds (seeds != 0: item i is query i/nseed,
// tile seeds[i]) or every (query, tile) (seeds == 0: item i is query
// i/ntiles, tile i%ntiles, skipped when ub[i] <= 0 or below theta's score).
// theta (uint64 per query, ^0 = none) and cnt (uint32 per query) are
// updated; candidates land at cdoc/cscore[OQuery.coff + ...].
func (o *OrTileKernels) Accumulate(s *Stream, nitems, ntiles, tile int, seeds DevicePtr, nseed int,
	qmeta, oq, segs, qterms, terms, norms DevicePtr, ndocs uint32, k1p1 float32, docs, freqs, ub, theta, cnt,
	cdoc, cscore DevicePtr) error {
	n := count32("tile items", nitems)
	if n == 0 {
		return nil
	}
	g := Dim3{uint32(min(nitems, 1<<16)), 1, 1}
	return o.accumulate.Launch(g, block256, 0, s, n, uint32(ntiles), uint32(tile), seeds, uint32(nseed), qmeta, oq,
		segs, qterms, terms, norms, ndocs, k1p1, docs, freqs, ub, theta, cnt, cdoc, cscore)
}

// Clamp writes out[q] = min(cnt[q], OQuery.cap).
func (o *OrTileKernels) Clamp(s *Stream, nq int, oq, cnt, out DevicePtr) error {
	if nq == 0 {
		return nil
	}
	return o.clamp.Launch(gridFor(nq, queryThreads), block256, 0, s, count32("queries", nq), oq, cnt, out)
}

// Compact packs each query's ex[q+1]-ex[q] candidates (ex: exclusive scan
// of the clamped counts) to ndoc/nscore/ncq at ex[q].
func (o *OrTileKernels) Compact(s *Stream, nq int, oq, ex, cdoc, cscore, ndoc, nscore, ncq DevicePtr) error {
	if nq == 0 {
		return nil
	}
	return o.compact.Launch(Dim3{uint32(min(nq, 65535)), 1, 1}, block256, 0, s, count32("queries", nq), oq, ex,
		cdoc, cscore, ndoc, nscore, ncq)
}

// MaxTree selects each query's k best packed candidates (cdoc/cscore/cq,
// cq ascending, at most OrTreeItems per query) in rank order with Ding's
// multi-level max tree, like QueryKernels.TopK: keys at res[QMeta.res...],
// cnt[q] kept, total[q] items. keys is scratch of OQuery.cap words per
// query at OQuery.coff.
func (o *OrTileKernels) MaxTree(s *Stream, nq int, qmeta, cdoc, cscore, cq DevicePtr, ncand int, oq, keys, res,
	cnt, total DevicePtr) error {
	if nq == 0 {
		return nil
	}
	return o.maxtree.Launch(Dim3{uint32(min(nq, 65535)), 1, 1}, block256, 0, s, count32("queries", nq), qmeta, cdoc,
		cscore, cq, count32("candidates", ncand), oq, keys, res, cnt, total)
}
