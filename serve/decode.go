package serve

import (
	"unicode/utf8"
)

// The requests' hot path: a POST /v1/search or /v1/search/batch body is
// first parsed by hand (no reflection, no decoder state, no allocation
// but the strings and the batch's slice), and only what this parser does
// not cover goes through encoding/json (unmarshalStrict), which then
// decides, with its own error message. The fast path covers the bodies
// clients send: one object of the exact (lower-case) field names, strings
// without backslash escapes, integers without fraction or exponent, true
// and false. Anything else — escapes, null, case-folded or unknown names,
// a duplicated "queries", a number encoding/json would refuse or round,
// invalid UTF-8, data after the object, a syntax error — makes it give up
// (ok false) and encoding/json decode the same bytes; what the fast path
// accepts, encoding/json accepts with an equal result
// (FuzzDecodeFastEqual checks it).

// decodeSearch decodes a SearchRequest body: by hand when it can, else
// with encoding/json.
func decodeSearch(b []byte) (SearchRequest, *Error) {
	var v SearchRequest
	if p := (fastParser{b: b}); p.request(&v) && p.end() {
		return v, nil
	}
	v = SearchRequest{}
	return v, unmarshalStrict(b, &v)
}

// decodeBatch decodes a BatchRequest body: by hand when it can, else with
// encoding/json.
func decodeBatch(b []byte) (BatchRequest, *Error) {
	var v BatchRequest
	if p := (fastParser{b: b}); p.batch(&v) && p.end() {
		return v, nil
	}
	v = BatchRequest{}
	return v, unmarshalStrict(b, &v)
}

// fastParser reads b from i. Every method returns false where the fast
// path gives up.
type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// end: only whitespace is left.
func (p *fastParser) end() bool { p.ws(); return p.i == len(p.b) }

// byte consumes c after whitespace.
func (p *fastParser) byte(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// peek is the next byte after whitespace (0 at the end).
func (p *fastParser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// str reads a string without escapes, valid UTF-8, no control bytes.
func (p *fastParser) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\' || c < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

// mode reads a string as str does, without allocating the modes' names
// (the constants of this package's strings instead).
func (p *fastParser) mode() (string, bool) {
	i := p.i
	s, ok := p.rawStr()
	if !ok {
		p.i = i
		return p.str()
	}
	switch string(s) {
	case "and":
		return "and", true
	case "or":
		return "or", true
	case "andor":
		return "andor", true
	}
	p.i = i
	return p.str()
}

// rawStr reads a string of printable ASCII without escapes, returned as
// the bytes of b (false, with p.i anywhere, for anything else).
func (p *fastParser) rawStr() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// delim reports whether the value just read ends here (encoding/json
// would otherwise read a longer literal or number, or fail).
func (p *fastParser) delim() bool {
	if p.i == len(p.b) {
		return true
	}
	switch p.b[p.i] {
	case ' ', '\t', '\n', '\r', ',', '}', ']':
		return true
	}
	return false
}

// integer reads -?(0|[1-9][0-9]{0,17}): no fraction, no exponent, at
// most 18 digits (within int64); a value past int's range (32-bit
// platforms) gives up, as do longer numbers.
func (p *fastParser) integer() (int, bool) {
	p.ws()
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	start := p.i
	var n int64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' && p.i-start < 18 {
		n = n*10 + int64(p.b[p.i]-'0')
		p.i++
	}
	digits := p.i - start
	if digits == 0 || (digits > 1 && p.b[start] == '0') || !p.delim() {
		return 0, false
	}
	if neg {
		n = -n
	}
	if int64(int(n)) != n {
		return 0, false
	}
	return int(n), true
}

// boolean reads true or false.
func (p *fastParser) boolean() (bool, bool) {
	p.ws()
	rest := p.b[p.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		p.i += 4
		return true, p.delim()
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.i += 5
		return false, p.delim()
	}
	return false, false
}

// object reads {"name": value, ...}, calling field for each name (which
// reads the value).
func (p *fastParser) object(field func(name string) bool) bool {
	if !p.byte('{') {
		return false
	}
	if p.peek() == '}' {
		p.i++
		return true
	}
	for {
		name, ok := p.str()
		if !ok || !p.byte(':') || !field(name) {
			return false
		}
		if p.byte(',') {
			continue
		}
		return p.byte('}')
	}
}

// request reads one SearchRequest object into v.
func (p *fastParser) request(v *SearchRequest) bool {
	return p.object(func(name string) bool {
		var ok bool
		switch name {
		case "id":
			v.ID, ok = p.str()
		case "q":
			v.Q, ok = p.str()
		case "mode":
			v.Mode, ok = p.mode()
		case "k":
			v.K, ok = p.integer()
		case "qtf":
			v.QTF, ok = p.boolean()
		case "stored":
			v.Stored, ok = p.boolean()
		case "timeout_ms":
			v.TimeoutMS, ok = p.integer()
		}
		return ok
	})
}

// batch reads a BatchRequest object into v.
func (p *fastParser) batch(v *BatchRequest) bool {
	seen := false
	return p.object(func(name string) bool {
		if name != "queries" || seen || !p.byte('[') {
			return false
		}
		seen = true
		v.Queries = make([]SearchRequest, 0, max(1, len(p.b)/64))
		if p.peek() == ']' {
			p.i++
			return true
		}
		for {
			v.Queries = append(v.Queries, SearchRequest{})
			if !p.request(&v.Queries[len(v.Queries)-1]) {
				return false
			}
			if p.byte(',') {
				continue
			}
			return p.byte(']')
		}
	})
}
