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

// msEst is what the shortest-list MaxScore OR (orms.go) does for one OR
// query, simulated on the CPU: the shortest list's documents are the
// candidates, every other list is probed for them (a miss adds nothing),
// and the top k of those exact scores is the answer when the certificate
// holds (fold of the other terms' maxima < the k-th score).
type msEst struct {
	m         int     // known terms
	df0       int64   // the shortest list's length
	essential int     // lists past the longest prefix (ascending max) whose maxima sum below thetaFull
	cert      bool    // the candidates' top k is the exact answer (orms.go's certificate)
	thetaOne  float32 // k-th best term-0 score among the candidates (0: fewer than k)
	thetaFull float32 // k-th best full score among them
	tiled     int64   // postings of all lists (what the tiles decode when no tile is skipped)
	probes    int64   // candidate x other-list probes (no pruning)
	decoded   int64   // postings decoded: the shortest list + the probed blocks
	probesP   int64   // probes when a candidate is dropped once partial + remaining maxima < thetaOne
	decodedP  int64   // postings decoded then
	top       []topk.Result
}

// estimateMS runs the simulation for q (Mode Or) on x.
func estimateMS(t testing.TB, x *index.Index, q engine.Query) msEst {
	terms, _ := engine.CanonicalTerms(nil, x, q)
	var e msEst
	e.m = len(terms)
	if e.m == 0 {
		return e
	}
	k1p1, norms := x.Params().K1p1(), x.Norms()
	lists := make([]index.List, e.m)
	maxs := make([]float32, e.m)
	idf := make([]float32, e.m)
	for j, tm := range terms {
		l, err := x.List(tm.ID)
		if err != nil {
			t.Fatal(err)
		}
		lists[j], idf[j] = l, x.IDF(tm.DF)
		maxs[j] = float32(tm.W * l.MaxScore)
		e.tiled += int64(tm.DF)
	}
	docs, freqs, err := lists[0].Decode(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := len(docs)
	e.df0 = int64(n)
	sc := make([]float32, n)
	for i, d := range docs {
		sc[i] = float32(terms[0].W * score.Term(idf[0], k1p1, freqs[i], norms[d]))
	}
	kth := func(v []float32) float32 {
		if len(v) < q.K {
			return 0
		}
		s := slices.Clone(v)
		slices.SortFunc(s, func(a, b float32) int { return -cmpF(a, b) })
		return s[q.K-1]
	}
	e.thetaOne = kth(sc)
	// rest[j] = fold of the maxima of terms j..m-1 added to a partial
	// score: the bound is computed per candidate (fadd is monotone).
	alive := make([]bool, n)
	for i := range alive {
		alive[i] = true
	}
	e.decoded, e.decodedP = int64(n), int64(n)
	for j := 1; j < e.m; j++ {
		var c, cp index.Cursor
		c.Reset(lists[j])
		cp.Reset(lists[j])
		lastBlk, lastBlkP := -1, -1
		for i, d := range docs {
			got := c.NextGEQ(d)
			e.probes++
			if b := c.Block(); got != index.Terminated && b != lastBlk {
				lastBlk = b
				e.decoded += int64(lists[j].BlockLen(b))
			}
			tf := uint32(0)
			if got == d {
				tf = c.Freq()
			}
			if alive[i] {
				gp := cp.NextGEQ(d)
				e.probesP++
				if b := cp.Block(); gp != index.Terminated && b != lastBlkP {
					lastBlkP = b
					e.decodedP += int64(lists[j].BlockLen(b))
				}
			}
			if tf != 0 {
				sc[i] += float32(terms[j].W * score.Term(idf[j], k1p1, tf, norms[d]))
			}
			if alive[i] {
				bound := sc[i]
				for r := j + 1; r < e.m; r++ {
					bound += maxs[r]
				}
				alive[i] = bound >= e.thetaOne
			}
		}
		if err := c.Err(); err != nil {
			t.Fatal(err)
		}
	}
	e.thetaFull = kth(sc)
	// Essential lists under thetaFull (ascending max, as engine.maxScore).
	ord := slices.Clone(maxs)
	slices.Sort(ord)
	sum, pre := 0.0, 0
	for pre < e.m && sum+float64(ord[pre]) < float64(e.thetaFull) {
		sum += float64(ord[pre])
		pre++
	}
	e.essential = e.m - pre
	var other float32
	for j := 1; j < e.m; j++ {
		other += maxs[j]
	}
	e.cert = e.m == 1 || (n >= q.K && other < e.thetaFull)
	var h topk.Heap
	h.Reset(q.K)
	for i, d := range docs {
		h.Push(d, sc[i])
	}
	e.top = h.Results(nil)
	return e
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
	var nq, ess1, ess2, ess3, cert, certRoute int
	var tiled, probes, decoded, probesP, decodedP, tiledCert, decodedCert int64
	for _, f := range fq {
		q := engine.Query{ID: f.ID, Terms: an.Tokens(f.Text), Mode: engine.Or, K: 10}
		e := estimateMS(t, x, q)
		if e.m == 0 {
			continue
		}
		nq++
		switch {
		case e.essential <= 1:
			ess1++
		case e.essential == 2:
			ess2++
		default:
			ess3++
		}
		tiled += e.tiled
		probes += e.probes
		decoded += e.decoded
		probesP += e.probesP
		decodedP += e.decodedP
		if !e.cert {
			continue
		}
		cert++
		tiledCert += e.tiled
		decodedCert += e.decoded
		if orMSRoute(e.tiled, e.df0, e.m) {
			certRoute++
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
	t.Logf("%s, %d queries with a known term (top-10 OR)", path, nq)
	t.Logf("essential lists under the candidates' 10th score: 1: %.1f%%, 2: %.1f%%, >=3: %.1f%%",
		pct(int64(ess1), int64(nq)), pct(int64(ess2), int64(nq)), pct(int64(ess3), int64(nq)))
	t.Logf("certified (shortest list's top 10 is exact): %.1f%% of queries", pct(int64(cert), int64(nq)))
	t.Logf("all queries: tiled postings %d; probes %d (%.1f%%), decoded %d (%.1f%%); pruned by the 10th term-0 score: probes %d (%.1f%%), decoded %d (%.1f%%)",
		tiled, probes, pct(probes, tiled), decoded, pct(decoded, tiled), probesP, pct(probesP, tiled), decodedP, pct(decodedP, tiled))
	t.Logf("certified queries: tiled postings %d, decoded %d (%.1f%%); routed to maxscore by orMSRoute: %d of %d", tiledCert, decodedCert, pct(decodedCert, tiledCert), certRoute, cert)
}
