package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadQueryFile: the limit keeps the first queries, duplicate ids and
// a missing file are errors naming the file.
func TestReadQueryFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "q.txt")
	os.WriteFile(good, []byte("1:apple pie\n2:banana\n3:cherry tart\n"), 0o644)
	qs, err := ReadQueryFile(good, 2)
	if err != nil || len(qs) != 2 || qs[0].ID != "1" || qs[1].Text != "banana" {
		t.Fatalf("limit 2: %+v, %v", qs, err)
	}
	if qs, err := ReadQueryFile(good, 0); err != nil || len(qs) != 3 {
		t.Fatalf("no limit: %d queries, %v", len(qs), err)
	}
	dup := filepath.Join(dir, "dup.txt")
	os.WriteFile(dup, []byte("1:a\n1:b\n"), 0o644)
	if _, err := ReadQueryFile(dup, 0); err == nil || !strings.Contains(err.Error(), dup) {
		t.Errorf("duplicate ids: %v", err)
	}
	if _, err := ReadQueryFile(filepath.Join(dir, "missing"), 0); err == nil {
		t.Error("missing file: no error")
	}
}
