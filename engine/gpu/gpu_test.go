package gpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/cudatest"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/topk"
)

// The GPU backend is checked against the CPU engine (engine.NewCPU), which
// is itself checked against a brute-force reference: same documents, same
// order, bit-identical float32 scores, same error kinds. The tests share one
// Context and skip (t.Skip with cuda.Available's reason) without a GPU. The
// CUDA emulator of cuda/emu runs them too (LD_LIBRARY_PATH=<its lib>), with
// fewer queries.

var (
	testContext = cudatest.Context
	emulated    = cudatest.Emulated
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := cudatest.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "gpu: Close: %v\n", err)
		code = 1
	}
	if genDir != "" {
		os.RemoveAll(genDir)
	}
	os.Exit(code)
}

func newBackend(t testing.TB, x *index.Index, opt Options) *Backend {
	t.Helper()
	opt.Context = testContext(t)
	b, err := New(x, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// collection is a random collection: sorted terms, their postings, lengths.
type collection struct {
	terms        []string
	docs, freqs  [][]uint32
	lens         []uint32
	n, blockSize int
}

// genCollection draws n documents and nterms lists with the block-boundary
// lengths {1, 2, B-1, B, B+1, 2B+1} and Zipfian ones; with ties every
// document has the same length and every tf is 1, so equal term sets score
// equally (adversarial for the docID tie-break).
func genCollection(rng *rand.Rand, n, nterms, bs int, ties bool) *collection {
	c := &collection{lens: make([]uint32, n), n: n, blockSize: bs}
	sizes := []int{1, 2, bs - 1, bs, bs + 1, 2*bs + 1}
	for t := 0; t < nterms; t++ {
		var df int
		if t < len(sizes) {
			df = sizes[t]
		} else {
			df = int(float64(n) / math.Pow(float64(t-len(sizes)+1), 0.8))
			df = max(1, df-rng.Intn(df/2+1))
		}
		df = min(max(df, 1), n)
		perm := rng.Perm(n)[:df]
		docs := make([]uint32, df)
		for i, d := range perm {
			docs[i] = uint32(d)
		}
		slices.Sort(docs)
		freqs := make([]uint32, df)
		for i, d := range docs {
			freqs[i] = 1
			if !ties {
				freqs[i] = uint32(1 + rng.Intn(3)*rng.Intn(4))
				if rng.Intn(50) == 0 {
					freqs[i] = uint32(1 + rng.Intn(200))
				}
			}
			c.lens[d] += freqs[i]
		}
		c.terms = append(c.terms, fmt.Sprintf("t%03d", t))
		c.docs = append(c.docs, docs)
		c.freqs = append(c.freqs, freqs)
	}
	for d := range c.lens {
		if ties {
			c.lens[d] = 10
		} else {
			c.lens[d] += uint32(rng.Intn(30))
		}
	}
	return c
}

func (c *collection) write(t testing.TB, codec compress.Codec) *index.Index {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.qp")
	w, err := index.NewWriter(path, index.WriterOptions{BlockSize: c.blockSize, DocCodec: codec, DocLens: c.lens})
	if err != nil {
		t.Fatal(err)
	}
	for i, term := range c.terms {
		if err := w.AddList(term, c.docs[i], c.freqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	x, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// bp128 writes the collection as a bp128 index (the default codec).
func (c *collection) bp128(t testing.TB) *index.Index {
	t.Helper()
	codec, _ := compress.ByName("bp128")
	return c.write(t, codec)
}

// randomQueries appends n queries of genQuery to dst.
func randomQueries(rng *rand.Rand, terms []string, n int, dst [][]string) [][]string {
	for range n {
		dst = append(dst, genQuery(rng, terms))
	}
	return dst
}

// genQuery draws 1-8 terms, some repeated, some absent from the index.
func genQuery(rng *rand.Rand, terms []string) []string {
	m := 1 + rng.Intn(8)
	var q []string
	for len(q) < m {
		switch r := rng.Intn(20); {
		case r == 0:
			q = append(q, "zz-unknown")
		case r <= 2 && len(q) > 0:
			q = append(q, q[rng.Intn(len(q))])
		case r <= 10:
			q = append(q, terms[rng.Intn(min(len(terms), 8))])
		default:
			q = append(q, terms[rng.Intn(len(terms))])
		}
	}
	return q
}

// expand makes every (mode, k, QTF) variant of the term lists.
func expand(terms [][]string, ks []int) []engine.Query {
	var qs []engine.Query
	for i, ts := range terms {
		for _, mode := range []engine.Mode{engine.And, engine.Or, engine.AndOr} {
			for _, k := range ks {
				for _, qtf := range []bool{false, true} {
					qs = append(qs, engine.Query{ID: fmt.Sprintf("q%d/%v/k%d/qtf=%v", i, mode, k, qtf),
						Terms: ts, Mode: mode, K: k, QTF: qtf})
				}
			}
		}
	}
	return qs
}

// searchBoth runs qs on g and on the CPU engine (all cores).
func searchBoth(t *testing.T, x *index.Index, g engine.Backend, qs []engine.Query) (got, want []engine.Response) {
	t.Helper()
	got = make([]engine.Response, len(qs))
	if err := g.SearchBatch(context.Background(), qs, engine.Options{}, got); err != nil {
		t.Fatal(err)
	}
	return got, cpuAnswers(t, x, qs)
}

// cpuAnswers returns the CPU engine's responses to qs over x.
func cpuAnswers(t *testing.T, x *index.Index, qs []engine.Query) []engine.Response {
	t.Helper()
	want := make([]engine.Response, len(qs))
	if err := engine.NewCPU(x, 0).SearchBatch(context.Background(), qs, engine.Options{}, want); err != nil {
		t.Fatal(err)
	}
	return want
}

// compare runs qs on the CPU and on g and requires identical outcomes.
func compare(t *testing.T, x *index.Index, g engine.Backend, qs []engine.Query) (results, empty int) {
	t.Helper()
	got, want := searchBoth(t, x, g, qs)
	for i, q := range qs {
		if msg := sameResponse(got[i], want[i]); msg != "" {
			t.Fatalf("query %s terms %q: %s", q.ID, q.Terms, msg)
		}
		results += len(want[i].Results)
		if len(want[i].Results) == 0 {
			empty++
		}
	}
	return results, empty
}

var errKinds = []error{engine.ErrEmptyQuery, engine.ErrTooManyTerms, engine.ErrBadK, engine.ErrBadMode, index.ErrCorrupt}

func errKind(err error) error {
	for _, k := range errKinds {
		if errors.Is(err, k) {
			return k
		}
	}
	return err
}

func sameResponse(got, want engine.Response) string {
	if (got.Err == nil) != (want.Err == nil) || got.Err != nil && errKind(got.Err) != errKind(want.Err) {
		return fmt.Sprintf("error %v, want %v", got.Err, want.Err)
	}
	if len(got.Results) != len(want.Results) {
		return fmt.Sprintf("%d results, want %d", len(got.Results), len(want.Results))
	}
	for i := range want.Results {
		g, w := got.Results[i], want.Results[i]
		if g.Doc != w.Doc || math.Float32bits(g.Score) != math.Float32bits(w.Score) {
			return fmt.Sprintf("rank %d: got %+v, want %+v", i, g, w)
		}
	}
	ga, wa := got.Stats.AndAlgo != "", want.Stats.AndAlgo != ""
	go_, wo := got.Stats.OrAlgo != "", want.Stats.OrAlgo != ""
	if ga != wa || go_ != wo {
		return fmt.Sprintf("stats say AND %q OR %q, the CPU's AND %q OR %q", got.Stats.AndAlgo, got.Stats.OrAlgo,
			want.Stats.AndAlgo, want.Stats.OrAlgo)
	}
	if got.Stats.Terms != want.Stats.Terms {
		return fmt.Sprintf("%d terms, want %d", got.Stats.Terms, want.Stats.Terms)
	}
	return ""
}

// gpuCodecs are the codecs with GPU decoders.
func gpuCodecs() []compress.Codec {
	var out []compress.Codec
	for _, c := range compress.All() {
		if kern.Supported(c.ID()) {
			out = append(out, c)
		}
	}
	return out
}

// TestDifferentialRandom compares every mode x k x QTF with the CPU on
// random collections, for every codec with a GPU decoder, block sizes 1 to
// 128 and 1 to 1500 documents; each collection's queries run as one batch
// (one launch set) and again with Threshold 1 (one query per set).
func TestDifferentialRandom(t *testing.T) {
	c := testContext(t)
	blockSizes := []int{1, 2, 3, 7, 16, 64, 128}
	docCounts := []int{1, 2, 37, 400, 1500}
	ks := []int{1, 10, 100, 1000}
	nq := 12
	if emulated(c) {
		nq = 4
	}
	combo := 0
	for _, codec := range gpuCodecs() {
		for _, bs := range blockSizes {
			combo++
			n := docCounts[combo%len(docCounts)]
			ties := combo%3 == 0
			name := fmt.Sprintf("%s/B%d/N%d", codec.Name(), bs, n)
			if ties {
				name += "/ties"
			}
			if emulated(c) && combo%3 != 0 && codec.Name() != "bp128" {
				continue
			}
			t.Run(name, func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(combo)))
				col := genCollection(rng, n, 24, bs, ties)
				x := col.write(t, codec)
				terms := randomQueries(rng, col.terms, nq, nil)
				qs := expand(terms, ks)
				compare(t, x, newBackend(t, x, Options{}), qs)
				if combo%2 == 0 {
					compare(t, x, newBackend(t, x, Options{Threshold: 1}), qs)
				}
			})
		}
	}
}

// TestDifferentialLarge has many blocks per list (20000 documents, B=32),
// so AND skips most blocks of the longer lists; k up to 10000.
func TestDifferentialLarge(t *testing.T) {
	c := testContext(t)
	if testing.Short() {
		t.Skip("short")
	}
	nq := 40
	if emulated(c) {
		nq = 8
	}
	for _, ties := range []bool{false, true} {
		t.Run(fmt.Sprintf("ties=%v", ties), func(t *testing.T) {
			rng := rand.New(rand.NewSource(99))
			col := genCollection(rng, 20000, 40, 32, ties)
			x := col.bp128(t)
			terms := randomQueries(rng, col.terms, nq, nil)
			compare(t, x, newBackend(t, x, Options{Threshold: 5000}), expand(terms, []int{1, 10, 100, 1000, 10000}))
		})
	}
}

// TestErrors checks the per-query error kinds, which do not fail the batch,
// mixed with valid queries, and the batch-level errors.
func TestErrors(t *testing.T) {
	testContext(t)
	rng := rand.New(rand.NewSource(5))
	col := genCollection(rng, 300, 12, 16, false)
	x := col.write(t, compress.All()[0])
	g := newBackend(t, x, Options{})
	long := make([]string, engine.MaxTerms+1)
	for i := range long {
		long[i] = col.terms[i%len(col.terms)]
	}
	qs := []engine.Query{
		{ID: "ok", Terms: []string{"t001", "t007"}, Mode: engine.Or, K: 5},
		{ID: "empty", Mode: engine.And, K: 5},
		{ID: "long", Terms: long, Mode: engine.Or, K: 5},
		{ID: "k0", Terms: []string{"t001"}, Mode: engine.And, K: 0},
		{ID: "kbig", Terms: []string{"t001"}, Mode: engine.And, K: topk.MaxK + 1},
		{ID: "mode", Terms: []string{"t001"}, K: 3},
		{ID: "unknown-and", Terms: []string{"t001", "nope"}, Mode: engine.And, K: 5},
		{ID: "unknown-andor", Terms: []string{"t001", "nope"}, Mode: engine.AndOr, K: 5},
		{ID: "only-unknown-or", Terms: []string{"nope"}, Mode: engine.Or, K: 5},
		{ID: "only-unknown-andor", Terms: []string{"nope", "nope2"}, Mode: engine.AndOr, K: 5},
		{ID: "ok2", Terms: []string{"t000", "t002", "t002"}, Mode: engine.AndOr, K: 10000, QTF: true},
	}
	compare(t, x, g, qs)
	got := make([]engine.Response, 1)
	if err := g.SearchBatch(context.Background(), qs, engine.Options{}, got); err == nil {
		t.Error("mismatched lengths: no error")
	}
	got = make([]engine.Response, len(qs))
	if err := g.SearchBatch(context.Background(), qs, engine.Options{OrAlgo: "nope"}, got); !errors.Is(err, engine.ErrBadStrategy) {
		t.Errorf("bad strategy: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.SearchBatch(ctx, qs, engine.Options{}, got); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	for i, r := range got {
		if qs[i].ID == "ok" && !errors.Is(r.Err, context.Canceled) {
			t.Errorf("cancelled batch: query %s: %v", qs[i].ID, r.Err)
		}
	}
}

// TestUnsupported needs no GPU: indexes the decoders cannot serve are
// refused before any device is touched.
func TestUnsupported(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	col := genCollection(rng, 600, 8, 256, false)
	x := col.write(t, compress.All()[0])
	if _, err := New(x); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("block size 256: New: %v, want ErrUnsupported", err)
	}
	// A codec without a GPU decoder (binary interpolative coding is
	// CPU-only): refused with a message naming it; qp.Open then falls back
	// to the CPU (Device Auto) or fails (Device GPU).
	ip, err := compress.ByName("interpolative")
	if err != nil {
		t.Fatal(err)
	}
	col = genCollection(rng, 600, 8, 128, false)
	x = col.write(t, ip)
	if _, err := New(x); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "codec interpolative has no GPU decoder") {
		t.Fatalf("interpolative index: New: %v, want ErrUnsupported naming the codec", err)
	}
}

// TestOutOfMemory fills the GPU but a few MiB (then but one MiB), runs a
// batch and requires each query to either match the CPU or fail with an
// error matching cuda.ErrOutOfMemory (sets that run out of memory are
// split, down to single queries); then frees the memory and requires every
// query to match.
func TestOutOfMemory(t *testing.T) {
	c := testContext(t)
	if emulated(c) {
		t.Skip("the emulator's device memory is host memory")
	}
	rng := rand.New(rand.NewSource(7))
	col := genCollection(rng, 200000, 20, 128, false)
	x := col.write(t, compress.All()[0])
	g := newBackend(t, x, Options{})
	var terms [][]string
	for range 30 {
		terms = append(terms, genQuery(rng, col.terms))
	}
	qs := expand(terms, []int{10, 1000})
	want := cpuAnswers(t, x, qs)
	var hog []*cuda.Buffer
	defer func() {
		for _, h := range hog {
			h.Free()
		}
	}()
	got := make([]engine.Response, len(qs))
	for _, target := range []int64{6 << 20, 1 << 20} {
		if err := c.Pool().Trim(); err != nil {
			t.Fatal(err)
		}
		free, _, err := c.MemInfo()
		if err != nil {
			t.Fatal(err)
		}
		left := int64(free)
		for chunk := int64(1 << 30); chunk >= 64<<10; chunk /= 2 {
			for left-chunk >= target {
				h, err := c.Alloc(int(chunk))
				if err != nil {
					break
				}
				hog = append(hog, h)
				left -= chunk
			}
		}
		g.ResetProfile()
		if err := g.SearchBatch(context.Background(), qs, engine.Options{}, got); err != nil {
			t.Fatal(err)
		}
		oom := 0
		for i := range qs {
			if got[i].Err != nil && errors.Is(got[i].Err, cuda.ErrOutOfMemory) {
				oom++
				continue
			}
			if msg := sameResponse(got[i], want[i]); msg != "" {
				t.Fatalf("with %d KiB free: query %s: %s", left>>10, qs[i].ID, msg)
			}
		}
		t.Logf("with %d KiB of device memory free: %d launch sets, %d of %d queries failed with errors matching cuda.ErrOutOfMemory, the others match the CPU",
			left>>10, g.Profile().Sets, oom, len(qs))
	}
	for _, h := range hog {
		h.Free()
	}
	hog = nil
	g.ResetProfile()
	if err := g.SearchBatch(context.Background(), qs, engine.Options{}, got); err != nil {
		t.Fatal(err)
	}
	for i := range qs {
		if msg := sameResponse(got[i], want[i]); msg != "" {
			t.Fatalf("after freeing: query %s: %s", qs[i].ID, msg)
		}
	}
	t.Logf("after freeing: %d launch set(s), every query matches the CPU", g.Profile().Sets)
}

// TestGen runs TREC efficiency queries on a synthetic GOV2-like collection
// (gen, ~50k documents): AND, OR, AND+OR x k in {1, 10, 100, 1000}, with
// and without QTF.
func TestGen(t *testing.T) {
	c := testContext(t)
	x, queries := genIndex(t)
	nq := 300
	if emulated(c) {
		nq = 25
	}
	rng := rand.New(rand.NewSource(8))
	var terms [][]string
	for range nq {
		terms = append(terms, queries[rng.Intn(len(queries))])
	}
	qs := expand(terms, []int{1, 10, 100, 1000})
	g := newBackend(t, x, Options{Threshold: 200000})
	results, empty := compare(t, x, g, qs)
	t.Logf("%d queries (%d term lists), %d results, %d empty: GPU equals CPU", len(qs), nq, results, empty)
}

// ---- the synthetic collection and the TREC query log ----

var (
	genOnce    sync.Once
	genX       *index.Index
	genQueries [][]string
	genErr     error
	genDir     string
)

// queryLogDir finds the TREC efficiency query logs: $QP_QUERIES,
// ../../../shared/data/queries (the checkout's sibling shared folder, from
// this package), or bin/data/queries (a copy in the repository, for runs of
// the test binary from the repository root).
func queryLogDir() (string, error) {
	cands := []string{os.Getenv("QP_QUERIES"), filepath.Join("..", "..", "..", "shared", "data", "queries"),
		filepath.Join("bin", "data", "queries"), filepath.Join("..", "..", "bin", "data", "queries")}
	for _, d := range cands {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "06.efficiency_topics.txt")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("TREC efficiency query logs not found in %q", cands)
}

func genIndex(t testing.TB) (*index.Index, [][]string) {
	t.Helper()
	dir, err := queryLogDir()
	if err != nil {
		t.Skip(err)
	}
	genOnce.Do(func() {
		start := time.Now()
		genDir, genErr = os.MkdirTemp("", "qp-gpu-gen-")
		if path := os.Getenv("QP_BENCH_INDEX"); genErr == nil && path != "" {
			genX, genErr = index.Open(path)
			if genErr == nil {
				genQueries, genErr = loadLogQueries(filepath.Join(dir, "06.efficiency_topics.txt"))
			}
		} else if genErr == nil {
			genX, genQueries, genErr = buildGenIndex(filepath.Join(genDir, "gen.qp"), dir)
		}
		if genErr == nil {
			fmt.Fprintf(os.Stderr, "gen: %d documents, %d terms, %d postings, %d MiB of postings, %d queries from %s, built in %v\n",
				genX.NumDocs(), genX.NumTerms(), genX.Meta.Postings, genX.SizeBytes()>>20, len(genQueries), dir, time.Since(start).Round(time.Millisecond))
		}
	})
	if genErr != nil {
		t.Fatal(genErr)
	}
	return genX, genQueries
}

// TestOrThreshold cuts launch sets by the OR work of the OR and AND+OR
// queries (Options.OrThreshold): with a threshold of one posting
// every such query closes its set, the AND queries do not, and every
// result still equals the CPU's.
func TestOrThreshold(t *testing.T) {
	testContext(t)
	rng := rand.New(rand.NewSource(7))
	col := genCollection(rng, 3000, 24, 32, false)
	x := col.bp128(t)
	qs := expand(randomQueries(rng, col.terms, 6, nil), []int{10})
	var ors int
	for _, q := range qs {
		if q.Mode != engine.And {
			ors++
		}
	}
	g := newBackend(t, x, Options{OrThreshold: 1})
	if g.OrThreshold() != 1 {
		t.Fatalf("OrThreshold() = %d, want 1", g.OrThreshold())
	}
	compare(t, x, g, qs)
	if sets := g.Profile().Sets; sets < int64(ors) || sets > int64(ors)+1 {
		t.Fatalf("%d launch sets for %d OR and AND+OR queries (and %d AND queries): want one per OR query (+1)", sets, ors, len(qs)-ors)
	}
	g.SetOrThreshold(0)
	if g.OrThreshold() != DefaultOrThreshold {
		t.Fatalf("SetOrThreshold(0) left %d, want the default %d", g.OrThreshold(), DefaultOrThreshold)
	}
	g.ResetProfile()
	compare(t, x, g, qs)
	if sets := g.Profile().Sets; sets != 1 {
		t.Fatalf("%d launch sets with the default thresholds, want 1", sets)
	}
}

// TestOrCost: a query's share of the OR threshold is its postings plus
// orTilePostings per tile it can touch (at most one per posting); AND
// queries count nothing. Host arithmetic: no GPU needed.
func TestOrCost(t *testing.T) {
	b := &Backend{n: 10_000_000}
	tiles := int64(1221) // ceil(10M / 8192)
	for _, c := range []struct {
		mode engine.Mode
		dfs  []uint32
		want int64
	}{
		{engine.And, []uint32{5, 1 << 20}, 0},
		{engine.Or, []uint32{3}, 3 + 3*orTilePostings},
		{engine.Or, []uint32{1000, 1 << 20}, 1000 + 1<<20 + tiles*orTilePostings},
		{engine.AndOr, []uint32{1 << 22}, 1<<22 + tiles*orTilePostings},
		{engine.Or, nil, 0},
	} {
		p := &prep{q: &engine.Query{Mode: c.mode}}
		for _, df := range c.dfs {
			p.terms = append(p.terms, qterm{df: df})
		}
		if got := b.orCost(p); got != c.want {
			t.Errorf("%v %v: orCost %d, want %d", c.mode, c.dfs, got, c.want)
		}
	}
}
