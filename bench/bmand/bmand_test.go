package bmand

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/qpengine/qp/bench/internal/testidx"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// measure runs the first limit TREC 2006 efficiency queries on x on all
// cores and returns the measured queries (in log order) and their terms.
func measure(t *testing.T, x *index.Index, m *Measurer, limit int) ([]Query, [][]string) {
	t.Helper()
	qs, an := testidx.TREC06(t, x, limit)
	out := make([]Query, len(qs))
	ok := make([]bool, len(qs))
	terms := make([][]string, len(qs))
	P := runtime.GOMAXPROCS(0)
	errs := make([]error, P)
	var wg sync.WaitGroup
	for w := range P {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc Scratch
			for i := w; i < len(qs); i += P {
				terms[i] = an.Tokens(qs[i].Text)
				if len(terms[i]) == 0 || len(terms[i]) > engine.MaxTerms {
					continue
				}
				if ok[i], errs[w] = m.Add(&sc, terms[i], &out[i]); errs[w] != nil {
					return
				}
				out[i].DF = slices.Clone(out[i].DF)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var res []Query
	var rt [][]string
	for i := range out {
		if ok[i] {
			res = append(res, out[i])
			rt = append(rt, terms[i])
		}
	}
	return res, rt
}

// check asserts the counts' invariants and, for the first checkN queries,
// the intersection size against the CPU engine's result count (those of
// at most 10,000 candidates).
func check(t *testing.T, x *index.Index, qs []Query, terms [][]string, checkN int) {
	t.Helper()
	e := engine.New(x)
	for i, q := range qs {
		if q.Results > q.Filtered || q.Filtered > q.Cands || q.Cands != int64(q.DF[0]) || !slices.IsSorted(q.DF) {
			t.Fatalf("query %v: inconsistent counts %+v", terms[i], q)
		}
		if q.BM == q.M-1 && q.Lookups != 0 {
			t.Fatalf("query %v: %d lookups with every further term a bitmap term", terms[i], q.Lookups)
		}
		if q.Tests < q.Filtered*int64(q.BM) || q.Tests > q.Cands*int64(q.BM) {
			t.Fatalf("query %v: %d tests for %d candidates, %d kept, %d bitmap terms", terms[i], q.Tests, q.Cands, q.Filtered, q.BM)
		}
		if i < checkN && q.Cands <= 10000 { // engine.Search's largest k
			k := max(int(q.Cands), 1)
			got, _, err := e.Search(engine.Query{Terms: terms[i], Mode: engine.And, K: k}, engine.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(got)) != q.Results {
				t.Fatalf("query %v: %d results, engine %d", terms[i], q.Results, len(got))
			}
		}
	}
}

// TestCACM checks the counts on a small real collection, with bitmaps at a
// density that gives many queries bitmap terms and at one that gives none.
func TestCACM(t *testing.T) {
	x := testidx.Build(t, "cacm", testidx.English)
	for _, d := range []float64{1.0 / 128, 1.0 / 16, 2} {
		m := New(x, d, 2<<30, 0)
		qs, terms := measure(t, x, m, 2000)
		if len(qs) == 0 {
			t.Fatal("no query measured")
		}
		check(t, x, qs, terms, 500)
		r := NewReport(m, []int{5, 7, 9}, DefaultCosts)
		var bm int
		for i := range qs {
			r.Add(&qs[i])
			if qs[i].BM > 0 {
				bm++
			}
		}
		if d > 1 && (bm != 0 || r.Cols != 0) {
			t.Fatalf("density %v: %d queries with bitmap terms, %d columns", d, bm, r.Cols)
		}
		if d == 1.0/128 && bm == 0 {
			t.Fatalf("density %v: no query with bitmap terms", d)
		}
		for _, c := range r.Classes {
			if c.Cands > r.All.Cands || c.Work > r.All.Work || c.Queries > r.All.Queries {
				t.Fatalf("class %s exceeds the total: %+v", c.Name, c)
			}
		}
		t.Logf("CACM, density %v:\n%s", d, r.Table())
	}
}

// TestIndex measures $QP_BMAND_INDEX on the first $QP_BMAND_QUERIES (default
// 10000) TREC 2006 queries (docs/GPU-QUERY.md "Bitmap AND of all-dense
// queries: the potential").
func TestIndex(t *testing.T) {
	path := os.Getenv("QP_BMAND_INDEX")
	if path == "" {
		t.Skip("QP_BMAND_INDEX not set")
	}
	x, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	limit := 10000
	if s := os.Getenv("QP_BMAND_QUERIES"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	var target uint32 // the collection whose device bitmaps are modeled (2 GiB of columns of its size)
	if s := os.Getenv("QP_BMAND_TARGET_DOCS"); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		target = uint32(v)
	}
	density := 1.0 / 128
	if s := os.Getenv("QP_BMAND_DENSITY"); s != "" {
		if density, err = strconv.ParseFloat(s, 64); err != nil {
			t.Fatal(err)
		}
	}
	m := New(x, density, 2<<30, target)
	qs, terms := measure(t, x, m, limit)
	check(t, x, qs, terms, 200)
	r := NewReport(m, []int{4, 5, 6, 7, 8, 9, 10}, DefaultCosts)
	for i := range qs {
		r.Add(&qs[i])
	}
	t.Logf("%s (%d documents), first %d TREC'06 queries, device bitmaps at density %g within 2 GiB at %d documents:\n%s", filepath.Base(path), x.NumDocs(), limit, density, max(target, uint32(x.NumDocs())), r.Table())
}
