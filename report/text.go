package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes a header and rows as an aligned plain-text table
// (columns right-aligned, two spaces apart), the terminal form of the
// tables that Section.Table puts in Markdown and WriteCSV in CSV: an
// experiment builds its header and rows once and hands them to any of the
// three. Rows shorter than header are padded; longer ones panic (BUG), as
// in Section.Table. Tabs in cells become spaces.
func WriteText(w io.Writer, header []string, rows [][]string) error {
	if len(header) == 0 {
		panic("BUG: report: table without columns")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells []string) {
		if len(cells) > len(header) {
			panic(fmt.Sprintf("BUG: report: row of %d cells for %d columns", len(cells), len(header)))
		}
		var b strings.Builder
		for i := range header {
			if i < len(cells) {
				b.WriteString(strings.ReplaceAll(cells[i], "\t", " "))
			}
			b.WriteString("\t")
		}
		b.WriteString("\n")
		io.WriteString(tw, b.String())
	}
	line(header)
	for _, r := range rows {
		line(r)
	}
	return tw.Flush()
}
