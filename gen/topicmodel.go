package gen

import (
	"fmt"
	"math"
	"strconv"

	"github.com/qpengine/qp/index/analysis"
)

// Topics is the document model behind `qp gen --model topics` (docs/GEN.md):
// documents, not independent lists. Document d is generated from its own
// PRNG stream, seeded from (Seed, d), so any document can be generated alone,
// by any worker, with the same result.
//
//  1. Length L ~ LogNormal(μ, σ²) tokens, capped at MaxLen: a heavy right
//     tail, as web page lengths have.
//  2. Topics: 1 + Poisson(TopicsPerDoc-1) topics drawn by popularity
//     π_k ∝ (k+1)^-τ out of K (under Locality, the first is its site's),
//     mixed with Dirichlet(1, ..., 1) weights, as in LDA (Blei, Ng & Jordan,
//     JMLR 2003), whose per-document topic mixtures this simplifies.
//  3. Tokens by a Pólya urn per document (the Dirichlet-compound-multinomial
//     burstiness of Madsen, Kauchak & Elkan, ICML 2005, with a Pitman–Yor
//     discount so that long documents keep adding words): token i (0-based)
//     is fresh with probability (α + d·F)/(i + α), F the fresh tokens so far,
//     else a copy of a uniformly chosen earlier token, so a word that
//     occurred is likely to recur.
//  4. A fresh token comes from the background (general language) with
//     probability λ, else from one of the document's topics by its weight.
//     The background is Zipf–Mandelbrot over its own ranks (P(r) ∝
//     (r+1+q)^-s; its top ranks are the query log's function words), each
//     topic is Zipf–Mandelbrot over its own words (Zipf 1949, Mandelbrot
//     1953); s is fitted so that the expected vocabulary follows Heaps' law
//     (Heaps 1978). Query-log terms are drawn with explicit weights from the
//     background and from the topics of the queries they occur in (see
//     placeQueries), so that terms that share queries share topics.
//
// Word ids: id < len(QueryTerms) is a query term; then synthetic words,
// j = id - len(QueryTerms) the word's background rank, named "t" + j ("t" +
// j + "_" when a query term is spelled that way). Topics share the
// background's words: word m of topic k is the background rank nfw +
// m·S + h(k, m) (S = TopicSpread, default 16; h a hash in [0, S), nfw the
// function words at the top), so a topic re-weights general words of about
// its rank, as LDA topics do, and many topics add no words of their own;
// the larger S, the fewer topics share a word (--fit fits S).
type Topics struct {
	cfg   TopicsConfig
	p     TopicParams // defaults filled, Alpha and ZipfS fitted
	lenMu float64

	qterms  []string // kept query terms (ids 0..len-1)
	dropped []string // query terms the analyzer would not keep as one token
	nfw     int      // function words at background ranks 0..nfw-1
	fw      []uint32 // their ids
	collide map[uint32]bool

	bg, top   zipf
	pi        []float64
	piAlias   alias
	bgQ       alias
	bgQIDs    []uint32
	bgQMass   float64
	topQ      []alias
	topQIDs   [][]uint32
	topQMass  []float64
	siteStart []uint32 // first position (URL order) of each site
	siteTopic []int32  // main topic of each site
	sitePos   []uint32 // position of each document in URL order (random order with sites)
	siteZ     zipf     // popularity of the slots of a site's vocabulary
	siteLow   int      // site words are background ranks >= nfw + siteLow

	qsets   [][]int32 // topics of each content query term
	qTarget []float64 // target df fraction of each content query term
	qcounts [][]int32 // queries of each content query term in each of its topics

	Fit FitInfo
}

// FitInfo reports how NewTopics calibrated the model.
type FitInfo struct {
	Alpha, ZipfS      float64 // fitted (or given) values
	SampleDistinct    float64 // distinct terms per document in the calibration sample
	SampleFresh       float64 // fresh draws per document in the sample
	ExpectedVocab     float64 // expected distinct terms of the collection
	QueryTerms        int     // query terms placed
	DroppedQueryTerms int     // query terms the analyzer splits (not placed)
	CappedTopics      int     // topics whose query-term mass was capped at 0.5
	CappedQueryTerms  int     // query terms whose target df could not be met by their topics
}

// calibration sample size (documents): enough for ~1% accuracy of the
// fitted means, fast enough to refit a few times (~50 ms each).
const calibDocs = 1500

// NewTopics fits the model (Alpha, ZipfS and the query terms' weights, by
// simulating calibDocs documents: about a second) and returns it.
func NewTopics(cfg TopicsConfig) (*Topics, error) {
	p, err := cfg.Params.withDefaults()
	if err != nil {
		return nil, err
	}
	t := &Topics{cfg: cfg, p: p}
	t.lenMu = math.Log(p.MeanLen) - p.LenSigma*p.LenSigma/2
	if err := t.setQueryTerms(); err != nil {
		return nil, err
	}
	k := p.Topics
	t.pi = make([]float64, k)
	for i := range t.pi {
		t.pi[i] = math.Pow(float64(i+1), -p.TopicZipf)
	}
	var z float64
	for _, x := range t.pi {
		z += x
	}
	for i := range t.pi {
		t.pi[i] /= z
	}
	t.piAlias = newAlias(t.pi)
	if p.SiteShare > 0 {
		t.siteZ = newZipf(p.SiteVocab, siteSlotZipf, siteSlotQ)
	}
	t.topQ = make([]alias, k)
	t.topQIDs = make([][]uint32, k)
	t.topQMass = make([]float64, k)
	// Synthetic ranges: far beyond the vocabulary that can be observed.
	rb := min(max(8*p.Vocab, 1024), 1<<30-len(t.qterms))
	rt := max((rb-len(t.fw))/p.TopicSpread, 64)
	rb = max(rb, len(t.fw)+rt*p.TopicSpread)
	s := p.ZipfS
	if s == 0 {
		s = 1.2
	}
	alpha := p.Alpha
	if alpha == 0 {
		alpha = 100
	}
	// Fit s (vocabulary) and α (distinct terms per document) in turn; α
	// last, so that the final sample meets PostingsPerDoc.
	for iter := range 3 {
		t.p.ZipfS, t.p.Alpha = s, alpha
		t.bg = newZipf(rb, s, p.ZipfQ)
		t.top = newZipf(rt, s, p.ZipfQ)
		t.placeQueries(t.simulate())
		if p.Alpha == 0 {
			alpha = t.fitAlpha()
			t.p.Alpha = alpha
		}
		if p.ZipfS == 0 && iter < 2 {
			s = t.fitS(t.simulate().fresh, rb, rt)
		}
		if p.ZipfS != 0 && p.Alpha != 0 {
			break
		}
	}
	// The query weights are a function of the final (s, α) alone, so that
	// saved parameters regenerate the same collection.
	t.placeQueries(t.simulate())
	smp := t.simulate()
	t.Fit.Alpha, t.Fit.ZipfS = alpha, s
	t.Fit.SampleDistinct, t.Fit.SampleFresh = smp.distinct, smp.fresh
	t.Fit.ExpectedVocab = t.expectedVocab(smp.fresh, rb, rt)
	t.Fit.QueryTerms, t.Fit.DroppedQueryTerms = len(t.qterms), len(t.dropped)
	if cfg.Locality {
		t.siteLow = (rb - t.nfw) / 8
	}
	if cfg.Locality || p.SiteShare > 0 {
		t.makeSites()
	}
	return t, nil
}

// Params returns the parameters with defaults filled and Alpha, ZipfS
// fitted: saved, they regenerate the same collection.
func (t *Topics) Params() TopicParams { return t.p }

// Docs returns N.
func (t *Topics) Docs() int { return t.p.Docs }

// QueryTerms returns the query terms placed in the vocabulary and those
// dropped because the analyzer (no stemming, no stop words) does not keep
// them as one token.
func (t *Topics) QueryTerms() (placed, dropped []string) { return t.qterms, t.dropped }

// setQueryTerms keeps the query terms that the default analyzer maps to
// themselves (so that `qp index` on --text gives the same terms) and
// places the function words on the top background ranks.
func (t *Topics) setQueryTerms() error {
	if t.cfg.Log == nil {
		return nil
	}
	an, err := analysis.New(analysis.Options{})
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	fw := map[string]bool{}
	for _, w := range FunctionWords {
		fw[w] = true
	}
	var toks []string
	for _, q := range t.cfg.Log.Terms {
		if q == "" || seen[q] {
			return fmt.Errorf("gen: query term %q empty or given twice", q)
		}
		seen[q] = true
		toks = an.AppendTokensString(toks[:0], q)
		if len(toks) != 1 || toks[0] != q || !plainWord(q) {
			t.dropped = append(t.dropped, q)
			continue
		}
		id := uint32(len(t.qterms))
		t.qterms = append(t.qterms, q)
		if fw[q] {
			t.fw = append(t.fw, id)
		}
	}
	t.nfw = len(t.fw)
	t.collide = map[uint32]bool{}
	for _, q := range t.qterms {
		if len(q) > 1 && q[0] == 't' && q[1] != '0' || q == "t0" {
			if j, err := strconv.ParseUint(q[1:], 10, 32); err == nil {
				t.collide[uint32(j)] = true
			}
		}
	}
	return nil
}

// plainWord reports whether w can be written into JSON without escaping
// (Tokenize's output: letters and digits only).
func plainWord(w string) bool {
	for _, r := range w {
		if r < ' ' || r == '"' || r == '\\' || r == 0xFFFD {
			return false
		}
	}
	return true
}

// appendName appends the name of word id.
func (t *Topics) appendName(b []byte, id uint32) []byte {
	if int(id) < len(t.qterms) {
		return append(b, t.qterms[id]...)
	}
	j := id - uint32(len(t.qterms))
	b = append(b, 't')
	b = strconv.AppendUint(b, uint64(j), 10)
	if t.collide[j] {
		b = append(b, '_')
	}
	return b
}

// Name returns the name of word id.
func (t *Topics) Name(id uint32) string { return string(t.appendName(nil, id)) }
