package gpu

import (
	"math"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/score"
	"github.com/qpengine/qp/topk"
)

// msEst is what OrMaxScore (orms.go) does for one OR query, simulated on
// the CPU, when every pass is run (routing aside): pass e takes list e's
// documents as candidates, probes lists e+1..m-1 for them (a miss adds
// nothing) and scores them over terms e..m-1; the merge of passes 0..e's
// top k (a document's first entry kept) is the answer when the maxima of
// terms e+1..m-1 fold below its k-th score (e+1 essential lists).
type msEst struct {
	m         int      // known terms
	essential int      // lists past the longest prefix (ascending max) whose maxima sum below the final k-th score
	cert      int      // passes needed for a certified answer (0: none within orMSPasses)
	df        []int64  // the lists' lengths
	tiled     int64    // postings of all lists (what the tiles decode when no tile is skipped)
	pass      []msPass // the passes run
	top       []topk.Result
}

// msPass is one simulated pass over lists[from:] of a query.
type msPass struct {
	probes, decoded   int64 // candidate x list probes and postings decoded (candidates' list + probed blocks), no pruning
	probesP, decodedP int64 // the same when a candidate is dropped once partial + remaining maxima < theta0
	top               []topk.Result
}

// msTerm is one canonical term of a simulated query.
type msTerm struct {
	l      index.List
	w, idf float32
	max    float32
	df     int64
}

// simulate runs one pass: candidates = ts[0]'s documents, scored over ts
// in order; theta0 = their k-th best ts[0] score.
func simulate(t testing.TB, x *index.Index, ts []msTerm, k int) msPass {
	var p msPass
	k1p1, norms := x.Params().K1p1(), x.Norms()
	docs, freqs, err := ts[0].l.Decode(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := len(docs)
	sc := make([]float32, n)
	for i, d := range docs {
		sc[i] = float32(ts[0].w * score.Term(ts[0].idf, k1p1, freqs[i], norms[d]))
	}
	theta0 := kthBest(sc, k)
	alive := make([]bool, n)
	for i := range alive {
		alive[i] = true
	}
	p.decoded, p.decodedP = int64(n), int64(n)
	for j := 1; j < len(ts); j++ {
		var c, cp index.Cursor
		c.Reset(ts[j].l)
		cp.Reset(ts[j].l)
		lastBlk, lastBlkP := -1, -1
		for i, d := range docs {
			got := c.NextGEQ(d)
			p.probes++
			if b := c.Block(); got != index.Terminated && b != lastBlk {
				lastBlk = b
				p.decoded += int64(ts[j].l.BlockLen(b))
			}
			tf := uint32(0)
			if got == d {
				tf = c.Freq()
			}
			if alive[i] {
				gp := cp.NextGEQ(d)
				p.probesP++
				if b := cp.Block(); gp != index.Terminated && b != lastBlkP {
					lastBlkP = b
					p.decodedP += int64(ts[j].l.BlockLen(b))
				}
			}
			if tf != 0 {
				sc[i] += float32(ts[j].w * score.Term(ts[j].idf, k1p1, tf, norms[d]))
			}
			if alive[i] {
				bound := sc[i]
				for r := j + 1; r < len(ts); r++ {
					bound += ts[r].max
				}
				alive[i] = bound >= theta0
			}
		}
		if err := c.Err(); err != nil {
			t.Fatal(err)
		}
	}
	var h topk.Heap
	h.Reset(k)
	for i, d := range docs {
		h.Push(d, sc[i])
	}
	p.top = h.Results(nil)
	return p
}

// kthBest is the k-th largest of v (0 with fewer than k).
func kthBest(v []float32, k int) float32 {
	if len(v) < k {
		return 0
	}
	s := slices.Clone(v)
	slices.SortFunc(s, func(a, b float32) int { return -cmpF(a, b) })
	return s[k-1]
}

// foldMax folds the maxima of ts with float32 adds (orMSCertified's bound).
func foldMax(ts []msTerm) float32 {
	var f float32
	for _, t := range ts {
		f += t.max
	}
	return f
}

// estimateMS runs the simulation for q (Mode Or) on x.
func estimateMS(t testing.TB, x *index.Index, q engine.Query) msEst {
	terms, _ := engine.CanonicalTerms(nil, x, q)
	var e msEst
	e.m = len(terms)
	if e.m == 0 {
		return e
	}
	ts := make([]msTerm, e.m)
	for j, tm := range terms {
		l, err := x.List(tm.ID)
		if err != nil {
			t.Fatal(err)
		}
		ts[j] = msTerm{l: l, w: tm.W, idf: x.IDF(tm.DF), max: float32(tm.W * l.MaxScore), df: int64(tm.DF)}
		e.df = append(e.df, int64(tm.DF))
		e.tiled += int64(tm.DF)
	}
	for p := 0; p < min(orMSPasses, e.m); p++ {
		ps := simulate(t, x, ts[p:], q.K)
		e.pass = append(e.pass, ps)
		e.top = mergeTop(e.top, ps.top, q.K)
		if p+1 == e.m || (len(e.top) >= q.K && foldMax(ts[p+1:]) < e.top[q.K-1].Score) {
			e.cert = p + 1
			break
		}
	}
	final := float32(0)
	if len(e.top) >= q.K {
		final = e.top[q.K-1].Score
	}
	ord := make([]float32, e.m)
	for j := range ts {
		ord[j] = ts[j].max
	}
	slices.Sort(ord)
	sum, pre := 0.0, 0
	for pre < e.m && sum+float64(ord[pre]) < float64(final) {
		sum += float64(ord[pre])
		pre++
	}
	e.essential = e.m - pre
	return e
}

// routed reports whether orMSRoute sends e's query through its first
// e.cert passes.
func (e *msEst) routed() bool {
	var cand int64
	for p := 0; p < e.cert; p++ {
		cand += e.df[p]
		if !orMSRoute(e.tiled, cand, e.m, p) {
			return false
		}
	}
	return true
}

// mergeTop is orms.go's merge of pass A's and B's top k (rank order): B's
// entries for documents A holds are dropped (A's score is exact).
func mergeTop(a, b []topk.Result, k int) []topk.Result {
	out := slices.Clone(a)
	for _, r := range b {
		if !slices.ContainsFunc(a, func(x topk.Result) bool { return x.Doc == r.Doc }) {
			out = append(out, r)
		}
	}
	topk.Sort(out)
	return out[:min(k, len(out))]
}

func cmpF(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestOrMSEstimate prints, for the index QP_ORMS_INDEX and the queries
// QP_ORMS_QUERIES (first QP_ORMS_N, default 2000; top-10 OR), the shares
// of queries with 1, 2 and >= 3 essential lists under the candidates' k-th
// score, the share the certificate answers, and the postings probed and
// decoded against the tiles'; it asserts that every certified answer is
// the CPU engine's, bit for bit. Skipped without the variables.
func TestOrMSEstimate(t *testing.T) {
	path, qpath := os.Getenv("QP_ORMS_INDEX"), os.Getenv("QP_ORMS_QUERIES")
	if path == "" || qpath == "" {
		t.Skip("QP_ORMS_INDEX and QP_ORMS_QUERIES not set")
	}
	limit := 2000
	if s := os.Getenv("QP_ORMS_N"); s != "" {
		limit, _ = strconv.Atoi(s)
	}
	x, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	an, err := x.Analyzer()
	if err != nil {
		t.Fatal(err)
	}
	fq, err := eval.ReadQueryFile(qpath, limit)
	if err != nil {
		t.Fatal(err)
	}
	cpu := engine.New(x)
	var nq int
	var ess [4]int // 1, 2, 3, >= 4 essential lists
	var cert, route [orMSPasses + 1]int
	var tiledBy [orMSPasses + 1]int64 // tiled postings of the queries answered after p passes (0: none)
	var work [orMSPasses + 1]msPass   // their passes' work
	var tiled int64
	for _, f := range fq {
		q := engine.Query{ID: f.ID, Terms: an.Tokens(f.Text), Mode: engine.Or, K: 10}
		e := estimateMS(t, x, q)
		if e.m == 0 {
			continue
		}
		nq++
		ess[min(max(e.essential, 1), 4)-1]++
		tiled += e.tiled
		cert[e.cert]++
		tiledBy[e.cert] += e.tiled
		if e.cert == 0 {
			continue
		}
		if e.routed() {
			route[e.cert]++
		}
		for _, p := range e.pass {
			w := &work[e.cert]
			w.probes += p.probes
			w.decoded += p.decoded
			w.probesP += p.probesP
			w.decodedP += p.decodedP
		}
		want, _, err := cpu.Search(q, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != len(e.top) {
			t.Fatalf("query %s: %d certified results, CPU %d", q.ID, len(e.top), len(want))
		}
		for i := range want {
			if want[i].Doc != e.top[i].Doc || math.Float32bits(want[i].Score) != math.Float32bits(e.top[i].Score) {
				t.Fatalf("query %s rank %d: certified %v, CPU %v", q.ID, i, e.top[i], want[i])
			}
		}
	}
	if nq == 0 {
		t.Fatal("no query with a known term")
	}
	pct := func(a, b int64) float64 { return 100 * float64(a) / float64(max(b, 1)) }
	t.Logf("%s, %d queries with a known term (top-10 OR), %d tiled postings", path, nq, tiled)
	t.Logf("essential lists under the final 10th score: 1: %.1f%%, 2: %.1f%%, 3: %.1f%%, >=4: %.1f%%",
		pct(int64(ess[0]), int64(nq)), pct(int64(ess[1]), int64(nq)), pct(int64(ess[2]), int64(nq)), pct(int64(ess[3]), int64(nq)))
	for p := 1; p <= orMSPasses; p++ {
		w := work[p]
		t.Logf("answered after %d pass(es): %.1f%% of the queries, %.1f%% of the tiled postings; routed by orMSRoute: %d of %d; their passes probe %.2f%% of their tiled postings and decode %.2f%% (with theta0 pruning: %.2f%%, %.2f%%)",
			p, pct(int64(cert[p]), int64(nq)), pct(tiledBy[p], tiled), route[p], cert[p],
			pct(w.probes, tiledBy[p]), pct(w.decoded, tiledBy[p]), pct(w.probesP, tiledBy[p]), pct(w.decodedP, tiledBy[p]))
	}
	t.Logf("not answered within %d passes: %.1f%% of the queries, %.1f%% of the tiled postings", orMSPasses,
		pct(int64(cert[0]), int64(nq)), pct(tiledBy[0], tiled))
}
