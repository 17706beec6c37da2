// Package qp is qp's library API: open an index, then search it with top-k
// BM25 AND, OR and AND+OR queries on the CPU or on an NVIDIA GPU.
//
//	e, err := qp.Open("cacm.qp", qp.Options{Device: qp.Auto})
//	if err != nil { ... }
//	defer e.Close()
//	res, err := e.Search(ctx, qp.Request{Text: "parallel sorting", Mode: engine.Or, K: 10})
//
// Open takes the analyzer (stemming, stop words) from the index's metadata,
// so query text is analyzed exactly as the documents were, and owns the
// choice of processor: Device GPU needs a usable GPU whose decoders support
// the index's codecs; Auto uses one when it can and otherwise runs on the CPU
// and says why once (Options.Notice); CPU never touches the driver.
//
// With a usable GPU, Auto keeps both processors and answers each batch
// (SearchBatch, Search, Stream's chunks) on the one measured to serve its
// query mode at its size faster, so that it is never much slower than the
// faster of Device CPU and Device GPU: on real text the CPU's cores can
// beat the GPU at AND while the GPU wins OR several times over. The
// measurements are made on the caller's own queries: the first batches of
// a mode are answered in slices growing 4× on each processor until one's
// upper bound is below the other's lower bound (each query is answered
// once; the cost is the slices run on the slower processor), and every
// batch refreshes its processor's measurement. A large batch (8,192
// queries or more) may then run on both processors at once, split by their
// measured speeds, while that measures faster than the faster processor
// alone at its size (auto_split.go; Options.NoSplit turns it off).
// Engine.StreamWith under Auto starts a stream whose processors are not
// both measured with a race: both answer its first chunks at once from a
// shared queue, each taking its next piece when ready, until one is
// measured slower (auto_race.go); the stream then runs in segments on the
// faster one's own stream — Device CPU's continuous stream, Device GPU's
// with StreamOptions.InFlight chunks in flight — and the other's stream is
// tried again only where it could win and the trial costs at most 3% of
// the rest (auto_stream.go).
// Results are identical whichever answers.
// Engine.Routing says what was measured and chosen.
//
// For throughput, Stream runs a whole query set through the backend in large
// chunks and hands each chunk's responses to the caller while the next chunk
// runs, so that neither the processor nor the caller's output waits on the
// other.
package qp

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/engine/gpu"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/internal/progress"
	"github.com/qpengine/qp/score"
	"github.com/qpengine/qp/topk"
)

// Device selects the processor that answers queries.
type Device string

// The devices of Options.Device.
const (
	Auto Device = "auto" // a GPU when one is usable, else the CPU
	CPU  Device = "cpu"  // the CPU engine on Options.Threads cores
	GPU  Device = "gpu"  // a GPU, or Open fails
)

// ParseDevice parses "auto", "cpu" or "gpu".
func ParseDevice(s string) (Device, error) {
	switch d := Device(strings.ToLower(s)); d {
	case Auto, CPU, GPU:
		return d, nil
	}
	return "", fmt.Errorf("device %q: want cpu, gpu or auto", s)
}

// Options configure Open. The zero value runs on a GPU when one is usable,
// on all cores otherwise, with the index's BM25 parameters.
type Options struct {
	Device  Device // "" = Auto
	Threads int    // CPU worker goroutines; 0 = all cores
	// Params, when not nil, replace the index's BM25 parameters; a
	// negative field keeps the index's value of that field.
	Params *score.Params
	// GPU configures the GPU backend (thresholds, bitmaps, algorithms);
	// its zero value takes the backend's defaults.
	GPU gpu.Options
	// Notice, when not nil, receives one line about the processor chosen:
	// the GPU in use, or why Auto runs on the CPU.
	Notice func(string)
	// Beside, when not nil, is called by Open in a goroutine of its own
	// once the index is loaded, while the processor opens (the GPU's
	// context, modules and postings upload), for work that needs the
	// index but not the processor: reading and analyzing a query file,
	// say. Open returns once both are done. New ignores it.
	Beside func(*index.Index)
	// NoSplit makes Device Auto answer each batch on the faster processor
	// alone; by default a large batch, once both are measured, runs on
	// both at once, split by their measured speeds (auto_split.go).
	NoSplit bool
	// AutoProfile, when not "", is the path of Device Auto's routing
	// profile (auto_profile.go): the streams' measured times per mode and
	// query class, kept across runs so that a repeat run over the same
	// index starts on the recorded winner's stream without a race
	// (DefaultProfilePath is the usual place). Only Open uses it (New
	// has no index file to key it by); a profile that cannot be read is
	// ignored with a notice, never an error.
	AutoProfile string
}

// Engine answers queries over one open index. Its methods are safe for
// concurrent use.
type Engine struct {
	x     *index.Index
	an    *analysis.Analyzer
	be    engine.Backend
	gpu   *gpu.Backend // nil when the CPU answers
	route *router      // Device Auto with a GPU: picks the processor per batch

	ownsIndex bool // Open opened x: Close closes it

	streamMu  sync.Mutex       // held by a continuous CPU stream (and Warm's) while it runs
	streamEng []*engine.Engine // the continuous CPU stream's workers (stream_cpu.go)
}

// Open loads the index at path and opens the processor that Options names.
func Open(path string, o Options) (*Engine, error) {
	if _, err := ParseDevice(string(o.device())); err != nil {
		return nil, fmt.Errorf("qp: %w", err)
	}
	x, err := index.Open(path)
	if err != nil {
		return nil, err
	}
	beside := make(chan struct{})
	if o.Beside != nil {
		go func() {
			defer close(beside)
			o.Beside(x)
		}()
	} else {
		close(beside)
	}
	e, err := New(x, o)
	<-beside
	if err != nil {
		x.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	e.ownsIndex = true
	if e.route != nil && o.AutoProfile != "" {
		df := func(terms []string, dfs []uint32) { x.LookupDictDF(terms, make([]int, len(terms)), dfs) }
		e.route.profile = openProfile(o.AutoProfile, path, e.route.workers, e.gpu.Device().Name, df, func(s string) { notice(o, s) })
	}
	return e, nil
}

func (o Options) device() Device {
	if o.Device == "" {
		return Auto
	}
	return o.Device
}

// New opens the processor that Options names over an index already loaded
// (several Engines may share one index, e.g. one per device, as long as
// their Params agree).
func New(x *index.Index, o Options) (*Engine, error) {
	dev := o.device()
	if _, err := ParseDevice(string(dev)); err != nil {
		return nil, fmt.Errorf("qp: %w", err)
	}
	if o.Params != nil {
		p := x.Params()
		if o.Params.K1 >= 0 {
			p.K1 = o.Params.K1
		}
		if o.Params.B >= 0 {
			p.B = o.Params.B
		}
		if p != x.Params() {
			if err := x.SetParams(p); err != nil {
				return nil, err
			}
		}
	}
	an, err := x.Analyzer()
	if err != nil {
		return nil, err
	}
	x.BuildLookup() // part of opening, not of the first query
	e := &Engine{x: x, an: an}
	if dev == CPU {
		e.be = engine.NewCPU(x, o.Threads)
		return e, nil
	}
	b, why := openGPU(x, o.GPU)
	if b != nil {
		e.be, e.gpu = b, b
		how := ""
		if dev == Auto {
			cpu := engine.NewCPU(x, o.Threads)
			e.route = newRouter(cpu, b, cpu.Workers())
			e.route.split = !o.NoSplit
			e.route.help = raceBetween
			e.be = e.route
			how = ", and the CPU's cores for the batches they answer faster"
			if !o.NoSplit {
				how += " or beside it on large batches"
			}

		}
		notice(o, fmt.Sprintf("qp: using GPU %s (%s of postings; %d list bitmaps in use from density %g)%s",
			b.Device().Name, progress.Bytes(b.ResidentBytes()), b.Bitmaps().InUse, b.BitmapDensity(), how))
		return e, nil
	}
	if dev == GPU {
		return nil, fmt.Errorf("qp: device gpu: %s", why)
	}
	notice(o, "qp: "+why+"; using the CPU backend")
	e.be = engine.NewCPU(x, o.Threads)
	return e, nil
}

// openGPU opens the GPU backend, or says why it cannot.
func openGPU(x *index.Index, o gpu.Options) (*gpu.Backend, string) {
	ok, why := cuda.Available()
	if !ok {
		return nil, strings.TrimSuffix(why, "; using the CPU backend")
	}
	b, err := gpu.New(x, o)
	if err != nil {
		return nil, fmt.Sprintf("GPU backend unavailable: %v", err)
	}
	return b, ""
}

func notice(o Options, s string) {
	if o.Notice != nil {
		o.Notice(s)
	}
}

// Index is the open index (external ids, stored fields, metadata).
func (e *Engine) Index() *index.Index { return e.x }

// Analyzer is the index's query analyzer.
func (e *Engine) Analyzer() *analysis.Analyzer { return e.an }

// Backend is the processor that answers queries: "cpu" or "cuda" by Name,
// or, for Device Auto with a usable GPU, "auto(cpu,cuda)", which routes each
// batch to one of the two (see the package documentation).
func (e *Engine) Backend() engine.Backend { return e.be }

// GPU is the GPU backend, or nil when the CPU alone answers.
func (e *Engine) GPU() *gpu.Backend { return e.gpu }

// Routing describes, for Device Auto with a usable GPU, how many queries of
// each mode each processor has answered and the per-query times measured
// by batch size; "" for the other devices.
func (e *Engine) Routing() string {
	if e.route == nil {
		return ""
	}
	return e.route.routing()
}

// Close releases the GPU (if any) and, when Open opened the index, the
// index's file mapping (index.Index.Close). The Engine, its Index, and the
// results' external ids and stored fields (they point into the mapping)
// must not be used after; copy what must outlive the Engine.
func (e *Engine) Close() error {
	var err error
	if e.gpu != nil {
		err = e.gpu.Close()
	}
	if e.ownsIndex {
		err = errors.Join(err, e.x.Close())
	}
	return err
}

// Request is one query as text.
type Request struct {
	ID   string      // the caller's identifier (a qid), echoed in errors
	Text string      // analyzed like the index's documents
	Mode engine.Mode // And, Or or AndOr
	K    int         // results wanted, 1..topk.MaxK
	QTF  bool        // a repeated term counts once per occurrence
}

// ErrNoTerms is the error of a request whose text has no searchable terms.
var ErrNoTerms = errors.New("query has no searchable terms (it is empty, or only punctuation or stop words)")

// Query analyzes r into an engine query. A request without searchable terms
// gives a query without terms, which the backends answer with ErrNoTerms'
// counterpart (an error on that query alone).
func (e *Engine) Query(r Request) engine.Query {
	return engine.Query{ID: r.ID, Terms: e.an.Tokens(r.Text), Mode: r.Mode, K: r.K, QTF: r.QTF}
}

// Hit is one result of a query.
type Hit struct {
	DocID string  // the document's external id
	Doc   uint32  // its docID in the index
	Score float32 // BM25
}

// Result is the outcome of one request.
type Result struct {
	Hits  []Hit
	Stats engine.Stats
}

// Search answers one request with the default algorithms (engine.Options{}).
func (e *Engine) Search(ctx context.Context, r Request) (Result, error) {
	return e.SearchWith(ctx, r, engine.Options{})
}

// SearchWith answers one request with the given algorithms.
func (e *Engine) SearchWith(ctx context.Context, r Request, opt engine.Options) (Result, error) {
	if r.K < 1 || r.K > topk.MaxK {
		return Result{}, fmt.Errorf("qp: k %d out of range 1..%d", r.K, topk.MaxK)
	}
	q := e.Query(r)
	if len(q.Terms) == 0 {
		return Result{}, fmt.Errorf("qp: %q: %w", r.Text, ErrNoTerms)
	}
	out := make([]engine.Response, 1)
	if err := e.be.SearchBatch(ctx, []engine.Query{q}, opt, out); err != nil {
		return Result{}, err
	}
	if out[0].Err != nil {
		return Result{}, out[0].Err
	}
	res := Result{Stats: out[0].Stats, Hits: make([]Hit, len(out[0].Results))}
	for i, h := range out[0].Results {
		res.Hits[i] = Hit{DocID: e.x.ExternalID(h.Doc), Doc: h.Doc, Score: h.Score}
	}
	return res, nil
}

// SearchBatch evaluates qs[i] into out[i] on the engine's processor (see
// engine.Backend.SearchBatch: a failing query carries its own error).
func (e *Engine) SearchBatch(ctx context.Context, qs []engine.Query, opt engine.Options, out []engine.Response) error {
	return e.be.SearchBatch(ctx, qs, opt, out)
}

// DefaultChunk is the number of queries Stream hands to the backend at once:
// large enough that the GPU's launch sets fill up (PARA batching forms them
// within a chunk) and the CPU's workers rarely wait for the last query of a
// chunk, small enough that the caller sees progress.
const DefaultChunk = 16384

// ChunkTimes is the timeline of one chunk of a stream (StreamOptions.Trace):
// its queries qs[Lo:Lo+N], when the backend began and ended them, and when
// emit began and returned.
type ChunkTimes struct {
	Lo, N                  int
	SearchStart, SearchEnd time.Time
	EmitStart, EmitEnd     time.Time
}

// StreamOptions configure StreamWith. The zero value is Stream's behaviour
// with DefaultChunk.
type StreamOptions struct {
	// Chunk is the number of queries handed to the backend at once
	// (DefaultChunk when <= 0).
	Chunk int
	// ResultCap, when > 0, gives every response of the stream's two
	// buffers Results storage of this capacity up front, cut from one
	// allocation per buffer, so that the first chunks do not allocate per
	// query (the backends append into out[i].Results). Set it to the
	// queries' k; responses that need more grow as before. It is ignored
	// where a buffer's storage would exceed maxResultSlab results.
	ResultCap int
	// Continuous lets Engine.StreamWith on the CPU processor (and on
	// Device Auto's CPU segments) run the chunks without a barrier
	// between them (stream_cpu.go); other backends, and the package's
	// StreamWith, ignore it.
	Continuous bool
	// InFlight is how many chunks StreamWith searches at once, each in
	// its own SearchBatch call (<= 1: one at a time). A GPU backend
	// pipelines two: one chunk's host preparation and plans run on the
	// cores while another's launch sets hold the device (engine/gpu's
	// SearchBatch takes the device only in runBatch). emit still sees
	// the chunks in order, one at a time; InFlight+1 response buffers
	// are kept. The continuous CPU stream ignores it; Engine.StreamWith
	// under Device Auto keeps this many on its GPU segments.
	InFlight int
	// Trace, when not nil, is called with each chunk's timeline after its
	// emit returned, in the emitting goroutine (it must not keep the
	// stream waiting long).
	Trace func(ChunkTimes)
	// Answered, when not nil, is called by the continuous CPU stream
	// (Engine.StreamWith with Continuous on the CPU processor) on the
	// worker goroutine that has just answered out, the responses to
	// qs[lo:lo+len(out)]: a piece of one chunk (pieces never cross a
	// chunk's end; a chunk's pieces start at the same offsets in every
	// full chunk). Calls for different pieces run concurrently; each
	// returns before its chunk's emit starts (happens-before), and out
	// is the buffer emit will see. Work done here runs on the core whose
	// caches hold the answers, instead of in emit on a goroutine that
	// must wait for a busy core (qp query formats its run lines here).
	// At most StreamChunksAhead+1 chunks are answered or emitted at a
	// time, so a consumer may key its state by chunk index modulo that.
	// Under Device Auto it is called for the chunks of the segments that
	// run on the continuous CPU stream. Other processors and the
	// package's StreamWith never call it: emit must also handle a chunk
	// none of whose pieces was seen.
	Answered func(lo int, out []engine.Response)

	// GPUHandOff (Device Auto, A/B runs: QP_QUERY_TUNE=gpuhandoff): once
	// the CPU stopped racing, hand the rest to the GPU's own stream
	// (branch auto4) instead of the default, the race going on as the
	// GPU's stream to the segment's end (branch auto3), which measured
	// faster in 10 of 12 rounds on the H200 (docs/BENCHMARKS.md, auto4's
	// section; auto_race.go).
	GPUHandOff bool

	// RaceNoHelp (Device Auto, A/B runs: QP_QUERY_TUNE=racenohelp): the
	// CPU's race pieces neither run the GPU's fanned-out host work between
	// their queries nor yield there (raceBetween; auto_race.go,
	// liveRace.copyCtx), as before branch auto6.
	RaceNoHelp bool

	// first, when in (0, Chunk), is the size of the stream's first chunk,
	// the later ones Chunk: a Device Auto stream resuming on a processor's
	// own stream in the middle of a chunk (auto_stream.go) keeps its later
	// chunks on the caller's chunk grid. The package's StreamWith honours
	// it; before a continuous CPU stream, Engine.StreamWith answers that
	// chunk as one batch (firstBatch).
	first int
}

// chunking is a stream's division of n queries into chunks: the first of
// first queries (when in (0, chunk)), the others of chunk.
type chunking struct{ n, chunk, first int }

func newChunking(n, chunk, first int) chunking {
	if first <= 0 || first >= chunk {
		first = chunk
	}
	return chunking{n, chunk, first}
}

// count is the number of chunks.
func (k chunking) count() int {
	if k.n <= 0 {
		return 0
	}
	if k.n <= k.first {
		return 1
	}
	return 1 + (k.n-k.first+k.chunk-1)/k.chunk
}

// bounds are chunk c's queries [lo, hi).
func (k chunking) bounds(c int) (lo, hi int) {
	if c > 0 {
		lo = k.first + (c-1)*k.chunk
	}
	hi = k.first + c*k.chunk
	return lo, min(hi, k.n)
}

// StreamChunksAhead is how many chunks a continuous CPU stream's workers
// may answer beyond the one being emitted (StreamOptions.Answered).
const StreamChunksAhead = streamBuffers - 1

// Stream evaluates qs on be in chunks of chunk queries (DefaultChunk when
// <= 0) and calls emit(lo, out) with each chunk's responses in order, out[i]
// answering qs[lo+i]. Chunk i+1 runs while emit handles chunk i, so emit's
// work (writing a run, say) overlaps the processor's; out is only valid
// during the call. The first error, of the backend or of emit, stops the
// stream and is returned.
func Stream(ctx context.Context, be engine.Backend, qs []engine.Query, opt engine.Options, chunk int,
	emit func(lo int, out []engine.Response) error) error {
	return StreamWith(ctx, be, qs, opt, StreamOptions{Chunk: chunk}, emit)
}

// StreamWith is Stream with the options of so.
func StreamWith(ctx context.Context, be engine.Backend, qs []engine.Query, opt engine.Options, so StreamOptions,
	emit func(lo int, out []engine.Response) error) error {
	chunk := so.Chunk
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// k searchers, k+1 response buffers: the backend fills up to k while
	// emit reads one. free hands a buffer back once emitted. A searcher
	// takes a buffer before the next chunk index, so the chunk emit waits
	// for is always held by a searcher or done; chunk c's answer goes to
	// slot c mod (k+1), which is empty then (chunk c-k-1 was emitted
	// before its buffer came back for chunk c).
	type done struct {
		lo       int
		out      []engine.Response
		from, to time.Time
		err      error
	}
	k := max(so.InFlight, 1)
	free := make(chan []engine.Response, k+1)
	n := min(chunk, len(qs))
	for range k + 1 {
		free <- newResponses(n, so.ResultCap)
	}
	slots := make([]chan done, k+1)
	for i := range slots {
		slots[i] = make(chan done, 1)
	}
	split := newChunking(len(qs), chunk, so.first)
	nch := split.count()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var out []engine.Response
				select {
				case out = <-free:
				case <-ctx.Done():
					return
				}
				c := int(next.Add(1) - 1)
				if c >= nch {
					return
				}
				lo, hi := split.bounds(c)
				out = out[:hi-lo]
				from := time.Now()
				err := be.SearchBatch(ctx, qs[lo:hi], opt, out)
				slots[c%(k+1)] <- done{lo, out, from, time.Now(), err}
				if err != nil {
					return
				}
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	var err error
	for c := 0; c < nch && err == nil; c++ {
		var d done
		select {
		case d = <-slots[c%(k+1)]:
		case <-finished:
			select { // a searcher may have sent it just before it ended
			case d = <-slots[c%(k+1)]:
			default:
				if d.err = ctx.Err(); d.err == nil {
					panic("BUG: qp: stream searchers ended before the last chunk")
				}
			}
		}
		if err = d.err; err != nil {
			break
		}
		t := time.Now()
		if err = emit(d.lo, d.out); err == nil && so.Trace != nil {
			so.Trace(ChunkTimes{Lo: d.lo, N: len(d.out), SearchStart: d.from, SearchEnd: d.to, EmitStart: t, EmitEnd: time.Now()})
		}
		free <- d.out[:cap(d.out)]
	}
	cancel()
	<-finished
	return err
}

// maxResultSlab bounds the results StreamOptions.ResultCap preallocates
// per buffer (32 MB of topk.Result).
const maxResultSlab = 1 << 22

// raceBetween is what Device Auto's CPU race pieces run between their
// queries beside the GPU (engine.WithBetween; auto_race.go): chunks of
// the GPU's open fanned-out host work (gpu.HelpHost), then a yield, so
// that the GPU side's goroutines readied on the worker's P (a batch's
// searcher, its device owner's hand-off, the emit) run within one query's
// time rather than after the CPU's whole piece, every P being held by a
// worker that runs queries back to back. The scheduler's CPU slots beside
// a GPU do both (scheduler.runSequential).
func raceBetween() bool {
	helped := gpu.HelpHost()
	runtime.Gosched()
	return helped
}

// newResponses returns n responses; with capacity > 0, each one's Results
// has that capacity, cut from one slice.
func newResponses(n, capacity int) []engine.Response {
	out := make([]engine.Response, n)
	if capacity <= 0 || n*capacity > maxResultSlab {
		return out
	}
	slab := make([]topk.Result, n*capacity)
	for i := range out {
		out[i].Results = slab[i*capacity : i*capacity : (i+1)*capacity]
	}
	return out
}
