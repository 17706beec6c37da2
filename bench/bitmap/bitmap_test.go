package bitmap

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/report"
)

// TestSynthetic: one AND and one OR row at the density asked, one query,
// both paths timed, the bitmaps' and blocks' sizes counted (the results of
// the two paths are compared inside).
func TestSynthetic(t *testing.T) {
	bp, err := compress.ByName("bp128")
	if err != nil {
		t.Skip(err)
	}
	rows, err := Synthetic(t.TempDir(), 1<<13, 3, 1.0/8, bp, 10, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Mode != engine.And || rows[1].Mode != engine.Or {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.Source != "synthetic" || r.Density != 1.0/8 || r.Queries != 1 || r.List <= 0 || r.Bitmap <= 0 || r.ListB <= 0 || r.BitmapB <= 0 {
			t.Errorf("row %+v", r)
		}
	}
}

// TestRunIndex: queries grouped by their densest bitmap list's power of
// two; a query without a bitmap list is left out.
func TestRunIndex(t *testing.T) {
	n := 4096
	lens := make([]uint32, n)
	for i := range lens {
		lens[i] = 10
	}
	col := &ref.Collection{Lens: lens}
	for _, term := range []struct {
		name string
		step int
	}{{"a", 2}, {"b", 3}, {"c", 5}, {"z", 997}} {
		var d, f []uint32
		for i := 0; i < n; i += term.step {
			d, f = append(d, uint32(i)), append(f, 1)
		}
		col.Terms, col.Docs, col.Freqs = append(col.Terms, term.name), append(col.Docs, d), append(col.Freqs, f)
	}
	bp, _ := compress.ByName("bp128")
	x, err := col.WriteIndexWith(filepath.Join(t.TempDir(), "x.qp"), index.WriterOptions{DocCodec: bp, Bitmaps: index.BitmapsAlways})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rows, err := RunIndex(x, [][]string{{"a", "b"}, {"a", "c"}, {"z"}, {"nosuch"}}, 10, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// Every list is a bitmap: z alone (df/N = 5/4096, in [2^-10, 2^-9)),
	// then the two queries whose densest list is a (df/N = 1/2); nosuch
	// has no list.
	if len(rows) != 4 || rows[0].Density != 1.0/1024 || rows[0].Queries != 1 || rows[2].Density != 0.5 || rows[2].Queries != 2 ||
		rows[2].Mode != engine.And || rows[3].Mode != engine.Or {
		t.Fatalf("rows %+v", rows)
	}
	if got := DensestPairs(x, 3); len(got) != 2 || !slices.Equal(got[0], []string{"a", "b"}) {
		t.Errorf("densest pairs %v", got)
	}
}

// TestCrossover: the longest run of consecutive densities where the
// bitmap path wins.
func TestCrossover(t *testing.T) {
	var rows []Row
	for i, win := range []bool{false, true, false, true, true, true, false} {
		b := 2 * time.Microsecond
		if win {
			b = time.Microsecond / 2
		}
		rows = append(rows, Row{Source: "synthetic", Mode: engine.And, Density: float64(i + 1), List: time.Microsecond, Bitmap: b})
	}
	lo, hi, ok := Crossover(rows, "synthetic", engine.And)
	if !ok || lo != 4 || hi != 6 {
		t.Errorf("crossover %v..%v %v, want 4..6", lo, hi, ok)
	}
	if _, _, ok := Crossover(rows, "synthetic", engine.Or); ok {
		t.Error("no OR rows: a crossover")
	}
	var b bytes.Buffer
	if err := report.WriteCSV(&b, CSVHeader, CSVRows(rows[:1])); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if want := []string{"synthetic", "and", "1", "0", "1000", "2000", "0", "0"}; err != nil || len(recs) != 2 || !slices.Equal(recs[1], want) {
		t.Errorf("CSV %q %v", recs, err)
	}
	if p := Plot(rows); len(p.Series) != 2 || p.Series[0].Name != fmt.Sprintf("synthetic %v list", engine.And) {
		t.Errorf("plot series %+v", p.Series)
	}
}
