package main

import (
	"fmt"
	"github.com/qpengine/qp/report"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/qpengine/qp/bitmap/wah"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/intersect"
)

func init() {
	registerBench("wah", "INDEX [QUERIES]", `WAH bitmaps of the query terms' lists on the GPU:
decompression words/s, OR/AND time of the COA, ROA,
hybrid and ideal-hybrid reductions vs the CPU list path
(decode + merge), and the density crossover; CSV + SVG`, benchWAH)
}

// wahQuery is one query as term indexes into the bench's term table.
type wahQuery struct {
	cols []uint32
	dens float64 // mean document frequency of its terms / N
}

// benchWAH encodes the lists of the query log's terms (or of the most
// frequent terms, paired into queries) as WAH bitmaps and measures the
// list path on the CPU, the compressed-domain WAH reduction on the CPU and,
// when a GPU is usable, the GPU decompression and reduction patterns.
func benchWAH(c command, args []string) error {
	c.name = "bench wah"
	c.args = "INDEX [QUERIES] [flags]"
	fs := newFlags(c, `Encodes the posting lists of the query terms (QUERIES: a query log; without
it, the --terms most frequent terms, in random queries of 2..6 terms) as WAH
bitmaps (32-bit words, bitmap/wah) and measures, per query batch:
  cpu-list   decode the lists and merge (OR: union, AND: SvS), one core
  cpu-wah    OR/AND on the compressed words (bitmap/wah), one core
  gpu        Algorithm 2 decompression of every term's bitmap (words/s), and
             each reduction pattern (COA, ROA, hybrid, ideal hybrid) for OR
             and AND, plus the candidate docIDs of OR (compaction with a scan)
Queries are bucketed by their terms' mean density (df/N) to find where the
bitmaps on the GPU beat the list path. GPU results are checked equal to the
CPU's. Without a usable GPU only the CPU part runs.`)
	qf := addQueryFlags(fs)
	limit := fs.Int("limit", 1000, "queries to use (at most 65535)")
	nterms := fs.Int("terms", 200, "without QUERIES: the most frequent terms to use")
	csvPath := fs.String("csv", "wah.csv", "CSV output (per density bucket)")
	svgPath := fs.String("svg", "wah.svg", "SVG plot output")
	reps := fs.Int("reps", 5, "GPU repetitions per measurement (the best is kept)")
	maxCand := fs.Int("max-candidates", cuda.WAHMaxCandidates, "most candidate docIDs (sum of the queries' bounds) per GPU plan; larger batches are split, a query above it runs alone")
	roaN := fs.Int("roa-queries", 250, "ROA (one CTA per row, the slowest pattern) is timed on the first this many queries only (0: all)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 || *limit < 1 || *limit > 65535 || *maxCand < 1 || *maxCand > cuda.WAHMaxCandidates || *roaN < 0 {
		fs.Usage()
		return errUsage
	}
	*qf.device = "cpu"
	e, _, _, err := qf.openEngine(pos[0])
	if err != nil {
		return err
	}
	x, an := e.Index(), e.Analyzer()
	N := uint32(x.NumDocs())
	// Terms and queries.
	termIdx := map[int]uint32{}
	var terms []int
	col := func(t int) uint32 {
		if i, ok := termIdx[t]; ok {
			return i
		}
		termIdx[t] = uint32(len(terms))
		terms = append(terms, t)
		return termIdx[t]
	}
	var queries []wahQuery
	if len(pos) == 2 {
		fq, err := readQueryFile(pos[1], 0)
		if err != nil {
			return err
		}
		for _, q := range fq {
			if len(queries) == *limit {
				break
			}
			var cols []uint32
			seen := map[int]bool{}
			for _, tok := range an.Tokens(q.Text) {
				if t, ok := x.Lookup(tok); ok && !seen[t] {
					seen[t] = true
					cols = append(cols, col(t))
				}
			}
			if len(cols) > 0 && len(cols) <= cuda.WAHMaxColumns {
				queries = append(queries, wahQuery{cols: cols})
			}
		}
	} else {
		ts := make([]int, x.NumTerms())
		for i := range ts {
			ts[i] = i
		}
		sort.SliceStable(ts, func(a, b int) bool { return x.Record(ts[a]).DF > x.Record(ts[b]).DF })
		ts = ts[:min(len(ts), *nterms)]
		seed := uint64(1)
		for len(queries) < *limit && len(ts) > 0 {
			seed = seed*6364136223846793005 + 1442695040888963407
			m := 2 + int(seed>>33)%5
			var cols []uint32
			for j := 0; j < m; j++ {
				seed = seed*6364136223846793005 + 1442695040888963407
				cols = append(cols, col(ts[int(seed>>33)%len(ts)]))
			}
			slices.Sort(cols)
			queries = append(queries, wahQuery{cols: slices.Compact(cols)})
		}
	}
	if len(queries) == 0 {
		return fmt.Errorf("bench wah: no query has a term of the index")
	}
	// Lists and bitmaps.
	lists := make([][]uint32, len(terms))
	bms := make([]wah.Bitmap, len(terms))
	var postings, words int
	for i, t := range terms {
		l, err := x.List(t)
		if err != nil {
			return err
		}
		if lists[i], _, err = l.Decode(nil, nil); err != nil {
			return err
		}
		if bms[i], err = wah.Encode(nil, lists[i], N); err != nil {
			return err
		}
		postings += len(lists[i])
		words += len(bms[i].Words)
	}
	for i := range queries {
		s := 0.0
		for _, c := range queries[i].cols {
			s += float64(len(lists[c]))
		}
		queries[i].dens = s / float64(len(queries[i].cols)) / float64(N)
	}
	D := wah.Groups(N)
	fmt.Printf("index %s: %d docs; %d queries, %d distinct terms, %d postings\n", pos[0], N, len(queries), len(terms), postings)
	fmt.Printf("WAH: %d words (%.2f bits/posting; uncompressed %d words per bitmap)\n\n", words,
		32*float64(words)/float64(max(postings, 1)), D)

	// Density buckets: powers of ten of the queries' mean term density.
	type bucket struct {
		lo      float64
		qs      []int
		cpuList [2]time.Duration // OR, AND for the bucket's queries
		cpuWAH  [2]time.Duration
		gpu     [2]time.Duration // ideal hybrid reduce (+ candidates for OR), decompressed resident
		gpuAll  [2]time.Duration // + decompression of the bucket's terms
		ok      bool
	}
	var buckets []*bucket
	byLo := map[float64]*bucket{}
	for i, q := range queries {
		lo := math.Pow(10, math.Floor(math.Log10(max(q.dens, 1e-9))))
		b := byLo[lo]
		if b == nil {
			b = &bucket{lo: lo}
			byLo[lo] = b
			buckets = append(buckets, b)
		}
		b.qs = append(b.qs, i)
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].lo < buckets[j].lo })

	// CPU: the list path (lists decoded from the index each time) and WAH.
	t0 := time.Now()
	ops := []wah.Op{wah.OpOr, wah.OpAnd}
	listRef := make([][2][]uint32, len(queries))
	var tmp []uint32
	for _, b := range buckets {
		for oi, op := range ops {
			start := time.Now()
			for _, qi := range b.qs {
				ls := make([][]uint32, 0, len(queries[qi].cols))
				for _, c := range queries[qi].cols {
					l, err := x.List(terms[c])
					if err != nil {
						return err
					}
					d, _, err := l.Decode(nil, nil)
					if err != nil {
						return err
					}
					ls = append(ls, d)
				}
				var r []uint32
				if op == wah.OpOr {
					r = unionAll(ls)
				} else {
					r = intersect.SvS(tmp, ls)
					r = append([]uint32(nil), r...)
				}
				listRef[qi][oi] = r
			}
			b.cpuList[oi] = time.Since(start)
			start = time.Now()
			for _, qi := range b.qs {
				in := make([]wah.Bitmap, len(queries[qi].cols))
				for j, c := range queries[qi].cols {
					in[j] = bms[c]
				}
				r, err := wah.Reduce(op, in...)
				if err != nil {
					return err
				}
				if qi == b.qs[0] { // spot check against the list path
					d, err := r.DecodeDocs(nil)
					if err != nil {
						return err
					}
					if !slices.Equal(d, listRef[qi][oi]) && len(d)+len(listRef[qi][oi]) > 0 {
						return fmt.Errorf("bench wah: CPU WAH %v of query %d differs from the list path", op, qi)
					}
				}
			}
			b.cpuWAH[oi] = time.Since(start)
		}
	}
	perQ := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(max(n, 1)) }

	tCPU := time.Since(t0)
	fmt.Fprintf(os.Stderr, "bench wah: CPU list + WAH paths done in %.1f s\n", tCPU.Seconds())
	gpuOK, why := cuda.Available()
	var g wahGPUResult
	var tPat, tBuckets time.Duration
	if gpuOK {
		t0 = time.Now()
		g = wahGPUResult{reps: *reps, maxCand: *maxCand, roaN: *roaN}
		if err := benchWAHGPU(bms, queries, listRef, &g); err != nil {
			return err
		}
		tPat = time.Since(t0)
		fmt.Fprintf(os.Stderr, "bench wah: GPU patterns done in %.1f s\n", tPat.Seconds())
		t0 = time.Now()
		for _, b := range buckets {
			if err := benchWAHBucket(bms, queries, b.qs, listRef, &g, &b.gpu, &b.gpuAll); err != nil {
				return err
			}
			b.ok = true
		}
		tBuckets = time.Since(t0)
	} else {
		fmt.Printf("GPU: absent (%s); CPU part only\n\n", why)
	}
	pat, decomp := g.pat, g.decomp
	gpuN := func(qs []int) int { // queries run on the GPU
		n := len(qs)
		for _, qi := range qs {
			if g.skip[qi] {
				n--
			}
		}
		return n
	}
	if gpuOK {
		fmt.Printf("GPU decompression (Algorithm 2, %d bitmaps, one batch): %.3f ms, %.2f G compressed words/s, %.2f G groups/s\n",
			len(bms), ms(decomp), float64(words)/decomp.Seconds()/1e9, float64(len(bms)*D)/decomp.Seconds()/1e9)
		nRun := len(queries) - len(g.skipped)
		fmt.Printf("\nGPU reductions of %d queries in %d plans of at most %d candidates (decompressed bitmaps resident; OR includes candidate docIDs; times summed over the plans):\n",
			nRun, g.plans, *maxCand)
		fmt.Printf("%-14s %8s %12s %12s %14s %14s\n", "pattern", "queries", "OR ms", "AND ms", "OR us/query", "AND us/query")
		for i, p := range cuda.WAHPatterns {
			n := nRun
			if p == cuda.WAHROA {
				n = g.nROA
			}
			fmt.Printf("%-14s %8d %12.3f %12.3f %14.2f %14.2f\n", p, n, ms(pat[i][0]), ms(pat[i][1]),
				perQ(pat[i][0], n), perQ(pat[i][1], n))
		}
		if g.nROA < nRun {
			fmt.Printf("roa: timed on the first %d queries only (--roa-queries; one CTA per row is the slowest pattern): compare its us/query, not its ms\n", g.nROA)
		}
		if g.alone > 0 {
			fmt.Printf("%d queries have a candidate bound above --max-candidates %d and ran in plans of their own\n", g.alone, *maxCand)
		}
		if len(g.skipped) > 0 {
			fmt.Printf("%d queries skipped on the GPU (candidate bound above %d, the most one plan holds): %v\n", len(g.skipped), cuda.WAHMaxCandidates, g.skipped)
		}
		fmt.Println()
	}
	fmt.Printf("Per density bucket (mean df/N of the query's terms), us/query; gpu = ideal hybrid, gpu+dec adds decompression of the bucket's bitmaps:\n")
	fmt.Printf("%-10s %7s %10s %10s %10s %10s %10s %10s %10s %10s  %s\n", "density", "queries", "list OR", "wah OR", "gpu OR",
		"gpu+dec OR", "list AND", "wah AND", "gpu AND", "gpu+dec AND", "winner OR")
	var csvRows [][]string
	for _, b := range buckets {
		n, gn := len(b.qs), gpuN(b.qs)
		v := []float64{perQ(b.cpuList[0], n), perQ(b.cpuWAH[0], n), perQ(b.gpu[0], gn), perQ(b.gpuAll[0], gn),
			perQ(b.cpuList[1], n), perQ(b.cpuWAH[1], n), perQ(b.gpu[1], gn), perQ(b.gpuAll[1], gn)}
		b.ok = b.ok && gn > 0
		win := "cpu list"
		if b.ok && v[3] < v[0] {
			win = "gpu bitmaps (incl. decompression)"
		} else if b.ok && v[2] < v[0] {
			win = "gpu bitmaps (resident)"
		}
		if !b.ok {
			win = "-"
		}
		fmt.Printf("%-10.0e %7d %10.1f %10.1f %10s %10s %10.1f %10.1f %10s %10s  %s\n", b.lo, n, v[0], v[1], gpuCell(b.ok, v[2]),
			gpuCell(b.ok, v[3]), v[4], v[5], gpuCell(b.ok, v[6]), gpuCell(b.ok, v[7]), win)
		row := []string{fmt.Sprintf("%g", b.lo), strconv.Itoa(n)}
		for i, f := range v {
			if !b.ok && (i == 2 || i == 3 || i == 6 || i == 7) {
				row = append(row, "")
				continue
			}
			row = append(row, fmt.Sprintf("%.3f", f))
		}
		csvRows = append(csvRows, row)
	}
	if err := report.WriteCSVFile(*csvPath, wahCSVHeader, csvRows); err != nil {
		return err
	}
	plot := report.Plot{Title: "qp bench wah: OR time per query by term density", XLabel: "mean df/N of the query terms (bucket start)",
		YLabel: "us per query", LogX: true, LogY: true}
	names := []string{"CPU list OR", "CPU WAH OR", "GPU OR (resident)", "GPU OR (+decompress)"}
	for si := range names {
		if si >= 2 && !gpuOK {
			break
		}
		s := report.Series{Name: names[si]}
		for _, b := range buckets {
			n := len(b.qs)
			if si >= 2 {
				n = gpuN(b.qs)
			}
			t := []time.Duration{b.cpuList[0], b.cpuWAH[0], b.gpu[0], b.gpuAll[0]}[si]
			s.X = append(s.X, b.lo)
			s.Y = append(s.Y, max(perQ(t, n), 0.01))
		}
		plot.Series = append(plot.Series, s)
	}
	svg, err := plot.SVG()
	if err != nil {
		return err
	}
	if err := os.WriteFile(*svgPath, svg, 0o644); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s and %s\n", *csvPath, *svgPath)
	fmt.Printf("bench time: cpu %.1f s, gpu patterns %.1f s, gpu buckets %.1f s\n", tCPU.Seconds(), tPat.Seconds(), tBuckets.Seconds())
	return nil
}

func gpuCell(ok bool, v float64) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

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
	k   *cuda.WAHKernels
}

func wahOpen() (*cuda.Context, *cuda.WAHKernels, error) {
	if wahGPU.ctx == nil {
		ctx, err := cuda.Open(0)
		if err != nil {
			return nil, nil, err
		}
		k, err := cuda.LoadWAHKernels(ctx)
		if err != nil {
			return nil, nil, err
		}
		wahGPU.ctx, wahGPU.k = ctx, k
	}
	return wahGPU.ctx, wahGPU.k, nil
}

// checkWAH compares a plan's candidates with the list path's results.
func checkWAH(p *cuda.WAHPlan, qs []int, ref [][2][]uint32, oi int, what string) error {
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

// wahGPUResult holds the settings and results of the GPU part.
type wahGPUResult struct {
	reps, maxCand, roaN int
	decomp              time.Duration
	pat                 [4][2]time.Duration // per pattern, OR and AND, summed over the plans
	plans               int                 // plans of all queries (the patterns other than ROA)
	nROA                int                 // queries ROA was timed on
	alone               int                 // queries above maxCand, in plans of their own
	skipped             []int               // queries above cuda.WAHMaxCandidates: not run on the GPU
	skip                map[int]bool
}

// wahSplit splits the query indexes qs into plan batches of at most
// maxCand candidates each (cuda.SplitWAHQueries; a query above maxCand is
// a batch of its own). It returns the batches (indexes into queries), the
// queries too large for any plan, and how many ran alone over maxCand.
func wahSplit(bms []wah.Bitmap, queries []wahQuery, qs []int, N uint32, maxCand int) (batches [][]int, skipped []int, alone int) {
	bounds := make([]int, len(qs))
	for i, qi := range qs {
		b := 0
		for _, c := range queries[qi].cols {
			b += bms[c].Count()
		}
		bounds[i] = min(b, int(N)) // = cuda.WAHColumns.Bound
		if bounds[i] > maxCand && bounds[i] <= cuda.WAHMaxCandidates {
			alone++
		}
	}
	bs, sk := cuda.SplitWAHQueries(bounds, wah.Groups(N), maxCand, 0)
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

// wahPlan makes the plan of a batch of queries over cols, mapping their
// columns through local (nil: identity).
func wahPlan(cols *cuda.WAHColumns, queries []wahQuery, batch []int, local map[uint32]uint32) (*cuda.WAHPlan, error) {
	qcols := make([][]uint32, len(batch))
	for i, qi := range batch {
		if local == nil {
			qcols[i] = queries[qi].cols
			continue
		}
		for _, c := range queries[qi].cols {
			qcols[i] = append(qcols[i], local[c])
		}
	}
	return cols.NewPlan(qcols)
}

// benchWAHGPU times the batch decompression of every bitmap and each
// pattern over all queries (ROA over the first g.roaN), split into plans of
// at most g.maxCand candidates, checking every pattern's OR and AND
// results.
func benchWAHGPU(bms []wah.Bitmap, queries []wahQuery, ref [][2][]uint32, g *wahGPUResult) error {
	ctx, k, err := wahOpen()
	if err != nil {
		return err
	}
	cols, err := k.Upload(bms)
	if err != nil {
		return err
	}
	defer cols.Free()
	if g.decomp, err = gpuTime(ctx, g.reps, func() error { return cols.Decompress(nil) }); err != nil {
		return err
	}
	if err := cols.Check(nil); err != nil {
		return err
	}
	all := make([]int, len(queries))
	for i := range all {
		all[i] = i
	}
	batches, skipped, alone := wahSplit(bms, queries, all, cols.N, g.maxCand)
	g.plans, g.skipped, g.alone = len(batches), skipped, alone
	g.skip = map[int]bool{}
	for _, qi := range skipped {
		g.skip[qi] = true
	}
	roa := all
	if g.roaN > 0 && g.roaN < len(all) {
		roa = all[:g.roaN]
	}
	roaBatches, _, _ := wahSplit(bms, queries, roa, cols.N, g.maxCand)
	for _, b := range roaBatches {
		g.nROA += len(b)
	}
	run := func(batches [][]int, pats []cuda.WAHPattern) error {
		for _, batch := range batches {
			p, err := wahPlan(cols, queries, batch, nil)
			if err != nil {
				return err
			}
			for _, pt := range pats {
				for oi, op := range []wah.Op{wah.OpOr, wah.OpAnd} {
					t, err := gpuTime(ctx, g.reps, func() error {
						if err := p.Reduce(nil, pt, op, 4); err != nil {
							return err
						}
						if op == wah.OpOr {
							return p.Candidates(nil)
						}
						return nil
					})
					if err == nil {
						g.pat[pt][oi] += t
						err = p.Candidates(nil)
					}
					if err == nil {
						err = checkWAH(p, batch, ref, oi, fmt.Sprintf("%v %v", pt, op))
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
	if err := run(batches, []cuda.WAHPattern{cuda.WAHCOA, cuda.WAHHybrid, cuda.WAHIdealHybrid}); err != nil {
		return err
	}
	return run(roaBatches, []cuda.WAHPattern{cuda.WAHROA})
}

// benchWAHBucket times one density bucket's queries on the GPU with the
// ideal hybrid: reduce (+ candidates for OR, + the filter bitset for AND)
// with the bucket's bitmaps decompressed (res, summed over the bucket's
// plans), and that plus one decompression of the bucket's bitmaps (all).
// Queries in g.skip are left out of both.
func benchWAHBucket(bms []wah.Bitmap, queries []wahQuery, qs []int, ref [][2][]uint32, g *wahGPUResult, res, all *[2]time.Duration) error {
	ctx, k, err := wahOpen()
	if err != nil {
		return err
	}
	local := map[uint32]uint32{}
	var sub []wah.Bitmap
	var run []int
	for _, qi := range qs {
		if g.skip[qi] {
			continue
		}
		run = append(run, qi)
		for _, c := range queries[qi].cols {
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
	dec, err := gpuTime(ctx, g.reps, func() error { return cols.Decompress(nil) })
	if err != nil {
		return err
	}
	if err := cols.Check(nil); err != nil {
		return err
	}
	batches, _, _ := wahSplit(bms, queries, run, cols.N, g.maxCand)
	for _, batch := range batches {
		p, err := wahPlan(cols, queries, batch, local)
		if err != nil {
			return err
		}
		for oi, op := range []wah.Op{wah.OpOr, wah.OpAnd} {
			t, err := gpuTime(ctx, g.reps, func() error {
				if err := p.Reduce(nil, cuda.WAHIdealHybrid, op, 0); err != nil {
					return err
				}
				if op == wah.OpOr {
					return p.Candidates(nil)
				}
				return p.Bitset(nil)
			})
			if err == nil {
				res[oi] += t
				err = p.Candidates(nil)
			}
			if err == nil {
				err = checkWAH(p, batch, ref, oi, "ideal-hybrid "+op.String())
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

// wahCSVHeader is the header of bench wah's CSV (one row per density bucket).
var wahCSVHeader = []string{"density_lo", "queries", "cpu_list_or_us", "cpu_wah_or_us", "gpu_or_us", "gpu_dec_or_us",
	"cpu_list_and_us", "cpu_wah_and_us", "gpu_and_us", "gpu_dec_and_us"}
