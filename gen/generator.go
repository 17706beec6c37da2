package gen

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/qpengine/qp/index"
)

// Generator generates the posting lists of a synthetic collection. It holds
// O(|QueryTerms|) state; its methods are safe for concurrent use.
type Generator struct {
	cfg   Config
	m     model
	vc    *vocab
	a, b  float64 // tf mean excess m(df) = a + b·ln(1+df)/ln(1+N)
	lnN1  float64 // ln(1+N)
	once  sync.Once
	stats Stats
}

// New fits the model of cfg (see the package comment) and returns its
// generator. Fitting sums the law by groups of equal df, not rank by rank:
// about 50 ms at GOV2's size.
func New(cfg Config) (*Generator, error) {
	cf, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n, v := cf.Docs, cf.Vocab
	p := cf.PostingsPerDoc * float64(n)
	m, err := fit(n, v, p, math.Max(1, cf.TopDF*float64(n)), cf.PureZipf)
	if err != nil {
		return nil, fmt.Errorf("gen: fitting Zipf's law to %d docs, %d terms: %w", n, v, err)
	}
	g := &Generator{cfg: cf, m: m, lnN1: math.Log1p(float64(n))}
	qr := queryRanks(cf.QueryTerms, &g.m, cf.QueryScale, cf.QueryGamma)
	if g.vc, err = newVocab(v, cf.QueryTerms, qr); err != nil {
		return nil, err
	}
	// Term frequencies: b such that Σ df·(1 + a + b·w(df)) = MeanTF·Σ df.
	sumDF := g.m.sum()
	sumW := g.m.sumOver(func(df int) float64 { return float64(df) * g.w(df) })
	g.a = rareExcessTF
	if excess := cf.MeanTF - 1; excess < g.a || sumW == 0 {
		g.a, g.b = excess, 0
	} else {
		g.b = (excess - g.a) * sumDF / sumW
	}
	return g, nil
}

// w is the tf weight of a list of length df: ln(1+df)/ln(1+N) in [0, 1].
func (g *Generator) w(df int) float64 {
	if df < len(lnSmall) {
		return lnSmall[df] / g.lnN1
	}
	return math.Log1p(float64(df)) / g.lnN1
}

// lnSmall[d] = ln(1+d) for the small df of the long tail.
var lnSmall = func() (t [LongList + 1]float64) {
	for d := range t {
		t[d] = math.Log1p(float64(d))
	}
	return t
}()

func (g *Generator) computeStats() {
	n := g.m.n
	st := Stats{Docs: n, Terms: g.m.v, S: g.m.s, C: g.m.C(), Q: g.m.q, QueryTerms: len(g.vc.qterms)}
	scaled := float64(LongList) * float64(n) / GOV2Docs
	// Fixed segments, summed in segment order: the float sum does not
	// depend on the number of workers.
	const segs = 256
	type part struct {
		st   Stats
		sumW float64
	}
	parts := make([]part, segs)
	span := (g.m.v + segs - 1) / segs
	var next atomic.Int64
	var wg sync.WaitGroup
	for range g.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= segs {
					return
				}
				p := &parts[k]
				for r := k * span; r < min((k+1)*span, g.m.v); r++ {
					df := g.m.df(r)
					p.st.Postings += int64(df)
					if df == 1 {
						p.st.DF1Terms++
					}
					if df == n {
						p.st.FullDF++
					}
					if df > LongList {
						p.st.LongTerms++
						p.st.LongPostings += int64(df)
						p.sumW += float64(df) * math.Log1p(float64(df))
					} else {
						p.sumW += float64(df) * lnSmall[df]
					}
					if float64(df) > scaled {
						p.st.ScaledLongTerms++
						p.st.ScaledLongPostings += int64(df)
					}
				}
			}
		}()
	}
	wg.Wait()
	var sumW float64
	for _, p := range parts {
		st.Postings += p.st.Postings
		st.DF1Terms += p.st.DF1Terms
		st.FullDF += p.st.FullDF
		st.LongTerms += p.st.LongTerms
		st.LongPostings += p.st.LongPostings
		st.ScaledLongTerms += p.st.ScaledLongTerms
		st.ScaledLongPostings += p.st.ScaledLongPostings
		sumW += p.sumW
	}
	sumW /= g.lnN1
	p := float64(st.Postings)
	st.PerDoc = p / float64(n)
	st.LongFraction = float64(st.LongPostings) / p
	st.ScaledLongFraction = float64(st.ScaledLongPostings) / p
	st.MeanTF = 1 + g.a + g.b*sumW/p
	st.Tokens = st.MeanTF * p
	if k := len(g.vc.qranks); k > 0 {
		st.QueryMaxRank = int(g.vc.qranks[k-1])
	}
	g.stats = st
}

// Config returns the configuration with defaults filled in.
func (g *Generator) Config() Config { return g.cfg }

// Stats returns the collection's totals: exact for df (one parallel pass
// over the V ranks, done once: 0.2 s at GOV2's size on 16 cores),
// expectations for tf.
func (g *Generator) Stats() Stats {
	g.once.Do(g.computeStats)
	return g.stats
}

// Terms returns V, the number of terms; ranks are 0..V-1, rank 0 the most
// frequent (Zipf rank 1).
func (g *Generator) Terms() int { return g.m.v }

// Term returns the term at rank and its document frequency. Panics if rank
// is out of [0, Terms()).
func (g *Generator) Term(rank int) (term string, df int) {
	g.check(rank)
	return g.vc.name(rank), g.m.df(rank)
}

// DF returns the document frequency of rank.
func (g *Generator) DF(rank int) int {
	g.check(rank)
	return g.m.df(rank)
}

func (g *Generator) check(rank int) {
	if rank < 0 || rank >= g.m.v {
		panic(fmt.Sprintf("gen: rank %d out of range [0, %d)", rank, g.m.v))
	}
}

// Postings returns the list of rank: its df distinct document IDs in
// ascending order (a uniform random df-subset of [0, N)) and their term
// frequencies (>= 1), appended to docs[:0] and freqs[:0] so that buffers
// can be reused. The list depends only on (Config, rank). Cost O(df)
// expected (O(32·df) at most for dense lists). Panics if rank is out of
// range.
func (g *Generator) Postings(rank int, docs, freqs []uint32) ([]uint32, []uint32) {
	g.check(rank)
	df := g.m.df(rank)
	r := termRNG(g.cfg.Seed, rank)
	docs = sample(docs[:0], df, g.m.n, &r)
	ts := newTFSampler(g.a+g.b*g.w(df), df)
	freqs = freqs[:0]
	for range docs {
		freqs = append(freqs, ts.draw(&r))
	}
	return docs, freqs
}

// SortedRanks returns every rank ordered by its term's byte order: the
// order in which an index writer must receive the lists
// (index.Writer.AddList). 4·V bytes.
func (g *Generator) SortedRanks() []int32 { return g.vc.sortedRanks() }

// Lists returns the number of lists and an index.ProduceFunc that yields
// them in SortedRanks order (the i-th call generates the i-th term's list
// into the buffers it is given), for index.Writer.AddListsParallel.
func (g *Generator) Lists() (int, index.ProduceFunc) {
	order := g.SortedRanks()
	return len(order), func(i int, d, f []uint32) (string, []uint32, []uint32, error) {
		rank := int(order[i])
		term, _ := g.Term(rank)
		d, f = g.Postings(rank, d, f)
		return term, d, f, nil
	}
}

// DocLengths returns every document's length, the sum of its term
// frequencies over all lists, by generating every list once: O(Postings)
// time (Postings / the rate BenchmarkPostings reports, divided among
// Config.Workers goroutines; at GOV2's size 5.74G postings) and
// O(Workers·N) memory (one uint32 accumulator per worker, summed at the
// end): at GOV2's size 5.74G postings, 12.9 s with 16 cores (446M
// postings/s) and 1.6 GB. The result does not depend on the number of
// workers (integer sums commute).
func (g *Generator) DocLengths() []uint32 {
	n, workers := g.m.n, g.cfg.Workers
	parts := make([][]uint32, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc := make([]uint32, n)
			var docs, freqs []uint32
			for {
				// Heavy head ranks one at a time, then larger chunks.
				lo := int(next.Load())
				chunk := int64(min(1+lo/256, 4096))
				lo = int(next.Add(chunk) - chunk)
				if lo >= g.m.v {
					break
				}
				for rank := lo; rank < min(lo+int(chunk), g.m.v); rank++ {
					docs, freqs = g.Postings(rank, docs, freqs)
					for i, d := range docs {
						acc[d] += freqs[i]
					}
				}
			}
			parts[w] = acc
		}()
	}
	wg.Wait()
	out := parts[0]
	// Sum the other accumulators into out, split by document range.
	span := (n + workers - 1) / workers
	for w := range workers {
		lo, hi := w*span, min((w+1)*span, n)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range parts[1:] {
				for d := lo; d < hi; d++ {
					out[d] += p[d]
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// ErrStop may be returned by Each's fn to stop early; Each then returns nil.
var ErrStop = errors.New("gen: stop")

// maxInFlight bounds the postings generated ahead of Each's consumer.
const maxInFlight = 1 << 26

// Each generates the lists of the given ranks (all ranks in rank order when
// order is nil) with Config.Workers goroutines and calls fn with each list,
// in the given order, one call at a time. docs and freqs are valid only
// during the call. At most about 64M postings (512 MiB) plus one list are
// generated ahead of fn. Each stops at fn's first error and returns it
// (nil for ErrStop). Panics if a rank is out of range.
func (g *Generator) Each(order []int32, fn func(rank int, docs, freqs []uint32) error) error {
	count := g.m.v
	if order != nil {
		count = len(order)
		for _, r := range order {
			g.check(int(r))
		}
	}
	rankAt := func(i int) int {
		if order == nil {
			return i
		}
		return int(order[i])
	}
	type result struct{ docs, freqs []uint32 }
	type job struct {
		rank int
		out  chan result
	}
	workers := g.cfg.Workers
	window := 4 * workers
	jobs := make(chan job, window)
	pending := make(chan job, window)
	stop := make(chan struct{})
	free := make(chan result, window+workers) // recycled buffers

	// Budget of postings in flight, reserved in order by the dispatcher and
	// released by the consumer, so that a reservation never waits on a
	// later one.
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	inFlight := 0
	stopped := false
	release := func(n int) {
		mu.Lock()
		inFlight -= n
		mu.Unlock()
		cond.Signal()
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // dispatcher
		defer wg.Done()
		defer close(jobs)
		defer close(pending)
		for i := range count {
			rank := rankAt(i)
			need := min(g.m.df(rank), maxInFlight)
			mu.Lock()
			for inFlight > 0 && inFlight+need > maxInFlight && !stopped {
				cond.Wait()
			}
			inFlight += need
			s := stopped
			mu.Unlock()
			if s {
				return
			}
			j := job{rank, make(chan result, 1)}
			select {
			case pending <- j:
			case <-stop:
				return
			}
			select {
			case jobs <- j:
			case <-stop:
				return
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var buf result
				select {
				case buf = <-free:
				default:
				}
				buf.docs, buf.freqs = g.Postings(j.rank, buf.docs, buf.freqs)
				j.out <- buf
			}
		}()
	}

	var err error
	for j := range pending {
		res := <-j.out
		if err = fn(j.rank, res.docs, res.freqs); err != nil {
			break
		}
		release(min(len(res.docs), maxInFlight))
		if cap(res.docs) <= maxInFlight/window { // keep small buffers only
			select {
			case free <- res:
			default:
			}
		}
	}
	if err != nil {
		mu.Lock()
		stopped = true
		mu.Unlock()
		cond.Broadcast()
		close(stop)
		for range pending { // unblock the dispatcher's sends
		}
	}
	wg.Wait()
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
}
