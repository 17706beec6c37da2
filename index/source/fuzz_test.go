package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// The JSON scanner accepts exactly the lines encoding/json accepts as an
// object and decodes their members to the same values; parseJSONDoc never
// panics.
func FuzzJSONLine(f *testing.F) {
	for _, s := range strings.Split(badJSONL, "\n") {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"id": 1e5, "text": "\ud83d\ude00 \ud800 \udc00x \u00e9 \" \\ \/ \b\f\n\r\t", "title": "T"}`,
		`{"a": [1, {"b": [true, false, null]}], "id": -0.5E+2, "text": ""}`,
		"{\"id\": \"\xff\xfe\", \"text\": \"\xc3\"}",
		` { } `, `{"":""}`, `[]`, `"x"`, `01`, `{"a":1,}`, `{"a" 1}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `{"a":tru}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		type kv struct {
			key  string
			val  any
			kind int
		}
		var got []kv
		err := scanObject(line, func(m *member) {
			e := kv{key: string(appendString(nil, m.key, m.keyEsc)), kind: m.kind}
			switch m.kind {
			case kString:
				e.val = string(appendString(nil, m.val, m.valEsc))
			case kNumber:
				e.val = json.Number(m.val)
			}
			got = append(got, e)
		})
		trimmed := bytes.TrimLeft(line, " \t\r\n")
		isObject := json.Valid(line) && len(trimmed) > 0 && trimmed[0] == '{'
		if (err == nil) != isObject {
			t.Fatalf("%q: scanObject error %v, encoding/json object: %v", line, err, isObject)
		}
		if err == nil {
			var want map[string]any
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			ours := map[string]kv{}
			for _, e := range got {
				ours[e.key] = e
			}
			if len(ours) != len(want) {
				t.Fatalf("%q: %d keys, encoding/json %d", line, len(ours), len(want))
			}
			for k, w := range want {
				o, ok := ours[k]
				if !ok {
					t.Fatalf("%q: key %q missing", line, k)
				}
				switch o.kind {
				case kString, kNumber:
					if !reflect.DeepEqual(o.val, w) {
						t.Fatalf("%q: key %q: %#v, encoding/json %#v", line, k, o.val, w)
					}
				case kNull:
					if w != nil {
						t.Fatalf("%q: key %q: null, encoding/json %#v", line, k, w)
					}
				}
			}
		}
		for _, mode := range []string{TitleAuto, TitlePrepend, TitleIgnore} {
			d, err := parseJSONDoc(line, mode)
			if err == nil && d.id == "" {
				t.Fatalf("%q: empty id accepted", line)
			}
		}
	})
}

// The TREC parser never panics, always makes progress, and returns only
// documents with a non-empty, trimmed id.
func FuzzTREC(f *testing.F) {
	f.Add([]byte(trecFixture))
	f.Add([]byte("<DOC>\n<DOCNO>A</DOCNO>\n<DOC><DOCNO>B</DOCNO></DOC>\n<DOC>"))
	f.Add([]byte("<doc x><docno>\n a \n</docno><dochdr>h</dochdr><</doc><DOC"))
	f.Fuzz(func(t *testing.T, data []byte) {
		max := 1 << 10
		if len(data) > 0 {
			max = 8 + int(data[0])
		}
		p := &trecParser{lr: newLineReader(bytes.NewReader(data), max), file: "f", max: max}
		for i := 0; i <= len(data)+2; i++ {
			d, err := p.next()
			if err == io.EOF {
				return
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Line < 1 {
					t.Fatalf("unexpected error %v", err)
				}
				continue
			}
			if d.ID == "" || strings.TrimSpace(d.ID) != d.ID || d.Line < 1 {
				t.Fatalf("bad doc %+v", d)
			}
		}
		t.Fatalf("no progress on %q", data)
	})
}
