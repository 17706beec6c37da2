package gpu

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/cputime"
	"github.com/qpengine/qp/internal/querylog"
)

// BenchmarkHostPrep: the host side of one AND launch set of 4,500 queries
// (GCIDE's batches on the GPU host, docs/GPU-QUERY.md "Host cost"), on a
// 20,000-document collection of 1,000 terms with bitmaps: "prepare" is
// prepareBatch (dictionary lookups, canonical order, the order by term
// count); "plan" is planAnd and upload (bitmap terms, the order by steps,
// QMeta/QTerm/Seg filling, one upload) on the owner thread. Needs a GPU
// or the emulator (the plan loads the AND kernels and uploads). With
// QP_HOSTPREP_INDEX (an index, e.g. GCIDE) and QP_HOSTPREP_QUERIES (a
// query log, e.g. TREC 2006 efficiency): its first 4,500 non-empty
// queries on that index instead; QP_HOSTPREP_N=N its first N (e.g. 1000000
// of the log repeated 100 times, bench query's 1M-query batch).
//
// "prepare-looked" is "prepare" on the queries carrying their lookups
// (engine.Query.Dict), as bench sched's replay hands them (hostcut).
//
// QP_HOSTPREP_MODE=or or andor runs the queries in that mode instead of
// AND ("plan", the AND plan on the owner, skips them): "batch" and
// "planbatch" then measure the OR sets planned off the owner (gpuplan).
//
// "prepare-cold" (gpuhost5) is "prepare" on fresh buffers each op (a
// process's first batch, or one larger than any before): besides
// cpu-ns/op it reports the page faults of first touch (minflt/op) and the
// garbage collections (gc/op) of the op.
func BenchmarkHostPrep(b *testing.B) {
	testContext(b)
	var g *Backend
	var terms [][]string
	if path := os.Getenv("QP_HOSTPREP_INDEX"); path != "" {
		x, err := index.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		n := 4500
		if s := os.Getenv("QP_HOSTPREP_N"); s != "" {
			if n, err = strconv.Atoi(s); err != nil || n < 1 {
				b.Fatalf("QP_HOSTPREP_N=%q: want a count of queries", s)
			}
		}
		if terms, err = querylog.FirstAnalyzed(x, os.Getenv("QP_HOSTPREP_QUERIES"), n); err != nil {
			b.Fatal(err)
		}
		g = newBackend(b, x, Options{})
	} else {
		rng := rand.New(rand.NewSource(41))
		col := genCollection(rng, 20000, 1000, 128, false)
		g = newBackend(b, col.bp128(b), Options{BitmapDensity: 1.0 / 64})
		terms = randomQueries(rng, col.terms, 4500, nil)
	}
	mode := engine.And
	switch m := os.Getenv("QP_HOSTPREP_MODE"); m {
	case "", "and":
	case "or":
		mode = engine.Or
	case "andor":
		mode = engine.AndOr
	default:
		b.Fatalf("QP_HOSTPREP_MODE=%q: want and, or or andor", m)
	}
	qs := make([]engine.Query, len(terms))
	for i, t := range terms {
		qs[i] = engine.Query{ID: fmt.Sprint(i), Terms: t, Mode: mode, K: 10}
	}
	out := make([]engine.Response, len(qs))
	// prepare: prepareBatch on warm buffers ("prepare-cold" has fresh
	// ones), cpu-ns/op reported.
	prepare := func(b *testing.B, qs []engine.Query) {
		bb := g.bufs.get(len(qs))
		g.prepareBatch(bb, qs, out)
		g.bufs.put(bb)
		c0, _ := cputime.Process()
		for b.Loop() {
			bb := g.bufs.get(len(qs))
			g.prepareBatch(bb, qs, out)
			g.bufs.put(bb)
		}
		reportCPU(b, c0)
	}
	b.Run("prepare", func(b *testing.B) { prepare(b, qs) })
	// prepare-looked: "prepare" on the queries carrying their terms looked
	// up (engine.Query.Dict, the lookups made before the timer), as qp
	// bench sched's replay hands them with --carry-lookups (issue 24,
	// hostcut): the preparation less its dictionary lookups.
	b.Run("prepare-looked", func(b *testing.B) {
		looked := make([]engine.Query, len(qs))
		for i, q := range qs {
			l := &engine.TermLookup{X: g.x, IDs: make([]int, len(q.Terms)), DFs: make([]uint32, len(q.Terms))}
			g.x.LookupDictDF(q.Terms, l.IDs, l.DFs)
			q.Dict = l
			looked[i] = q
		}
		prepare(b, looked)
	})
	b.Run("prepare-cold", func(b *testing.B) {
		c0, _ := cputime.Process()
		f0, gc0 := minorFaults(), gcCount()
		for b.Loop() {
			var pool bufPool
			bb := pool.get(len(qs))
			g.prepareBatch(bb, qs, out)
			pool.put(bb)
		}
		reportCPU(b, c0)
		b.ReportMetric(float64(minorFaults()-f0)/float64(b.N), "minflt/op")
		b.ReportMetric(float64(gcCount()-gc0)/float64(b.N), "gc/op")
	})
	b.Run("plan", func(b *testing.B) {
		if mode != engine.And {
			b.Skip("the AND plan: QP_HOSTPREP_MODE and")
		}
		bb := g.bufs.get(len(qs))
		defer g.bufs.put(bb)
		var work []*prep
		for _, p := range g.prepareBatch(bb, qs, out) {
			if p.runsAnd() {
				work = append(work, p)
			}
		}
		c0, _ := cputime.Process()
		err := g.ctx.Do(func() error {
			for b.Loop() {
				mem := &devMem{pool: g.ctx.Pool()}
				r, err := g.planAnd(mem, work, false)
				if err != nil {
					return err
				}
				if err := r.fill(); err != nil {
					return err
				}
				if err := r.upload(); err != nil {
					return err
				}
				if err := g.sync(); err != nil {
					return err
				}
				if err := mem.release(); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		reportCPU(b, c0)
	})
	// batch: the whole SearchBatch (on the emulator its owner time is the
	// kernels'): the hot driver calls per batch (calls/op), the kernel
	// launches among them (launches/op, as Profile counts them), the sets
	// planned off the owner (planned/op) and the owner closure's wall time
	// (owner-ns/op), and of it the time outside driver calls (owner-host-ns/op:
	// the owner's host work, which on the emulator is not drowned by the
	// kernels' emulation inside the launch calls).
	b.Run("batch", func(b *testing.B) {
		// One batch first: the device pool and pinned arenas grown (on the
		// emulator a fresh allocation costs milliseconds outside the
		// counted driver calls).
		if err := g.SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
			b.Fatal(err)
		}
		g.ctx.SetDriverTiming(true)
		defer g.ctx.SetDriverTiming(false)
		g.ResetProfile()
		for b.Loop() {
			if err := g.SearchBatch(context.Background(), qs, engine.Options{}, out); err != nil {
				b.Fatal(err)
			}
		}
		p := g.Profile()
		b.ReportMetric(float64(p.DriverCalls)/float64(b.N), "calls/op")
		b.ReportMetric(float64(p.Launches)/float64(b.N), "launches/op")
		b.ReportMetric(float64(p.PlannedSets)/float64(b.N), "planned/op")
		b.ReportMetric(float64(p.HostRun.Nanoseconds())/float64(b.N), "owner-ns/op")
		b.ReportMetric(float64(p.HostFinish.Nanoseconds())/float64(b.N), "finish-ns/op")
		b.ReportMetric(float64((p.HostRun-p.OwnerDriver).Nanoseconds())/float64(b.N), "owner-host-ns/op")
	})
	// planbatch: planBatch, the batch goroutine's share since gpuhost2
	// (the launch sets, their AND plans and the filled uploads, off the
	// owner), which "plan" measures on the owner's path.
	b.Run("planbatch", func(b *testing.B) {
		bb := g.bufs.get(len(qs))
		defer g.bufs.put(bb)
		work := g.prepareBatch(bb, qs, out)
		c0, _ := cputime.Process()
		for b.Loop() {
			g.planBatch(bb, work)
		}
		if bb.plan.cfg == nil {
			b.Fatal("planBatch made no plan")
		}
		reportCPU(b, c0)
	})
}

// reportCPU reports the process CPU time per op since c0 (on a shared
// machine a steadier figure than the wall time; the parallel parts'
// gain shows in the wall time on many free cores only).
func reportCPU(b *testing.B, c0 time.Duration) {
	if c1, ok := cputime.Process(); ok {
		b.ReportMetric(float64((c1-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// minorFaults is the process's minor page faults so far (first touches of
// fresh memory), 0 where getrusage fails.
func minorFaults() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Minflt
}

// gcCount is the garbage collections completed so far.
func gcCount() uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumGC
}
