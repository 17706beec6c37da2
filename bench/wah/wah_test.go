package wah

import (
	"bytes"
	"encoding/csv"
	"slices"
	"testing"
	"time"

	"github.com/qpengine/qp/bench/internal/testidx"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/report"
)

// tinyIndex is the random collection of this package's tests.
func tinyIndex(t *testing.T, n, terms int) (*index.Index, *ref.Collection) {
	return testidx.Random{Seed: 7, N: n, Terms: terms, DFStep: 30}.Build(t)
}

// TestStagesCPU: queries from a log (unknown terms dropped, columns
// shared), densities, buckets by power of ten, and the CPU list path's
// results equal to a direct union/intersection of the collection's lists.
func TestStagesCPU(t *testing.T) {
	x, col := tinyIndex(t, 2000, 8)
	an, _ := analysis.New(analysis.Options{})
	d := FromLog(x, an, []string{"w00 w01", "w05 nosuch w07", "nosuch", "w01 w00 w03", "w06"}, 3)
	if len(d.Queries) != 3 || len(d.Terms) != 5 {
		t.Fatalf("%d queries, %d terms", len(d.Queries), len(d.Terms))
	}
	if err := d.Encode(x); err != nil {
		t.Fatal(err)
	}
	df := func(term string) float64 { return float64(len(col.Docs[slices.Index(col.Terms, term)])) }
	if want := (df("w05") + df("w07")) / 2 / 2000; d.Queries[1].Dens != want {
		t.Errorf("density %v, want %v", d.Queries[1].Dens, want)
	}
	buckets := d.Buckets()
	n := 0
	for i, b := range buckets {
		n += len(b.Qs)
		for _, qi := range b.Qs {
			if dn := d.Queries[qi].Dens; dn < b.Lo || dn >= 10*b.Lo {
				t.Errorf("query %d density %v in bucket %v", qi, dn, b.Lo)
			}
		}
		if i > 0 && buckets[i-1].Lo >= b.Lo {
			t.Errorf("buckets not ascending")
		}
	}
	if n != 3 {
		t.Fatalf("%d queries in buckets", n)
	}
	refs, err := d.RunCPU(x, buckets)
	if err != nil {
		t.Fatal(err)
	}
	// Query 0 is w00 w01.
	a, b := col.Docs[0], col.Docs[1]
	var or, and []uint32
	for _, v := range a {
		if slices.Contains(b, v) {
			and = append(and, v)
		}
	}
	or = append(append(or, a...), b...)
	slices.Sort(or)
	or = slices.Compact(or)
	if !slices.Equal(refs[0][0], or) || !slices.Equal(refs[0][1], and) {
		t.Errorf("query 0: OR %d docs (want %d), AND %d (want %d)", len(refs[0][0]), len(or), len(refs[0][1]), len(and))
	}
	g := &GPUResult{}
	rows := CSVRows(buckets, g)
	var buf bytes.Buffer
	if err := report.WriteCSV(&buf, CSVHeader, rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(recs) != len(buckets)+1 || recs[1][4] != "" || recs[1][2] == "" {
		t.Fatalf("CSV %q, %v (GPU cells must be empty without a GPU)", recs, err)
	}
	if p := Plot(buckets, g, false); len(p.Series) != 2 || len(p.Series[0].X) != len(buckets) {
		t.Errorf("plot without GPU: %d series", len(p.Series))
	}
}

// TestFromFrequentTerms: deterministic queries of 2..6 distinct columns
// over the most frequent terms.
func TestFromFrequentTerms(t *testing.T) {
	x, _ := tinyIndex(t, 500, 12)
	a, b := FromFrequentTerms(x, 4, 50), FromFrequentTerms(x, 4, 50)
	if len(a.Queries) != 50 || len(a.Terms) > 4 {
		t.Fatalf("%d queries over %d terms", len(a.Queries), len(a.Terms))
	}
	for i, q := range a.Queries {
		if len(q.Cols) < 1 || len(q.Cols) > 6 || !slices.IsSorted(q.Cols) || !slices.Equal(q.Cols, b.Queries[i].Cols) {
			t.Fatalf("query %d: %v (again %v)", i, q.Cols, b.Queries[i].Cols)
		}
	}
	if err := (&Data{}).Encode(x); err == nil {
		t.Error("no queries: no error")
	}
}

// TestPerQuery and the times of a bucket without GPU queries.
func TestBucketTimes(t *testing.T) {
	b := &Bucket{Qs: []int{0, 1}, CPUList: [2]time.Duration{4 * time.Microsecond, 6 * time.Microsecond}}
	g := &GPUResult{Skip: map[int]bool{1: true}}
	v := BucketTimes(b, g)
	if v[0] != 2 || v[4] != 3 || g.GPUQueries(b.Qs) != 1 {
		t.Errorf("times %v, GPU queries %d", v, g.GPUQueries(b.Qs))
	}
}
