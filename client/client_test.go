package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/qpengine/qp/serve"
)

// TestRetryAndErrors: 429 is retried after Retry-After until an answer
// comes; a 400 is an *APIError with the server's code; a bad URL is
// refused. (The answers' equality with a local qp query is
// cmd/qp.TestServeMatchesQuery's.)
func TestRetryAndErrors(t *testing.T) {
	var calls atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/search" && n <= 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":{"code":"queue_full","message":"full"}}`)
		case r.URL.Path == "/v1/search":
			fmt.Fprint(w, `{"q":"x","mode":"and","k":1,"hits":[{"rank":1,"id":"d1","score":1.5}],"processor":"cpu","batch_size":3}`)
		default:
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":{"code":"too_many_queries","message":"at most 1000"}}`)
		}
	}))
	defer hs.Close()
	c, err := New(hs.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Search(context.Background(), serve.SearchRequest{Q: "x"})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].ID != "d1" || res.Hits[0].Score != 1.5 || calls.Load() != 3 {
		t.Fatalf("after two 429s: %+v, %v, %d calls", res, err, calls.Load())
	}
	_, err = c.SearchBatch(context.Background(), []serve.SearchRequest{{Q: "x"}})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != serve.CodeTooManyQs || ae.Message != "at most 1000" {
		t.Fatalf("batch error: %v", err)
	}
	c.Retries = 0
	calls.Store(0)
	if _, err := c.Search(context.Background(), serve.SearchRequest{Q: "x"}); !errors.As(err, &ae) || ae.Status != 429 {
		t.Fatalf("without retries: %v", err)
	}
	for _, bad := range []string{"ftp://x", "127.0.0.1:8080", "http://"} {
		if _, err := New(bad, nil); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}
