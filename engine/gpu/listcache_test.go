package gpu

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/engine"
)

// bareCache is a listCache without a device, for the allocator and policy.
func bareCache(budget int64, size []int64) *listCache {
	c := &listCache{budget: budget, size: size, ent: make([]centry, len(size)), mark: make([]uint32, len(size)),
		fmark: make([]uint32, len(size)), free: []hole{{0, budget}}, rng: 1}
	for t := range c.ent {
		c.ent[t] = centry{off: -1, slot: -1}
	}
	c.sk.init(len(size))
	return c
}

// checkArena verifies that resident lists and holes tile [0, budget)
// without overlap, holes are coalesced and the slots are consistent.
func checkArena(t *testing.T, c *listCache) {
	t.Helper()
	owner := make([]int, c.budget/16)
	for i := range owner {
		owner[i] = -2
	}
	for i, h := range c.free {
		if i > 0 && c.free[i-1].off+c.free[i-1].size >= h.off {
			t.Fatalf("holes %v and %v overlap or are not coalesced", c.free[i-1], h)
		}
		for o := h.off / 16; o < (h.off+h.size)/16; o++ {
			owner[o] = -1
		}
	}
	for s, term := range c.res {
		e := c.ent[term]
		if int(e.slot) != s || e.off < 0 {
			t.Fatalf("term %d: entry %+v in slot %d", term, e, s)
		}
		for o := e.off / 16; o < (e.off+c.size[term])/16; o++ {
			if owner[o] != -2 {
				t.Fatalf("term %d at %d overlaps %d", term, e.off, owner[o])
			}
			owner[o] = int(term)
		}
	}
	for o, w := range owner {
		if w == -2 {
			t.Fatalf("arena chunk %d is neither free nor used", o)
		}
	}
}

// TestListCachePlace drives placement and eviction with random sets and
// checks the arena invariants, pinning, and that a set that fits is
// always placed when nothing is busy (after a flush at worst).
func TestListCachePlace(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	const nt = 200
	size := make([]int64, nt)
	for i := range size {
		size[i] = 16 * int64(1+rng.Intn(40)*rng.Intn(4))
	}
	c := bareCache(16*400, size)
	flushes := 0
	for round := 0; round < 3000; round++ {
		// A "busy" set and a set to place.
		var busy, need []int32
		var busyBytes int64
		for len(busy) < 3 {
			x := int32(rng.Intn(nt))
			if c.ent[x].off >= 0 {
				busy = append(busy, x)
				busyBytes += size[x]
			}
			if len(c.res) < 3 {
				break
			}
		}
		c.nextGen()
		for _, x := range busy {
			c.mark[x] = c.gen
		}
		var bytes int64
		for len(need) < 1+rng.Intn(6) {
			x := int32(rng.Intn(nt))
			if c.mark[x] == c.gen || bytes+size[x] > c.budget-busyBytes {
				break
			}
			c.mark[x] = c.gen
			c.sk.add(uint32(x))
			need = append(need, x)
			bytes += size[x]
		}
		c.missing = c.missing[:0]
		for _, x := range need {
			if c.ent[x].off < 0 {
				c.missing = append(c.missing, x)
			}
		}
		withBusy := rng.Intn(2) == 0
		if !withBusy {
			c.nextGen()
			for _, x := range need {
				c.mark[x] = c.gen
			}
		}
		busyAt := map[int32]int64{}
		for _, x := range busy {
			busyAt[x] = c.ent[x].off
		}
		ok := c.place()
		if !ok && !withBusy {
			flushes++
			for len(c.res) > 0 {
				c.evict(c.res[len(c.res)-1], &CacheStats{})
			}
			c.missing = append(c.missing[:0], need...) // as load does
			c.sortMissing()
			if !c.place() {
				t.Fatalf("round %d: %d bytes do not fit an empty arena of %d", round, bytes, c.budget)
			}
			ok = true
		}
		checkArena(t, c)
		if ok {
			for _, x := range need {
				if c.ent[x].off < 0 {
					t.Fatalf("round %d: needed term %d not resident", round, x)
				}
			}
		}
		if withBusy {
			for x, off := range busyAt {
				if c.ent[x].off != off {
					t.Fatalf("round %d: busy term %d moved from %d to %d", round, x, off, c.ent[x].off)
				}
			}
		}
	}
	t.Logf("%d flushes, %d resident", flushes, len(c.res))
}

// TestSketch checks that the count-min estimates never undercount (below
// the cap) and that halving ages them.
func TestSketch(t *testing.T) {
	var s sketch
	s.init(1000)
	for x := uint32(0); x < 1000; x++ {
		for range x % 12 {
			s.add(x)
		}
	}
	for x := uint32(0); x < 1000; x++ {
		if got := s.estimate(x); got < uint8(x%12) {
			t.Fatalf("estimate(%d) = %d < %d", x, got, x%12)
		}
	}
	for i := 0; i < 30; i++ {
		s.add(7)
	}
	if got := s.estimate(7); got != sketchMax {
		t.Fatalf("estimate(7) = %d, want the cap %d", got, sketchMax)
	}
	for s.adds != 0 && s.estimate(7) == sketchMax {
		s.add(uint32(1 << 20))
	}
	if got := s.estimate(7); got >= sketchMax {
		t.Fatalf("estimate(7) = %d after a reset", got)
	}
}

// TestCacheDifferential runs the differential queries with list caches
// far smaller than the index (forcing misses, evictions and prefetches)
// and requires the CPU's results.
func TestCacheDifferential(t *testing.T) {
	c := testContext(t)
	nq := 150
	if emulated(c) {
		nq = 60
	}
	cacheCheck = true
	defer func() { cacheCheck = false }()
	codec, _ := compress.ByName("bp128")
	modes := []engine.Mode{engine.And, engine.Or, engine.AndOr}
	var looked int64 // OR documents completed by rank (tiles of 64)
	for _, bs := range []int{16, 128} {
		t.Run(fmt.Sprintf("B%d", bs), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(bs)))
			col := genCollection(rng, 3000, 400, bs, bs == 16)
			x := col.write(t, codec)
			listBytes := func(id int) int64 {
				l, _ := x.List(id)
				return int64(align16(uint64(len(l.SkipBytes()) + len(l.DocBytes()) + len(l.FreqBytes()))))
			}
			// Queries of 1-4 terms drawn from the whole vocabulary (and a
			// few unknown or repeated terms), every mode, k 10 and 1000.
			var qs []engine.Query
			var largest, union int64
			all := map[int]bool{}
			for i := range nq {
				var ts []string
				seen := map[int]bool{}
				var n int64
				for range 1 + rng.Intn(4) {
					term := col.terms[rng.Intn(len(col.terms))]
					switch rng.Intn(12) {
					case 0:
						term = "zz-unknown"
					case 1:
						if len(ts) > 0 {
							term = ts[0]
						}
					}
					ts = append(ts, term)
					if id, ok := x.Lookup(term); ok && !seen[id] {
						seen[id] = true
						n += listBytes(id)
						if !all[id] {
							all[id] = true
							union += listBytes(id)
						}
					}
				}
				largest = max(largest, n)
				qs = append(qs, engine.Query{ID: fmt.Sprintf("q%d", i), Terms: ts, Mode: modes[i%3], K: []int{10, 1000}[i/3%2],
					QTF: i%5 == 0})
			}
			full := newBackend(t, x, Options{})
			if full.CacheBytes() != 0 {
				t.Fatalf("CacheBytes() = %d for a small index", full.CacheBytes())
			}
			total := full.ResidentBytes()
			for _, frac := range []float64{0.5, 0.2} {
				budget := (max(int64(frac*float64(union)), largest) + 15) &^ 15
				for _, thr := range []int{0, 1} {
					t.Run(fmt.Sprintf("budget=%d/c=%d", budget, thr), func(t *testing.T) {
						// c = 1 also takes tiles of 64 documents: the OR
						// tiles' split over the device bitmaps, on cached lists
						// (every OR query on the tiles; c = 0 answers those of
						// few postings whole).
						g := newBackend(t, x, Options{CacheBytes: budget, Threshold: thr, orTile: 64 * thr, orNoWhole: thr != 0})
						if g.CacheBytes() != budget || budget >= total {
							t.Fatalf("CacheBytes() = %d, want %d < %d", g.CacheBytes(), budget, total)
						}
						compare(t, x, g, qs)
						compare(t, x, g, qs) // warm cache
						p := g.Profile().Cache
						if p.Lookups == 0 || p.Uploaded == 0 || p.Hits == 0 || p.Hits >= p.Lookups {
							t.Fatalf("cache stats %+v: want misses and hits", p)
						}
						if p.Evictions == 0 {
							t.Fatalf("cache stats %+v: no evictions with %d of %d bytes", p, budget, union)
						}
						if thr != 0 && p.Prefetched == 0 {
							t.Fatalf("cache stats %+v: no set was prefetched", p)
						}
						looked += g.Profile().OrLookups
						t.Logf("%+v hit rate %.2f bytes %.2f", p, p.HitRate(), p.ByteHitRate())
					})
				}
			}
		})
	}
	if looked == 0 {
		t.Fatal("no OR document was completed by rank on cached lists")
	}
}

// TestCacheTooLarge: a query whose lists exceed the cache fails with
// cuda.ErrOutOfMemory, the others in its batch succeed.
func TestCacheTooLarge(t *testing.T) {
	testContext(t)
	rng := rand.New(rand.NewSource(3))
	codec, _ := compress.ByName("bp128")
	col := genCollection(rng, 4000, 30, 64, false)
	x := col.write(t, codec)
	sizes := make([]int64, x.NumTerms())
	var total int64
	for i := range sizes {
		l, _ := x.List(i)
		sizes[i] = int64(align16(uint64(len(l.SkipBytes()) + len(l.DocBytes()) + len(l.FreqBytes()))))
		total += sizes[i]
	}
	big := 0 // the longest list; the budget holds any other two
	for i := range sizes {
		if sizes[i] > sizes[big] {
			big = i
		}
	}
	var second int64
	for i := range sizes {
		if i != big {
			second = max(second, sizes[i])
		}
	}
	budget := (2*second + 15) &^ 15
	if budget >= sizes[big] {
		t.Skipf("lists too even: %d vs %d", sizes[big], second)
	}
	g := newBackend(t, x, Options{CacheBytes: budget})
	small := (big + 1) % len(sizes)
	qs := []engine.Query{
		{ID: "big", Terms: []string{x.Term(big)}, Mode: engine.Or, K: 10},
		{ID: "small", Terms: []string{x.Term(small)}, Mode: engine.Or, K: 10},
		{ID: "bigand", Terms: []string{x.Term(small), x.Term(big)}, Mode: engine.And, K: 10},
	}
	got := make([]engine.Response, len(qs))
	if err := g.SearchBatch(context.Background(), qs, engine.Options{}, got); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		if !errors.Is(got[i].Err, cuda.ErrOutOfMemory) {
			t.Fatalf("query %s: error %v, want cuda.ErrOutOfMemory", qs[i].ID, got[i].Err)
		}
	}
	want := make([]engine.Response, 1)
	if err := engine.NewCPU(x, 0).SearchBatch(context.Background(), qs[1:2], engine.Options{}, want); err != nil {
		t.Fatal(err)
	}
	if msg := sameResponse(got[1], want[0]); msg != "" {
		t.Fatal(msg)
	}
}

// BenchmarkListCache reports queries/s of the TREC 2006 queries over the
// synthetic collection ($QP_BENCH_INDEX, or gen's default) with the whole
// index resident, and with list caches of 100%, 50%, 25% and 10% of the
// queries' working set (the lists they read), with the hit rates (lists
// and bytes), MB uploaded per batch and host wait for uploads (Ding et
// al. WWW'09 §5 assume 50-80% hits). One op = one batch of all queries;
// the cache stays warm across ops.
func BenchmarkListCache(b *testing.B) {
	x, queries := genIndex(b)
	nq := 10000
	if v, err := strconv.Atoi(os.Getenv("QP_BENCH_QUERIES")); err == nil && v > 0 {
		nq = v
	}
	queries = queries[:min(len(queries), nq)]
	if ok, why := cuda.Available(); !ok {
		b.Skip("no usable GPU: " + why)
	}
	// The budgets are fractions of the queries' working set: the bytes of
	// the distinct lists they read (skip tables, docID and frequency
	// blocks), not of the whole index, most of which no query touches.
	var total int64
	seen := map[int]bool{}
	for _, ts := range queries {
		for _, term := range ts {
			id, ok := x.Lookup(term)
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			l, err := x.BlockCodedList(id)
			if err != nil {
				b.Fatal(err)
			}
			total += int64(len(l.SkipBytes())+len(l.DocBytes())+len(l.FreqBytes())+15) &^ 15
		}
	}
	b.Logf("working set: %d lists, %d MiB", len(seen), total>>20)
	for _, mode := range []engine.Mode{engine.And, engine.Or} {
		qs := make([]engine.Query, len(queries))
		for i, t := range queries {
			qs[i] = engine.Query{ID: fmt.Sprint(i), Terms: t, Mode: mode, K: 10}
		}
		out := make([]engine.Response, len(qs))
		for _, pct := range []int{0, 100, 50, 25, 10} {
			name := fmt.Sprintf("%v/budget=%d%%", mode, pct)
			if pct == 0 {
				name = fmt.Sprintf("%v/resident", mode)
			}
			b.Run(name, func(b *testing.B) {
				budget := total * int64(pct) / 100 // 0: the whole index resident
				g := newBackend(b, x, Options{CacheBytes: budget})
				run := func() {
					if err := g.SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
						b.Fatal(err)
					}
				}
				run() // warm-up
				g.ResetProfile()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					run()
				}
				b.StopTimer()
				fails := 0
				for _, r := range out {
					if r.Err != nil {
						if !errors.Is(r.Err, cuda.ErrOutOfMemory) {
							b.Fatal(r.Err)
						}
						fails++
					}
				}
				p := g.Profile().Cache
				b.ReportMetric(float64(b.N*len(qs))/b.Elapsed().Seconds(), "queries/s")
				b.ReportMetric(p.HitRate(), "hit-rate")
				b.ReportMetric(p.ByteHitRate(), "byte-hit-rate")
				b.ReportMetric(float64(p.Uploaded)/1e6/float64(b.N), "MB-uploaded/batch")
				b.ReportMetric(p.Wait.Seconds()*1e3/float64(b.N), "wait-ms/batch")
				b.ReportMetric(float64(fails), "too-large")
			})
		}
	}
}
