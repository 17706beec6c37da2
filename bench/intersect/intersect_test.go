package intersect

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qpengine/qp/bench/internal/testidx"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/report"
)

// tinyIndex is the random collection of this package's tests.
func tinyIndex(t *testing.T, n, terms int) (*index.Index, *ref.Collection) {
	return testidx.Random{Seed: 3, N: n, Terms: terms}.Build(t)
}

// TestPrepareAndCPURows: queries with an unknown term or one distinct term
// are skipped; the shortest-list elements are the sum of each query's
// shortest df; one CPU row per algorithm, merge first.
func TestPrepareAndCPURows(t *testing.T) {
	x, col := tinyIndex(t, 800, 10)
	an, err := analysis.New(analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"w00 w01", "w02 w05 w09", "w03", "w03 w03", "w01 nosuchterm", "w04 w00"}
	d, err := Prepare(x, an, texts, 16)
	if err != nil {
		t.Fatal(err)
	}
	df := func(i int) int64 { return int64(len(col.Docs[i])) }
	wantElems := min(df(0), df(1)) + min(df(2), df(5), df(9)) + min(df(4), df(0))
	// Lists: w00 w01 w02 w05 w09 w04, and w03 of the skipped "w03 w03" (a
	// slot is taken before the query is found unusable, as before the move).
	if len(d.Queries) != 3 || d.Skipped != 3 || d.Elems != wantElems || len(d.Lists) != 7 {
		t.Fatalf("%d queries, %d skipped, %d elements (want %d), %d lists", len(d.Queries), d.Skipped, d.Elems, wantElems, len(d.Lists))
	}
	var notes []string
	rows, err := Run(d, Config{Device: "auto", HSDiv: 16, Thresholds: []int{1 << 10}, Notice: func(s string) { notes = append(notes, s) }})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rows {
		if r.Device == "cpu" {
			names = append(names, r.Algo)
			if r.Queries != 3 || r.Elems != wantElems || r.C != 0 || r.Wall <= 0 {
				t.Errorf("row %+v", r)
			}
		}
	}
	if want := []string{"merge", "galloping", "binsearch", "pmf1", "pmf2", "pmf3", "pmf4", "lr", "hs16"}; !slices.Equal(names, want) {
		t.Errorf("CPU rows %q, want %q", names, want)
	}
	if ok, _ := cuda.Available(); !ok {
		if len(rows) != 9 || len(notes) != 1 || !strings.Contains(notes[0], "no GPU rows") {
			t.Errorf("auto without a GPU: %d rows, notices %q", len(rows), notes)
		}
		if _, err := Run(d, Config{Device: "gpu", HSDiv: 16}); err == nil || !strings.HasPrefix(err.Error(), "--device gpu: ") {
			t.Errorf("gpu without a GPU: %v", err)
		}
	}
	if _, err := Run(d, Config{Device: "tpu", HSDiv: 16}); err == nil {
		t.Error("device tpu: no error")
	}
	if _, err := Prepare(x, an, []string{"w01", "zzz w01"}, 16); err == nil {
		t.Error("no usable query: no error")
	}
	if _, err := Prepare(x, an, texts, 0); err == nil {
		t.Error("hs-div 0: no error")
	}
}

// TestParaBatches: a batch closes when its shortest lists reach c; every
// query is in exactly one batch, in order.
func TestParaBatches(t *testing.T) {
	d := &Data{Lists: [][]uint32{make([]uint32, 5), make([]uint32, 3), make([]uint32, 10)},
		Queries: [][]int{{0, 2}, {1, 2}, {0, 1}, {2, 0}}} // shortest 5, 3, 3, 5
	got := paraBatches(d, 8)
	if len(got) != 2 || len(got[0]) != 2 || len(got[1]) != 2 {
		t.Fatalf("batches %v", got)
	}
	if got := paraBatches(d, 1); len(got) != 4 {
		t.Fatalf("c=1: %d batches", len(got))
	}
	if got := paraBatches(d, 1000); len(got) != 1 || len(got[0]) != 4 {
		t.Fatalf("c=1000: %v", got)
	}
}

// TestCSVRoundTrip: the rows read back with encoding/csv.
func TestCSVRoundTrip(t *testing.T) {
	rows := []Row{{"gpu", "pmf2", 65536, 100, 4000, 2 * time.Millisecond}}
	var b bytes.Buffer
	if err := report.WriteCSV(&b, CSVHeader, CSVRows(rows)); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	want := []string{"gpu", "pmf2", "65536", "100", "4000", "0.002000", "50000.0", "500.000"}
	if err != nil || len(recs) != 2 || !slices.Equal(recs[1], want) {
		t.Fatalf("read back %q, %v", recs, err)
	}
}
