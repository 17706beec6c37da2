package report

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestCSVRoundTrip: what WriteCSV writes, encoding/csv reads back
// unchanged, including fields with commas, quotes and newlines.
func TestCSVRoundTrip(t *testing.T) {
	header := []string{"name", "value"}
	rows := [][]string{{"plain", "1"}, {"a,b", `say "hi"`}, {"two\nlines", ""}}
	var b bytes.Buffer
	if err := WriteCSV(&b, header, rows); err != nil {
		t.Fatal(err)
	}
	written := append([]byte(nil), b.Bytes()...)
	got, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := append([][]string{header}, rows...); !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %q, want %q", got, want)
	}
	path := filepath.Join(t.TempDir(), "x.csv")
	if err := WriteCSVFile(path, header, rows); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); !bytes.Equal(data, written) {
		t.Fatalf("file %q", data)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("a short row did not panic")
		}
	}()
	WriteCSV(&b, header, [][]string{{"one"}})
}
