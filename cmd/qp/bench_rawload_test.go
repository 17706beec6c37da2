package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
	// The one connection was busy when its next requests fell due: the
	// send lag is the server's (short of connections), not the
	// generator's own.
	if row.Short < 1 || row.LagP99 < 100*time.Millisecond || row.OwnLagP99 > 50*time.Millisecond {
		t.Errorf("behind a slow server: short %d, send lag p99 %v, own lag p99 %v; want short >= 1, lag >= 100 ms, own lag small",
			row.Short, row.LagP99, row.OwnLagP99)
	}
	if err := checkGenLag(row, time.Second); err != nil {
		t.Errorf("a late server failed the generator's check: %v", err)
	}
}

// TestCheckGenLag: a level whose generator was late on its own fails
// --max-gen-lag, loudly; 0 is no check.
func TestCheckGenLag(t *testing.T) {
	row := loadRow{Name: "r80", OwnLagP99: 5 * time.Millisecond}
	if err := checkGenLag(row, 2*time.Millisecond); err == nil || !strings.Contains(err.Error(), "level r80: the generator's own send lag p99 5ms > --max-gen-lag 2ms") ||
		!strings.Contains(err.Error(), "measured the generator, not the server") {
		t.Errorf("late generator: %v", err)
	}
	if err := checkGenLag(row, 0); err != nil {
		t.Errorf("no check: %v", err)
	}
	if err := checkGenLag(row, 10*time.Millisecond); err != nil {
		t.Errorf("within the bound: %v", err)
	}
}

// TestRawSchedule: the shared schedule's due times and its count of due
// requests (j/rate < duration), at its edges.
func TestRawSchedule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		rate float64
		du   time.Duration
		want int64
	}{{200, 300 * time.Millisecond, 60}, {3, time.Second, 3}, {1000, time.Millisecond, 1}, {0.5, time.Second, 1}, {2.5, 2 * time.Second, 5}} {
		s := &rawSchedule{t0: t0, stop: t0.Add(c.du), rate: c.rate}
		if n := s.scheduled(); n != c.want {
			t.Errorf("%v/s for %v: %d due, want %d", c.rate, c.du, n, c.want)
		}
		if d := s.due(c.want).Sub(t0); d < c.du {
			t.Errorf("%v/s: request %d due at %v, before the end %v", c.rate, c.want, d, c.du)
		}
	}
	s := &rawSchedule{t0: t0, rate: 4}
	if d := s.due(3).Sub(t0); d != 750*time.Millisecond {
		t.Errorf("request 3 at 4/s due at %v", d)
	}
}

// TestRawRow: a level's row sums its connections, and its percentiles are
// report.Percentile's nearest ranks over every request (not per
// connection).
func TestRawRow(t *testing.T) {
	var rs [4]rawResult
	for i := range 1000 { // latencies 1..1000 ms over 4 connections
		r := &rs[i%4]
		if r.codes == nil {
			r.codes = map[int]int{}
		}
		d := time.Duration(i+1) * time.Millisecond
		r.lat, r.svc, r.lag, r.own = append(r.lat, d), append(r.svc, d/2), append(r.lag, d-d/2), append(r.own, d/10)
		r.codes[200]++
	}
	rs[0].short, rs[3].short = 4, 3
	rs[1].redials, rs[2].redials = 2, 1
	rs[3].fail(errors.New("boom"))
	rs[2].unsent = 2 // claimed, then given up
	t0 := time.Unix(0, 0)
	sch := &rawSchedule{t0: t0, stop: t0.Add(time.Second), rate: 1007}
	sch.next.Store(1001) // 1,007 due, 1,001 claimed: 6 never claimed
	row := rawRow("x", 1, 4, sch, rs[:], time.Second)
	ms := time.Millisecond
	if row.P50 != 500*ms || row.P90 != 900*ms || row.P99 != 990*ms || row.P999 != 999*ms || row.Max != 1000*ms {
		t.Errorf("latency p50 %v p90 %v p99 %v p99.9 %v max %v", row.P50, row.P90, row.P99, row.P999, row.Max)
	}
	if row.SvcP99 != 495*ms || row.LagP99 != 495*ms || row.LagMax != 500*ms || row.SvcP50 != 250*ms {
		t.Errorf("service p50 %v p99 %v, lag p99 %v max %v", row.SvcP50, row.SvcP99, row.LagP99, row.LagMax)
	}
	if row.OwnLagP99 != 99*ms || row.OwnLagMax != 100*ms || row.Short != 7 {
		t.Errorf("own lag p99 %v max %v, short %d; want 99 ms, 100 ms, 7", row.OwnLagP99, row.OwnLagMax, row.Short)
	}
	// 1,000 answered, 1 failed, 2 + 6 not sent.
	if row.Requests != 1009 || row.Redials != 3 || row.Codes != "200:1000" || math.Abs(row.Success-1000.0/1009) > 1e-12 ||
		row.QPS != 1000 || len(row.Errors) != 2 || !strings.Contains(row.Errors[1], "8 requests not sent") {
		t.Errorf("row %+v", row)
	}
}

// TestRawSharedSchedule: at a fixed rate every due request is sent once,
// whichever connection is free takes it (one slow answer does not hold
// back the requests due after it: they go out on the other
// connections), and a server that closes every connection is redialed.
func TestRawSharedSchedule(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var q struct{ Q string }
		if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
			t.Error(err)
		}
		mu.Lock()
		seen[q.Q]++
		mu.Unlock()
		if q.Q == "q5" {
			time.Sleep(300 * time.Millisecond) // holds its connection past the level
		}
		if q.Q >= "q3" { // texts from "q3" on (in string order) close their connection
			w.Header().Set("Connection", "close")
		}
		w.Write([]byte(`{}`))
	}))
	defer hs.Close()
	var texts []string
	for i := range 1000 {
		texts = append(texts, fmt.Sprintf("q%d", i))
	}
	// 100/s for 0.2 s: q0..q19 due, 4 connections.
	row, err := load("raw", "shared", hs.URL, texts, 1, engine.And, 10, 100, 4, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range 20 {
		if n := seen[texts[i]]; n != 1 {
			t.Errorf("%s sent %d times", texts[i], n)
		}
	}
	if len(seen) != 20 || row.Requests != 20 || row.Success != 1 || row.Redials == 0 {
		t.Errorf("sent %d distinct, row %+v", len(seen), row)
	}
	if !(row.P50 <= row.P90 && row.P90 <= row.P99 && row.P99 <= row.P999 && row.P999 <= row.Max) || row.SvcP99 > row.Max || row.LagMax > row.Max {
		t.Errorf("percentiles out of order: %+v", row)
	}
	if row.Max < 300*time.Millisecond {
		t.Errorf("max %v below the slow answer's 300 ms", row.Max)
	}
}

// TestBenchLoadMaxGenLag: qp bench load --max-gen-lag prints the level's
// row and then fails (exit 1, saying the level measured the generator)
// when the generator's own send lag p99 passes the bound (1 ns: any
// sleep's overshoot does), and passes under a generous bound.
func TestBenchLoadMaxGenLag(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"hits":[]}`)) }))
	defer hs.Close()
	q := filepath.Join(t.TempDir(), "q.txt")
	if err := os.WriteFile(q, []byte("1:a b\n2:c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"bench", "load", hs.URL, q, "--client", "raw", "--rate", "200", "--conns", "2", "--duration", "200ms"}
	out, stderr, code := runQP(t, append(args, "--max-gen-lag", "1ns")...)
	var row loadRow
	if code != 1 || json.Unmarshal([]byte(out), &row) != nil || row.OwnLagP99 <= 0 || !strings.Contains(stderr, "measured the generator, not the server") {
		t.Errorf("--max-gen-lag 1ns: exit %d, row %q, stderr %q; want exit 1 after a row with its own lag", code, out, stderr)
	}
	if _, stderr, code := runQP(t, append(args, "--max-gen-lag", "10s")...); code != 0 {
		t.Errorf("--max-gen-lag 10s: exit %d: %s", code, stderr)
	}
}
