package serve

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkSearchHTTP: one query per POST /v1/search from parallel
// clients over loopback (the tiny test collection: the cost is the
// server's and the client's HTTP and JSON work, not the engine's).
func BenchmarkSearchHTTP(b *testing.B) {
	e := testEngine(b)
	_, hs := newTestServer(b, e, Config{})
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	c := &http.Client{Transport: tr}
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Post(hs.URL+"/v1/search", "application/json", bytes.NewBufferString(`{"q":"parallel sorting","mode":"or"}`))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatal(resp.StatusCode)
			}
		}
	})
}

// BenchmarkHandleSearch: one POST /v1/search through the handler, no
// network (the server's own per-request cost: decoding, analysis,
// batching hand-off, the engine on the tiny test collection, encoding,
// metrics). allocs/op is the number to watch.
func BenchmarkHandleSearch(b *testing.B) {
	e := testEngine(b)
	s, _ := newTestServer(b, e, Config{})
	h := s.Handler()
	body := []byte(`{"q":"parallel sorting","mode":"or"}`)
	benchPostSearch(b, h, body)
}

// benchPostSearch times b.N POST /v1/search requests of body through h (no
// network: httptest's recorder), failing on any status but 200.
func benchPostSearch(b *testing.B, h http.Handler, body []byte) {
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v1/search", bytes.NewReader(body))
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}
