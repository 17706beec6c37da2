package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorruptGzip: a damaged gzip stream is an error of the file (issue 19
// case 4). With Fail the reader stops; with Skip no text of a file whose
// CRC or deflate data is damaged is returned (the file is skipped whole),
// and a truncated file yields its intact documents, then one error.
func TestCorruptGzip(t *testing.T) {
	dir := t.TempDir()
	var lines strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&lines, `{"id": "%d", "text": "document number %d of the corpus %d"}`+"\n", i, i, i*7919)
	}
	orig := mustRead(t, Options{}, writeFile(t, filepath.Join(dir, "orig.jsonl"), lines.String()))
	gz := writeFile(t, filepath.Join(dir, "orig.jsonl.gz"), lines.String())
	data, err := os.ReadFile(gz)
	if err != nil {
		t.Fatal(err)
	}
	damage := map[string]func([]byte) []byte{
		"crc":       func(b []byte) []byte { b[len(b)-6] ^= 0x40; return b },          // the CRC-32 of the trailer
		"size":      func(b []byte) []byte { b[len(b)-2] ^= 0x01; return b },          // ISIZE
		"middle":    func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b },          // deflate data
		"truncated": func(b []byte) []byte { return b[:len(b)*2/3] },                  // cut short
		"garbage":   func(b []byte) []byte { return append(b, "not gzip at all"...) }, // appended
	}
	for name, f := range damage {
		sub := filepath.Join(dir, name)
		bad := filepath.Join(sub, "a.jsonl.gz")
		writeFile(t, bad, "")
		if err := os.WriteFile(bad, f(append([]byte(nil), data...)), 0o644); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(sub, "b.jsonl"), `{"id": "next", "text": "file"}`)

		// Fail: an error naming the file, ErrCorruptFile.
		r, err := Open(sub)
		if err != nil {
			t.Fatal(err)
		}
		_, err = readAll(t, r)
		if !errors.Is(err, ErrCorruptFile) || !strings.HasPrefix(err.Error(), bad) {
			t.Errorf("%s, fail: error %v, want ErrCorruptFile naming %s", name, err, bad)
		}

		// Skip: only intact documents, then the next file.
		r, err = Options{Mode: Skip}.Open(sub)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := readAll(t, r)
		if err != nil || len(docs) == 0 || docs[len(docs)-1].ID != "next" || r.Skipped() != 1 {
			t.Fatalf("%s, skip: %d docs, %d skipped, %v", name, len(docs), r.Skipped(), err)
		}
		if e := r.SkipErrors()[0]; !errors.Is(e, ErrCorruptFile) {
			t.Errorf("%s, skip: error %v, want ErrCorruptFile", name, e)
		}
		docs = docs[:len(docs)-1]
		for i, d := range docs {
			if d.ID != orig[i].ID || string(d.Text) != string(orig[i].Text) {
				t.Fatalf("%s, skip: document %d is damaged: %q %q", name, i, d.ID, d.Text)
			}
		}
		switch name {
		case "truncated":
			if len(docs) < 1000 || len(docs) >= len(orig) {
				t.Errorf("truncated: %d intact documents of %d", len(docs), len(orig))
			}
		default: // the damage cannot be located: nothing of the file
			if len(docs) != 0 {
				t.Errorf("%s, skip: %d documents of a damaged file returned", name, len(docs))
			}
		}
	}
}

// TestDocIDs: ids a run cannot hold are rejected in every format (issue 19
// case 13), and with UniqueIDs a repeated id names its first occurrence
// (case 5).
func TestDocIDs(t *testing.T) {
	dir := t.TempDir()
	j := writeFile(t, filepath.Join(dir, "a.jsonl"), `{"id":"d1","text":"x"}
{"id":"d 2","text":"x"}
{"id":"d3\u0001","text":"x"}
{"id":17,"text":"x"}
{"id":"d1","text":"y"}
`)
	tr := writeFile(t, filepath.Join(dir, "t.trec"), "<DOC><DOCNO> a\tb </DOCNO>text</DOC>\n<DOC><DOCNO>17</DOCNO>text</DOC>\n")
	txt := writeFile(t, filepath.Join(dir, "txt", "my doc.txt"), "text")

	r, err := Options{Mode: Skip, UniqueIDs: true}.Open(j, tr, txt)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := readAll(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(docs), ","); got != "d1,17" {
		t.Errorf("ids %s, want d1,17", got)
	}
	want := []struct {
		err  error
		text string
	}{
		{ErrBadID, j + `:2: bad document id "d 2": contains white space`},
		{ErrBadID, j + `:3: bad document id "d3\x01": contains a control character`},
		{ErrDuplicateID, j + `:5: duplicate document id "d1": first at ` + j + ":1"},
		{ErrBadID, tr + `:1: bad document id "a\tb"`},
		{ErrDuplicateID, tr + `:2: duplicate document id "17": first at ` + j + ":4"},
		{ErrBadID, txt + `:1: bad document id "my doc.txt"`},
	}
	errs := r.SkipErrors()
	if len(errs) != len(want) {
		t.Fatalf("%d errors, want %d: %v", len(errs), len(want), errs)
	}
	for i, w := range want {
		if !errors.Is(errs[i], w.err) || !strings.HasPrefix(errs[i].Error(), w.text) {
			t.Errorf("error %d: %v, want %v starting %q", i, errs[i], w.err, w.text)
		}
	}
	// Without UniqueIDs a repeated id is not checked; a bad id always is.
	r, _ = Options{Mode: Skip}.Open(j)
	if docs, _ := readAll(t, r); len(docs) != 3 || r.Skipped() != 2 {
		t.Errorf("without UniqueIDs: %d docs, %d skipped", len(docs), r.Skipped())
	}
	// Fail stops at the first.
	r, _ = Options{UniqueIDs: true}.Open(j)
	if docs, err := readAll(t, r); len(docs) != 1 || !errors.Is(err, ErrBadID) {
		t.Errorf("fail: %d docs, %v", len(docs), err)
	}
}
