package gen

import (
	"math"
	"slices"
)

// Sites (docs/GEN.md, "Sites"): documents of one site share a main topic
// and a small vocabulary of their own — templates, navigation, names, the
// subject words of the site — as pages of one host do. Real collections
// owe most of what document reordering finds to this structure (Silvestri,
// ECIR 2007: URL order; Dhulipala et al., KDD 2016: BP); a model whose
// documents draw their words independently leaves BP little to find.
//
// With SiteShare > 0 every document belongs to a site, in either order:
// under Locality sites are runs of consecutive documents (URL order);
// without it documents are in random order and a document's site is that
// of its position in a hidden URL order (a random permutation), so BP can
// recover the sites. A share SiteShare of a document's fresh draws are the
// site's words: slot j of SiteVocab, drawn by a Zipf law over slots
// (P(j) ∝ (j+1+siteSlotQ)^-siteSlotZipf: a few template words on every
// page, a tail of subject words), whose word is fixed by (seed, site, j):
// drawn once, from the background (probability λ) or the site's main topic,
// like any fresh word, so the site's vocabulary has the collection's word
// laws. With SiteShare = 0 the model is the previous one (under Locality:
// 20 rare words per site, 5% of fresh draws).
const (
	siteSlotZipf = 1.0
	siteSlotQ    = 1.0
)

// siteRef is a document's site: id < 0 for none; topic is its main topic
// (< 0: none).
type siteRef struct {
	id    int64
	topic int
}

var noSite = siteRef{id: -1, topic: -1}

// makeSites cuts the URL order [0, N) into sites of geometric size (mean
// SiteDocs), each with a main topic drawn by popularity, the first topic of
// all its documents (their others are their own); sequential, from its own
// stream. Without Locality (SiteShare > 0) it also draws the documents'
// positions in that order, a random permutation from another stream.
func (t *Topics) makeSites() {
	r := rng{s: mix(mix(uint64(t.cfg.Seed)^0x517e5) + 3)}
	n := t.p.Docs
	lq := math.Log1p(-1 / t.p.SiteDocs)
	for d := 0; d < n; {
		t.siteStart = append(t.siteStart, uint32(d))
		t.siteTopic = append(t.siteTopic, int32(t.piAlias.draw(&r)))
		size := 1
		if lq < 0 {
			size += int(math.Log(r.unit()) / lq)
		}
		d += size
	}
	if t.cfg.Locality {
		return
	}
	pr := rng{s: mix(mix(uint64(t.cfg.Seed)^0x9e5175) + 5)}
	t.sitePos = make([]uint32, n)
	for i := range t.sitePos {
		t.sitePos[i] = uint32(i)
	}
	for i := n - 1; i > 0; i-- { // Fisher–Yates
		j := pr.below(uint64(i + 1))
		t.sitePos[i], t.sitePos[j] = t.sitePos[j], t.sitePos[i]
	}
}

// siteRefOf returns document d's site (noSite without sites).
func (t *Topics) siteRefOf(d int) siteRef {
	if t.siteStart == nil {
		return noSite
	}
	pos := uint32(d)
	if t.sitePos != nil {
		pos = t.sitePos[d]
	}
	i, found := slices.BinarySearch(t.siteStart, pos)
	if !found {
		i--
	}
	return siteRef{id: int64(i), topic: int(t.siteTopic[i])}
}

// calibSite returns the site of calibration document i: a site of its own
// (ids above any real site's), main topic by popularity from its own
// stream, so that the sample's per-document statistics include the site
// draws; noSite when SiteShare is 0.
func (t *Topics) calibSite(i int) siteRef {
	if t.p.SiteShare == 0 {
		return noSite
	}
	r := rng{s: mix(mix(uint64(t.cfg.Seed)^0xca115e) + uint64(i))}
	return siteRef{id: 1<<40 + int64(i), topic: t.piAlias.draw(&r)}
}

// siteWord draws a word of site st: a slot by the slot law, then the slot's
// word, drawn from the slot's own stream (the same word in every document
// of the site).
func (t *Topics) siteWord(r *rng, st siteRef) uint32 {
	j := uint64(t.siteZ.draw(r))
	w := rng{s: mix(mix(uint64(t.cfg.Seed)^0x5173e) + uint64(st.id)*0x9e3779b97f4a7c15 + j)}
	if w.unit() < t.p.Background {
		return t.bgWord(&w)
	}
	return t.topicWord(&w, st.topic)
}

// globalDraws is the expected number of independent draws from the
// background and topic laws over the collection, fresh the non-site fresh
// draws per document (what simulate counts): N·fresh, plus with sites one
// draw per site slot used, Σ_j 1 - exp(-D·P(j)) per site, D =
// SiteDocs·fresh·SiteShare/(1-SiteShare) the site draws of a site of mean
// size.
func (t *Topics) globalDraws(fresh float64) float64 {
	n := float64(t.p.Docs)
	sh := t.p.SiteShare
	if sh == 0 {
		return n * fresh
	}
	sites := math.Max(1, n/t.p.SiteDocs)
	d := math.Min(t.p.SiteDocs, n) * fresh * sh / (1 - sh)
	z, _ := zipfSums(t.p.SiteVocab, 0, siteSlotZipf, siteSlotQ, 0, 1)
	_, used := zipfSums(t.p.SiteVocab, 0, siteSlotZipf, siteSlotQ, d, z)
	return n*fresh + sites*used
}
