package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
)

// TestRawAttack: the raw client reads answers with Content-Length, chunked
// ones and ones that close the connection, counts their status codes, and
// paces a fixed rate.
func TestRawAttack(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.Contains(r.URL.Path, "batch"): // chunked: flushed before the end
			w.Write([]byte(`{"results":[`))
			w.(http.Flusher).Flush()
			w.Write([]byte(`]}`))
		case r.ContentLength%2 == 0:
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.Write([]byte(`{"hits":[]}`))
		}
	}))
	defer hs.Close()
	texts := []string{"a", "bb", "ccc", "dddd"}
	row, err := load("raw", "one", hs.URL, texts, 1, engine.And, 10, 0, 3, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(row.Codes, "200:") || !strings.Contains(row.Codes, "503:") || len(row.Errors) > 0 || row.P50 <= 0 {
		t.Errorf("one query per request: %+v", row)
	}
	row, err = load("raw", "batch", hs.URL, texts, 2, engine.And, 10, 200, 2, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// 200 requests/s for 0.3 s: 60 sent, at their intended times.
	if row.Codes != "200:"+strconv.Itoa(int(row.Requests)) || row.Requests < 50 || row.Requests > 61 || row.Success != 1 || row.QPS <= 0 {
		t.Errorf("chunked batch answers at 200/s: %+v", row)
	}
	if _, err := load("raw", "x", "https://127.0.0.1:1", texts, 1, engine.And, 10, 0, 1, time.Millisecond); err == nil {
		t.Error("an https URL: no error")
	}
}

// TestRawAttackBehind: at a fixed rate the server cannot keep, the level
// still ends about half a level after its end, and the requests a
// connection had not sent by then count as failed, not dropped.
func TestRawAttackBehind(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(150 * time.Millisecond)
		w.Write([]byte(`{}`))
	}))
	defer hs.Close()
	start := time.Now()
	row, err := load("raw", "behind", hs.URL, []string{"a"}, 1, engine.And, 10, 100, 1, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("an overloaded 200 ms level took %v", d)
	}
	// 100/s for 0.2 s: 20 scheduled on the one connection, 2 or 3 answered.
	if row.Requests != 20 || row.Success >= 0.5 || len(row.Errors) == 0 || !strings.Contains(row.Errors[0], "not sent") {
		t.Errorf("overloaded: %+v", row)
	}
}
