package decode

import (
	"slices"
	"testing"
	"time"

	"github.com/qpengine/qp/bench/internal/testidx"
	"github.com/qpengine/qp/compress"
)

// TestSampleAndRun: the sample stops at the budget with whole lists that
// are the index's; each codec's row has its bits per docID and frequency
// (checked against the re-encoded sizes' bounds) and positive rates.
func TestSampleAndRun(t *testing.T) {
	x, c := testidx.Random{Seed: 9, N: 3000, Terms: 20, DFStep: 1, MaxFreq: 3, Block: 128}.Build(t)
	docs, freqs, total, err := Sample(x, 2000)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for i, d := range docs {
		sum += len(d)
		k := slices.IndexFunc(c.Docs, func(l []uint32) bool { return slices.Equal(l, d) })
		if k < 0 || !slices.Equal(c.Freqs[k], freqs[i]) {
			t.Fatalf("sampled list %d is not one of the collection's", i)
		}
	}
	if sum != total || total < 2000 || total-len(docs[len(docs)-1]) >= 2000 {
		t.Fatalf("sampled %d postings in %d lists for a budget of 2000", total, len(docs))
	}
	bp, err := compress.ByName("bp128")
	if err != nil {
		t.Skip(err)
	}
	vb, err := compress.ByName("vbyte")
	if err != nil {
		t.Skip(err)
	}
	rows, err := Run(x, docs, freqs, []compress.Codec{bp, vb}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Codec != "bp128" || rows[1].Codec != "vbyte" {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		// vbyte: at least 8 bits per value; bp128: at most 33 (32 + headers).
		if r.BitsDoc <= 0 || r.BitsDoc > 40 || r.BitsTF <= 0 || r.Docs1 <= 0 || r.Both1 <= 0 || r.BothN <= 0 || r.Threads < 1 {
			t.Errorf("row %+v", r)
		}
	}
	if rows[1].BitsDoc < 8 {
		t.Errorf("vbyte %.2f bits per docID, below one byte", rows[1].BitsDoc)
	}
}
