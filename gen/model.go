// Package gen is the synthetic collection model behind `qp gen`: it
// generates posting lists directly, term by term, without text, so that a
// collection of GOV2's size (24.6M documents) is reachable on one machine
// with memory O(N), not O(postings).
//
// # Calibration
//
// GOV2 (TREC Terabyte track) as indexed in the query-processing literature
// (e.g. Ding & Suel, SIGIR 2011): 24.6M documents, 35.6M distinct terms,
// 5.74G postings, i.e. 233.3 distinct terms per document, and most postings
// in lists longer than 4096.
//
// # Document frequencies
//
// Zipf's law over the term rank r = 1..V (Zipf 1949), with Mandelbrot's
// flattening of the head (Mandelbrot 1953; Baeza-Yates & Ribeiro-Neto,
// Modern Information Retrieval, §6.5):
//
//	df(r) = max(1, min(N, floor(C / (r+q)^s))),   C = (V+q)^s,
//
// so the rarest term has df 1 and a long tail of terms has df 1 (hapax
// legomena: 41% of the terms at GOV2's size). s and q are fitted so that
// Σ_r df(r) = P (the calibrated postings) and df(1) = TopDF·N (0.9·N: the
// commonest word, "the", is on nearly every English page). At GOV2's N, V
// and P: s ≈ 1.30, q ≈ 78, 88% of the postings in lists longer than 4096.
// The plain law the brief started from, df = min(N, C/r^s) with only s
// fitted (s ≈ 1.26 at GOV2's size), is Config.PureZipf; it gives ~49 terms
// df = N, i.e. 49 words that every document contains, so it is not the
// default. When even plain Zipf with df(1) = TopDF·N holds more than P
// postings (small collections: s < 1), q = 0 and s is fitted to P alone;
// when no head flattening can hold P (a vocabulary forced far below Heaps'
// law), the plain capped law is used.
//
// Scaling to N documents keeps postings per document at GOV2's 233.3
// (P = 233.3·N, Config.PostingsPerDoc) and scales the vocabulary by Heaps'
// law anchored at GOV2 (Heaps 1978): V(N) = 35.6M·(N/24.6M)^β, β = 0.55
// (Config.HeapsBeta), and s, q are refitted at that N.
//
// # Postings and frequencies
//
// Each term's documents are a uniform random sample of df(r) distinct
// documents of [0, N), independent across terms (see sample). Frequencies
// are 1 + Geometric with mean excess m(df) = a + b·ln(1+df)/ln(1+N), which
// grows mildly with df: a = 0.3 (rare terms average tf 1.3), and b is set
// so that the postings-weighted mean tf is Config.MeanTF (default 2.96 =
// GOV2's 17.35G tokens / 25.17M documents, Anserini's index statistics, /
// 233 postings per document), giving the commonest terms mean tf ≈ 3.4.
//
// Because documents are sampled uniformly and independently, document
// lengths concentrate around their mean (233 distinct terms ± ~15), unlike
// real documents, and terms co-occur only by chance. The model serves
// list-length and list-overlap statistics, not ranking quality.
//
// # Vocabulary
//
// The terms of real query logs (LoadQueryTerms: the TREC 2005/2006
// efficiency topics) are placed on ranks by their frequency in the logs so
// that real queries hit lists of plausible lengths (see queryRanks: function
// words on top, content words at df ≈ 2.5·N/j for the j-th most frequent);
// every other rank is named "t" + the rank, zero-padded to a fixed width.
//
// # Determinism
//
// A term's list is a pure function of (Config, rank): each term has its own
// PRNG seeded from (Seed, rank), so lists can be regenerated in any order,
// by any number of workers, with identical results (on one architecture:
// the model evaluates math.Pow and math.Log, whose last bits the Go compiler
// may compute differently where it fuses multiply-adds, e.g. arm64).
package gen

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
)

// GOV2 statistics the model is calibrated to (Ding & Suel 2011 and others).
const (
	GOV2Docs     = 24_600_000
	GOV2Terms    = 35_600_000
	GOV2Postings = 5_740_000_000
)

// Defaults of Config's zero fields.
const (
	DefaultPostingsPerDoc = float64(GOV2Postings) / GOV2Docs // 233.3
	DefaultHeapsBeta      = 0.55
	DefaultTopDF          = 0.9
	DefaultMeanTF         = 2.96
	DefaultQueryScale     = 2.5
	DefaultQueryGamma     = 1.0
	// LongList is the list length above which lists are called long in the
	// calibration target ("lists longer than 4096 postings hold most
	// postings").
	LongList = 4096
	// rareExcessTF is a in m(df) = a + b·ln(1+df)/ln(1+N).
	rareExcessTF = 0.3
	// maxTF caps frequencies (the geometric tail is unbounded).
	maxTF = 1 << 20
)

// Config describes a synthetic collection. Zero fields take the defaults
// above.
type Config struct {
	// Docs is N, the number of documents, 1 <= N <= 2^32-2.
	Docs int
	// Seed selects the random collection; lists depend on (Seed, rank).
	Seed int64
	// Vocab is V, the number of distinct terms; 0 = Heaps' law from Docs
	// (and at least len(QueryTerms)).
	Vocab int
	// PostingsPerDoc is P/N; 0 = GOV2's 233.3.
	PostingsPerDoc float64
	// HeapsBeta is β of V(N) = 35.6M·(N/24.6M)^β; 0 = 0.55.
	HeapsBeta float64
	// TopDF is the most frequent term's df as a fraction of Docs; 0 = 0.9.
	// The head of the Zipf law is flattened (Mandelbrot's q) to meet it.
	TopDF float64
	// PureZipf selects plain Zipf capped at N, df = min(N, C/r^s), instead
	// (TopDF is then ignored; at GOV2's size ~49 terms have df = N).
	PureZipf bool
	// MeanTF is the postings-weighted mean term frequency; 0 = 2.96. Must
	// be >= 1.
	MeanTF float64
	// QueryTerms are real query terms in priority order, most frequent
	// first (as returned by LoadQueryTerms). They are all placed in the
	// vocabulary; duplicates are an error.
	QueryTerms []string
	// QueryScale and QueryGamma place the content query terms: the j-th
	// gets df ≈ QueryScale·N·j^-QueryGamma (see queryRanks); 0 =
	// DefaultQueryScale, DefaultQueryGamma.
	QueryScale, QueryGamma float64
	// Workers is the number of goroutines of DocLengths and Each; 0 =
	// runtime.NumCPU(). Results do not depend on it.
	Workers int
}

// Stats are a generated collection's totals, computed from the model (no
// postings are generated): exact for df-derived counts, expectations for
// tf.
type Stats struct {
	Docs     int
	Terms    int     // V
	Postings int64   // Σ df
	PerDoc   float64 // Postings / Docs
	S, C, Q  float64 // Zipf–Mandelbrot law: df(r) = floor(C / (r+Q)^S)
	DF1Terms int     // terms with df = 1
	FullDF   int     // terms with df = N
	// Long lists: df > LongList, and df > LongList·N/GOV2Docs (the same
	// threshold scaled with the collection).
	LongTerms, ScaledLongTerms       int
	LongPostings, ScaledLongPostings int64
	LongFraction, ScaledLongFraction float64 // of Postings
	MeanTF                           float64 // expected postings-weighted mean tf
	Tokens                           float64 // expected Σ tf
	QueryTerms                       int
	QueryMaxRank                     int // the largest rank of a query term
}

// model is the fitted df law: df(i) for 0-based rank i, r = i+1:
//
//	df = max(1, min(N, floor(C / (r+q)^s))),   C = (V+q)^s,
//
// evaluated as exp(s·ln(1 + (V-r)/(r+q))), which stays finite for any q.
type model struct {
	n, v int
	s, q float64
	lvq  float64 // ln(V+q) = ln(C)/s
}

// f is the continuous law at 1-based rank r.
func (m *model) f(r float64) float64 {
	return math.Exp(m.s * math.Log1p((float64(m.v)-r)/(r+m.q)))
}

// df returns the document frequency of 0-based rank i.
func (m *model) df(i int) int {
	x := m.f(float64(i + 1))
	if x >= float64(m.n) {
		return m.n
	}
	if x < 1 {
		return 1
	}
	return int(x)
}

// rankAbove returns the continuous 1-based rank r with f(r) = x: f(r) >= x
// iff r <= rankAbove(x).
func (m *model) rankAbove(x float64) float64 {
	if m.s == 0 {
		return float64(m.v)
	}
	return math.Exp(m.lvq-math.Log(x)/m.s) - m.q
}

// rankOf returns the 0-based rank whose df is about x (the inverse law),
// clamped to [0, V).
func (m *model) rankOf(x float64) int {
	if m.s == 0 {
		return 0
	}
	r := m.rankAbove(math.Max(x, 1))
	return min(max(int(math.Round(r))-1, 0), m.v-1)
}

func newModel(n, v int, s, q float64) model {
	return model{n: n, v: v, s: s, q: q, lvq: math.Log(float64(v) + q)}
}

// C returns the law's constant (V+q)^s (+Inf if it overflows).
func (m *model) C() float64 { return math.Exp(m.s * m.lvq) }

// sumOver is Σ_{r=1..V} fn(df(r)), with the head (ranks whose df differs
// from the next one's by >= 1) summed explicitly and the tail grouped by
// value: #{tail r: df(r) >= d} = #{r <= (C/d)^(1/s) - q} - head. Its cost is
// O(head + df(head)), about 40k evaluations at GOV2's size, instead of
// O(V); at group boundaries math.Pow may move a rank by one, so it serves
// to fit the model, and Stats recounts rank by rank.
func (m *model) sumOver(fn func(df int) float64) float64 {
	// Head: |f'(r)| = s·f(r)/(r+q) >= 1, i.e. ln(r+q) <= (ln s + s·ln(V+q))/(s+1).
	hr := math.Exp((math.Log(m.s)+m.s*m.lvq)/(m.s+1)) - m.q
	head := int(math.Min(math.Max(hr, 1), float64(m.v)))
	var sum float64
	for i := range head {
		sum += fn(m.df(i))
	}
	if head == m.v {
		return sum
	}
	top := m.df(head) // the largest df of the tail
	atLeast := func(d int) int {
		switch {
		case d <= 1:
			return m.v - head
		case d > top:
			return 0
		}
		r := math.Min(m.rankAbove(float64(d)), float64(m.v))
		return max(int(r)-head, 0)
	}
	next := atLeast(1)
	for d := 1; d <= top; d++ {
		cur := next
		next = atLeast(d + 1)
		if cur > next {
			sum += float64(cur-next) * fn(d)
		}
	}
	return sum
}

func (m *model) sum() float64 { return m.sumOver(func(df int) float64 { return float64(df) }) }

// solve returns x in [lo, hi] where the increasing f crosses 0 (f(lo) < 0
// <= f(hi) assumed), by the Illinois variant of regula falsi (Dowell &
// Jarratt, BIT 1971): ~10 evaluations instead of bisection's ~50. It stops
// when |f(x)| <= tol or after 100 steps.
func solve(f func(float64) float64, lo, hi, tol float64) float64 {
	flo, fhi := f(lo), f(hi)
	side := 0
	x := hi
	for range 100 {
		if fhi-flo <= 0 {
			break
		}
		x = hi - fhi*(hi-lo)/(fhi-flo)
		if !(x > lo && x < hi) {
			x = (lo + hi) / 2
		}
		fx := f(x)
		if math.Abs(fx) <= tol {
			return x
		}
		if fx < 0 {
			lo, flo = x, fx
			if side == -1 {
				fhi /= 2
			}
			side = -1
		} else {
			hi, fhi = x, fx
			if side == 1 {
				flo /= 2
			}
			side = 1
		}
	}
	return x
}

// fit returns the model with Σ df = p for n documents and v terms whose
// most frequent term has df at most topDF (<= n).
//
// Plain Zipf (q = 0) with df(1) = topDF has exponent s0 = ln(topDF)/ln(V).
// If its sum reaches p, fewer postings are wanted than even that law
// holds, and s <= s0 is fitted with q = 0 (the head stays below topDF).
// Otherwise the head is flattened à la Mandelbrot (q > 0) keeping df(1) =
// topDF and df(V) = 1, which fixes s = ln(topDF)/ln((V+q)/(1+q)), and q is
// fitted; the sum grows with q.
//
// With pure, the law is plain Zipf capped at N, df = min(N, C/r^s), s fitted
// to p and topDF ignored.
func fit(n, v int, p, topDF float64, pure bool) (model, error) {
	if p < float64(v) {
		return model{}, fmt.Errorf("%.0f postings cannot cover %d terms (every term has df >= 1)", p, v)
	}
	if p > float64(n)*float64(v) {
		return model{}, fmt.Errorf("%.0f postings exceed %d docs × %d terms", p, n, v)
	}
	if v == 1 {
		return newModel(n, v, 0, 0), nil
	}
	zipf := func(s float64) float64 { m := newModel(n, v, s, 0); return m.sum() - p }
	tol := math.Max(1e-7*p, 0.5)
	if pure {
		// Bracket s upwards from 1 (steep laws cost more to sum).
		lo, hi := 0.0, 1.0
		for zipf(hi) < 0 {
			if hi >= 16 {
				return newModel(n, v, 16, 0), nil // every list (nearly) full
			}
			lo, hi = hi, hi+0.5
		}
		return newModel(n, v, solve(zipf, lo, hi, tol), 0), nil
	}
	if topDF <= 1 {
		return newModel(n, v, 0, 0), nil // every list has df 1 (p ≈ v)
	}
	s0 := math.Log(topDF) / math.Log(float64(v))
	if zipf(s0) >= 0 {
		return newModel(n, v, solve(zipf, 0, s0, tol), 0), nil
	}
	at := func(q float64) model {
		s := math.Log(topDF) / math.Log1p((float64(v)-1)/(1+q))
		return newModel(n, v, s, q)
	}
	// Bracket q by growing it 8-fold from 1 (large q flatten the law so
	// much that summing it costs O(V)), then solve on a log scale. If even
	// q = 100·V cannot hold p postings (few terms for many postings: with
	// df(V) = 1 the law decays at least exponentially), fall back to plain
	// Zipf capped at N, which can hold up to N·V.
	lo, hi := 0.0, 1.0
	for {
		if m := at(hi); m.sum() >= p {
			break
		}
		if hi > 100*float64(v) {
			return fit(n, v, p, topDF, true)
		}
		lo, hi = hi, 8*hi
	}
	lq := solve(func(lq float64) float64 { m := at(math.Expm1(lq)); return m.sum() - p }, math.Log1p(lo), math.Log1p(hi), tol)
	return at(math.Expm1(lq)), nil
}

// heapsVocab is Heaps' law anchored at GOV2.
func heapsVocab(n int, beta float64) int {
	return int(math.Round(GOV2Terms * math.Pow(float64(n)/GOV2Docs, beta)))
}

func (c *Config) withDefaults() (Config, error) {
	cf := *c
	if cf.Docs < 1 || uint64(cf.Docs) > math.MaxUint32-1 {
		return cf, fmt.Errorf("gen: Docs = %d, want 1..%d", cf.Docs, uint64(math.MaxUint32-1))
	}
	cf.PostingsPerDoc = cmp.Or(cf.PostingsPerDoc, DefaultPostingsPerDoc)
	cf.HeapsBeta = cmp.Or(cf.HeapsBeta, DefaultHeapsBeta)
	cf.TopDF = cmp.Or(cf.TopDF, DefaultTopDF)
	cf.MeanTF = cmp.Or(cf.MeanTF, DefaultMeanTF)
	cf.QueryScale = cmp.Or(cf.QueryScale, DefaultQueryScale)
	cf.QueryGamma = cmp.Or(cf.QueryGamma, DefaultQueryGamma)
	if cf.Workers <= 0 {
		cf.Workers = runtime.NumCPU()
	}
	switch {
	case !(cf.PostingsPerDoc > 0):
		return cf, fmt.Errorf("gen: PostingsPerDoc = %v, want > 0", cf.PostingsPerDoc)
	case !(cf.HeapsBeta > 0 && cf.HeapsBeta <= 1):
		return cf, fmt.Errorf("gen: HeapsBeta = %v, want 0 < β <= 1", cf.HeapsBeta)
	case !(cf.TopDF > 0 && cf.TopDF <= 1):
		return cf, fmt.Errorf("gen: TopDF = %v, want 0 < x <= 1", cf.TopDF)
	case !(cf.MeanTF >= 1):
		return cf, fmt.Errorf("gen: MeanTF = %v, want >= 1", cf.MeanTF)
	case !(cf.QueryScale > 0):
		return cf, fmt.Errorf("gen: QueryScale = %v, want > 0", cf.QueryScale)
	case !(cf.QueryGamma > 0 && cf.QueryGamma < 10):
		return cf, fmt.Errorf("gen: QueryGamma = %v, want 0 < γ < 10", cf.QueryGamma)
	case cf.Vocab < 0:
		return cf, fmt.Errorf("gen: Vocab = %d, want >= 0", cf.Vocab)
	}
	if cf.Vocab == 0 {
		cf.Vocab = max(heapsVocab(cf.Docs, cf.HeapsBeta), len(cf.QueryTerms), 1)
	}
	if cf.Vocab < len(cf.QueryTerms) {
		return cf, fmt.Errorf("gen: Vocab = %d cannot hold the %d query terms", cf.Vocab, len(cf.QueryTerms))
	}
	if cf.Vocab > math.MaxInt32 {
		return cf, fmt.Errorf("gen: Vocab = %d, want < 2^31", cf.Vocab)
	}
	return cf, nil
}
