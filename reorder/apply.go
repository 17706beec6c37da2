package reorder

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/score"
)

// WriteOptions configure WritePermuted.
type WriteOptions struct {
	Workers    int    // 0 = all cores
	DocIDOrder string // recorded in META (default "bp")
	// Progress, when not nil, is called (never concurrently) with the lists
	// written so far and their total.
	Progress func(done, total int)
}

// WritePermuted writes x to out with docID d renumbered perm[d] (a
// permutation of 0..N-1): every list re-sorted, and the document lengths,
// external ids and stored fields moved with their documents. Codecs, block
// size, BM25 parameters, bitmap mode and analysis options are those of x;
// the block maxima are recomputed. out appears only when complete.
func WritePermuted(ctx context.Context, x *index.Index, perm []uint32, out string, opt WriteOptions) (index.BuildStats, error) {
	n := x.NumDocs()
	if len(perm) != n {
		panic(fmt.Sprintf("BUG: permutation of %d documents for an index of %d", len(perm), n))
	}
	m := x.Meta
	dc, err := compress.ByName(m.DocCodec)
	if err != nil {
		return index.BuildStats{}, fmt.Errorf("reorder: doc codec: %w", err)
	}
	fc, err := compress.ByName(m.FreqCodec)
	if err != nil {
		return index.BuildStats{}, fmt.Errorf("reorder: freq codec: %w", err)
	}
	bm := index.BitmapsOff
	if m.Bitmaps != "" {
		if bm, err = index.ParseBitmapMode(m.Bitmaps); err != nil {
			return index.BuildStats{}, fmt.Errorf("reorder: META: %w", err)
		}
	}
	order := Inverse(perm)
	lens := make([]uint32, n)
	ids := make([]string, n)
	var stored [][]byte
	if x.HasStored() {
		stored = make([][]byte, n)
	}
	for nw, old := range order {
		lens[nw] = x.DocLens()[old]
		ids[nw] = x.ExternalID(old)
		if stored != nil {
			stored[nw] = x.Stored(old)
		}
	}
	dorder := opt.DocIDOrder
	if dorder == "" {
		dorder = "bp"
	}
	w, err := index.NewWriter(out, index.WriterOptions{
		BlockSize: m.BlockSize, DocCodec: dc, FreqCodec: fc,
		Params: score.Params{K1: m.K1, B: m.B}, DocLens: lens, DocIDs: ids, Stored: stored,
		Meta:    index.Meta{Stem: m.Stem, Stopwords: m.Stopwords, Source: m.Source, DocIDOrder: dorder},
		Bitmaps: bm,
	})
	if err != nil {
		return index.BuildStats{}, err
	}
	var pool sync.Pool
	produce := func(t int, docs, freqs []uint32) (string, []uint32, []uint32, error) {
		l, err := x.List(t)
		if err != nil {
			return "", nil, nil, err
		}
		if docs, freqs, err = l.Decode(docs, freqs); err != nil {
			return "", nil, nil, err
		}
		// Sort (new docID, tf) pairs packed in 64 bits.
		pp, _ := pool.Get().(*[]uint64)
		if pp == nil {
			pp = new([]uint64)
		}
		pairs := (*pp)[:0]
		for i, d := range docs {
			pairs = append(pairs, uint64(perm[d])<<32|uint64(freqs[i]))
		}
		slices.Sort(pairs)
		for i, v := range pairs {
			docs[i], freqs[i] = uint32(v>>32), uint32(v)
		}
		*pp = pairs
		pool.Put(pp)
		return x.Term(t), docs, freqs, nil
	}
	var progress func(int, index.BuildStats)
	if opt.Progress != nil {
		progress = func(done int, _ index.BuildStats) { opt.Progress(done, x.NumTerms()) }
	}
	st, err := w.AddListsParallel(ctx, x.NumTerms(), opt.Workers, produce, progress)
	if err != nil {
		w.Abort()
		return st, err
	}
	if err := w.Close(); err != nil {
		return st, err
	}
	st.Docs = uint64(n)
	return st, nil
}

// Config configures Run.
type Config struct {
	Options
	MinDF int // lists shorter than this are left out of the graph (default 2)
	// Progress, when not nil, is called (never concurrently) with a stage
	// ("graph", "bisect", "write") and its progress.
	Progress func(stage string, done, total int64)
}

// Stats report a Run.
type Stats struct {
	Docs, Terms, Postings            uint64 // of the index
	GraphTerms, GraphPostings        uint64 // kept in the graph (df >= MinDF)
	CostBefore, CostAfter            float64
	Depth, Refine                    int // bisection levels: full, then refinement
	Load, Graph, Bisect, Cost, Write time.Duration
	Out                              index.BuildStats
}

// ErrSameFile is returned when the output index would replace the input.
var ErrSameFile = errors.New("output is the input index")

// Run reads the index in, reorders its documents by BP and writes the
// result to out (never in itself).
func Run(ctx context.Context, in, out string, cfg Config) (Stats, error) {
	var st Stats
	if err := checkDistinct(in, out); err != nil {
		return st, err
	}
	if cfg.MinDF <= 0 {
		cfg.MinDF = 2
	}
	progress := func(stage string) func(done, total int64) {
		if cfg.Progress == nil {
			return nil
		}
		return func(done, total int64) { cfg.Progress(stage, done, total) }
	}
	t0 := time.Now()
	x, err := index.Open(in)
	if err != nil {
		return st, err
	}
	defer x.Close()
	st.Docs, st.Terms, st.Postings = x.Meta.Docs, x.Meta.Terms, x.Meta.Postings
	t1 := time.Now()
	st.Load = t1.Sub(t0)
	g, err := FromIndex(ctx, x, cfg.MinDF, cfg.Workers)
	if err != nil {
		return st, err
	}
	st.GraphTerms, st.GraphPostings = uint64(g.NumTerms), uint64(len(g.Terms))
	t2 := time.Now()
	st.Graph = t2.Sub(t1)
	opt := cfg.Options
	opt.Progress = progress("bisect")
	if opt.Depth <= 0 {
		opt.Depth = DefaultDepth(g.NumDocs())
	}
	st.Depth = opt.Depth
	st.Refine, _ = refineOf(opt)
	order, err := Bisect(ctx, g, opt)
	if err != nil {
		return st, err
	}
	t3 := time.Now()
	st.Bisect = t3.Sub(t2)
	st.CostBefore = LogGapCost(g, Identity(g.NumDocs()))
	st.CostAfter = LogGapCost(g, order)
	g = nil
	t4 := time.Now()
	st.Cost = t4.Sub(t3)
	var wp func(done, total int)
	if p := progress("write"); p != nil {
		wp = func(done, total int) { p(int64(done), int64(total)) }
	}
	st.Out, err = WritePermuted(ctx, x, Inverse(order), out, WriteOptions{Workers: cfg.Workers, Progress: wp})
	st.Write = time.Since(t4)
	return st, err
}

// checkDistinct refuses an output path that names the input file.
func checkDistinct(in, out string) error {
	ai, err1 := filepath.Abs(in)
	ao, err2 := filepath.Abs(out)
	if err1 == nil && err2 == nil && ai == ao {
		return fmt.Errorf("reorder: %s: %w", out, ErrSameFile)
	}
	fi, err := os.Stat(in)
	if err != nil {
		return fmt.Errorf("reorder: %w", err)
	}
	if fo, err := os.Stat(out); err == nil && os.SameFile(fi, fo) {
		return fmt.Errorf("reorder: %s: %w", out, ErrSameFile)
	}
	return nil
}
