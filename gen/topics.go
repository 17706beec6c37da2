package gen

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
)

// GOV2 as Anserini indexes it (the figures issue 20 calibrates to): 25.2M
// documents, 35.6M terms, 5.74G postings, 17.35G tokens.
const (
	GOV2DocsAnserini = 25_205_179
	GOV2Tokens       = 17_350_000_000
)

// Defaults of TopicParams' zero fields (see docs/GEN.md for why).
const (
	DefaultMeanLen      = float64(GOV2Tokens) / GOV2DocsAnserini   // 688.4 tokens per document
	DefaultPostingsDoc  = float64(GOV2Postings) / GOV2DocsAnserini // 227.7 distinct terms per document
	DefaultLenSigma     = 1.0
	DefaultDiscount     = 0.5
	DefaultZipfQ        = 10
	DefaultTopics       = 8192
	DefaultTopicZipf    = 0.6
	DefaultTopicsPerDoc = 1.5
	DefaultBackground   = 0.5
	DefaultQueryTopical = 0.95
	DefaultSiteDocs     = 50
	DefaultSiteVocab    = 1000
	// MaxTopicSpread bounds TopicParams.TopicSpread.
	MaxTopicSpread = 1 << 20
	// maxTopicQueryMass caps the share of a topic's (or the background's)
	// fresh draws that go to query-log terms.
	maxTopicQueryMass = 0.5
)

// TopicParams are the parameters of the topic model (TopicsConfig); zero
// fields take the defaults (GOV2's statistics scaled to Docs). They are what
// `qp gen --fit` estimates and `--save-params` writes as JSON.
type TopicParams struct {
	// Docs is N, the number of documents (1 <= N <= 2^32-2).
	Docs int `json:"docs"`
	// MeanLen is the mean document length in tokens; 0 = GOV2's 688.4.
	MeanLen float64 `json:"mean_len"`
	// LenSigma is σ of the log-normal length law (ln L ~ Normal(μ, σ²),
	// μ = ln MeanLen - σ²/2); 0 = 1.0.
	LenSigma float64 `json:"len_sigma"`
	// MaxLen caps lengths; 0 = 100·MeanLen.
	MaxLen int `json:"max_len"`
	// PostingsPerDoc is the target of distinct terms per document, met by
	// fitting Alpha; 0 = GOV2's 227.7.
	PostingsPerDoc float64 `json:"postings_per_doc"`
	// Alpha (concentration) and Discount (d) of the Pólya urn of each
	// document (see Topics): token i+1 is a fresh draw with probability
	// (Alpha + d·fresh)/(i + Alpha), else a copy of a uniformly chosen
	// earlier token. Alpha 0 = fitted to PostingsPerDoc; Discount 0 = 0.5.
	Alpha    float64 `json:"alpha"`
	Discount float64 `json:"discount"`
	// Vocab is the target number of distinct terms of the collection, met
	// by fitting ZipfS; 0 = Heaps' law anchored at GOV2 (35.6M terms at
	// 25.2M documents, exponent HeapsBeta, default 0.55).
	Vocab     int     `json:"vocab"`
	HeapsBeta float64 `json:"heaps_beta"`
	// ZipfS and ZipfQ: the background and every topic draw synthetic words
	// by Zipf–Mandelbrot, P(rank r) ∝ (r+1+q)^-s. ZipfS 0 = fitted to
	// Vocab; ZipfQ 0 = 10.
	ZipfS float64 `json:"zipf_s"`
	ZipfQ float64 `json:"zipf_q"`
	// Topics is K; TopicZipf τ gives topic k the popularity ∝ (k+1)^-τ;
	// TopicsPerDoc is the mean number of topics of a document (1 + Poisson);
	// 0 = 8192, 0.6, 1.5.
	Topics       int     `json:"topics"`
	TopicZipf    float64 `json:"topic_zipf"`
	TopicsPerDoc float64 `json:"topics_per_doc"`
	// TopicSpread S sets how specific a topic's words
	// are: word m of topic k is background rank m·S + h(k, m), h a hash in
	// [0, S), so a topic prefers its words S^zipf_s-fold or so over the
	// background's words of that rank, and about K/S topics share each
	// rank; 0 = 16. Larger S: rarer words concentrate in fewer topics, and
	// the terms of one document co-occur more elsewhere (--fit fits it).
	TopicSpread int `json:"topic_spread,omitempty"`
	// Background is λ, the share of fresh draws from the general-language
	// component rather than the document's topics; 0 = 0.5. Use a tiny
	// value such as 1e-9 for "none".
	Background float64 `json:"background"`
	// QueryTopical is φ, the share of a (content) query term's documents
	// that come from its topics rather than the background; 0 = 0.95.
	QueryTopical float64 `json:"query_topical"`
	// QueryScale, QueryGamma: the j-th content query term's target df is
	// min(0.5·N, QueryScale·N·j^-QueryGamma) (as the independent model's
	// queryRanks); 0 = 2.5, 1.0. QueryDF, when set (by --fit), gives target
	// df fractions by term instead, for the terms it holds.
	QueryScale float64            `json:"query_scale"`
	QueryGamma float64            `json:"query_gamma"`
	QueryDF    map[string]float64 `json:"query_df,omitempty"`
	// SiteDocs is the mean number of documents per site under Locality;
	// 0 = 50.
	SiteDocs float64 `json:"site_docs"`
	// SiteShare is the share of a document's fresh draws that are words of
	// its site (gen/topicsites.go); > 0 gives every document a site, in
	// random order as under Locality; 0 = no sites (Locality: the previous
	// model's 20 rare words per site).
	SiteShare float64 `json:"site_share"`
	// SiteVocab is the number of word slots of a site; 0 = 1000.
	SiteVocab int `json:"site_vocab"`
}

// TopicsConfig configures NewTopics.
type TopicsConfig struct {
	Params TopicParams
	Seed   int64
	// Locality orders documents by "site": runs of documents (sites, of
	// geometric size with mean SiteDocs) share their main topic and 20 rare
	// words of their own (5% of fresh draws), as crawl or URL order gives.
	// Off, every document draws its topics independently (a random order).
	Locality bool
	// Log is the query log whose terms the vocabulary must hold (nil: no
	// query terms).
	Log *QueryLog
	// Workers generating documents; 0 = runtime.NumCPU(). Results do not
	// depend on it.
	Workers int
}

func (p *TopicParams) withDefaults() (TopicParams, error) {
	c := *p
	c.MeanLen = cmp.Or(c.MeanLen, DefaultMeanLen)
	c.LenSigma = cmp.Or(c.LenSigma, DefaultLenSigma)
	c.PostingsPerDoc = cmp.Or(c.PostingsPerDoc, DefaultPostingsDoc)
	c.Discount = cmp.Or(c.Discount, DefaultDiscount)
	c.HeapsBeta = cmp.Or(c.HeapsBeta, DefaultHeapsBeta)
	c.ZipfQ = cmp.Or(c.ZipfQ, DefaultZipfQ)
	c.TopicZipf = cmp.Or(c.TopicZipf, DefaultTopicZipf)
	c.TopicsPerDoc = cmp.Or(c.TopicsPerDoc, DefaultTopicsPerDoc)
	c.Background = cmp.Or(c.Background, DefaultBackground)
	c.QueryTopical = cmp.Or(c.QueryTopical, DefaultQueryTopical)
	c.QueryScale = cmp.Or(c.QueryScale, DefaultQueryScale)
	c.QueryGamma = cmp.Or(c.QueryGamma, DefaultQueryGamma)
	c.SiteDocs = cmp.Or(c.SiteDocs, DefaultSiteDocs)
	c.Topics = cmp.Or(c.Topics, DefaultTopics)
	c.SiteVocab = cmp.Or(c.SiteVocab, DefaultSiteVocab)
	c.TopicSpread = cmp.Or(c.TopicSpread, DefaultTopicSpread)
	bad := func(name string, v any, want string) (TopicParams, error) {
		return c, fmt.Errorf("gen: %s = %v, want %s", name, v, want)
	}
	switch {
	case c.Docs < 1 || uint64(c.Docs) > math.MaxUint32-1:
		return bad("docs", c.Docs, fmt.Sprintf("1..%d", uint64(math.MaxUint32-1)))
	case !(c.MeanLen >= 1 && c.MeanLen <= 1e6):
		return bad("mean_len", c.MeanLen, "1..1e6")
	case !(c.LenSigma > 0 && c.LenSigma <= 4):
		return bad("len_sigma", c.LenSigma, "0 < σ <= 4")
	case c.MaxLen < 0 || c.MaxLen > 1<<24:
		return bad("max_len", c.MaxLen, "0..2^24")
	case !(c.PostingsPerDoc >= 1 && c.PostingsPerDoc <= c.MeanLen):
		return bad("postings_per_doc", c.PostingsPerDoc, "1..mean_len")
	case !(c.Alpha >= 0 && c.Alpha <= 1e9):
		return bad("alpha", c.Alpha, "0 (fit) or > 0")
	case !(c.Discount > 0 && c.Discount < 1):
		return bad("discount", c.Discount, "0 < d < 1")
	case c.Vocab < 0:
		return bad("vocab", c.Vocab, ">= 0")
	case !(c.HeapsBeta > 0 && c.HeapsBeta <= 1):
		return bad("heaps_beta", c.HeapsBeta, "0 < β <= 1")
	case !(c.ZipfS >= 0 && c.ZipfS <= 4) || (c.ZipfS > 0 && c.ZipfS < 0.5):
		return bad("zipf_s", c.ZipfS, "0 (fit) or 0.5..4")
	case !(c.ZipfQ > 0 && c.ZipfQ <= 1e6):
		return bad("zipf_q", c.ZipfQ, "0 < q <= 1e6")
	case c.Topics < 1 || c.Topics > 1<<20:
		return bad("topics", c.Topics, "1..2^20")
	case !(c.TopicZipf >= 0 && c.TopicZipf <= 4):
		return bad("topic_zipf", c.TopicZipf, "0..4")
	case c.TopicSpread < 1 || c.TopicSpread > MaxTopicSpread:
		return bad("topic_spread", c.TopicSpread, fmt.Sprintf("1..%d", MaxTopicSpread))
	case !(c.TopicsPerDoc >= 1 && c.TopicsPerDoc <= 8):
		return bad("topics_per_doc", c.TopicsPerDoc, "1..8")
	case !(c.Background > 0 && c.Background < 1):
		return bad("background", c.Background, "0 < λ < 1")
	case !(c.QueryTopical >= 0 && c.QueryTopical < 1):
		return bad("query_topical", c.QueryTopical, "0 <= φ < 1")
	case !(c.QueryScale > 0):
		return bad("query_scale", c.QueryScale, "> 0")
	case !(c.QueryGamma > 0 && c.QueryGamma < 10):
		return bad("query_gamma", c.QueryGamma, "0 < γ < 10")
	case !(c.SiteDocs >= 1):
		return bad("site_docs", c.SiteDocs, ">= 1")
	case !(c.SiteShare >= 0 && c.SiteShare < 1):
		return bad("site_share", c.SiteShare, "0 <= x < 1")
	case c.SiteVocab < 1 || c.SiteVocab > 1<<20:
		return bad("site_vocab", c.SiteVocab, "1..2^20")
	}
	for t, f := range c.QueryDF {
		if !(f > 0 && f <= 1) {
			return bad("query_df["+t+"]", f, "0 < x <= 1")
		}
	}
	if c.MaxLen == 0 {
		c.MaxLen = int(math.Min(100*c.MeanLen, 1<<24))
	}
	if float64(c.MaxLen) < c.MeanLen {
		return bad("max_len", c.MaxLen, ">= mean_len")
	}
	if c.Vocab == 0 {
		c.Vocab = max(1, int(math.Round(GOV2Terms*math.Pow(float64(c.Docs)/GOV2DocsAnserini, c.HeapsBeta))))
	}
	return c, nil
}

// LoadParams reads TopicParams from a JSON file (as --save-params writes
// it), rejecting unknown fields.
func LoadParams(path string) (TopicParams, error) {
	var p TopicParams
	f, err := os.Open(path)
	if err != nil {
		return p, fmt.Errorf("gen: params: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("gen: params %s: %w", path, err)
	}
	if dec.More() {
		return p, fmt.Errorf("gen: params %s: trailing data after the JSON object", path)
	}
	return p, nil
}

// SaveParams writes p as indented JSON to path, refusing to overwrite an
// existing file.
func SaveParams(path string, p TopicParams) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("gen: save params: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("gen: save params: %w", err)
	}
	return f.Close()
}

func defaultWorkers() int { return runtime.NumCPU() }

func (c *TopicsConfig) workers() int {
	if c.Workers > 0 {
		return c.Workers
	}
	return runtime.NumCPU()
}
