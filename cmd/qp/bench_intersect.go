package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/intersect"
)

func init() {
	registerBench("intersect", "INDEX QUERIES", `list intersection only (docIDs, no scoring): CPU merge,
galloping, binsearch, PMF, LR, HS and GPU PARA batches
(binsearch, PMF1-4, LR, HS, LRC-family direct search) per
batch threshold c; queries/s, ns per shortest-list element`, benchIntersect)
}

// isectRow is one line of the table.
type isectRow struct {
	device, algo string
	c            int // PARA threshold (0: CPU)
	queries      int
	elems        int64 // shortest-list elements
	wall         time.Duration
}

// benchIntersect measures the intersection algorithms of package intersect
// (CPU) and cuda.IsectBatch (GPU, Ao et al. PVLDB'11 §4.1 PARA) on the
// decoded lists of a query log, and checks every result against the merge
// baseline.
func benchIntersect(c command, args []string) error {
	c.name = "bench intersect"
	c.args = "INDEX QUERIES [flags]"
	fs := newFlags(c, `Decodes the posting lists of each query's terms (AND semantics: queries
with an unknown term, or fewer than two distinct terms, are skipped) and
intersects them with every algorithm: on the CPU (one thread) merge,
galloping (SvS), binsearch, pmf1..4 (Ding et al. WWW'09 §7), lr and hs
(Ao et al. PVLDB'11 §4.3, §4.4); on the GPU in PARA batches closed when the
sum of shortest-list lengths reaches each threshold c (§4.1): binsearch,
pmf1..4, lr, hs, and search inside whole-list lrc, lrcseg, seglrc and hslrc
encodings (§5.3). Lists, LR models, HS tables and encodings are built once
and kept resident (not timed); a GPU batch's time includes uploading its
query descriptors, the kernels and copying the results back. Every
algorithm's results must equal merge's, or the command fails.`)
	device := fs.String("device", "auto", "cpu, gpu or auto (GPU rows when a GPU is usable)")
	thr := fs.String("thresholds", "65536,262144,1048576,4194304", "GPU PARA batch thresholds c (shortest-list elements)")
	limit := fs.Int("limit", 10000, "use the first N queries of the file (0: all)")
	div := fs.Int("hs-div", 16, "HS<div>: buckets of about div elements (16, 32, 256, ...)")
	csvPath := fs.String("csv", "", "also write the table as CSV to this file")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return errUsage
	}
	var cs []int
	for _, s := range splitComma(*thr) {
		v, err := parseCount(s)
		if err != nil || v < 1 {
			return fmt.Errorf("--thresholds: bad value %q", s)
		}
		cs = append(cs, v)
	}
	if *div < 1 {
		return fmt.Errorf("--hs-div %d: want >= 1", *div)
	}
	switch *device {
	case "cpu", "gpu", "auto":
	default:
		return fmt.Errorf("--device %q: want cpu, gpu or auto", *device)
	}
	x, err := index.Open(pos[0])
	if err != nil {
		return err
	}
	defer x.Close()
	an, err := x.Analyzer()
	if err != nil {
		return err
	}
	fq, err := readQueryFile(pos[1], *limit)
	if err != nil {
		return err
	}
	// Terms → list slots; queries as list indices.
	slot := map[int]int{}
	var terms []int
	var queries [][]int
	skipped := 0
	for _, q := range fq {
		var ids []int
		ok := true
		for _, tok := range an.Tokens(q.Text) {
			t, found := x.Lookup(tok)
			if !found {
				ok = false
				break
			}
			s, seen := slot[t]
			if !seen {
				s = len(terms)
				slot[t] = s
				terms = append(terms, t)
			}
			if !slices.Contains(ids, s) {
				ids = append(ids, s)
			}
		}
		if !ok || len(ids) < 2 {
			skipped++
			continue
		}
		queries = append(queries, ids)
	}
	if len(queries) == 0 {
		return fmt.Errorf("%s: no query has two or more distinct indexed terms", pos[1])
	}
	t0 := time.Now()
	lists := make([][]uint32, len(terms))
	var postings int64
	for i, t := range terms {
		l, err := x.List(t)
		if err != nil {
			return err
		}
		if lists[i], _, err = l.Decode(nil, nil); err != nil {
			return err
		}
		postings += int64(len(lists[i]))
	}
	lrs := make([]intersect.LR, len(lists))
	hss := make([]intersect.HS, len(lists))
	var contr float64
	for i, l := range lists {
		lrs[i] = intersect.NewLR(l)
		hss[i] = intersect.NewHS(l, *div)
		contr += lrs[i].Contraction() * float64(len(l))
	}
	var elems int64
	for _, q := range queries {
		m := len(lists[q[0]])
		for _, id := range q[1:] {
			m = min(m, len(lists[id]))
		}
		elems += int64(m)
	}
	fmt.Fprintf(os.Stderr, "qp: %d queries (%d skipped), %d distinct lists, %d postings, %d shortest-list elements; decoded and modelled in %v; LR contraction ratio %.4f (posting-weighted)\n",
		len(queries), skipped, len(lists), postings, elems, time.Since(t0).Round(time.Millisecond), contr/float64(max(postings, 1)))

	// The merge baseline.
	want := make([][]uint32, len(queries))
	qls := make([][]uint32, 0, 16)
	gather := func(q []int) [][]uint32 {
		qls = qls[:0]
		for _, id := range q {
			qls = append(qls, lists[id])
		}
		return qls
	}
	var rows []isectRow
	cpu := []struct {
		name string
		f    func(dst []uint32, q []int) []uint32
	}{
		{"merge", func(dst []uint32, q []int) []uint32 { return intersect.Merge(dst, gather(q)) }},
		{"galloping", func(dst []uint32, q []int) []uint32 { return intersect.SvS(dst, gather(q)) }},
		{"binsearch", func(dst []uint32, q []int) []uint32 { return intersect.BinarySearch(dst, gather(q)) }},
	}
	for lv := 1; lv <= intersect.PMFMaxLevels; lv++ {
		cpu = append(cpu, struct {
			name string
			f    func(dst []uint32, q []int) []uint32
		}{fmt.Sprintf("pmf%d", lv), func(dst []uint32, q []int) []uint32 { return intersect.PMF(dst, gather(q), lv) }})
	}
	var mbuf []intersect.LR
	var hbuf []intersect.HS
	cpu = append(cpu, struct {
		name string
		f    func(dst []uint32, q []int) []uint32
	}{"lr", func(dst []uint32, q []int) []uint32 {
		mbuf = mbuf[:0]
		for _, id := range q {
			mbuf = append(mbuf, lrs[id])
		}
		return intersect.LRSearch(dst, gather(q), mbuf)
	}}, struct {
		name string
		f    func(dst []uint32, q []int) []uint32
	}{fmt.Sprintf("hs%d", *div), func(dst []uint32, q []int) []uint32 {
		hbuf = hbuf[:0]
		for _, id := range q {
			hbuf = append(hbuf, hss[id])
		}
		return intersect.HSSearch(dst, gather(q), hbuf)
	}})
	var dst []uint32
	for ai, a := range cpu {
		start := time.Now()
		for qi, q := range queries {
			dst = a.f(dst, q)
			if ai == 0 {
				want[qi] = slices.Clone(dst)
			} else if !slices.Equal(dst, want[qi]) {
				return fmt.Errorf("BUG: bench intersect: CPU %s differs from merge on query %d (%d vs %d results)", a.name, qi, len(dst), len(want[qi]))
			}
		}
		rows = append(rows, isectRow{"cpu", a.name, 0, len(queries), elems, time.Since(start)})
	}

	if *device != "cpu" {
		gr, err := benchIntersectGPU(*device == "gpu", lists, lrs, hss, queries, want, cs, elems)
		if err != nil {
			return err
		}
		rows = append(rows, gr...)
	}
	fmt.Printf("%-5s %-10s %9s %8s %12s %12s\n", "dev", "algo", "c", "queries", "queries/s", "ns/elem")
	for _, r := range rows {
		cstr := "-"
		if r.c > 0 {
			cstr = strconv.Itoa(r.c)
		}
		fmt.Printf("%-5s %-10s %9s %8d %12.0f %12.3f\n", r.device, r.algo, cstr, r.queries,
			float64(r.queries)/r.wall.Seconds(), float64(r.wall.Nanoseconds())/float64(max(r.elems, 1)))
	}
	if *csvPath != "" {
		f, err := os.Create(*csvPath)
		if err != nil {
			return err
		}
		w := csv.NewWriter(f)
		_ = w.Write([]string{"device", "algo", "threshold", "queries", "elements", "seconds", "queries_per_s", "ns_per_elem"})
		for _, r := range rows {
			_ = w.Write([]string{r.device, r.algo, strconv.Itoa(r.c), strconv.Itoa(r.queries), strconv.FormatInt(r.elems, 10),
				strconv.FormatFloat(r.wall.Seconds(), 'f', 6, 64),
				strconv.FormatFloat(float64(r.queries)/r.wall.Seconds(), 'f', 1, 64),
				strconv.FormatFloat(float64(r.wall.Nanoseconds())/float64(max(r.elems, 1)), 'f', 3, 64)})
		}
		w.Flush()
		if err := w.Error(); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// benchIntersectGPU runs the GPU rows. Without a usable GPU it fails when
// required, else says why and returns no rows.
func benchIntersectGPU(required bool, lists [][]uint32, lrs []intersect.LR, hss []intersect.HS, queries [][]int,
	want [][]uint32, cs []int, elems int64) ([]isectRow, error) {
	ok, why := cuda.Available()
	var ctx *cuda.Context
	var k *cuda.IntersectKernels
	if ok {
		var err error
		if ctx, err = cuda.Open(0); err == nil {
			if k, err = cuda.LoadIntersectKernels(ctx); err != nil {
				ctx.Close()
			}
		}
		if err != nil {
			ok, why = false, err.Error()
		}
	}
	if !ok {
		if required {
			return nil, fmt.Errorf("--device gpu: %s", why)
		}
		fmt.Fprintf(os.Stderr, "qp: no GPU rows: %s\n", why)
		return nil, nil
	}
	defer ctx.Close()
	fmt.Fprintf(os.Stderr, "qp: using GPU %s\n", ctx.Device().Name)
	short := make([]int, len(queries))
	for qi, q := range queries {
		short[qi] = len(lists[q[0]])
		for _, id := range q[1:] {
			short[qi] = min(short[qi], len(lists[id]))
		}
	}
	type algo struct {
		a      cuda.IsectAlgo
		levels int
		name   string
	}
	groups := [][]algo{{{cuda.IsectBinary, 0, "binsearch"}, {cuda.IsectLR, 0, "lr"}, {cuda.IsectHS, 0, "hs"},
		{cuda.IsectPMF, 1, "pmf1"}, {cuda.IsectPMF, 2, "pmf2"}, {cuda.IsectPMF, 3, "pmf3"}, {cuda.IsectPMF, 4, "pmf4"}},
		{{cuda.IsectLRC, 0, "lrc"}}, {{cuda.IsectLRCSeg, 0, "lrcseg"}}, {{cuda.IsectSegLRC, 0, "seglrc"}}, {{cuda.IsectHSLRC, 0, "hslrc"}}}
	var rows []isectRow
	var res, off []uint32
	for _, g := range groups {
		in := make([]cuda.IsectList, len(lists))
		var encBytes int64
		cd := g[0].a.Codec()
		for i, l := range lists {
			in[i] = cuda.IsectList{Docs: l, LR: lrs[i], HS: hss[i]}
			if cd != nil {
				in[i].Enc = cd.AppendEncode(nil, l)
				encBytes += int64(len(in[i].Enc))
			}
		}
		if cd != nil {
			var n int64
			for _, l := range lists {
				n += int64(len(l))
			}
			fmt.Fprintf(os.Stderr, "qp: %s: %.2f bits per docID (whole lists)\n", cd.Name(), 8*float64(encBytes)/float64(max(n, 1)))
		}
		rl, err := k.UploadLists(in)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			// PARA: close a batch when the shortest lists sum to >= c.
			var batches [][][]int
			var cur [][]int
			sum := 0
			for qi, q := range queries {
				cur = append(cur, q)
				sum += short[qi]
				if sum >= c {
					batches = append(batches, cur)
					cur, sum = nil, 0
				}
			}
			if len(cur) > 0 {
				batches = append(batches, cur)
			}
			for _, a := range g {
				var wall time.Duration
				qi := 0
				for _, bq := range batches {
					start := time.Now()
					b, err := rl.Batch(bq)
					if err != nil {
						rl.Free()
						return nil, err
					}
					res, off, err = b.Run(a.a, a.levels, res, off)
					b.Free()
					wall += time.Since(start)
					if err != nil {
						rl.Free()
						return nil, err
					}
					for j := range bq {
						if got := res[off[j]:off[j+1]]; !slices.Equal(got, want[qi]) {
							rl.Free()
							return nil, fmt.Errorf("BUG: bench intersect: GPU %s (c=%d) differs from merge on query %d (%d vs %d results)",
								a.name, c, qi, len(got), len(want[qi]))
						}
						qi++
					}
				}
				rows = append(rows, isectRow{"gpu", a.name, c, len(queries), elems, wall})
			}
		}
		rl.Free()
	}
	return rows, nil
}
