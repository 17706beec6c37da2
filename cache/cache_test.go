package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/score"
)

// buildIndex writes and opens a small random index (2000 documents, 60
// terms w00..w59 with document frequencies falling from 1000 to 3).
func buildIndex(t testing.TB, seed uint64) *index.Index {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	const n, terms = 2000, 60
	lens := make([]uint32, n)
	for i := range lens {
		lens[i] = 1
	}
	docs := make([][]uint32, terms)
	freqs := make([][]uint32, terms)
	for i := range terms {
		df := max(3, 1000/(i+1))
		perm := rng.Perm(n)[:df]
		slices.Sort(perm)
		for _, d := range perm {
			f := uint32(1 + rng.IntN(5))
			docs[i] = append(docs[i], uint32(d))
			freqs[i] = append(freqs[i], f)
			lens[d] += f
		}
	}
	col := &ref.Collection{Docs: docs, Freqs: freqs, Lens: lens}
	for i := range terms {
		col.Terms = append(col.Terms, fmt.Sprintf("w%02d", i))
	}
	x, err := col.WriteIndexWith(filepath.Join(t.TempDir(), "x.qp"), index.WriterOptions{BlockSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// distinctQueries returns n valid queries over w00..w59 (some with
// repeated terms, some with a term absent from the index).
func distinctQueries(n int, seed uint64) []engine.Query {
	rng := rand.New(rand.NewPCG(seed, 2))
	modes := []engine.Mode{engine.And, engine.Or, engine.AndOr}
	qs := make([]engine.Query, n)
	for i := range qs {
		q := engine.Query{ID: fmt.Sprint(i), Mode: modes[rng.IntN(3)], K: []int{5, 10, 50}[rng.IntN(3)], QTF: rng.IntN(3) == 0}
		for range 1 + rng.IntN(3) {
			q.Terms = append(q.Terms, fmt.Sprintf("w%02d", rng.IntN(60)))
		}
		if rng.IntN(4) == 0 {
			q.Terms = append(q.Terms, q.Terms[0])
		}
		if rng.IntN(20) == 0 {
			q.Terms = append(q.Terms, "absent")
		}
		qs[i] = q
	}
	return qs
}

func run(t testing.TB, b engine.Backend, qs []engine.Query) []engine.Response {
	t.Helper()
	out := make([]engine.Response, len(qs))
	if err := b.SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func same(a, b engine.Response) bool {
	if (a.Err == nil) != (b.Err == nil) || (a.Err != nil && a.Err.Error() != b.Err.Error()) {
		return false
	}
	return slices.Equal(a.Results, b.Results)
}

func newCache(t testing.TB) *Cache {
	t.Helper()
	c, err := New(Config{MaxBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestHitsEqualMisses replays a log with repeats through the cached
// backend in batches: every response equals the direct one, and the hit
// rate is exactly (queries - distinct keys) / queries.
func TestHitsEqualMisses(t *testing.T) {
	x := buildIndex(t, 1)
	c := newCache(t)
	cb := NewBackend(c, x, engine.NewCPU(x, 1))
	pool := distinctQueries(60, 1)
	rng := rand.New(rand.NewPCG(3, 4))
	log := make([]engine.Query, 400)
	keys := map[string]bool{}
	for i := range log {
		log[i] = pool[rng.IntN(len(pool))]
		keys[c.Key(x, log[i])] = true
	}
	want := run(t, engine.NewCPU(x, 1), log)
	for pass := range 2 {
		c.ResetStats()
		for lo := 0; lo < len(log); lo += 16 {
			hi := min(lo+16, len(log))
			got := run(t, cb, log[lo:hi])
			for i := range got {
				if !same(got[i], want[lo+i]) {
					t.Fatalf("pass %d query %d %+v: got %v, want %v", pass, lo+i, log[lo+i], got[i], want[lo+i])
				}
			}
			c.Wait() // ristretto admits asynchronously
		}
		st := c.Stats()
		wantHits := uint64(len(log) - len(keys))
		if pass == 1 {
			wantHits = uint64(len(log))
		}
		if st.Hits != wantHits || st.Hits+st.Misses != uint64(len(log)) {
			t.Fatalf("pass %d: %v, want %d hits of %d", pass, st, wantHits, len(log))
		}
		t.Logf("pass %d: %v (%d distinct keys)", pass, st, len(keys))
	}
}

// TestKeys checks which queries share a key. Queries that share one must
// rank identically (checked against the engine); queries that differ in
// k, mode, a repeated term under QTF, the index or the BM25 parameters
// must not share one, and a Get for them must miss.
func TestKeys(t *testing.T) {
	x := buildIndex(t, 1)
	x2 := buildIndex(t, 2)
	c := newCache(t)
	base := engine.Query{Terms: []string{"w03", "w07"}, Mode: engine.Or, K: 10}
	variant := func(f func(*engine.Query)) engine.Query {
		q := base
		q.Terms = slices.Clone(base.Terms)
		f(&q)
		return q
	}
	sameKey := []engine.Query{
		variant(func(q *engine.Query) { q.Terms = []string{"w07", "w03"} }),
		variant(func(q *engine.Query) { q.Terms = []string{"w03", "w07", "w03"} }), // duplicates count once
		variant(func(q *engine.Query) { q.QTF = true }),                            // no repeats: same ranking
		variant(func(q *engine.Query) { q.ID = "other id" }),
	}
	otherKey := []engine.Query{
		variant(func(q *engine.Query) { q.K = 5 }),
		variant(func(q *engine.Query) { q.K = 11 }),
		variant(func(q *engine.Query) { q.Mode = engine.And }),
		variant(func(q *engine.Query) { q.Mode = engine.AndOr }),
		variant(func(q *engine.Query) { q.Terms = []string{"w03", "w07", "w03"}; q.QTF = true }),
		variant(func(q *engine.Query) { q.Terms = []string{"w03", "w07", "w07"}; q.QTF = true }),
		variant(func(q *engine.Query) { q.Terms = []string{"w03"} }),
		variant(func(q *engine.Query) { q.Terms = []string{"w03", "w07", "w08"} }),
		variant(func(q *engine.Query) { q.Terms = []string{"w03w07"} }), // length prefixes keep terms apart
	}
	cpu := engine.NewCPU(x, 1)
	baseRes := run(t, cpu, []engine.Query{base})[0]
	c.Set(x, base, baseRes.Results)
	c.Wait()
	for _, q := range sameKey {
		if c.Key(x, q) != c.Key(x, base) {
			t.Errorf("%+v: key differs from %+v", q, base)
		}
		if r := run(t, cpu, []engine.Query{q})[0]; !same(r, baseRes) {
			t.Errorf("%+v shares a key with %+v but ranks differently", q, base)
		}
		if got, ok := c.Get(nil, x, q); !ok || !slices.Equal(got, baseRes.Results) {
			t.Errorf("%+v: no hit", q)
		}
	}
	keys := map[string]bool{c.Key(x, base): true}
	for _, q := range otherKey {
		k := c.Key(x, q)
		if keys[k] {
			t.Errorf("%+v: key collides", q)
		}
		keys[k] = true
		if _, ok := c.Get(nil, x, q); ok {
			t.Errorf("%+v: hit on another query's entry", q)
		}
	}
	// Another index, or other BM25 parameters, never hit.
	if _, ok := c.Get(nil, x2, base); ok {
		t.Error("hit across indexes")
	}
	if err := x.SetParams(score.Params{K1: 1.2, B: 0.5}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(nil, x, base); ok {
		t.Error("hit across BM25 parameters")
	}
}

// counting counts the queries that reach the wrapped backend.
type counting struct {
	engine.Backend
	queries atomic.Int64
}

func (b *counting) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	b.queries.Add(int64(len(qs)))
	return b.Backend.SearchBatch(ctx, qs, opt, out)
}

// TestBackendBatch: a query repeated within a batch runs once; errors pass
// through and are never cached; batch-level failures follow the Backend
// contract.
func TestBackendBatch(t *testing.T) {
	x := buildIndex(t, 1)
	c := newCache(t)
	next := &counting{Backend: engine.NewCPU(x, 1)}
	cb := NewBackend(c, x, next)
	q := engine.Query{Terms: []string{"w01", "w09"}, Mode: engine.And, K: 10}
	bad := engine.Query{Terms: nil, Mode: engine.Or, K: 10}
	got := run(t, cb, []engine.Query{q, bad, q, q, bad})
	want := run(t, engine.NewCPU(x, 1), []engine.Query{q, bad})
	for i, w := range []int{0, 1, 0, 0, 1} {
		if !same(got[i], want[w]) {
			t.Fatalf("response %d: %+v, want %+v", i, got[i], want[w])
		}
	}
	if !errors.Is(got[1].Err, engine.ErrEmptyQuery) {
		t.Fatalf("error %v", got[1].Err)
	}
	if n := next.queries.Load(); n != 2 {
		t.Fatalf("backend ran %d queries, want 2", n)
	}
	c.Wait()
	got = run(t, cb, []engine.Query{bad, q})
	if n := next.queries.Load(); n != 3 || !same(got[1], want[0]) || got[0].Err == nil {
		t.Fatalf("second batch: backend ran %d queries in all, want 3 (the invalid one again)", n)
	}
	if st := c.Stats(); st.Hits != 4 || st.Misses != 3 { // repeats within a batch count as hits
		t.Fatalf("stats %v", st)
	}

	out := make([]engine.Response, 1)
	if err := cb.SearchBatch(context.Background(), []engine.Query{q}, engine.Options{OrAlgo: "nope"}, out); !errors.Is(err, engine.ErrBadStrategy) {
		t.Fatalf("bad options: %v", err)
	}
	if err := cb.SearchBatch(context.Background(), []engine.Query{q, q}, engine.Options{}, out); err == nil {
		t.Fatal("mismatched lengths accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := cb.SearchBatch(ctx, []engine.Query{q}, engine.Options{}, out); !errors.Is(err, context.Canceled) || !errors.Is(out[0].Err, context.Canceled) {
		t.Fatalf("cancelled: %v %v", err, out[0].Err)
	}
	if cb.Name() != "cpu+cache" {
		t.Fatalf("name %q", cb.Name())
	}
}

// TestIndexIdentity: index numbers are never reused, and the cache does
// not keep indexes alive.
func TestIndexIdentity(t *testing.T) {
	c := newCache(t)
	x := buildIndex(t, 1)
	id1 := c.indexID(x)
	if c.indexID(x) != id1 {
		t.Fatal("one index, two numbers")
	}
	runtime.KeepAlive(x)
	x = nil
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		c.mu.Lock()
		n := len(c.ids)
		c.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache keeps a collected index's number")
		}
		time.Sleep(time.Millisecond)
	}
	if id2 := c.indexID(buildIndex(t, 1)); id2 == id1 {
		t.Fatal("index number reused")
	}
}

func TestCloseNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStatsString(t *testing.T) {
	if s := (Stats{Hits: 3, Misses: 1}); s.HitRate() != 0.75 || s.String() != "3 hits, 1 misses, hit rate 75.0%" {
		t.Fatal(s)
	}
	if (Stats{}).HitRate() != 0 {
		t.Fatal("hit rate of nothing")
	}
}
