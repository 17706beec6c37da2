package source

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// A small validating scanner for one JSON object per line. It accepts
// exactly the texts encoding/json accepts (RFC 8259, nesting depth at most
// 10000) and decodes strings exactly as encoding/json does (invalid UTF-8
// and lone surrogates become U+FFFD), which FuzzJSONLine checks against
// encoding/json. It is several times faster than decoding the line with
// encoding/json into a map, and copies only the values it keeps.

const maxDepth = 10000

// value kinds
const (
	kString = iota
	kNumber
	kNull
	kOther // true, false, object, array
)

type jsonScanner struct {
	b []byte
	i int
}

// syntaxError describes invalid JSON at a byte offset of the line.
type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at column %d", e.msg, e.off+1) }

func (s *jsonScanner) fail(msg string) error { return &syntaxError{msg, s.i} }

func (s *jsonScanner) unexpected() error {
	if s.i >= len(s.b) {
		return s.fail("unexpected end of line")
	}
	c := s.b[s.i]
	if c >= 0x20 && c < 0x7f {
		return s.fail(fmt.Sprintf("unexpected character %q", c))
	}
	return s.fail(fmt.Sprintf("unexpected byte 0x%02x", c))
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// strSpecial marks the bytes that end the fast loop over a string's
// contents: the quote, the backslash and control characters.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str scans a string starting at the opening quote s.b[s.i] and returns
// the bounds of its contents.
func (s *jsonScanner) str() (start, end int, err error) {
	s.i++
	start = s.i
	b := s.b
	for {
		i := s.i
		// Skip 8 bytes at a time while none is a quote, a backslash or a
		// control character (SWAR tests for a zero byte / a byte < 0x20).
		const lo, hi = 0x0101010101010101, 0x8080808080808080
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q := x ^ ('"' * lo)
			e := x ^ ('\\' * lo)
			if ((x-0x20*lo)&^x|(q-lo)&^q|(e-lo)&^e)&hi != 0 {
				break
			}
			i += 8
		}
		for i < len(b) && !strSpecial[b[i]] {
			i++
		}
		s.i = i
		if i >= len(b) {
			return 0, 0, s.fail("unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			s.i++
			return start, i, nil
		case c == '\\':
			if i+1 >= len(b) {
				s.i = i + 1
				return 0, 0, s.fail("unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i = i + 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= len(b) || hexVal(b[k]) < 0 {
						s.i = k
						return 0, 0, s.fail("invalid \\u escape")
					}
				}
				s.i = i + 6
			default:
				if c := b[i+1]; c > 0x20 && c < 0x7f {
					return 0, 0, s.fail(fmt.Sprintf("invalid escape \\%c", c))
				}
				return 0, 0, s.fail(fmt.Sprintf("invalid escape: byte 0x%02x after \\", b[i+1]))
			}
		default:
			return 0, 0, s.fail("control character in string")
		}
	}
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

func (s *jsonScanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonScanner) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if !s.digits() {
		return s.unexpected()
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return s.unexpected()
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return s.unexpected()
		}
	}
	return nil
}

func (s *jsonScanner) literal(lit string) error {
	for k := 0; k < len(lit); k++ {
		if s.i >= len(s.b) || s.b[s.i] != lit[k] {
			return s.unexpected()
		}
		s.i++
	}
	return nil
}

// value scans one value starting at s.b[s.i] (whitespace skipped) at the
// given nesting depth.
func (s *jsonScanner) value(depth int) (kind int, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return 0, s.unexpected()
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, _, err = s.str()
		return kString, err
	case c == '-' || '0' <= c && c <= '9':
		return kNumber, s.number()
	case c == 't':
		return kOther, s.literal("true")
	case c == 'f':
		return kOther, s.literal("false")
	case c == 'n':
		return kNull, s.literal("null")
	case c == '[' || c == '{':
		if depth >= maxDepth {
			return 0, s.fail("nesting too deep")
		}
		s.i++
		s.ws()
		closing := byte(']')
		if c == '{' {
			closing = '}'
		}
		if s.i < len(s.b) && s.b[s.i] == closing {
			s.i++
			return kOther, nil
		}
		for {
			if c == '{' {
				s.ws()
				if s.i >= len(s.b) || s.b[s.i] != '"' {
					return 0, s.unexpected()
				}
				if _, _, err := s.str(); err != nil {
					return 0, err
				}
				s.ws()
				if s.i >= len(s.b) || s.b[s.i] != ':' {
					return 0, s.unexpected()
				}
				s.i++
			}
			if _, err := s.value(depth + 1); err != nil {
				return 0, err
			}
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.i < len(s.b) && s.b[s.i] == closing {
				s.i++
				return kOther, nil
			}
			return 0, s.unexpected()
		}
	}
	return 0, s.unexpected()
}

// member is one member of the top-level object: the raw key contents and
// the raw value (for strings, the contents between the quotes).
type member struct {
	key, val       []byte
	keyEsc, valEsc bool
	kind           int
}

var errNotObject = errors.New("not a JSON object")

// scanObject validates line as exactly one JSON object (surrounded by
// optional whitespace) and calls fn for each of its members in order. The
// slices passed to fn alias line.
func scanObject(line []byte, fn func(m *member)) error {
	s := jsonScanner{b: line}
	s.ws()
	if s.i >= len(s.b) {
		return s.unexpected()
	}
	if s.b[s.i] != '{' {
		if _, err := s.value(0); err != nil {
			return err
		}
		return errNotObject
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
	} else {
		var m member
		for {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != '"' {
				return s.unexpected()
			}
			ks, ke, err := s.str()
			if err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return s.unexpected()
			}
			s.i++
			s.ws()
			vs := s.i
			kind, err := s.value(1)
			if err != nil {
				return err
			}
			m = member{key: line[ks:ke], keyEsc: hasEscapeOrInvalid(line[ks:ke]), kind: kind, val: line[vs:s.i]}
			if kind == kString {
				m.val = m.val[1 : len(m.val)-1]
				m.valEsc = hasEscapeOrInvalid(m.val)
			}
			fn(&m)
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.i < len(s.b) && s.b[s.i] == '}' {
				s.i++
				break
			}
			return s.unexpected()
		}
	}
	s.ws()
	if s.i < len(s.b) {
		return s.fail("unexpected data after the object")
	}
	return nil
}

// hasEscapeOrInvalid reports whether the string contents b need decoding:
// they contain a backslash or invalid UTF-8.
func hasEscapeOrInvalid(b []byte) bool {
	return bytes.IndexByte(b, '\\') >= 0 || !utf8.Valid(b)
}

// appendString appends the decoded string contents raw (validated by str)
// to dst, as encoding/json decodes them.
func appendString(dst, raw []byte, esc bool) []byte {
	if !esc {
		return append(dst, raw...)
	}
	if utf8.Valid(raw) {
		// Copy the runs between escapes in bulk.
		for {
			i := bytes.IndexByte(raw, '\\')
			if i < 0 {
				return append(dst, raw...)
			}
			dst = append(dst, raw[:i]...)
			raw = raw[i:]
			n := 2
			if raw[1] == 'u' {
				n = 6
				if r := getu4(raw); utf16.IsSurrogate(r) && len(raw) >= 12 && raw[6] == '\\' && raw[7] == 'u' {
					n = 12
				}
			}
			dst = appendEscaped(dst, raw[:n])
			raw = raw[n:]
		}
	}
	return appendEscaped(dst, raw)
}

// appendEscaped is appendString's general loop, for strings with escapes
// and possibly invalid UTF-8.
func appendEscaped(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch raw[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := getu4(raw[i:])
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						r2 = getu4(raw[i:])
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						i += 6
						r = dec
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, raw[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// getu4 decodes the \uXXXX escape at the start of b (validated).
func getu4(b []byte) rune {
	var r rune
	for _, c := range b[2:6] {
		r = r<<4 | rune(hexVal(c))
	}
	return r
}
