package gpu

// GPU index cache: when an index's postings exceed the device budget
// (Options.CacheBytes), the posting lists live in a device arena of that
// many bytes (Backend.post) and a launch set may only run once every list
// of its queries is resident. This is the "GPU-side list cache" of Ding et
// al. WWW'09 §5 (the GPU holds a cache of inverted lists, filled over
// PCIe on misses, because the index does not fit into GPU memory), with a
// TinyLFU admission policy and sampled-LFU eviction like ristretto's
// (Einziger et al., "TinyLFU: A Highly Efficient Cache Admission Policy",
// TOS 2017). Ristretto's own policy is not exported and its Cache admits
// asynchronously and may evict any key, while a list that a running launch
// set reads must never be evicted, so the policy is re-implemented here in
// a compact form:
//
//   - frequency: a count-min sketch of 4 rows of saturating 8-bit counters
//     (capped at 15 like TinyLFU's 4-bit counters), incremented once per
//     (query, term) use; every 10 × width increments all counters are
//     halved (TinyLFU's reset, so that popularity ages);
//   - eviction: sampled LFU, victims are the least frequent of
//     evictSample random resident lists that are not pinned;
//   - admission: a missing list must be uploaded anyway (the queries need
//     it), so admission decides whether it is kept: a list whose estimate
//     is below the first victim's is admitted as "transient" and is the
//     first to go on the next eviction (so one-hit lists do not push out
//     popular ones, TinyLFU's purpose).
//
// Space is a first-fit free list over the arena (16-byte aligned lists,
// coalescing frees). When fragmentation leaves no hole although enough
// bytes are free, and no launch set is running, the arena is emptied and
// the set's lists are uploaded contiguously (counted in Profile.CacheFlushes).
//
// Overlap (Backend.SearchBatch): the lists of set i+1 are staged into a
// pinned host buffer (two, alternating) and copied on a second stream
// while set i runs on the main stream; set i's lists are pinned so that
// this prefetch never evicts them. Before set i+1 runs, the host waits for
// the copy's event (Profile.CacheWait). A prefetch that does not fit next
// to set i's lists is retried after set i ends. The per-term table
// (Backend.terms) entries of uploaded lists are rewritten on the same
// copy stream; entries of evicted lists are left stale and are never read
// (kernels read the entries of their set's terms only).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
)

const (
	// DefaultCacheFraction is the share of the free device memory that the
	// list arena gets when Options.CacheBytes is 0 and the index does not
	// fit (the rest is left to the launch sets' work buffers).
	DefaultCacheFraction = 0.5
	// residentFraction: an index whose postings fit into this share of the
	// free device memory is uploaded whole when Options.CacheBytes is 0.
	residentFraction = 0.8
	evictSample      = 5
	sketchRows       = 4
	sketchMax        = 15
)

// centry is one term's cache state.
type centry struct {
	off       int64 // arena offset, -1 when not resident
	slot      int32 // index in listCache.res
	transient bool  // admitted for one use only
}

// hole is a free arena range.
type hole struct{ off, size int64 }

// CacheStats counts the list cache's traffic (Profile.Cache).
type CacheStats struct {
	Lookups, Hits         int64         // lists needed by launch sets, resident ones
	LookupBytes, HitBytes int64         // their bytes
	Uploaded              int64         // bytes copied to the device (misses)
	Evictions             int64         // lists evicted
	Flushes               int64         // arena emptied because of fragmentation
	Prefetched            int64         // launch sets whose lists were uploaded while the previous one ran
	Wait                  time.Duration // host time waiting for list uploads
}

// HitRate is Hits/Lookups (1 with no lookups).
func (s CacheStats) HitRate() float64 {
	if s.Lookups == 0 {
		return 1
	}
	return float64(s.Hits) / float64(s.Lookups)
}

// ByteHitRate is HitBytes/LookupBytes (1 with no lookups).
func (s CacheStats) ByteHitRate() float64 {
	if s.LookupBytes == 0 {
		return 1
	}
	return float64(s.HitBytes) / float64(s.LookupBytes)
}

func (s *CacheStats) add(o CacheStats) {
	s.Lookups += o.Lookups
	s.Hits += o.Hits
	s.LookupBytes += o.LookupBytes
	s.HitBytes += o.HitBytes
	s.Uploaded += o.Uploaded
	s.Evictions += o.Evictions
	s.Flushes += o.Flushes
	s.Prefetched += o.Prefetched
	s.Wait += o.Wait
}

// listCache manages the arena b.post. All methods run on the context's
// thread with b.mu held.
type listCache struct {
	b      *Backend
	budget int64
	size   []int64 // per term: arena bytes (align16 of skip+docs+freqs)
	ent    []centry
	res    []int32 // resident terms
	free   []hole  // ascending offsets, coalesced
	mark   []uint32
	gen    uint32
	fmark  []uint32 // set formation marks
	fgen   uint32
	sk     sketch
	rng    uint64

	copy    *cuda.Stream
	stage   [2]pinned
	ev      [2]*cuda.Event
	pending [2]bool
	cur     int

	need    []int32 // scratch: distinct terms of a load
	missing []int32
	placed  []int32
	offs    []int64
	stats   CacheStats
}

func newListCache(b *Backend, budget int64, size []int64) (*listCache, error) {
	nt := len(size)
	c := &listCache{b: b, budget: budget, size: size, ent: make([]centry, nt), mark: make([]uint32, nt),
		fmark: make([]uint32, nt), free: []hole{{0, budget}}, rng: 0x9e3779b97f4a7c15}
	for t := range c.ent {
		c.ent[t] = centry{off: -1, slot: -1}
	}
	c.sk.init(nt)
	var err error
	if c.copy, err = b.ctx.NewStream(); err != nil {
		return nil, err
	}
	for i := range c.ev {
		c.stage[i].ctx = b.ctx
		if c.ev[i], err = b.ctx.NewEvent(); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// close waits for pending copies and frees the stream, events and staging.
func (c *listCache) close() error {
	var errs []error
	if c.copy != nil {
		errs = append(errs, c.copy.Synchronize(), c.copy.Destroy())
		c.copy = nil
	}
	for i := range c.ev {
		if c.ev[i] != nil {
			errs = append(errs, c.ev[i].Destroy())
			c.ev[i] = nil
		}
		errs = append(errs, c.stage[i].free())
	}
	return errors.Join(errs...)
}

// querySize is the arena bytes of p's distinct lists (p.terms are
// distinct).
func (c *listCache) querySize(p *prep) int64 {
	var n int64
	for _, t := range p.terms {
		n += c.size[t.id]
	}
	return n
}

// formStart begins a launch set for set formation.
func (c *listCache) formStart() int64 {
	c.fgen++
	if c.fgen == 0 {
		clear(c.fmark)
		c.fgen = 1
	}
	return 0
}

// formAdd returns the bytes p adds to the set being formed (its lists not
// yet counted) and, with commit, counts them.
func (c *listCache) formAdd(p *prep, commit bool) int64 {
	var n int64
	for _, t := range p.terms {
		if c.fmark[t.id] != c.fgen {
			n += c.size[t.id]
			if commit {
				c.fmark[t.id] = c.fgen
			}
		}
	}
	return n
}

func (c *listCache) nextGen() {
	c.gen++
	if c.gen == 0 {
		clear(c.mark)
		c.gen = 1
	}
}

// load makes the lists of set resident, uploading the missing ones on the
// copy stream; the lists of busy (a set that may be running) are neither
// evicted nor moved. It returns false, having enqueued nothing, when the
// lists cannot be placed without touching busy's; with busy == nil it
// always succeeds for a set whose lists fit the budget (set formation
// guarantees it). Call wait before launching work that reads them.
func (c *listCache) load(set, busy []*prep) (bool, error) {
	c.nextGen()
	var st CacheStats
	c.need = c.need[:0]
	for _, p := range set {
		for _, t := range p.terms {
			c.sk.add(uint32(t.id))
			if c.mark[t.id] != c.gen {
				c.mark[t.id] = c.gen
				c.need = append(c.need, int32(t.id))
			}
		}
	}
	for _, p := range busy {
		for _, t := range p.terms {
			c.mark[t.id] = c.gen
		}
	}
	c.missing = c.missing[:0]
	var total int64
	for _, t := range c.need {
		st.Lookups++
		st.LookupBytes += c.size[t]
		if e := &c.ent[t]; e.off >= 0 {
			st.Hits++
			st.HitBytes += c.size[t]
			e.transient = false // used again: keep it
		} else {
			c.missing = append(c.missing, t)
			total += c.size[t]
		}
	}
	if total > c.budget {
		return false, fmt.Errorf("BUG: gpu: launch set of %d list bytes for a cache of %d", total, c.budget)
	}
	c.sortMissing()
	if !c.place() {
		if busy != nil {
			return false, nil
		}
		// Fragmented: nothing runs, start over with an empty arena and
		// upload all the set's lists (the hits too).
		st.Flushes++
		for len(c.res) > 0 {
			c.evict(c.res[len(c.res)-1], &st)
		}
		c.missing = append(c.missing[:0], c.need...)
		c.sortMissing()
		total, st.Hits, st.HitBytes = 0, 0, 0
		for _, t := range c.missing {
			total += c.size[t]
		}
		if !c.place() {
			panic("BUG: gpu: a launch set's lists do not fit the empty list cache")
		}
	}
	if len(c.missing) > 0 {
		if err := c.upload(total); err != nil {
			// The arena's content is unknown: forget it.
			for len(c.res) > 0 {
				c.evict(c.res[len(c.res)-1], &st)
			}
			c.stats.add(st)
			return false, err
		}
	}
	if busy != nil {
		st.Prefetched++
	}
	st.Uploaded += total
	c.stats.add(st)
	return true, nil
}

// sortMissing puts the largest lists first (fewer holes).
func (c *listCache) sortMissing() {
	slices.SortFunc(c.missing, func(a, b int32) int {
		if c.size[a] != c.size[b] {
			if c.size[a] > c.size[b] {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
}

// place assigns arena space to c.missing, evicting unpinned lists; on
// failure it undoes its placements (evictions stay) and returns false.
func (c *listCache) place() bool {
	c.placed = c.placed[:0]
	var st CacheStats
	for _, t := range c.missing {
		sz := c.size[t]
		first := true
		transient := false
		for {
			if off, ok := c.alloc(sz); ok {
				c.insert(t, off, transient)
				c.placed = append(c.placed, t)
				break
			}
			v := c.victim()
			if v < 0 {
				for _, p := range c.placed {
					c.evict(p, &st)
				}
				st.Evictions -= int64(len(c.placed))
				c.stats.add(st)
				return false
			}
			if first {
				// TinyLFU admission: less popular than the victim → kept
				// for this use only.
				transient = c.sk.estimate(uint32(t)) < c.sk.estimate(uint32(v)) && !c.ent[v].transient
				first = false
			}
			c.evict(v, &st)
		}
	}
	c.stats.add(st)
	return true
}

// upload stages c.missing (placed) and enqueues their copies and term
// table entries on the copy stream, then records the stage's event.
func (c *listCache) upload(total int64) error {
	k := c.cur
	c.cur ^= 1
	if c.pending[k] {
		if err := c.ev[k].Synchronize(); err != nil {
			return err
		}
		c.pending[k] = false
	}
	metaBytes := 4 * kern.TermMetaWords
	need := int(total) + metaBytes*len(c.missing)
	if err := c.stage[k].reset(need); err != nil {
		return err
	}
	stg := &c.stage[k]
	stg.take(need)
	h := stg.h.Bytes()
	x := c.b.x
	// Offsets in the staging buffer: lists, then term entries.
	c.offs = c.offs[:0]
	var o int64
	for _, t := range c.missing {
		c.offs = append(c.offs, o)
		o += c.size[t]
	}
	parallel(len(c.missing), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			t := int(c.missing[i])
			l, err := x.BlockCodedList(t)
			if err != nil {
				panic(fmt.Sprintf("BUG: gpu: term %d, read by New: %v", t, err))
			}
			o := c.offs[i]
			dst := h[o : o+c.size[t]]
			n := copy(dst, l.SkipBytes())
			n += copy(dst[n:], l.DocBytes())
			n += copy(dst[n:], l.FreqBytes())
			clear(dst[n:])
			off := uint64(c.ent[t].off)
			sk, d := uint64(len(l.SkipBytes())), uint64(len(l.DocBytes()))
			w := cuda.HostSlice[uint32](stg.h)[(int(total)+metaBytes*i)/4:]
			kern.PutTermMeta(w, off, off+sk, off+sk+d, uint32(l.NBlocks), l.DF)
		}
	})
	for i, t := range c.missing {
		if err := c.copy.CopyToDevice(c.b.post, int(c.ent[t].off), stg.h, int(c.offs[i]), int(c.size[t])); err != nil {
			return err
		}
		if err := c.copy.CopyToDevice(c.b.terms, metaBytes*int(t), stg.h, int(total)+metaBytes*i, metaBytes); err != nil {
			return err
		}
	}
	if err := c.ev[k].Record(c.copy); err != nil {
		return err
	}
	c.pending[k] = true
	return nil
}

// wait blocks until every enqueued upload is complete.
func (c *listCache) wait() error {
	start := time.Now()
	for k := range c.ev {
		if c.pending[k] {
			if err := c.ev[k].Synchronize(); err != nil {
				return err
			}
			c.pending[k] = false
		}
	}
	c.stats.Wait += time.Since(start)
	return nil
}

func (c *listCache) insert(t int32, off int64, transient bool) {
	c.ent[t] = centry{off: off, slot: int32(len(c.res)), transient: transient}
	c.res = append(c.res, t)
}

func (c *listCache) evict(t int32, st *CacheStats) {
	e := &c.ent[t]
	if e.off < 0 {
		panic("BUG: gpu: evicting a list that is not resident")
	}
	c.release(e.off, c.size[t])
	last := c.res[len(c.res)-1]
	c.res[e.slot] = last
	c.ent[last].slot = e.slot
	c.res = c.res[:len(c.res)-1]
	*e = centry{off: -1, slot: -1}
	st.Evictions++
}

// victim returns the least frequent of evictSample random unpinned
// resident lists (transient ones first), or -1 when all are pinned.
func (c *listCache) victim() int32 {
	best := int32(-1)
	var bestScore int
	found := 0
	for try := 0; try < 4*evictSample && found < evictSample && len(c.res) > 0; try++ {
		t := c.res[c.rand(len(c.res))]
		if c.mark[t] == c.gen {
			continue
		}
		found++
		s := int(c.sk.estimate(uint32(t)))
		if c.ent[t].transient {
			s = -1
		}
		if best < 0 || s < bestScore {
			best, bestScore = t, s
		}
	}
	if best >= 0 {
		return best
	}
	for _, t := range c.res { // mostly pinned: scan
		if c.mark[t] != c.gen {
			return t
		}
	}
	return -1
}

func (c *listCache) rand(n int) int {
	c.rng ^= c.rng << 13
	c.rng ^= c.rng >> 7
	c.rng ^= c.rng << 17
	return int(c.rng % uint64(n))
}

// alloc takes size bytes from the first hole that holds them.
func (c *listCache) alloc(size int64) (int64, bool) {
	for i := range c.free {
		h := &c.free[i]
		if h.size >= size {
			off := h.off
			h.off += size
			h.size -= size
			if h.size == 0 {
				c.free = slices.Delete(c.free, i, i+1)
			}
			return off, true
		}
	}
	return 0, false
}

// release returns [off, off+size) to the free list, coalescing.
func (c *listCache) release(off, size int64) {
	i, _ := slices.BinarySearchFunc(c.free, off, func(h hole, o int64) int {
		switch {
		case h.off < o:
			return -1
		case h.off > o:
			return 1
		}
		return 0
	})
	if i > 0 && c.free[i-1].off+c.free[i-1].size > off || i < len(c.free) && off+size > c.free[i].off {
		panic("BUG: gpu: list cache frees a free range")
	}
	switch {
	case i > 0 && c.free[i-1].off+c.free[i-1].size == off && i < len(c.free) && off+size == c.free[i].off:
		c.free[i-1].size += size + c.free[i].size
		c.free = slices.Delete(c.free, i, i+1)
	case i > 0 && c.free[i-1].off+c.free[i-1].size == off:
		c.free[i-1].size += size
	case i < len(c.free) && off+size == c.free[i].off:
		c.free[i].off = off
		c.free[i].size += size
	default:
		c.free = slices.Insert(c.free, i, hole{off, size})
	}
}

// sketch is a count-min sketch with saturating counters and TinyLFU's
// periodic halving.
type sketch struct {
	rows      [sketchRows][]uint8
	mask      uint32
	adds, cap int
}

func (s *sketch) init(nterms int) {
	w := 1024
	for w < 2*nterms && w < 1<<22 {
		w <<= 1
	}
	for i := range s.rows {
		s.rows[i] = make([]uint8, w)
	}
	s.mask = uint32(w - 1)
	s.cap = 10 * w
}

func sketchHash(t uint32, row int) uint32 {
	h := uint64(t)*0x9e3779b97f4a7c15 + uint64(row+1)*0xbf58476d1ce4e5b9
	h ^= h >> 31
	h *= 0x94d049bb133111eb
	h ^= h >> 29
	return uint32(h)
}

func (s *sketch) add(t uint32) {
	for i := range s.rows {
		c := &s.rows[i][sketchHash(t, i)&s.mask]
		if *c < sketchMax {
			*c++
		}
	}
	s.adds++
	if s.adds >= s.cap {
		for i := range s.rows {
			for j := range s.rows[i] {
				s.rows[i][j] >>= 1
			}
		}
		s.adds /= 2
	}
}

func (s *sketch) estimate(t uint32) uint8 {
	m := uint8(sketchMax)
	for i := range s.rows {
		m = min(m, s.rows[i][sketchHash(t, i)&s.mask])
	}
	return m
}

// CacheBytes is the list cache's budget, 0 when the whole index is
// resident.
func (b *Backend) CacheBytes() int64 {
	if b.lc == nil {
		return 0
	}
	return b.lc.budget
}

// cacheBudget decides the residency of an index whose postings and norms
// take need bytes: 0 (everything resident) or a list cache's budget.
func (b *Backend) cacheBudget(need int64) (int64, error) {
	if cb := b.opt.CacheBytes; cb > 0 {
		if b.resident <= cb {
			return 0, nil
		}
		return cb &^ 15, nil
	}
	free, _, err := b.ctx.MemInfo()
	if err != nil {
		return 0, fmt.Errorf("gpu: %w", err)
	}
	if float64(need) <= residentFraction*float64(free) {
		return 0, nil
	}
	return int64(DefaultCacheFraction*float64(free)) &^ 15, nil
}

// initCache allocates the list arena, a zeroed term table and the norms,
// and creates the list cache; lists are uploaded on demand.
func (b *Backend) initCache(budget int64, meta []uint32) error {
	x := b.x
	size := make([]int64, x.NumTerms())
	for t := range size {
		l, err := x.BlockCodedList(t)
		if err != nil {
			return fmt.Errorf("gpu: %w", err)
		}
		size[t] = int64(align16(uint64(len(l.SkipBytes()) + len(l.DocBytes()) + len(l.FreqBytes()))))
	}
	var err error
	// The decoders read whole aligned 16-byte chunks: keep 16 spare bytes.
	if b.post, err = b.ctx.Alloc(int(budget) + 16); err != nil {
		return fmt.Errorf("gpu: list cache of %d bytes: %w", budget, err)
	}
	clear(meta)
	if b.terms, err = b.ctx.Alloc(4 * len(meta)); err != nil {
		return fmt.Errorf("gpu: term table: %w", err)
	}
	if err := cuda.CopyToDevice(b.terms, 0, meta); err != nil {
		return fmt.Errorf("gpu: term table: %w", err)
	}
	if b.lc, err = newListCache(b, budget, size); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	return b.initNorms()
}

// runCached is SearchBatch's loop over launch sets with a list cache: sets
// are formed like without it (PARA threshold) and, in addition, hold at
// most half the budget of distinct lists (so that the next set's lists can
// be uploaded while one runs; a query larger than that runs alone, and one
// larger than the budget fails with cuda.ErrOutOfMemory).
func (b *Backend) runCached(ctx context.Context, work []*prep, out []engine.Response) error {
	c := b.lc
	k := 0
	for _, p := range work {
		if sz := c.querySize(p); sz > c.budget {
			out[p.i].Err = fmt.Errorf("gpu: query %q: %d bytes of posting lists, the GPU list cache holds %d: %w",
				p.q.ID, sz, c.budget, cuda.ErrOutOfMemory)
			continue
		}
		work[k] = p
		k++
	}
	work = work[:k]
	next := func() []*prep {
		if len(work) == 0 {
			return nil
		}
		n, sb := 0, setBudget{}
		bytes, limit := c.formStart(), c.budget/2
		for n < len(work) && sb.fits(b, n) {
			add := c.formAdd(work[n], false)
			if bytes+add > limit && n > 0 {
				break
			}
			c.formAdd(work[n], true)
			bytes += add
			sb.add(b, work[n])
			n++
		}
		set := work[:n]
		work = work[n:]
		return set
	}
	fail := func(set []*prep, err error) {
		for _, p := range set {
			out[p.i].Results, out[p.i].Stats, out[p.i].Err = out[p.i].Results[:0], engine.Stats{}, err
		}
	}
	loaded := false
	for cur := next(); cur != nil; {
		if err := ctx.Err(); err != nil {
			fail(cur, err)
			fail(work, err)
			return c.wait()
		}
		if !loaded {
			if _, err := c.load(cur, nil); err != nil {
				for _, p := range cur {
					out[p.i].Results, out[p.i].Stats = out[p.i].Results[:0], engine.Stats{}
					out[p.i].Err = fmt.Errorf("gpu: query %q: uploading posting lists: %w", p.q.ID, err)
				}
				cur, loaded = next(), false
				continue
			}
		}
		if err := c.wait(); err != nil {
			return err
		}
		if cacheCheck {
			if err := c.check(cur); err != nil {
				return err
			}
		}
		nxt := next()
		loaded = false
		if nxt != nil {
			// Upload the next set's lists on the copy stream while cur runs.
			ok, err := c.load(nxt, cur)
			loaded = ok && err == nil
		}
		b.runSplit(cur, out)
		cur = nxt
	}
	return nil
}

// cacheCheck makes runCached verify, before each set runs, that its lists
// are resident and the device term table points at them (tests).
var cacheCheck = false

// check is cacheCheck's verification; the copy stream must be idle.
func (c *listCache) check(set []*prep) error {
	meta := make([]uint32, len(c.ent)*kern.TermMetaWords)
	if err := cuda.CopyFromDevice(meta, c.b.terms, 0); err != nil {
		return err
	}
	for _, p := range set {
		for _, t := range p.terms {
			e := c.ent[t.id]
			w := meta[kern.TermMetaWords*t.id:]
			if e.off < 0 || uint64(w[0])|uint64(w[1])<<32 != uint64(e.off) || w[7] != t.df {
				return fmt.Errorf("BUG: gpu: query %q term %d: cache entry %+v, device entry %v", p.q.ID, t.id, e, w[:8])
			}
		}
	}
	return nil
}
