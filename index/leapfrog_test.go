package index

import (
	"math/rand"
	"slices"
	"testing"
)

// TestLeapfrog intersects pairs of random lists with Leapfrog, with and
// without a limit that stops the lead early (then resumed past the limit,
// as engine.andSkip does after checking its bound), and compares the
// common docIDs with a merge of the written lists.
func TestLeapfrog(t *testing.T) {
	x, _, docs, _ := bp128Index(t, 128)
	rng := rand.New(rand.NewSource(7))
	matches := 0
	for trial := 0; trial < 400; trial++ {
		ta, tb := rng.Intn(x.NumTerms()), rng.Intn(x.NumTerms())
		if len(docs[ta]) > len(docs[tb]) {
			ta, tb = tb, ta
		}
		var want []uint32
		for _, d := range docs[ta] {
			if _, ok := slices.BinarySearch(docs[tb], d); ok {
				want = append(want, d)
			}
		}
		la, err := x.List(ta)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := x.List(tb)
		if err != nil {
			t.Fatal(err)
		}
		step := uint32(1 + rng.Intn(5000)) // limits every step docIDs
		var a, b Cursor
		a.Reset(la)
		b.Reset(lb)
		var got []uint32
		lim := step
		for d := a.DocID(); d != Terminated; {
			d = Leapfrog(&a, &b, lim)
			switch {
			case d == Terminated:
			case d > lim: // stopped past the limit: move it on
				lim = d + step
			case d != b.DocID() || d != a.DocID():
				t.Fatalf("terms %d, %d: Leapfrog returned %d with cursors at %d, %d", ta, tb, d, a.DocID(), b.DocID())
			default:
				got = append(got, d)
				d = a.Next()
			}
		}
		if a.Err() != nil || b.Err() != nil {
			t.Fatal(a.Err(), b.Err())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("terms %d (df %d), %d (df %d), limit step %d: got %v, want %v", ta, len(docs[ta]), tb, len(docs[tb]), step, got, want)
		}
		matches += len(got)
	}
	if matches < 1000 {
		t.Fatalf("only %d common docIDs in all trials: the lists do not exercise the intersection", matches)
	}
}
