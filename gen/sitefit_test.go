package gen

import (
	"context"
	"math"
	"testing"
)

// TestFitSiteShareRecovers: the BP gain of a sample grows with SiteShare,
// and fitting to the gain measured at a known SiteShare returns about
// that share; a target below what topics alone give returns 0.
func TestFitSiteShareRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and reorders several samples")
	}
	p := small(1500)
	p.SiteDocs = 20
	cfg := TopicsConfig{Params: p, Seed: 4, Workers: 2}
	gainAt := func(s float64) float64 {
		c := cfg
		c.Params.SiteShare = s
		sg, err := newTopics(t, c).sampleGain(context.Background(), 1500)
		if err != nil {
			t.Fatal(err)
		}
		return sg.Gain()
	}
	g0, g5 := gainAt(0), gainAt(0.5)
	if g5 < g0+0.05 {
		t.Fatalf("BP gain %.3f without sites, %.3f at site_share 0.5: want >= 5 points more", g0, g5)
	}
	share, gain, err := FitSiteShare(context.Background(), cfg, SiteFitOptions{Target: g5, SampleDocs: 1500, Steps: 4})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(share-0.5) > 0.15 || math.Abs(gain-g5) > 1e-9 {
		t.Fatalf("fitted site_share %.3f (gain %.3f) to the gain %.3f of 0.5", share, gain, g5)
	}
	if share, _, err := FitSiteShare(context.Background(), cfg, SiteFitOptions{Target: g0 / 2, SampleDocs: 1500}); err != nil || share != 0 {
		t.Fatalf("target below topics alone: site_share %v, %v", share, err)
	}
	cfg.Locality = true
	if _, _, err := FitSiteShare(context.Background(), cfg, SiteFitOptions{Target: g5, SampleDocs: 1500}); err == nil {
		t.Fatal("fit under Locality: no error")
	}
}
