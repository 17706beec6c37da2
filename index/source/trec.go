package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// trecParser reads TREC SGML: a sequence of
//
//	<DOC>
//	<DOCNO> id </DOCNO>
//	... text, possibly inside <TEXT>, <HEADLINE>, ... elements ...
//	</DOC>
//
// Tag names are matched case-insensitively and may carry attributes. The
// id is the content of the first DOCNO element, trimmed. The text is the
// rest of the document with the DOCNO element and any DOCHDR element (the
// HTTP headers of TREC web collections) removed and every tag replaced by a
// space; entities are left as they are. Anything outside DOC elements is
// ignored. A document's line is the line of its <DOC> tag.
type trecParser struct {
	lr    *lineReader
	file  string
	max   int
	rest  []byte // unprocessed part of the current line
	inDoc bool
	start int    // line of the current <DOC>
	buf   []byte // content of the current document
	big   bool   // the current document exceeds max
}

func (p *trecParser) docErr(line int, err error) error {
	return &Error{File: p.file, Line: line, Err: err}
}

func (p *trecParser) add(b []byte) {
	if p.big {
		return
	}
	if len(p.buf)+len(b) > p.max {
		p.big = true
		p.buf = p.buf[:0]
		return
	}
	p.buf = append(p.buf, b...)
}

func (p *trecParser) next() (*Doc, error) {
	for {
		if len(p.rest) == 0 {
			line, err := p.lr.next()
			if err != nil {
				var tl *lineTooLongError
				switch {
				case errors.As(err, &tl):
					if p.inDoc {
						p.big = true
						continue
					}
					return nil, p.docErr(p.lr.n, fmt.Errorf("%w: line longer than %d bytes", ErrTooLarge, tl.max))
				case err == io.EOF && p.inDoc:
					p.inDoc = false
					return nil, p.docErr(p.start, fmt.Errorf("%w: unterminated <DOC>", ErrMalformed))
				}
				return nil, err
			}
			if p.lr.n == 1 {
				line = bytes.TrimPrefix(line, utf8BOM)
			}
			if len(line) == 0 {
				if p.inDoc {
					p.add([]byte{'\n'})
				}
				continue
			}
			p.rest = line
		}
		if !p.inDoc {
			i, j := findTag(p.rest, "doc", false)
			if i < 0 {
				p.rest = nil
				continue
			}
			p.inDoc, p.start, p.big, p.buf = true, p.lr.n, false, p.buf[:0]
			p.rest = p.rest[j:]
			continue
		}
		ci, cj := findTag(p.rest, "doc", true)
		oi, _ := findTag(p.rest, "doc", false)
		if oi >= 0 && (ci < 0 || oi < ci) {
			// A new <DOC> before </DOC>.
			p.rest = p.rest[oi:]
			p.inDoc = false
			return nil, p.docErr(p.start, fmt.Errorf("%w: unterminated <DOC> (another <DOC> begins at line %d)", ErrMalformed, p.lr.n))
		}
		if ci < 0 {
			p.add(p.rest)
			p.add([]byte{'\n'})
			p.rest = nil
			continue
		}
		p.add(p.rest[:ci])
		p.rest = p.rest[cj:]
		p.inDoc = false
		return p.finish()
	}
}

// finish builds the Doc from the content of a complete document.
func (p *trecParser) finish() (*Doc, error) {
	if p.big {
		return nil, p.docErr(p.start, fmt.Errorf("%w: document longer than %d bytes", ErrTooLarge, p.max))
	}
	id, text, err := parseTRECDoc(p.buf)
	if err != nil {
		return nil, p.docErr(p.start, err)
	}
	return &Doc{ID: id, Text: text, File: p.file, Line: p.start}, nil
}

// parseTRECDoc splits the content of a DOC element into id and text (a new
// slice).
func parseTRECDoc(b []byte) (id string, text []byte, err error) {
	s, e, inner, ok := element(b, "docno")
	if !ok {
		return "", nil, fmt.Errorf("%w: missing <DOCNO>", ErrMissingID)
	}
	idb := bytes.TrimSpace(stripTags(nil, inner))
	if len(idb) == 0 {
		return "", nil, fmt.Errorf("%w: empty <DOCNO>", ErrMissingID)
	}
	text = make([]byte, 0, len(b)-(e-s)+1)
	rest := b[e:]
	text = stripTags(text, b[:s])
	text = append(text, ' ')
	if hs, he, _, ok := element(rest, "dochdr"); ok {
		text = stripTags(text, rest[:hs])
		text = append(text, ' ')
		rest = rest[he:]
	}
	text = stripTags(text, rest)
	return string(idb), text, nil
}

// element finds the first <name ...>...</name> element of b and returns
// its extent [s, e) and its content.
func element(b []byte, name string) (s, e int, inner []byte, ok bool) {
	s, o := findTag(b, name, false)
	if s < 0 {
		return 0, 0, nil, false
	}
	cs, ce := findTag(b[o:], name, true)
	if cs < 0 {
		return 0, 0, nil, false
	}
	return s, o + ce, b[o : o+cs], true
}

// findTag finds the first tag <name> (or </name> when closing), name
// matched case-insensitively and followed by '>' or by whitespace and
// attributes up to '>', and returns the offsets of its '<' and just after
// its '>', or -1, -1.
func findTag(b []byte, name string, closing bool) (int, int) {
	for off := 0; ; {
		i := bytes.IndexByte(b[off:], '<')
		if i < 0 {
			return -1, -1
		}
		i += off
		off = i + 1
		j := i + 1
		if closing {
			if j >= len(b) || b[j] != '/' {
				continue
			}
			j++
		}
		if len(b)-j < len(name) || !equalFold(b[j:j+len(name)], name) {
			continue
		}
		j += len(name)
		if j >= len(b) {
			return -1, -1
		}
		switch b[j] {
		case '>':
			return i, j + 1
		case ' ', '\t', '\r', '\n':
			k := bytes.IndexByte(b[j:], '>')
			if k < 0 {
				return -1, -1
			}
			return i, j + k + 1
		}
	}
}

// equalFold compares b with the lower-case ASCII name, ignoring ASCII case.
func equalFold(b []byte, name string) bool {
	for i := 0; i < len(name); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// stripTags appends b to dst with every tag (a '<' followed by a letter,
// '/', '!' or '?', up to the next '>') replaced by a space.
func stripTags(dst, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, '<')
		if i < 0 || i+1 >= len(b) {
			return append(dst, b...)
		}
		c := b[i+1]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '/' || c == '!' || c == '?') {
			dst = append(dst, b[:i+1]...)
			b = b[i+1:]
			continue
		}
		j := bytes.IndexByte(b[i:], '>')
		if j < 0 {
			return append(dst, b...)
		}
		dst = append(dst, b[:i]...)
		dst = append(dst, ' ')
		b = b[i+j+1:]
	}
}

// sniffTREC reports whether the start of a file contains a <DOC> tag.
func sniffTREC(r io.Reader) bool {
	buf := make([]byte, 64<<10)
	n, _ := io.ReadFull(r, buf)
	i, _ := findTag(buf[:n], "doc", false)
	return i >= 0
}
