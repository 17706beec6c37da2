package gen

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/qpengine/qp/eval"
)

// Tokenize lowercases text and splits it on runs of runes that are neither
// letters nor digits. It is the simple tokenizer of LoadQueryTerms (the
// engine's analyzer lives elsewhere; the TREC efficiency logs are plain
// lowercase words, so the two agree on them up to stemming and stopping).
func Tokenize(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// LoadQueryTerms reads query logs with lines "qid:query" (or "qid<TAB>query";
// see eval.ReadQueries), e.g. queries/05.efficiency_topics.txt and
// 06.efficiency_topics.txt, tokenizes every query with Tokenize, and returns
// the distinct terms ordered by their total number of occurrences in all the
// logs, most frequent first. Ties are broken by a fixed hash of the term
// (FNV-1a), not alphabetically, so that equally frequent terms are spread
// over ranks without an alphabetical bias; the result is deterministic.
func LoadQueryTerms(paths ...string) ([]string, error) {
	ql, err := LoadQueryLog(paths...)
	if err != nil {
		return nil, err
	}
	return ql.Terms, nil
}

// QueryLog is a tokenized query log: its distinct terms in LoadQueryTerms'
// priority order and every query as indexes into Terms (in log order,
// repeated queries repeated; queries without terms dropped).
type QueryLog struct {
	Terms   []string
	Queries [][]int32
}

// LoadQueryLog reads query logs as LoadQueryTerms does and keeps the
// queries too (the topic model places terms that occur together in queries
// in shared topics).
func LoadQueryLog(paths ...string) (*QueryLog, error) {
	count := map[string]int{}
	var toks [][]string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("gen: query terms: %w", err)
		}
		qs, err := eval.ReadQueries(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("gen: query terms from %s: %w", p, err)
		}
		for _, q := range qs {
			ts := Tokenize(q.Text)
			if len(ts) > 0 {
				toks = append(toks, ts)
			}
			for _, t := range ts {
				count[t]++
			}
		}
	}
	type tc struct {
		t string
		n int
		h uint64
	}
	terms := make([]tc, 0, len(count))
	for t, n := range count {
		h := fnv.New64a()
		h.Write([]byte(t))
		terms = append(terms, tc{t, n, h.Sum64()})
	}
	slices.SortFunc(terms, func(a, b tc) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		if c := cmp.Compare(a.h, b.h); c != 0 {
			return c
		}
		return strings.Compare(a.t, b.t)
	})
	ql := &QueryLog{Terms: make([]string, len(terms)), Queries: make([][]int32, len(toks))}
	id := make(map[string]int32, len(terms))
	for i, t := range terms {
		ql.Terms[i] = t.t
		id[t.t] = int32(i)
	}
	for i, ts := range toks {
		q := make([]int32, len(ts))
		for j, t := range ts {
			q[j] = id[t]
		}
		ql.Queries[i] = q
	}
	return ql, nil
}

// FunctionWords are Lucene's English stop words (EnglishAnalyzer's default
// set, also Anserini's), used by queryRanks to recognise the query terms
// that are the most frequent words of any English collection.
var FunctionWords = []string{"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with"}

// queryRanks places the query terms (in priority order) on 0-based Zipf
// ranks, strictly increasing in priority order:
//
//   - the function words (FunctionWords) among them take the top ranks 0, 1,
//     2, ... in their priority order (in GOV2 as in any English text the
//     commonest words are "the", "of", "and", ...);
//   - the j-th other (content) query term, j = 1, 2, ..., gets the rank whose
//     df is closest to min(df(0), scale·N·j^-γ) (or the next free rank):
//     df falls as a power of the query-frequency rank, independently of N.
//
// The defaults, df ≈ 2.5·N/j, are fitted to the one published figure at
// hand: Ding, He & Suel (WWW 2009, §6; shared/papers) report about 3.74M
// postings per query over the terms of random TREC efficiency-log queries
// on GOV2's 25.2M pages, i.e. Σ_t df(t) ≈ 0.148·N per query, which is only
// plausible without stop words. With the TREC 2006 log the defaults give
// 0.148·N at GOV2's size, 0.142·N at 1M documents and 0.130·N at 100k
// (TestQueryCalibration); the commonest content terms ("state", "county")
// get df ≈ 0.5·N (they follow the 33 function words, so the head of the law
// caps them), the 1000th ≈ 0.25%, the rarest ≈ 4e-5·N (about 1000
// documents at GOV2's size). A heuristic consistent with that figure, not a
// measured term-by-term mapping.
func queryRanks(terms []string, m *model, scale, gamma float64) []int32 {
	fw := make(map[string]bool, len(FunctionWords))
	for _, w := range FunctionWords {
		fw[w] = true
	}
	q := len(terms)
	ranks := make([]int32, q)
	next := 0 // next free rank for a function word
	for i, t := range terms {
		if fw[t] {
			ranks[i] = int32(next)
			next++
		}
	}
	top := float64(m.df(0))
	prev, j := next-1, 0
	for i, t := range terms {
		if fw[t] {
			continue
		}
		j++
		df := math.Min(top, scale*float64(m.n)*math.Pow(float64(j), -gamma))
		r := max(m.rankOf(df), prev+1)
		r = min(r, m.v-1-(q-i-1)) // leave room for the rest
		ranks[i] = int32(r)
		prev = r
	}
	return ranks
}

// vocab names the ranks.
type vocab struct {
	v       int
	width   int      // digits of synthetic names
	qranks  []int32  // ranks of the query terms, ascending
	qterms  []string // qterms[i] is at rank qranks[i]
	collide map[int32]bool
}

// newVocab takes the query terms and their ranks (distinct).
func newVocab(v int, terms []string, ranks []int32) (*vocab, error) {
	w := len(strconv.Itoa(max(v-1, 0)))
	vc := &vocab{v: v, width: w, collide: map[int32]bool{}}
	idx := make([]int, len(terms))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(ranks[a], ranks[b]) })
	seen := make(map[string]bool, len(terms))
	for k, i := range idx {
		t := terms[i]
		if t == "" {
			return nil, fmt.Errorf("gen: empty query term")
		}
		if seen[t] {
			return nil, fmt.Errorf("gen: query term %q given twice", t)
		}
		seen[t] = true
		if k > 0 && ranks[i] == vc.qranks[k-1] {
			panic(fmt.Sprintf("BUG: query terms %q and %q share rank %d", t, vc.qterms[k-1], ranks[i]))
		}
		vc.qranks = append(vc.qranks, ranks[i])
		vc.qterms = append(vc.qterms, t)
	}
	// A query term spelled like a synthetic name pushes that synthetic term
	// to name+"_" ('_' never occurs in a query term: Tokenize splits on it;
	// names stay distinct and in the same order).
	for _, t := range vc.qterms {
		if len(t) == w+1 && t[0] == 't' {
			if n, err := strconv.Atoi(t[1:]); err == nil && n >= 0 && n < v && vc.queryIndex(n) < 0 {
				vc.collide[int32(n)] = true
			}
		}
	}
	return vc, nil
}

// queryIndex returns the index of rank among the query terms, or -1.
func (vc *vocab) queryIndex(rank int) int {
	if i, ok := slices.BinarySearch(vc.qranks, int32(rank)); ok {
		return i
	}
	return -1
}

// appendSynthetic appends the synthetic name of rank: "t" + rank padded
// with zeros to the width of V-1 (so byte order = rank order), + "_" if a
// query term is spelled that way.
func (vc *vocab) appendSynthetic(b []byte, rank int) []byte {
	b = append(b, 't')
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(rank), 10)
	for range vc.width - len(d) {
		b = append(b, '0')
	}
	b = append(b, d...)
	if vc.collide[int32(rank)] {
		b = append(b, '_')
	}
	return b
}

func (vc *vocab) name(rank int) string {
	if i := vc.queryIndex(rank); i >= 0 {
		return vc.qterms[i]
	}
	var buf [32]byte
	return string(vc.appendSynthetic(buf[:0], rank))
}

// sortedRanks returns all ranks ordered by their terms' byte order.
func (vc *vocab) sortedRanks() []int32 {
	type qt struct {
		t    string
		rank int32
	}
	qs := make([]qt, len(vc.qterms))
	for i, t := range vc.qterms {
		qs[i] = qt{t, vc.qranks[i]}
	}
	slices.SortFunc(qs, func(a, b qt) int { return strings.Compare(a.t, b.t) })

	out := make([]int32, 0, vc.v)
	var buf []byte
	qi, next := 0, 0 // next: index into vc.qranks (ascending)
	for r := 0; r < vc.v; r++ {
		if next < len(vc.qranks) && int(vc.qranks[next]) == r {
			next++
			continue
		}
		buf = vc.appendSynthetic(buf[:0], r)
		for qi < len(qs) && qs[qi].t < string(buf) {
			out = append(out, qs[qi].rank)
			qi++
		}
		out = append(out, int32(r))
	}
	for ; qi < len(qs); qi++ {
		out = append(out, qs[qi].rank)
	}
	return out
}
