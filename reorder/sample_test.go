package reorder

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/qpengine/qp/index"
)

// TestMeasureSampleGain: on the planted-topic collection (documents in
// random topic order) BP on a sample finds the topics (a large gain), the
// result depends on the seed only, and n is capped at N.
func TestMeasureSampleGain(t *testing.T) {
	x := testCollection(t, filepath.Join(t.TempDir(), "c.qp"), 3000, "bp128", index.BitmapsOff)
	defer x.Close()
	ctx := context.Background()
	a, err := MeasureSampleGain(ctx, x, 1500, 2, 7, 2)
	if err != nil {
		t.Fatal(err)
	}
	if a.Docs != 1500 || !(a.Random > 0) || a.BP >= a.Random || a.Gain() < 0.2 {
		t.Fatalf("sample of 1500 planted-topic documents: %+v (gain %.3f), want a gain >= 20%%", a, a.Gain())
	}
	b, err := MeasureSampleGain(ctx, x, 1500, 2, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("same seed, 2 and 1 workers: %+v and %+v", a, b)
	}
	all, err := MeasureSampleGain(ctx, x, 1<<20, 2, 7, 2)
	if err != nil {
		t.Fatal(err)
	}
	if all.Docs != 3000 || all.Gain() < 0.2 {
		t.Fatalf("sample larger than N: %+v", all)
	}
	// A quarter of the documents: each topic is thinner, the gaps of the
	// random order are shorter in a smaller space, but BP still finds the
	// topics.
	q, err := MeasureSampleGain(ctx, x, 750, 2, 7, 2)
	if err != nil {
		t.Fatal(err)
	}
	if q.Gain() < 0.1 || q.Random >= all.Random {
		t.Fatalf("sample of 750: %+v, all: %+v", q, all)
	}
}

func TestSampleGainZero(t *testing.T) {
	if g := (SampleGain{}).Gain(); g != 0 {
		t.Fatalf("empty sample gain %v", g)
	}
}
