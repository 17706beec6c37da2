package serve

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// randString mixes ASCII, JSON's and HTML's special characters, control
// characters, multi-byte UTF-8, U+2028/9 and invalid bytes.
func randString(r *rand.Rand) string {
	pieces := []string{"a", "Z", "0", " ", "\"", "\\", "/", "<", ">", "&", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f",
		"é", "水", "🙂", "\u2028", "\u2029", "\xff", "\xe2\x80", "gcide-1234"}
	var b []byte
	for range r.IntN(12) {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return string(b)
}

// randFloat covers the ranges where encoding/json switches format.
func randFloat(r *rand.Rand) float64 {
	switch r.IntN(6) {
	case 0:
		return 0
	case 1:
		return r.Float64() * 1e-7
	case 2:
		return r.Float64() * 1e25
	case 3:
		return -r.Float64() * 100
	case 4:
		return math.Ldexp(r.Float64(), r.IntN(200)-100)
	}
	return r.Float64() * 30
}

func randResponse(r *rand.Rand) SearchResponse {
	resp := SearchResponse{ID: randString(r), Query: randString(r), Mode: "or", K: r.IntN(1000), Processor: randString(r),
		BatchSize: r.IntN(5000), Timing: Timing{randFloat(r), randFloat(r), randFloat(r), randFloat(r)}}
	if r.IntN(5) > 0 {
		resp.Hits = make([]Hit, r.IntN(12))
		for i := range resp.Hits {
			resp.Hits[i] = Hit{Rank: i + 1, ID: randString(r), Score: float32(randFloat(r))}
		}
	}
	if r.IntN(4) == 0 {
		resp.Error = &Error{Code: CodeNoTerms, Message: randString(r)}
	}
	return resp
}

// TestAppendSearchEqualsJSON: the hand encoder writes json.Marshal's bytes.
func TestAppendSearchEqualsJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		resp := randResponse(r)
		want, err := json.Marshal(&resp)
		if err != nil {
			t.Fatal(err)
		}
		if !encodable(&resp) {
			t.Fatalf("case %d: a finite response without stored fields is not encodable", i)
		}
		if got := appendSearch(nil, &resp); !bytes.Equal(got, want) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestWriteBatchEqualsJSON: batch answers, and the fallback to
// encoding/json for responses the encoder does not cover.
func TestWriteBatchEqualsJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	rs := make([]SearchResponse, 5)
	for i := range rs {
		rs[i] = randResponse(r)
	}
	check := func(name string, rs []SearchResponse) {
		w := httptest.NewRecorder()
		writeBatch(w, rs)
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(BatchResponse{Results: rs}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.Body.Bytes(), want.Bytes()) {
			t.Fatalf("%s:\n got %s\nwant %s", name, w.Body.Bytes(), want.Bytes())
		}
		if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("%s: status %d, type %q", name, w.Code, w.Header().Get("Content-Type"))
		}
	}
	check("hand", rs)
	check("nil", nil)
	rs[2].Hits = []Hit{{Rank: 1, ID: "x", Score: 1.5, Stored: json.RawMessage(`{"title": "a <b>"}`)}}
	if encodable(&rs[2]) {
		t.Fatal("a response with stored fields is encodable")
	}
	check("stored (encoding/json)", rs)
	one := httptest.NewRecorder()
	writeSearch(one, &rs[0])
	want, _ := json.Marshal(&rs[0])
	if !bytes.Equal(one.Body.Bytes(), append(want, '\n')) || one.Header().Get("Content-Length") == "" {
		t.Fatalf("writeSearch: %s (Content-Length %q)", one.Body.Bytes(), one.Header().Get("Content-Length"))
	}
}

// FuzzAppendString: any string encodes as encoding/json encodes it.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "<&>", "\u2028", "\xff\xfe", "é水🙂", "\x00\x1f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

// TestEncodeAllocs: encoding an answer into a pooled buffer allocates
// nothing.
func TestEncodeAllocs(t *testing.T) {
	resp := randResponse(rand.New(rand.NewPCG(5, 6)))
	buf := make([]byte, 0, 1<<16)
	if n := testing.AllocsPerRun(100, func() { buf = appendSearch(buf[:0], &resp) }); n != 0 {
		t.Errorf("appendSearch: %.1f allocations per call, want 0", n)
	}
}

// TestContentLength: the shared Content-Length values are the decimal
// lengths, below maxSharedLength and above, each a slice of len = cap 1
// (so that a Header.Add on the answer's header appends into a new array,
// never into the shared one).
func TestContentLength(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 999, maxSharedLength - 1, maxSharedLength, 1 << 20} {
		v := contentLength(n)
		if len(v) != 1 || cap(v) != 1 || v[0] != strconv.Itoa(n) {
			t.Errorf("contentLength(%d) = %q (cap %d)", n, v, cap(v))
		}
	}
	h := http.Header{"Content-Length": contentLength(12)}
	h.Add("Content-Length", "x")
	if contentLengths[12][0] != "12" || len(contentLengths[12]) != 1 {
		t.Fatalf("Header.Add changed the shared value: %q", contentLengths[12])
	}
}
