package gen

import (
	"context"
	"fmt"
	"io"

	"github.com/qpengine/qp/reorder"
)

// SiteFitOptions configure FitSiteShare.
type SiteFitOptions struct {
	// Target is the real collection's BP gain from random order on a
	// random sample of SampleDocs of its N documents
	// (reorder.MeasureSampleGain: 1 - mean log2 gap after / before).
	Target     float64
	SampleDocs int
	// Steps of bisection over SiteShare in [0, MaxSiteShare] (0 = 6:
	// a resolution of 0.014).
	Steps int
	// Log, when not nil, receives one line per step.
	Log io.Writer
}

// MaxSiteShare bounds the fitted SiteShare.
const MaxSiteShare = 0.9

// FitSiteShare returns the SiteShare (with cfg's other parameters, N =
// cfg.Params.Docs, random order) whose documents BP shortens as much as
// the real collection's: the generated sample is documents 0..n-1, a
// uniform sample of the sites since documents are in random order, and its
// gain is measured exactly as for the real index (lists of df >= 2 within
// the sample, default BP). The gain grows with SiteShare (more of each
// document is its site's), so the fit bisects; a target below the gain of
// SiteShare 0 (topics alone) gives 0. It also returns the gain reached.
// Each step generates n documents and runs BP on them (seconds).
func FitSiteShare(ctx context.Context, cfg TopicsConfig, opt SiteFitOptions) (share, gain float64, err error) {
	if cfg.Locality {
		return 0, 0, fmt.Errorf("gen: site fit: needs random order (no locality)")
	}
	steps := opt.Steps
	if steps <= 0 {
		steps = 6
	}
	at := func(s float64) (float64, error) {
		c := cfg
		c.Params.SiteShare = s
		t, err := NewTopics(c)
		if err != nil {
			return 0, err
		}
		sg, err := t.sampleGain(ctx, opt.SampleDocs)
		if err != nil {
			return 0, err
		}
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "  site_share %.4f: BP gain %.1f%% on %d documents (target %.1f%%)\n", s, 100*sg.Gain(), sg.Docs, 100*opt.Target)
		}
		return sg.Gain(), nil
	}
	g0, err := at(0)
	if err != nil || g0 >= opt.Target {
		return 0, g0, err
	}
	lo, hi := 0.0, MaxSiteShare
	ghi, err := at(hi)
	if err != nil || ghi <= opt.Target {
		return hi, ghi, err
	}
	glo := g0
	for range steps {
		mid := (lo + hi) / 2
		g, err := at(mid)
		if err != nil {
			return 0, 0, err
		}
		if g < opt.Target {
			lo, glo = mid, g
		} else {
			hi, ghi = mid, g
		}
	}
	// Interpolate within the last bracket.
	f := (opt.Target - glo) / max(ghi-glo, 1e-9)
	return lo + f*(hi-lo), opt.Target, nil
}

// sampleGain generates documents 0..n-1 (n capped at N) and measures BP's
// gain on them from their (random) generation order.
func (t *Topics) sampleGain(ctx context.Context, n int) (reorder.SampleGain, error) {
	n = min(n, t.p.Docs)
	byID := map[uint32][]uint32{}
	var ids []uint32
	var sc docScratch
	for d := range n {
		if err := ctx.Err(); err != nil {
			return reorder.SampleGain{}, err
		}
		t.document(d, &sc)
		ids, _ = sc.counts(ids[:0], nil)
		for _, id := range ids {
			byID[id] = append(byID[id], uint32(d))
		}
	}
	lists := make([][]uint32, 0, len(byID))
	for _, l := range byID {
		if len(l) >= 2 {
			lists = append(lists, l)
		}
	}
	return reorder.GainOfLists(ctx, n, lists, 1, t.cfg.workers())
}
