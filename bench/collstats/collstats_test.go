package collstats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/qpengine/qp/bench/internal/testidx"
	"github.com/qpengine/qp/bench/queryset"
	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/internal/ref"
)

func readSet(t *testing.T, path string) QuerySet {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("queries not available: %v", err)
	}
	defer f.Close()
	qs, err := eval.ReadQueries(f)
	if err != nil {
		t.Fatal(err)
	}
	return QuerySet{Name: filepath.Base(path), Queries: qs}
}

func generated(t *testing.T, x *index.Index, kinds ...queryset.Kind) QuerySet {
	t.Helper()
	an, err := analysis.New(analysis.Options{Stem: x.Meta.Stem, Stopwords: x.Meta.Stopwords})
	if err != nil {
		t.Fatal(err)
	}
	gq, _, err := queryset.Generate(x, an.Tokens, queryset.Options{Seed: 1, N: 200, Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	s := QuerySet{Name: string(kinds[0])}
	for _, q := range gq {
		s.Queries = append(s.Queries, eval.Query{ID: q.ID, Text: q.Text()})
	}
	return s
}

// TestSelfCompare: an index compared with itself has ratio 1 on every
// defined row, and against another collection the size rows are exact.
func TestSelfCompare(t *testing.T) {
	x := testidx.Build(t, "cacm", testidx.English)
	sets := []QuerySet{
		readSet(t, filepath.Join(testidx.DataDir, "collections/cacm/queries.tsv")),
		generated(t, x, queryset.KindAnd),
		generated(t, x, queryset.KindKnown),
	}
	tb, err := Compare(x, x, "a", "b", sets, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defined := 0
	for _, r := range tb.Rows {
		if math.IsNaN(r.A) {
			continue
		}
		defined++
		if r.Ratio() != 1 {
			t.Errorf("%s / %s: %v vs %v, ratio %v", r.Section, r.Name, r.A, r.B, r.Ratio())
		}
	}
	if defined < len(tb.Rows)*3/4 {
		t.Errorf("only %d of %d rows defined", defined, len(tb.Rows))
	}
	// Known-item AND never comes back empty.
	row := func(tb *Table, sec, name string) Row {
		for _, r := range tb.Rows {
			if r.Section == sec && r.Name == name {
				return r
			}
		}
		t.Fatalf("no row %s / %s", sec, name)
		return Row{}
	}
	if r := row(tb, "queries known", "AND empty (%)"); r.A != 0 {
		t.Errorf("known-item AND empty for %v%% of queries", r.A)
	}
	for _, s := range []string{"maxscore", "bmw"} {
		r := row(tb, "queries "+sets[0].Name, "OR top-10 "+s+" postings decoded (%)")
		if !(r.A > 0 && r.A <= 100) {
			t.Errorf("%s decodes %v%% of postings", s, r.A)
		}
	}

	y := testidx.Build(t, "cisi", testidx.English)
	tb, err = Compare(x, y, "cacm", "cisi", sets[:1], Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(tb, "documents", "documents"); r.A != float64(x.NumDocs()) || r.B != float64(y.NumDocs()) || r.Ratio() != float64(y.NumDocs())/float64(x.NumDocs()) {
		t.Errorf("documents row %+v", r)
	}
	var csv, txt strings.Builder
	if err := tb.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	if err := tb.Write(&txt); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(csv.String(), "\n"); n != len(tb.Rows)+1 {
		t.Errorf("CSV has %d lines for %d rows", n, len(tb.Rows))
	}
	if !strings.Contains(txt.String(), "b/a") || !strings.Contains(csv.String(), "section,metric,cacm,cisi,ratio") {
		t.Errorf("headers missing:\n%s", txt.String()[:200])
	}
}

// tiny is a random collection of n documents whose term i has df falling
// from n/2, plus one term in every document with tf by block pattern.
func tiny(rng *rand.Rand, n, terms int) *ref.Collection {
	c := &ref.Collection{Lens: make([]uint32, n)}
	for i := range terms {
		df := max(1, n/(2+3*i))
		perm := rng.Perm(n)[:df]
		slices.Sort(perm)
		var docs, freqs []uint32
		for _, d := range perm {
			f := uint32(1 + rng.IntN(4))
			docs = append(docs, uint32(d))
			freqs = append(freqs, f)
			c.Lens[d] += f
		}
		c.Terms = append(c.Terms, fmt.Sprintf("w%02d", i))
		c.Docs, c.Freqs = append(c.Docs, docs), append(c.Freqs, freqs)
	}
	for d := range c.Lens {
		c.Lens[d] = max(c.Lens[d], 1)
	}
	return c
}

// TestAgainstBruteForce checks the document, df, AND-count and R rows
// against a direct computation on a random collection.
func TestAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 9000
	c := tiny(rng, n, 24)
	bp, _ := compress.ByName("bp128")
	x, err := c.WriteIndex(filepath.Join(t.TempDir(), "t.qp"), bp, 128)
	if err != nil {
		t.Fatal(err)
	}
	// Queries of 1-7 terms, some with an unknown term or a repeat.
	set := QuerySet{Name: "q"}
	for i := range 400 {
		m := 1 + rng.IntN(7)
		var ws []string
		for range m {
			ws = append(ws, c.Terms[rng.IntN(len(c.Terms))])
		}
		if i%10 == 0 {
			ws = append(ws, "zzz")
		}
		set.Queries = append(set.Queries, eval.Query{ID: fmt.Sprint(i), Text: strings.Join(ws, " ")})
	}
	set.Queries = append(set.Queries, eval.Query{ID: "empty", Text: "  "})
	ms, err := Measure(x, []QuerySet{set}, Options{MaxTerms: 6})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range ms {
		got[m.Section+"/"+m.Name] = m.Value
	}
	want := bruteForce(c, set, 6)
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("no metric %s", k)
			continue
		}
		if !(math.Abs(g-v) <= 1e-9*math.Max(1, math.Abs(v))) && !(math.IsNaN(g) && math.IsNaN(v)) {
			t.Errorf("%s = %v, brute force %v", k, g, v)
		}
	}
	if len(want) < 30 {
		t.Fatalf("only %d reference values", len(want))
	}
}

// bruteForce computes the reference values with maps and sorting.
func bruteForce(c *ref.Collection, s QuerySet, maxK int) map[string]float64 {
	w := map[string]float64{}
	lens := slices.Clone(c.Lens)
	slices.Sort(lens)
	nr := func(n int, q float64) int { return max(0, min(n-1, int(math.Ceil(q*float64(n)))-1)) }
	w["documents/length p50"] = float64(lens[nr(len(lens), 0.5)])
	w["documents/length p99"] = float64(lens[nr(len(lens), 0.99)])
	w["documents/length max"] = float64(lens[len(lens)-1])
	var dfs []int
	var long, total float64
	for _, d := range c.Docs {
		dfs = append(dfs, len(d))
		total += float64(len(d))
		if len(d) > 4096 {
			long += float64(len(d))
		}
	}
	sort.Ints(dfs)
	w["df/df p50"] = float64(dfs[nr(len(dfs), 0.5)])
	w["df/df max"] = float64(dfs[len(dfs)-1])
	w["df/postings in lists > 4096 (%)"] = 100 * long / total

	sec := "queries " + s.Name + "/"
	id := map[string]int{}
	for i, t := range c.Terms {
		id[t] = i
	}
	var ands, kands []float64
	var nq, known float64
	perK := map[int]float64{}
	rsum := map[[2]int]float64{}
	rs := map[[2]int][]float64{} // every ratio, for the standard error
	for _, q := range s.Queries {
		ws := strings.Fields(q.Text)
		if len(ws) == 0 {
			continue
		}
		nq++
		var ts []int
		unknown := false
		for _, wd := range ws {
			i, ok := id[wd]
			if !ok {
				unknown = true
				continue
			}
			if !slices.Contains(ts, i) {
				ts = append(ts, i)
			}
		}
		if unknown {
			ands = append(ands, 0)
			continue
		}
		known++
		// Ascending df, ties by term ID (term IDs follow the sorted terms).
		sort.Slice(ts, func(a, b int) bool {
			if len(c.Docs[ts[a]]) != len(c.Docs[ts[b]]) {
				return len(c.Docs[ts[a]]) < len(c.Docs[ts[b]])
			}
			return ts[a] < ts[b]
		})
		set := map[uint32]bool{}
		for _, d := range c.Docs[ts[0]] {
			set[d] = true
		}
		k := len(ts)
		for x := 1; x < k; x++ {
			if k <= maxK {
				v := float64(len(set)) / float64(len(c.Docs[ts[x]]))
				rsum[[2]int{k, x}] += v
				rs[[2]int{k, x}] = append(rs[[2]int{k, x}], v)
			}
			next := map[uint32]bool{}
			for _, d := range c.Docs[ts[x]] {
				if set[d] {
					next[d] = true
				}
			}
			set = next
		}
		if k <= maxK {
			perK[k]++
		}
		ands = append(ands, float64(len(set)))
		kands = append(kands, float64(len(set)))
	}
	slices.Sort(ands)
	slices.Sort(kands)
	w[sec+"AND results median (all terms known)"] = kands[nr(len(kands), 0.5)]
	var sum float64
	for _, v := range ands {
		sum += v
	}
	w[sec+"queries (non-empty after analysis)"] = nq
	w[sec+"all terms in the index (%)"] = 100 * known / nq
	w[sec+"AND results median"] = ands[nr(len(ands), 0.5)]
	w[sec+"AND results mean"] = sum / nq
	for k := 2; k <= maxK; k++ {
		w[sec+fmt.Sprintf("k=%d queries (%% of all-known)", k)] = 100 * perK[k] / known
		for x := 1; x < k; x++ {
			v := math.NaN()
			if perK[k] > 0 {
				v = 100 * rsum[[2]int{k, x}] / perK[k]
			}
			w[sec+fmt.Sprintf("R k=%d x=%d (%%)", k, x)] = v
			// Standard error by two passes: mean, then squared deviations.
			se := math.NaN()
			if vs := rs[[2]int{k, x}]; len(vs) >= 2 {
				m := rsum[[2]int{k, x}] / float64(len(vs))
				var d2 float64
				for _, r := range vs {
					d2 += (r - m) * (r - m)
				}
				se = 100 * math.Sqrt(d2/float64(len(vs)-1)/float64(len(vs)))
			}
			w[sec+fmt.Sprintf("R k=%d x=%d s.e. (%%)", k, x)] = se
		}
	}
	return w
}

// TestPruningShares: with k above N nothing can be pruned, so MaxScore
// and BMW decode every block and posting (100%) and score every document
// of the union; with k = 1 they do less. This pins both the counters and
// their denominators.
func TestPruningShares(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	c := tiny(rng, 9000, 12)
	bp, _ := compress.ByName("bp128")
	x, err := c.WriteIndex(filepath.Join(t.TempDir(), "t.qp"), bp, 128)
	if err != nil {
		t.Fatal(err)
	}
	set := QuerySet{Name: "q", Queries: []eval.Query{{ID: "1", Text: "w00 w01 w05"}, {ID: "2", Text: "w00 w02 w03 w09 nope"}, {ID: "3", Text: "w01 w11"}}}
	var union, total float64
	for _, q := range set.Queries {
		seen := map[uint32]bool{}
		for _, w := range strings.Fields(q.Text) {
			i := slices.Index(c.Terms, w)
			if i < 0 {
				continue
			}
			total += float64(len(c.Docs[i]))
			for _, d := range c.Docs[i] {
				seen[d] = true
			}
		}
		union += float64(len(seen))
	}
	for _, k := range []int{10000, 1} {
		ms, err := Measure(x, []QuerySet{set}, Options{K: k})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if strings.Contains(m.Name, "documents scored") {
				// Nothing pruned: every document of the union is scored.
				if want := 100 * union / total; k == 10000 && math.Abs(m.Value-want) > 1e-9 {
					t.Errorf("k=%d %s = %v, want %v", k, m.Name, m.Value, want)
				}
				if k == 1 && !(m.Value > 0 && m.Value < 100*union/total) {
					t.Errorf("k=%d %s = %v, want in (0, %v)", k, m.Name, m.Value, 100*union/total)
				}
				continue
			}
			if !strings.HasPrefix(m.Name, "OR top-") {
				continue
			}
			if k == 10000 && m.Value != 100 {
				t.Errorf("k=%d %s = %v, want 100", k, m.Name, m.Value)
			}
			if k == 1 && !(m.Value > 0 && m.Value < 100) {
				t.Errorf("k=%d %s = %v, want in (0, 100)", k, m.Name, m.Value)
			}
		}
	}
}

// TestBlockMaxSpread: equal lengths and tf give flat block maxima (CV 0,
// p90/max 1); one heavy block raises the spread.
func TestBlockMaxSpread(t *testing.T) {
	const n = 2048
	mk := func(heavy bool) []Metric {
		c := &ref.Collection{Terms: []string{"a"}, Lens: make([]uint32, n)}
		var docs, freqs []uint32
		for d := range n {
			docs = append(docs, uint32(d))
			f := uint32(1)
			if heavy && d < 128 {
				f = 20
			}
			freqs = append(freqs, f)
			c.Lens[d] = 100
		}
		c.Docs, c.Freqs = [][]uint32{docs}, [][]uint32{freqs}
		bp, _ := compress.ByName("bp128")
		x, err := c.WriteIndex(filepath.Join(t.TempDir(), "t.qp"), bp, 128)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := blockMaxMetrics(x)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	flat := mk(false)
	if flat[0].Value != 100 || flat[1].Value != 1 || flat[2].Value != 0 {
		t.Errorf("flat list: %+v", flat)
	}
	heavy := mk(true)
	if !(heavy[1].Value < 1 && heavy[2].Value > 0.1) {
		t.Errorf("one heavy block: %+v", heavy)
	}
}

// TestReencodeSizes: re-encoding a bp128 index (no bitmaps) with bp128
// gives back its own docID and frequency bytes.
func TestReencodeSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := tiny(rng, 5000, 20)
	bp, _ := compress.ByName("bp128")
	x, err := c.WriteIndex(filepath.Join(t.TempDir(), "t.qp"), bp, 128)
	if err != nil {
		t.Fatal(err)
	}
	var db, fb int64
	for i := 0; i < x.NumTerms(); i++ {
		l, err := x.List(i)
		if err != nil {
			t.Fatal(err)
		}
		db += int64(len(l.DocBytes()))
		fb += int64(len(l.FreqBytes()))
	}
	gd, gf, err := ReencodeSizes(x, bp)
	if err != nil {
		t.Fatal(err)
	}
	if gd != db || gf != fb {
		t.Errorf("re-encoded %d/%d bytes, index holds %d/%d", gd, gf, db, fb)
	}
}

func TestFormatAndRatio(t *testing.T) {
	for v, want := range map[float64]string{3: "3", 126236: "126236", 0.06745: "0.06745", 33.71: "33.71", 12345.67: "12345.7", math.NaN(): "-"} {
		if got := Format(v); got != want {
			t.Errorf("Format(%v) = %q, want %q", v, got, want)
		}
	}
	if r := (Row{A: 0, B: 0}).Ratio(); r != 1 {
		t.Errorf("0/0 ratio %v", r)
	}
	if r := (Row{A: 0, B: 2}).Ratio(); !math.IsNaN(r) {
		t.Errorf("2/0 ratio %v", r)
	}
	if _, err := Measure(nil, nil, Options{K: -1}); err == nil {
		t.Error("k = -1 accepted")
	}
}

// TestGeneratedPerIndex: --generate draws each index's own set: known-item
// AND is never empty on either, though the two vocabularies differ.
func TestGeneratedPerIndex(t *testing.T) {
	x := testidx.Build(t, "cacm", testidx.English)
	y := testidx.Build(t, "cisi", testidx.English)
	tb, err := Compare(x, y, "cacm", "cisi", nil, Options{Generate: []queryset.Kind{queryset.KindKnown, queryset.KindAnd}, GenN: 40})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, r := range tb.Rows {
		switch r.Section + "/" + r.Name {
		case "queries generated known/AND empty (%)":
			seen++
			if r.A != 0 || r.B != 0 {
				t.Errorf("known-item AND empty: %v%%, %v%%", r.A, r.B)
			}
		case "queries generated known/queries (non-empty after analysis)", "queries generated and/queries (non-empty after analysis)":
			seen++
			if r.A != 40 || r.B != 40 {
				t.Errorf("%s: %v, %v queries, want 40", r.Section, r.A, r.B)
			}
		case "queries generated and/all terms in the index (%)":
			seen++
			if r.A != 100 || r.B != 100 {
				t.Errorf("generated terms missing from their own index: %v%%, %v%%", r.A, r.B)
			}
		}
	}
	if seen != 4 {
		t.Errorf("%d of 4 generated-set rows found", seen)
	}
}
