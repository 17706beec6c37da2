// Package cache is a query result cache for qp: top-k results keyed by the
// normalized query, its mode and k, the BM25 parameters and the identity
// of the index, held in a ristretto cache (TinyLFU admission, sampled LFU
// eviction, bounded by bytes), with hit and miss counters. Backend wraps
// any engine.Backend with it.
//
// A cached result is exactly the result the backend returned for an
// equivalent query: two queries share a key only when qp's engines are
// required to rank them identically (engine.Backend's contract), and
// every lookup compares the full key, not only its hashes.
package cache

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/topk"
)

// Config sizes a Cache.
type Config struct {
	// MaxBytes bounds the cached results and keys (approximately: each
	// entry costs its key, 8 bytes per result and entryOverhead). Default
	// 64 MiB.
	MaxBytes int64
	// NumCounters is the number of ristretto's admission counters; its
	// authors advise ten times the number of entries the cache holds when
	// full. Default: 10 × MaxBytes / 256 (entries of about 256 bytes, a
	// top-10 to top-30 result).
	NumCounters int64
}

// DefaultMaxBytes is the default Config.MaxBytes.
const DefaultMaxBytes = 64 << 20

// entryOverhead is the cost charged per entry on top of its key and
// results: the entry and slice headers and ristretto's per-item storage.
const entryOverhead = 96

// Cache caches query results. It is safe for concurrent use. Admission
// is asynchronous (ristretto buffers Sets): a result may become visible
// to Get a little after Set returns, or not at all if the buffer was full
// or the admission policy rejected it; Wait applies every buffered Set.
type Cache struct {
	rc           *ristretto.Cache[string, *entry]
	hits, misses atomic.Uint64

	mu     sync.Mutex
	ids    map[weak.Pointer[index.Index]]uint64
	nextID uint64
}

// entry is a cached value: the full key (compared on every hit, so that a
// collision of ristretto's two 64-bit hashes cannot serve another query's
// results) and the results, never modified after Set.
type entry struct {
	key     string
	results []topk.Result
}

// New returns an empty cache. Close it to stop ristretto's goroutines.
func New(cfg Config) (*Cache, error) {
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxBytes < 0 || cfg.NumCounters < 0 {
		return nil, fmt.Errorf("cache: negative size (%d bytes, %d counters)", cfg.MaxBytes, cfg.NumCounters)
	}
	if cfg.NumCounters == 0 {
		cfg.NumCounters = max(10*cfg.MaxBytes/256, 1000)
	}
	rc, err := ristretto.NewCache(&ristretto.Config[string, *entry]{
		NumCounters:        cfg.NumCounters,
		MaxCost:            cfg.MaxBytes,
		BufferItems:        64, // ristretto's recommended Get buffer size
		IgnoreInternalCost: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &Cache{rc: rc, ids: map[weak.Pointer[index.Index]]uint64{}}, nil
}

// Close releases the cache's goroutines; it must not be used afterwards.
func (c *Cache) Close() { c.rc.Close() }

// Wait blocks until every Set so far has been applied (or rejected).
func (c *Cache) Wait() { c.rc.Wait() }

// Clear removes every entry (the counters are kept).
func (c *Cache) Clear() { c.rc.Clear() }

// indexID returns the number this cache has given to x. Numbers are never
// reused, and the cache holds x only weakly, so the entries of an index
// that has been collected can never be served for a new index allocated
// at the same address: they just age out.
func (c *Cache) indexID(x *index.Index) uint64 {
	wp := weak.Make(x)
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.ids[wp]; ok {
		return id
	}
	c.nextID++
	id := c.nextID
	c.ids[wp] = id
	runtime.AddCleanup(x, func(wp weak.Pointer[index.Index]) {
		c.mu.Lock()
		delete(c.ids, wp)
		c.mu.Unlock()
	}, wp)
	return id
}

// Key returns the cache key of q on x:
//
//	index number, BM25 k1 and b, mode, k, then the sorted terms, each
//	with its multiplicity (1 without QTF, where duplicates count once;
//	the number of occurrences with QTF, where each weighs its score)
//
// in a binary encoding with length-prefixed terms. Term order does not
// change a result, so it is not part of the key; and the QTF flag is not
// either, since a query without repeated terms ranks identically with and
// without it. Unknown terms stay in the key (they empty an AND). The
// algorithm choice (engine.Options) is not part of the key: every
// algorithm returns the exact same result. Invalid queries have keys too,
// but their (error) responses are never cached.
func (c *Cache) Key(x *index.Index, q engine.Query) string {
	if x == nil {
		panic("BUG: cache: nil index")
	}
	terms := slices.Clone(q.Terms)
	slices.Sort(terms)
	p := x.Params()
	b := make([]byte, 0, 32+8*len(terms))
	b = binary.AppendUvarint(b, c.indexID(x))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.K1))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.B))
	b = append(b, byte(q.Mode))
	b = binary.AppendVarint(b, int64(q.K))
	for i := 0; i < len(terms); {
		j := i + 1
		for j < len(terms) && terms[j] == terms[i] {
			j++
		}
		mult := 1
		if q.QTF {
			mult = j - i
		}
		b = binary.AppendUvarint(b, uint64(len(terms[i])))
		b = append(b, terms[i]...)
		b = binary.AppendUvarint(b, uint64(mult))
		i = j
	}
	return string(b)
}

// Get appends q's cached results on x to dst[:0] and reports whether it
// found them, counting a hit or a miss.
func (c *Cache) Get(dst []topk.Result, x *index.Index, q engine.Query) ([]topk.Result, bool) {
	return c.get(dst, c.Key(x, q))
}

func (c *Cache) get(dst []topk.Result, key string) ([]topk.Result, bool) {
	if e, ok := c.rc.Get(key); ok {
		if e != nil && e.key == key {
			c.hits.Add(1)
			return append(dst[:0], e.results...), true
		}
	}
	c.misses.Add(1)
	return dst, false
}

// Set caches a copy of results as q's results on x. It reports whether
// the entry was handed to the admission policy (which may still reject
// it); it is applied asynchronously (see Wait).
func (c *Cache) Set(x *index.Index, q engine.Query, results []topk.Result) bool {
	return c.set(c.Key(x, q), results)
}

func (c *Cache) set(key string, results []topk.Result) bool {
	e := &entry{key: key, results: slices.Clone(results)}
	if e.results == nil {
		e.results = []topk.Result{}
	}
	cost := int64(len(key)) + int64(len(results))*int64(unsafe.Sizeof(topk.Result{})) + entryOverhead
	return c.rc.Set(key, e, cost)
}

// Stats are a cache's counters.
type Stats struct {
	Hits, Misses uint64
}

// HitRate is Hits / (Hits + Misses), 0 before any lookup.
func (s Stats) HitRate() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Misses)
}

func (s Stats) String() string {
	return fmt.Sprintf("%d hits, %d misses, hit rate %.1f%%", s.Hits, s.Misses, 100*s.HitRate())
}

// Stats returns the counters.
func (c *Cache) Stats() Stats { return Stats{Hits: c.hits.Load(), Misses: c.misses.Load()} }

// ResetStats zeroes the counters.
func (c *Cache) ResetStats() {
	c.hits.Store(0)
	c.misses.Store(0)
}

// Backend is an engine.Backend that answers queries from a Cache and
// passes the misses of a batch to another backend in one batch.
type Backend struct {
	c    *Cache
	x    *index.Index
	next engine.Backend
}

// NewBackend returns next with c in front. x must be the index next
// searches: it is part of every key, so one Cache can serve backends over
// several indexes (shards, or an old and a new index) without ever mixing
// their results; a wrong x would.
func NewBackend(c *Cache, x *index.Index, next engine.Backend) *Backend {
	if c == nil || x == nil || next == nil {
		panic("BUG: cache: NewBackend with a nil cache, index or backend")
	}
	return &Backend{c: c, x: x, next: next}
}

// Name implements engine.Backend: the wrapped backend's name plus "+cache".
func (b *Backend) Name() string { return b.next.Name() + "+cache" }

// Cache returns b's cache.
func (b *Backend) Cache() *Cache { return b.c }

// SearchBatch implements engine.Backend. Hits get the cached results and
// zero Stats (nothing was decoded). Misses go to the wrapped backend in one
// batch, in their order, each distinct key once (a query repeated within
// the batch runs once, its repeats get copies and count as hits); their
// successful results are then cached. Per-query errors are passed through
// and never cached. Invalid options or a cancelled context fail the batch
// as the wrapped backend's contract says.
func (b *Backend) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	if len(out) != len(qs) {
		return fmt.Errorf("cache: %d responses for %d queries", len(out), len(qs))
	}
	if _, err := opt.Resolve(); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if err := ctx.Err(); err != nil {
		for i := range out {
			out[i] = engine.Response{Results: out[i].Results[:0], Err: err}
		}
		return err
	}
	keys := make([]string, len(qs))
	var missIdx []int         // positions of queries to run
	var dupOf map[int]int     // position -> position of the same key in missIdx's queries
	first := map[string]int{} // key -> position of its first miss in this batch
	for i, q := range qs {
		keys[i] = b.c.Key(b.x, q)
		if j, ok := first[keys[i]]; ok {
			if dupOf == nil {
				dupOf = map[int]int{}
			}
			dupOf[i] = j
			b.c.hits.Add(1)
			continue
		}
		var hit bool
		out[i].Results, hit = b.c.get(out[i].Results, keys[i])
		if hit {
			out[i].Stats, out[i].Err = engine.Stats{}, nil
			continue
		}
		first[keys[i]] = i
		missIdx = append(missIdx, i)
	}
	var err error
	if len(missIdx) > 0 {
		mqs := make([]engine.Query, len(missIdx))
		mout := make([]engine.Response, len(missIdx))
		for k, i := range missIdx {
			mqs[k] = qs[i]
			mout[k].Results = out[i].Results // let the backend reuse the storage
		}
		err = b.next.SearchBatch(ctx, mqs, opt, mout)
		for k, i := range missIdx {
			out[i] = mout[k]
			if err == nil && mout[k].Err == nil {
				b.c.set(keys[i], mout[k].Results)
			}
		}
	}
	for i, j := range dupOf {
		out[i] = engine.Response{Results: append(out[i].Results[:0], out[j].Results...), Stats: engine.Stats{}, Err: out[j].Err}
	}
	return err
}

var _ engine.Backend = (*Backend)(nil)
