package eval

import (
	"bufio"
	"fmt"
	"io"
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

// scanQueries is the line-by-line reader ReadQueries replaced
// (bufio.Scanner), the reference of FuzzReadQueries.
func scanQueries(r io.Reader) ([]Query, error) {
	var qs []Query
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		i := strings.IndexAny(line, ":\t")
		if i < 0 {
			return nil, fmt.Errorf("line %d: no separator", n)
		}
		id := strings.TrimSpace(line[:i])
		if id == "" || !isToken(id) {
			return nil, fmt.Errorf("line %d: bad id", n)
		}
		qs = append(qs, Query{ID: id, Text: strings.TrimSpace(line[i+1:]), Line: n})
	}
	return qs, sc.Err()
}

// FuzzReadQueries: ReadQueries (the whole file cut into lines) accepts and
// refuses exactly what the line scanner did, with the same queries and
// line numbers, and its errors name the line the scanner failed at.
func FuzzReadQueries(f *testing.F) {
	for _, s := range []string{"1:apple pie\n2\tbanana\r\n\n 3 : cherry\n", "x", "1:a\n2\n", ":a\n", "a b:c\n", "1:a\r\r\n\r\n4:\n", "\n\n", "1:\xff\x00x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ReadQueries(strings.NewReader(in))
		want, werr := scanQueries(strings.NewReader(in))
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: error %v, the scanner's %v", in, err, werr)
		}
		if err != nil {
			if l := strings.Fields(werr.Error())[1]; !strings.Contains(err.Error(), "line "+l) {
				t.Fatalf("%q: error %v, the scanner's at %s", in, err, werr)
			}
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d queries, the scanner's %d", in, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%q: query %d is %+v, the scanner's %+v", in, i, got[i], want[i])
			}
		}
	})
}

// BenchmarkReadQueries reads 100,000 lines shaped like the TREC 2006
// efficiency log ×10 ("r3-1234:two to five words"; synthetic words, the
// lines' lengths about the log's): the whole-file reader (new) against the
// line scanner it replaced (scanner).
func BenchmarkReadQueries(b *testing.B) {
	var sb strings.Builder
	words := []string{"parallel", "sorting", "of", "inverted", "index", "compression", "gpu", "query", "top", "k"}
	for i := range 100000 {
		fmt.Fprintf(&sb, "r%d-%d:", i/10000, i%10000)
		for w := range 2 + i%4 {
			if w > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[(i+w*7)%len(words)])
		}
		sb.WriteByte('\n')
	}
	in := sb.String()
	for _, c := range []struct {
		name string
		read func(io.Reader) ([]Query, error)
	}{{"new", ReadQueries}, {"scanner", scanQueries}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				qs, err := c.read(strings.NewReader(in))
				if err != nil || len(qs) != 100000 {
					b.Fatalf("%d queries, %v", len(qs), err)
				}
			}
		})
	}
}
