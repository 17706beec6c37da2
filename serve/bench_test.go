package serve

import (
	"bytes"
	"io"
	"net/http"
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
