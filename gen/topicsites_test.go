package gen

import (
	"slices"
	"testing"
)

// jaccard is |a ∩ b| / |a ∪ b| of two ascending id sets (intersect:
// measure.go's merge of two ascending lists).
func jaccard(a, b []uint32) float64 {
	inter := len(intersect(a, b))
	if u := len(a) + len(b) - inter; u > 0 {
		return float64(inter) / float64(u)
	}
	return 0
}

// TestTopicsSitesRandomOrder: with SiteShare > 0 and no Locality, every
// document has a site, sites are spread over the docID space (random
// order), and two documents of one site share many more terms than two
// of different sites; without sites the documents are unchanged from a
// config that never mentions them (SiteVocab alone changes nothing).
func TestTopicsSitesRandomOrder(t *testing.T) {
	p := small(2000)
	p.SiteShare, p.SiteDocs, p.SiteVocab = 0.4, 20, 200
	tp := newTopics(t, TopicsConfig{Params: p, Seed: 3, Workers: 2})
	docs := collect(t, tp, nil)
	site := make([]int64, len(docs))
	adjacentSame := 0
	for d := range docs {
		st := tp.siteRefOf(d)
		if st.id < 0 {
			t.Fatalf("document %d has no site", d)
		}
		site[d] = st.id
		if d > 0 && site[d] == site[d-1] {
			adjacentSame++
		}
	}
	// ~100 sites over 2000 documents in random order: about 1/100 of
	// adjacent pairs share a site (under Locality: ~19/20).
	if adjacentSame > len(docs)/10 {
		t.Fatalf("%d of %d adjacent documents share their site: want random order", adjacentSame, len(docs)-1)
	}
	var same, diff float64
	var ns, nd int
	for a := 0; a < len(docs); a++ {
		for b := a + 1; b < len(docs) && b < a+400; b++ {
			j := jaccard(docs[a].TermIDs, docs[b].TermIDs)
			if site[a] == site[b] {
				same += j
				ns++
			} else {
				diff += j
				nd++
			}
		}
	}
	if ns < 50 {
		t.Fatalf("only %d same-site pairs", ns)
	}
	same, diff = same/float64(ns), diff/float64(nd)
	if same < 3*diff {
		t.Fatalf("mean Jaccard %.4f within sites, %.4f across: want >= 3×", same, diff)
	}

	q := small(300)
	base := collect(t, newTopics(t, TopicsConfig{Params: q, Seed: 5, Workers: 2}), nil)
	q.SiteVocab = 77
	other := collect(t, newTopics(t, TopicsConfig{Params: q, Seed: 5, Workers: 2}), nil)
	for d := range base {
		if !slices.Equal(base[d].TermIDs, other[d].TermIDs) || !slices.Equal(base[d].TFs, other[d].TFs) {
			t.Fatalf("document %d changed with site_vocab but no sites", d)
		}
	}
}

// TestTopicsSitesDeterministic: the collection with sites does not depend
// on the number of workers.
func TestTopicsSitesDeterministic(t *testing.T) {
	p := small(1200)
	p.SiteShare = 0.3
	a := collect(t, newTopics(t, TopicsConfig{Params: p, Seed: 9, Workers: 1}), nil)
	b := collect(t, newTopics(t, TopicsConfig{Params: p, Seed: 9, Workers: 3}), nil)
	for d := range a {
		if !slices.Equal(a[d].TermIDs, b[d].TermIDs) || !slices.Equal(a[d].TFs, b[d].TFs) {
			t.Fatalf("document %d differs between 1 and 3 workers", d)
		}
	}
}

// TestTopicsSitesMeetTargets: with sites the calibration still meets the
// distinct terms per document and, within 20%, the vocabulary (the site
// slots' draws are counted once per site, globalDraws).
func TestTopicsSitesMeetTargets(t *testing.T) {
	p := small(6000)
	p.SiteShare, p.SiteDocs = 0.4, 30
	tp := newTopics(t, TopicsConfig{Params: p, Seed: 2, Workers: 2})
	docs := collect(t, tp, nil)
	var post float64
	vocab := map[uint32]bool{}
	for _, d := range docs {
		post += float64(len(d.TermIDs))
		for _, id := range d.TermIDs {
			vocab[id] = true
		}
	}
	post /= float64(len(docs))
	want := tp.Params()
	if post < 0.9*want.PostingsPerDoc || post > 1.1*want.PostingsPerDoc {
		t.Fatalf("%.1f distinct terms per document, want %.1f ± 10%%", post, want.PostingsPerDoc)
	}
	if v := float64(len(vocab)); v < 0.8*float64(want.Vocab) || v > 1.2*float64(want.Vocab) {
		t.Fatalf("%d terms, want %d ± 20%%", len(vocab), want.Vocab)
	}
}
