// Package report writes experiment reports: a self-contained Markdown file
// (README.md) with sections of text, tables and code blocks, and line plots
// written next to it as SVG files (linear or logarithmic axes, several
// series with a legend). It has no dependencies beyond the standard
// library, so that any experiment (qp bench, tests) can contribute to one.
//
//	r := report.New("Scheduler")
//	s := r.Section("Delay vs arrival rate")
//	s.Table([]string{"rate", "mean ms"}, [][]string{{"1000", "2.1"}})
//	s.Plot("delay", &report.Plot{Title: "delay", LogX: true, Series: ...})
//	err := r.Write("out")  // out/README.md, out/delay.svg
package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Report is a Markdown document under construction. Its methods are not
// safe for concurrent use.
type Report struct {
	Title string
	intro []string
	secs  []*Section
	plots map[string]bool // file names in use
}

// New returns an empty report.
func New(title string) *Report { return &Report{Title: title, plots: map[string]bool{}} }

// Para appends a paragraph (Markdown) before the first section.
func (r *Report) Para(format string, args ...any) {
	r.intro = append(r.intro, fmt.Sprintf(format, args...))
}

// Section appends a section (a "##" heading) and returns it.
func (r *Report) Section(title string) *Section {
	s := &Section{r: r, title: title}
	r.secs = append(r.secs, s)
	return s
}

// Sections returns the sections in order.
func (r *Report) Sections() []*Section { return r.secs }

// Section is one part of a report: a heading and blocks in order.
type Section struct {
	r      *Report
	title  string
	blocks []block
}

// Title is the section's heading.
func (s *Section) Title() string { return s.title }

type block struct {
	md   string // Markdown, or
	plot *Plot  // a plot written to file
	file string
}

// Para appends a paragraph (Markdown).
func (s *Section) Para(format string, args ...any) {
	s.blocks = append(s.blocks, block{md: fmt.Sprintf(format, args...)})
}

// Code appends a preformatted block (trailing newlines trimmed).
func (s *Section) Code(text string) {
	text = strings.TrimRight(text, "\n")
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	s.blocks = append(s.blocks, block{md: fence + "\n" + text + "\n" + fence})
}

// Table appends a Markdown table. Cells may not contain newlines; "|" is
// escaped. Rows shorter than header are padded; longer ones panic.
func (s *Section) Table(header []string, rows [][]string) {
	if len(header) == 0 {
		panic("BUG: report: table without columns")
	}
	var b strings.Builder
	line := func(cells []string) {
		if len(cells) > len(header) {
			panic(fmt.Sprintf("BUG: report: row of %d cells for %d columns", len(cells), len(header)))
		}
		b.WriteString("|")
		for i := range header {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			c = strings.ReplaceAll(strings.ReplaceAll(c, "\n", " "), "|", `\|`)
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	line(header)
	b.WriteString("|")
	for range header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		line(r)
	}
	s.blocks = append(s.blocks, block{md: strings.TrimRight(b.String(), "\n")})
}

var fileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Plot appends a plot, written as name.svg (name: letters, digits, '.',
// '_', '-'; unique in the report) and embedded as an image.
func (s *Section) Plot(name string, p *Plot) {
	if !fileName.MatchString(name) {
		panic(fmt.Sprintf("BUG: report: plot name %q", name))
	}
	file := name + ".svg"
	if s.r.plots[file] {
		panic(fmt.Sprintf("BUG: report: plot %q added twice", name))
	}
	s.r.plots[file] = true
	s.blocks = append(s.blocks, block{plot: p, file: file})
}

// Markdown renders the report; plots are referenced by relative file
// name.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", r.Title)
	for _, p := range r.intro {
		b.WriteString(p + "\n\n")
	}
	for _, s := range r.secs {
		fmt.Fprintf(&b, "## %s\n\n", s.title)
		for _, bl := range s.blocks {
			if bl.plot != nil {
				alt := bl.plot.Title
				if alt == "" {
					alt = bl.file
				}
				fmt.Fprintf(&b, "![%s](%s)\n\n", strings.ReplaceAll(alt, "]", ")"), bl.file)
				continue
			}
			b.WriteString(bl.md + "\n\n")
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// Write creates dir if needed and writes dir/README.md and the plots' SVG
// files. A plot that cannot be drawn (no finite point) fails the write.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	var errs []error
	for _, s := range r.secs {
		for _, bl := range s.blocks {
			if bl.plot == nil {
				continue
			}
			svg, err := bl.plot.SVG()
			if err != nil {
				errs = append(errs, fmt.Errorf("report: plot %s: %w", bl.file, err))
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, bl.file), svg, 0o644); err != nil {
				errs = append(errs, fmt.Errorf("report: %w", err))
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(r.Markdown()), 0o644); err != nil {
		errs = append(errs, fmt.Errorf("report: %w", err))
	}
	return errors.Join(errs...)
}
