package scheduler

// Test fixtures. The tests exercise the scheduling logic, not GPU speed:
// both "processors" are engine.NewCPU backends over a small index built
// here (the "GPU" is usually a one-worker CPU backend), sometimes wrapped
// in a gate that holds batches until the test releases them, and cost
// models are often fixed so that routing decisions are known in advance.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/ref"
)

const testDocs = 3000

// testIndex builds an index of testDocs documents and 100 terms t000..t099
// whose document frequencies fall from testDocs/2 to 3 (a Zipf-like
// spread, so that costs differ by orders of magnitude).
func testIndex(t testing.TB) *index.Index {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	const terms = 100
	lens := make([]uint32, testDocs)
	for i := range lens {
		lens[i] = 1
	}
	docs := make([][]uint32, terms)
	freqs := make([][]uint32, terms)
	for i := range terms {
		df := max(3, int(float64(testDocs/2)/float64(i+1)))
		perm := rng.Perm(testDocs)[:df]
		slices.Sort(perm)
		docs[i] = make([]uint32, df)
		freqs[i] = make([]uint32, df)
		for j, d := range perm {
			docs[i][j] = uint32(d)
			freqs[i][j] = uint32(1 + rng.IntN(4))
			lens[d] += freqs[i][j]
		}
	}
	col := &ref.Collection{Docs: docs, Freqs: freqs, Lens: lens}
	for i := range terms {
		col.Terms = append(col.Terms, termName(i))
	}
	x, err := col.WriteIndexWith(filepath.Join(t.TempDir(), "x.qp"), index.WriterOptions{BlockSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// featuresOf returns every query's Features on x, as a replay precomputes
// them.
func featuresOf(x *index.Index, qs []engine.Query) []Features {
	feats := make([]Features, len(qs))
	for i, q := range qs {
		feats[i] = QueryFeatures(x, q)
	}
	return feats
}

func termName(i int) string { return fmt.Sprintf("t%03d", i) }

// testQueries returns n random queries: 1 to 4 terms (sometimes repeated,
// sometimes absent from the index), every mode, k 10 or 100, QTF at times,
// and a few invalid ones (no terms, k = 0) whose errors must come through
// unchanged.
func testQueries(n int, seed uint64) []engine.Query {
	rng := rand.New(rand.NewPCG(seed, 3))
	qs := make([]engine.Query, n)
	modes := []engine.Mode{engine.And, engine.Or, engine.AndOr}
	for i := range qs {
		q := engine.Query{ID: fmt.Sprintf("q%d", i), Mode: modes[rng.IntN(3)], K: 10, QTF: rng.IntN(4) == 0}
		if rng.IntN(3) == 0 {
			q.K = 100
		}
		m := 1 + rng.IntN(4)
		for range m {
			// Low term numbers (long lists) are rarer.
			q.Terms = append(q.Terms, termName(int(100*rng.Float64()*rng.Float64()+rng.Float64()*50)%100))
		}
		switch rng.IntN(25) {
		case 0:
			q.Terms = append(q.Terms, "absent")
		case 1:
			q.Terms = append(q.Terms, q.Terms[0])
		case 2:
			q.Terms = nil // ErrEmptyQuery
		case 3:
			q.K = 0 // ErrBadK
		}
		qs[i] = q
	}
	if n >= 10 { // at least one of each invalid kind
		qs[3].Terms = nil
		qs[7].K = 0
	}
	return qs
}

// direct runs qs on a fresh one-worker CPU backend: the reference results.
func direct(t testing.TB, x *index.Index, qs []engine.Query) []engine.Response {
	t.Helper()
	out := make([]engine.Response, len(qs))
	if err := engine.NewCPU(x, 1).SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameResponse reports whether a scheduled response equals the reference.
func sameResponse(got, want engine.Response) error {
	if (got.Err == nil) != (want.Err == nil) || (got.Err != nil && got.Err.Error() != want.Err.Error()) {
		return fmt.Errorf("error %v, want %v", got.Err, want.Err)
	}
	if !slices.Equal(got.Results, want.Results) {
		return fmt.Errorf("results %v, want %v", got.Results, want.Results)
	}
	return nil
}

// gate is a backend that announces each batch (its query IDs) on entered
// and holds it until a token arrives on release (or release is closed, or
// the context ends), then runs it on the wrapped backend.
type gate struct {
	engine.Backend
	entered chan []string
	release chan struct{}
}

func newGate(b engine.Backend) *gate {
	return &gate{Backend: b, entered: make(chan []string, 1000), release: make(chan struct{}, 1000)}
}

func (g *gate) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	ids := make([]string, len(qs))
	for i, q := range qs {
		ids[i] = q.ID
	}
	g.entered <- ids
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return g.Backend.SearchBatch(ctx, qs, opt, out)
}

// next waits for the next batch to enter the gate.
func (g *gate) next(t *testing.T) []string {
	t.Helper()
	select {
	case ids := <-g.entered:
		return ids
	case <-time.After(10 * time.Second):
		t.Fatal("no batch entered the gate")
	}
	return nil
}

// nopBackend answers every query with no results at once.
type nopBackend struct{}

func (nopBackend) Name() string { return "nop" }

func (nopBackend) SearchBatch(_ context.Context, qs []engine.Query, _ engine.Options, out []engine.Response) error {
	for i := range out {
		out[i] = engine.Response{Results: out[i].Results[:0]}
	}
	return nil
}

// manualClock is a Clock that moves only when told.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func newManualClock() *manualClock {
	return &manualClock{t: time.Date(2009, 4, 20, 0, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// constModel predicts d for every query.
func constModel(d time.Duration) *CostModel {
	return FixedCostModel([NumBasis]float64{lnSeconds(d)})
}

// waitFor polls cond until it holds (10 s at most).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// checkNoLeak fails when the number of goroutines does not come back to
// before (goroutines finish asynchronously after their last signal, so it
// polls).
func checkNoLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines after shutdown, %d before:\n%s", n, before, buf)
		}
		time.Sleep(time.Millisecond)
	}
}

// collector gathers results by query ID.
type collector struct {
	mu    sync.Mutex
	res   map[string][]*Result
	wg    sync.WaitGroup
	order []string
}

func newCollector() *collector { return &collector{res: map[string][]*Result{}} }

func (c *collector) submit(t *testing.T, s *Scheduler, r Request) {
	t.Helper()
	c.wg.Add(1)
	if err := s.Submit(r, c.done); err != nil {
		c.wg.Done()
		t.Fatal(err)
	}
}

func (c *collector) done(r *Result) {
	c.mu.Lock()
	c.res[r.Query.ID] = append(c.res[r.Query.ID], r)
	c.order = append(c.order, r.Query.ID)
	c.mu.Unlock()
	c.wg.Done()
}

func (c *collector) get(t *testing.T, id string) *Result {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.res[id]
	if len(rs) != 1 {
		t.Fatalf("query %s answered %d times", id, len(rs))
	}
	return rs[0]
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.order)
}
