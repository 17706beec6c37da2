// Package engine is qp's CPU query processor: ranked conjunctive (AND),
// disjunctive (OR) and AND-then-OR queries over a compressed index, with
// several exact algorithms per mode. It is the reference every other backend
// (the CUDA engine) is compared with, so every strategy returns exactly the
// exhaustive result: the same documents, the same float32 scores, in the same
// order.
//
// Exactness rests on three rules.
//
//  1. Scores follow score/bm25.go: a document's score is the float32 sum of
//     score.Term over its query terms in canonical order (ascending df, ties
//     by ascending term ID). DAAT strategies keep each term's contribution in
//     a small array indexed by canonical position and sum it in that order;
//     TAAT adds whole lists in that order.
//  2. Results are ranked by topk's total order: score descending, docID
//     ascending.
//  3. Pruning (block-max AND, MaxScore, BlockMax-WAND) discards a document
//     only when an upper bound of its score is strictly below the current
//     k-th score. Bounds are sums of float32 list or block maxima computed in
//     float64 and inflated by a factor covering float32 summation error
//     (inflate), so a pruned document provably could not have entered the
//     top k, not even on a tie with a smaller docID.
package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/score"
	"github.com/qpengine/qp/topk"
)

// MaxTerms is the largest number of query terms accepted (counted before
// removing duplicates).
const MaxTerms = 1024

// Errors returned for invalid queries and options (wrapped with details).
var (
	// ErrEmptyQuery: the query has no terms (e.g. everything was removed by
	// analysis). A query whose terms are all absent from the index is not
	// an error: it has no results.
	ErrEmptyQuery   = errors.New("empty query")
	ErrTooManyTerms = errors.New("too many query terms")
	ErrBadK         = errors.New("k out of range")
	ErrBadMode      = errors.New("bad query mode")
	ErrBadStrategy  = errors.New("unknown strategy")
)

// Mode is the Boolean semantics of a query. The zero value is invalid, so a
// forgotten mode is an error rather than a silent AND.
type Mode uint8

const (
	// And ranks the documents that contain every term. An unknown term
	// makes the result empty.
	And Mode = iota + 1
	// Or ranks the documents that contain at least one term. Unknown terms
	// are ignored.
	Or
	// AndOr runs And and, when it finds fewer than K documents, runs Or and
	// returns the Or result (Ding et al. WWW'09 §8: "first computes an AND,
	// and then issues another OR query if there are not enough results").
	AndOr
)

func (m Mode) String() string {
	switch m {
	case And:
		return "and"
	case Or:
		return "or"
	case AndOr:
		return "andor"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode parses "and", "or" or "andor" (case-insensitive; "and+or" too).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "and":
		return And, nil
	case "or":
		return Or, nil
	case "andor", "and+or", "and_or":
		return AndOr, nil
	}
	return 0, fmt.Errorf("%w %q (and, or, andor)", ErrBadMode, s)
}

// Query is one analyzed query.
type Query struct {
	ID    string   // caller's identifier, echoed in errors
	Terms []string // already analyzed tokens; duplicates count once unless QTF
	// QTF makes a term that occurs m times in Terms contribute m times its
	// BM25 score (the query-term-frequency weighting of Lucene and Anserini,
	// whose BooleanQuery sums one clause per occurrence). The default counts
	// every distinct term once.
	QTF  bool
	Mode Mode
	K    int // number of results wanted, 1..topk.MaxK
	// Dict, when not nil, is Terms already looked up in an index, by a
	// caller that needed their document frequencies before the search
	// (qp serve's PARA cost, issue 25). A backend over the index Dict.X
	// takes the IDs and frequencies from it instead of looking Terms up a
	// second time (Query.Looked); any other backend ignores it. The answer
	// is the same either way. The caller must not change it until the
	// search returns.
	Dict *TermLookup `json:"-"`
}

// TermLookup is a query's terms looked up in the index X: IDs[i] is the
// dictionary ID of Query.Terms[i] (-1: absent) and DFs[i] its document
// frequency (0 when absent), as index.LookupDictDF gives them.
type TermLookup struct {
	X   *index.Index
	IDs []int
	DFs []uint32
}

// Looked returns the IDs and document frequencies of q's terms in x from
// q.Dict, or ok false when q carries none for x. A Dict for x whose
// lengths do not match q.Terms, or with an ID outside x's dictionary, is a
// caller's bug (panic).
func (q *Query) Looked(x *index.Index) (ids []int, dfs []uint32, ok bool) {
	d := q.Dict
	if d == nil || d.X != x {
		return nil, nil, false
	}
	if len(d.IDs) != len(q.Terms) || len(d.DFs) != len(q.Terms) {
		panic(fmt.Sprintf("BUG: engine.Query.Dict: %d IDs and %d DFs for %d terms", len(d.IDs), len(d.DFs), len(q.Terms)))
	}
	for _, id := range d.IDs {
		if id < -1 || id >= x.NumTerms() {
			panic(fmt.Sprintf("BUG: engine.Query.Dict: term ID %d of a dictionary of %d", id, x.NumTerms()))
		}
	}
	return d.IDs, d.DFs, true
}

// AndAlgorithm names a conjunctive algorithm.
type AndAlgorithm string

// OrStrategy names a disjunctive strategy.
type OrStrategy string

const (
	// AndMerge decodes every list and intersects the arrays by linear
	// merges, shortest first (intersect.Merge).
	AndMerge AndAlgorithm = "merge"
	// AndGalloping decodes every list and intersects the arrays by SvS with
	// galloping search (intersect.SvS).
	AndGalloping AndAlgorithm = "galloping"
	// AndSkip intersects compressed lists with block-skipping cursors (the
	// shortest list drives, the others NextGEQ; Ding et al. WWW'09 §8),
	// decoding only blocks that may match, and skips blocks whose block-max
	// bound cannot beat the k-th score (Ding & Suel SIGIR'11).
	AndSkip AndAlgorithm = "skip"

	// OrTAAT is exhaustive term-at-a-time with a dense float32 accumulator
	// over all N documents plus a list of touched documents (Ding et al.
	// WWW'09 §8, brute-force TAAT), then topk.Select.
	OrTAAT OrStrategy = "taat"
	// OrDAAT is exhaustive document-at-a-time over all lists.
	OrDAAT OrStrategy = "daat"
	// OrMaxScore is MaxScore (Turtle & Flood 1995) with essential and
	// non-essential lists. Like OrBMW it hands queries with short lists to
	// TAAT plans (Options.OrTAATPostings; Stats.OrAlgo says what ran).
	OrMaxScore OrStrategy = "maxscore"
	// OrBMW is BlockMax-WAND (Ding & Suel SIGIR'11) with the block maxima
	// of the skip table.
	OrBMW OrStrategy = "bmw"
)

// Defaults (chosen by BenchmarkSearch on a Zipfian synthetic collection).
const (
	DefaultAnd = AndSkip
	DefaultOr  = OrMaxScore
)

// OrTAATMaxScore is not selectable: Stats.OrAlgo names it when MaxScore or
// BlockMax-WAND ran a query with short and long lists as a TAAT prefix
// followed by MaxScore probes (Options.OrTAATPostings, orTAATMaxScore).
const OrTAATMaxScore OrStrategy = "taat+maxscore"

// AndAlgorithms and OrStrategies list every selectable name.
var (
	AndAlgorithms = []AndAlgorithm{AndMerge, AndGalloping, AndSkip}
	OrStrategies  = []OrStrategy{OrTAAT, OrDAAT, OrMaxScore, OrBMW}
)

// Options select the algorithms; the zero value selects the defaults.
type Options struct {
	AndAlgo AndAlgorithm
	OrAlgo  OrStrategy
	// AndBitmapDensity and OrBitmapDensity are the planner's crossovers
	// (bitmap.go): a query term whose list is stored as a roaring bitmap
	// with density df/N >= the crossover is evaluated with roaring
	// operations (AND: FastAnd filter, whatever AndAlgo says; OR: FastOr
	// candidates, whatever OrAlgo says). 0 selects DefaultAndBitmapDensity /
	// DefaultOrBitmapDensity; a value above 1 (NoBitmaps) never uses
	// bitmaps. Results are identical either way.
	AndBitmapDensity float64
	OrBitmapDensity  float64
	// AndBitmapMaxDensity: AND bitmap lists at least this dense are read
	// through their cursors (0: DefaultAndBitmapMaxDensity; NoBitmaps: no
	// maximum).
	AndBitmapMaxDensity float64
	// OrTAATPostings: an OR query run by MaxScore or BlockMax-WAND whose
	// lists hold at most this many postings in all runs OrTAAT instead
	// (short lists: scoring every posting into a dense accumulator costs
	// less than DAAT's per-candidate work; docs/CPU-ENGINE.md), one whose
	// first lists fit, or of two or more lists none of which fits, runs a
	// TAAT prefix then MaxScore probes (OrTAATMaxScore), and a one-list
	// query too long for it runs MaxScore's one-list loop. 0 selects
	// DefaultOrTAATPostings; a negative value (NoTAAT) never switches. It
	// applies only to collections of at most TAATMaxDocs documents.
	// Results are identical either way; Stats.OrAlgo says what ran.
	OrTAATPostings int
}

// NoTAAT as Options.OrTAATPostings keeps MaxScore and BlockMax-WAND on
// every query.
const NoTAAT = -1

// DefaultOrTAATPostings is the crossover measured on GCIDE and RFC pages
// (docs/CPU-ENGINE.md, step 10); TAATMaxDocs bounds the dense accumulator
// (4 bytes a document, per Engine) that the switch may allocate.
const (
	DefaultOrTAATPostings = 12288
	TAATMaxDocs           = 1 << 22
)

// NoBitmaps as a bitmap density turns the roaring paths off.
const NoBitmaps = 2.0

// Resolve fills in defaults and rejects unknown names.
func (o Options) Resolve() (Options, error) {
	o.AndAlgo = cmp.Or(o.AndAlgo, DefaultAnd)
	o.OrAlgo = cmp.Or(o.OrAlgo, DefaultOr)
	o.AndBitmapDensity = cmp.Or(o.AndBitmapDensity, DefaultAndBitmapDensity)
	o.AndBitmapMaxDensity = cmp.Or(o.AndBitmapMaxDensity, DefaultAndBitmapMaxDensity)
	o.OrBitmapDensity = cmp.Or(o.OrBitmapDensity, DefaultOrBitmapDensity)
	o.OrTAATPostings = cmp.Or(o.OrTAATPostings, DefaultOrTAATPostings)
	if !(o.AndBitmapDensity > 0) || !(o.OrBitmapDensity > 0) {
		return o, fmt.Errorf("%w: bitmap densities %v, %v (want > 0)", ErrBadStrategy, o.AndBitmapDensity, o.OrBitmapDensity)
	}
	if !slices.Contains(AndAlgorithms, o.AndAlgo) {
		return o, fmt.Errorf("%w: AND algorithm %q (known: %v)", ErrBadStrategy, o.AndAlgo, AndAlgorithms)
	}
	if !slices.Contains(OrStrategies, o.OrAlgo) {
		return o, fmt.Errorf("%w: OR strategy %q (known: %v)", ErrBadStrategy, o.OrAlgo, OrStrategies)
	}
	return o, nil
}

// Stats describe the work of one Search.
type Stats struct {
	AndAlgo AndAlgorithm // the AND algorithm that ran, "" if none
	OrAlgo  OrStrategy   // the OR strategy that ran, "" if none
	// AndBitmaps and OrBitmaps count the query terms whose roaring bitmaps
	// the AND and OR phases used (0: the algorithm named above ran alone).
	AndBitmaps, OrBitmaps int
	Terms                 int // distinct query terms present in the index
	// BlocksDecoded counts docID blocks decoded (each block's frequencies
	// are decoded at most once more, on demand); PostingsDecoded the
	// postings in those blocks.
	BlocksDecoded   int64
	PostingsDecoded int64
	// Candidates counts documents whose full score was computed (for TAAT:
	// documents accumulated).
	Candidates int64
	Time       time.Duration
}

// qterm is one distinct query term found in the index.
type qterm struct {
	id   int
	df   uint32
	list index.List
	idf  float32
	w    float32 // query weight: 1, or the term's count in the query with QTF
	max  float32 // list upper bound: w × List.MaxScore
}

// Engine evaluates queries over one index. An Engine holds per-query scratch
// (cursors, heap, a dense accumulator of N floats once TAAT has run, decode
// buffers) and is NOT safe for concurrent use: use one Engine per goroutine
// (CPU.SearchBatch keeps one per worker). Once warmed up by queries of
// similar size, Search does not allocate. The index must not be modified
// (Index.SetParams) while an Engine searches it.
type Engine struct {
	x *index.Index

	// Per query.
	n       uint32
	norms   []float32
	k1p1    float32
	terms   []qterm // canonical order
	canon   []Term  // CanonicalTerms scratch
	tids    []int   // the canonical terms' IDs (Index.TouchLists)
	unknown bool    // a query term is absent from the index (AND is empty)
	st      Stats

	heap    topk.Heap
	res     []topk.Result
	curs    []cursor
	contrib []float32 // per canonical position, zero between documents
	ord     []int     // cursor order (MaxScore, BMW)
	ub      []float64 // MaxScore prefix bounds
	bub     []float64 // MaxScore prefix block-max bounds of the non-essential lists
	ess     []msTerm  // MaxScore's essential lists
	// TAAT.
	acc     []float32
	touched []uint32
	bits    []uint64      // orTAATMaxScore's touched documents, as a bitset
	sorted  []uint32      // and flattened, ascending (flattenBits)
	sel     []topk.Result // orTAATMaxScore's prefix top k
	selv    []float32     // selectFilter's heap of the k largest prefix sums
	rem     []float64     // orTAATMaxScore's suffix sums of list maxima
	brem    []float64     // and of block maxima at a document (blockRem)
	sblk    []int         // blockRem's blocks
	dbuf    []uint32
	fbuf    []uint32
	xbuf    []float32 // taatList: a block's norms, then its contributions (score.Terms)
	// Decoded lists (merge, galloping).
	docs, freqs [][]uint32
	lists       [][]uint32
	pos         []int
	cand        []uint32
	// Bitmap paths.
	bidx []int
	bms  []*roaring.Bitmap
	isBm []bool
	fit  roaring.IntIterator
	// andBitmap's block-max bound, valid for docIDs <= pruneEnd.
	pruneBound float64
	pruneEnd   int64
	infl       float64
	// epoch (with its monotonic reading) times SearchInto by two
	// time.Since calls, one monotonic clock read each, where time.Now
	// reads the wall clock too.
	epoch time.Time
}

// New returns an Engine over x.
func New(x *index.Index) *Engine { return &Engine{x: x, epoch: time.Now()} }

// Index is the index e searches.
func (e *Engine) Index() *index.Index { return e.x }

// Search evaluates q and returns its top K results in rank order. The
// returned slice is owned by e and valid until the next call on e; use
// SearchInto to keep results. Invalid queries and options return errors
// wrapping ErrEmptyQuery, ErrTooManyTerms, ErrBadK, ErrBadMode or
// ErrBadStrategy. A block that fails to decode, or decodes to docIDs that
// do not increase or reach N, or to a zero frequency, returns an error
// wrapping index.ErrCorrupt, never a panic or a partial result. (Damage
// that decodes to plausible postings cannot be told from data; the section
// checksums verified by index.Open are the defence against it.)
func (e *Engine) Search(q Query, opt Options) ([]topk.Result, Stats, error) {
	var st Stats
	var err error
	e.res, st, err = e.SearchInto(e.res, q, opt)
	return e.res, st, err
}

// SearchInto is Search writing the results to dst[:0] (grown only when its
// capacity is below the number of results).
func (e *Engine) SearchInto(dst []topk.Result, q Query, opt Options) ([]topk.Result, Stats, error) {
	start := time.Since(e.epoch)
	e.st = Stats{}
	dst, err := e.search(dst[:0], q, opt)
	e.st.Time = time.Since(e.epoch) - start
	if err != nil {
		dst = dst[:0]
	}
	return dst, e.st, err
}

func (e *Engine) search(dst []topk.Result, q Query, opt Options) ([]topk.Result, error) {
	opt, err := opt.Resolve()
	if err != nil {
		return dst, fmt.Errorf("engine: query %q: %w", q.ID, err)
	}
	if err := e.prepare(q); err != nil {
		return dst, err
	}
	if q.Mode != Or {
		e.st.AndAlgo = opt.AndAlgo
		if err := e.runAnd(opt.AndAlgo, opt.AndBitmapDensity, opt.AndBitmapMaxDensity); err != nil {
			return dst, e.wrap(q, err)
		}
		if q.Mode == And || e.heap.Len() >= q.K {
			return e.heap.Results(dst), nil
		}
	}
	e.st.OrAlgo = opt.OrAlgo
	if dst, err = e.runOr(dst, q.K, opt); err != nil {
		return dst, e.wrap(q, err)
	}
	return dst, nil
}

func (e *Engine) wrap(q Query, err error) error {
	return fmt.Errorf("engine: query %q: %w", q.ID, err)
}

// prepare validates q and fills e.terms with its distinct known terms in
// canonical order.
func (e *Engine) prepare(q Query) error {
	if err := Validate(q, "engine"); err != nil {
		return err
	}
	x := e.x
	e.n = uint32(x.NumDocs())
	e.norms = x.Norms()
	e.k1p1 = x.Params().K1p1()
	var unknown bool
	if ids, dfs, ok := q.Looked(x); ok { // looked up by the caller (qp serve)
		e.canon, unknown = CanonicalTermsIDs(e.canon, x, q, ids, dfs)
	} else {
		e.canon, unknown = CanonicalTerms(e.canon, x, q)
	}
	// Set field by field, not appended: a qterm literal (its List some
	// 240 bytes) is zeroed aside and copied (step 49). The other fields
	// are set below, or not read (an And query with an unknown term).
	n := len(e.canon)
	if cap(e.terms) < n {
		e.terms = make([]qterm, n, max(n, 2*cap(e.terms)))
	}
	e.terms, e.tids = e.terms[:n], e.tids[:0]
	for i, c := range e.canon {
		t := &e.terms[i]
		t.id, t.df, t.w = c.ID, c.DF, c.W
		e.tids = append(e.tids, c.ID)
	}
	e.st.Terms = len(e.terms)
	e.heap.Reset(q.K)
	e.unknown = unknown
	if unknown && q.Mode == And {
		// The intersection is empty (runAnd returns at once): the lists
		// are not read, and their records' misses are not paid.
		return nil
	}
	// The lists are written in place (step 47: a List is some 240 bytes).
	x.TouchLists(e.tids)
	for i := range e.terms {
		t := &e.terms[i]
		if err := x.ListInto(&t.list, t.id); err != nil {
			return e.wrap(q, err)
		}
		t.idf, t.max = t.list.IDF, float32(t.w*t.list.MaxScore)
	}
	if cap(e.contrib) < len(e.terms) {
		e.contrib = make([]float32, len(e.terms))
	}
	e.contrib = e.contrib[:len(e.terms)]
	return nil
}

// inflate is the factor by which float64 sums of float32 maxima are raised
// before they are compared with the k-th score, for a query of m terms. The
// float32 sum of m nonnegative terms exceeds the exact sum by at most a
// relative (m-1)·2^-24 (recursive summation); the float64 sums of the bounds
// err by far less. 1e-5 + m·2^-22 covers both with a wide margin while
// costing no measurable pruning.
func inflate(m int) float64 { return 1 + 1e-5 + float64(m)*(1.0/(1<<22)) }

// term is the BM25 contribution of canonical term i for a posting (d, tf).
// The float32 conversion forbids fusing the final multiply into a following
// add (Go spec, "Floating-point operators"), which would change the bits.
// With QTF the score is multiplied by the term's weight (exact for w = 1).
func (e *Engine) term(i int, tf uint32, d uint32) float32 {
	return e.termNorm(i, tf, e.norms[d])
}

// termNorm is term with the document's norm already read (e.norms[d]).
func (e *Engine) termNorm(i int, tf uint32, norm float32) float32 {
	return float32(e.terms[i].w * score.Term(e.terms[i].idf, e.k1p1, tf, norm))
}

// blockBound is the upper bound of canonical term i's contribution in block
// b of its list.
func (e *Engine) blockBound(i int, l *index.List, b int) float64 {
	return float64(e.terms[i].w) * float64(l.BlockMax(b))
}

// collect sums contrib[lo..hi] in canonical order, zeroing it. Positions
// without a contribution hold +0, and x + 0 == x in float32 for every
// positive x, so the sum is bit-identical to summing only the present terms.
func (e *Engine) collect(lo, hi int) float32 {
	var s float32
	c := e.contrib[lo : hi+1]
	for i, v := range c {
		s += v
		c[i] = 0
	}
	return s
}

// ensureCursors sizes e.curs for the query's terms and resets them on their
// lists in canonical order.
func (e *Engine) ensureCursors() error {
	e.sizeCursors()
	for i := range e.curs {
		if err := e.resetCursor(i); err != nil {
			return err
		}
	}
	return nil
}

// sizeCursors sizes e.curs for the query's terms without positioning them:
// a cursor holds its previous query's state until resetCursor (andSkip
// resets its third and later cursors only when the intersection reaches
// them).
func (e *Engine) sizeCursors() {
	m := len(e.terms)
	if cap(e.curs) < m {
		e.curs = append(e.curs[:cap(e.curs)], make([]cursor, m-cap(e.curs))...)
	}
	e.curs = e.curs[:m]
}

// resetCursor resets the cursor of canonical position i on its list (its
// first block decoded).
func (e *Engine) resetCursor(i int) error {
	_, err := e.resetCursorGEQ(i, 0) // as Cursor.Reset, without copying the List twice
	return err
}

// resetCursorGEQ is resetCursor with the cursor then moved to the first
// posting >= d (index.Cursor.ResetGEQ: the blocks before d's are not
// decoded); it returns that posting's docID.
func (e *Engine) resetCursorGEQ(i int, d uint32) (uint32, error) {
	if l := &e.terms[i].list; !l.IsBitmap() {
		return e.curs[i].ResetGEQ(l, d), nil // no copy of the List (step 47)
	}
	l, err := e.blockList(i)
	if err != nil {
		return 0, err
	}
	return e.curs[i].ResetGEQ(&l, d), nil
}

// blockList is canonical term i's list as blocks. A bitmap list is read
// through its docIDs encoded as blocks (encoded on first use and kept by
// the index, as for the GPU): decoding a block is several times faster than
// iterating the bitmap, and a cursor's NextGEQ then searches decoded
// blocks. The frequencies, skip table and maxima are the same.
func (e *Engine) blockList(i int) (index.List, error) {
	l := e.terms[i].list
	if !l.IsBitmap() {
		return l, nil
	}
	bl, err := e.x.BlockCodedList(l.Term)
	if err != nil {
		return index.List{}, err
	}
	bl.IDF, bl.MaxScore = l.IDF, l.MaxScore
	return bl, nil
}

// finishCursors adds the decode counts of the cursors of canonical
// positions from on to the stats and returns their first decoding error.
func (e *Engine) finishCursors(from int) error {
	return e.finishCursorRange(from, len(e.curs))
}

// finishCursorRange is finishCursors for the cursors of positions [from,
// to) (those a query reset: the others hold an earlier query's counts).
func (e *Engine) finishCursorRange(from, to int) error {
	var first error
	for i := from; i < to; i++ {
		c := &e.curs[i]
		e.st.BlocksDecoded += c.BlocksDecoded()
		e.st.PostingsDecoded += c.PostingsDecoded()
		if err := c.err(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func growU32(s []uint32, n int) []uint32 {
	if cap(s) < n {
		s = make([]uint32, n)
	}
	return s[:n]
}

// checkDocs verifies that decoded docIDs increase strictly, start above
// prev (-1 for none) and stay below n, so that corrupt data surfaces as an
// error instead of an out-of-range norm lookup or a wrong result.
func checkDocs(l *index.List, docs []uint32, prev int64, n uint32) error {
	for _, d := range docs {
		if int64(d) <= prev || d >= n {
			return fmt.Errorf("%w: term %d: docID %d after %d (not increasing, or >= N = %d)", index.ErrCorrupt, l.Term, d, prev, n)
		}
		prev = int64(d)
	}
	return nil
}
