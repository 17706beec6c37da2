package collstats

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"sync"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/report"
)

// Row is one metric of both indexes.
type Row struct {
	Section, Name string
	A, B          float64
}

// Ratio is B/A, NaN when either is undefined or A is 0 (a 0/0 row is 1).
func (r Row) Ratio() float64 {
	switch {
	case math.IsNaN(r.A) || math.IsNaN(r.B):
		return math.NaN()
	case r.A == 0 && r.B == 0:
		return 1
	case r.A == 0:
		return math.NaN()
	}
	return r.B / r.A
}

// Table sets two indexes' metrics side by side.
type Table struct {
	NameA, NameB string
	Rows         []Row
}

// Compare measures a and b (Measure) with the same query sets and options
// and pairs their metrics row by row. nameA and nameB head the columns.
func Compare(a, b *index.Index, nameA, nameB string, sets []QuerySet, opt Options) (*Table, error) {
	ma, err := Measure(a, sets, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nameA, err)
	}
	mb, err := Measure(b, sets, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nameB, err)
	}
	if len(ma) != len(mb) {
		panic(fmt.Sprintf("BUG: %d metrics against %d", len(ma), len(mb)))
	}
	t := &Table{NameA: nameA, NameB: nameB}
	for i := range ma {
		if ma[i].Section != mb[i].Section || ma[i].Name != mb[i].Name {
			panic(fmt.Sprintf("BUG: metric %d is %s/%s against %s/%s", i, ma[i].Section, ma[i].Name, mb[i].Section, mb[i].Name))
		}
		t.Rows = append(t.Rows, Row{ma[i].Section, ma[i].Name, ma[i].Value, mb[i].Value})
	}
	return t, nil
}

// Format prints v with 4 significant digits, integers in full, "-" for NaN.
func Format(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1000 && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// Write prints t as an aligned table (report.WriteText): a line per
// section, then its metrics with both values and the ratio b/a.
func (t *Table) Write(w io.Writer) error {
	var rows [][]string
	sec := ""
	for _, r := range t.Rows {
		if r.Section != sec {
			sec = r.Section
			rows = append(rows, []string{"[" + sec + "]"})
		}
		ratio := r.Ratio()
		rs := "-"
		if !math.IsNaN(ratio) {
			rs = strconv.FormatFloat(ratio, 'f', 3, 64)
		}
		rows = append(rows, []string{r.Name, Format(r.A), Format(r.B), rs})
	}
	return report.WriteText(w, []string{"metric", t.NameA, t.NameB, "b/a"}, rows)
}

// WriteCSV writes t with report.WriteCSV: section, metric, a, b, ratio
// (full precision; empty where undefined).
func (t *Table) WriteCSV(w io.Writer) error {
	num := func(v float64) string {
		switch {
		case math.IsNaN(v):
			return ""
		case v == math.Trunc(v) && math.Abs(v) < 1e15:
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	rows := make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		rows[i] = []string{r.Section, r.Name, num(r.A), num(r.B), num(r.Ratio())}
	}
	return report.WriteCSV(w, []string{"section", "metric", t.NameA, t.NameB, "ratio"}, rows)
}

// ReencodeSizes re-encodes every block of every list of x with c (as the
// index writer would, in x's docID order) on all cores and returns the
// docID and frequency bytes.
func ReencodeSizes(x *index.Index, c compress.Codec) (docBytes, freqBytes int64, err error) {
	nt := x.NumTerms()
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			enc := index.NewListEncoder(x.Meta.BlockSize, c, c, x.Params(), x.DocLens())
			var docs, freqs []uint32
			var buf []byte
			var db, fb int64
			for t := w; t < nt; t += workers {
				l, e := x.List(t)
				if e == nil {
					docs, freqs, e = l.Decode(docs, freqs)
				}
				if e == nil {
					buf, e = enc.Encode(buf[:0], docs, freqs)
				}
				if e != nil {
					mu.Lock()
					err = e
					mu.Unlock()
					return
				}
				d, f := enc.Sizes()
				db += int64(d)
				fb += int64(f)
			}
			mu.Lock()
			docBytes += db
			freqBytes += fb
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	return
}
