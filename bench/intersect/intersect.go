// Package intersect is the experiment behind `qp bench intersect`: list
// intersection only (docIDs, no scoring) of a query log's AND queries, on
// the CPU (one thread: merge, galloping, binsearch, PMF1-4 of Ding et al.
// WWW'09 §7, LR and HS of Ao et al. PVLDB'11 §4.3-4.4) and on the GPU in
// PARA batches per threshold c (Ao et al. §4.1, kern.IsectBatch), every
// result checked against merge's.
//
// Stages: prepare (queries → list slots, lists decoded, LR models and HS
// tables built, not timed: Prepare), the CPU rows (cpuRows), the GPU rows
// (gpuRows: per encoding group, upload, then per threshold the PARA
// batches and per algorithm the timed runs).
package intersect

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/intersect"
)

// Config of the experiment.
type Config struct {
	Device     string // cpu, gpu or auto (GPU rows when a GPU is usable)
	Thresholds []int  // GPU PARA batch thresholds c (shortest-list elements)
	HSDiv      int    // HS buckets of about HSDiv elements (>= 1)
	// Notice, if set, receives progress lines (the CLI prints them on
	// stderr).
	Notice func(string)
}

// Row is one line of the table.
type Row struct {
	Device, Algo string
	C            int // PARA threshold (0: CPU)
	Queries      int
	Elems        int64 // shortest-list elements of the queries
	Wall         time.Duration
}

// QPS is queries per second.
func (r Row) QPS() float64 { return float64(r.Queries) / r.Wall.Seconds() }

// NsPerElem is the time per shortest-list element.
func (r Row) NsPerElem() float64 { return float64(r.Wall.Nanoseconds()) / float64(max(r.Elems, 1)) }

// Data is the prepared input: the distinct lists of the queries decoded,
// with their LR models and HS tables, and the queries as list indices.
type Data struct {
	Lists    [][]uint32
	LRs      []intersect.LR
	HSs      []intersect.HS
	Queries  [][]int
	Skipped  int   // queries with an unknown term or fewer than two distinct terms
	Postings int64 // of the lists
	Elems    int64 // shortest-list elements of the queries
	// Contraction is LR's contraction ratio, posting-weighted.
	Contraction float64
}

// Prepare maps each query's analyzed terms to list slots (AND semantics:
// a query with an unknown term, or fewer than two distinct terms, is
// skipped), decodes the lists and builds their LR models and HS tables.
func Prepare(x *index.Index, an *analysis.Analyzer, texts []string, hsDiv int) (*Data, error) {
	if hsDiv < 1 {
		return nil, fmt.Errorf("--hs-div %d: want >= 1", hsDiv)
	}
	d := &Data{}
	slot := map[int]int{}
	var terms []int
	for _, text := range texts {
		var ids []int
		ok := true
		for _, tok := range an.Tokens(text) {
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
			d.Skipped++
			continue
		}
		d.Queries = append(d.Queries, ids)
	}
	if len(d.Queries) == 0 {
		return nil, fmt.Errorf("no query has two or more distinct indexed terms")
	}
	d.Lists = make([][]uint32, len(terms))
	for i, t := range terms {
		l, err := x.List(t)
		if err != nil {
			return nil, err
		}
		if d.Lists[i], _, err = l.Decode(nil, nil); err != nil {
			return nil, err
		}
		d.Postings += int64(len(d.Lists[i]))
	}
	d.LRs = make([]intersect.LR, len(d.Lists))
	d.HSs = make([]intersect.HS, len(d.Lists))
	var contr float64
	for i, l := range d.Lists {
		d.LRs[i] = intersect.NewLR(l)
		d.HSs[i] = intersect.NewHS(l, hsDiv)
		contr += d.LRs[i].Contraction() * float64(len(l))
	}
	d.Contraction = contr / float64(max(d.Postings, 1))
	for _, q := range d.Queries {
		d.Elems += int64(d.shortest(q))
	}
	return d, nil
}

// shortest is the length of a query's shortest list.
func (d *Data) shortest(q []int) int {
	m := len(d.Lists[q[0]])
	for _, id := range q[1:] {
		m = min(m, len(d.Lists[id]))
	}
	return m
}

// Run measures the CPU rows, then (Config.Device gpu or auto) the GPU rows.
func Run(d *Data, cfg Config) ([]Row, error) {
	switch cfg.Device {
	case "cpu", "gpu", "auto":
	default:
		return nil, fmt.Errorf("--device %q: want cpu, gpu or auto", cfg.Device)
	}
	rows, want, err := cpuRows(d, cfg.HSDiv)
	if err != nil || cfg.Device == "cpu" {
		return rows, err
	}
	g, err := gpuRows(d, cfg, want)
	return append(rows, g...), err
}

// cpuAlgo is a CPU intersection over list slots.
type cpuAlgo struct {
	name string
	f    func(dst []uint32, q []int) []uint32
}

// cpuAlgos lists the CPU algorithms over d's lists (merge first: the
// baseline).
func cpuAlgos(d *Data, hsDiv int) []cpuAlgo {
	qls := make([][]uint32, 0, 16)
	gather := func(q []int) [][]uint32 {
		qls = qls[:0]
		for _, id := range q {
			qls = append(qls, d.Lists[id])
		}
		return qls
	}
	algos := []cpuAlgo{
		{"merge", func(dst []uint32, q []int) []uint32 { return intersect.Merge(dst, gather(q)) }},
		{"galloping", func(dst []uint32, q []int) []uint32 { return intersect.SvS(dst, gather(q)) }},
		{"binsearch", func(dst []uint32, q []int) []uint32 { return intersect.BinarySearch(dst, gather(q)) }},
	}
	for lv := 1; lv <= intersect.PMFMaxLevels; lv++ {
		algos = append(algos, cpuAlgo{fmt.Sprintf("pmf%d", lv), func(dst []uint32, q []int) []uint32 { return intersect.PMF(dst, gather(q), lv) }})
	}
	var mbuf []intersect.LR
	var hbuf []intersect.HS
	return append(algos, cpuAlgo{"lr", func(dst []uint32, q []int) []uint32 {
		mbuf = mbuf[:0]
		for _, id := range q {
			mbuf = append(mbuf, d.LRs[id])
		}
		return intersect.LRSearch(dst, gather(q), mbuf)
	}}, cpuAlgo{fmt.Sprintf("hs%d", hsDiv), func(dst []uint32, q []int) []uint32 {
		hbuf = hbuf[:0]
		for _, id := range q {
			hbuf = append(hbuf, d.HSs[id])
		}
		return intersect.HSSearch(dst, gather(q), hbuf)
	}})
}

// cpuRows times every CPU algorithm over all queries and returns merge's
// results (the reference of every other row).
func cpuRows(d *Data, hsDiv int) ([]Row, [][]uint32, error) {
	want := make([][]uint32, len(d.Queries))
	var rows []Row
	var dst []uint32
	for ai, a := range cpuAlgos(d, hsDiv) {
		start := time.Now()
		for qi, q := range d.Queries {
			dst = a.f(dst, q)
			if ai == 0 {
				want[qi] = slices.Clone(dst)
			} else if !slices.Equal(dst, want[qi]) {
				return nil, nil, fmt.Errorf("BUG: bench intersect: CPU %s differs from merge on query %d (%d vs %d results)", a.name, qi, len(dst), len(want[qi]))
			}
		}
		rows = append(rows, Row{"cpu", a.name, 0, len(d.Queries), d.Elems, time.Since(start)})
	}
	return rows, want, nil
}

// gpuAlgo is a GPU intersection kernel choice.
type gpuAlgo struct {
	a      kern.IsectAlgo
	levels int
	name   string
}

// gpuGroups are the algorithms by input encoding: the decoded lists, then
// one group per whole-list encoding (uploaded once per group).
var gpuGroups = [][]gpuAlgo{{{kern.IsectBinary, 0, "binsearch"}, {kern.IsectLR, 0, "lr"}, {kern.IsectHS, 0, "hs"},
	{kern.IsectPMF, 1, "pmf1"}, {kern.IsectPMF, 2, "pmf2"}, {kern.IsectPMF, 3, "pmf3"}, {kern.IsectPMF, 4, "pmf4"}},
	{{kern.IsectLRC, 0, "lrc"}}, {{kern.IsectLRCSeg, 0, "lrcseg"}}, {{kern.IsectSegLRC, 0, "seglrc"}}, {{kern.IsectHSLRC, 0, "hslrc"}}}

// gpuRows runs the GPU rows. Without a usable GPU it fails for Device gpu,
// else notices why and returns no rows.
func gpuRows(d *Data, cfg Config, want [][]uint32) ([]Row, error) {
	ctx, k, why := openGPU()
	if ctx == nil {
		if cfg.Device == "gpu" {
			return nil, fmt.Errorf("--device gpu: %s", why)
		}
		notice(cfg, "qp: no GPU rows: "+why)
		return nil, nil
	}
	defer ctx.Close()
	notice(cfg, "qp: using GPU "+ctx.Device().Name)
	var rows []Row
	for _, g := range gpuGroups {
		rl, err := uploadGroup(d, k, g[0].a.Codec(), cfg)
		if err != nil {
			return nil, err
		}
		for _, c := range cfg.Thresholds {
			batches := paraBatches(d, c)
			for _, a := range g {
				wall, err := runBatches(rl, a, batches, want, c)
				if err != nil {
					rl.Free()
					return nil, err
				}
				rows = append(rows, Row{"gpu", a.name, c, len(d.Queries), d.Elems, wall})
			}
		}
		rl.Free()
	}
	return rows, nil
}

func notice(cfg Config, s string) {
	if cfg.Notice != nil {
		cfg.Notice(s)
	}
}

// openGPU opens device 0 and the intersection kernels, or says why not.
func openGPU() (*cuda.Context, *kern.IntersectKernels, string) {
	if ok, why := cuda.Available(); !ok {
		return nil, nil, why
	}
	ctx, err := cuda.Open(0)
	if err != nil {
		return nil, nil, err.Error()
	}
	k, err := kern.LoadIntersectKernels(ctx)
	if err != nil {
		ctx.Close()
		return nil, nil, err.Error()
	}
	return ctx, k, ""
}

// uploadGroup uploads the lists (and, for an encoding group, their whole-
// list encodings) once for a group's algorithms.
func uploadGroup(d *Data, k *kern.IntersectKernels, cd compress.Searcher, cfg Config) (*kern.IsectLists, error) {
	in := make([]kern.IsectList, len(d.Lists))
	var encBytes int64
	for i, l := range d.Lists {
		in[i] = kern.IsectList{Docs: l, LR: d.LRs[i], HS: d.HSs[i]}
		if cd != nil {
			in[i].Enc = cd.AppendEncode(nil, l)
			encBytes += int64(len(in[i].Enc))
		}
	}
	if cd != nil {
		notice(cfg, fmt.Sprintf("qp: %s: %.2f bits per docID (whole lists)", cd.Name(), 8*float64(encBytes)/float64(max(d.Postings, 1))))
	}
	return k.UploadLists(in)
}

// paraBatches cuts the queries into PARA batches: a batch closes when its
// shortest lists sum to at least c (Ao et al. §4.1).
func paraBatches(d *Data, c int) [][][]int {
	var batches [][][]int
	var cur [][]int
	sum := 0
	for _, q := range d.Queries {
		cur = append(cur, q)
		sum += d.shortest(q)
		if sum >= c {
			batches = append(batches, cur)
			cur, sum = nil, 0
		}
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// runBatches times one algorithm over the batches (descriptor upload,
// kernels, results back) and checks every query against want.
func runBatches(rl *kern.IsectLists, a gpuAlgo, batches [][][]int, want [][]uint32, c int) (time.Duration, error) {
	var wall time.Duration
	var res, off []uint32
	qi := 0
	for _, bq := range batches {
		start := time.Now()
		b, err := rl.Batch(bq)
		if err != nil {
			return 0, err
		}
		res, off, err = b.Run(a.a, a.levels, res, off)
		b.Free()
		wall += time.Since(start)
		if err != nil {
			return 0, err
		}
		for j := range bq {
			if got := res[off[j]:off[j+1]]; !slices.Equal(got, want[qi]) {
				return 0, fmt.Errorf("BUG: bench intersect: GPU %s (c=%d) differs from merge on query %d (%d vs %d results)",
					a.name, c, qi, len(got), len(want[qi]))
			}
			qi++
		}
	}
	return wall, nil
}

// CSVHeader is the header of bench intersect's CSV.
var CSVHeader = []string{"device", "algo", "threshold", "queries", "elements", "seconds", "queries_per_s", "ns_per_elem"}

// CSVRows gives the rows as CSV records (report.WriteCSV with CSVHeader).
func CSVRows(rows []Row) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = []string{r.Device, r.Algo, strconv.Itoa(r.C), strconv.Itoa(r.Queries), strconv.FormatInt(r.Elems, 10),
			strconv.FormatFloat(r.Wall.Seconds(), 'f', 6, 64), strconv.FormatFloat(r.QPS(), 'f', 1, 64),
			strconv.FormatFloat(r.NsPerElem(), 'f', 3, 64)}
	}
	return out
}
