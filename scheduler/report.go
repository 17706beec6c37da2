package scheduler

import (
	"fmt"
	"slices"

	"github.com/qpengine/qp/report"
)

// AddTo writes the report into s: the cost models' training errors, the
// table of runs, the highest sustained rate per setup, and (as name.svg)
// the plot of Ding et al. WWW'09 Figure 7: average (solid) and p99
// (dashed) delay against the arrival rate per setup, on log-log axes. The
// plotted points are the table's runs and the sustained runs of the rate
// searches; a run that missed deadlines is drawn too (its delays are those
// of the queries answered, so the rise past a setup's capacity shows).
func (r *Report) AddTo(s *report.Section, name string) {
	s.Para("Deadline %v, log of %d queries, Poisson arrivals (seed %d)%s.", r.Deadline, r.Queries, r.Seed,
		func() string {
			if r.MinDuration > 0 {
				return fmt.Sprintf(", replayed cyclically for at least %v per run", r.MinDuration)
			}
			return ""
		}())
	var train [][]string
	for i, t := range r.Training {
		if r.Trained[i] {
			train = append(train, []string{r.Names[i], "alone", pct(t.HeldOutError), fmt.Sprint(t.HeldOut), fmt.Sprint(t.Samples), pct(t.FitError)})
		}
		if t := r.BatchTraining[i]; r.BatchTrained[i] {
			train = append(train, []string{r.Names[i], "in batches", pct(t.HeldOutError), fmt.Sprint(t.HeldOut), fmt.Sprint(t.Samples), pct(t.FitError)})
		}
	}
	if len(train) > 0 {
		s.Table([]string{"processor", "cost model", "held-out error", "held out", "samples", "in-sample error"}, train)
	}
	if len(r.Runs) > 0 {
		var rows [][]string
		for _, x := range r.Runs {
			rows = append(rows, []string{x.Setup.String(), fmt.Sprintf("%.0f", x.Rate), fmt.Sprint(x.Answered), fmt.Sprint(x.Missed),
				ms(x.Mean), ms(x.P50), ms(x.P99), ms(x.Max), fmt.Sprint(x.Procs[CPU].Queries), fmt.Sprint(x.Procs[GPU].Queries),
				fmt.Sprint(x.Procs[CPU].Stolen + x.Procs[GPU].Stolen), fmt.Sprint(x.Procs[GPU].Batches)})
		}
		s.Table([]string{"setup", "rate q/s", "answered", "missed", "mean ms", "p50 ms", "p99 ms", "max ms",
			r.Names[CPU] + " q", r.Names[GPU] + " q", "stolen", r.Names[GPU] + " batches"}, rows)
	}
	if len(r.Searches) > 0 {
		s.Table([]string{"setup", "highest sustained q/s", "lowest failed q/s", "repeats min-max q/s", "spread", "runs", "mean ms", "p99 ms"},
			r.searchRows())
		for _, l := range r.Ratios() {
			s.Para("%s.", l)
		}
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
		slices.SortStableFunc(runs, func(a, b Run) int {
			switch {
			case a.Rate < b.Rate:
				return -1
			case a.Rate > b.Rate:
				return 1
			}
			return 0
		})
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
