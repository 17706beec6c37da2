package gen

import (
	"math"
	"slices"
)

// Under Locality, a share siteWordShare of a document's fresh draws are
// words of its site, siteWords per site, rare background ranks (above
// siteLow): the boilerplate and names that make pages of one host alike.
const (
	siteWordShare = 0.05
	siteWords     = 20
)

// DefaultTopicSpread is the default number of background ranks over
// which a topic's m-th word is spread (TopicParams.TopicSpread).
const DefaultTopicSpread = 16

// docScratch is one worker's reusable state for generating documents.
type docScratch struct {
	tokens     []uint32  // word ids in text order
	topics     []int32   // the document's topics
	cum        []float64 // cumulative topic weights
	fresh      []int32   // fresh draws per topic slot (calibration)
	bgFresh    int       // fresh background draws (calibration)
	keys, vals []uint32  // counts' table
}

// docRNG is document d's PRNG, seeded from (seed, d) only.
func docRNG(seed int64, d int) rng {
	return rng{s: mix(mix(uint64(seed)^0x70b1c5) + uint64(d)*0x9e3779b97f4a7c15 + 11)}
}

// normal returns a standard normal variate (Box–Muller).
func (r *rng) normal() float64 {
	return math.Sqrt(-2*math.Log(r.unit())) * math.Cos(2*math.Pi*r.unit())
}

// poisson returns a Poisson(mean) variate by multiplication (Knuth, TAOCP
// vol. 2, §3.4.1), for the small means used here.
func (r *rng) poisson(mean float64) int {
	l := math.Exp(-mean)
	k, p := 0, r.unit()
	for p > l && k < 64 {
		k++
		p *= r.unit()
	}
	return k
}

// length draws a document length.
func (t *Topics) length(r *rng) int {
	x := math.Exp(t.lenMu + t.p.LenSigma*r.normal())
	return int(min(max(math.Round(x), 1), float64(t.p.MaxLen)))
}

// generate fills s.tokens with the tokens of a document drawn from r. st
// is the document's site (Locality or SiteShare > 0; st.id < 0: none): its
// main topic is the document's first, and a share of its fresh draws are
// the site's words (siteWord; under Locality with SiteShare 0, the
// previous model's 20 rare words per site).
func (t *Topics) generate(r *rng, st siteRef, s *docScratch) {
	L := t.length(r)
	nt := min(1+r.poisson(t.p.TopicsPerDoc-1), 8)
	s.topics, s.cum, s.fresh = s.topics[:0], s.cum[:0], s.fresh[:0]
	var acc float64
	for i := range nt {
		k := st.topic
		if i > 0 || k < 0 {
			k = t.piAlias.draw(r)
		}
		acc += -math.Log(r.unit()) // Dirichlet(1,...,1) by normalised exponentials
		s.topics = append(s.topics, int32(k))
		s.cum = append(s.cum, acc)
		s.fresh = append(s.fresh, 0)
	}
	s.bgFresh = 0
	s.tokens = s.tokens[:0]
	alpha, disc, lambda := t.p.Alpha, t.p.Discount, t.p.Background
	nq := uint32(len(t.qterms))
	fresh := 0
	for i := range L {
		if i > 0 && r.unit()*(float64(i)+alpha) >= alpha+disc*float64(fresh) {
			s.tokens = append(s.tokens, s.tokens[r.below(uint64(i))])
			continue
		}
		fresh++
		var id uint32
		switch {
		case st.id >= 0 && t.p.SiteShare > 0:
			if r.unit() < t.p.SiteShare {
				id = t.siteWord(r, st)
				break
			}
			fallthrough
		case st.id < 0 || t.p.SiteShare > 0 || r.unit() >= siteWordShare:
			if r.unit() < lambda {
				s.bgFresh++
				id = t.bgWord(r)
			} else {
				u := r.unit() * acc
				j, _ := slices.BinarySearch(s.cum, u)
				j = min(j, len(s.cum)-1)
				s.fresh[j]++
				id = t.topicWord(r, int(s.topics[j]))
			}
		default:
			// A word of the site's own (names, navigation): one of
			// siteWords rare background ranks fixed by the site.
			h := mix(uint64(st.id)<<8 ^ r.below(siteWords) ^ 0x5173)
			id = nq + uint32(t.nfw) + uint32(uint64(t.siteLow)+h%uint64(t.bg.n-t.nfw-t.siteLow))
		}
		s.tokens = append(s.tokens, id)
	}
}

// bgWord draws a word from the background: a query term by its background
// weight, else a rank of the Zipf law (function words on top).
func (t *Topics) bgWord(r *rng) uint32 {
	if t.bgQMass > 0 && r.unit() < t.bgQMass {
		return t.bgQIDs[t.bgQ.draw(r)]
	}
	rk := t.bg.draw(r)
	if rk < t.nfw {
		return t.fw[rk]
	}
	return uint32(len(t.qterms)) + uint32(rk)
}

// topicWord draws a word of topic k: one of its query terms by weight,
// else its m-th word, background rank nfw + m·TopicSpread + h(k, m).
func (t *Topics) topicWord(r *rng, k int) uint32 {
	if m := t.topQMass[k]; m > 0 && r.unit() < m {
		return t.topQIDs[k][t.topQ[k].draw(r)]
	}
	m := uint64(t.top.draw(r))
	sp := uint64(t.p.TopicSpread)
	h := mix(uint64(k)<<40 ^ m)
	if sp&(sp-1) == 0 {
		h &= sp - 1
	} else {
		h %= sp
	}
	return uint32(len(t.qterms)) + uint32(t.nfw) + uint32(m*sp+h)
}

// Document generates document d (0 <= d < N) into s and returns its word
// ids in text order (valid until the next call with s).
func (t *Topics) document(d int, s *docScratch) []uint32 {
	r := docRNG(t.cfg.Seed, d)
	t.generate(&r, t.siteRefOf(d), s)
	return s.tokens
}

// counts returns the distinct ids of s.tokens (ascending) and their
// counts, appended to ids[:0] and tfs[:0]: an open-addressing table
// (keys+1, so 0 is empty) sized to the document, then a sort of the
// distinct ids only.
func (s *docScratch) counts(ids []uint32, tfs []uint32) ([]uint32, []uint32) {
	size := 64
	for size < 2*len(s.tokens) {
		size *= 2
	}
	if cap(s.keys) < size {
		s.keys, s.vals = make([]uint32, size), make([]uint32, size)
	}
	keys, vals := s.keys[:size], s.vals[:size]
	clear(keys)
	mask := uint32(size - 1)
	ids = ids[:0]
	for _, x := range s.tokens {
		h := (x * 0x9e3779b1) & mask
		for keys[h] != 0 && keys[h] != x+1 {
			h = (h + 1) & mask
		}
		if keys[h] == 0 {
			keys[h], vals[h] = x+1, 0
			ids = append(ids, x)
		}
		vals[h]++
	}
	slices.Sort(ids)
	tfs = tfs[:0]
	for _, x := range ids {
		h := (x * 0x9e3779b1) & mask
		for keys[h] != x+1 {
			h = (h + 1) & mask
		}
		tfs = append(tfs, vals[h])
	}
	return ids, tfs
}
