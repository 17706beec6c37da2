package kern

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/qpengine/qp/bitmap/wah"
	"github.com/qpengine/qp/cuda"
)

// WAH bitmaps on the GPU (kernels/wah.cu; CPU reference bitmap/wah): the
// parallel decompression of Algorithm 2 of the GPU range-query paper
// (../shared/papers/wah-bitmap-gpu-range-queries.txt), batched over many
// bitmaps per launch, and reductions (OR, AND) of many decompressed
// bitmaps with the paper's four patterns, COA, ROA, hybrid and ideal
// hybrid. Results are 31-row group bitsets (wah.Bitmap.DecodeGroups
// layout), optionally compacted to ascending docIDs (a candidate filter)
// or repacked into a plain bitset (the AND filter).
//
// Usage: WAHKernels.Upload a set of bitmaps of one row count (the
// compressed words stay resident), WAHColumns.Decompress them (one batch),
// NewPlan for a batch of queries (each a list of column numbers), then
// Reduce with a pattern and Candidates or Bitset. The launch methods only
// enqueue on their stream; Check / the Read helpers synchronize.

// WAHPattern is a reduction pattern of the paper's §"GPU range query
// execution strategies".
type WAHPattern uint8

const (
	WAHCOA         WAHPattern = iota // column-oriented, Algorithm 3: one launch per level, pairs of whole columns
	WAHROA                           // row-oriented, Algorithm 4: one CTA per row, all columns in shared memory
	WAHHybrid                        // Algorithm 5: k x j tiles of 2k columns and j rows, then a second round
	WAHIdealHybrid                   // Algorithm 6: one tile spans all columns of a query, 1024 threads
)

// WAHPatterns lists the patterns in order.
var WAHPatterns = []WAHPattern{WAHCOA, WAHROA, WAHHybrid, WAHIdealHybrid}

func (p WAHPattern) String() string {
	switch p {
	case WAHCOA:
		return "coa"
	case WAHROA:
		return "roa"
	case WAHHybrid:
		return "hybrid"
	case WAHIdealHybrid:
		return "ideal-hybrid"
	}
	return fmt.Sprintf("WAHPattern(%d)", uint8(p))
}

// WAHMaxColumns is the most columns one query may reduce (ROA and round
// 2 of the hybrid hold a row of a query in one CTA of <= 1024 threads, two
// columns per thread: the paper's limit of 2048).
const WAHMaxColumns = 2048

// WAHMaxCandidates is the most candidate docIDs a plan holds (the sum
// over its queries of min(N, the set rows of their columns)): 1 GiB.
const WAHMaxCandidates = 1 << 28

// WAHMaxPlanGroups is the most result groups (queries x D) SplitWAHQueries
// puts in one plan: 2^27 groups, 512 MiB of results plus as much of
// popcount scan.
const WAHMaxPlanGroups = 1 << 27

// Bound is the candidate bound of query q over c: min(N, the sum of the
// set rows of its columns), what the query adds to a plan's Docs capacity
// (see NewPlan). Columns out of range count zero (NewPlan rejects them).
func (c *WAHColumns) Bound(q []uint32) int {
	b := 0
	for _, col := range q {
		if int(col) < len(c.Counts) {
			b += c.Counts[col]
		}
	}
	return min(b, int(c.N))
}

// SplitWAHQueries splits queries 0..len(bounds)-1 (bounds[i]: query i's
// candidate bound, WAHColumns.Bound) into consecutive batches for NewPlan,
// in order: each batch holds at most 65535 queries and maxGroups/D queries
// (at least one) and the sum of its bounds is at most maxCand. A query
// whose own bound exceeds maxCand (but not WAHMaxCandidates, the most
// NewPlan accepts) is a batch of its own; one above WAHMaxCandidates cannot
// be planned and is returned in skipped. maxCand <= 0 or above
// WAHMaxCandidates means WAHMaxCandidates; maxGroups <= 0 means
// WAHMaxPlanGroups.
func SplitWAHQueries(bounds []int, D, maxCand, maxGroups int) (batches [][]int, skipped []int) {
	if maxCand <= 0 || maxCand > WAHMaxCandidates {
		maxCand = WAHMaxCandidates
	}
	if maxGroups <= 0 {
		maxGroups = WAHMaxPlanGroups
	}
	maxQ := 65535
	if D > 0 {
		maxQ = max(1, min(maxQ, maxGroups/D))
	}
	var cur []int
	sum := 0
	flush := func() {
		if len(cur) > 0 {
			batches = append(batches, cur)
			cur, sum = nil, 0
		}
	}
	for i, b := range bounds {
		switch {
		case b < 0:
			panic(fmt.Sprintf("BUG: cuda: WAH query %d has a negative candidate bound %d", i, b))
		case b > WAHMaxCandidates:
			skipped = append(skipped, i)
			continue
		case b > maxCand:
			flush()
			cur = []int{i}
			flush()
			continue
		}
		if len(cur) == maxQ || sum+b > maxCand {
			flush()
		}
		cur = append(cur, i)
		sum += b
	}
	flush()
	return batches, skipped
}

// wahTile is the threads of a tile CTA (kernels/wah.cu kTileMax).
const wahTile = 1024

// WAHKernels are the loaded WAH kernels of one Context.
type WAHKernels struct {
	q                                                       *QueryKernels
	sizes, check, ends, fill, coa, tile, popc, emit, bitset *cuda.Function
}

// LoadWAHKernels looks up the WAH kernels (and the scan of the query
// kernels) in c's embedded kernels.
func LoadWAHKernels(c *cuda.Context) (*WAHKernels, error) {
	q, err := LoadQueryKernels(c)
	if err != nil {
		return nil, err
	}
	k := &WAHKernels{q: q}
	for _, f := range []struct {
		dst  **cuda.Function
		name string
	}{
		{&k.sizes, "qp_wah_sizes"}, {&k.check, "qp_wah_check"}, {&k.ends, "qp_wah_ends"},
		{&k.fill, "qp_wah_fill"}, {&k.coa, "qp_wah_coa"}, {&k.tile, "qp_wah_tile"},
		{&k.popc, "qp_wah_popc"}, {&k.emit, "qp_wah_emit"}, {&k.bitset, "qp_wah_bitset"},
	} {
		fn, err := q.k.fb.Function(f.name)
		if err != nil {
			return nil, fmt.Errorf("cuda: the embedded fatbin lacks the WAH kernels (rebuild it with `make kernels`): %w", err)
		}
		*f.dst = fn
	}
	return k, nil
}

// Functions lists the WAH kernels (for resource reports).
func (k *WAHKernels) Functions() []*cuda.Function {
	return []*cuda.Function{k.sizes, k.check, k.ends, k.fill, k.coa, k.tile, k.popc, k.emit, k.bitset}
}

// WAHColumns is a set of WAH bitmaps of N rows resident on the device:
// their compressed words and, after Decompress, their group bitsets as the
// columns of a matrix (column c at Mat + 4*c*D bytes).
type WAHColumns struct {
	k      *WAHKernels
	ctx    *cuda.Context
	N      uint32
	D      int   // groups per column, wah.Groups(N)
	NCols  int   // bitmaps
	NWords int   // compressed words in all
	Counts []int // set rows per bitmap (host), bounds for Candidates
	Mat    *cuda.Buffer

	words, woff, goff, nbits, sizes, ends, part, errb *cuda.Buffer
}

func allocU32(c *cuda.Context, n int) (*cuda.Buffer, error) { return c.Alloc(4*n + 16) }

func freeAll(bs ...*cuda.Buffer) {
	for _, b := range bs {
		if b != nil {
			_ = b.Free()
		}
	}
}

// Upload copies bms (all of the same row count, at least one) to the
// device and allocates their decompressed matrix and the scratch of
// Decompress. The bitmaps are not validated here: Decompress + Check do it
// on the device.
func (k *WAHKernels) Upload(bms []wah.Bitmap) (*WAHColumns, error) {
	if len(bms) == 0 {
		return nil, errors.New("cuda: WAH upload of no bitmaps")
	}
	c := k.q.k.Context()
	n := bms[0].N
	D := wah.Groups(n)
	col := &WAHColumns{k: k, ctx: c, N: n, D: D, NCols: len(bms), Counts: make([]int, len(bms))}
	woff := make([]uint32, len(bms)+1)
	goff := make([]uint32, len(bms)+1)
	nb := make([]uint32, len(bms))
	for i, b := range bms {
		if b.N != n {
			return nil, fmt.Errorf("cuda: WAH bitmaps of %d and %d rows in one upload", n, b.N)
		}
		col.NWords += len(b.Words)
		woff[i+1] = count32("WAH words", col.NWords)
		goff[i+1] = count32("WAH groups", (i+1)*D)
		nb[i] = n
		col.Counts[i] = b.Count()
	}
	words := make([]uint32, 0, col.NWords)
	for _, b := range bms {
		words = append(words, b.Words...)
	}
	ng := len(bms) * D
	var err error
	alloc := func(dst **cuda.Buffer, n int) {
		if err == nil {
			*dst, err = allocU32(c, n)
		}
	}
	alloc(&col.Mat, ng)
	alloc(&col.words, col.NWords)
	alloc(&col.woff, len(woff))
	alloc(&col.goff, len(goff))
	alloc(&col.nbits, len(nb))
	alloc(&col.sizes, col.NWords+1)
	alloc(&col.ends, ng+1)
	alloc(&col.part, ScanParts(max(col.NWords, ng))+1)
	alloc(&col.errb, 1)
	for _, cp := range []struct {
		b *cuda.Buffer
		v []uint32
	}{{col.words, words}, {col.woff, woff}, {col.goff, goff}, {col.nbits, nb}} {
		if err == nil {
			err = cuda.CopyToDevice(cp.b, 0, cp.v)
		}
	}
	if err != nil {
		col.Free()
		return nil, err
	}
	return col, nil
}

// Free releases the device memory.
func (c *WAHColumns) Free() {
	freeAll(c.Mat, c.words, c.woff, c.goff, c.nbits, c.sizes, c.ends, c.part, c.errb)
	*c = WAHColumns{}
}

// Decompress enqueues Algorithm 2 over the whole batch (kernels/wah.cu):
// sizes, scan, check, end points, scan, fill, into Mat. Check reports
// corrupt input.
func (c *WAHColumns) Decompress(s *cuda.Stream) error {
	k := c.k
	nw, ng := count32("WAH words", c.NWords), count32("WAH groups", c.NCols*c.D)
	if err := s.Fill32(c.errb, 0, 0, 1); err != nil {
		return err
	}
	if err := s.Fill32(c.ends, 0, 0, int(ng)+1); err != nil {
		return err
	}
	if nw > 0 {
		if err := launch(k.sizes, gridFor(c.NWords, queryThreads), s, &WAHSizesParams{Words: bufPtr(c.words), N: nw, Sizes: bufPtr(c.sizes),
			Errs: bufPtr(c.errb)}); err != nil {
			return err
		}
		if err := k.q.ScanU32(s, c.sizes.Ptr(), c.sizes.Ptr(), c.part.Ptr(), c.NWords); err != nil {
			return err
		}
	} else if err := s.Fill32(c.sizes, 0, 0, 1); err != nil {
		return err
	}
	if err := launch(k.check, gridFor(c.NCols, queryThreads), s, &WAHCheckParams{Words: bufPtr(c.words), WOff: bufPtr(c.woff),
		GOff: bufPtr(c.goff), NBits: bufPtr(c.nbits), NB: count32("WAH bitmaps", c.NCols), St: bufPtr(c.sizes), Errs: bufPtr(c.errb)}); err != nil {
		return err
	}
	if ng == 0 {
		return nil
	}
	if nw > 1 {
		if err := launch(k.ends, gridFor(c.NWords, queryThreads), s, &WAHEndsParams{St: bufPtr(c.sizes), N: nw, Ends: bufPtr(c.ends), Ng: ng}); err != nil {
			return err
		}
	}
	if err := k.q.ScanU32(s, c.ends.Ptr(), c.ends.Ptr(), c.part.Ptr(), int(ng)); err != nil {
		return err
	}
	return launch(k.fill, gridFor(int(ng), queryThreads), s, &WAHFillParams{Words: bufPtr(c.words), N: nw, WI: bufPtr(c.ends), Ng: ng,
		Out: bufPtr(c.Mat)})
}

func syncStream(c *cuda.Context, s *cuda.Stream) error {
	if s == nil {
		return c.Synchronize()
	}
	return s.Synchronize()
}

// Check waits for s and returns an error wrapping wah.ErrCorrupt when the
// last Decompress found an invalid bitmap.
func (c *WAHColumns) Check(s *cuda.Stream) error {
	if err := syncStream(c.ctx, s); err != nil {
		return err
	}
	var e [1]uint32
	if err := cuda.CopyFromDevice(e[:], c.errb, 0); err != nil {
		return err
	}
	if e[0] != 0 {
		return fmt.Errorf("cuda: WAH decompression: %w: %d invalid words or bitmaps", wah.ErrCorrupt, e[0])
	}
	return nil
}

// ReadColumn copies column i (its group bitset) to the host.
func (c *WAHColumns) ReadColumn(i int) ([]uint32, error) {
	out := make([]uint32, c.D)
	return out, cuda.CopyFromDevice(out, c.Mat, 4*i*c.D)
}

// WAHPlan is a batch of queries over a WAHColumns with the device buffers
// of their reductions and outputs, sized once (the launches allocate
// nothing).
type WAHPlan struct {
	c              *WAHColumns
	NQ, MaxM       int
	bound          int // capacity of docs: the sum of the queries' column counts
	sel, qoff, ebs *cuda.Buffer
	res, extra     *cuda.Buffer // results (NQ*D groups) and intermediate columns
	cnt, part, dq  *cuda.Buffer
	docs, bits     *cuda.Buffer
	hk             int // k of the last hybrid round 1 (for tests)
}

// NewPlan prepares the reductions of queries, each a non-empty list of at
// most WAHMaxColumns column numbers of c (at most 65535 queries) whose
// candidate bounds (Bound) sum to at most WAHMaxCandidates: split larger
// batches with SplitWAHQueries.
func (c *WAHColumns) NewPlan(queries [][]uint32) (*WAHPlan, error) {
	if len(queries) == 0 || len(queries) > 65535 {
		return nil, fmt.Errorf("cuda: WAH plan of %d queries (want 1..65535)", len(queries))
	}
	p := &WAHPlan{c: c, NQ: len(queries)}
	var sel []uint32
	qoff := []uint32{0}
	ebase := make([]uint32, len(queries))
	extra := 0
	for i, q := range queries {
		if len(q) == 0 || len(q) > WAHMaxColumns {
			return nil, fmt.Errorf("cuda: WAH query %d has %d columns (want 1..%d)", i, len(q), WAHMaxColumns)
		}
		for _, col := range q {
			if int(col) >= c.NCols {
				return nil, fmt.Errorf("cuda: WAH query %d: column %d of %d", i, col, c.NCols)
			}
		}
		p.bound += c.Bound(q)
		p.MaxM = max(p.MaxM, len(q))
		sel = append(sel, q...)
		qoff = append(qoff, uint32(len(sel)))
		ebase[i] = uint32(extra)
		extra += (len(q)+1)/2 - 1
	}
	if p.bound > WAHMaxCandidates {
		return nil, fmt.Errorf("cuda: WAH plan: up to %d candidates, more than %d: split the batch (SplitWAHQueries)", p.bound, WAHMaxCandidates)
	}
	nr := len(queries) * c.D
	if nr > math.MaxInt32 {
		return nil, fmt.Errorf("cuda: WAH plan: %d result groups, more than 2^31-1: split the batch", nr)
	}
	ctx := c.ctx
	var err error
	alloc := func(dst **cuda.Buffer, n int) {
		if err == nil {
			*dst, err = allocU32(ctx, n)
		}
	}
	alloc(&p.sel, len(sel))
	alloc(&p.qoff, len(qoff))
	alloc(&p.ebs, len(ebase))
	alloc(&p.res, nr)
	alloc(&p.extra, extra*c.D)
	alloc(&p.cnt, nr+1)
	alloc(&p.part, ScanParts(nr)+1)
	alloc(&p.dq, len(queries)+1)
	alloc(&p.docs, p.bound)
	alloc(&p.bits, len(queries)*int((uint64(c.N)+31)/32))
	for _, cp := range []struct {
		b *cuda.Buffer
		v []uint32
	}{{p.sel, sel}, {p.qoff, qoff}, {p.ebs, ebase}} {
		if err == nil {
			err = cuda.CopyToDevice(cp.b, 0, cp.v)
		}
	}
	if err != nil {
		p.Free()
		return nil, err
	}
	return p, nil
}

// Free releases the plan's device memory.
func (p *WAHPlan) Free() {
	freeAll(p.sel, p.qoff, p.ebs, p.res, p.extra, p.cnt, p.part, p.dq, p.docs, p.bits)
	*p = WAHPlan{}
}

func pow2ceil(x int) int {
	if x <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(x-1))
}

// Reduce enqueues op over each query's columns with pattern pat into the
// results (Result). hk is the hybrid pattern's k (column pairs per tile,
// a power of two 1..1024; 0: 4); the other patterns ignore it.
func (p *WAHPlan) Reduce(s *cuda.Stream, pat WAHPattern, op wah.Op, hk int) error {
	c, k := p.c, p.c.k
	D := count32("WAH groups", c.D)
	if D == 0 {
		return nil
	}
	o := uint32(op)
	nq := uint32(p.NQ)
	switch pat {
	case WAHCOA:
		levels := max(1, bits.Len(uint(p.MaxM-1)))
		for l := 0; l < levels; l++ {
			m := p.MaxM
			for i := 0; i < l; i++ {
				m = (m + 1) / 2
			}
			g := gridFor(c.D, queryThreads)
			g.Y, g.Z = uint32((m+1)/2), nq
			if err := launch(k.coa, g, s, &WAHCoaParams{Op: o, Level: uint32(l), Mat: bufPtr(c.Mat), Sel: bufPtr(p.sel),
				QOff: bufPtr(p.qoff), Res: bufPtr(p.res), Extra: bufPtr(p.extra), EBase: bufPtr(p.ebs), D: D}); err != nil {
				return err
			}
		}
		return nil
	case WAHROA:
		kk := pow2ceil((p.MaxM + 1) / 2)
		return p.tile(s, o, 0, 0, 1, kk)
	case WAHIdealHybrid:
		kk := pow2ceil((p.MaxM + 1) / 2)
		return p.tile(s, o, 0, 0, wahTile/kk, kk)
	case WAHHybrid:
		if hk == 0 {
			hk = 4
		}
		if hk < 1 || hk > wahTile || hk&(hk-1) != 0 {
			panic(fmt.Sprintf("BUG: cuda: WAH hybrid k = %d, want a power of two 1..%d", hk, wahTile))
		}
		p.hk = hk
		if err := p.tile(s, o, 0, 0, wahTile/hk, hk); err != nil {
			return err
		}
		tiles := (p.MaxM + 2*hk - 1) / (2 * hk)
		if tiles <= 1 {
			return nil
		}
		k2 := pow2ceil((tiles + 1) / 2)
		return p.tile(s, o, 1, uint32(hk), wahTile/k2, k2)
	}
	panic(fmt.Sprintf("BUG: cuda: WAH pattern %d", pat))
}

// tile launches qp_wah_tile with blocks of j rows x k column pairs.
func (p *WAHPlan) tile(s *cuda.Stream, op, rnd, k1 uint32, j, k int) error {
	c := p.c
	m := p.MaxM
	if rnd == 1 {
		m = (m + 2*int(k1) - 1) / (2 * int(k1))
	}
	g := cuda.Dim3{X: uint32((c.D + j - 1) / j), Y: uint32((m + 2*k - 1) / (2 * k)), Z: uint32(p.NQ)}
	return cuda.LaunchFields(c.k.tile, g, cuda.Dim3{X: uint32(j), Y: uint32(k), Z: 1}, 0, s, &WAHTileParams{Op: op, Rnd: rnd,
		K1: k1, Mat: bufPtr(c.Mat), Sel: bufPtr(p.sel), QOff: bufPtr(p.qoff), Res: bufPtr(p.res), Extra: bufPtr(p.extra),
		EBase: bufPtr(p.ebs), D: uint32(c.D)})
}

// Result is the buffer of the results of the last Reduce: query q's group
// bitset (D groups) at byte 4*q*D.
func (p *WAHPlan) Result() *cuda.Buffer { return p.res }

// Candidates enqueues the compaction of the results into ascending docIDs
// (Docs) with per-query offsets (DocOffsets): popcount per group, the CUB
// scan of query_scan.cu, emission.
func (p *WAHPlan) Candidates(s *cuda.Stream) error {
	k := p.c.k
	nr := p.NQ * p.c.D
	if nr == 0 {
		return s.Fill32(p.dq, 0, 0, p.NQ+1)
	}
	n := count32("WAH result groups", nr)
	if err := launch(k.popc, gridFor(nr, queryThreads), s, &WAHPopcParams{Res: bufPtr(p.res), N: n, Cnt: bufPtr(p.cnt)}); err != nil {
		return err
	}
	if err := k.q.ScanU32(s, p.cnt.Ptr(), p.cnt.Ptr(), p.part.Ptr(), nr); err != nil {
		return err
	}
	return launch(k.emit, gridFor(nr, queryThreads), s, &WAHEmitParams{Res: bufPtr(p.res), N: n, D: uint32(p.c.D),
		Pos: bufPtr(p.cnt), Docs: bufPtr(p.docs), Cap: count32("WAH candidate bound", p.bound), DQ: bufPtr(p.dq)})
}

// Docs holds the docIDs written by Candidates: query q's at
// [DocOffsets[q], DocOffsets[q+1]) (uint32 each). Its capacity is the sum
// over the queries of min(N, their columns' set rows), which bounds OR
// and AND.
func (p *WAHPlan) Docs() *cuda.Buffer { return p.docs }

// DocOffsets holds NQ+1 uint32 offsets into Docs.
func (p *WAHPlan) DocOffsets() *cuda.Buffer { return p.dq }

// Bitset enqueues repacking the results into plain bitsets (Bits): query
// q's ceil(N/32) uint32 words, row r = bit r%32 of word r/32.
func (p *WAHPlan) Bitset(s *cuda.Stream) error {
	W := int((uint64(p.c.N) + 31) / 32)
	if W == 0 {
		return nil
	}
	count32("WAH bitset words", p.NQ*W)
	return launch(p.c.k.bitset, gridFor(p.NQ*W, queryThreads), s, &WAHBitsetParams{Res: bufPtr(p.res), NQ: uint32(p.NQ),
		D: uint32(p.c.D), NBits: p.c.N, Out: bufPtr(p.bits)})
}

// Bits holds the bitsets written by Bitset.
func (p *WAHPlan) Bits() *cuda.Buffer { return p.bits }

// ReadDocs waits for s and copies every query's candidate docIDs to the
// host.
func (p *WAHPlan) ReadDocs(s *cuda.Stream) ([][]uint32, error) {
	if err := syncStream(p.c.ctx, s); err != nil {
		return nil, err
	}
	dq := make([]uint32, p.NQ+1)
	if err := cuda.CopyFromDevice(dq, p.dq, 0); err != nil {
		return nil, err
	}
	if int(dq[p.NQ]) > p.bound {
		return nil, fmt.Errorf("BUG: cuda: WAH candidates %d > bound %d", dq[p.NQ], p.bound)
	}
	all := make([]uint32, dq[p.NQ])
	if err := cuda.CopyFromDevice(all, p.docs, 0); err != nil {
		return nil, err
	}
	out := make([][]uint32, p.NQ)
	for q := range out {
		out[q] = all[dq[q]:dq[q+1]:dq[q+1]]
	}
	return out, nil
}

// WAHFilter is the candidate filter a GPU engine can put in front of
// OR-heavy queries: given the device-resident WAH bitmaps of the queries'
// terms (cols, decompressed by Decompress) it produces, without leaving the
// device, either each query's candidate docIDs (the OR of its terms:
// Docs/DocOffsets of the returned plan) or its AND filter bitset (Bits).
// It uses the ideal-hybrid pattern: the fewest global reads and writes
// (m D and D per query, as ROA) with coalesced accesses and one launch
// (paper, "Ideal hybrid"); `qp bench wah` measures it against the others
// (docs/WAH.md). The caller frees the plan.
func WAHFilter(s *cuda.Stream, cols *WAHColumns, queries [][]uint32, op wah.Op) (*WAHPlan, error) {
	p, err := cols.NewPlan(queries)
	if err != nil {
		return nil, err
	}
	err = p.Reduce(s, WAHIdealHybrid, op, 0)
	if err == nil {
		if op == wah.OpOr {
			err = p.Candidates(s)
		} else {
			err = p.Bitset(s)
		}
	}
	if err != nil {
		p.Free()
		return nil, err
	}
	return p, nil
}
