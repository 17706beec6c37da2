package reorder

import (
	"context"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
)

// Options configure Bisect. The zero value selects the defaults.
type Options struct {
	// Depth is the number of bisection levels; 0 selects
	// max(1, floor(log2 N) - 5), the default of PISA and of Mackenzie et al.
	// (ECIR 2019 §3), which stops at parts of 32 to 64 documents.
	Depth int
	// Iters is the number of swap rounds per bisection (0: 20, Dhulipala et
	// al. KDD 2016 §4.2 and PISA). A round without a swap ends the
	// bisection early (the next round would be identical).
	Iters int
	// Refine is the number of further levels below Depth, each bisection
	// of them with RefineIters rounds (0: DefaultRefine; negative: none,
	// PISA's behaviour). Below PISA's depth the parts hold 32-64 documents
	// whose relative order is otherwise left as it came (random, for a
	// crawl without URL order); refining them to parts of one or two
	// documents with a few rounds orders the documents inside those parts
	// at about a tenth of the cost of full rounds (docs/REORDER.md,
	// "Refinement levels").
	Refine int
	// RefineIters is the number of swap rounds per bisection of the
	// refinement levels (0: DefaultRefineIters).
	RefineIters int
	// Seed orders documents of equal move gain (a hash of seed and
	// docID); the result depends on it and on nothing else, not on Workers.
	Seed uint64
	// Workers is the number of goroutines (0 = all cores).
	Workers int
	// Progress, when not nil, is called (never concurrently) after each
	// bisection with the documents bisected so far and the total, which is
	// about N × Depth.
	Progress func(done, total int64)
}

// Defaults of Options.Refine and Options.RefineIters: five levels take
// PISA's parts of 32-64 documents down to one or two; four rounds gave
// 95% of the gain of twenty at a tenth of their time (docs/REORDER.md).
const (
	DefaultRefine      = 5
	DefaultRefineIters = 4
)

// DefaultDepth is the Depth that 0 selects for n documents.
func DefaultDepth(n int) int {
	if n < 2 {
		return 1
	}
	return max(1, bits.Len(uint(n))-1-5)
}

// Bisect computes a docID order of g's documents by recursive graph
// bisection (Dhulipala et al. KDD 2016, Algorithm 1): the documents (in
// ascending docID order) are split into halves; 20 times, every document's
// move gain (the drop of the log-gap cost, below, if it moved to the other
// half) is computed, each half is sorted by gain, and the i-th documents of
// the two halves swap while the sum of their gains is positive; then each
// half is bisected the same way, to Depth levels, then Refine more levels
// of RefineIters rounds each, and the documents of each final part keep
// their relative docID order. The cost of a term t in a part
// of n documents, d of which hold t, is d·(log2 n − log2(d+1)): the bits of
// d gaps of mean n/(d+1) (§4.1's log-gap approximation, as in PISA).
//
// It returns order, with order[new] = old docID. The two halves of each
// bisection are processed concurrently by separate goroutines, and a large
// part's gain computation is split among the goroutines that part owns;
// every step is exact or ordered (integer degrees, per-document sums of
// per-term gains in term order, sorts by (gain, hash, docID)), so the order
// is a function of g and Options.Depth/Iters/Refine/RefineIters/Seed only.
//
// Memory: 4 bytes per document for order, plus, per worker, 25 bytes per
// term of g (degrees, per-term gains, a mark), 8 per distinct term of the
// part being bisected and 24 per document of it (gains, sort keys).
func Bisect(ctx context.Context, g *Graph, opt Options) ([]uint32, error) {
	n := g.NumDocs()
	if opt.Depth <= 0 {
		opt.Depth = DefaultDepth(n)
	}
	if opt.Iters <= 0 {
		opt.Iters = 20
	}
	opt.Refine, opt.RefineIters = refineOf(opt)
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(i)
	}
	b := &bisector{g: g, opt: opt, ctx: ctx}
	b.total = int64(n) * int64(opt.Depth+opt.Refine)
	b.log2 = make([]float64, 1<<16)
	for i := 1; i < len(b.log2); i++ {
		b.log2[i] = math.Log2(float64(i))
	}
	b.run(order, opt.Depth+opt.Refine, b.newScratch(), opt.Workers)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return order, nil
}

type bisector struct {
	g    *Graph
	opt  Options
	ctx  context.Context
	log2 []float64 // log2 of small integers

	mu    sync.Mutex
	done  int64
	total int64
}

// scratch is the per-goroutine state of one bisection. Between bisections
// deg is all zero.
type scratch struct {
	deg   [2][]int32   // per term: documents of the left / right half holding it
	tgain [2][]float64 // per term: gain of moving a document left→right / right→left
	terms []uint32     // distinct terms of the part
	gains []float64    // move gain of the part's documents, by position
	keys  []sortKey    // sort keys of the part's documents (gain and docID)
	dirty []uint32     // terms whose degrees the last swaps changed
	mark  []bool       // per term: in dirty
}

func (b *bisector) newScratch() *scratch {
	k := b.g.NumTerms
	return &scratch{
		deg:   [2][]int32{make([]int32, k), make([]int32, k)},
		tgain: [2][]float64{make([]float64, k), make([]float64, k)},
		mark:  make([]bool, k),
	}
}

func (b *bisector) lg(x int32) float64 {
	if int(x) < len(b.log2) {
		return b.log2[x]
	}
	return math.Log2(float64(x))
}

// refineOf resolves Options.Refine and RefineIters to the levels and
// rounds to run (none when Refine is negative).
func refineOf(opt Options) (levels, iters int) {
	levels, iters = opt.Refine, opt.RefineIters
	if levels == 0 {
		levels = DefaultRefine
	}
	if iters <= 0 {
		iters = DefaultRefineIters
	}
	return max(levels, 0), iters
}

// run bisects docs to depth levels with p goroutines (this one included);
// the last opt.Refine levels run opt.RefineIters rounds, the others
// opt.Iters.
func (b *bisector) run(docs []uint32, depth int, sc *scratch, p int) {
	slices.Sort(docs)
	if depth == 0 || len(docs) < 2 || b.ctx.Err() != nil {
		return
	}
	half := len(docs) / 2
	left, right := docs[:half], docs[half:]
	iters := b.opt.Iters
	if depth <= b.opt.Refine {
		iters = b.opt.RefineIters
	}
	b.bisect(left, right, sc, p, iters)
	b.report(len(docs))
	switch {
	case depth == 1:
		slices.Sort(left)
		slices.Sort(right)
	case p >= 2:
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.run(right, depth-1, b.newScratch(), p-p/2)
		}()
		b.run(left, depth-1, sc, p/2)
		wg.Wait()
	default:
		b.run(left, depth-1, sc, 1)
		b.run(right, depth-1, sc, 1)
	}
}

func (b *bisector) report(n int) {
	if b.opt.Progress == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += int64(n)
	b.opt.Progress(b.done, b.total)
}

// bisect improves the split of a part into left and right (equal sizes or
// right one larger) by iters rounds of swaps, in place.
func (b *bisector) bisect(left, right []uint32, sc *scratch, p, iters int) {
	sc.terms = sc.terms[:0]
	for side, half := range [2][]uint32{left, right} {
		deg, other := sc.deg[side], sc.deg[1-side]
		for _, d := range half {
			for _, t := range b.g.DocTerms(d) {
				if deg[t] == 0 && other[t] == 0 {
					sc.terms = append(sc.terms, t)
				}
				deg[t]++
			}
		}
	}
	for it := 0; it < iters && b.ctx.Err() == nil; it++ {
		// A term's gains change only with its degrees (the sizes stay).
		if it == 0 {
			b.termGains(sc, sc.terms, len(left), len(right), p)
		} else {
			b.termGains(sc, sc.dirty, len(left), len(right), p)
			for _, t := range sc.dirty {
				sc.mark[t] = false
			}
		}
		sc.dirty = sc.dirty[:0]
		gains := slices.Grow(sc.gains[:0], len(left)+len(right))[:len(left)+len(right)]
		sc.gains = gains
		b.docGains(left, sc.tgain[0], gains[:len(left)], p)
		b.docGains(right, sc.tgain[1], gains[len(left):], p)
		b.sortByGain(left, right, sc, p)
		if b.swap(left, right, sc) == 0 {
			break
		}
	}
	for _, t := range sc.dirty {
		sc.mark[t] = false
	}
	sc.dirty = sc.dirty[:0]
	for _, t := range sc.terms {
		sc.deg[0][t], sc.deg[1][t] = 0, 0
	}
}

// termGains computes, for the terms ts of the part, the drop of the cost
// when one document holding it moves left→right (tgain[0]) and
// right→left (tgain[1]).
func (b *bisector) termGains(sc *scratch, ts []uint32, n1, n2 int, p int) {
	l1, l2 := math.Log2(float64(n1)), math.Log2(float64(n2))
	dl, dr := sc.deg[0], sc.deg[1]
	gl, gr := sc.tgain[0], sc.tgain[1]
	cost := func(d1, d2 int32) float64 {
		return float64(d1)*(l1-b.lg(d1+1)) + float64(d2)*(l2-b.lg(d2+1))
	}
	parallelRange(len(ts), parts(p, len(ts)), func(lo, hi int) {
		for _, t := range ts[lo:hi] {
			d1, d2 := dl[t], dr[t]
			c := cost(d1, d2)
			if d1 > 0 {
				gl[t] = c - cost(d1-1, d2+1)
			}
			if d2 > 0 {
				gr[t] = c - cost(d1+1, d2-1)
			}
		}
	})
}

// docGains sums the term gains of every document of half into gains
// (by position).
func (b *bisector) docGains(half []uint32, tg, gains []float64, p int) {
	parallelRange(len(half), parts(p, len(half)), func(lo, hi int) {
		for i, d := range half[lo:hi] {
			s := 0.0
			for _, t := range b.g.DocTerms(d) {
				s += tg[t]
			}
			gains[lo+i] = s
		}
	})
}

// minParallel is the smallest loop that parts splits (a variable so that
// tests can exercise the parallel paths on small graphs).
var minParallel = 1 << 14

// parts is the number of chunks a loop of n items is split into.
func parts(p, n int) int {
	if n < minParallel {
		return 1
	}
	return p
}

// sortKey orders documents by decreasing gain, then by a seeded hash of
// the docID, then by docID.
type sortKey struct {
	gain uint64 // order-preserving image of -gain
	tie  uint64 // hash<<32 | docID
}

func cmpKey(a, b sortKey) int {
	if a.gain != b.gain {
		if a.gain < b.gain {
			return -1
		}
		return 1
	}
	if a.tie < b.tie {
		return -1
	}
	if a.tie > b.tie {
		return 1
	}
	return 0
}

// keyOf maps -g to a uint64 whose unsigned order is the order of -g;
// gainOf inverts it.
func keyOf(g float64) uint64 {
	if g == 0 {
		g = 0 // -0 sorts as +0
	}
	b := math.Float64bits(-g)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

func gainOf(k uint64) float64 {
	if k>>63 != 0 {
		return -math.Float64frombits(k &^ (1 << 63))
	}
	return -math.Float64frombits(^k)
}

// sortByGain sorts both halves by decreasing gain, ties by a seeded hash
// of the docID, then by docID.
func (b *bisector) sortByGain(left, right []uint32, sc *scratch, p int) {
	keys := slices.Grow(sc.keys[:0], len(left)+len(right))[:len(left)+len(right)]
	sc.keys = keys
	kl, kr := keys[:len(left)], keys[len(left):]
	sortHalf := func(half []uint32, k []sortKey, gains []float64) {
		seed := b.opt.Seed
		for i, d := range half {
			k[i] = sortKey{keyOf(gains[i]), mix(seed^uint64(d))<<32 | uint64(d)}
		}
		slices.SortFunc(k, cmpKey)
		for i := range k {
			half[i] = uint32(k[i].tie)
		}
	}
	if p >= 2 && len(left) >= minParallel/4 {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); sortHalf(right, kr, sc.gains[len(left):]) }()
		sortHalf(left, kl, sc.gains[:len(left)])
		wg.Wait()
		return
	}
	sortHalf(left, kl, sc.gains[:len(left)])
	sortHalf(right, kr, sc.gains[len(left):])
}

// swap exchanges left[i] and right[i] while their gains sum to more than
// zero, updating the degrees, and returns the number of swaps. The halves
// are sorted, and sc.keys holds their keys.
func (b *bisector) swap(left, right []uint32, sc *scratch) int {
	dl, dr := sc.deg[0], sc.deg[1]
	i := 0
	for ; i < len(left) && i < len(right); i++ {
		x, y := left[i], right[i]
		if gainOf(sc.keys[i].gain)+gainOf(sc.keys[len(left)+i].gain) <= 0 {
			break
		}
		for _, t := range b.g.DocTerms(x) {
			dl[t]--
			dr[t]++
			if !sc.mark[t] {
				sc.mark[t] = true
				sc.dirty = append(sc.dirty, t)
			}
		}
		for _, t := range b.g.DocTerms(y) {
			dl[t]++
			dr[t]--
			if !sc.mark[t] {
				sc.mark[t] = true
				sc.dirty = append(sc.dirty, t)
			}
		}
		left[i], right[i] = y, x
	}
	return i
}

// mix is SplitMix64's finalizer.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
