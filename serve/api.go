package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"
)

// SearchRequest is one query of POST /v1/search (the JSON body) or of
// POST /v1/search/batch (an element of BatchRequest.Queries). Only Q is
// required.
type SearchRequest struct {
	ID     string `json:"id,omitempty"`     // the caller's identifier, echoed
	Q      string `json:"q"`                // query text, analyzed like the index's documents
	Mode   string `json:"mode,omitempty"`   // "and" (default), "or" or "andor"
	K      int    `json:"k,omitempty"`      // results wanted; 0 = Limits.DefaultK
	QTF    bool   `json:"qtf,omitempty"`    // a repeated term counts once per occurrence
	Stored bool   `json:"stored,omitempty"` // answer each hit's stored fields (when the index has them)
	// TimeoutMS is the request's deadline in milliseconds (0: the server's
	// default; larger than the server's maximum: that maximum).
	TimeoutMS int `json:"timeout_ms,omitempty"`
}

// BatchRequest is the body of POST /v1/search/batch.
type BatchRequest struct {
	Queries []SearchRequest `json:"queries"`
}

// Hit is one result.
type Hit struct {
	Rank   int             `json:"rank"`  // 1-based
	ID     string          `json:"id"`    // the document's external id
	Score  float32         `json:"score"` // BM25, exactly the engine's float32
	Stored json.RawMessage `json:"stored,omitempty"`
}

// Timing is where a request's time went, in milliseconds.
type Timing struct {
	QueueMS  float64 `json:"queue_ms"`  // from its arrival to its batch's start
	BatchMS  float64 `json:"batch_ms"`  // its batch on the processor
	EngineMS float64 `json:"engine_ms"` // the engine's own time for this query
	TotalMS  float64 `json:"total_ms"`  // from its arrival to its answer
}

// SearchResponse answers one query.
type SearchResponse struct {
	ID        string `json:"id,omitempty"`
	Query     string `json:"q"`
	Mode      string `json:"mode"`
	K         int    `json:"k"`
	Hits      []Hit  `json:"hits"`
	Processor string `json:"processor"` // "cpu", "gpu", "cache", or "cpu-fallback"
	// BatchSize is the number of queries of the batch it ran in (0 for a
	// cache hit).
	BatchSize int    `json:"batch_size"`
	Timing    Timing `json:"timing"`
	// Error is set instead of the results for a failed query of a batch
	// request (a single request answers with an ErrorBody instead).
	Error *Error `json:"error,omitempty"`
}

// BatchResponse answers POST /v1/search/batch: Results[i] answers
// Queries[i]; a failed query has its Error set.
type BatchResponse struct {
	Results []SearchResponse `json:"results"`
}

// Error is an API error: a stable machine-readable code and a message for
// people. Codes and their HTTP statuses are listed in docs/API.md.
type Error struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	status     int
	retryAfter int // seconds, for 429 and 503 (0: 1)
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error *Error `json:"error"`
}

// The error codes (stable: clients may switch on them).
const (
	CodeBadJSON      = "bad_json"           // 400: the body is not the expected JSON
	CodeBodyTooLarge = "body_too_large"     // 413: the body exceeds Limits.MaxBodyBytes
	CodeBadRequest   = "bad_request"        // 400: a field is invalid (mode, k, timeout, text)
	CodeNoTerms      = "no_terms"           // 400: the text has no searchable terms
	CodeTooManyTerms = "too_many_terms"     // 400: more terms than Limits.MaxTerms
	CodeTooManyQs    = "too_many_queries"   // 400: a batch larger than Limits.MaxBatch
	CodeQueueFull    = "queue_full"         // 429: the queue is full; retry after Retry-After
	CodeShuttingDown = "shutting_down"      // 503: the server is stopping; retry elsewhere
	CodeOverloaded   = "overloaded"         // 503: the expected queue wait exceeds the deadline or --max-queue-wait
	CodeDeadline     = "deadline_exceeded"  // 504: the request's deadline passed first
	CodeCanceled     = "canceled"           // 499: the client went away
	CodeBackend      = "backend_error"      // 500: the processor failed (no CPU could answer)
	CodeNotFound     = "not_found"          // 404
	CodeMethod       = "method_not_allowed" // 405
)

func apiErr(status int, code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), status: status}
}

// Status is the HTTP status of e.
func (e *Error) Status() int { return e.status }

// readBody reads r into buf and refuses more than max bytes; r must end
// after at most max+1 (an io.LimitedReader of max+1 around the body).
func readBody(buf *bytes.Buffer, r io.Reader, max int64) *Error {
	_, err := buf.ReadFrom(r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apiErr(413, CodeBodyTooLarge, "request body larger than %d bytes", max)
		}
		return apiErr(400, CodeBadJSON, "reading the body: %v", err)
	}
	if int64(buf.Len()) > max {
		return apiErr(413, CodeBodyTooLarge, "request body larger than %d bytes", max)
	}
	return nil
}

// unmarshalStrict decodes data, one JSON value and nothing else, into v,
// refusing unknown fields.
func unmarshalStrict(data []byte, v any) *Error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return apiErr(400, CodeBadJSON, "%v", jsonMessage(err))
	}
	if dec.More() {
		return apiErr(400, CodeBadJSON, "data after the JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return apiErr(400, CodeBadJSON, "data after the JSON value")
	}
	return nil
}

// jsonMessage says where a JSON error is.
func jsonMessage(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q: want %s, got JSON %s (byte %d)", te.Field, te.Type, te.Value, te.Offset)
	}
	if errors.Is(err, io.EOF) {
		return "empty body: want a JSON object"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "truncated JSON: the body ends inside a value"
	}
	return err.Error()
}

// DecodeSearch decodes a POST /v1/search body (at most max bytes).
func DecodeSearch(r io.Reader, max int64) (SearchRequest, *Error) {
	return decodeReader(r, max, decodeSearch)
}

// DecodeBatch decodes a POST /v1/search/batch body (at most max bytes).
func DecodeBatch(r io.Reader, max int64) (BatchRequest, *Error) {
	return decodeReader(r, max, decodeBatch)
}

// decodeReader reads r (at most max bytes) and decodes it with dec; the
// zero T on any error.
func decodeReader[T any](r io.Reader, max int64, dec func([]byte) (T, *Error)) (T, *Error) {
	var zero T
	var buf bytes.Buffer
	if e := readBody(&buf, &io.LimitedReader{R: r, N: max + 1}, max); e != nil {
		return zero, e
	}
	v, e := dec(buf.Bytes())
	if e != nil {
		return zero, e
	}
	return v, nil
}

// checkText refuses query text that is not UTF-8 or too long.
func checkText(q string, maxBytes int) *Error {
	if len(q) > maxBytes {
		return apiErr(400, CodeBadRequest, "query text of %d bytes: at most %d", len(q), maxBytes)
	}
	if !utf8.ValidString(q) {
		return apiErr(400, CodeBadRequest, "query text is not valid UTF-8")
	}
	return nil
}
