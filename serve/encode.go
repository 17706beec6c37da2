package serve

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"
)

// The answers' hot path: SearchResponse and BatchResponse are appended to
// a pooled buffer by hand instead of through encoding/json's reflection
// (which took about 6% of the server's CPU with one query per request).
// The bytes are exactly encoding/json's (json.Marshal's, HTML escaping
// included; encode_test.go compares them on random values and fuzzes the
// strings); a response that this encoder does not cover (stored fields,
// a NaN or infinite float) goes through encoding/json instead.

// encodable reports whether appendSearch covers r.
func encodable(r *SearchResponse) bool {
	for i := range r.Hits {
		h := &r.Hits[i]
		if h.Stored != nil || !finite32(h.Score) {
			return false
		}
	}
	t := &r.Timing
	return finite(t.QueueMS) && finite(t.BatchMS) && finite(t.EngineMS) && finite(t.TotalMS)
}

func finite(f float64) bool   { return !math.IsInf(f, 0) && !math.IsNaN(f) }
func finite32(f float32) bool { return finite(float64(f)) }

// appendSearch appends r as encoding/json marshals it (r encodable).
func appendSearch(b []byte, r *SearchResponse) []byte {
	b = append(b, '{')
	if r.ID != "" {
		b = append(b, `"id":`...)
		b = appendString(b, r.ID)
		b = append(b, ',')
	}
	b = append(b, `"q":`...)
	b = appendString(b, r.Query)
	b = append(b, `,"mode":`...)
	b = appendString(b, r.Mode)
	b = append(b, `,"k":`...)
	b = strconv.AppendInt(b, int64(r.K), 10)
	b = append(b, `,"hits":`...)
	if r.Hits == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Hits {
			if i > 0 {
				b = append(b, ',')
			}
			h := &r.Hits[i]
			b = append(b, `{"rank":`...)
			b = strconv.AppendInt(b, int64(h.Rank), 10)
			b = append(b, `,"id":`...)
			b = appendString(b, h.ID)
			b = append(b, `,"score":`...)
			b = appendFloat(b, float64(h.Score), 32)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"processor":`...)
	b = appendString(b, r.Processor)
	b = append(b, `,"batch_size":`...)
	b = strconv.AppendInt(b, int64(r.BatchSize), 10)
	b = append(b, `,"timing":{"queue_ms":`...)
	b = appendFloat(b, r.Timing.QueueMS, 64)
	b = append(b, `,"batch_ms":`...)
	b = appendFloat(b, r.Timing.BatchMS, 64)
	b = append(b, `,"engine_ms":`...)
	b = appendFloat(b, r.Timing.EngineMS, 64)
	b = append(b, `,"total_ms":`...)
	b = appendFloat(b, r.Timing.TotalMS, 64)
	b = append(b, '}')
	if r.Error != nil {
		b = append(b, `,"error":{"code":`...)
		b = appendString(b, r.Error.Code)
		b = append(b, `,"message":`...)
		b = appendString(b, r.Error.Message)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendFloat formats f as encoding/json's floatEncoder does: the shortest
// representation at the given bit size, exponent form below 1e-6 or from
// 1e21 on, with a one-digit negative exponent unpadded (1e-7, not 1e-07).
func appendFloat(b []byte, f float64, bits int) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string as encoding/json does with HTML
// escaping: '"' and '\\' escaped, control characters as \n, \r, \t, \b,
// \f or \u00XX, '<', '>' and '&' as \u003c, \u003e, \u0026, U+2028 and
// U+2029 escaped, invalid UTF-8 as \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// encPool holds the buffers answers are encoded into.
var encPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// writeSearch answers one SearchResponse (200), by hand when it can.
func writeSearch(w http.ResponseWriter, r *SearchResponse) {
	if !encodable(r) {
		writeJSON(w, http.StatusOK, r)
		return
	}
	bp := encPool.Get().(*[]byte)
	b := append(appendSearch((*bp)[:0], r), '\n') // as json.Encoder ends a value
	writeBytes(w, b)
	*bp = b
	encPool.Put(bp)
}

// writeBatch answers a BatchResponse (200), by hand when it can.
func writeBatch(w http.ResponseWriter, rs []SearchResponse) {
	for i := range rs {
		if !encodable(&rs[i]) {
			writeJSON(w, http.StatusOK, BatchResponse{Results: rs})
			return
		}
	}
	bp := encPool.Get().(*[]byte)
	b := append((*bp)[:0], `{"results":`...)
	if rs == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range rs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendSearch(b, &rs[i])
		}
		b = append(b, ']')
	}
	b = append(b, '}', '\n')
	writeBytes(w, b)
	*bp = b
	encPool.Put(bp)
}

// writeBytes answers b (a JSON document) with its length: one write, no
// chunked encoding.
func writeBytes(w http.ResponseWriter, b []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = contentLength(len(b))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

var jsonContentType = []string{"application/json"}

// contentLengths[n] is the Content-Length header value of an answer of n
// bytes (a shared slice of len = cap 1, which net/http only reads: Header.Add
// would append into a new array): a one-query answer's two allocations
// (the slice and the decimal string) saved, for the sizes one-query answers
// have (a top-10 answer is under 2 KB).
var contentLengths = func() (t [maxSharedLength][]string) {
	for n := range t {
		t[n] = []string{strconv.Itoa(n)}
	}
	return t
}()

// maxSharedLength bounds contentLengths: 4,096 entries, about 170 KB.
const maxSharedLength = 4096

// contentLength is the Content-Length header value of n bytes.
func contentLength(n int) []string {
	if n < maxSharedLength {
		return contentLengths[n]
	}
	return []string{strconv.Itoa(n)}
}
