package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Errors wrapped by *Error for malformed documents; test with errors.Is.
var (
	ErrInvalidJSON = errors.New("invalid JSON")
	ErrMissingID   = errors.New(`missing "id"`)
	ErrMissingText = errors.New("missing text")
	ErrTooLarge    = errors.New("record too large")
	ErrMalformed   = errors.New("malformed document")
	ErrBadID       = errors.New("bad document id")
	ErrDuplicateID = errors.New("duplicate document id")
	// ErrCorruptFile is a damaged compressed file: an error of the file,
	// not of one document (see the package documentation).
	ErrCorruptFile = errors.New("damaged compressed file")
)

// Field names recognized in JSON documents, in order of precedence.
var (
	idKeys   = []string{"id", "docid", "_id"}
	textKeys = []string{"text", "contents", "body"}
)

// jsonDoc is the result of parsing one JSON line.
type jsonDoc struct {
	id     string
	text   []byte
	fields map[string]string
}

// parseJSONDoc parses one JSON Lines record (see the package
// documentation for the rules).
// The returned values do not alias line.
func parseJSONDoc(line []byte, title string) (d jsonDoc, err error) {
	var scratch []member
	return parseJSONDocScratch(line, title, &scratch)
}

// parseJSONDocScratch is parseJSONDoc with a reusable buffer for the
// members.
func parseJSONDocScratch(line []byte, title string, scratch *[]member) (d jsonDoc, err error) {
	// Collect the members, then resolve them as encoding/json would
	// decode the object into a map: of duplicate keys the last wins.
	var titleM member
	members := (*scratch)[:0]
	defer func() {
		clear(members) // do not keep the line reachable
		*scratch = members[:0]
	}()
	err = scanObject(line, func(m *member) {
		if m.keyEsc { // rare: decode the key into its own slice
			m.key = appendString(nil, m.key, true)
			m.keyEsc = false
		}
		members = append(members, *m)
	})
	if err != nil {
		if err == errNotObject {
			return d, fmt.Errorf("%w: not an object", ErrInvalidJSON)
		}
		return d, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	// pick returns the member of the first of keys whose last occurrence
	// is not null, or nil.
	pick := func(keys []string) *member {
		for _, k := range keys {
			var found *member
			for i := range members {
				if string(members[i].key) == k {
					found = &members[i]
				}
			}
			if found != nil && found.kind != kNull {
				return found
			}
		}
		return nil
	}
	idM, textM := pick(idKeys), pick(textKeys)
	switch {
	case idM == nil:
		return d, ErrMissingID
	case idM.kind != kString && idM.kind != kNumber:
		return d, fmt.Errorf("%q must be a string or a number", idM.key)
	case textM == nil:
		return d, ErrMissingText
	case textM.kind != kString:
		return d, fmt.Errorf("%q must be a string", textM.key)
	}
	d.id = string(appendString(nil, idM.val, idM.valEsc))
	if d.id == "" {
		return d, fmt.Errorf("%w (empty string)", ErrMissingID)
	}

	// Stored fields: the other members with a string or number value.
	for i := range members {
		m := &members[i]
		k := string(m.key) // no allocation in the comparisons
		if k == string(idM.key) || k == string(textM.key) {
			continue
		}
		if k == "title" {
			titleM = *m
		}
		if m.kind != kString && m.kind != kNumber {
			if d.fields != nil {
				delete(d.fields, k) // a later non-string duplicate
			}
			continue
		}
		if d.fields == nil {
			d.fields = make(map[string]string, len(members))
		}
		d.fields[k] = string(appendString(nil, m.val, m.valEsc))
	}
	if len(d.fields) == 0 {
		d.fields = nil
	}
	if titleM.kind != kString {
		titleM = member{}
	}

	if len(titleM.val) == 0 || title == TitleIgnore {
		d.text = appendString(make([]byte, 0, len(textM.val)), textM.val, textM.valEsc)
		return d, nil
	}
	// Decode the text after room for the title and a line feed (a decoded
	// string is never longer than its raw form), then fill in the title or
	// drop the room.
	t := d.fields["title"]
	off := len(titleM.val) + 1
	buf := appendString(make([]byte, off, off+len(textM.val)), textM.val, textM.valEsc)
	if title == TitlePrepend || !startsWithTitle(buf[off:], []byte(t)) {
		off -= len(t) + 1
		copy(buf[off:], t)
		buf[off+len(t)] = '\n'
	}
	d.text = buf[off:]
	return d, nil
}

// startsWithTitle reports whether text begins with title, comparing only
// ASCII letters and digits (case-insensitively) and non-ASCII bytes, and
// ignoring all other bytes (whitespace, punctuation). It is deliberately
// lenient: its purpose is not to index a title twice when the text already
// repeats it.
func startsWithTitle(text, title []byte) bool {
	i := 0
	for _, c := range title {
		if c = fold(c); c == 0 {
			continue
		}
		for i < len(text) && fold(text[i]) == 0 {
			i++
		}
		if i >= len(text) || fold(text[i]) != c {
			return false
		}
		i++
	}
	return true
}

// fold returns c lower-cased if it is an ASCII letter or digit or a
// non-ASCII byte, and 0 for other ASCII bytes.
func fold(c byte) byte {
	switch {
	case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c >= 0x80:
		return c
	case 'A' <= c && c <= 'Z':
		return c + ('a' - 'A')
	}
	return 0
}

// jsonlParser reads JSON Lines.
type jsonlParser struct {
	lr      *lineReader
	file    string
	title   string
	first   bool
	members []member
}

func (p *jsonlParser) next() (*Doc, error) {
	for {
		line, err := p.lr.next()
		if err != nil {
			var tl *lineTooLongError
			if errors.As(err, &tl) {
				return nil, &Error{File: p.file, Line: p.lr.n, Err: fmt.Errorf("%w: line longer than %d bytes", ErrTooLarge, tl.max)}
			}
			return nil, err
		}
		if p.first {
			p.first = false
			line = bytes.TrimPrefix(line, utf8BOM)
			if t := bytes.TrimLeft(line, " \t\r"); len(t) > 0 && t[0] == '[' {
				return nil, fmt.Errorf("%w: the file is a JSON array; expected JSON Lines (one object per line)", ErrInvalidJSON)
			}
		}
		if isBlank(line) {
			continue
		}
		d, err := parseJSONDocScratch(line, p.title, &p.members)
		if err != nil {
			return nil, &Error{File: p.file, Line: p.lr.n, Err: err}
		}
		return &Doc{ID: d.id, Text: d.text, Fields: d.fields, File: p.file, Line: p.lr.n}, nil
	}
}

var utf8BOM = []byte("\xef\xbb\xbf")

func isBlank(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return false
		}
	}
	return true
}

// sniffJSONL reports whether the start of a .json file looks like JSON
// Lines: its first non-blank line is a complete JSON object.
func sniffJSONL(r io.Reader) bool {
	lr := newLineReader(r, 1<<20)
	for {
		line, err := lr.next()
		if err != nil {
			return false
		}
		line = bytes.TrimPrefix(line, utf8BOM)
		if isBlank(line) {
			continue
		}
		return scanObject(line, func(*member) {}) == nil
	}
}
