package gen

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
)

func TestIntersect(t *testing.T) {
	if got := intersect([]uint32{1, 3, 5, 9}, []uint32{2, 3, 9, 10}); !slices.Equal(got, []uint32{3, 9}) {
		t.Fatalf("intersect = %v", got)
	}
}

// TestMeasureReport prints AND statistics of the first 10,000 TREC 2006
// queries on the indexes listed in QP_GEN_MEASURE (comma-separated); it is
// a measurement, skipped unless set.
func TestMeasureReport(t *testing.T) {
	env := os.Getenv("QP_GEN_MEASURE")
	if env == "" {
		t.Skip("QP_GEN_MEASURE not set")
	}
	f, err := os.Open(queryLogs(t)[1])
	if err != nil {
		t.Fatal(err)
	}
	qs, err := eval.ReadQueries(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var queries [][]string
	for _, q := range qs[:10000] {
		ws := Tokenize(q.Text)
		slices.Sort(ws)
		queries = append(queries, slices.Compact(ws))
	}
	for _, path := range strings.Split(env, ",") {
		x, err := index.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, err := MeasureAnd(x, queries, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Counts) == 0 {
			fmt.Printf("%s: no query has all its terms in the index\n", path)
			continue
		}
		c := slices.Clone(st.Counts)
		slices.Sort(c)
		var sum float64
		for _, v := range c {
			sum += float64(v)
		}
		lens := slices.Clone(x.DocLens())
		slices.Sort(lens)
		q := func(f float64) uint32 { return lens[min(int(f*float64(len(lens))), len(lens)-1)] }
		fmt.Printf("%s: %d docs, %d terms; length p10 %d p50 %d p90 %d p99 %d max %d\n", path, x.NumDocs(), x.NumTerms(), q(0.1), q(0.5), q(0.9), q(0.99), lens[len(lens)-1])
		fmt.Printf("%s: %d queries all terms present, %d empty; AND count mean %.1f median %d p90 %d; R 2-term %.4f; 3-term %s; 4-term %s\n",
			path, st.Queries, st.Empty, sum/float64(len(c)), c[len(c)/2], c[len(c)*9/10], st.R[2][0], pct(st.R[3]), pct(st.R[4]))
	}
}

func pct(r []float64) string {
	var s []string
	for _, v := range r {
		s = append(s, fmt.Sprintf("%.2f%%", 100*v))
	}
	return strings.Join(s, " / ")
}
