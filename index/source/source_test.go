package source

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// collections is where CI keeps the test collections, relative to this
// package's directory.
const collections = "../../../shared/data/collections"

func writeFile(t testing.TB, path string, data string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(data))
		zw.Close()
		data = b.String()
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readAll reads every document; errs collects the errors Next returned
// (the reader stops at the first one unless the options skip).
func readAll(t testing.TB, r *Reader) (docs []*Doc, err error) {
	t.Helper()
	for i := 0; ; i++ {
		d, err := r.Next()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		docs = append(docs, d)
		if i > 1e7 {
			t.Fatal("runaway reader")
		}
	}
}

func mustRead(t testing.TB, o Options, paths ...string) []*Doc {
	t.Helper()
	r, err := o.Open(paths...)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	docs, err := readAll(t, r)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func ids(docs []*Doc) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}

func TestCranfield(t *testing.T) {
	dir := filepath.Join(collections, "cranfield")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no test collection: %v", err)
	}
	file := filepath.Join(dir, "docs.jsonl")
	// The directory holds docs.jsonl, a pretty-printed stats.json (which
	// must be ignored), qrels and queries.
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Files(); !reflect.DeepEqual(got, []string{file}) {
		t.Fatalf("files %q", got)
	}
	fi, _ := os.Stat(file)
	if r.TotalSize() != fi.Size() {
		t.Errorf("TotalSize %d, want %d", r.TotalSize(), fi.Size())
	}
	if n, err := TotalSize(dir); err != nil || n != fi.Size() {
		t.Errorf("TotalSize(dir) = %d, %v", n, err)
	}
	docs, err := readAll(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1400 {
		t.Fatalf("%d docs, want 1400", len(docs))
	}
	if r.BytesRead() != fi.Size() {
		t.Errorf("BytesRead %d, want %d", r.BytesRead(), fi.Size())
	}
	prepended := 0
	for i, d := range docs {
		if d.ID != strconv.Itoa(i+1) || d.Line != i+1 || d.File != file {
			t.Fatalf("doc %d: id %q line %d file %q", i, d.ID, d.Line, d.File)
		}
		title := d.Fields["title"]
		if len(d.Fields) > 1 || d.ID != "471" && d.ID != "995" && title == "" {
			t.Fatalf("doc %s: fields %q", d.ID, d.Fields)
		}
		if title != "" && bytes.HasPrefix(d.Text, []byte(title+"\n")) {
			prepended++
		}
	}
	if len(docs[470].Text) != 0 || len(docs[994].Text) != 0 {
		t.Errorf("docs 471 and 995 should be empty: %q %q", docs[470].Text, docs[994].Text)
	}
	if !bytes.HasPrefix(docs[0].Text, []byte("experimental investigation of the aerodynamics of a wing in a slipstream . an experimental study")) {
		t.Errorf("doc 1: %q", docs[0].Text[:100])
	}
	// The text starts with the title in all but doc 1369, whose text
	// misspells it ("oseens's"); only that one gets the title prepended.
	if prepended != 1 || !bytes.HasPrefix(docs[1368].Text, []byte("steady motion of a sphere., oseen's criticism and solution .\nsteady")) {
		t.Errorf("%d titles prepended, want 1 (doc 1369)", prepended)
	}
	pre := mustRead(t, Options{Title: TitlePrepend}, file)
	ign := mustRead(t, Options{Title: TitleIgnore}, file)
	for i := range docs {
		title := docs[i].Fields["title"]
		if title != "" && string(pre[i].Text) != title+"\n"+string(ign[i].Text) {
			t.Fatalf("doc %s: prepend mode text %q", docs[i].ID, pre[i].Text[:50])
		}
	}
}

// The other collections next to Cranfield read without errors.
func TestCollections(t *testing.T) {
	for name, n := range map[string]int{"cacm": 3204, "cisi": 1460, "lisa": 6003, "npl": 11426} {
		dir := filepath.Join(collections, name)
		if _, err := os.Stat(dir); err != nil {
			t.Skipf("no test collection: %v", err)
		}
		if docs := mustRead(t, Options{}, dir); len(docs) != n {
			t.Errorf("%s: %d docs, want %d", name, len(docs), n)
		}
	}
}

func TestJSONL(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "docs.jsonl"), "\xef\xbb\xbf"+`{"id": "a", "text": "alpha"}
{"id": 17, "contents": "number id", "year": 1999, "score": -1.5e3, "flag": true, "n": null, "o": {"x": 1}, "l": [1, "x"]}

   {"docid": "c", "body": "", "title": "", "lang": "en"}`+"\r\n"+`{"_id": "d", "text": "line1\nline2 \u00e9\ud83d\ude00 \"q\" \/ \\", "title": "The Title"}
{"id": "e", "docid": "e2", "_id": "e3", "text": "t", "contents": "c", "body": "b"}
{"id": "f", "text": "The  title: here! and more", "title": "the title here"}
{"id": "g", "text": null, "body": "from body", "id": null, "docid": "g"}
{"id": "h", "text": "x", "k": "first", "k": "second", "text": "y"}
{"\u0069d": "i", "te\u0078t": "escaped keys"}
{"id": "j", "text": "no newline at end"}`)
	docs := mustRead(t, Options{}, path)
	want := []struct {
		id, text string
		fields   map[string]string
		line     int
	}{
		{"a", "alpha", nil, 1},
		{"17", "number id", map[string]string{"year": "1999", "score": "-1.5e3"}, 2},
		{"c", "", map[string]string{"title": "", "lang": "en"}, 4},
		{"d", "The Title\nline1\nline2 é😀 \"q\" / \\", map[string]string{"title": "The Title"}, 5},
		{"e", "t", map[string]string{"docid": "e2", "_id": "e3", "contents": "c", "body": "b"}, 6},
		{"f", "The  title: here! and more", map[string]string{"title": "the title here"}, 7},
		{"g", "from body", nil, 8},
		{"h", "y", map[string]string{"k": "second"}, 9},
		{"i", "escaped keys", nil, 10},
		{"j", "no newline at end", nil, 11},
	}
	if len(docs) != len(want) {
		t.Fatalf("%d docs: %q", len(docs), ids(docs))
	}
	for i, w := range want {
		d := docs[i]
		if d.ID != w.id || string(d.Text) != w.text || d.Line != w.line || d.File != path || !reflect.DeepEqual(d.Fields, w.fields) {
			t.Errorf("doc %d: got %q %q %v line %d, want %q %q %v line %d", i, d.ID, d.Text, d.Fields, d.Line, w.id, w.text, w.fields, w.line)
		}
	}
	// Title modes.
	pre := mustRead(t, Options{Title: TitlePrepend}, path)
	if got := string(pre[5].Text); got != "the title here\nThe  title: here! and more" {
		t.Errorf("prepend: %q", got)
	}
	ign := mustRead(t, Options{Title: TitleIgnore}, path)
	if got := string(ign[3].Text); got != "line1\nline2 é😀 \"q\" / \\" {
		t.Errorf("ignore: %q", got)
	}
	// Docs do not share memory.
	docs[0].Text[0] = 'X'
	if again := mustRead(t, Options{}, path); string(again[0].Text) != "alpha" {
		t.Error("text aliased")
	}
}

func TestStartsWithTitle(t *testing.T) {
	for _, tc := range []struct {
		text, title string
		want        bool
	}{
		{"Hello World and more", "hello world", true},
		{"mach numbers 3. 5 and 8 .5 . tests", "mach numbers 3 .5 and 8 .5 .", true},
		{"oseens's criticism", "oseen's criticism", false},
		{"short", "short but longer", false},
		{"anything", "...", true},
		{"Ελληνικά κείμενο", "Ελληνικά", true},
	} {
		if got := startsWithTitle([]byte(tc.text), []byte(tc.title)); got != tc.want {
			t.Errorf("startsWithTitle(%q, %q) = %v", tc.text, tc.title, got)
		}
	}
}

const badJSONL = `{"id": "1", "text": "one"}
{"id": "2", "text": "two"
{"text": "no id"}
{"id": "4"}
{"id": "5", "text": "five"}
["not", "an", "object"]
{"id": true, "text": "x"}
{"id": "8", "text": 8}
{"id": "", "text": "x"}
{"id": "10", "text": "ten"} trailing
{"id": "11", "text": "bad \x escape"}
{"id": "12", "text": "ctrl ` + "\x01" + `"}
{"id": "13", "text": "thirteen"}
`

var badJSONLErrors = []string{
	`:2: invalid JSON: unexpected end of line at column 26`,
	`:3: missing "id"`,
	`:4: missing text`,
	`:6: invalid JSON: not an object`,
	`:7: "id" must be a string or a number`,
	`:8: "text" must be a string`,
	`:9: missing "id" (empty string)`,
	`:10: invalid JSON: unexpected data after the object at column 29`,
	`:11: invalid JSON: invalid escape \x at column 27`,
	`:12: invalid JSON: control character in string at column 28`,
}

func TestJSONLErrors(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "cranfield", "docs.jsonl"), badJSONL)

	// Fail mode: the docs before the error, then the error, sticky.
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := readAll(t, r)
	if len(docs) != 1 || docs[0].ID != "1" {
		t.Errorf("docs before the error: %q", ids(docs))
	}
	if err == nil || err.Error() != path+badJSONLErrors[0] {
		t.Fatalf("error %v, want %s", err, path+badJSONLErrors[0])
	}
	var se *Error
	if !errors.As(err, &se) || se.File != path || se.Line != 2 || !errors.Is(err, ErrInvalidJSON) {
		t.Errorf("error %#v", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Errorf("not sticky: %v", err2)
	}
	r.Close()

	// Skip mode: every good doc, every error counted.
	r, err = Options{Mode: Skip}.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	docs, err = readAll(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(docs), ","); got != "1,5,13" {
		t.Errorf("skip mode docs %s", got)
	}
	if r.Skipped() != int64(len(badJSONLErrors)) {
		t.Errorf("Skipped() = %d, want %d", r.Skipped(), len(badJSONLErrors))
	}
	for i, e := range r.SkipErrors() {
		if want := path + badJSONLErrors[i]; e.Error() != want {
			t.Errorf("error %d:\n got %s\nwant %s", i, e, want)
		}
	}
	for i, target := range []error{ErrInvalidJSON, ErrMissingID, ErrMissingText} {
		if !errors.Is(r.SkipErrors()[i], target) {
			t.Errorf("error %d does not wrap %v", i, target)
		}
	}

	// OnError decides: skip two errors, then stop with a custom error.
	var seen []string
	stop := errors.New("too many errors")
	r, _ = Options{OnError: func(err error) error {
		seen = append(seen, err.Error())
		if len(seen) > 2 {
			return stop
		}
		return nil
	}}.Open(path)
	docs, err = readAll(t, r)
	if err != stop || len(seen) != 3 || strings.Join(ids(docs), ",") != "1" || r.Skipped() != 2 {
		t.Errorf("OnError: err %v, seen %q, docs %q, skipped %d", err, seen, ids(docs), r.Skipped())
	}
}

func TestLongLines(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", 300<<10) // longer than the read buffer
	path := writeFile(t, filepath.Join(dir, "docs.jsonl"),
		`{"id": "1", "text": "short"}`+"\n"+
			`{"id": "2", "text": "`+big+`"}`+"\n"+
			`{"id": "3", "text": "`+big[:1000]+`"}`+"\n"+
			`{"id": "4", "text": "after"}`+"\n"+
			`{"id": "5", "text": "`+big+`"}`)

	docs := mustRead(t, Options{}, path)
	if len(docs) != 5 || len(docs[1].Text) != len(big) || len(docs[4].Text) != len(big) {
		t.Fatalf("long lines under the limit: %d docs", len(docs))
	}

	r, _ := Options{Mode: Skip, MaxRecordSize: 200 << 10}.Open(path)
	docs, err := readAll(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(docs), ","); got != "1,3,4" {
		t.Errorf("docs %s", got)
	}
	errs := r.SkipErrors()
	if len(errs) != 2 || errs[0].Error() != path+":2: record too large: line longer than 204800 bytes" ||
		errs[1].Error() != path+":5: record too large: line longer than 204800 bytes" || !errors.Is(errs[0], ErrTooLarge) {
		t.Errorf("errors %v", errs)
	}

	// A limit smaller than the read buffer.
	r, _ = Options{Mode: Skip, MaxRecordSize: 100}.Open(path)
	docs, _ = readAll(t, r)
	if got := strings.Join(ids(docs), ","); got != "1,4" || r.Skipped() != 3 {
		t.Errorf("docs %s, skipped %d", got, r.Skipped())
	}
}

const trecFixture = `<DOC>
<DOCNO> FT911-1 </DOCNO>
<PROFILE>_AN-BEOAPAAAFT</PROFILE>
<HEADLINE>
FT  01 APR 91 / Headline &amp; more
</HEADLINE>
<TEXT>
First paragraph.
<P>Second <b>bold</b> paragraph &amp; a < b.</P>
</TEXT>
</DOC>
junk between documents is ignored
<doc>
<docno>lower-case</docno>
<text>lower</text>
</doc>
<DOC><DOCNO>ONE-LINE</DOCNO><TEXT>all on one line</TEXT></DOC><DOC>
<DOCNO>SAME-LINE-START</DOCNO>
text
</DOC>
<DOC type="web">
<DOCNO>WEB-1</DOCNO>
<DOCHDR>
http://example.com/
HTTP/1.1 200 OK
</DOCHDR>
<html><body>web page</body></html>
</DOC>
`

func squash(b []byte) string { return strings.Join(strings.Fields(string(b)), " ") }

func TestTREC(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "fbis.trec"), trecFixture)
	docs := mustRead(t, Options{}, path)
	want := []struct {
		id, text string
		line     int
	}{
		{"FT911-1", "_AN-BEOAPAAAFT FT 01 APR 91 / Headline &amp; more First paragraph. Second bold paragraph &amp; a < b.", 1},
		{"lower-case", "lower", 13},
		{"ONE-LINE", "all on one line", 17},
		{"SAME-LINE-START", "text", 17},
		{"WEB-1", "web page", 21},
	}
	if len(docs) != len(want) {
		t.Fatalf("%d docs: %q", len(docs), ids(docs))
	}
	for i, w := range want {
		if d := docs[i]; d.ID != w.id || squash(d.Text) != w.text || d.Line != w.line || d.Fields != nil {
			t.Errorf("doc %d: got %q %q line %d, want %q %q line %d", i, d.ID, squash(d.Text), d.Line, w.id, w.text, w.line)
		}
	}
	// .sgml and .xml files are TREC when they contain <DOC>.
	sg := writeFile(t, filepath.Join(dir, "x.sgml"), trecFixture)
	if docs := mustRead(t, Options{}, sg); len(docs) != 5 {
		t.Errorf("sgml: %d docs", len(docs))
	}
}

func TestTRECErrors(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "bad.trec"), `<DOC>
<DOCNO>A</DOCNO>
ok
</DOC>
<DOC>
<TEXT>no docno</TEXT>
</DOC>
<DOC>
<DOCNO>   </DOCNO>
</DOC>
<DOC>
<DOCNO>UNTERMINATED</DOCNO>
<DOC>
<DOCNO>B</DOCNO>
</DOC>
<DOC>
<DOCNO>BIG</DOCNO>
`+strings.Repeat("word ", 100)+`
</DOC>
<DOC>
<DOCNO>C</DOCNO>
</DOC>
<DOC>
<DOCNO>EOF</DOCNO>
`)
	r, _ := Options{Mode: Skip, MaxRecordSize: 200}.Open(path)
	docs, err := readAll(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(docs), ","); got != "A,B,C" {
		t.Errorf("docs %s", got)
	}
	wantErrs := []string{
		`:5: missing "id": missing <DOCNO>`,
		`:8: missing "id": empty <DOCNO>`,
		`:11: malformed document: unterminated <DOC> (another <DOC> begins at line 13)`,
		`:16: record too large: document longer than 200 bytes`,
		`:23: malformed document: unterminated <DOC>`,
	}
	errs := r.SkipErrors()
	if len(errs) != len(wantErrs) {
		t.Fatalf("errors %v", errs)
	}
	for i, e := range errs {
		if e.Error() != path+wantErrs[i] {
			t.Errorf("error %d:\n got %s\nwant %s", i, e, path+wantErrs[i])
		}
	}
	// Fail mode stops at the first.
	r, _ = Open(path)
	docs, err = readAll(t, r)
	if len(docs) != 1 || err == nil || err.Error() != path+wantErrs[0] {
		t.Errorf("fail mode: %q %v", ids(docs), err)
	}
}

func TestTxtDirectory(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "corpus")
	writeFile(t, filepath.Join(root, "b", "z.txt"), "zed")
	writeFile(t, filepath.Join(root, "b", "a.txt"), "\xef\xbb\xbfbee a")
	writeFile(t, filepath.Join(root, "a.txt"), "first")
	writeFile(t, filepath.Join(root, "c.txt.gz"), "compressed text")
	writeFile(t, filepath.Join(root, ".hidden.txt"), "hidden")
	writeFile(t, filepath.Join(root, ".git", "x.txt"), "hidden dir")
	writeFile(t, filepath.Join(root, "README"), "no extension: ignored")
	writeFile(t, filepath.Join(root, "notes.md"), "ignored")
	writeFile(t, filepath.Join(root, "page.xml"), "<html>not TREC: ignored</html>")
	writeFile(t, filepath.Join(root, "empty.txt"), "")
	docs := mustRead(t, Options{}, root)
	got := make([]string, len(docs))
	for i, d := range docs {
		got[i] = d.ID + "=" + string(d.Text)
	}
	want := []string{"a.txt=first", "b/a.txt=bee a", "b/z.txt=zed", "c.txt=compressed text", "empty.txt="}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// A symbolic link to the directory is followed.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(root, link); err == nil {
		docs := mustRead(t, Options{}, link)
		if len(docs) != len(want) || docs[1].ID != "b/a.txt" || docs[1].File != filepath.Join(link, "b", "a.txt") {
			t.Errorf("symlinked dir: %q", ids(docs))
		}
	}
	// A file named directly: the base name is the id.
	if docs := mustRead(t, Options{}, filepath.Join(root, "b", "z.txt")); len(docs) != 1 || docs[0].ID != "z.txt" {
		t.Errorf("direct file: %q", ids(docs))
	}
	// Too large.
	r, _ := Options{Mode: Skip, MaxRecordSize: 4}.Open(root)
	docs, _ = readAll(t, r)
	if len(docs) != 2 || r.Skipped() != 3 || r.SkipErrors()[0].Error() != filepath.Join(root, "a.txt")+": record too large: file longer than 4 bytes" {
		t.Errorf("too large: %q %v", ids(docs), r.SkipErrors())
	}
}

func TestGzip(t *testing.T) {
	dir := t.TempDir()
	plain := writeFile(t, filepath.Join(dir, "plain", "docs.jsonl"), badJSONL)
	gz := writeFile(t, filepath.Join(dir, "gz", "docs.jsonl.gz"), badJSONL)
	trec := writeFile(t, filepath.Join(dir, "gz", "t.trec.gz"), trecFixture)
	// gzip detected by its magic number, whatever the name.
	magic := filepath.Join(dir, "magic.jsonl")
	data, _ := os.ReadFile(gz)
	writeFile(t, magic, string(data))

	a := mustRead(t, Options{Mode: Skip}, plain)
	for _, p := range []string{gz, magic} {
		r, err := Options{Mode: Skip}.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := readAll(t, r)
		if err != nil || len(a) != len(b) || r.Skipped() != int64(len(badJSONLErrors)) {
			t.Fatalf("%s: %d docs, %v", p, len(b), err)
		}
		for i := range a {
			if a[i].ID != b[i].ID || !bytes.Equal(a[i].Text, b[i].Text) || a[i].Line != b[i].Line {
				t.Errorf("doc %d differs", i)
			}
		}
		// Progress counts compressed bytes.
		if fi, _ := os.Stat(p); r.BytesRead() != fi.Size() || r.TotalSize() != fi.Size() {
			t.Errorf("BytesRead %d, TotalSize %d, size %d", r.BytesRead(), r.TotalSize(), fi.Size())
		}
		if msg := r.SkipErrors()[0].Error(); msg != p+badJSONLErrors[0] {
			t.Errorf("error names %s", msg)
		}
	}
	if docs := mustRead(t, Options{}, trec); len(docs) != 5 {
		t.Errorf("trec.gz: %d docs", len(docs))
	}

	// A truncated gzip file: the docs before the damage, then an error
	// naming the file; in skip mode the next file is read.
	var lines strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&lines, `{"id": "%d", "text": "document number %d %s"}`+"\n", i, i, strconv.Itoa(i*7919))
	}
	bad := writeFile(t, filepath.Join(dir, "trunc", "a.jsonl.gz"), lines.String())
	data, _ = os.ReadFile(bad)
	os.WriteFile(bad, data[:len(data)/2], 0o644)
	writeFile(t, filepath.Join(dir, "trunc", "b.jsonl"), `{"id": "next", "text": "file"}`)
	r, _ := Open(filepath.Join(dir, "trunc"))
	docs, err := readAll(t, r)
	if err == nil || !strings.HasPrefix(err.Error(), bad+":") || !strings.Contains(err.Error(), "unexpected EOF") || len(docs) < 100 {
		t.Errorf("truncated: %d docs, %v", len(docs), err)
	}
	for i, d := range docs {
		if d.ID != strconv.Itoa(i) {
			t.Fatalf("doc %d has id %s", i, d.ID)
		}
	}
	r, _ = Options{Mode: Skip}.Open(filepath.Join(dir, "trunc"))
	docs2, err := readAll(t, r)
	if err != nil || len(docs2) != len(docs)+1 || docs2[len(docs2)-1].ID != "next" || r.Skipped() != 1 {
		t.Errorf("skip truncated: %d docs, %v", len(docs2), err)
	}
	// Not gzip at all despite the name.
	notgz := writeFile(t, filepath.Join(dir, "fake", "x.jsonl"), `{"id": "1", "text": "not gzip"}`)
	os.Rename(notgz, notgz+".gz")
	r, _ = Open(notgz + ".gz")
	if _, err := r.Next(); err == nil || err.Error() != notgz+".gz: gzip: invalid header" {
		t.Errorf("fake gz: %v", err)
	}
}

func TestWalkAndFormats(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "c", "stats.json"), "{\n \"docs\": 2\n}\n")
	writeFile(t, filepath.Join(dir, "c", "more.json"), `{"id": "j1", "text": "json lines in a .json file"}`)
	writeFile(t, filepath.Join(dir, "c", "a.ndjson"), `{"id": "n1", "text": "ndjson"}`)
	writeFile(t, filepath.Join(dir, "c", "qrels"), "1 0 1 1\n")
	writeFile(t, filepath.Join(dir, "c", "t.xml.gz"), trecFixture)
	docs := mustRead(t, Options{}, filepath.Join(dir, "c"))
	if got := strings.Join(ids(docs), ","); got != "n1,j1,FT911-1,lower-case,ONE-LINE,SAME-LINE-START,WEB-1" {
		t.Errorf("walk: %s", got)
	}
	// Several paths, in the given order.
	one := writeFile(t, filepath.Join(dir, "one.jsonl"), `{"id": "one", "text": "x"}`)
	docs = mustRead(t, Options{}, one, filepath.Join(dir, "c", "a.ndjson"), one)
	if got := strings.Join(ids(docs), ","); got != "one,n1,one" {
		t.Errorf("paths: %s", got)
	}
	// A forced format applies to every file.
	weird := writeFile(t, filepath.Join(dir, "f", "docs.data"), `{"id": "w", "text": "x"}`)
	if _, err := Open(weird); err == nil || !strings.Contains(err.Error(), "cannot detect the format") {
		t.Errorf("unknown extension: %v", err)
	}
	if docs := mustRead(t, Options{Format: FormatJSONL}, filepath.Join(dir, "f")); len(docs) != 1 || docs[0].ID != "w" {
		t.Errorf("forced: %q", ids(docs))
	}
	if docs := mustRead(t, Options{Format: FormatTxt}, weird); len(docs) != 1 || docs[0].ID != "docs.data" {
		t.Errorf("forced txt: %q", ids(docs))
	}
	// A pretty-printed JSON file named explicitly is read, and fails.
	r, _ := Open(filepath.Join(dir, "c", "stats.json"))
	if _, err := r.Next(); err == nil || !strings.HasSuffix(err.Error(), "stats.json:1: invalid JSON: unexpected end of line at column 2") {
		t.Errorf("stats.json: %v", err)
	}
	// A JSON array.
	arr := writeFile(t, filepath.Join(dir, "arr.json"), `[{"id": "1", "text": "x"}]`)
	r, _ = Open(arr)
	if _, err := r.Next(); err == nil || err.Error() != arr+":1: invalid JSON: the file is a JSON array; expected JSON Lines (one object per line)" {
		t.Errorf("array: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "c", "qrels")); err == nil {
		t.Error("qrels accepted")
	}
	if _, err := Open(filepath.Join(dir, "c", "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing: %v", err)
	}
	os.Mkdir(filepath.Join(dir, "empty"), 0o755)
	if _, err := Open(filepath.Join(dir, "empty")); err == nil || !strings.Contains(err.Error(), "no document files") {
		t.Errorf("empty dir: %v", err)
	}
	for _, o := range []Options{{Format: "csv"}, {Title: "both"}, {Mode: 7}, {MaxRecordSize: -1}} {
		if _, err := o.Open(one); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if err := (Options{Format: "csv"}).Validate(); err == nil || err.Error() != `source: unknown format "csv" (allowed: "auto", "jsonl", "trec", "txt")` {
		t.Errorf("Validate: %v", err)
	}
	// Close.
	r, _ = Open(one)
	r.Close()
	if _, err := r.Next(); err == nil || err == io.EOF {
		t.Errorf("Next after Close: %v", err)
	}
}

func BenchmarkJSONL(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	words := strings.Fields("the quick brown fox jumps over the lazy dog experimental investigation of the aerodynamics of a wing in a slipstream")
	for i := 0; sb.Len() < 16<<20; i++ {
		fmt.Fprintf(&sb, `{"id": "doc-%d", "title": "title %d", "url": "http://example.com/%d", "text": "`, i, i, i)
		for j := 0; j < 150; j++ {
			sb.WriteString(words[(i+j)%len(words)])
			if j%40 == 39 {
				sb.WriteString(`\n`) // some escapes
			} else {
				sb.WriteByte(' ')
			}
		}
		sb.WriteString("\"}\n")
	}
	path := writeFile(b, filepath.Join(dir, "docs.jsonl"), sb.String())
	b.SetBytes(int64(sb.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		r.Close()
		b.ReportMetric(float64(n), "docs")
	}
}
