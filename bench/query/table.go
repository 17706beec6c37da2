package query

import (
	"fmt"
	"math"
	"strings"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/report"
)

// CSVHeader is the header of bench query's CSV (--csv).
var CSVHeader = []string{"mode", "algorithm", "threads", "gpu_threshold", "gpu_or_threshold", "gpu_bitmaps", "queries_per_s",
	"mean_ms", "p50_ms", "p95_ms", "p99_ms", "results_per_query", "failed"}

// CSVRows gives the rows as CSV records (report.WriteCSV with CSVHeader).
// Commas in names become ';', as the hand-written CSV did.
func CSVRows(rows []Row) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		f := fmt.Sprintf
		out[i] = []string{r.Mode.String(), strings.ReplaceAll(r.Name, ",", ";"), r.Threads, f("%d", r.C), f("%d", r.OT), r.BM,
			f("%.1f", r.QPS), f("%.4f", r.Mean), f("%.4f", r.P50), f("%.4f", r.P95), f("%.4f", r.P99), f("%.3f", r.Results), f("%d", r.Failed)}
	}
	return out
}

// ThresholdPlot draws queries/s against the GPU threshold c per mode, the
// best CPU row of each mode as a dashed horizontal line.
func ThresholdPlot(rows []Row, docs, nq, k int) (*report.Plot, error) {
	p := &report.Plot{Title: fmt.Sprintf("qp bench query: %d queries, %d documents, top-%d", nq, docs, k),
		XLabel: "GPU PARA threshold c (shortest-list postings per launch set)", YLabel: "queries/s", LogX: true, LogY: true}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		if r.C > 0 {
			lo, hi = min(lo, float64(r.C)), max(hi, float64(r.C))
		}
	}
	if lo > hi {
		return nil, fmt.Errorf("--plot: no GPU rows to plot (use --device gpu)")
	}
	if lo == hi {
		lo, hi = lo/2, hi*2
	}
	for i, mode := range []engine.Mode{engine.And, engine.Or, engine.AndOr} {
		g := report.Series{Name: mode.String() + " GPU", Color: report.Color(i)}
		var best float64
		var bestName string
		for _, r := range rows {
			if r.Mode != mode {
				continue
			}
			if r.C > 0 {
				g.X, g.Y = append(g.X, float64(r.C)), append(g.Y, r.QPS)
			} else if r.QPS > best {
				best, bestName = r.QPS, r.Name+" "+r.Threads+" threads"
			}
		}
		if len(g.X) > 0 {
			p.Series = append(p.Series, g)
		}
		if best > 0 {
			p.Series = append(p.Series, report.Series{Name: mode.String() + " CPU (" + bestName + ")", X: []float64{lo, hi},
				Y: []float64{best, best}, Dashed: true, Color: report.Color(i)})
		}
	}
	return p, nil
}

// BitmapPlot draws the GPU rows' queries/s against their bitmap density
// (--gpu-bitmaps), one line per mode and threshold c; the rows without
// bitmaps (off) and the best CPU row of each mode are dashed horizontal
// lines.
func BitmapPlot(rows []Row, docs, nq, k int) (*report.Plot, error) {
	p := &report.Plot{Title: fmt.Sprintf("qp bench query: GPU AND with list bitmaps, %d queries, %d documents, top-%d", nq, docs, k),
		XLabel: "bitmap density (lists of df/N at least this use their device bitmap)", YLabel: "queries/s", LogX: true}
	type key struct {
		mode engine.Mode
		c    int
	}
	var keys []key
	on, off := map[key]*report.Series{}, map[key]float64{}
	best := map[engine.Mode]float64{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		if r.C == 0 {
			best[r.Mode] = max(best[r.Mode], r.QPS)
			continue
		}
		if r.BM == "" {
			continue
		}
		kk := key{r.Mode, r.C}
		if on[kk] == nil {
			on[kk] = &report.Series{Name: fmt.Sprintf("%s GPU c=%s", r.Mode, SICount(r.C))}
			keys = append(keys, kk)
		}
		if r.BMD < 0 {
			off[kk] = r.QPS
			continue
		}
		on[kk].X, on[kk].Y = append(on[kk].X, r.BMD), append(on[kk].Y, r.QPS)
		lo, hi = min(lo, r.BMD), max(hi, r.BMD)
	}
	if lo > hi {
		return nil, fmt.Errorf("--plot-bitmaps: no GPU rows with a bitmap density (use --device gpu --gpu-bitmaps off,1/64,1/256,...)")
	}
	for i, kk := range keys {
		s := on[kk]
		s.Color = report.Color(i)
		p.Series = append(p.Series, *s)
		if v, ok := off[kk]; ok {
			p.Series = append(p.Series, report.Series{Name: s.Name + ", no bitmaps", X: []float64{lo, hi}, Y: []float64{v, v},
				Dashed: true, Color: s.Color})
		}
	}
	for i, mode := range []engine.Mode{engine.And, engine.Or, engine.AndOr} {
		if v := best[mode]; v > 0 {
			p.Series = append(p.Series, report.Series{Name: mode.String() + " CPU (best row)", X: []float64{lo, hi},
				Y: []float64{v, v}, Dashed: true, Color: report.Color(len(keys) + i)})
		}
	}
	return p, nil
}
