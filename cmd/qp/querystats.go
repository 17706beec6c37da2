package main

import (
	"fmt"
	"io"
	"runtime/metrics"
	"time"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/engine/gpu"
	"github.com/qpengine/qp/internal/cputime"
)

// processStart is when the process began: qp query --stats reports its
// cold total from it.
var processStart = time.Now()

// batchTimeline is what qp query --stats prints: the phases of a batch run
// (open, read, analyze, warm-up, the stream) and each chunk of the stream,
// so that the cold rate a user sees can be set beside bench query's warm
// one and the difference located (warm-up, idle processor, output, GC).
type batchTimeline struct {
	open, read, analyze time.Duration
	warm                time.Duration // Engine.Warm, beside read and analyze
	warmed              int           // its synthetic queries (0: none)
	gc                  time.Duration // the collection before the stream
	streamStart         time.Time
	stream, flush       time.Duration
	total               time.Duration // process start .. run flushed
	chunks              []chunkSample
	before, after       gcSample     // at the stream's start and end
	gpuBefore, gpuAfter *gpu.Profile // the GPU backend's counters (nil: no GPU)
	tune                string
	early               bool          // read and analyze ran during open
	fmtTime             time.Duration // run lines formatted by the CPU stream's workers (runWriter.timed)
}

// chunkSample is a chunk's timeline, the sum of its queries' reported
// times, and the process's allocation counters after its emit.
type chunkSample struct {
	qp.ChunkTimes
	queryTime time.Duration
	gcSample
}

// gcSample reads the runtime's allocation and collection counters
// (runtime/metrics: no stop-the-world).
type gcSample struct {
	allocBytes, allocObjects, cycles uint64
	pause                            float64       // seconds, an estimate (histogram)
	cpu                              time.Duration // the process's CPU time (user + system; 0: unknown)
}

var gcMetrics = []string{"/gc/heap/allocs:bytes", "/gc/heap/allocs:objects", "/gc/cycles/total:gc-cycles", "/gc/pauses:seconds"}

func readGC() gcSample {
	s := make([]metrics.Sample, len(gcMetrics))
	for i, n := range gcMetrics {
		s[i].Name = n
	}
	metrics.Read(s)
	g := gcSample{allocBytes: s[0].Value.Uint64(), allocObjects: s[1].Value.Uint64(), cycles: s[2].Value.Uint64()}
	g.cpu, _ = cputime.Process()
	if s[3].Value.Kind() == metrics.KindFloat64Histogram {
		h := s[3].Value.Float64Histogram()
		for i, c := range h.Counts {
			if c > 0 {
				g.pause += float64(c) * h.Buckets[i] // lower bound of the bucket
			}
		}
	}
	return g
}

// gpuProfile returns the GPU backend's counters, or nil without one.
func gpuProfile(b *gpu.Backend) *gpu.Profile {
	if b == nil {
		return nil
	}
	p := b.Profile()
	return &p
}

// trace records a chunk (StreamOptions.Trace, after its emit).
func (t *batchTimeline) trace(c qp.ChunkTimes, q time.Duration) {
	t.chunks = append(t.chunks, chunkSample{ChunkTimes: c, queryTime: q, gcSample: readGC()})
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// print writes the timeline: phases, rates, GC, and a line per chunk.
func (t *batchTimeline) print(w io.Writer, n int) {
	p := func(format string, a ...any) { fmt.Fprintf(w, "stats: "+format+"\n", a...) }
	p("switches: %s", t.tune)
	where := "after open"
	if t.early {
		where = "during open"
	}
	p("open %.1f ms, read %.1f ms and analyze %.1f ms (%s), warm-up %.1f ms (%d queries, beside reading and analyzing when after open), gc %.1f ms; stream %.1f ms, flush %.1f ms; total %.1f ms from process start",
		ms(t.open), ms(t.read), ms(t.analyze), where, ms(t.warm), t.warmed, ms(t.gc), ms(t.stream), ms(t.flush), ms(t.total))
	// The processor's busy time: the union of the chunks' search spans
	// (a continuous stream's overlap).
	var busy time.Duration
	end := t.streamStart
	for _, c := range t.chunks {
		if from := later(c.SearchStart, end); c.SearchEnd.After(from) {
			busy += c.SearchEnd.Sub(from)
		}
		end = later(end, c.SearchEnd)
	}
	steady := 0.0
	if len(t.chunks) > 1 {
		c0, last := t.chunks[0], t.chunks[len(t.chunks)-1]
		steady = rate(n-c0.N, last.EmitEnd.Sub(c0.SearchEnd))
	}
	first := time.Duration(0)
	if len(t.chunks) > 0 {
		first = t.chunks[0].SearchEnd.Sub(t.chunks[0].SearchStart)
	}
	p("rates (queries/s): stream %.0f (the summary's), cold total %.0f (from process start), steady %.0f (after the first chunk's search: its end .. the last emit's end), processor %.0f (queries over the time some chunk was searched); first chunk searched in %.1f ms",
		rate(n, t.stream), rate(n, t.total), steady, rate(n, busy), ms(first))
	a, b := t.before, t.after
	p("during the stream: %d GC cycles, ~%.2f ms paused, %.1f MB allocated (%.0f B, %.2f objects per query)",
		b.cycles-a.cycles, (b.pause-a.pause)*1e3, float64(b.allocBytes-a.allocBytes)/1e6,
		float64(b.allocBytes-a.allocBytes)/float64(max(n, 1)), float64(b.allocObjects-a.allocObjects)/float64(max(n, 1)))
	if a.cpu > 0 && b.cpu >= a.cpu {
		// CPU time per query (getrusage: every goroutine, the run's
		// output and GC included) is disturbed less than wall time by
		// other work on the machine; cores busy below the workers says
		// they waited (chunk barriers, the emit).
		p("CPU during the stream: %.1f ms (%.2f µs per query; %.2f cores busy on average)",
			ms(b.cpu-a.cpu), float64((b.cpu-a.cpu).Nanoseconds())/1e3/float64(max(n, 1)), float64(b.cpu-a.cpu)/float64(max(t.stream, 1)))
	}
	if a.cpu > 0 && b.cpu >= a.cpu {
		// Where the CPU went, against bench query's mean ms (its engine
		// time a query) and cpu µs/q: the engine's own times (wall time
		// inside each search: on a machine with other work, time the
		// worker waited for a core too), the run lines the workers
		// formatted (Answered), and the rest (the emit's writes and
		// summary, GC, the runtime).
		var search time.Duration
		for _, c := range t.chunks {
			search += c.queryTime
		}
		cpu, per := b.cpu-a.cpu, func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(max(n, 1)) }
		p("CPU split (µs per query): search %.2f (the engine's own times), formatting by the workers %.2f, the rest %.2f (CPU minus both: the emit, GC, runtime)",
			per(search), per(t.fmtTime), per(cpu-search-t.fmtTime))
	}
	if g0, g1 := t.gpuBefore, t.gpuAfter; g0 != nil && g1 != nil {
		p("GPU during the stream: %d batches, %d launch sets, %d launches, %d host waits, %.1f ms in SearchBatch",
			g1.Batches-g0.Batches, g1.Sets-g0.Sets, g1.Launches-g0.Launches, g1.Syncs-g0.Syncs, ms(g1.Wall-g0.Wall))
	}
	p("chunk        lo       n  search@ms  search_ms  idle_ms  emit_wait_ms  emit_ms  in_flight  alloc_KB  objects  gc")
	prev, prevEnd := a, t.streamStart
	for i, c := range t.chunks {
		sms := ms(c.SearchEnd.Sub(c.SearchStart))
		inflight := 0.0
		if sms > 0 {
			inflight = ms(c.queryTime) / sms
		}
		p("%5d %9d %7d %10.2f %10.2f %8.2f %13.2f %8.2f %10.2f %9.0f %8d %3d", i, c.Lo, c.N,
			ms(c.SearchStart.Sub(t.streamStart)), sms, ms(c.SearchStart.Sub(prevEnd)),
			ms(c.EmitStart.Sub(c.SearchEnd)), ms(c.EmitEnd.Sub(c.EmitStart)), inflight,
			float64(c.allocBytes-prev.allocBytes)/1e3, c.allocObjects-prev.allocObjects, c.cycles-prev.cycles)
		prev, prevEnd = c.gcSample, c.SearchEnd
	}
	p("idle_ms: the processor's wait since the previous chunk's search ended (negative: the chunks overlap, QP_QUERY_TUNE=cont); emit_wait_ms: a chunk's responses waiting for the previous emit; in_flight: the chunk's summed query times over its search time (CPU: busy workers)")
}
