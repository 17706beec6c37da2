package gpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/assist"
	"github.com/qpengine/qp/internal/cputime"
	"github.com/qpengine/qp/topk"
)

// qterm is one distinct query term present in the index.
type qterm struct {
	id  int
	df  uint32
	w   float32 // 1, or its count in the query with QTF
	idf float32
	// ti is the Backend's termInfo of the term (b.info[id]), copied when
	// the query is prepared: the plan, fill, OR and statistics passes read
	// it from here instead of each missing the cache on b.info, a random
	// access per term on another core (issue 24: 0.6 s of the 13 s of
	// in-window CPU of the H100 profile of GCIDE AND at 2M q/s).
	ti termInfo
}

// prep is one query of a batch, prepared on the host exactly like
// engine.Engine.prepare.
type prep struct {
	i       int // index in the batch
	q       *engine.Query
	terms   []qterm  // canonical order; a window of its batch's termArena
	unknown bool     // a term is absent from the index
	needOr  bool     // OR runs (Or, or AndOr whose AND found fewer than K)
	orFull  bool     // tiled OR: every candidate slot it can use (an overflow rerun)
	inWork  bool     // prepareBatch: the query needs the device (in the work list)
	wi      int32    // prepareBatch: its index in the work list (inWork)
	post    int64    // the postings of all its lists (postings), 0: not summed
	bm      int      // AND: bitmap terms (bitmap.go), the last of terms
	steps   int      // AND: list steps, term 0's included
	ms      []uint64 // OrMaxScore: the rank keys of a keep-misses pass (orms.go)
	st      engine.Stats
}

// termArena holds the prepared terms (prep.terms) of one batchBufs'
// queries: blocks of arenaBlock qterms, reused by every batch on those
// buffers (reset at its start), each query's terms a window of one block.
// Before (gpuhost5) each prep grew its own terms and canonical-order
// scratch: two small allocations per query in a batch on fresh buffers
// (a process's first, or one larger than any before), with their first
// touches, and the terms of consecutive queries scattered over the heap.
// Safe for concurrent use by a batch's preparing goroutines.
type termArena struct {
	mu     sync.Mutex
	blocks [][]qterm
	next   int // blocks[:next] are in use by the current batch
}

// arenaBlock is the qterms of one termArena block (192 KiB): about 1,300
// TREC'06 queries, so that a batch's preparing goroutines take a block
// from the shared arena (a lock) rarely. At least engine.MaxTerms: a
// valid query's terms always fit one block.
const arenaBlock = 4096

// Every valid query's terms fit in one block.
var _ [arenaBlock - engine.MaxTerms]struct{}

// block returns a block of the arena, empty, with room for arenaBlock
// qterms; it allocates one only when the batch has used every block an
// earlier batch grew.
func (a *termArena) block() []qterm {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == len(a.blocks) {
		a.blocks = append(a.blocks, make([]qterm, arenaBlock))
	}
	a.next++
	return a.blocks[a.next-1][:0]
}

// reset makes every block free for a new batch. The caller must own the
// arena (no preparation running) and drop the windows handed out before.
func (a *termArena) reset() { a.next = 0 }

// prepScratch is one preparing goroutine's scratch: the canonical-order
// terms of its current query, and the block of its arena its queries'
// terms go into.
type prepScratch struct {
	canon []engine.Term // CanonicalTerms scratch
	cur   []qterm       // the block being filled: its used part
	arena *termArena    // nil: each query's terms allocated alone (tests)
}

// terms returns a window of n qterms for one query's terms, from the
// current block or a new one; its capacity is n, so that an append to it
// cannot overwrite another query's terms.
func (sc *prepScratch) terms(n int) []qterm {
	if n > arenaBlock {
		panic(fmt.Sprintf("BUG: gpu.prepScratch.terms: %d terms, more than a block (%d)", n, arenaBlock))
	}
	if sc.arena == nil {
		return make([]qterm, n)
	}
	if cap(sc.cur)-len(sc.cur) < n {
		sc.cur = sc.arena.block()
	}
	l := len(sc.cur)
	sc.cur = sc.cur[:l+n]
	return sc.cur[l : l+n : l+n]
}

// prepare validates q (the CPU's error kinds and messages, with a "gpu"
// prefix) and fills p.terms (from sc's arena; sc nil: allocated); it
// looks q's terms up unless q carries them looked up in b's index
// (engine.Query.Looked).
func (b *Backend) prepare(p *prep, sc *prepScratch, q *engine.Query) error {
	ids, dfs, _ := q.Looked(b.x)
	return b.prepareIDs(p, sc, q, ids, dfs)
}

// prepareIDs is prepare with the dictionary IDs of q's terms and their
// document frequencies given (ids[i] and dfs[i] for q.Terms[i], looked up
// by prepareRange with other queries' terms; nil: prepare looks them up).
func (b *Backend) prepareIDs(p *prep, sc *prepScratch, q *engine.Query, ids []int, dfs []uint32) error {
	if sc == nil {
		sc = &prepScratch{}
	}
	p.q = q
	p.terms, p.post = nil, 0
	p.unknown, p.needOr, p.orFull = false, false, false
	p.st = engine.Stats{}
	if err := engine.Validate(*q, "gpu"); err != nil {
		return err
	}
	if ids != nil {
		sc.canon, p.unknown = engine.CanonicalTermsIDs(sc.canon, b.x, *q, ids, dfs)
	} else {
		sc.canon, p.unknown = engine.CanonicalTermsDict(sc.canon, b.x, *q) // the lists are on the device
	}
	p.terms = sc.terms(len(sc.canon))
	for i, c := range sc.canon {
		p.terms[i] = qterm{id: c.ID, df: c.DF, w: c.W, idf: b.x.IDF(c.DF), ti: b.info[c.ID]}
		p.post += int64(c.DF)
	}
	p.st.Terms = len(p.terms)
	if q.Mode != engine.Or {
		p.st.AndAlgo = AndGPU
	}
	return nil
}

// runsAnd reports whether the query's AND part needs the GPU.
func (p *prep) runsAnd() bool { return p.q.Mode != engine.Or && !p.unknown && len(p.terms) > 0 }

// cost is the query's share of the PARA threshold: its shortest list.
func (p *prep) cost() int {
	if len(p.terms) == 0 {
		return 0
	}
	return int(p.terms[0].df)
}

// orTilePostings is the OR work of one (query, tile) beyond its postings,
// in postings: clearing, counting and selecting the tile's accumulators
// and the dependent loads that start it. Measured on an H100 (10M-document
// gen index, the TREC 2006 queries, docs/GPU-QUERY.md "OR set times"): an
// OR set took about 6.9 ms per billion postings plus 18.7 us per query of
// 1,221 tiles, 2,200 postings per tile.
const orTilePostings = 2048

// orCost is a query's share of Options.OrThreshold, for OR and AND+OR
// queries (an AND+OR query runs OR when AND finds fewer than k, 81% of the
// TREC 2006 queries on a 10M-document gen index); 0 for AND queries: the
// postings of all its lists, which the OR tiles add up, plus
// orTilePostings for each tile it can touch (at most one per posting).
// Without the tiles' share, sets of many short queries took 2.4 times as
// long as sets of as many postings in few queries (18 against 8 ms).
func (b *Backend) orCost(p *prep) int64 {
	if p.q.Mode == engine.And {
		return 0
	}
	post := p.postings()
	tiles := (int64(b.n) + kern.OrTileMax - 1) / kern.OrTileMax
	return post + orTilePostings*min(tiles, post)
}

// setBudget tracks a launch set being formed against the PARA threshold c
// (shortest lists) and the OR threshold (orCost).
type setBudget struct {
	sum int
	or  int64
}

// fits reports whether the set, n queries so far, takes one more query;
// add counts it.
func (s *setBudget) fits(b *Backend, n int) bool {
	return n < MaxSetQueries && s.sum < b.opt.Threshold && s.or < b.opt.OrThreshold
}
func (s *setBudget) add(b *Backend, p *prep) { s.addShares(p.cost(), b.orCost(p)) }

// addShares counts a query of the given cost and orCost.
func (s *setBudget) addShares(cost int, orc int64) { s.sum += cost; s.or += orc }

// SearchBatch implements engine.Backend: qs[i] is evaluated into out[i].
// Queries are grouped into launch sets of about Threshold postings of
// shortest lists; a set that runs out of device memory (or meets a corrupt
// block) is split in halves and retried, so that the error lands only on
// the queries that cause it.
//
// Concurrent calls overlap (issue 25): each prepares its queries on the
// host (prepareBatch, on its own buffers from b.bufs) without the device,
// then takes b.mu, the device, for its launch sets (ctx.Do on the CUDA
// owner thread); one batch's preparation runs while another's kernels do.
// A hook in ctx (WithDeviceHook) is called when the batch takes the device.
func (b *Backend) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	if len(out) != len(qs) {
		return fmt.Errorf("gpu: %d responses for %d queries", len(out), len(qs))
	}
	if _, err := opt.Resolve(); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	start := time.Now()
	bb := b.bufs.get(len(qs))
	defer b.bufs.put(bb)
	work := b.prepareBatch(bb, qs, out)
	// The launch sets and their AND plans and uploads, on this goroutine
	// (andplan.go): the owner then only issues driver calls for them.
	planStart := time.Now()
	b.planBatch(bb, work)
	prepared := time.Since(start)
	b.planNanos.Add(int64(time.Since(planStart)))
	err := b.runBatch(ctx, bb, work, prepared, out)
	// The pure-AND sets' results, converted here (andplan.go), off the
	// owner and outside b.mu.
	if len(bb.plan.res.sets) > 0 {
		t := time.Now()
		b.finishPending(&bb.plan.res, out)
		b.finishNanos.Add(int64(time.Since(t)))
	}
	b.wallNanos.Add(int64(time.Since(start)))
	if err != nil {
		return err
	}
	return ctx.Err()
}

// runBatch runs a prepared batch's launch sets on the device (b.mu, the
// owner goroutine): the sets planned by planBatch when its snapshot is
// still current, else sets formed and planned on the owner.
func (b *Backend) runBatch(ctx context.Context, bb *batchBufs, work []*prep, prepared time.Duration, out []engine.Response) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		bb.plan.res.sets = bb.plan.res.sets[:0]
		return errors.New("gpu: backend closed")
	}
	b.prof.HostPrepare += prepared
	if f := DeviceHook(ctx); f != nil {
		f(prepared)
	}
	handed := time.Now()
	done := DeviceDoneHook(ctx)
	var p0 Profile
	if done != nil {
		p0 = b.prof
	}
	bp := &bb.plan
	err := b.ctx.Do(func() error {
		defer b.ownerTimes(handed)()
		if b.lc != nil {
			return b.runCached(ctx, work, out) // listcache.go
		}
		if bp.cfg != nil && bp.cfg == b.pcfg.Load() {
			for s := 0; s+1 < len(bp.sets); s++ {
				if err := ctx.Err(); err != nil {
					b.cancelled(work[bp.sets[s]:], out, err)
					return nil
				}
				var sp *setPlan
				if bp.plans[s].nq > 0 {
					sp = &setPlan{and: &bp.plans[s], mixed: bp.mixed[s]}
				} else if r := bp.orSet[s]; r[1] > r[0] {
					sp = &setPlan{or: bp.orl[r[0]:r[1]]}
				} else if bp.mixed[s] {
					sp = &setPlan{mixed: true}
				}
				b.runSplitPlanned(work[bp.sets[s]:bp.sets[s+1]], sp, &bp.res, out)
			}
			return nil
		}
		bp.res.sets = bp.res.sets[:0]
		for len(work) > 0 {
			if err := ctx.Err(); err != nil {
				b.cancelled(work, out, err)
				return nil
			}
			n, sb := 0, setBudget{}
			for n < len(work) && sb.fits(b, n) {
				sb.add(b, work[n])
				n++
			}
			b.runSplit(work[:n], out)
			work = work[n:]
		}
		return nil
	})
	b.prof.Batches++
	b.prof.Queries += int64(len(out))
	if done != nil {
		done(batchDevice(&p0, &b.prof))
	}
	if err != nil {
		bp.res.sets = bp.res.sets[:0]
		return fmt.Errorf("gpu: %w", err)
	}
	return nil
}

// cancelled answers the queries of work that did not run with err.
func (b *Backend) cancelled(work []*prep, out []engine.Response, err error) {
	for _, p := range work {
		out[p.i].Results, out[p.i].Stats, out[p.i].Err = out[p.i].Results[:0], engine.Stats{}, err
	}
}

// deviceHookKey is the context key of WithDeviceHook's function.
type deviceHookKey struct{}

// WithDeviceHook returns ctx carrying f, which SearchBatch calls when its
// batch takes the device (its host preparation is done, no other batch's
// launch sets run), with the time the preparation took. f runs while the
// batch holds the device: it must return at once (no blocking, no
// SearchBatch). A server with two batches in flight uses it to tell one
// waiting for the device from one running on it (serve/batcher.go).
func WithDeviceHook(ctx context.Context, f func(prepared time.Duration)) context.Context {
	return context.WithValue(ctx, deviceHookKey{}, f)
}

// DeviceHook is the function WithDeviceHook put into ctx, nil if none (for
// tests, and other backends that report when a batch takes their device).
func DeviceHook(ctx context.Context) func(prepared time.Duration) {
	f, _ := ctx.Value(deviceHookKey{}).(func(time.Duration))
	return f
}

// BatchDevice is one batch's time with the device (SearchBatch while it
// holds it), as the backend measured it: the differences of the Profile's
// counters over the batch's owner closure (b.mu serializes batches on the
// device, so they are this batch's alone). Wait is the hand-off to the
// owner goroutine (Do to the closure's start: the owner thread waiting for
// a P or a CPU), Run the closure (launches, stream waits, conversions on
// the owner), Sync the waits for the stream inside Run, GPU the phases'
// CUDA-event time (zero unless profiling: Options.Profile, SetProfile),
// OwnerRunDelay the owner thread's time runnable without a CPU (profiling
// only, schedstat), OwnerInvoluntary its involuntary context switches.
// The planned sets' result conversion after the device (HostFinish) is
// not in it: it runs after the batch lets the device go.
type BatchDevice struct {
	Sets, Launches, Syncs, DriverCalls, OwnerInvoluntary int64
	Wait, Run, Sync, GPU, OwnerCPU, OwnerRunDelay        time.Duration
}

// batchDevice is the BatchDevice of the profile's change from p0 to p1.
func batchDevice(p0, p1 *Profile) BatchDevice {
	gpu := func(p *Profile) time.Duration { return p.Decode + p.Intersect + p.Score + p.TopK + p.Transfer }
	return BatchDevice{Sets: p1.Sets - p0.Sets, Launches: p1.Launches - p0.Launches, Syncs: p1.Syncs - p0.Syncs,
		DriverCalls: p1.DriverCalls - p0.DriverCalls, OwnerInvoluntary: p1.OwnerInvoluntary - p0.OwnerInvoluntary,
		Wait: p1.HostWait - p0.HostWait, Run: p1.HostRun - p0.HostRun, Sync: p1.HostSync - p0.HostSync,
		GPU: gpu(p1) - gpu(p0), OwnerCPU: p1.OwnerCPU - p0.OwnerCPU, OwnerRunDelay: p1.OwnerRunDelay - p0.OwnerRunDelay}
}

// deviceDoneHookKey is the context key of WithDeviceDoneHook's function.
type deviceDoneHookKey struct{}

// WithDeviceDoneHook returns ctx carrying f, which SearchBatch calls when
// its batch is done with the device (before it lets the device go) with
// the batch's BatchDevice; f must return at once. A server uses it to set
// each served batch's device time beside the same batch run alone (issue
// 25: serve/batchlog.go).
func WithDeviceDoneHook(ctx context.Context, f func(BatchDevice)) context.Context {
	return context.WithValue(ctx, deviceDoneHookKey{}, f)
}

// DeviceDoneHook is the function WithDeviceDoneHook put into ctx, nil if
// none.
func DeviceDoneHook(ctx context.Context) func(BatchDevice) {
	f, _ := ctx.Value(deviceDoneHookKey{}).(func(BatchDevice))
	return f
}

// prepareBatch prepares qs into bb.preps (dictionary lookups, canonical
// order; on all cores, like the CPU backend's workers, or on
// SetPrepareCores' cap), answers in out the
// queries that need no device work (errors, unknown AND terms, OR over no
// known term) and returns the others, sorted by term count. It touches no
// device state: concurrent calls on distinct bb are safe.
//
// Launch sets are of queries with similar term counts: an AND set takes
// as many steps (launches and waits) as its longest query has terms, so
// one long query would make every query of its set pay for them. The
// order is stable (by term count, then batch index), by a counting sort
// done in parallel (gpuhost5): each chunk of prepChunk queries, on the
// goroutine that prepared it, answers or classifies its queries and
// counts its work queries per term count; one serial pass turns the
// chunks' counts into positions (term count major, chunk minor); a second
// parallel pass places each chunk's work queries. Before, the
// classification, the largest term count and both passes of the counting
// sort were serial passes over every query of the batch beside the
// parallel preparation. A batch with a work query of prepSortKeys or more
// terms is sorted by the serial counting sort instead (countingSort), to
// the same order.
func (b *Backend) prepareBatch(bb *batchBufs, qs []engine.Query, out []engine.Response) []*prep {
	n := len(qs)
	preps, prepErr := bb.preps[:n], bb.errs[:n]
	bb.used = n
	workers := b.prepareWorkers()
	bb.arena.reset()
	if len(bb.scratch) < workers {
		bb.scratch = append(bb.scratch, make([]prepScratch, workers-len(bb.scratch))...)
	}
	for i := range bb.scratch {
		bb.scratch[i].cur, bb.scratch[i].arena = nil, &bb.arena
	}
	nch := (n + prepChunk - 1) / prepChunk
	bb.hist = slices.Grow(bb.hist[:0], nch*prepSortKeys)[:nch*prepSortKeys]
	bb.chunkMax = slices.Grow(bb.chunkMax[:0], nch)[:nch]
	parallelWorkersID(workers, n, prepChunk, func(w, lo, hi int) {
		for ; lo < hi; lo += prepChunk { // one chunk (or all, on one goroutine)
			end := min(lo+prepChunk, hi)
			b.prepareRange(preps, prepErr, qs, lo, end, &bb.scratch[w])
			c := lo / prepChunk
			h := bb.hist[c*prepSortKeys : (c+1)*prepSortKeys]
			clear(h)
			mx := -1 // no work query
			for i := lo; i < end; i++ {
				if p := &preps[i]; classify(p, prepErr[i], &out[i]) {
					k := len(p.terms)
					mx = max(mx, k)
					if k < prepSortKeys {
						h[k]++
					}
				}
			}
			bb.chunkMax[c] = int32(mx)
		}
	})
	maxTerms := -1
	for _, m := range bb.chunkMax {
		maxTerms = max(maxTerms, int(m))
	}
	if maxTerms >= prepSortKeys {
		work := bb.sorted[:0]
		for i := range preps {
			if preps[i].inWork {
				work = append(work, &preps[i])
			}
		}
		bb.work = slices.Grow(bb.work[:0], len(work))[:len(work)]
		bb.counts = countingSort(bb.work, work, maxTerms, false, termsOf, bb.counts)
		bb.sorted = work
		for i, p := range bb.work {
			p.wi = int32(i)
		}
		return bb.work
	}
	total := chunkPositions(bb.hist, nch, prepSortKeys, maxTerms+1)
	work := bb.work[:total]
	parallelWorkers(workers, n, prepChunk, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if p := &preps[i]; p.inWork {
				h := bb.hist[i/prepChunk*prepSortKeys:]
				k := len(p.terms)
				work[h[k]], p.wi = p, int32(h[k])
				h[k]++
			}
		}
	})
	bb.work = work
	return work
}

// prepChunk is the queries of one chunk of prepareBatch's goroutines.
const prepChunk = 256

// prepSortKeys is the term counts prepareBatch's parallel counting sort
// has buckets for (0 to prepSortKeys-1): TREC 2006 queries have fewer
// known distinct terms; the chunks' counts take 256 bytes a chunk.
const prepSortKeys = 64

// classify answers in r the prepared query p (its preparation error err)
// when it needs no device work, and reports whether it does (p.inWork,
// with its OR part flagged). r's results are emptied, its statistics and
// error are those of the query's answer, or zero.
func classify(p *prep, err error, r *engine.Response) bool {
	r.Results, r.Stats, r.Err = r.Results[:0], engine.Stats{}, nil
	p.inWork = false
	if err != nil {
		r.Err = err
		return false
	}
	switch {
	case p.runsAnd():
	case p.q.Mode == engine.And:
		r.Stats = p.st // an unknown term: no results
		return false
	case len(p.terms) == 0:
		p.st.OrAlgo = OrGPU
		r.Stats = p.st // OR over no known term: no results
		return false
	default:
		p.needOr = true
	}
	p.inWork = true
	return true
}

// prepGroupTerms is how many terms prepareRange looks up in one
// index.LookupDictDF call.
const prepGroupTerms = 64

// prepareRange prepares qs[lo:hi] into preps and errs (prepare, with sc),
// looking up the terms of consecutive queries together, up to prepGroupTerms in
// one LookupDictDF call: a query's own call interleaves the dictionary's
// dependent cache misses (hash slot, term offsets, term bytes, record)
// only over its own few terms (TREC'06: about three), a group's over
// several queries' (issue 24: the lookups were half of a GCIDE AND
// batch's preparation, itself a fifth of the host CPU a GPU query cost on
// the H100 host). The document frequencies come with the lookup, and the
// group's IDF table entries and termInfo records are read in one loop
// before the queries are put in canonical order, so that those misses
// overlap too. A query of
// more terms than a group is looked up alone; an invalid query's terms are
// looked up for nothing (its error is prepare's). The prepared queries
// are prepare's.
//
// A query that carries its terms looked up in this backend's index
// (engine.Query.Dict: qp serve looks them up for its PARA cost, issue 25)
// is not looked up again: a group of such queries only has its IDF and
// termInfo reads warmed together (prepareLooked).
func (b *Backend) prepareRange(preps []prep, errs []error, qs []engine.Query, lo, hi int, sc *prepScratch) {
	if sc == nil {
		sc = &prepScratch{}
	}
	var terms [prepGroupTerms]string
	var ids [prepGroupTerms]int
	var dfs [prepGroupTerms]uint32
	for i := lo; i < hi; {
		if _, _, ok := qs[i].Looked(b.x); ok {
			i = b.prepareLooked(preps, errs, qs, i, hi, sc)
			continue
		}
		n, j := 0, i
		for ; j < hi && n+len(qs[j].Terms) <= len(terms); j++ {
			if _, _, ok := qs[j].Looked(b.x); ok {
				break
			}
			n += copy(terms[n:], qs[j].Terms)
		}
		if j == i { // more terms than a group
			preps[i].i = i
			errs[i] = b.prepare(&preps[i], sc, &qs[i])
			i++
			continue
		}
		b.x.LookupDictDF(terms[:n], ids[:n], dfs[:n])
		var warm float32
		for k := range n {
			warm += b.x.IDF(dfs[k]) // the entries prepareIDs reads next
			if id := ids[k]; id >= 0 {
				warm += b.info[id].max
			}
		}
		keepIDF(warm)
		off := 0
		for ; i < j; i++ {
			t := len(qs[i].Terms)
			preps[i].i = i
			errs[i] = b.prepareIDs(&preps[i], sc, &qs[i], ids[off:off+t], dfs[off:off+t])
			off += t
		}
	}
}

// prepareLooked prepares the queries from qs[i] on (before hi) that carry
// their terms looked up in b's index (engine.Query.Looked), at least one
// and up to prepGroupTerms terms in all, as prepareRange does a group but
// without its lookup; it returns the index of the first query it left.
func (b *Backend) prepareLooked(preps []prep, errs []error, qs []engine.Query, i, hi int, sc *prepScratch) int {
	n, j := 0, i
	var warm float32
	for ; j < hi; j++ {
		ids, dfs, ok := qs[j].Looked(b.x)
		if !ok || (j > i && n+len(ids) > prepGroupTerms) {
			break
		}
		n += len(ids)
		for k, id := range ids {
			warm += b.x.IDF(dfs[k]) // the entries prepareIDs reads next
			if id >= 0 {
				warm += b.info[id].max
			}
		}
	}
	keepIDF(warm)
	for ; i < j; i++ {
		ids, dfs, _ := qs[i].Looked(b.x)
		preps[i].i = i
		errs[i] = b.prepareIDs(&preps[i], sc, &qs[i], ids, dfs)
	}
	return j
}

// keepIDF keeps prepareRange's warming reads from being dropped as dead.
//
//go:noinline
func keepIDF(float32) {}

// termsOf is prepareBatch's order key.
func termsOf(p *prep) int { return len(p.terms) }

// prepCap is Backend.prepCores: SetPrepareCores' cap (0: none).
type prepCap struct{ n atomic.Int32 }

// SetPrepareCores caps the goroutines that prepare a batch's queries on
// the host (dictionary lookups, canonical order: prepareBatch; and the
// launch sets' planAnd and fillQueries on the owner thread) at k; k <= 0
// restores the default, GOMAXPROCS. Beside a CPU engine on the same cores
// (qp bench sched --prepare-cores, issue 24) the preparation then takes
// fewer cores from the CPU's queries, and a batch prepared while another
// runs on the device needs no more than that. Safe during searches (the
// next batch's preparation uses it).
func (b *Backend) SetPrepareCores(k int) {
	b.prepCores.n.Store(int32(max(min(k, math.MaxInt32), 0)))
}

// prepareWorkers is the goroutines prepareBatch may use.
func (b *Backend) prepareWorkers() int {
	if k := int(b.prepCores.n.Load()); k > 0 {
		return min(k, runtime.GOMAXPROCS(0))
	}
	return runtime.GOMAXPROCS(0)
}

// batchBufs are one SearchBatch call's host buffers: its prepared queries
// (each keeping its OrMaxScore scratch), their terms (arena), the
// preparing goroutines' scratch, their preparation errors and the work
// list.
type batchBufs struct {
	preps    []prep
	arena    termArena
	scratch  []prepScratch // one per preparing goroutine
	errs     []error
	work     []*prep
	sorted   []*prep // the other of work's two buffers (countingSort)
	counts   []int   // countingSort's scratch
	hist     []int32 // prepareBatch's counts per chunk and term count, then positions
	chunkMax []int32 // prepareBatch's largest term count per chunk (-1: no work query)
	used     int     // preps (and errs) the last batch used
	plan     batchPlan
}

// maxFreeBufs is how many batchBufs bufPool keeps: one per batch a caller
// keeps in flight (serve runs two) and a spare.
const maxFreeBufs = 4

// bufPool lends batchBufs to concurrent SearchBatch calls. Not a
// sync.Pool: the GC would drop the grown buffers, and with them the
// per-query scratch, so that batches would allocate again.
type bufPool struct {
	mu     sync.Mutex
	free   []*batchBufs
	closed bool
}

// get returns buffers for n queries.
func (p *bufPool) get(n int) *batchBufs {
	p.mu.Lock()
	var bb *batchBufs
	if k := len(p.free); k > 0 {
		bb = p.free[k-1]
		p.free[k-1] = nil
		p.free = p.free[:k-1]
	}
	p.mu.Unlock()
	if bb == nil {
		bb = &batchBufs{}
	}
	if cap(bb.preps) < n {
		// append may round the capacity up past n: the length is the
		// capacity, so that put, which indexes the last batch's prefix
		// (bb.used of them) in bb.preps, never reaches past it.
		bb.preps = append(bb.preps[:cap(bb.preps)], make([]prep, n-cap(bb.preps))...)
		bb.preps = bb.preps[:cap(bb.preps)]
		bb.errs = make([]error, cap(bb.preps))
		bb.work = make([]*prep, 0, cap(bb.preps))
	}
	return bb
}

// put returns bb, dropping its references to the caller's queries; when
// the pool is full or b is closed, bb's pinned arenas are freed.
func (p *bufPool) put(bb *batchBufs) {
	// The last batch's part on all cores (gpuhost5: a serial pass over a
	// 1M-query batch's preps, on its caller's critical path); then any
	// other prefix set (tests).
	used := bb.used
	parallel(used, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			bb.preps[i].q = nil
		}
		clear(bb.errs[lo:hi])
	})
	for i := used; i < len(bb.preps) && bb.preps[i].q != nil; i++ {
		bb.preps[i].q = nil // unused beyond: get hands out prefixes
	}
	bb.used = 0
	clear(bb.work) // all a batch set (the rest was cleared before)
	bb.work = bb.work[:0]
	clear(bb.sorted)
	bb.sorted = bb.sorted[:0]
	bp := &bb.plan
	clear(bp.order[:cap(bp.order)])
	clear(bp.sc.order[:cap(bp.sc.order)])
	for i := range bp.plans {
		bp.plans[i].qs = nil
	}
	bp.res.sets = bp.res.sets[:0]
	p.mu.Lock()
	keep := !p.closed && len(p.free) < maxFreeBufs
	if keep {
		p.free = append(p.free, bb)
	}
	p.mu.Unlock()
	if !keep {
		bb.freeArenas()
	}
}

// close frees the pinned arenas of the pooled buffers and makes put free
// those of the buffers still in use when they come back (Backend.release).
func (p *bufPool) close() {
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.mu.Unlock()
	for _, bb := range free {
		bb.freeArenas()
	}
}

// freeArenas frees bb's pinned arenas. Errors are dropped: freeing can
// only fail once the context is closed, which freed them.
func (bb *batchBufs) freeArenas() {
	_ = bb.plan.up.free()
	_ = bb.plan.res.down.free()
}

// ownerTimes starts the host-side accounting of a Do closure handed to the
// owner goroutine at handed (Profile's HostWait, HostRun, Owner*); call
// the function it returns when the closure ends, on the owner thread.
func (b *Backend) ownerTimes(handed time.Time) func() {
	t0 := time.Now()
	b.prof.HostWait += t0.Sub(handed)
	c0, inv0, ok := cputime.Thread()
	drv0 := b.ctx.DriverStats()
	var d0 time.Duration
	okd := b.tm.on
	if okd {
		d0, okd = cputime.ThreadRunDelay()
	}
	return func() {
		b.prof.HostRun += time.Since(t0)
		drv1 := b.ctx.DriverStats()
		b.prof.DriverCalls += drv1.Calls - drv0.Calls
		b.prof.OwnerDriver += drv1.Time - drv0.Time
		if c1, inv1, ok1 := cputime.Thread(); ok && ok1 {
			b.prof.OwnerCPU += c1 - c0
			b.prof.OwnerInvoluntary += inv1 - inv0
		}
		if okd {
			if d1, ok := cputime.ThreadRunDelay(); ok {
				b.prof.OwnerRunDelay += d1 - d0
			}
		}
	}
}

// sync waits for the stream, timed in Profile.HostSync.
func (b *Backend) sync() error {
	t := time.Now()
	err := b.stream.Synchronize()
	b.prof.HostSync += time.Since(t)
	return err
}

// convert is parallel for the result conversion of a launch, timed in
// Profile.HostConvert.
func (b *Backend) convert(n int, f func(lo, hi int)) {
	t := time.Now()
	parallel(n, f)
	b.prof.HostConvert += time.Since(t)
}

// parallel calls f on consecutive chunks of [0, n) from up to GOMAXPROCS
// goroutines (in the caller alone for small n).
func parallel(n int, f func(lo, hi int)) { parallelChunks(n, 256, f) }

// parallelChunks is parallel with chunks of the given size.
func parallelChunks(n, chunk int, f func(lo, hi int)) {
	parallelWorkers(runtime.GOMAXPROCS(0), n, chunk, f)
}

// parallelWorkers is parallelChunks on at most workers goroutines.
func parallelWorkers(workers, n, chunk int, f func(lo, hi int)) {
	parallelWorkersID(workers, n, chunk, func(_, lo, hi int) { f(lo, hi) })
}

// parallelWorkersID is parallelWorkers telling f which participant calls
// it, w in [0, workers): f may use scratch of its own per w. The chunks
// run on assist.Default: the caller, the Board's woken workers and the
// goroutines that call HelpHost meanwhile (issue 24, twelfth round).
func parallelWorkersID(workers, n, chunk int, f func(w, lo, hi int)) {
	assist.Default.Run(workers, n, chunk, f)
}

// HelpHost runs chunks of the host work the GPU backends of this process
// have fanned out (a batch's preparation and plans, the conversion of its
// results), if any is open, and reports whether it ran any. It is for
// goroutines busy with work of their own on the cores the GPU's host work
// needs, between two of their items: the scheduler's CPU slots beside a
// GPU (scheduler.Config.Assist). Without open work it costs one atomic
// load; with some, it returns once the work's chunks are all taken.
func HelpHost() bool { return assist.Default.Help() }

// retryable errors are those a smaller set may not meet.
func retryable(err error) bool {
	return errors.Is(err, cuda.ErrOutOfMemory) || errors.Is(err, index.ErrCorrupt)
}

// runSplit runs one launch set, halving it on retryable errors.
func (b *Backend) runSplit(set []*prep, out []engine.Response) {
	b.runSplitPlanned(set, nil, nil, out)
}

// setPlan is a launch set's plan made off the owner: a pure-AND set's AND
// plan (andplan.go), a pure-OR set's launches (orplan.go), or (mixed) the
// AND plan of a set with AND+OR queries (nil: none runs AND), whose OR
// part is planned on the owner and converted after the device.
type setPlan struct {
	and   *andPlan
	or    []orLaunch
	mixed bool
}

// runSplitPlanned is runSplit with the set's plan made off the owner (nil:
// planned here) whose downloads go to pend. A failed set's pending
// downloads are dropped, and its halves are planned here.
func (b *Backend) runSplitPlanned(set []*prep, pl *setPlan, pend *pendingResults, out []engine.Response) {
	// Preserve the prepared state a failed attempt may have changed. A
	// planned set's is prepareBatch's (a work query needs OR exactly when
	// it runs no AND part), restored from that on failure: no pass over
	// the set on the owner here (gpuplan).
	var saved []bool
	if pl == nil {
		saved = make([]bool, len(set))
		for i, p := range set {
			saved[i] = p.needOr
		}
	}
	mark := 0
	if pend != nil {
		mark = pend.mark()
	}
	err := b.runSet(set, pl, pend, out)
	if err == nil {
		if pl != nil {
			b.prof.PlannedSets++
		}
		return
	}
	if pend != nil {
		pend.drop(mark)
	}
	for i, p := range set {
		if saved != nil {
			p.needOr = saved[i]
		} else {
			p.needOr = !p.runsAnd()
		}
		p.orFull = false
		p.st.BlocksDecoded, p.st.PostingsDecoded, p.st.Candidates, p.st.OrAlgo = 0, 0, 0, ""
		out[p.i].Results = out[p.i].Results[:0]
	}
	if len(set) > 1 && retryable(err) {
		h := len(set) / 2
		b.runSplit(set[:h], out)
		b.runSplit(set[h:], out)
		return
	}
	for _, p := range set {
		out[p.i].Stats = p.st // the terms and algorithms, as the CPU reports them with an error
		out[p.i].Err = fmt.Errorf("gpu: query %q: %w", p.q.ID, err)
	}
}

// runSet evaluates one launch set: AND for the queries that need it, then
// OR for those that need it (in chunks that fit the accumulator budget).
// With sp (a set planned off the owner: pure AND, pure OR, or mixed with
// its AND part planned; andplan.go, orplan.go) its plan is used and its
// downloads (the tiled OR's too) and statistics left in pend for the
// batch's goroutine.
func (b *Backend) runSet(set []*prep, sp *setPlan, pend *pendingResults, out []engine.Response) (err error) {
	start := time.Now()
	mem := &devMem{pool: b.ctx.Pool()}
	defer func() {
		// Leave the stream idle before the buffers go back to the pool.
		serr := b.sync()
		if err == nil {
			err = serr
		}
		if rerr := mem.release(); err == nil {
			err = rerr
		}
		if err != nil {
			b.tm.discard()
		} else {
			b.tm.collect(&b.prof)
		}
	}()
	b.prof.Sets++
	if sp != nil && sp.or != nil {
		if err := b.runOrPlanned(mem, sp.or, pend, out); err != nil {
			return err
		}
		// Each query's time and statistics: finishStats, on the batch's
		// goroutine after its OR downloads' conversion.
		pend.sets = append(pend.sets, pendingSet{kind: pendStats, qs: set, time: time.Since(start)})
		return nil
	}
	if sp != nil && !sp.mixed {
		pl := sp.and
		if err := b.runAndPlanned(mem, pl, pend, out); err != nil {
			return err
		}
		// The plan's queries get their time and statistics from finishSet,
		// on the batch's goroutine on all cores (gpuhost5: a serial pass
		// over the set here, on the owner, holding the device); the
		// bitmap-AND queries (converted here) from this pass.
		el := time.Since(start)
		pend.sets[len(pend.sets)-1].time = el
		for _, p := range pl.bmq {
			p.st.Time = el
			out[p.i].Stats = p.st
		}
		return nil
	}
	var ands, ors []*prep
	switch {
	case sp != nil: // mixed: the AND part planned off the owner (its download pending)
		if sp.and != nil {
			if err := b.runAndPlanned(mem, sp.and, pend, out); err != nil {
				return err
			}
		}
		// The tiled OR part's downloads pending too (runOrTiled,
		// runOrWhole).
		if b.opt.Or == OrTiled {
			b.orPend = pend
			defer func() { b.orPend = nil }()
		}
	default:
		for _, p := range set {
			if p.runsAnd() {
				ands = append(ands, p)
			}
		}
		var bms []*prep
		if b.bm != nil && b.bitmapAndOn(b.bm.use) {
			ands, bms = splitBitmapAnd(ands, b.bm.use, nil, nil)
		}
		if len(ands) > 0 {
			if err := b.runAnd(mem, ands, out); err != nil {
				return err
			}
		}
		if len(bms) > 0 {
			if err := b.runBitmapAnd(mem, bms, out); err != nil {
				return err
			}
		}
	}
	ors = b.orsOf(set)
	if b.opt.Or == OrMaxScore && len(ors) > 0 {
		if err := b.runOrMS(mem, ors, out); err != nil {
			return err
		}
		ors = slices.DeleteFunc(ors, func(p *prep) bool { return !p.needOr })
	}
	// OR launches: bounded by the accumulator budget and, where lists are
	// decoded whole first (not the fused tiled path), by their postings.
	maxPost := b.opt.OrPostings
	if !b.orDense() && b.orFused() {
		maxPost = math.MaxInt64
	}
	if len(ors) > 0 && !b.orDense() {
		// Tiled: the cuts from the queries' records (runOrBudget).
		if err := b.runOrBudget(mem, ors, maxPost, out); err != nil {
			return err
		}
		ors = nil
	}
	if len(ors) > 1 && b.orOneLaunch(ors, maxPost, b.prepareWorkers(), &b.osc.cuts) {
		// All in one launch (the cuts below would make one), by one pass
		// on all cores instead of their serial one (gpuplan).
		if err := b.runOr(mem, ors, out); err != nil {
			return err
		}
		ors = nil
	}
	for len(ors) > 0 {
		n := 1
		acc := b.orQueryBytes(ors[0])
		post := ors[0].postings()
		for n < len(ors) && acc+b.orQueryBytes(ors[n]) <= b.opt.AccumulatorBytes && post+ors[n].postings() <= maxPost {
			acc += b.orQueryBytes(ors[n])
			post += ors[n].postings()
			n++
		}
		if err := b.runOr(mem, ors[:n], out); err != nil {
			return err
		}
		ors = ors[n:]
	}
	el := time.Since(start)
	if sp != nil { // each query's time and statistics: finishStats
		pend.sets = append(pend.sets, pendingSet{kind: pendStats, qs: set, time: el})
		return nil
	}
	for _, p := range set {
		p.st.Time = el
		out[p.i].Stats = p.st
	}
	return nil
}

// orsOf returns the queries of set that need OR, in set order, in the
// owner's scratch (valid until its next call): a running count on all
// cores (parallelScan), not a serial pass on the owner, which holds the
// device.
func (b *Backend) orsOf(set []*prep) []*prep {
	sc := &b.osc
	sc.ors = slices.Grow(sc.ors[:0], len(set))[:len(set)]
	dst := sc.ors
	n := parallelScan(b.prepareWorkers(), len(set), &sc.orsSums, func(x, y int) int { return x + y }, func(lo, hi, s int, write bool) int {
		for _, p := range set[lo:hi] {
			if p.needOr {
				if write {
					dst[s] = p
				}
				s++
			}
		}
		return s
	})
	return dst[:n]
}

// postings is the length of all of the query's lists: p.post, summed by
// prepareIDs (gpuhost5: the OR budget, cost and candidate-cap passes on
// the owner summed a query's lists again each, 0.31 s of the H100 OR
// profile), or summed here for a prep made otherwise (OrMaxScore's
// sub-queries, tests), whose post is 0 (a known term's list is never
// empty).
func (p *prep) postings() int64 {
	if p.post > 0 || len(p.terms) == 0 {
		return p.post
	}
	var n int64
	for _, t := range p.terms {
		n += int64(t.df)
	}
	return n
}

// results appends the keys of one query (rank order) to out[p.i], growing
// dst once (gpuhost5: appending from an empty slice grew a new response's
// results four times for k = 10).
func results(dst []topk.Result, keys []uint64) []topk.Result {
	dst = slices.Grow(dst, len(keys))
	for _, k := range keys {
		dst = append(dst, topk.Result{Doc: uint32(k), Score: math.Float32frombits(^uint32(k >> 32))})
	}
	return dst
}

// corruptError reports the kernels' and decoders' findings after a phase:
// the docID error counter and the decoders' status words.
func (b *Backend) corruptError(errDocs uint32, status []uint64, codecs []string) error {
	for i, st := range status {
		if err := kern.DecodeStatusError(codecs[i], st); err != nil {
			return fmt.Errorf("%w: GPU decoder: %w", index.ErrCorrupt, err)
		}
	}
	if errDocs != 0 {
		return fmt.Errorf("%w: %d decoded docIDs are >= N = %d or not increasing", index.ErrCorrupt, errDocs, b.n)
	}
	return nil
}
