package cuda

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"
)

// WriteDecodeSVG draws results of BenchDecode and BenchDecodeCPU as an SVG
// line chart: integers decoded per second (log scale) against list length
// (log2 scale), one colour per codec, one line per codec, kernel and
// device (GPU solid, the BP128 baseline kernel dotted, CPU dashed, in the
// order the results first name them). title is
// printed above the chart. It writes nothing but the SVG document.
func WriteDecodeSVG(w io.Writer, title string, rs []DecodeResult) error {
	type series struct {
		codec, device string
		cpu, baseline bool
		pts           [][2]float64 // log2 length, ints/s
	}
	var ss []*series
	byKey := map[string]*series{}
	var codecs []string
	colour := map[string]int{}
	minX, maxX := math.Inf(1), math.Inf(-1)
	minY, maxY := math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		if r.IntsPerSec <= 0 || r.Length <= 0 {
			continue
		}
		cpu := r.Kernel == "cpu"
		key := r.Codec + "\x00" + r.Kernel + "\x00" + r.Device
		s := byKey[key]
		if s == nil {
			dev := "GPU"
			if cpu {
				dev = "CPU"
			}
			name, baseline := r.Codec, r.Kernel == "qp_bp128_docs"
			if baseline {
				name = "bp128-baseline"
			}
			s = &series{codec: name, device: dev, cpu: cpu, baseline: baseline}
			byKey[key] = s
			ss = append(ss, s)
			if _, ok := colour[r.Codec]; !ok {
				colour[r.Codec] = len(codecs)
				codecs = append(codecs, r.Codec)
			}
		}
		x, y := math.Log2(float64(r.Length)), r.IntsPerSec
		s.pts = append(s.pts, [2]float64{x, y})
		minX, maxX = math.Min(minX, x), math.Max(maxX, x)
		minY, maxY = math.Min(minY, y), math.Max(maxY, y)
	}
	if len(ss) == 0 {
		return fmt.Errorf("cuda: WriteDecodeSVG: no results to plot")
	}
	if maxX == minX {
		minX, maxX = minX-1, maxX+1
	}
	y0, y1 := math.Floor(math.Log10(minY)), math.Ceil(math.Log10(maxY))
	if y1 == y0 {
		y1++
	}
	const W, H, left, right, top, bottom = 960.0, 600.0, 70.0, 250.0, 40.0, 50.0
	px := func(x float64) float64 { return left + (x-minX)/(maxX-minX)*(W-left-right) }
	py := func(y float64) float64 { return H - bottom - (math.Log10(y)-y0)/(y1-y0)*(H-top-bottom) }
	palette := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
		"#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15">%s</text>`+"\n", left, html.EscapeString(title))
	// Grid and axes.
	for e := y0; e <= y1; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if math.Log10(v) > y1+1e-9 {
				break
			}
			y := py(v)
			stroke := "#eee"
			if m == 1 {
				stroke = "#ccc"
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", left, y, W-right, y, stroke)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, rateLabel(v))
		}
	}
	for x := math.Ceil(minX); x <= maxX; x++ {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", px(x), top, px(x), H-bottom)
		if int(x)%2 == 0 || maxX-minX <= 8 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">2<tspan dy="-5" font-size="9">%d</tspan></text>`+"\n", px(x), H-bottom+18, int(x))
		}
	}
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="black"/>`+"\n", left, top, W-left-right, H-top-bottom)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">list length (integers)</text>`+"\n", (left+W-right)/2, H-12)
	fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">integers decoded per second</text>`+"\n", (top+H-bottom)/2)
	// Lines and legend.
	for i, s := range ss {
		sort.Slice(s.pts, func(a, c int) bool { return s.pts[a][0] < s.pts[c][0] })
		codec, _, _ := strings.Cut(s.codec, "-")
		col := palette[colour[codec]%len(palette)]
		dash := ""
		switch {
		case s.cpu:
			dash = ` stroke-dasharray="6 3"`
		case s.baseline:
			dash = ` stroke-dasharray="2 2"`
		}
		var pts []string
		for _, p := range s.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8"%s points="%s"/>`+"\n", col, dash, strings.Join(pts, " "))
		for _, p := range s.pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.2" fill="%s"/>`+"\n", px(p[0]), py(p[1]), col)
		}
		ly := top + 8 + 16*float64(i)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.8"%s/>`+"\n", W-right+12, ly, W-right+40, ly, col, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s, %s</text>`+"\n", W-right+46, ly+4, html.EscapeString(s.codec), s.device)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// rateLabel prints an axis rate: 200 G, 5 G, 500 M.
func rateLabel(v float64) string {
	switch {
	case v >= 1e12:
		return fmt.Sprintf("%g T", v/1e12)
	case v >= 1e9:
		return fmt.Sprintf("%g G", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%g M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%g k", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
