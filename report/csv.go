package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"os"
)

// WriteCSV writes a header and rows with encoding/csv (RFC 4180: fields
// holding commas, quotes or newlines are quoted), the one CSV writer of
// qp's experiments. Every row must have the header's length (a BUG panic
// otherwise: the caller built the table wrong).
func WriteCSV(w io.Writer, header []string, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	for i, r := range rows {
		if len(r) != len(header) {
			panic(fmt.Sprintf("BUG: CSV row %d has %d fields, the header %d", i, len(r), len(header)))
		}
		if err := cw.Write(r); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteCSVFile is WriteCSV to a file at path (created or truncated).
func WriteCSVFile(path string, header []string, rows [][]string) error {
	var b bytes.Buffer
	if err := WriteCSV(&b, header, rows); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
