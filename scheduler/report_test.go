package scheduler

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/report"
)

func TestReportAddTo(t *testing.T) {
	r := &Report{Deadline: time.Second, Queries: 10, Seed: 1, Names: [2]string{"cpu", "gpu"},
		Trained: [2]bool{true, true}}
	for _, st := range AllSetups {
		for _, rate := range []float64{100, 1000} {
			r.Runs = append(r.Runs, Run{Setup: st, Rate: rate, Submitted: 5, Answered: 5, Deadline: time.Second, Mean: time.Duration(rate) * time.Microsecond,
				P99: 2 * time.Duration(rate) * time.Microsecond})
		}
		maxRate := 3000.0
		switch st {
		case GPUOnly:
			maxRate = 6000
		case Parallel:
			maxRate = 8400
		}
		r.Searches = append(r.Searches, SearchResult{Setup: st, MaxRate: maxRate, Failed: math.Inf(1), Rates: []float64{2900, maxRate, 3100},
			Best: Run{Setup: st, Rate: 3000, Submitted: 5, Answered: 5, Deadline: time.Second, Mean: time.Millisecond, P99: 4 * time.Millisecond},
			Runs: []Run{{Setup: st, Rate: 3000, Submitted: 5, Answered: 5, Deadline: time.Second, Mean: time.Millisecond, P99: 4 * time.Millisecond},
				{Setup: st, Rate: 6000, Submitted: 5, Answered: 5, Missed: 1, Deadline: time.Second, Mean: time.Second, P99: 2 * time.Second}}})
	}
	rep := report.New("t")
	r.AddTo(rep.Section("sched"), "delay")
	md := rep.Markdown()
	for _, want := range []string{"| cpu-only | 100.0 | 5 | 0 | 0.10 |", "| cpu-only | 3000 | - | 2900-3100 | 6.7% | 2 | 1.00 | 4.00 |",
		"cpu+gpu: 1.40× the better processor alone, 0.93 of cpu + gpu alone (8400 q/s of 9000)", "![", "(delay.svg)", "held-out error"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	// One table builder: the text of WriteTable and the Markdown of AddTo
	// hold the same rows.
	var text strings.Builder
	if err := r.WriteTable(&text); err != nil {
		t.Fatal(err)
	}
	for _, table := range []func() ([]string, [][]string){r.trainingTable, r.runTable, r.searchTable} {
		h, rows := table()
		for _, row := range append([][]string{h}, rows...) {
			if !strings.Contains(md, "| "+strings.Join(row, " | ")+" |") {
				t.Errorf("Markdown lacks row %q", row)
			}
			if !strings.Contains(text.String(), row[len(row)-1]) || !strings.Contains(text.String(), row[0]) {
				t.Errorf("text lacks row %q:\n%s", row, text.String())
			}
		}
	}
	p := r.DelayPlot()
	if len(p.Series) != 2*len(AllSetups) {
		t.Fatalf("%d series, want %d (mean and p99 of each setup)", len(p.Series), 2*len(AllSetups))
	}
	for _, s := range p.Series {
		// Two table runs and the sustained search run; the failed one is left out.
		if len(s.X) != 3 || s.X[2] != 3000 {
			t.Fatalf("series %s: x %v", s.Name, s.X)
		}
	}
	if p.Series[0].Color != p.Series[1].Color || p.Series[0].Color == p.Series[2].Color {
		t.Fatal("mean and p99 of a setup should share a colour, setups differ")
	}
	if _, err := p.SVG(); err != nil {
		t.Fatal(err)
	}
	if (&Report{}).DelayPlot() != nil {
		t.Fatal("plot without runs")
	}
}

func TestBatchPostings(t *testing.T) {
	f := Features{Mode: 0, Terms: 2, Min: 5, Second: 7, Sum: 12}
	for _, c := range []struct {
		mode string
		want uint64
	}{{"and", 5}, {"or", 12}, {"andor", 5}} {
		var err error
		if f.Mode, err = engine.ParseMode(c.mode); err != nil {
			t.Fatal(err)
		}
		if got := f.batchPostings(); got != c.want {
			t.Errorf("%s: batchPostings %d, want %d", c.mode, got, c.want)
		}
	}
}
