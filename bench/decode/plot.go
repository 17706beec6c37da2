package decode

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/qpengine/qp/report"
)

// WriteDecodeSVG draws results of BenchDecode and BenchDecodeCPU as an SVG
// line chart with report.Plot (qp's one plot writer): integers decoded per
// second against list length, both on log axes, one colour per codec, one
// line per codec, kernel and device (GPU solid; CPU and the BP128 baseline
// kernel dashed), in the order the results first name them. title is
// printed above the chart. It writes nothing but the SVG document.
func WriteDecodeSVG(w io.Writer, title string, rs []DecodeResult) error {
	p := report.Plot{Title: title, XLabel: "list length (integers)", YLabel: "integers decoded per second",
		LogX: true, LogY: true, Width: 960, Height: 600}
	byKey := map[string]int{}
	colour := map[string]int{}
	for _, r := range rs {
		if r.IntsPerSec <= 0 || r.Length <= 0 {
			continue
		}
		key := r.Codec + "\x00" + r.Kernel + "\x00" + r.Device
		i, ok := byKey[key]
		if !ok {
			cpu, baseline := r.Kernel == "cpu", r.Kernel == "qp_bp128_docs"
			name, dev := r.Codec, "GPU"
			if baseline {
				name = "bp128-baseline"
			}
			if cpu {
				dev = "CPU"
			}
			if _, ok := colour[r.Codec]; !ok {
				colour[r.Codec] = len(colour)
			}
			i = len(p.Series)
			byKey[key] = i
			p.Series = append(p.Series, report.Series{Name: name + ", " + dev, Dashed: cpu || baseline, Color: report.Color(colour[r.Codec])})
		}
		s := &p.Series[i]
		s.X = append(s.X, float64(r.Length))
		s.Y = append(s.Y, r.IntsPerSec)
	}
	if len(p.Series) == 0 {
		return fmt.Errorf("decode: WriteDecodeSVG: no results to plot")
	}
	for i := range p.Series {
		s := &p.Series[i]
		sort.Sort(byX{s.X, s.Y})
	}
	svg, err := p.SVG()
	if err != nil {
		return err
	}
	_, err = io.Copy(w, strings.NewReader(string(svg)))
	return err
}

// byX sorts a series' points by X.
type byX struct{ x, y []float64 }

func (b byX) Len() int           { return len(b.x) }
func (b byX) Less(i, j int) bool { return b.x[i] < b.x[j] }
func (b byX) Swap(i, j int) {
	b.x[i], b.x[j] = b.x[j], b.x[i]
	b.y[i], b.y[j] = b.y[j], b.y[i]
}
