package ref

import (
	"testing"

	"github.com/qpengine/qp/score"
	"github.com/qpengine/qp/topk"
)

func TestIntersect(t *testing.T) {
	for _, tc := range []struct {
		lists [][]uint32
		want  []uint32
	}{
		{nil, nil},
		{[][]uint32{{1, 2, 3}}, []uint32{1, 2, 3}},
		{[][]uint32{{1, 2, 3}, {}}, []uint32{}},
		{[][]uint32{{1, 5, 9, 12}, {0, 5, 9, 13}, {5, 9, 100}}, []uint32{5, 9}},
		{[][]uint32{{2, 4}, {1, 3}}, []uint32{}},
	} {
		got := Intersect(tc.lists)
		if len(got) != len(tc.want) {
			t.Fatalf("%v: %v, want %v", tc.lists, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%v: %v, want %v", tc.lists, got, tc.want)
			}
		}
	}
}

// TestSearchByHand checks Search against scores written out term by term.
// Terms "b" (df 1) and "c" (df 1) tie on df, so "b" (smaller ID) comes
// first; "a" (df 3) comes last.
func TestSearchByHand(t *testing.T) {
	p := Postings{
		"a": {0: 1, 1: 2, 2: 1},
		"b": {1: 3},
		"c": {2: 1},
	}
	lens := []uint32{4, 10, 4}
	par := score.Default
	norms := par.Norms(nil, lens, score.AvgDL(lens))
	k1p1 := par.K1p1()
	idfA, idfB, idfC := score.IDF(3, 3), score.IDF(3, 1), score.IDF(3, 1)
	s0 := score.Term(idfA, k1p1, 1, norms[0])
	var s1 float32 = score.Term(idfB, k1p1, 3, norms[1])
	s1 += score.Term(idfA, k1p1, 2, norms[1])
	var s2 float32 = score.Term(idfC, k1p1, 1, norms[2])
	s2 += score.Term(idfA, k1p1, 1, norms[2])
	or := Search(p, par, norms, 3, []string{"a", "c", "b", "a", "zz"}, Or, 10)
	want := TopK([]topk.Result{{Doc: 0, Score: s0}, {Doc: 1, Score: s1}, {Doc: 2, Score: s2}}, 10)
	if len(or) != 3 {
		t.Fatalf("OR: %v", or)
	}
	for i := range want {
		if or[i] != want[i] {
			t.Fatalf("OR rank %d: %+v, want %+v", i, or[i], want[i])
		}
	}
	if r := Search(p, par, norms, 3, []string{"a", "zz"}, And, 10); len(r) != 0 {
		t.Fatalf("AND with an unknown term: %v", r)
	}
	and := Search(p, par, norms, 3, []string{"b", "a"}, And, 10)
	if len(and) != 1 || and[0] != (topk.Result{Doc: 1, Score: s1}) {
		t.Fatalf("AND: %v", and)
	}
	// AND+OR: AND finds 1 < k = 2 results, so OR answers.
	if r := Search(p, par, norms, 3, []string{"b", "a"}, AndOr, 2); len(r) != 2 || r[0] != want[0] {
		t.Fatalf("AND+OR: %v", r)
	}
	if r := Search(p, par, norms, 3, []string{"b", "a"}, AndOr, 1); len(r) != 1 || r[0] != and[0] {
		t.Fatalf("AND+OR k=1: %v", r)
	}
	// Ties rank by docID.
	tie := TopK([]topk.Result{{Doc: 5, Score: 1}, {Doc: 2, Score: 1}, {Doc: 9, Score: 2}}, 3)
	if tie[0].Doc != 9 || tie[1].Doc != 2 || tie[2].Doc != 5 {
		t.Fatalf("ties: %v", tie)
	}
}
