package report

import (
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMarkdown(t *testing.T) {
	r := New("Title")
	r.Para("intro %d", 1)
	s := r.Section("Tables")
	s.Table([]string{"a", "b|c"}, [][]string{{"1", "x|y"}, {"2"}})
	s.Code("line ``` one\n\n")
	s.Plot("p1", &Plot{Title: "P [1]", Series: []Series{{Name: "s", X: []float64{1, 2}, Y: []float64{3, 4}}}})
	want := "# Title\n\nintro 1\n\n## Tables\n\n| a | b\\|c |\n|---|---|\n| 1 | x\\|y |\n| 2 |  |\n\n" +
		"````\nline ``` one\n````\n\n![P [1)](p1.svg)\n"
	if got := r.Markdown(); got != want {
		t.Fatalf("Markdown:\n%s\nwant:\n%s", got, want)
	}
	dir := t.TempDir()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil || string(md) != want {
		t.Fatalf("README.md %q, %v", md, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "p1.svg")); err != nil {
		t.Fatal(err)
	}
}

func TestPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"bad name":  func() { New("").Section("s").Plot("../x", &Plot{}) },
		"twice":     func() { s := New("").Section("s"); s.Plot("a", &Plot{}); s.Plot("a", &Plot{}) },
		"long row":  func() { New("").Section("s").Table([]string{"a"}, [][]string{{"1", "2"}}) },
		"no header": func() { New("").Section("s").Table(nil, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// parse checks that the SVG is well-formed XML and returns its elements
// by name.
func parse(t *testing.T, svg []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	n := map[string]int{}
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return n
			}
			t.Fatalf("bad SVG: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			n[se.Name.Local]++
		}
	}
}

func TestPlotSVG(t *testing.T) {
	p := &Plot{Title: "delay <ms> & rate", XLabel: "rate", YLabel: "ms", LogX: true, LogY: true,
		Series: []Series{
			{Name: "cpu", X: []float64{100, 1000, 10000}, Y: []float64{1, 2, 50}},
			{Name: "gpu p99", X: []float64{100, 1000, 10000, 20000}, Y: []float64{0.5, math.NaN(), 0, 7}, Dashed: true},
		}}
	svg, err := p.SVG()
	if err != nil {
		t.Fatal(err)
	}
	n := parse(t, svg)
	// 3 + 2 drawable points (NaN and 0 on a log axis skipped).
	if n["circle"] != 5 {
		t.Fatalf("%d markers, want 5", n["circle"])
	}
	if n["path"] != 2 {
		t.Fatalf("%d paths, want 2", n["path"])
	}
	s := string(svg)
	for _, want := range []string{"delay &lt;ms&gt; &amp; rate", ">cpu<", ">gpu p99<", "stroke-dasharray", ">1k<", ">10k<", ">100<"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// The second series is broken by its skipped points: two subpaths.
	if strings.Count(s, `d="M`) != 2 || strings.Count(s, " M") != 1 {
		t.Errorf("want one subpath break:\n%s", s)
	}
	if _, err := (&Plot{Series: []Series{{X: []float64{0}, Y: []float64{1}}}, LogX: true}).SVG(); err == nil {
		t.Error("no drawable point: no error")
	}
	if _, err := (&Plot{Series: []Series{{X: []float64{1}, Y: nil}}}).SVG(); err == nil {
		t.Error("mismatched lengths: no error")
	}
}

func TestAxes(t *testing.T) {
	a := axis{p0: 0, p1: 100}
	a.fit([]float64{3, 97})
	if a.lo != 0 || a.hi != 100 {
		t.Fatalf("linear fit [%g, %g], want [0, 100]", a.lo, a.hi)
	}
	if got := a.px(50); got != 50 {
		t.Fatalf("px(50) = %g", got)
	}
	l := axis{log: true, p0: 0, p1: 100}
	l.fit([]float64{3, 2000})
	if l.lo != 0 || l.hi != 4 {
		t.Fatalf("log fit [%g, %g], want [0, 4]", l.lo, l.hi)
	}
	vs, ls := l.ticks()
	if len(vs) != 5 || ls[0] != "1" || ls[4] != "10k" {
		t.Fatalf("log ticks %v %v", vs, ls)
	}
	for v, want := range map[float64]string{0: "0", 0.25: "0.25", 1500: "1.5k", 25000: "25k", 3e6: "3M", 2e9: "2G"} {
		if got := fmtNum(v); got != want {
			t.Errorf("fmtNum(%g) = %q, want %q", v, got, want)
		}
	}
}
