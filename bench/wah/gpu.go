package wah

import (
	"fmt"
	"math"
	"slices"
	"time"

	wahbm "github.com/qpengine/qp/bitmap/wah"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
)

// unionAll merges sorted lists pairwise (a balanced tree of two-way merges).
func unionAll(ls [][]uint32) []uint32 {
	if len(ls) == 0 {
		return nil
	}
	for len(ls) > 1 {
		var next [][]uint32
		for i := 0; i+1 < len(ls); i += 2 {
			next = append(next, union2(ls[i], ls[i+1]))
		}
		if len(ls)%2 == 1 {
			next = append(next, ls[len(ls)-1])
		}
		ls = next
	}
	return ls[0]
}

func union2(a, b []uint32) []uint32 {
	out := make([]uint32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// gpuTime runs f reps times on the default stream and returns the best
// wall time between two synchronizations.
func gpuTime(ctx *cuda.Context, reps int, f func() error) (time.Duration, error) {
	best := time.Duration(math.MaxInt64)
	for r := 0; r < max(reps, 1); r++ {
		if err := ctx.Synchronize(); err != nil {
			return 0, err
		}
		start := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		if err := ctx.Synchronize(); err != nil {
			return 0, err
		}
		best = min(best, time.Since(start))
	}
	return best, nil
}

var wahGPU struct {
	ctx *cuda.Context
	k   *kern.WAHKernels
}

func openGPU() (*cuda.Context, *kern.WAHKernels, error) {
	if wahGPU.ctx == nil {
		ctx, err := cuda.Open(0)
		if err != nil {
			return nil, nil, err
		}
		k, err := kern.LoadWAHKernels(ctx)
		if err != nil {
			return nil, nil, err
		}
		wahGPU.ctx, wahGPU.k = ctx, k
	}
	return wahGPU.ctx, wahGPU.k, nil
}

// check compares a plan's candidates with the list path's results.
func check(p *kern.WAHPlan, qs []int, ref [][2][]uint32, oi int, what string) error {
	got, err := p.ReadDocs(nil)
	if err != nil {
		return err
	}
	for i, qi := range qs {
		if !slices.Equal(got[i], ref[qi][oi]) && len(got[i])+len(ref[qi][oi]) > 0 {
			return fmt.Errorf("bench wah: GPU %s of query %d: %d docs, the CPU list path %d", what, qi, len(got[i]), len(ref[qi][oi]))
		}
	}
	return nil
}

// GPUResult holds the settings and results of the GPU part.
type GPUResult struct {
	Reps, MaxCand, ROAN int                 // the settings (Config's)
	Decomp              time.Duration       // decompression of every bitmap, one batch
	Pat                 [4][2]time.Duration // per pattern, OR and AND, summed over the plans
	Plans               int                 // plans of all queries (the patterns other than ROA)
	NROA                int                 // queries ROA was timed on
	Alone               int                 // queries above MaxCand, in plans of their own
	Skipped             []int               // queries above kern.WAHMaxCandidates: not run on the GPU
	Skip                map[int]bool
}

// split splits the query indexes qs into plan batches of at most
// maxCand candidates each (kern.SplitWAHQueries; a query above maxCand is
// a batch of its own). It returns the batches (indexes into queries), the
// queries too large for any plan, and how many ran alone over maxCand.
func split(bms []wahbm.Bitmap, queries []Query, qs []int, N uint32, maxCand int) (batches [][]int, skipped []int, alone int) {
	bounds := make([]int, len(qs))
	for i, qi := range qs {
		b := 0
		for _, c := range queries[qi].Cols {
			b += bms[c].Count()
		}
		bounds[i] = min(b, int(N)) // = kern.WAHColumns.Bound
		if bounds[i] > maxCand && bounds[i] <= kern.WAHMaxCandidates {
			alone++
		}
	}
	bs, sk := kern.SplitWAHQueries(bounds, wahbm.Groups(N), maxCand, 0)
	for _, b := range bs {
		for i := range b {
			b[i] = qs[b[i]]
		}
	}
	for i := range sk {
		sk[i] = qs[sk[i]]
	}
	return bs, sk, alone
}

// plan makes the plan of a batch of queries over cols, mapping their
// columns through local (nil: identity).
func plan(cols *kern.WAHColumns, queries []Query, batch []int, local map[uint32]uint32) (*kern.WAHPlan, error) {
	qcols := make([][]uint32, len(batch))
	for i, qi := range batch {
		if local == nil {
			qcols[i] = queries[qi].Cols
			continue
		}
		for _, c := range queries[qi].Cols {
			qcols[i] = append(qcols[i], local[c])
		}
	}
	return cols.NewPlan(qcols)
}

// runPatterns times the batch decompression of every bitmap and each
// pattern over all queries (ROA over the first g.ROAN), split into plans of
// at most g.MaxCand candidates, checking every pattern's OR and AND
// results.
func runPatterns(bms []wahbm.Bitmap, queries []Query, ref [][2][]uint32, g *GPUResult) error {
	ctx, k, err := openGPU()
	if err != nil {
		return err
	}
	cols, err := k.Upload(bms)
	if err != nil {
		return err
	}
	defer cols.Free()
	if g.Decomp, err = gpuTime(ctx, g.Reps, func() error { return cols.Decompress(nil) }); err != nil {
		return err
	}
	if err := cols.Check(nil); err != nil {
		return err
	}
	all := make([]int, len(queries))
	for i := range all {
		all[i] = i
	}
	batches, skipped, alone := split(bms, queries, all, cols.N, g.MaxCand)
	g.Plans, g.Skipped, g.Alone = len(batches), skipped, alone
	g.Skip = map[int]bool{}
	for _, qi := range skipped {
		g.Skip[qi] = true
	}
	roa := all
	if g.ROAN > 0 && g.ROAN < len(all) {
		roa = all[:g.ROAN]
	}
	roaBatches, _, _ := split(bms, queries, roa, cols.N, g.MaxCand)
	for _, b := range roaBatches {
		g.NROA += len(b)
	}
	run := func(batches [][]int, pats []kern.WAHPattern) error {
		for _, batch := range batches {
			p, err := plan(cols, queries, batch, nil)
			if err != nil {
				return err
			}
			for _, pt := range pats {
				for oi, op := range []wahbm.Op{wahbm.OpOr, wahbm.OpAnd} {
					t, err := gpuTime(ctx, g.Reps, func() error {
						if err := p.Reduce(nil, pt, op, 4); err != nil {
							return err
						}
						if op == wahbm.OpOr {
							return p.Candidates(nil)
						}
						return nil
					})
					if err == nil {
						g.Pat[pt][oi] += t
						err = p.Candidates(nil)
					}
					if err == nil {
						err = check(p, batch, ref, oi, fmt.Sprintf("%v %v", pt, op))
					}
					if err != nil {
						p.Free()
						return err
					}
				}
			}
			p.Free()
		}
		return nil
	}
	if err := run(batches, []kern.WAHPattern{kern.WAHCOA, kern.WAHHybrid, kern.WAHIdealHybrid}); err != nil {
		return err
	}
	return run(roaBatches, []kern.WAHPattern{kern.WAHROA})
}

// runBucket times one density bucket's queries on the GPU with the
// ideal hybrid: reduce (+ candidates for OR, + the filter bitset for AND)
// with the bucket's bitmaps decompressed (res, summed over the bucket's
// plans), and that plus one decompression of the bucket's bitmaps (all).
// Queries in g.Skip are left out of both.
func runBucket(bms []wahbm.Bitmap, queries []Query, qs []int, ref [][2][]uint32, g *GPUResult, res, all *[2]time.Duration) error {
	ctx, k, err := openGPU()
	if err != nil {
		return err
	}
	local := map[uint32]uint32{}
	var sub []wahbm.Bitmap
	var run []int
	for _, qi := range qs {
		if g.Skip[qi] {
			continue
		}
		run = append(run, qi)
		for _, c := range queries[qi].Cols {
			if _, ok := local[c]; !ok {
				local[c] = uint32(len(sub))
				sub = append(sub, bms[c])
			}
		}
	}
	if len(run) == 0 {
		return nil
	}
	cols, err := k.Upload(sub)
	if err != nil {
		return err
	}
	defer cols.Free()
	dec, err := gpuTime(ctx, g.Reps, func() error { return cols.Decompress(nil) })
	if err != nil {
		return err
	}
	if err := cols.Check(nil); err != nil {
		return err
	}
	batches, _, _ := split(bms, queries, run, cols.N, g.MaxCand)
	for _, batch := range batches {
		p, err := plan(cols, queries, batch, local)
		if err != nil {
			return err
		}
		for oi, op := range []wahbm.Op{wahbm.OpOr, wahbm.OpAnd} {
			t, err := gpuTime(ctx, g.Reps, func() error {
				if err := p.Reduce(nil, kern.WAHIdealHybrid, op, 0); err != nil {
					return err
				}
				if op == wahbm.OpOr {
					return p.Candidates(nil)
				}
				return p.Bitset(nil)
			})
			if err == nil {
				res[oi] += t
				err = p.Candidates(nil)
			}
			if err == nil {
				err = check(p, batch, ref, oi, "ideal-hybrid "+op.String())
			}
			if err != nil {
				p.Free()
				return err
			}
		}
		p.Free()
	}
	for oi := range all {
		all[oi] = res[oi] + dec
	}
	return nil
}
