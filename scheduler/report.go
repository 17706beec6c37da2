package scheduler

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/qpengine/qp/report"
)

// The report's tables are built once (trainingTable, runTable,
// searchTable: a header and rows) and rendered by report/ as aligned text
// (WriteTable, qp bench sched's standard output) or Markdown (AddTo, the
// --report README).

// intro is the sentence that opens the report: deadline, log, arrivals.
func (r *Report) intro() string {
	s := fmt.Sprintf("Deadline %v, log of %d queries, Poisson arrivals (seed %d)", r.Deadline, r.Queries, r.Seed)
	if r.MinDuration > 0 {
		s += fmt.Sprintf(", replayed cyclically for at least %v per run", r.MinDuration)
	}
	s += "."
	if r.HostCores[GPU] >= 0 {
		s += fmt.Sprintf(" %s host side: %.2f cores busy while its training batches ran.", r.Names[GPU], r.HostCores[GPU])
	}
	if len(r.Split) > 0 {
		s += fmt.Sprintf(" Core split probe (q/s, %s+%s, with N %s slots busy):", r.Names[CPU], r.Names[GPU], r.Names[CPU])
		for _, p := range r.Split {
			s += fmt.Sprintf(" %d: %.0f+%.0f", p.CPUSlots, float64(p.CPUQueries)/p.Elapsed.Seconds(), float64(p.GPUQueries)/p.Elapsed.Seconds())
		}
		s += "."
	}
	return s + fmt.Sprintf(" CPU+GPU runs %d %s slots.", r.HybridCPUSlots, r.Names[CPU])
}

// trainingTable has a row per trained cost model (each processor alone
// and in batches): the mean relative error of its predictions on held-out
// samples and in-sample.
func (r *Report) trainingTable() (header []string, rows [][]string) {
	for i, t := range r.Training {
		if r.Trained[i] {
			rows = append(rows, []string{r.Names[i], "alone", pct(t.HeldOutError), fmt.Sprint(t.HeldOut), fmt.Sprint(t.Samples), pct(t.FitError)})
		}
		if t := r.BatchTraining[i]; r.BatchTrained[i] {
			rows = append(rows, []string{r.Names[i], "in batches", pct(t.HeldOutError), fmt.Sprint(t.HeldOut), fmt.Sprint(t.Samples), pct(t.FitError)})
		}
	}
	return []string{"processor", "cost model", "held-out error", "held out", "samples", "in-sample error"}, rows
}

// runTable has a row per run of the table (setups × rates): delays in
// milliseconds ("late" is the mean submission lateness included in them),
// the queries each processor answered, the stolen and urgent ones, the
// GPU's batches and the mean relative error of each processor's cost
// predictions in the run.
func (r *Report) runTable() (header []string, rows [][]string) {
	c, g := r.Names[CPU], r.Names[GPU]
	header = []string{"setup", "rate q/s", "answered", "missed", "mean ms", "p50 ms", "p99 ms", "max ms", "late ms",
		c + " q", g + " q", "stolen", "urgent", g + " batches", c + " err", g + " err"}
	for _, x := range r.Runs {
		rows = append(rows, []string{x.Setup.String(), fmt.Sprintf("%.1f", x.Rate), fmt.Sprint(x.Answered), fmt.Sprint(x.Missed),
			ms(x.Mean), ms(x.P50), ms(x.P99), ms(x.Max), ms(x.Late),
			fmt.Sprint(x.Procs[CPU].Queries), fmt.Sprint(x.Procs[GPU].Queries),
			fmt.Sprint(x.Procs[CPU].Stolen + x.Procs[GPU].Stolen), fmt.Sprint(x.Procs[CPU].Urgent + x.Procs[GPU].Urgent),
			fmt.Sprint(x.Procs[GPU].Batches), pct(x.Procs[CPU].ModelError), pct(x.Procs[GPU].ModelError)})
	}
	return header, rows
}

// searchTable has a row per rate search: setup, median highest sustained
// rate, its lowest failed rate, the lowest and highest sustained rate over
// the repeats, their spread relative to the median, the number of runs, and
// the mean and p99 delay of the median's best run.
func (r *Report) searchTable() (header []string, rows [][]string) {
	for _, x := range r.Searches {
		failed := "-"
		if !math.IsInf(x.Failed, 1) {
			failed = fmt.Sprintf("%.0f", x.Failed)
		}
		mean, p99 := "-", "-"
		if x.MaxRate > 0 {
			mean, p99 = ms(x.Best.Mean), ms(x.Best.P99)
		}
		lo, hi := x.Spread()
		spread := "-"
		if x.MaxRate > 0 {
			spread = pct((hi - lo) / x.MaxRate)
		}
		rows = append(rows, []string{x.Setup.String(), fmt.Sprintf("%.0f", x.MaxRate), failed,
			fmt.Sprintf("%.0f-%.0f", lo, hi), spread, fmt.Sprint(len(x.Runs)), mean, p99})
	}
	return []string{"setup", "highest sustained q/s", "lowest failed q/s", "repeats min-max q/s", "spread", "runs", "mean ms", "p99 ms"}, rows
}

// WriteTable writes the report as aligned text: the opening sentence, the
// training, run and rate-search tables (those with rows) and the hybrid
// setups' ratios (Ratios).
func (r *Report) WriteTable(w io.Writer) error {
	if _, err := fmt.Fprintln(w, r.intro()); err != nil {
		return err
	}
	for _, table := range []func() ([]string, [][]string){r.trainingTable, r.runTable, r.searchTable} {
		if h, rows := table(); len(rows) > 0 {
			fmt.Fprintln(w)
			if err := report.WriteText(w, h, rows); err != nil {
				return err
			}
		}
	}
	for _, l := range r.Ratios() {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// AddTo writes the report into s: the opening sentence, the training, run
// and rate-search tables (those with rows), the hybrid setups' ratios and
// (as name.svg) the plot of Ding et al. WWW'09 Figure 7: average (solid)
// and p99 (dashed) delay against the arrival rate per setup, on log-log
// axes. The plotted points are the table's runs and the sustained runs of
// the rate searches; a run that missed deadlines is drawn too (its delays
// are those of the queries answered, so the rise past a setup's capacity
// shows).
func (r *Report) AddTo(s *report.Section, name string) {
	s.Para("%s", r.intro())
	for _, table := range []func() ([]string, [][]string){r.trainingTable, r.runTable, r.searchTable} {
		if h, rows := table(); len(rows) > 0 {
			s.Table(h, rows)
		}
	}
	for _, l := range r.Ratios() {
		s.Para("%s.", l)
	}
	if p := r.DelayPlot(); p != nil {
		s.Plot(name, p)
	}
}

// DelayPlot is Figure 7's plot (see AddTo), nil without runs.
func (r *Report) DelayPlot() *report.Plot {
	by := map[Setup][]Run{}
	var order []Setup
	add := func(x Run) {
		if _, ok := by[x.Setup]; !ok {
			order = append(order, x.Setup)
		}
		by[x.Setup] = append(by[x.Setup], x)
	}
	for _, x := range r.Runs {
		add(x)
	}
	for _, sr := range r.Searches {
		for _, x := range sr.Runs {
			if x.Sustained() {
				add(x)
			}
		}
	}
	if len(order) == 0 {
		return nil
	}
	p := &report.Plot{Title: "Delay vs arrival rate (solid: mean, dashed: p99)", XLabel: "arrival rate (queries/s)",
		YLabel: "delay (ms)", LogX: true, LogY: true}
	for i, st := range order {
		runs := by[st]
		slices.SortStableFunc(runs, func(a, b Run) int { return cmp.Compare(a.Rate, b.Rate) })
		runs = slices.CompactFunc(runs, func(a, b Run) bool { return a.Rate == b.Rate })
		var mean, p99 report.Series
		mean.Name, p99.Name, p99.Dashed = st.String()+" mean", st.String()+" p99", true
		mean.Color, p99.Color = report.Color(i), report.Color(i)
		for _, x := range runs {
			if x.Answered == 0 {
				continue
			}
			mean.X, mean.Y = append(mean.X, x.Rate), append(mean.Y, x.Mean.Seconds()*1e3)
			p99.X, p99.Y = append(p99.X, x.Rate), append(p99.Y, x.P99.Seconds()*1e3)
		}
		p.Series = append(p.Series, mean, p99)
	}
	return p
}

// Ratios compares the hybrid setups' highest sustained rates with the
// processors alone (issue #24's targets: at least the better one, and 90%
// of the sum), one line per hybrid setup searched; none unless both
// processors alone were searched.
func (r *Report) Ratios() []string {
	rate := map[Setup]float64{}
	for _, x := range r.Searches {
		rate[x.Setup] = x.MaxRate
	}
	c, okc := rate[CPUOnly]
	g, okg := rate[GPUOnly]
	if !okc || !okg || c+g == 0 {
		return nil
	}
	var out []string
	for _, st := range []Setup{Parallel, ParallelNoSteal, ParallelGPUFirst, BestSerial} {
		h, ok := rate[st]
		if !ok {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %.2f× the better processor alone, %.2f of %s + %s alone (%.0f q/s of %.0f)",
			st, h/max(c, g), h/(c+g), r.Names[CPU], r.Names[GPU], h, c+g))
	}
	return out
}
