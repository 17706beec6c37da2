package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteText: columns are right-aligned to their widest cell, short rows
// padded, tabs in cells do not split them, and a row longer than the header
// panics.
func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, []string{"setup", "q/s"}, [][]string{{"cpu-only", "12.5"}, {"gpu"}, {"a\tb", "1000.25"}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	for _, l := range lines {
		if len(l) != len(lines[0]) {
			t.Fatalf("lines not aligned:\n%s", b.String())
		}
	}
	if !strings.HasSuffix(lines[1], "cpu-only     12.5") || !strings.HasSuffix(lines[3], "a b  1000.25") || !strings.Contains(lines[3], "a b") {
		t.Fatalf("cells misplaced:\n%s", b.String())
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "BUG") {
			t.Fatalf("long row: %v", r)
		}
	}()
	WriteText(&b, []string{"x"}, [][]string{{"1", "2"}})
}
