// Package gpu is qp's GPU query processor: an engine.Backend ("gpu") that
// evaluates batches of AND, OR and AND+OR queries over a device-resident
// copy of a compressed index with the CUDA kernels of package cuda
// (cuda/kernels/query_*.cu and the batch block decoders), returning exactly
// the CPU engine's results: the same documents, bit-identical float32 BM25
// scores, in topk's order.
//
// Residency (New): every posting list (skip table, encoded docID blocks,
// encoded frequency blocks) is uploaded once into one device buffer, with a
// per-term table of offsets, block counts and document frequencies, and the
// BM25 length norms of the index's current parameters. The index must not
// be modified (SetParams) afterwards. When the postings exceed
// Options.CacheBytes (or, with 0, most of the free device memory), they
// live instead in a device arena managed by a list cache (listcache.go:
// TinyLFU admission, sampled-LFU eviction, uploads of the next launch
// set's lists overlapped with the current set; Ding et al. WWW'09 §5).
//
// Queries are prepared on the host exactly like engine.Engine does (term
// lookup, duplicates, QTF weights, canonical order: ascending df, ties by
// term ID; score/bm25.go), grouped into launch sets (Ao et al. VLDB'11
// §4.1, PARA: queries are added until the sum of their shortest lists
// reaches Options.Threshold), and each set is evaluated with a fixed
// sequence of launches for all its queries at once:
//
//   - AND (Ding et al. WWW'09 §8, Ao et al. §4.2): the shortest list of every
//     query is decoded (the batch decoders of cuda/kern/decode.go) into
//     candidates scored with their first term; then, for each further term
//     in canonical order, every candidate is binary-searched in the skip
//     table of that list, only the blocks that can hold candidates are
//     decoded (docIDs and frequencies), every candidate is binary-searched
//     in its decoded block, found ones get the term's score added (float32,
//     canonical order: the CPU's sum, bit for bit) and the others are
//     removed by stream compaction (an exclusive scan built on CUB's
//     BlockScan). The densest lists also have device bitmaps (bitmap.go,
//     issue #6): a query's candidates are first tested against its bitmap
//     terms' bits, and those terms are scored by rank, without steps.
//   - OR: Ding's brute-force TAAT: a dense float32 accumulator of N
//     documents per query, lists decoded whole and added in canonical order.
//   - top-k: an exact per-query radix select on 64-bit keys (score bits
//     complemented, docID) and a bitonic sort, ties by ascending docID.
//   - AND+OR: AND for the whole set, then OR for the queries with fewer
//     than K results in the next launches.
//
// Errors: per query, the CPU's kinds (engine.ErrEmptyQuery,
// ErrTooManyTerms, ErrBadK, ErrBadMode; index.ErrCorrupt for damaged
// blocks); when the GPU runs out of memory a set is split and retried, and
// a single query that still does not fit gets an error matching
// cuda.ErrOutOfMemory, for the caller to run it on the CPU. An index whose
// codecs have no GPU decoder makes New fail with ErrUnsupported.
package gpu

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// ErrUnsupported is wrapped by New's error when the index cannot be served
// by the GPU (a codec without a GPU decoder, blocks larger than the
// decoders take); the caller then uses the CPU backend.
var ErrUnsupported = errors.New("index not supported by the GPU backend")

// Algorithm names recorded in engine.Stats for queries the GPU ran.
const (
	AndGPU engine.AndAlgorithm = "gpu"
	OrGPU  engine.OrStrategy   = "gpu"
)

// Defaults of Options.
const (
	// DefaultThreshold is the PARA threshold c: postings of the queries'
	// shortest lists per launch set (Ao et al. measured up to 2M). On a
	// 10M-document gen index with the TREC 2006 queries (H100,
	// docs/GPU-QUERY.md) AND reaches about 100k queries/s at 12M with
	// sets of about 10 ms; 1M gives 2-3 ms sets at 2/3 of the rate.
	DefaultThreshold = 12 << 20
	// DefaultOrThreshold bounds the OR work of one launch set: the postings
	// of all lists of its OR and AND+OR queries plus orTilePostings per
	// tile they touch (Backend.orCost). An OR set's time is its tiles',
	// so sets cut by shortest lists alone ran from 1 to 140 ms on the TREC
	// 2006 queries (10M documents, H100); cut by postings alone, 6 to 19
	// ms (p99 19 ms); by postings and tiles, p99 8.8 ms for OR and 9.8 ms
	// for AND+OR at 17.0k and 16.9k queries/s (docs/GPU-QUERY.md).
	DefaultOrThreshold = 1 << 30
	// DefaultAccumulatorBytes bounds the dense OR accumulators of one launch
	// (4N bytes per query).
	DefaultAccumulatorBytes = 1 << 30
	// DefaultOrPostings bounds the postings of all lists of the OR queries
	// of one launch.
	DefaultOrPostings = 1 << 27
	// MaxSetQueries bounds the queries of one launch set.
	MaxSetQueries = 1 << 16
)

// Options configure New. The zero value selects GPU 0 and the defaults.
type Options struct {
	// Device is the GPU ordinal to open (ignored with Context).
	Device int
	// Context, when not nil, is used instead of opening Device; Close does
	// not close it.
	Context *cuda.Context
	// Threshold is the PARA threshold c (DefaultThreshold when <= 0).
	Threshold int
	// OrThreshold bounds the OR work of a launch set, its OR and AND+OR
	// queries' postings plus orTilePostings per tile they touch
	// (Backend.orCost; DefaultOrThreshold when <= 0); a set closes at
	// whichever threshold it reaches first.
	OrThreshold int64
	// AccumulatorBytes bounds the OR accumulators per launch
	// (DefaultAccumulatorBytes when <= 0); at least one query always runs.
	AccumulatorBytes int64
	// OrPostings bounds the postings of the OR lists per launch where the
	// lists are decoded whole first (dense OR, and tiled OR on codecs other
	// than bp128; the fused bp128 tiles decode in place), DefaultOrPostings
	// when <= 0; at least one query always runs.
	OrPostings int64
	// CacheBytes is the device budget of the posting lists. 0: the whole
	// index is resident when it fits into most of the free device memory,
	// else a list cache gets DefaultCacheFraction of it; > 0: the whole
	// index when its postings take at most CacheBytes, else a list cache of
	// CacheBytes (listcache.go). A query whose lists exceed the cache gets
	// an error wrapping cuda.ErrOutOfMemory (run it on the CPU).
	CacheBytes int64
	// Profile records CUDA events around every phase so that Profile
	// reports where GPU time goes (costs a few microseconds per phase).
	Profile bool
	// AndSearch selects how AND steps find the skip-table block of each
	// candidate (and_opts.go): "binsearch" (the default when empty), "lr"
	// (the binary search in the Linear Regression safe range of the skip
	// table, Ao et al. VLDB'11 §4.3) or "pmf1".."pmf4" (Parallel Merge
	// Find, Ding et al. WWW'09 §7, with 1 to 4 splitter levels). The
	// results do not depend on it.
	AndSearch string
	// Or selects how OR (and AND+OR's OR phase) runs: OrTiled (the
	// default when empty), OrDense (ortile.go) or OrMaxScore (orms.go:
	// queries with a short shortest list run MaxScore over it first, the
	// others and those it cannot certify run on the tiles). The results
	// do not depend on it.
	Or string

	// BitmapDensity is the density (df/N) from which a list also gets a
	// device bitmap that the AND planner uses (bitmap.go):
	// DefaultBitmapDensity when 0, none when negative or above 1.
	BitmapDensity float64
	// BitmapBytes bounds the device bitmaps (DefaultBitmapBytes when 0,
	// none when negative); the densest lists get theirs first. They also
	// stay under 1/4 of the free device memory by default, under 1/2 when
	// BitmapBytes is set (positive).
	BitmapBytes int64
	// BitmapAnd selects the bitmap AND: the AND queries every term of
	// which has a device bitmap in use (term 0 included) run by the
	// word-wise AND of their columns instead of the candidates of their
	// shortest list (bmand.go; bp128 frequencies only). The results are
	// the same either way. BitmapAndAuto (the zero value) turns it on for
	// indexes of at least BitmapAndMinDocs documents.
	BitmapAnd BitmapAndMode
	// OrBitmapDensity is the density from which the fused OR tiles use a
	// list's device bitmap (ortile.go): the planner's BitmapDensity when
	// 0 (the default), none when negative or above 1. Only lists that got
	// a bitmap (BitmapDensity at New) have one to use.
	OrBitmapDensity float64

	orTile    int    // tests: documents per tile (kern.OrTileMax when 0)
	orSelect  string // tests: "tree" or "radix" forces the top-k selector
	orDecoded bool   // tests: bp128 indexes take the decoded path, not the fused one
	orNoPrune bool   // tests: no block-max skipping in the fused tiles (no term maxima)
	orPer     int    // tests: tile ranks per work item of the second pass (orPer when 0)
	orNoWhole bool   // tests: every OR query on the tiles, none whole (orwhole.go)
	orNoPre   bool   // tests, and QP_GPU_OR_PRE=0 at New: no list pre-decoded for the fused tiles (orConsts.predecoded)
	orDense   bool   // tests, and QP_GPU_OR_SPARSE=0 at New: the tiles zero and scan all their accumulators (kern.OrPass.Dense)
}

// termInfo is the host copy of a list's shape.
type termInfo struct {
	df, nb     uint32
	dlen, flen uint32  // bytes of its encoded docID and frequency blocks
	max        float32 // the largest block maximum (the term's maximum score)
}

// Backend is the GPU engine.Backend. It is safe for concurrent use:
// concurrent batches prepare their queries on the host at once, and run
// their launch sets one at a time on one CUDA stream (mu, the device).
type Backend struct {
	x    *index.Index
	opt  Options
	ctx  *cuda.Context
	own  bool
	qk   *kern.QueryKernels
	kern *kern.Kernels

	docCodec, freqCodec compress.Codec
	n                   uint32 // documents
	bs                  int    // block size
	k1p1                float32
	info                []termInfo
	resident            int64 // bytes of the postings (uploaded unless lc != nil)
	lc                  *listCache
	bm                  *bitmaps // device bitmaps of the densest lists (bitmap.go), nil without
	bmBytesSet          bool     // Options.BitmapBytes was set: the bitmaps may take bitmapFreeShareSet of the free memory

	bufs bufPool // per-batch host buffers (batch.go): preparation needs no mu
	// prepCores caps the goroutines of a batch's host preparation
	// (prepareBatch; SetPrepareCores); 0: GOMAXPROCS.
	prepCores prepCap
	// pcfg is what a batch's plan off the device reads (andplan.go),
	// replaced under mu by the setters.
	pcfg atomic.Pointer[planCfg]
	// Profile's Wall and HostFinish, added by batches outside mu.
	wallNanos, finishNanos, planNanos atomic.Int64

	// mu is the device: held by a batch while its launch sets run (and
	// by the setters, Profile, Close); it guards every field below, the
	// device buffers, scratch and the profile.
	mu       sync.Mutex
	closed   bool
	stream   *cuda.Stream
	post     *cuda.Buffer // postings
	terms    *cuda.Buffer // TermMeta per term
	norms    *cuda.Buffer // N float32
	up       pinned       // uploads
	down     pinned       // downloads
	small    pinned       // mid-phase totals
	tm       timer
	prof     Profile
	msB      []prep      // OrMaxScore pass B sub-queries (orms.go)
	msKeys   []uint64    // OrMaxScore merge scratch
	and      andState    // AND step kernels and scratch (and.go)
	slots    []querySlot // fillQueries' per-query slots (owner thread)
	slotSums []querySlot // and their chunk sums
	osc      planScratch // the OR plans' fill scratch on the owner (orplan.go)
	// orPend, while a planned mixed set runs its OR part (runSet): where
	// the tiled OR's downloads go, for finishPending; nil: converted on
	// the owner.
	orPend *pendingResults
}

var _ engine.Backend = (*Backend)(nil)

// New uploads x's postings and norms to a GPU and returns the backend. It
// fails with an error wrapping cuda.ErrUnavailable when no GPU can be used,
// ErrUnsupported when x's codecs have no GPU decoder or its blocks are
// larger than kern.MaxBlockValues, and cuda.ErrOutOfMemory when the index
// does not fit on the device.
func New(x *index.Index, opts ...Options) (*Backend, error) {
	var opt Options
	if len(opts) > 0 {
		opt = opts[0]
	}
	if opt.Threshold <= 0 {
		opt.Threshold = DefaultThreshold
	}
	opt.Threshold = min(opt.Threshold, 1<<30)
	if opt.OrThreshold <= 0 {
		opt.OrThreshold = DefaultOrThreshold
	}
	if opt.AccumulatorBytes <= 0 {
		opt.AccumulatorBytes = DefaultAccumulatorBytes
	}
	if opt.OrPostings <= 0 {
		opt.OrPostings = DefaultOrPostings
	}
	if opt.Or == "" {
		opt.Or = OrTiled
	}
	// The device A/B switch of the pre-decoded lists (docs/GPU-QUERY.md,
	// "OR tiles: sparse lists decoded once"): one binary, both paths.
	if os.Getenv("QP_GPU_OR_PRE") == "0" {
		opt.orNoPre = true
	}
	// The same for the tiles' sparse accumulator passes (docs/GPU-QUERY.md,
	// "OR tiles: only the touched accumulators").
	if os.Getenv("QP_GPU_OR_SPARSE") == "0" {
		opt.orDense = true
	}
	if opt.BitmapDensity == 0 {
		opt.BitmapDensity = DefaultBitmapDensity
	}
	bmBytesSet := opt.BitmapBytes > 0
	if opt.BitmapBytes == 0 {
		opt.BitmapBytes = DefaultBitmapBytes
	}
	if !validOr(opt.Or) {
		return nil, fmt.Errorf("gpu: OR strategy %q, want %q, %q or %q", opt.Or, OrTiled, OrDense, OrMaxScore)
	}
	levels, err := parseAndSearch(opt.AndSearch)
	if err != nil {
		return nil, err
	}
	b := &Backend{x: x, opt: opt, n: uint32(x.NumDocs()), bs: x.Meta.BlockSize, k1p1: x.Params().K1p1(), bmBytesSet: bmBytesSet}
	b.and.levels = levels
	if err := b.checkIndex(); err != nil {
		return nil, err
	}
	if opt.Context != nil {
		b.ctx = opt.Context
	} else {
		if ok, why := cuda.Available(); !ok {
			return nil, fmt.Errorf("gpu: %w: %s", cuda.ErrUnavailable, why)
		}
		c, err := cuda.Open(opt.Device)
		if err != nil {
			return nil, fmt.Errorf("gpu: %w", err)
		}
		b.ctx, b.own = c, true
	}
	b.up.ctx, b.down.ctx, b.small.ctx = b.ctx, b.ctx, b.ctx
	b.tm.ctx = b.ctx
	b.tm.on = opt.Profile
	if opt.Profile {
		b.ctx.SetDriverTiming(true)
	}
	if err := b.init(); err != nil {
		b.release()
		return nil, err
	}
	b.refreshPlanCfg()
	return b, nil
}

// checkIndex rejects indexes the GPU decoders cannot serve.
func (b *Backend) checkIndex() error {
	x := b.x
	dc, err := compress.ByName(x.Meta.DocCodec)
	if err != nil {
		return fmt.Errorf("gpu: %w: docID codec %q: %v", ErrUnsupported, x.Meta.DocCodec, err)
	}
	fc, err := compress.ByName(x.Meta.FreqCodec)
	if err != nil {
		return fmt.Errorf("gpu: %w: frequency codec %q: %v", ErrUnsupported, x.Meta.FreqCodec, err)
	}
	for _, c := range []compress.Codec{dc, fc} {
		if !kern.Supported(c.ID()) {
			return fmt.Errorf("gpu: %w: codec %s has no GPU decoder; use the CPU backend", ErrUnsupported, c.Name())
		}
	}
	if x.Meta.BlockSize > kern.MaxBlockValues {
		return fmt.Errorf("gpu: %w: block size %d, the GPU decoders take at most %d; use the CPU backend",
			ErrUnsupported, x.Meta.BlockSize, kern.MaxBlockValues)
	}
	if uint64(x.NumDocs()) >= uint64(index.Terminated) {
		return fmt.Errorf("gpu: %w: %d documents", ErrUnsupported, x.NumDocs())
	}
	for t := 0; t < x.NumTerms(); t++ {
		r := x.Record(t)
		if r.DocCodec != dc.ID() || r.FreqCodec != fc.ID() {
			return fmt.Errorf("gpu: %w: term %d is not encoded with the index's codecs %s/%s; use the CPU backend",
				ErrUnsupported, t, dc.Name(), fc.Name())
		}
	}
	b.docCodec, b.freqCodec = dc, fc
	return nil
}

// uploadChunk is the host staging size of the postings upload.
const uploadChunk = 64 << 20

func align16(n uint64) uint64 { return (n + 15) &^ 15 }

// init loads the kernels, creates the stream and uploads the index.
func (b *Backend) init() error {
	var err error
	if b.qk, err = kern.LoadQueryKernels(b.ctx); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	b.kern = b.qk.Kernels()
	if b.stream, err = b.ctx.NewStream(); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	x := b.x
	nt := x.NumTerms()
	b.info = make([]termInfo, nt)
	meta := make([]uint32, kern.TermMetaWords*max(nt, 1))
	lists := make([]index.List, nt)
	var size uint64
	for t := 0; t < nt; t++ {
		l, err := x.BlockCodedList(t) // bitmap lists as docID blocks (index/format.go)
		if err != nil {
			return fmt.Errorf("gpu: %w", err)
		}
		lists[t] = l
		sk, d, f := uint64(len(l.SkipBytes())), uint64(len(l.DocBytes())), uint64(len(l.FreqBytes()))
		if d > 1<<32-1 || f > 1<<32-1 {
			return fmt.Errorf("gpu: %w: list of term %d has more than 4 GiB of blocks", ErrUnsupported, t)
		}
		var mx float32
		for i := 0; i < l.NBlocks; i++ {
			mx = max(mx, l.BlockMax(i))
		}
		b.info[t] = termInfo{df: l.DF, nb: uint32(l.NBlocks), dlen: uint32(d), flen: uint32(f), max: mx}
		kern.PutTermMeta(meta[kern.TermMetaWords*t:], size, size+sk, size+sk+d, uint32(l.NBlocks), l.DF)
		size += align16(sk + d + f)
	}
	b.resident = int64(size)
	if err := b.initBitmaps(lists); err != nil {
		return err
	}
	budget, err := b.cacheBudget(int64(size) + 4*int64(len(x.Norms())))
	if err != nil {
		return err
	}
	if budget > 0 {
		return b.initCache(budget, meta)
	}
	// The decoders read whole aligned 16-byte chunks: keep 16 spare bytes.
	if b.post, err = b.ctx.Alloc(int(size) + 16); err != nil {
		return fmt.Errorf("gpu: uploading %d bytes of postings: %w", size, err)
	}
	stage := make([]byte, 0, min(uploadChunk, int(size)+16))
	var at uint64
	flush := func() error {
		if len(stage) == 0 {
			return nil
		}
		if err := cuda.CopyToDevice(b.post, int(at), stage); err != nil {
			return err
		}
		at += uint64(len(stage))
		stage = stage[:0]
		return nil
	}
	for t := range lists {
		l := &lists[t]
		n := align16(uint64(len(l.SkipBytes()) + len(l.DocBytes()) + len(l.FreqBytes())))
		if len(stage) > 0 && len(stage)+int(n) > cap(stage) {
			if err := flush(); err != nil {
				return fmt.Errorf("gpu: uploading postings: %w", err)
			}
		}
		start := len(stage)
		stage = append(stage, l.SkipBytes()...)
		stage = append(stage, l.DocBytes()...)
		stage = append(stage, l.FreqBytes()...)
		for uint64(len(stage)-start) < n {
			stage = append(stage, 0)
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("gpu: uploading postings: %w", err)
	}
	if b.terms, err = b.ctx.Alloc(4 * len(meta)); err != nil {
		return fmt.Errorf("gpu: uploading the term table: %w", err)
	}
	if err := cuda.CopyToDevice(b.terms, 0, meta); err != nil {
		return fmt.Errorf("gpu: uploading the term table: %w", err)
	}
	return b.initNorms()
}

// initNorms uploads the length norms and orders the synchronous copies
// before the streams' work.
func (b *Backend) initNorms() error {
	var err error
	norms := b.x.Norms()
	if b.norms, err = b.ctx.Alloc(4*len(norms) + 16); err != nil {
		return fmt.Errorf("gpu: uploading norms: %w", err)
	}
	if err := cuda.CopyToDevice(b.norms, 0, norms); err != nil {
		return fmt.Errorf("gpu: uploading norms: %w", err)
	}
	// The synchronous copies ran on the legacy stream; order them before
	// the non-blocking stream's work.
	if err := b.ctx.Synchronize(); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	return nil
}

// Name implements engine.Backend.
func (b *Backend) Name() string { return "gpu" }

// Device describes the GPU.
func (b *Backend) Device() cuda.Device { return b.ctx.Device() }

// OwnerThread is the OS thread id of the CUDA context's owner goroutine,
// on which the batches' launch sets run (cuda.Context.OwnerThread).
func (b *Backend) OwnerThread() int { return b.ctx.OwnerThread() }

// SetPollWait makes the owner goroutine poll for the stream instead of
// blocking in the driver (cuda.Context.SetPollWait: it keeps its P; for an
// owner thread on a CPU of its own, qp serve --owner-cpu).
func (b *Backend) SetPollWait(on bool) { b.ctx.SetPollWait(on) }

// ResidentBytes is the size of the index's postings in device layout (all
// uploaded, or streamed through a list cache of CacheBytes).
func (b *Backend) ResidentBytes() int64 { return b.resident }

// Threshold is the PARA threshold c in use.
func (b *Backend) Threshold() int { return b.opt.Threshold }

// SetThreshold changes the PARA threshold c (DefaultThreshold when <= 0).
func (b *Backend) SetThreshold(c int) {
	if c <= 0 {
		c = DefaultThreshold
	}
	b.mu.Lock()
	b.opt.Threshold = min(c, 1<<30)
	b.refreshPlanCfg()
	b.mu.Unlock()
}

// OrThreshold is the OR threshold in use (Options.OrThreshold).
func (b *Backend) OrThreshold() int64 { return b.opt.OrThreshold }

// SetOrThreshold changes Options.OrThreshold (DefaultOrThreshold when <= 0).
func (b *Backend) SetOrThreshold(n int64) {
	if n <= 0 {
		n = DefaultOrThreshold
	}
	b.mu.Lock()
	b.opt.OrThreshold = n
	b.refreshPlanCfg()
	b.mu.Unlock()
}

// SetAndSearch changes Options.AndSearch ("binsearch", "lr", "pmf1".."pmf4").
func (b *Backend) SetAndSearch(name string) error {
	levels, err := parseAndSearch(name)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.opt.AndSearch, b.and.levels = name, levels
	b.refreshPlanCfg()
	b.mu.Unlock()
	return nil
}

// SetOr changes Options.Or (OrTiled, OrDense or OrMaxScore).
func (b *Backend) SetOr(name string) error {
	if !validOr(name) {
		return fmt.Errorf("gpu: OR strategy %q, want %q, %q or %q", name, OrTiled, OrDense, OrMaxScore)
	}
	b.mu.Lock()
	b.opt.Or = name
	b.refreshPlanCfg()
	b.mu.Unlock()
	return nil
}

// SetProfile turns the recording of CUDA events around phases, and the
// timing of the Context's driver calls (Profile.OwnerDriver), on or off
// (Options.Profile).
func (b *Backend) SetProfile(on bool) {
	b.mu.Lock()
	b.tm.on = on
	b.ctx.SetDriverTiming(on)
	b.mu.Unlock()
}

// Close releases the device memory, the stream and (when New opened it) the
// CUDA context. Searches after Close fail.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	return b.release()
}

func (b *Backend) release() error {
	var errs []error
	if b.stream != nil {
		errs = append(errs, b.stream.Synchronize())
	}
	for _, p := range []**cuda.Buffer{&b.post, &b.terms, &b.norms} {
		if *p != nil {
			errs = append(errs, (*p).Free())
			*p = nil
		}
	}
	if b.bm != nil {
		errs = append(errs, b.bm.free())
		b.bm = nil
	}
	errs = append(errs, b.up.free(), b.down.free(), b.small.free(), b.tm.free())
	b.bufs.close()
	if b.lc != nil {
		errs = append(errs, b.lc.close())
		b.lc = nil
	}
	if b.stream != nil {
		errs = append(errs, b.stream.Destroy())
		b.stream = nil
	}
	if b.own && b.ctx != nil {
		errs = append(errs, b.ctx.Close())
	}
	return errors.Join(errs...)
}

// Profile is where the GPU time of the batches since the last
// ResetProfile went, measured with CUDA events (Options.Profile; the
// durations are zero without it).
type Profile struct {
	Batches, Sets, Queries int64
	// PlannedSets: the sets planned and converted off the owner goroutine
	// (pure-AND sets, andplan.go; pure-OR sets, orplan.go; the AND part of
	// mixed and AND+OR sets, whose OR part is planned on the owner); the
	// others were planned on it.
	PlannedSets int64
	Launches    int64         // kernel launches (decoders included)
	Syncs       int64         // host waits for the stream in AND phases
	Wall        time.Duration // SearchBatch wall-clock time (each call's: preparation and its wait for the device included)
	// GPU time by phase: Decode (gathering and decoding blocks), Intersect
	// (AND block selection, search in decoded blocks with the term's score
	// added, compaction), Score (the first term of AND, OR accumulation),
	// TopK (selection and sorting), Transfer (host<->device copies).
	Decode, Intersect, Score, TopK, Transfer time.Duration
	// Tiled OR work: tiles of the OR queries (queries x tiles), those
	// accumulated (the rest were skipped by their bounds), and the blocks
	// the fused bp128 tiles decoded (counted also when profiling is off).
	// OrSkipped counts the blocks the fused tiles skipped by their block
	// maxima. Of the tiles accumulated, OrSelected had more than k
	// candidates above the query's threshold (they ran the k-th key
	// selection) and OrEmitted emitted candidates. OrLookups counts the
	// documents whose terms with device bitmaps the tiles added by rank.
	OrTiles, OrTilesRun, OrBlocks, OrSkipped, OrSelected, OrEmitted, OrLookups int64
	// OrWholeQueries: the OR queries answered whole, one CTA each, without
	// tiles (orwhole.go); OrWholeBlocks, the blocks they decoded (each
	// block of their lists once).
	OrWholeQueries, OrWholeBlocks int64
	// OrPreLists, OrPreBlocks: the lists of tiled OR queries decoded once
	// per launch for the fused tiles (fewer blocks than tiles;
	// orConsts.predecoded), and their blocks.
	OrPreLists, OrPreBlocks int64
	// OrMaxScore (orms.go): OR queries routed to its pass A (shortest
	// list), those A answered, the later passes run (query x pass) and
	// the queries they answered (the others ran on the tiles).
	OrMSQueries, OrMSCertified, OrMSSecond, OrMSCertified2 int64
	// Their candidates (the documents of the lists the passes start from)
	// and those that survived to the top-k (the others were dropped by
	// their bound: partial score + the remaining terms' list maxima below
	// the pass's theta0).
	OrMSCandidates, OrMSKept int64
	// BitmapAndQueries: the AND queries that ran the bitmap AND
	// (Options.BitmapAnd, bmand.go).
	BitmapAndQueries int64
	// Cache is the list cache's traffic (zero when the index is resident).
	Cache CacheStats
	// Host side of the batches (wall clock, always measured; issue 24:
	// where a GPU batch's time goes when CPU query workers share the
	// host): HostPrepare, query preparation and the launch sets' plans
	// made off the owner (prepareBatch, planBatch; on all cores); HostWait, the
	// hand-off to the CUDA context's owner goroutine (from Do to its
	// closure's start: the owner waiting for a P); HostRun, the closure
	// on the owner thread (launches, waits, conversion); HostSync, the
	// waits for the stream inside it (device time plus the owner's return
	// from the driver call); HostConvert, the result conversion (on all
	// cores; on the owner: sets not planned off it, overflow reruns, the
	// dense and MaxScore OR). HostFinish: the planned sets' result
	// conversion on the batch's goroutine after the device (andplan.go,
	// orplan.go; on all cores, outside the owner). OwnerCPU
	// and OwnerInvoluntary: the owner thread's CPU time
	// and involuntary context switches during the closures (getrusage
	// RUSAGE_THREAD; the driver spins in a stream wait unless told
	// otherwise, see cuda.Open); OwnerRunDelay, its time runnable without
	// a CPU (schedstat; with Options.Profile only). HostPlan: the part of
	// HostPrepare in planBatch (the launch sets, their plans and filled
	// uploads; gpuplan2).
	HostPrepare, HostWait, HostRun, HostSync, HostConvert, HostFinish time.Duration
	HostPlan                                                          time.Duration
	OwnerCPU, OwnerRunDelay                                           time.Duration
	OwnerInvoluntary                                                  int64
	// DriverCalls: the hot driver calls of the closures (cuda's fast.go:
	// launches, async copies and fills, event records and elapsed times,
	// stream and event waits; always counted). With Options.Profile the
	// CUDA events that time the phases add two records and an elapsed
	// time per timed span, about doubling the count (GCIDE AND: 142 a
	// batch since gpuhost2, 148 before and 259 profiled on the H100).
	// OwnerDriver: the time inside them (with
	// SetProfile only; HostSync's waits included).
	DriverCalls int64
	OwnerDriver time.Duration
}

// Profile returns the accumulated profile.
func (b *Backend) Profile() Profile {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.prof
	if b.lc != nil {
		p.Cache = b.lc.stats
	}
	p.Wall, p.HostFinish = time.Duration(b.wallNanos.Load()), time.Duration(b.finishNanos.Load())
	p.HostPlan = time.Duration(b.planNanos.Load())
	return p
}

// ResetProfile zeroes the profile.
func (b *Backend) ResetProfile() {
	b.mu.Lock()
	b.prof = Profile{}
	b.wallNanos.Store(0)
	b.finishNanos.Store(0)
	b.planNanos.Store(0)
	if b.lc != nil {
		b.lc.stats = CacheStats{}
	}
	b.mu.Unlock()
}
