package serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The lean HTTP/1.1 path (Config.LeanHTTP, qp serve --lean-http; issue 25:
// one query per request at 80% of the in-process rate). net/http spends,
// per request, more CPU than the search of a GPU batch's query: a
// background read goroutine per request (started when the body is read,
// parked on the socket, woken by a deadline in the past when the handler
// returns: the client-gone detection behind Request.Context), eight
// read/write deadline changes, a header map, its clone and a sorted header
// write, a Request, a context and a response per request. On loopback with
// one query per request the server's CPU per request was 0.61-0.76× with a
// minimal loop (BENCHMARKS.md, "serve6").
//
// This path accepts the connections itself and answers, in the
// connection's goroutine, the requests of the one form that matters for
// throughput: "POST /v1/search HTTP/1.1" whose header block and body
// (Content-Length, within --max-body) are already in the connection's
// buffer, with a single valid Host and no Transfer-Encoding, Expect,
// Connection (but keep-alive), Upgrade, TE or Trailer header. Anything else (another method
// or path, a batch, a request that arrives in pieces, a slow client, a
// malformed request) hands the connection, with the bytes read so far, to
// net/http (handoffListener), which serves it from then on exactly as
// without this path: its timeouts, limits, errors and shutdown apply.
//
// What the lean path does not do: notice a client that goes away while its
// query waits (net/http's background read cancels Request.Context; here the
// query runs and the answer's write fails: TestLeanDisconnect), and its
// deadlines are coarse: the idle and write timeouts are set again only when
// the one in force is more than leanDeadlineSlack older than it would be
// (so they fire between the timeout minus leanDeadlineSlack and the timeout
// after the last request). A new connection's first request must begin
// within the read header timeout, as on net/http; a request that arrives
// complete needs no other read timeout.

// leanBufSize is a lean connection's read buffer: a request must fit it
// (whole) to be answered on the lean path.
const leanBufSize = 4096

// leanDeadlineSlack is how stale the lean path lets a deadline grow before
// it sets it again (one SetDeadline per connection per second at most,
// instead of several per request).
const leanDeadlineSlack = time.Second

// leanPrefix is the request line the lean path answers.
var leanPrefix = []byte("POST /v1/search HTTP/1.1\r\n")

// leanConn states (leanConn.state): a connection waits for a request
// (idle), runs one (active), or was closed by Shutdown while idle.
const (
	leanIdle int32 = iota
	leanActive
	leanClosed
)

// leanConn is one connection on the lean path.
type leanConn struct {
	c     net.Conn
	br    *bufio.Reader
	state atomic.Int32
	rdl   time.Time // the read deadline in force (zero: none yet)
	wdl   time.Time // the write deadline in force
	req   http.Request
	body  bytes.Reader
	w     leanWriter
	out   []byte
	date  [len(http.TimeFormat)]byte
	dateS int64 // the Unix second date holds
}

// leanWriter is the handler's http.ResponseWriter on the lean path: the
// answer is collected and written with its headers in one write.
type leanWriter struct {
	h      http.Header
	status int
	wrote  bool
	body   []byte
}

func (w *leanWriter) Header() http.Header { return w.h }

func (w *leanWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
}

func (w *leanWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, b...)
	return len(b), nil
}

// leanSet is the server's lean connections (for Shutdown).
type leanSet struct {
	mu    sync.Mutex
	conns map[*leanConn]struct{}
	ln    net.Listener     // the real listener, closed by Shutdown
	hand  *handoffListener // net/http's
	// handoffs counts the connections handed to net/http.
	handoffs atomic.Int64
}

func (l *leanSet) add(c *leanConn) {
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
}

func (l *leanSet) remove(c *leanConn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// closeIdle closes the idle connections and reports how many are left.
func (l *leanSet) closeIdle() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		if c.state.CompareAndSwap(leanIdle, leanClosed) {
			c.c.Close()
		}
	}
	return len(l.conns)
}

// closeAll closes every connection (Shutdown's context ended).
func (l *leanSet) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.c.Close()
	}
}

// serveLean is Serve with Config.LeanHTTP: it accepts on ln, answers the
// lean requests itself and hands the rest to net/http.
func (s *Server) serveLean(ln net.Listener) error {
	hand := newHandoffListener(ln.Addr())
	l := &leanSet{conns: map[*leanConn]struct{}{}, ln: ln, hand: hand}
	s.leanMu.Lock()
	s.lean = l
	s.leanMu.Unlock()
	if s.draining.Load() { // Shutdown ran before s.lean was set
		ln.Close()
		hand.Close()
		return nil
	}
	go s.hs.Serve(hand) //nolint:errcheck // returns ErrServerClosed after Shutdown
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.draining.Load() || errors.Is(err, net.ErrClosed) {
				if s.draining.Load() {
					return nil
				}
				return err
			}
			// As net/http: back off on errors such as too many open files.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept", "error", err, "retry_in", backoff.String())
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		lc := &leanConn{c: c, br: bufio.NewReaderSize(c, leanBufSize)}
		l.add(lc)
		go s.leanServe(l, lc)
	}
}

// shutdownLean stops the lean path: no more connections, idle ones
// closed, active ones closed after their answer; it waits for them until
// ctx ends, then closes the rest.
func (s *Server) shutdownLean(ctx context.Context) error {
	s.leanMu.Lock()
	l := s.lean
	s.leanMu.Unlock()
	if l == nil {
		return nil
	}
	l.ln.Close()
	l.hand.Close() // a hand-off after this closes its connection (also when net/http never served)
	tick := time.Millisecond
	for l.closeIdle() > 0 {
		select {
		case <-ctx.Done():
			l.closeAll()
			return ctx.Err()
		case <-time.After(tick):
		}
		tick = min(2*tick, 100*time.Millisecond)
	}
	return nil
}

// leanServe runs one lean connection until it closes or is handed off.
func (s *Server) leanServe(l *leanSet, lc *leanConn) {
	handed := false
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic serving a connection", "remote", lc.c.RemoteAddr().String(), "panic", p)
		}
		l.remove(lc)
		if !handed {
			lc.c.Close()
		}
	}()
	lc.w.h = make(http.Header, 4)
	lc.req = http.Request{Method: http.MethodPost, URL: leanURL, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, RemoteAddr: lc.c.RemoteAddr().String(), Body: http.NoBody}
	// A new connection's first request must start within the read header
	// timeout, as on net/http; later ones within the idle timeout.
	wait := s.hs.ReadHeaderTimeout
	idle := orDefault(s.hs.IdleTimeout, 120*time.Second)
	wto := s.hs.WriteTimeout
	for ; ; wait = idle {
		if lc.br.Buffered() == 0 {
			// Idle until a request's first bytes: Shutdown may close the
			// connection now (only Shutdown moves it from idle, to closed).
			lc.state.CompareAndSwap(leanActive, leanIdle)
			if s.draining.Load() {
				return
			}
			lc.setReadDeadline(wait)
			if _, err := lc.br.Peek(1); err != nil {
				return
			}
			if !lc.state.CompareAndSwap(leanIdle, leanActive) {
				return // closed by Shutdown
			}
		}
		n, cl, ok := leanParse(lc.br, s.lim.MaxBodyBytes)
		if !ok {
			handed = s.handoff(l, lc)
			return
		}
		buf, _ := lc.br.Peek(n)
		lc.body.Reset(buf[n-cl:])
		lc.req.ContentLength = int64(cl)
		lc.req.Body = leanBody{&lc.body}
		clear(lc.w.h)
		lc.w.status, lc.w.wrote, lc.w.body = http.StatusOK, false, lc.w.body[:0]
		s.handleSearch(&lc.w, &lc.req)
		lc.req.Body = http.NoBody
		lc.br.Discard(n) //nolint:errcheck // n bytes are buffered
		closing := s.draining.Load()
		lc.out = lc.appendAnswer(lc.out[:0], closing)
		if wto > 0 {
			lc.setWriteDeadline(wto)
		}
		if _, err := lc.c.Write(lc.out); err != nil || closing {
			return
		}
		if cap(lc.out) > 64<<10 { // a large answer's buffers are not kept
			lc.w.body, lc.out = nil, nil
		}
	}
}

// leanURL is every lean request's URL (read only).
var leanURL = &url.URL{Path: "/v1/search"}

// leanBody is the request body of a lean request (a reader over the
// connection's buffer; Close does nothing).
type leanBody struct{ *bytes.Reader }

func (leanBody) Close() error { return nil }

// handoff gives lc's connection, with its buffered bytes, to net/http;
// false when net/http no longer accepts (Shutdown).
func (s *Server) handoff(l *leanSet, lc *leanConn) bool {
	lc.c.SetDeadline(time.Time{}) //nolint:errcheck // net/http sets its own
	l.handoffs.Add(1)
	return l.hand.push(&replayConn{Conn: lc.c, r: lc.br})
}

// setReadDeadline sets the read deadline to now + d unless the one in
// force is at most leanDeadlineSlack earlier than that (never later: a
// shorter wait, the idle timeout after the first request's read header
// timeout, is set at once).
func (lc *leanConn) setReadDeadline(d time.Duration) {
	if d <= 0 {
		return
	}
	want := time.Now().Add(d)
	if want.Before(lc.rdl) || want.Sub(lc.rdl) > leanDeadlineSlack {
		lc.c.SetReadDeadline(want) //nolint:errcheck // a closed connection fails its read
		lc.rdl = want
	}
}

// setWriteDeadline is setReadDeadline's twin for writes.
func (lc *leanConn) setWriteDeadline(d time.Duration) {
	want := time.Now().Add(d)
	if want.Before(lc.wdl) || want.Sub(lc.wdl) > leanDeadlineSlack {
		lc.c.SetWriteDeadline(want) //nolint:errcheck // a closed connection fails its write
		lc.wdl = want
	}
}

// appendAnswer appends the status line, the headers and the body of the
// handler's answer (lc.w) to b.
func (lc *leanConn) appendAnswer(b []byte, closing bool) []byte {
	w := &lc.w
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(w.status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(w.status)...)
	b = append(b, "\r\nContent-Type: "...)
	if ct := w.h["Content-Type"]; len(ct) > 0 {
		b = append(b, ct[0]...)
	} else {
		b = append(b, http.DetectContentType(w.body)...)
	}
	extra := len(w.h)
	if w.h["Content-Type"] != nil {
		extra--
	}
	if w.h["Content-Length"] != nil {
		extra--
	}
	if extra > 0 {
		keys := make([]string, 0, len(w.h))
		for k := range w.h {
			switch k {
			case "Content-Type", "Content-Length", "Date", "Connection", "Transfer-Encoding":
			default:
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			for _, v := range w.h[k] {
				b = append(b, "\r\n"...)
				b = append(b, k...)
				b = append(b, ": "...)
				b = appendHeaderValue(b, v)
			}
		}
	}
	b = append(b, "\r\nDate: "...)
	now := time.Now()
	if sec := now.Unix(); sec != lc.dateS {
		now.UTC().AppendFormat(lc.date[:0], http.TimeFormat)
		lc.dateS = sec
	}
	b = append(b, lc.date[:]...)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(w.body)), 10)
	if closing {
		b = append(b, "\r\nConnection: close"...)
	}
	b = append(b, "\r\n\r\n"...)
	return append(b, w.body...)
}

// appendHeaderValue appends v with CR, LF and other control bytes but tab
// replaced by spaces (as net/http writes header values).
func appendHeaderValue(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 && c != '\t' || c == 0x7f {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// leanParse reads the request at the start of br's buffer without
// consuming it: n, the bytes of the whole request, and cl, its body's.
// ok is false where the lean path does not answer it (see the top of this
// file); br's buffer is then untouched.
func leanParse(br *bufio.Reader, maxBody int64) (n, cl int, ok bool) {
	buf, _ := br.Peek(br.Buffered())
	if !bytes.HasPrefix(buf, leanPrefix) {
		return 0, 0, false
	}
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return 0, 0, false
	}
	cl, hosts := -1, 0
	for rest := buf[len(leanPrefix) : end+2]; len(rest) > 0; {
		i := bytes.Index(rest, []byte("\r\n"))
		line := rest[:i]
		rest = rest[i+2:]
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !leanToken(line[:colon]) {
			return 0, 0, false
		}
		name, v := line[:colon], bytes.Trim(line[colon+1:], " \t")
		if !leanValue(v) {
			return 0, 0, false
		}
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if cl >= 0 || len(v) == 0 || len(v) > 18 {
				return 0, 0, false
			}
			cl = 0
			for _, c := range v {
				if c < '0' || c > '9' {
					return 0, 0, false
				}
				cl = 10*cl + int(c-'0')
			}
		case bytes.EqualFold(name, []byte("Host")):
			hosts++
			if !leanHost(v) {
				return 0, 0, false
			}
		case bytes.EqualFold(name, []byte("Connection")):
			if !bytes.EqualFold(v, []byte("keep-alive")) {
				return 0, 0, false
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")), bytes.EqualFold(name, []byte("Expect")),
			bytes.EqualFold(name, []byte("Upgrade")),
			bytes.EqualFold(name, []byte("TE")), bytes.EqualFold(name, []byte("Trailer")):
			return 0, 0, false
		}
	}
	if hosts != 1 || cl < 0 || int64(cl) > maxBody {
		return 0, 0, false
	}
	n = end + 4 + cl
	if n > len(buf) {
		return 0, 0, false
	}
	return n, cl, true
}

// leanToken: b is a non-empty RFC 9110 token (a header name).
func leanToken(b []byte) bool {
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return len(b) > 0
}

// leanValue: b has no control bytes but tab.
func leanValue(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// leanHost: b is a plain host[:port] (letters, digits, . - _ : [ ]);
// anything else goes to net/http, which decides.
func leanHost(b []byte) bool {
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']':
		default:
			return false
		}
	}
	return len(b) > 0
}

// handoffListener is the net.Listener net/http serves on with the lean
// path: it accepts the connections the lean path hands over.
type handoffListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (h *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-h.ch:
		return c, nil
	case <-h.done:
		return nil, net.ErrClosed
	}
}

func (h *handoffListener) Close() error { h.once.Do(func() { close(h.done) }); return nil }

func (h *handoffListener) Addr() net.Addr { return h.addr }

// push hands c to net/http; false when the listener is closed.
func (h *handoffListener) push(c net.Conn) bool {
	select {
	case h.ch <- c:
		return true
	case <-h.done:
		return false
	}
}

// replayConn is a handed-off connection: reads return the bytes the lean
// path had buffered first, then the socket's.
type replayConn struct {
	net.Conn
	r *bufio.Reader // nil once drained
}

func (c *replayConn) Read(p []byte) (int, error) {
	if c.r != nil {
		if c.r.Buffered() > 0 {
			return c.r.Read(p)
		}
		c.r = nil
	}
	return c.Conn.Read(p)
}
