package report

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"math"
	"strconv"
)

// Plot is a line plot: each series is a polyline with point markers, in
// order of X as given. Points with a non-finite coordinate, or a
// non-positive one on a logarithmic axis, are skipped and break the line.
type Plot struct {
	Title          string
	XLabel, YLabel string
	LogX, LogY     bool
	Series         []Series
	// Width and Height in pixels (default 720 × 440).
	Width, Height int
}

// Series is one named line. Dashed draws it dashed (e.g. p99 next to the
// mean of the same configuration).
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool
	Color  string // an SVG colour; default Color(i) for the i-th series
}

// Color is the i-th colour of the default palette (cyclic), e.g. to draw
// two series of one configuration alike.
func Color(i int) string { return palette[i%len(palette)] }

// palette: colour-blind-safe (Okabe-Ito).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// axis maps data values to pixels.
type axis struct {
	log    bool
	lo, hi float64 // in transformed units (log10 when log)
	p0, p1 float64 // pixels
}

func (a *axis) ok(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!a.log || v > 0)
}

func (a *axis) t(v float64) float64 {
	if a.log {
		return math.Log10(v)
	}
	return v
}

func (a *axis) px(v float64) float64 {
	return a.p0 + (a.t(v)-a.lo)/(a.hi-a.lo)*(a.p1-a.p0)
}

// fit sets lo/hi from the values (transformed), with a margin.
func (a *axis) fit(vs []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		t := a.t(v)
		lo, hi = math.Min(lo, t), math.Max(hi, t)
	}
	if a.log {
		lo, hi = math.Floor(lo+1e-9), math.Ceil(hi-1e-9)
		if hi <= lo {
			hi = lo + 1
		}
	} else {
		if lo > 0 && lo < 0.5*hi {
			lo = 0 // start linear axes at 0 when the data is not far from it
		}
		if hi == lo {
			lo, hi = lo-1, hi+1
		}
		st := niceStep((hi - lo) / 6)
		lo, hi = math.Floor(lo/st)*st, math.Ceil(hi/st)*st
	}
	a.lo, a.hi = lo, hi
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// ticks returns tick values (data units) with their labels.
func (a *axis) ticks() ([]float64, []string) {
	var vs []float64
	var ls []string
	if a.log {
		decades := int(a.hi - a.lo)
		mults := []float64{1}
		if decades <= 2 {
			mults = []float64{1, 2, 5}
		}
		for e := int(a.lo); e <= int(a.hi); e++ {
			for _, m := range mults {
				v := m * math.Pow(10, float64(e))
				if t := math.Log10(v); t >= a.lo-1e-9 && t <= a.hi+1e-9 {
					vs = append(vs, v)
					ls = append(ls, fmtNum(v))
				}
			}
		}
		return vs, ls
	}
	st := niceStep((a.hi - a.lo) / 6)
	for v := a.lo; v <= a.hi+st*1e-6; v += st {
		vs = append(vs, v)
		ls = append(ls, fmtNum(v))
	}
	return vs, ls
}

// fmtNum prints a tick value compactly (1k, 2.5M, 0.01).
func fmtNum(v float64) string {
	av := math.Abs(v)
	switch {
	case av == 0:
		return "0"
	case av >= 1e9:
		return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "G"
	case av >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case av >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// SVG renders the plot. It fails when no series has a drawable point.
func (p *Plot) SVG() ([]byte, error) {
	w, h := p.Width, p.Height
	if w <= 0 {
		w = 720
	}
	if h <= 0 {
		h = 440
	}
	const left, right, top, bottom = 72.0, 24.0, 40.0, 56.0
	x := axis{log: p.LogX, p0: left, p1: float64(w) - right}
	y := axis{log: p.LogY, p0: float64(h) - bottom, p1: top}
	var xs, ys []float64
	for _, s := range p.Series {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("series %q: %d x values, %d y values", s.Name, len(s.X), len(s.Y))
		}
		for i := range s.X {
			if x.ok(s.X[i]) && y.ok(s.Y[i]) {
				xs, ys = append(xs, s.X[i]), append(ys, s.Y[i])
			}
		}
	}
	if len(xs) == 0 {
		return nil, errors.New("no drawable point")
	}
	x.fit(xs)
	y.fit(ys)
	var b bytes.Buffer
	e := html.EscapeString
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	if p.Title != "" {
		fmt.Fprintf(&b, `<text x="%g" y="22" text-anchor="middle" font-size="15">%s</text>`+"\n", float64(w)/2, e(p.Title))
	}
	// Grid and ticks.
	tv, tl := x.ticks()
	for i, v := range tv {
		px := x.px(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", px, y.p0, px, y.p1)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px, y.p0+16, e(tl[i]))
	}
	tv, tl = y.ticks()
	for i, v := range tv {
		py := y.px(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x.p0, py, x.p1, py)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x.p0-6, py+4, e(tl[i]))
	}
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", x.p0, y.p1, x.p1-x.p0, y.p0-y.p1)
	if p.XLabel != "" {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", (x.p0+x.p1)/2, h-14, e(p.XLabel))
	}
	if p.YLabel != "" {
		fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (y.p0+y.p1)/2, e(p.YLabel))
	}
	// Series.
	for si, s := range p.Series {
		col := p.color(si)
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var path bytes.Buffer
		pen := false
		for i := range s.X {
			if !x.ok(s.X[i]) || !y.ok(s.Y[i]) {
				pen = false
				continue
			}
			cmd := "L"
			if !pen {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, x.px(s.X[i]), y.px(s.Y[i]))
			pen = true
		}
		if path.Len() > 0 {
			fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", bytes.TrimSpace(path.Bytes()), col, dash)
		}
		for i := range s.X {
			if x.ok(s.X[i]) && y.ok(s.Y[i]) {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x.px(s.X[i]), y.px(s.Y[i]), col)
			}
		}
	}
	// Legend, top left inside the frame.
	named := 0
	for _, s := range p.Series {
		if s.Name != "" {
			named++
		}
	}
	if named > 0 {
		lx, ly := x.p0+10, y.p1+10
		maxLen := 0
		for _, s := range p.Series {
			maxLen = max(maxLen, len(s.Name))
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="white" fill-opacity="0.85" stroke="#999"/>`+"\n",
			lx, ly, 40+7*float64(maxLen), 18*named+6)
		row := 0
		for si, s := range p.Series {
			if s.Name == "" {
				continue
			}
			col := p.color(si)
			yy := ly + 15 + 18*float64(row)
			dash := ""
			if s.Dashed {
				dash = ` stroke-dasharray="6 4"`
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", lx+6, yy-4, lx+30, yy-4, col, dash)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+36, yy, e(s.Name))
			row++
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

func (p *Plot) color(i int) string {
	if c := p.Series[i].Color; c != "" {
		return c
	}
	return Color(i)
}
