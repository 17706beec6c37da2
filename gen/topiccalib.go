package gen

import (
	"math"
	"slices"
)

// calibSample is what a simulated calibration sample tells: the means, and the
// tables G(x) = P(a document holds a word drawn with probability x per
// fresh draw) for a topic slot and for the background.
type calibSample struct {
	distinct, fresh float64
	gTop, gBg       gTable
}

// gTable tabulates G(x) = mean over observations of 1 - (1-x)^n on a
// log grid of x, for inversion.
type gTable struct {
	lx, g []float64 // ln x ascending, G ascending
}

const gGrid = 600

func newGTable(counts map[int]int, total int) gTable {
	var t gTable
	lo, hi := math.Log(1e-13), 0.0
	for i := range gGrid {
		lx := lo + (hi-lo)*float64(i)/(gGrid-1)
		x := math.Exp(lx)
		l1 := math.Log1p(-math.Min(x, 1-1e-16))
		var s float64
		for n, c := range counts {
			s += float64(c) * -math.Expm1(float64(n)*l1)
		}
		t.lx = append(t.lx, lx)
		t.g = append(t.g, s/float64(max(total, 1)))
	}
	return t
}

// max returns G's largest value (x -> 1).
func (t *gTable) max() float64 { return t.g[len(t.g)-1] }

// inverse returns x with G(x) = g (g clamped below G's max), log-linear
// between grid points.
func (t *gTable) inverse(g float64) float64 {
	if g <= 0 {
		return 0
	}
	i, _ := slices.BinarySearch(t.g, g)
	if i == 0 {
		return math.Exp(t.lx[0]) * g / math.Max(t.g[0], 1e-300)
	}
	if i >= len(t.g) {
		return 1
	}
	f := (g - t.g[i-1]) / math.Max(t.g[i]-t.g[i-1], 1e-300)
	return math.Exp(t.lx[i-1] + f*(t.lx[i]-t.lx[i-1]))
}

// simulate generates calibDocs documents from a fixed stream (independent
// of N and of the seed's documents) with the current parameters.
func (t *Topics) simulate() calibSample {
	var s docScratch
	top, bg := map[int]int{}, map[int]int{}
	slots := 0
	var distinct, fresh float64
	for i := range calibDocs {
		r := rng{s: mix(mix(uint64(t.cfg.Seed)^0xca11b) + uint64(i)*0x9e3779b97f4a7c15)}
		t.generate(&r, t.calibSite(i), &s)
		ids, _ := s.counts(nil, nil)
		distinct += float64(len(ids))
		f := s.bgFresh
		for _, c := range s.fresh {
			top[int(c)]++
			f += int(c)
			slots++
		}
		bg[s.bgFresh]++
		fresh += float64(f)
	}
	return calibSample{
		distinct: distinct / calibDocs, fresh: fresh / calibDocs,
		gTop: newGTable(top, slots), gBg: newGTable(bg, calibDocs),
	}
}

// fitAlpha returns the urn concentration α for which the sample's distinct
// terms per document meet PostingsPerDoc (clamped to [1e-2, 1e7]).
func (t *Topics) fitAlpha() float64 {
	target := t.p.PostingsPerDoc
	save := t.p.Alpha
	defer func() { t.p.Alpha = save }()
	f := func(la float64) float64 {
		t.p.Alpha = math.Exp(la)
		return t.simulate().distinct - target
	}
	// Bracket around the current value, widening 4-fold (distinct terms
	// grow with α), then solve on log α.
	lo, hi := math.Log(save)-0.7, math.Log(save)+0.7
	for f(lo) > 0 {
		if lo < math.Log(1e-2) {
			return 1e-2
		}
		lo, hi = lo-1.4, lo
	}
	for f(hi) < 0 {
		if hi > math.Log(1e7) {
			return 1e7
		}
		lo, hi = hi, hi+1.4
	}
	return math.Exp(solve(f, lo, hi, 0.003*target))
}

// zipfMass is Σ_{r=from+1}^{n} (r+q)^-s and, with F > 0, also
// Σ 1 - exp(-F·(r+q)^-s/z): exact over the first 256 ranks, then by the
// midpoint rule on 400 log-spaced bins (relative error < 1e-3).
func zipfSums(n, from int, s, q, F, z float64) (mass, distinct float64) {
	term := func(r float64) (float64, float64) {
		p := math.Exp(-s * math.Log(r+q))
		if F == 0 {
			return p, 0
		}
		return p, -math.Expm1(-F * p / z)
	}
	r := from + 1
	for ; r <= min(n, from+256); r++ {
		p, d := term(float64(r))
		mass += p
		distinct += d
	}
	if r > n {
		return mass, distinct
	}
	a, b := math.Log(float64(r)-0.5), math.Log(float64(n)+0.5)
	const bins = 400
	for i := range bins {
		l0 := a + (b-a)*float64(i)/bins
		l1 := a + (b-a)*float64(i+1)/bins
		w := math.Exp(l1) - math.Exp(l0)
		p, d := term(math.Exp((l0 + l1) / 2))
		mass += w * p
		distinct += w * d
	}
	return mass, distinct
}

// expectedVocab is the expected number of distinct terms of N documents
// with fresh draws per document: the query terms plus Σ over the synthetic
// words of P(drawn at least once), the background and each topic k
// receiving its share (λ, and (1-λ)·π_k) of N·fresh draws less the share
// of their query terms.
func (t *Topics) expectedVocab(fresh float64, rb, rt int) float64 {
	s, q := t.p.ZipfS, t.p.ZipfQ
	F := t.globalDraws(fresh)
	zb, _ := zipfSums(rb, 0, s, q, 0, 1)
	zt, _ := zipfSums(rt, 0, s, q, 0, 1)
	fb := F * t.p.Background * (1 - t.bgQMass) / zb
	var ft float64 // topical synthetic draws, spread over TopicSpread ranks each
	for k, pk := range t.pi {
		ft += F * (1 - t.p.Background) * pk * (1 - t.topQMass[k])
	}
	spread := float64(t.p.TopicSpread)
	ft /= zt * spread
	nfw := float64(t.nfw)
	// Rank r (1-based, r > nfw) is drawn at rate fb·(r+q)^-s from the
	// background and ft·(m+q)^-s, m = (r-nfw)/TopicSpread + 1, from the topics.
	rate := func(r float64) float64 {
		return -math.Expm1(-fb*math.Exp(-s*math.Log(r+q)) - ft*math.Exp(-s*math.Log((r-nfw)/spread+1+q)))
	}
	var v float64
	r := t.nfw + 1
	for ; r <= min(rb, t.nfw+4096); r++ {
		v += rate(float64(r))
	}
	if r <= rb {
		a, b := math.Log(float64(r)-0.5), math.Log(float64(rb)+0.5)
		const bins = 800
		for i := range bins {
			l0 := a + (b-a)*float64(i)/bins
			l1 := a + (b-a)*float64(i+1)/bins
			v += (math.Exp(l1) - math.Exp(l0)) * rate(math.Exp((l0+l1)/2))
		}
	}
	// Query terms: function words always appear; content term t appears
	// unless none of its ~f_t·N expected documents is drawn.
	v += float64(t.nfw)
	for _, f := range t.qTarget {
		v += -math.Expm1(-f * float64(t.p.Docs))
	}
	return v
}

// fitS returns the Zipf exponent for which expectedVocab meets Vocab
// (clamped to [0.5, 4]).
func (t *Topics) fitS(fresh float64, rb, rt int) float64 {
	target := float64(t.p.Vocab)
	save := t.p.ZipfS
	defer func() { t.p.ZipfS = save }()
	f := func(s float64) float64 { // increasing in s
		t.p.ZipfS = s
		return target - t.expectedVocab(fresh, rb, rt)
	}
	lo, hi := 0.5, 4.0
	if f(lo) > 0 {
		return lo
	}
	if f(hi) < 0 {
		return hi
	}
	return solve(f, lo, hi, 0.002*target)
}

// placeQueries gives the content query terms their weights (see GEN.md):
// the j-th gets the target df fraction f = min(0.5, QueryScale·j^-γ) (or
// QueryDF's); each query of the log is assigned one topic (by popularity,
// from a hash of its terms), and a term belongs to the topics of the
// queries it occurs in, S_t. A share φ of f comes from those topics: a
// document holding topic k ∈ S_t holds t with probability
// g = φ·f / Σ_{k∈S_t} c_k (c_k the share of documents holding k), which
// the sample's gTop converts to a per-draw weight; the rest, and what g
// cannot hold, comes from the background through gBg.
func (t *Topics) placeQueries(smp calibSample) {
	k := t.p.Topics
	for i := range k {
		t.topQIDs[i] = t.topQIDs[i][:0]
		t.topQMass[i] = 0
	}
	t.bgQIDs, t.bgQMass = nil, 0
	t.qTarget = t.qTarget[:0]
	t.Fit.CappedTopics, t.Fit.CappedQueryTerms = 0, 0
	if len(t.qterms) == 0 {
		return
	}
	isFW := make([]bool, len(t.qterms))
	for _, id := range t.fw {
		isFW[id] = true
	}
	if t.qsets == nil {
		t.qsets, t.qcounts = t.querySets(isFW)
	}
	sets := t.qsets
	c := make([]float64, k)
	for i, p := range t.pi {
		c[i] = -math.Expm1(-p * t.p.TopicsPerDoc)
	}
	topW := make([][]float64, k)
	var bgW []float64
	gTopMax, gBgMax := 0.95*smp.gTop.max(), 0.95*smp.gBg.max()
	j := 0
	for id, q := range t.qterms {
		if isFW[id] {
			continue
		}
		j++
		f := t.targetDF(q, j)
		t.qTarget = append(t.qTarget, f)
		set := sets[id]
		// Topic k gets a share of the topical df in proportion to the
		// term's queries in k: g_k = φ·f·(n_k/n)/c_k per document of k.
		bgShare := f * (1 - t.p.QueryTopical)
		var nt float64
		for _, c := range t.qcounts[id] {
			nt += float64(c)
		}
		if len(set) == 0 || t.p.QueryTopical == 0 {
			bgShare = f
		}
		capped := false
		for i, tk := range set {
			g := f * t.p.QueryTopical * float64(t.qcounts[id][i]) / nt / c[tk]
			if g > gTopMax {
				capped = true
				bgShare += (g - gTopMax) * c[tk]
				g = gTopMax
			}
			x := smp.gTop.inverse(g)
			t.topQIDs[tk] = append(t.topQIDs[tk], uint32(id))
			topW[tk] = append(topW[tk], x)
			t.topQMass[tk] += x
		}
		if capped {
			t.Fit.CappedQueryTerms++
		}
		if bgShare > 0 {
			y := smp.gBg.inverse(math.Min(bgShare, gBgMax))
			t.bgQIDs = append(t.bgQIDs, uint32(id))
			bgW = append(bgW, y)
			t.bgQMass += y
		}
	}
	for i := range k {
		if t.topQMass[i] > maxTopicQueryMass {
			t.topQMass[i] = maxTopicQueryMass
			t.Fit.CappedTopics++
		}
		t.topQ[i] = newAlias(topW[i])
	}
	t.bgQMass = math.Min(t.bgQMass, maxTopicQueryMass)
	t.bgQ = newAlias(bgW)
}

// logToKept maps each term of the query log (t.cfg.Log.Terms) to its kept
// query term's index in t.qterms, -1 where the term was not kept.
func (t *Topics) logToKept() []int32 {
	kept := make(map[string]int32, len(t.qterms))
	for i, q := range t.qterms {
		kept[q] = int32(i)
	}
	ids := make([]int32, len(t.cfg.Log.Terms))
	for i, q := range t.cfg.Log.Terms {
		ids[i] = -1
		if id, ok := kept[q]; ok {
			ids[i] = id
		}
	}
	return ids
}

// querySets gives each content query term a home topic (by popularity,
// from a hash of the seed and the term) and assigns each query of the log
// the home topic of its rarest content term; it returns, for each kept
// content term, the topics of the queries it occurs in (sorted) and how
// many of its queries each got. A rare term thus lives in its home topic,
// and a common one spreads over the topics of the rare terms it is queried
// with, in proportion: "jersey" pulls "new" into its topic.
func (t *Topics) querySets(isFW []bool) ([][]int32, [][]int32) {
	logToKept := t.logToKept()
	for i, id := range logToKept {
		if id >= 0 && isFW[id] {
			logToKept[i] = -1 // function words have no home topic
		}
	}
	// Home topics: uniform among the topics whose document share c_k is
	// 2 to 8 times the term's topical df φ·f (the smallest that hold it
	// comfortably, so that a topic is specific to its terms); among those
	// with c_k >= 2·φ·f when none is that small; topic 0 when none holds
	// it. (c_k falls with k.)
	ck := func(k int) float64 { return -math.Expm1(-t.pi[k] * t.p.TopicsPerDoc) }
	home := make([]int32, len(t.qterms))
	j := 0
	for id, q := range t.qterms {
		if isFW[id] {
			continue
		}
		j++
		need := 2 * t.p.QueryTopical * t.targetDF(q, j)
		kmax, _ := slices.BinarySearchFunc(t.pi, need, func(p, x float64) int {
			if -math.Expm1(-p*t.p.TopicsPerDoc) >= x {
				return -1
			}
			return 1
		})
		kmax = max(kmax-1, 0) // last topic with c_k >= need
		kmin := kmax
		for kmin > 0 && ck(kmin-1) < 4*need {
			kmin--
		}
		r := rng{s: mix(mix(uint64(t.cfg.Seed)^0x40e) + uint64(id))}
		home[id] = int32(kmin + int(r.below(uint64(kmax-kmin+1))))
	}
	type tk struct{ term, topic int32 }
	counts := map[tk]int32{}
	for _, q := range t.cfg.Log.Queries {
		rarest := int32(-1)
		for _, lid := range q {
			if id := logToKept[lid]; id > rarest {
				rarest = id // ids are in log-frequency order: larger = rarer
			}
		}
		if rarest < 0 {
			continue
		}
		topic := home[rarest]
		for _, lid := range q {
			if id := logToKept[lid]; id >= 0 {
				counts[tk{id, topic}]++
			}
		}
	}
	sets := make([][]int32, len(t.qterms))
	for k := range counts {
		sets[k.term] = append(sets[k.term], k.topic)
	}
	ns := make([][]int32, len(t.qterms))
	for i, s := range sets {
		slices.Sort(s)
		ns[i] = make([]int32, len(s))
		for j, k := range s {
			ns[i][j] = counts[tk{int32(i), k}]
		}
	}
	return sets, ns
}

// targetDF is the target df fraction of content query term q, the j-th
// (1-based): QueryDF's, else min(0.5, QueryScale·j^-QueryGamma).
func (t *Topics) targetDF(q string, j int) float64 {
	if x, ok := t.p.QueryDF[q]; ok {
		return x
	}
	return math.Min(0.5, t.p.QueryScale*math.Pow(float64(j), -t.p.QueryGamma))
}
