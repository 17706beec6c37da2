package engine

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/ref"
)

// testBitmapDensity is the bitmap crossover checkQuery passes in Options (0:
// the defaults). Tests here set it and restore it; engine tests do not run
// in parallel.
var testBitmapDensity float64

// writeBitmapIndex writes col with the given bitmap mode and opens it.
func writeBitmapIndex(t *testing.T, col *ref.Collection, codec compress.Codec, bs int, mode index.BitmapMode) *index.Index {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.qp")
	w, err := index.NewWriter(path, index.WriterOptions{BlockSize: bs, DocCodec: codec, DocLens: col.Lens, Bitmaps: mode})
	if err != nil {
		t.Fatal(err)
	}
	for i, term := range col.Terms {
		if err := w.AddList(term, col.Docs[i], col.Freqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	x, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := col.CheckIndex(x); err != nil {
		t.Fatal(err)
	}
	return x
}

// TestDifferentialBitmaps: with every list stored as a bitmap (always), every
// mode × AND algorithm × OR strategy × k equals internal/ref bit for bit,
// with the roaring paths off (cursors over bitmap lists), on for every list
// (crossover density 2^-30), and at the defaults; likewise with auto, where
// only some lists are bitmaps (mixed bitmap-list queries).
func TestDifferentialBitmaps(t *testing.T) {
	defer func() { testBitmapDensity = 0 }()
	cases := []struct {
		codec   string
		bs, n   int
		ties    bool
		mode    index.BitmapMode
		queries int
	}{
		{"bp128", 128, 1500, false, index.BitmapsAlways, 12},
		{"vbyte", 3, 400, true, index.BitmapsAlways, 12},
		{"eliasfano", 16, 37, false, index.BitmapsAlways, 12},
		{"bp128", 32, 140000, false, index.BitmapsAuto, 6}, // > 2 roaring containers; dense lists become bitmaps
		{"bp128", 64, 140000, true, index.BitmapsAlways, 4},
	}
	for _, c := range cases {
		codec, err := compress.ByName(c.codec)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s/B%d/N%d/%v/ties=%v", c.codec, c.bs, c.n, c.mode, c.ties)
		t.Run(name, func(t *testing.T) {
			if testing.Short() && c.n > 10000 {
				t.Skip("short")
			}
			rng := rand.New(rand.NewSource(int64(c.n + c.bs)))
			col := genCollection(rng, c.n, 24, c.bs, c.ties)
			x := writeBitmapIndex(t, col, codec, c.bs, c.mode)
			if x.Meta.BitmapLists == 0 {
				t.Fatal("no bitmap lists")
			}
			for _, dens := range []float64{NoBitmaps, 1.0 / (1 << 30), 0} {
				testBitmapDensity = dens
				runDifferential(t, x, col, rand.New(rand.NewSource(7)), c.queries, []int{1, 10, 1000})
			}
		})
	}
}

// TestBitmapPathsRun: the planner takes the roaring paths exactly when a
// query has bitmap lists at or above the crossover (Stats say so), for AND
// with only bitmap terms, AND mixing bitmaps and lists, and OR.
func TestBitmapPathsRun(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	col := genCollection(rng, 3000, 12, 16, false)
	codec, _ := compress.ByName("bp128")
	x := writeBitmapIndex(t, col, codec, 16, index.BitmapsAlways)
	e := New(x)
	q := Query{Terms: []string{col.Terms[6], col.Terms[7], col.Terms[8]}, Mode: AndOr, K: 5000}
	for _, dens := range []float64{1e-9, NoBitmaps} {
		_, st, err := e.Search(q, Options{AndBitmapDensity: dens, OrBitmapDensity: dens, AndBitmapMaxDensity: NoBitmaps})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if dens < 1 {
			want = 3
		}
		if st.AndBitmaps != want || st.OrBitmaps != want {
			t.Fatalf("density %v: stats %+v, want %d bitmap terms", dens, st, want)
		}
	}
	// A density between the lists' densities selects only the denser ones.
	l0, _ := x.List(6)
	l1, _ := x.List(7)
	mid := (float64(l0.DF) + float64(l1.DF)) / 2 / 3000
	_, st, err := e.Search(Query{Terms: q.Terms[:2], Mode: And, K: 10}, Options{AndBitmapDensity: mid, AndBitmapMaxDensity: NoBitmaps})
	if err != nil {
		t.Fatal(err)
	}
	if l0.DF != l1.DF && st.AndBitmaps != 1 {
		t.Fatalf("density %v between %d and %d: %d bitmap terms", mid, l0.DF, l1.DF, st.AndBitmaps)
	}
	if _, _, err := e.Search(q, Options{AndBitmapDensity: -1}); err == nil {
		t.Fatal("negative density accepted")
	}
	// The maximum excludes the denser list: it is read by its cursor.
	_, st, err = e.Search(Query{Terms: q.Terms[:2], Mode: And, K: 10}, Options{AndBitmapDensity: 1e-9, AndBitmapMaxDensity: mid})
	if err != nil {
		t.Fatal(err)
	}
	if l0.DF != l1.DF && st.AndBitmaps != 1 {
		t.Fatalf("max density %v: %d bitmap terms", mid, st.AndBitmaps)
	}
}

// TestBitmapListsNoAllocations: with the roaring paths off, every algorithm
// over bitmap lists stays allocation-free once warm (cursors embed their
// roaring iterator; List.DecodeDocs takes one from a pool, which a GC may
// empty, hence the tolerance below one allocation per batch).
func TestBitmapListsNoAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	rng := rand.New(rand.NewSource(8))
	col := genCollection(rng, 3000, 24, 64, false)
	codec, _ := compress.ByName("bp128")
	x := writeBitmapIndex(t, col, codec, 64, index.BitmapsAlways)
	e := New(x)
	var qs [][]string
	for i := 0; i < 20; i++ {
		qs = append(qs, genQuery(rng, col.Terms))
	}
	for _, opt := range allOptions() {
		opt.AndBitmapDensity, opt.OrBitmapDensity = NoBitmaps, NoBitmaps
		for _, mode := range []Mode{And, Or, AndOr} {
			run := func() {
				for _, terms := range qs {
					if _, _, err := e.Search(Query{Terms: terms, Mode: mode, K: 100}, opt); err != nil {
						t.Fatal(err)
					}
				}
			}
			run()
			if a := testing.AllocsPerRun(5, run); a >= 1 {
				t.Errorf("%v %+v: %v allocations per %d queries", mode, opt, a, len(qs))
			}
		}
	}
}
