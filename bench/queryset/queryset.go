// Package queryset generates benchmark query sets from any index,
// deterministically by seed, in the manner of Lucene's nightly benchmark
// task files (luceneutil's "HighTerm", "MedTerm", "LowTerm" categories):
//
//   - AND and OR queries of 2-5 distinct terms, each term drawn uniformly from
//     one document-frequency bucket (high, medium, low; Buckets), the query's
//     bucket pattern and term count named in its qid, e.g. and-hml-3-000017;
//   - known-item queries: 2-5 distinct terms drawn from one document chosen
//     uniformly at random, so that their conjunction is never empty (it holds
//     at least that document), e.g. known-4-000003.
//
// Every term written survives the index's analyzer: a term is eligible only
// when analyzing it alone yields exactly that term (Eligible), so that `qp
// query` maps the query text back to the indexed terms. With Porter stemming
// most stems are fixed points (analysis of "comput" gives "comput"); the few
// that are not (and stop words, and tokens the tokenizer would split) are
// left out of every pool, and Stats counts them.
//
// The query text is the terms joined by single spaces; Generate verifies that
// the analyzer maps every text back to exactly its terms.
package queryset

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/qpengine/qp/index"
)

// Kind is a family of generated queries.
type Kind string

// The kinds of query Generate writes.
const (
	KindAnd   Kind = "and"   // bucketed terms, meant for conjunctive evaluation
	KindOr    Kind = "or"    // bucketed terms, meant for disjunctive evaluation
	KindKnown Kind = "known" // terms of one random document
)

// Kinds lists every kind in output order.
var Kinds = []Kind{KindAnd, KindOr, KindKnown}

// ParseKinds parses a comma-separated list of kinds ("and,or,known").
func ParseKinds(s string) ([]Kind, error) {
	var out []Kind
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		k := Kind(strings.ToLower(p))
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("queryset: unknown kind %q (and, or, known)", p)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("queryset: no kinds in %q (and, or, known)", s)
	}
	return out, nil
}

// Buckets are document-frequency ranges as fractions of the collection size
// N: a term is high when df/N >= High, medium when Medium <= df/N < High,
// low when Low <= df/N < Medium; every bucket also needs df >= MinDF. The
// defaults (1%, 0.1%, 0.01%, df >= 2) put Lucene's nightly categories on
// a scale-free footing: on GCIDE (126k documents) high is df >= 1,263,
// medium 127-1,262, low 13-126.
type Buckets struct {
	High, Medium, Low float64
	MinDF             uint32
}

// DefaultBuckets are the bucket bounds used when Options.Buckets is zero.
var DefaultBuckets = Buckets{High: 0.01, Medium: 0.001, Low: 0.0001, MinDF: 2}

// Validate rejects bounds that are not 1 >= High > Medium > Low >= 0.
func (b Buckets) Validate() error {
	if !(b.High <= 1 && b.High > b.Medium && b.Medium > b.Low && b.Low >= 0) {
		return fmt.Errorf("queryset: buckets high %g, medium %g, low %g: want 1 >= high > medium > low >= 0", b.High, b.Medium, b.Low)
	}
	return nil
}

// Bucket returns the bucket letter of a term of document frequency df in a
// collection of n documents ('h', 'm', 'l'), or 0 when it is in none.
func (b Buckets) Bucket(df uint32, n int) byte {
	if df < max(b.MinDF, 1) || n <= 0 {
		return 0
	}
	r := float64(df) / float64(n)
	switch {
	case r >= b.High:
		return 'h'
	case r >= b.Medium:
		return 'm'
	case r >= b.Low:
		return 'l'
	}
	return 0
}

// Options configure Generate.
type Options struct {
	Seed uint64
	// N is the number of queries per kind; term counts cycle through
	// MinTerms..MaxTerms, so each count gets an equal share.
	N                  int
	Kinds              []Kind
	MinTerms, MaxTerms int // default 2 and 5
	Buckets            Buckets
}

// Query is one generated query.
type Query struct {
	ID    string
	Kind  Kind
	Terms []string // distinct indexed terms, in drawing order
	// Pattern is the bucket letter of each term, sorted h, m, l ("hml");
	// empty for known-item queries.
	Pattern string
	// Doc is the source document of a known-item query, else -1.
	Doc int
}

// Text is the query text: the terms joined by spaces.
func (q Query) Text() string { return strings.Join(q.Terms, " ") }

// Stats describe the term pools Generate drew from.
type Stats struct {
	Pool       [3]int // eligible terms in the h, m, l buckets
	Ineligible int    // terms with df >= MinDF whose analysis does not give back the term
	Skipped    []string
}

// Analyzer maps text to index terms (analysis.Analyzer.Tokens).
type Analyzer func(text string) []string

// Eligible reports whether analyzing term alone gives exactly term.
func Eligible(an Analyzer, term string) bool {
	toks := an(term)
	return len(toks) == 1 && toks[0] == term
}

// Generate draws the query sets of opt from x. an must be the analyzer the
// index was built with (analysis.New with x.Meta.Stem and x.Meta.Stopwords).
// Queries come kind by kind, in opt.Kinds order, each kind from its own
// random stream (adding a kind leaves the others' queries unchanged). Empty
// buckets are never drawn; when the buckets cannot supply a query's distinct
// terms, or no document has enough eligible terms, Generate fails.
func Generate(x *index.Index, an Analyzer, opt Options) ([]Query, Stats, error) {
	opt, err := opt.resolve()
	if err != nil {
		return nil, Stats{}, err
	}
	var st Stats
	pools := termPools(x, an, opt.Buckets, &st)
	var out []Query
	for _, k := range opt.Kinds {
		// One stream per kind, so that adding a kind leaves the others alone.
		rng := rand.New(rand.NewPCG(opt.Seed, uint64(slices.Index(Kinds, k))+1))
		var qs []Query
		switch k {
		case KindAnd, KindOr:
			qs, err = bucketQueries(x, k, pools, opt, rng, &st)
		case KindKnown:
			qs, err = knownItems(x, an, opt, rng)
		}
		if err != nil {
			return nil, st, err
		}
		for _, q := range qs {
			if got := an(q.Text()); !slices.Equal(got, q.Terms) {
				// Each term analyzes to itself alone; joined by spaces they
				// should too. Fail rather than write a query that would not.
				return nil, st, fmt.Errorf("queryset: query %s %q analyzes to %q, not to its terms", q.ID, q.Text(), got)
			}
		}
		out = append(out, qs...)
	}
	return out, st, nil
}

func (o Options) resolve() (Options, error) {
	if o.MinTerms == 0 {
		o.MinTerms = 2
	}
	if o.MaxTerms == 0 {
		o.MaxTerms = 5
	}
	if o.Buckets == (Buckets{}) {
		o.Buckets = DefaultBuckets
	}
	if len(o.Kinds) == 0 {
		o.Kinds = Kinds
	}
	switch {
	case o.N < 1:
		return o, fmt.Errorf("queryset: %d queries per kind, want >= 1", o.N)
	case o.MinTerms < 1 || o.MaxTerms < o.MinTerms || o.MaxTerms > 64:
		return o, fmt.Errorf("queryset: terms %d..%d, want 1 <= min <= max <= 64", o.MinTerms, o.MaxTerms)
	}
	return o, o.Buckets.Validate()
}

// termPools returns the eligible term IDs of each bucket (h, m, l), in
// ascending term ID order.
func termPools(x *index.Index, an Analyzer, b Buckets, st *Stats) [3][]int {
	var pools [3][]int
	n := x.NumDocs()
	for t := 0; t < x.NumTerms(); t++ {
		c := b.Bucket(x.Record(t).DF, n)
		if c == 0 {
			continue
		}
		term := x.Term(t)
		if !Eligible(an, term) {
			st.Ineligible++
			if len(st.Skipped) < 10 {
				st.Skipped = append(st.Skipped, term)
			}
			continue
		}
		i := strings.IndexByte("hml", c)
		pools[i] = append(pools[i], t)
	}
	for i := range pools {
		st.Pool[i] = len(pools[i])
	}
	return pools
}

// bucketQueries draws opt.N queries of kind k: query i has
// MinTerms + i mod (MaxTerms-MinTerms+1) terms, each term's bucket drawn
// uniformly among the non-empty buckets that still hold an unused term,
// then a term drawn uniformly from that bucket.
func bucketQueries(x *index.Index, k Kind, pools [3][]int, opt Options, rng *rand.Rand, st *Stats) ([]Query, error) {
	span := opt.MaxTerms - opt.MinTerms + 1
	qs := make([]Query, 0, opt.N)
	for i := 0; i < opt.N; i++ {
		m := opt.MinTerms + i%span
		var used [3]map[int]bool
		var ids []int
		var letters []byte
		for len(ids) < m {
			var open []int
			for b := range pools {
				if len(pools[b]) > len(used[b]) {
					open = append(open, b)
				}
			}
			if len(open) == 0 {
				return nil, fmt.Errorf("queryset: %s queries of %d terms need %d distinct eligible terms; the buckets hold %d, %d, %d (see --buckets)",
					k, m, m, st.Pool[0], st.Pool[1], st.Pool[2])
			}
			b := open[rng.IntN(len(open))]
			t := pools[b][rng.IntN(len(pools[b]))]
			if used[b][t] {
				continue
			}
			if used[b] == nil {
				used[b] = map[int]bool{}
			}
			used[b][t] = true
			ids = append(ids, t)
			letters = append(letters, "hml"[b])
		}
		pat := []byte(string(letters))
		slices.SortFunc(pat, func(a, b byte) int { return strings.IndexByte("hml", a) - strings.IndexByte("hml", b) })
		qs = append(qs, Query{
			ID: fmt.Sprintf("%s-%s-%d-%06d", k, pat, m, i), Kind: k,
			Pattern: string(pat), Doc: -1, Terms: termsOf(x, ids),
		})
	}
	return qs, nil
}

func termsOf(x *index.Index, ids []int) []string {
	out := make([]string, len(ids))
	for i, t := range ids {
		out[i] = x.Term(t)
	}
	return out
}
