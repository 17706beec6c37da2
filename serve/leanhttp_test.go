package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawPost is a POST /v1/search as clients send it, whole.
func rawPost(body string, extra ...string) string {
	return "POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + strings.Join(extra, "") +
		fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
}

// rawAnswer reads one answer from br: its status, its header block as sent
// (lines in order) and its body.
func rawAnswer(t *testing.T, br *bufio.Reader) (int, []string, []byte) {
	t.Helper()
	var lines []string
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading an answer's head: %v (so far %q)", err, lines)
		}
		if l == "\r\n" {
			break
		}
		lines = append(lines, strings.TrimRight(l, "\r\n"))
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(strings.Join(lines, "\r\n")+"\r\n\r\n")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusContinue { // Expect: 100-continue's interim answer
		return rawAnswer(t, br)
	}
	if resp.ContentLength < 0 { // net/http's own errors: until the connection closes
		body, _ := io.ReadAll(br)
		return resp.StatusCode, lines, body
	}
	body := make([]byte, resp.ContentLength)
	if _, err := io.ReadFull(br, body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, lines, body
}

// leanAnswered: the head of a 200 search answer is the lean path's
// (Content-Type first, then Date; net/http writes the Content-Length that
// writeBytes sets first).
func leanAnswered(lines []string) bool {
	return len(lines) > 2 && strings.HasPrefix(lines[1], "Content-Type:") && strings.HasPrefix(lines[2], "Date:")
}

// handoffs is the number of connections s's lean path handed to net/http.
func handoffs(s *Server) int64 {
	s.leanMu.Lock()
	defer s.leanMu.Unlock()
	if s.lean == nil {
		return 0
	}
	return s.lean.handoffs.Load()
}

// TestLeanHTTP: on the lean path a whole POST /v1/search is answered by
// the lean loop with the engine's results, pipelined ones too; every other
// request (a GET, one in pieces, Expect, Connection: close, no Host, a
// large body, a bad header) is handed with its connection to net/http,
// which answers it as without the lean path, and keeps the connection.
func TestLeanHTTP(t *testing.T) {
	e := testEngine(t)
	s, base := serveTest(t, e, Config{LeanHTTP: true, Limits: Limits{MaxBodyBytes: 1024}})
	addr := strings.TrimPrefix(base, "http://")
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c, bufio.NewReader(c)
	}
	// check: the answer's status and hits, and whether the request was
	// answered on the lean path: no hand-off since the last check (and,
	// for a 200 search answer, the lean head).
	last := int64(0)
	check := func(what string, st int, lines []string, body []byte, wantSt int, lean bool, q string) {
		t.Helper()
		n := handoffs(s)
		handed := n > last
		last = n
		if st != wantSt || lean == handed || lean && st == 200 && !leanAnswered(lines) {
			t.Fatalf("%s: status %d (want %d), handed off %v (want %v): %q %s", what, st, wantSt, handed, !lean, lines, body)
		}
		if q != "" {
			var r SearchResponse
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatalf("%s: %v in %s", what, err, body)
			}
			wantHits(t, e, q, "and", 10, r.Hits)
		}
	}

	c, br := dial()
	for _, q := range testQueries {
		fmt.Fprint(c, rawPost(fmt.Sprintf(`{"q":%q}`, q)))
		st, lines, body := rawAnswer(t, br)
		check("lean POST "+q, st, lines, body, 200, true, q)
	}
	// Two requests in one write: both answered in order.
	fmt.Fprint(c, rawPost(`{"q":"parallel sorting"}`)+rawPost(`{"q":"gpu"}`))
	st, lines, body := rawAnswer(t, br)
	check("pipelined 1", st, lines, body, 200, true, "parallel sorting")
	st, lines, body = rawAnswer(t, br)
	check("pipelined 2", st, lines, body, 200, true, "gpu")
	// Connection: keep-alive stays on the lean path.
	fmt.Fprint(c, rawPost(`{"q":"gpu"}`, "Connection: Keep-Alive\r\n"))
	st, lines, body = rawAnswer(t, br)
	check("keep-alive", st, lines, body, 200, true, "gpu")
	// An error answer on the lean path.
	fmt.Fprint(c, rawPost(`{"q":"gpu","k":0.5}`))
	st, lines, body = rawAnswer(t, br)
	if check("bad JSON", st, lines, body, 400, true, ""); errCode(t, body) != CodeBadJSON {
		t.Errorf("bad JSON: %s", body)
	}
	// A GET on the same connection: net/http from now on.
	fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	st, lines, body = rawAnswer(t, br)
	check("GET /healthz", st, lines, body, 200, false, "")
	fmt.Fprint(c, rawPost(`{"q":"compression"}`))
	st, lines, body = rawAnswer(t, br)
	if st != 200 || leanAnswered(lines) || handoffs(s) != last || !bytes.Contains(body, []byte(`"q":"compression"`)) {
		t.Fatalf("POST after the hand-off: status %d, not net/http's answer or a second hand-off: %q %s", st, lines, body)
	}

	// A request in pieces (a slow client's): handed off, answered.
	c, br = dial()
	req := rawPost(`{"q":"query processing"}`)
	fmt.Fprint(c, req[:30])
	time.Sleep(50 * time.Millisecond)
	fmt.Fprint(c, req[30:])
	st, lines, body = rawAnswer(t, br)
	check("in pieces", st, lines, body, 200, false, "query processing")

	for _, tc := range []struct {
		name, req string
		status    int
	}{
		{"Expect", rawPost(`{"q":"gpu"}`, "Expect: 100-continue\r\n"), 200},
		{"Connection: upgrade", rawPost(`{"q":"gpu"}`, "Connection: upgrade\r\n"), 200},
		{"Transfer-Encoding", "POST /v1/search HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n{\"q\":\"gpu\"}\r\n0\r\n\r\n", 200},
		{"no Host", "POST /v1/search HTTP/1.1\r\nContent-Length: 11\r\n\r\n{\"q\":\"gpu\"}", 400},
		{"two Hosts", "POST /v1/search HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 11\r\n\r\n{\"q\":\"gpu\"}", 400},
		{"bad header name", "POST /v1/search HTTP/1.1\r\nHost: a\r\nBad Name: 1\r\nContent-Length: 11\r\n\r\n{\"q\":\"gpu\"}", 400},
		{"body over the limit", rawPost(`{"q":"gpu` + strings.Repeat(" ", 2000) + `"}`), 413},
		{"HTTP/1.0", "POST /v1/search HTTP/1.0\r\nContent-Length: 11\r\n\r\n{\"q\":\"gpu\"}", 200},
		{"a query string", "POST /v1/search?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n{\"q\":\"gpu\"}", 200},
	} {
		c, br := dial()
		fmt.Fprint(c, tc.req)
		st, lines, body := rawAnswer(t, br)
		check(tc.name, st, lines, body, tc.status, false, "")
	}

	// Connection: close: net/http answers and closes.
	c, br = dial()
	fmt.Fprint(c, rawPost(`{"q":"gpu"}`, "Connection: close\r\n"))
	st, lines, body = rawAnswer(t, br)
	check("Connection: close", st, lines, body, 200, false, "gpu")
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("Connection: close: the connection stayed open (%v)", err)
	}

	// Go's client is answered on the lean path too (one write per request).
	var r SearchResponse
	if st, h, b := post(t, base+"/v1/search", `{"q":"parallel sorting","mode":"or"}`, &r); st != 200 || h.Get("Content-Type") != "application/json" {
		t.Fatalf("Go client: %d %v %s", st, h, b)
	}
	wantHits(t, e, "parallel sorting", "or", 10, r.Hits)
}

// TestLeanIdleTimeout: a lean connection idle past IdleTimeout is closed,
// and a new one that sends nothing past ReadHeaderTimeout.
func TestLeanIdleTimeout(t *testing.T) {
	e := testEngine(t)
	_, base := serveTest(t, e, Config{LeanHTTP: true, IdleTimeout: 200 * time.Millisecond})
	_, base2 := serveTest(t, e, Config{LeanHTTP: true, IdleTimeout: time.Minute, ReadHeaderTimeout: 200 * time.Millisecond})
	silent, err := net.Dial("tcp", strings.TrimPrefix(base2, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	silent.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a silent new connection: %v, want EOF", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a silent new connection closed after %v, ReadHeaderTimeout 200 ms", d)
	}
	c, br := leanSearched(t, strings.TrimPrefix(base, "http://"))
	defer c.Close()
	start = time.Now()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: %v, want EOF", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("idle connection closed after %v, IdleTimeout 200 ms", d)
	}
}

// TestLeanDisconnect: on the lean path a client that goes away while its
// query waits is not noticed (its query runs; the answer's write fails),
// and the server answers the next requests.
func TestLeanDisconnect(t *testing.T) {
	e := testEngine(t)
	g := newGate(e)
	s, base := serveTest(t, e, Config{LeanHTTP: true, Primary: g, Batch: BatchConfig{Inflight: 1}})
	held := make(chan int)
	go func() { st, _, _ := post(t, base+"/v1/search", `{"q":"gpu"}`, nil); held <- st }()
	<-g.entered
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(c, rawPost(`{"q":"parallel"}`))
	waitFor(t, func() bool { return s.b.depth() == 1 })
	c.Close()
	g.open()
	if st := <-held; st != 200 {
		t.Errorf("held request: %d", st)
	}
	var r SearchResponse
	if st, _, b := post(t, base+"/v1/search", `{"q":"parallel sorting","mode":"or"}`, &r); st != 200 {
		t.Fatalf("after a disconnect: %d %s", st, b)
	}
	wantHits(t, e, "parallel sorting", "or", 10, r.Hits)
	waitFor(t, func() bool { return s.b.depth() == 0 && g.batches.Load() == 3 })
}

// TestLeanParseAllocs: the lean path's parse and answer do not allocate.
func TestLeanParseAllocs(t *testing.T) {
	req := rawPost(`{"q":"parallel sorting"}`, "User-Agent: x\r\n")
	br := bufio.NewReaderSize(strings.NewReader(req), leanBufSize)
	br.Peek(len(req))
	lc := &leanConn{w: leanWriter{h: http.Header{}, status: 200, body: []byte(`{"q":"x"}`)}, out: make([]byte, 0, 1024)}
	lc.w.h["Content-Type"] = jsonContentType
	var n, cl int
	var ok bool
	if a := testing.AllocsPerRun(100, func() {
		n, cl, ok = leanParse(br, 1<<20)
		lc.out = lc.appendAnswer(lc.out[:0], false)
	}); a != 0 || !ok || n != len(req) || cl != 24 {
		t.Errorf("%v allocations per parse and answer; parse %d %d %v", a, n, cl, ok)
	}
}

// FuzzLeanParse: what the lean path accepts, net/http reads as the same
// request: POST /v1/search, one Host, the same body and length, ending
// where the lean path says.
func FuzzLeanParse(f *testing.F) {
	for _, s := range []string{rawPost(`{"q":"gpu"}`), rawPost(`{"q":"gpu"}`, "X-A:  b \r\n"), rawPost("", "content-length: 0\r\n"),
		"POST /v1/search HTTP/1.1\r\nHost: a:80\r\nContent-Length: 2\r\n\r\n{}GET", rawPost("{}", "Connection: keep-alive\r\n"), rawPost(`{}`, "Host: b\r\n")} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), leanBufSize)
		br.Peek(len(data))
		n, cl, ok := leanParse(br, 1<<20)
		if !ok {
			return
		}
		if br.Buffered() != min(len(data), leanBufSize) {
			t.Fatal("leanParse consumed its buffer")
		}
		rd := bufio.NewReader(bytes.NewReader(data[:n]))
		req, err := http.ReadRequest(rd)
		if err != nil {
			t.Fatalf("lean accepted %q (n %d, cl %d), net/http: %v", data, n, cl, err)
		}
		body, err := io.ReadAll(req.Body)
		if err != nil || req.Method != "POST" || req.URL.Path != "/v1/search" || req.URL.RawQuery != "" || req.ContentLength != int64(cl) ||
			!bytes.Equal(body, data[n-cl:n]) || req.Host == "" || len(req.TransferEncoding) != 0 ||
			req.Header.Get("Expect") != "" || req.Close {
			t.Fatalf("lean accepted %q (n %d, cl %d), net/http read %s %v length %d body %q host %q close %v (%v)", data, n, cl,
				req.Method, req.URL, req.ContentLength, body, req.Host, req.Close, err)
		}
		if _, err := rd.ReadByte(); err != io.EOF {
			t.Fatalf("lean accepted %q (n %d): net/http left bytes", data, n)
		}
	})
}

// TestLeanShutdownIdle: Shutdown closes idle lean connections and returns.
func TestLeanShutdownIdle(t *testing.T) {
	s, ln := leanListener(t, testEngine(t), Config{LeanHTTP: true})
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	c, br := leanSearched(t, ln.Addr().String())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("idle connection after Shutdown: %v, want EOF", err)
	}
}

// TestLeanShutdownBeforeServe: Serve after (or racing) Shutdown returns
// without serving, on the lean path as on net/http's.
func TestLeanShutdownBeforeServe(t *testing.T) {
	s, ln := leanListener(t, testEngine(t), Config{LeanHTTP: true})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve after Shutdown did not return")
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts after Serve returned")
	}
}

// leanSearched dials addr, sends one search and checks that the lean path
// answered it; the caller closes the connection (deadline 10 s).
func leanSearched(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	fmt.Fprint(c, rawPost(`{"q":"gpu"}`))
	if st, lines, b := rawAnswer(t, br); st != 200 || !leanAnswered(lines) {
		c.Close()
		t.Fatalf("%d %q %s", st, lines, b)
	}
	return c, br
}
