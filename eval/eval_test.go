package eval

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }

func mustQrels(t *testing.T, s string) Qrels {
	t.Helper()
	q, err := ReadQrels(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func mustRun(t *testing.T, s string) Run {
	t.Helper()
	r, err := ReadRun(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A hand-computed example covering graded relevance, unjudged documents,
// score ties, a judged query missing from the run, a run query without
// judgments and a judged query without relevant documents.
const handQrels = `
# comment
q1 0 A 1
q1 0 B 1
q1 0 C 2
q1 0 D 0
q2 0 d1 1
q2 0 d9 1
q3 0 Z 1
q5 0 N 0
`

const handRun = `q1 Q0 X 1 3.0 t
q1 Q0 A 2 2.0 t
q1 Q0 D 3 1.5 t
q1 Q0 C 4 1.0 t
q2 Q0 d1 1 5 t
q2 Q0 d2 2 5 t
q4 Q0 A 1 1 t
q5 Q0 N 1 1 t
`

func TestHandComputed(t *testing.T) {
	qrels, run := mustQrels(t, handQrels), mustRun(t, handRun)
	s := Evaluate(run, qrels)

	// q1: ranking X(unjudged) A(1) D(0) C(2); R = 3 (A, B, C).
	//   AP = (1/2 + 2/4) / 3 = 1/3; P_5 = 2/5; P_10 = 2/10.
	//   DCG_10 = 1/log2(3) + 2/log2(5); IDCG_10 = 2/log2(2) + 1/log2(3) + 1/log2(4).
	// q2: tie at score 5: trec_eval ranks d2 before d1 (docid descending),
	//   so d1 is at rank 2: AP = (1/2)/2 = 0.25, ndcg = (1/log2 3)/(1 + 1/log2 3).
	// q3: judged, not in the run: left out (Missing).
	// q4: in the run, not judged: ignored (Unjudged).
	// q5: judged (non-relevant only) and in the run: evaluated, all 0.
	if s.NumQ != 3 {
		t.Fatalf("num_q = %d, want 3 (q1, q2, q5)", s.NumQ)
	}
	wantQ := []string{"q1", "q2", "q5"}
	for i, q := range s.Queries {
		if q.QID != wantQ[i] {
			t.Fatalf("query %d = %s, want %s", i, q.QID, wantQ[i])
		}
	}
	q1, q2, q5 := s.Queries[0], s.Queries[1], s.Queries[2]
	ndcg1 := (1/math.Log2(3) + 2/math.Log2(5)) / (2 + 1/math.Log2(3) + 1/math.Log2(4))
	ndcg2 := (1 / math.Log2(3)) / (1 + 1/math.Log2(3))
	checks := []struct {
		name      string
		got, want float64
	}{
		{"q1 AP", q1.AP, 1.0 / 3},
		{"q1 P_5", q1.P[0], 0.4},
		{"q1 P_10", q1.P[1], 0.2},
		{"q1 ndcg_cut_10", q1.NDCG[1], ndcg1},
		{"q1 ndcg_cut_5", q1.NDCG[0], ndcg1},
		{"q2 AP", q2.AP, 0.25},
		{"q2 P_10", q2.P[1], 0.1},
		{"q2 ndcg_cut_10", q2.NDCG[1], ndcg2},
		{"q5 AP", q5.AP, 0},
		{"q5 ndcg_cut_10", q5.NDCG[1], 0},
		{"map", s.MAP, (1.0/3 + 0.25 + 0) / 3},
		{"P_10", s.Precision(10), (0.2 + 0.1 + 0) / 3},
		{"ndcg_cut_10", s.NDCGAt(10), (ndcg1 + ndcg2 + 0) / 3},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %.15g, want %.15g", c.name, c.got, c.want)
		}
	}
	if s.NumRet != 4+2+1 || s.NumRel != 3+2+0 || s.NumRelRet != 2+1+0 {
		t.Errorf("num_ret/rel/rel_ret = %d/%d/%d, want 7/5/3", s.NumRet, s.NumRel, s.NumRelRet)
	}
	if strings.Join(s.Missing, ",") != "q3" || strings.Join(s.Unjudged, ",") != "q4" {
		t.Errorf("missing %v unjudged %v, want [q3] [q4]", s.Missing, s.Unjudged)
	}
	if !math.IsNaN(s.Precision(7)) {
		t.Errorf("P_7 was not requested but is %v", s.Precision(7))
	}

	// The rank column puts d1 first: q2 AP = 1/2.
	r, err := EvaluateWith(run, qrels, Options{Order: OrderRank})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Queries[1].AP; !near(got, 0.5) {
		t.Errorf("OrderRank q2 AP = %v, want 0.5", got)
	}

	// -c: q3 counts as 0 and num_rel includes its relevant document.
	c, err := EvaluateWith(run, qrels, Options{Complete: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.NumQ != 4 || !near(c.MAP, (1.0/3+0.25)/4) || c.NumRel != 6 || !c.Queries[2].Missing {
		t.Errorf("-c: num_q %d map %v num_rel %d, want 4 %v 6 with q3 missing", c.NumQ, c.MAP, c.NumRel, (1.0/3+0.25)/4)
	}

	// -l 2: only C is relevant in q1 (rank 4): AP = (1/4)/1; nDCG unchanged.
	l, err := EvaluateWith(run, qrels, Options{RelevanceLevel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Queries[0]; !near(got.AP, 0.25) || got.NumRel != 1 || !near(got.NDCG[1], ndcg1) {
		t.Errorf("-l 2 q1: AP %v num_rel %d ndcg %v", got.AP, got.NumRel, got.NDCG[1])
	}

	// -M 2: q1 ranks X A only: AP = (1/2)/3.
	m, err := EvaluateWith(run, qrels, Options{MaxDocs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Queries[0]; !near(got.AP, 1.0/6) || got.NumRet != 2 {
		t.Errorf("-M 2 q1: AP %v num_ret %d", got.AP, got.NumRet)
	}

	if _, err := EvaluateWith(run, qrels, Options{Cutoffs: []int{0}}); err == nil {
		t.Error("cutoff 0 accepted")
	}
}

func TestNDCGGradedIdeal(t *testing.T) {
	// Ideal ordering 3,2,2,1 cut at 3; run finds the level-1 doc first.
	qrels := mustQrels(t, "1 0 a 3\n1 0 b 2\n1 0 c 2\n1 0 d 1\n1 0 e 0\n")
	run := Run{"1": {{DocID: "d", Score: 4}, {DocID: "e", Score: 3}, {DocID: "a", Score: 2}}}
	s, err := EvaluateWith(run, qrels, Options{Cutoffs: []int{3}})
	if err != nil {
		t.Fatal(err)
	}
	want := (1 + 3/math.Log2(4)) / (3 + 2/math.Log2(3) + 2/math.Log2(4))
	if got := s.NDCGAt(3); !near(got, want) {
		t.Errorf("ndcg_cut_3 = %v, want %v", got, want)
	}
	// Nothing relevant found within the cutoff, fewer docs than k.
	if got := s.Precision(10); !near(got, 2.0/10) {
		t.Errorf("P_10 = %v, want 0.2", got)
	}
}

func TestInMemoryDuplicates(t *testing.T) {
	qrels := mustQrels(t, "1 0 a 1\n")
	run := Run{"1": {{DocID: "a", Score: 2}, {DocID: "a", Score: 1}, {DocID: "b", Score: 0}}}
	s := Evaluate(run, qrels)
	if s.Duplicates != 1 || s.NumRet != 2 || !near(s.MAP, 1) {
		t.Errorf("duplicates %d num_ret %d map %v", s.Duplicates, s.NumRet, s.MAP)
	}
}

func TestReadErrors(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"qrels fields", "1 0 a 1\n\n1 0 b\n", "line 3"},
		{"qrels rel", "1 0 a x\n", "line 1"},
		{"qrels dup", "1 0 a 1\n1 0 a 0\n", "line 2"},
	} {
		_, err := ReadQrels(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want mention of %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct{ name, in, want string }{
		{"run fields", "1 Q0 a 1 2 t\n1 Q0 b 2 1\n", "line 2"},
		{"run rank", "1 Q0 a one 2 t\n", "line 1"},
		{"run score", "1 Q0 a 1 high t\n", "line 1"},
		{"run dup", "1 Q0 a 1 2 t\n2 Q0 a 1 2 t\n1 Q0 a 2 1 t\n", "line 3"},
	} {
		_, err := ReadRun(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want mention of %q", c.name, err, c.want)
		}
	}
}

func TestWriteRunRoundTrip(t *testing.T) {
	res := []RunEntry{{DocID: "d7", Score: 12.0330004}, {DocID: "d3", Score: 9.90139961}, {DocID: "d1", Score: 1.234567e-5}, {DocID: "d2", Score: 2e6}}
	var b bytes.Buffer
	if err := WriteRun(&b, "42", res, "qp"); err != nil {
		t.Fatal(err)
	}
	want := "42 Q0 d7 1 12.033 qp\n42 Q0 d3 2 9.9014 qp\n42 Q0 d1 3 1.23457e-05 qp\n42 Q0 d2 4 2e+06 qp\n"
	if b.String() != want {
		t.Fatalf("WriteRun wrote\n%s\nwant\n%s", b.String(), want)
	}
	run, err := ReadRun(&b)
	if err != nil {
		t.Fatal(err)
	}
	if got := run["42"]; len(got) != 4 || got[2].DocID != "d1" || got[2].Rank != 3 || got[1].Score != 9.9014 {
		t.Errorf("round trip: %+v", got)
	}
	if err := WriteRun(&b, "4 2", res, "qp"); err == nil {
		t.Error("qid with a space accepted")
	}
	if err := WriteRun(&b, "4", []RunEntry{{DocID: ""}}, "qp"); err == nil {
		t.Error("empty docid accepted")
	}
}

func TestReadQueries(t *testing.T) {
	in := "1:pierson s twin lakes marina\r\n\n2\tWhat: colons in text\n3:a\tb\n 4 : \n"
	qs, err := ReadQueries(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{
		{ID: "1", Text: "pierson s twin lakes marina", Line: 1},
		{ID: "2", Text: "What: colons in text", Line: 3},
		{ID: "3", Text: "a\tb", Line: 4},
		{ID: "4", Text: "", Line: 5},
	}
	if len(qs) != len(want) {
		t.Fatalf("got %d queries %+v, want %d", len(qs), qs, len(want))
	}
	for i := range want {
		if qs[i] != want[i] {
			t.Errorf("query %d = %+v, want %+v", i, qs[i], want[i])
		}
	}
	for _, bad := range []struct{ in, want string }{
		{"1:a\nno separator here\n", "line 2"},
		{":text\n", "line 1"},
		{"a b:text\n", "line 1"},
	} {
		if _, err := ReadQueries(strings.NewReader(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: err %v, want mention of %q", bad.in, err, bad.want)
		}
	}
}

func TestFormatSummary(t *testing.T) {
	s := Evaluate(mustRun(t, handRun), mustQrels(t, handQrels))
	var b bytes.Buffer
	if err := FormatSummary(&b, s); err != nil {
		t.Fatal(err)
	}
	want := "map                   \tall\t0.1944\n" +
		"P_10                  \tall\t0.1000\n" +
		"ndcg_cut_10           \tall\t"
	if !strings.HasPrefix(b.String(), want) {
		t.Fatalf("summary:\n%s", b.String())
	}
	for _, line := range []string{"num_q                 \tall\t3\n", "num_ret               \tall\t7\n",
		"num_rel               \tall\t5\n", "num_rel_ret           \tall\t3\n", "# 1 judged queries"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("summary lacks %q:\n%s", line, b.String())
		}
	}
}

// dataDir is the project's shared data, ../../shared/data from this package.
func dataDir(t *testing.T, rel ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{"..", "..", "shared", "data"}, rel...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	return p
}

func readFile[T any](t *testing.T, path string, read func(r *os.File) (T, error)) T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := read(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// TestCACMAnserini evaluates Anserini's BM25 run on CACM (64 topics, top 30
// per topic) against the qrels Anserini ships and the zero-padded ones.
//
// Anserini publishes MAP 0.3123 and P30 0.1942 for BM25 on CACM, computed
// by trec_eval on its full 1000-deep run with the shipped qrels. On this
// run, truncated at 30, trec_eval semantics give:
//   - P30 = 101/520 = 0.194231 over the 52 judged topics: exactly the
//     published 0.1942, because P30 only looks at the top 30;
//   - MAP = 0.2744, not 0.3123: AP sums precision at every relevant rank
//     up to 1000, and the terms from ranks 31..1000 (0.038 of MAP) are not
//     in the file.
//
// The 12 topics without judgments are ignored (trec_eval's default), and the
// shipped qrels' 55 unpadded ids ("CACM-115" for "CACM-0115") never match a
// run docid, so the zero-padded qrels score higher (MAP 0.2806, P30 0.1981).
func TestCACMAnserini(t *testing.T) {
	runPath := dataDir(t, "reference", "cacm-bm25.anserini-test-run.txt")
	run := readFile(t, runPath, func(f *os.File) (Run, error) { return ReadRun(f) })
	if len(run) != 64 {
		t.Fatalf("run has %d topics, want 64", len(run))
	}
	for q, es := range run {
		if len(es) != 30 {
			t.Fatalf("topic %s has %d results, want 30 (the file is a top-30 run)", q, len(es))
		}
	}
	for _, c := range []struct {
		qrels       string
		relRet      int
		map_, p30   float64
		p10, ndcg10 float64
	}{
		{"qrels", 303, 0.274358, 101.0 / 520, 0.315385, 0.454282},
		{"qrels.zero-padded", 309, 0.280553, 103.0 / 520, 0.323077, 0.460413},
	} {
		qrels := readFile(t, dataDir(t, "collections", "cacm", c.qrels), func(f *os.File) (Qrels, error) { return ReadQrels(f) })
		for _, order := range []Order{OrderTrecEval, OrderRank} {
			s, err := EvaluateWith(run, qrels, Options{Order: order})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s order=%v: map %.4f P_30 %.4f P_10 %.4f ndcg_cut_10 %.4f num_q %d num_ret %d num_rel %d num_rel_ret %d",
				c.qrels, order, s.MAP, s.Precision(30), s.Precision(10), s.NDCGAt(10), s.NumQ, s.NumRet, s.NumRel, s.NumRelRet)
			if s.NumQ != 52 || s.NumRet != 52*30 || s.NumRel != 796 || s.NumRelRet != c.relRet || len(s.Unjudged) != 12 || len(s.Missing) != 0 {
				t.Errorf("%s: num_q %d num_ret %d num_rel %d num_rel_ret %d unjudged %d missing %d",
					c.qrels, s.NumQ, s.NumRet, s.NumRel, s.NumRelRet, len(s.Unjudged), len(s.Missing))
			}
			if math.Abs(s.MAP-c.map_) > 5e-7 || !near(s.Precision(30), c.p30) ||
				math.Abs(s.Precision(10)-c.p10) > 5e-7 || math.Abs(s.NDCGAt(10)-c.ndcg10) > 5e-7 {
				t.Errorf("%s: map %.6f P_30 %.6f P_10 %.6f ndcg_cut_10 %.6f, want %.6f %.6f %.6f %.6f",
					c.qrels, s.MAP, s.Precision(30), s.Precision(10), s.NDCGAt(10), c.map_, c.p30, c.p10, c.ndcg10)
			}
		}
	}
	// The published P30, to the 4 digits trec_eval prints.
	qrels := readFile(t, dataDir(t, "collections", "cacm", "qrels"), func(f *os.File) (Qrels, error) { return ReadQrels(f) })
	if got := Evaluate(run, qrels).Precision(30); math.Round(got*1e4) != 1942 {
		t.Errorf("P_30 = %.4f, Anserini publishes 0.1942", got)
	}
}

// TestTruncationExplainsCACMGap supports TestCACMAnserini's explanation with
// the 1000-deep BM25 run reference/bm25check.cacm.run (another BM25
// implementation on the same collection): evaluating only its top 30
// (trec_eval -M 30) lowers MAP by about as much (0.039) as separates the
// top-30 Anserini file's MAP (0.2744) from the published 0.3123 (0.038),
// while P30 is unaffected by the cut.
func TestTruncationExplainsCACMGap(t *testing.T) {
	run := readFile(t, dataDir(t, "reference", "bm25check.cacm.run"), func(f *os.File) (Run, error) { return ReadRun(f) })
	qrels := readFile(t, dataDir(t, "collections", "cacm", "qrels"), func(f *os.File) (Qrels, error) { return ReadQrels(f) })
	full := Evaluate(run, qrels)
	cut, err := EvaluateWith(run, qrels, Options{MaxDocs: 30})
	if err != nil {
		t.Fatal(err)
	}
	gap := full.MAP - cut.MAP
	t.Logf("bm25check: map %.4f, map@-M30 %.4f (gap %.4f); P_30 %.4f / %.4f", full.MAP, cut.MAP, gap, full.Precision(30), cut.Precision(30))
	if gap < 0.03 || gap > 0.05 || full.Precision(30) != cut.Precision(30) {
		t.Errorf("truncating at 30 changes map by %.4f (want 0.03..0.05) and P_30 %v -> %v", gap, full.Precision(30), cut.Precision(30))
	}
}

func TestQrelsRepeatedJudgments(t *testing.T) {
	q, err := ReadQrels(strings.NewReader("1 0 a 1\n1 0 a 1\n1 0 b 0\n"))
	if err != nil || len(q["1"]) != 2 || q["1"]["a"] != 1 {
		t.Fatalf("agreeing repeat: %v %v", q, err)
	}
	_, err = ReadQrels(strings.NewReader("1 0 a 1\n2 0 x 1\n1 0 a 2\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "conflicting") {
		t.Fatalf("conflicting repeat: %v", err)
	}
}

// TestAppendRunLine: AppendRunLine appends AppendRun's lines one by one,
// unchecked (a docid AppendRun rejects is printed: the caller's to check);
// CheckRunColumns rejects the qids and tags AppendRun rejects.
func TestAppendRunLine(t *testing.T) {
	res := []RunEntry{{DocID: "d7", Score: 12.0330004}, {DocID: "gcide-126000", Score: 9.90139961}, {DocID: "d1", Score: 1.234567e-5}}
	want, err := AppendRun([]byte("x"), "42", res, "qp")
	if err != nil {
		t.Fatal(err)
	}
	got := []byte("x")
	for i, e := range res {
		got = AppendRunLine(got, "42", e.DocID, i+1, e.Score, "qp")
	}
	if !bytes.Equal(got, want) || CheckRunColumns("42", "qp") != nil {
		t.Fatalf("AppendRunLine wrote %q, AppendRun %q", got, want)
	}
	for _, c := range [][2]string{{"4 2", "qp"}, {"", "qp"}, {"42", "q p"}, {"42", ""}, {"4\x1b", "qp"}} {
		err := CheckRunColumns(c[0], c[1])
		if _, want := AppendRun(nil, c[0], res, c[1]); err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("qid %q tag %q: CheckRunColumns %v, AppendRun %v", c[0], c[1], err, want)
		}
	}
	if b := AppendRunLine(nil, "4", "a b", 1, 0, "qp"); string(b) != "4 Q0 a b 1 0 qp\n" {
		t.Errorf("unchecked docid: %q", b)
	}
}
