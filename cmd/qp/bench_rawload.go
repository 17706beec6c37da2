package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/qpengine/qp/report"
)

// The raw load generator (qp bench load --client raw): HTTP/1.1 keep-alive
// over plain TCP connections, one goroutine per connection writing
// prebuilt requests and reading the answers' status line, headers and
// body. vegeta (the default client) goes through net/http's client and
// costs about as much CPU per request as the server answering it (75 µs
// against 66 µs on the dev machine, one query per request): on a host
// whose cores the generator and the server share, vegeta's share caps the
// rate it can offer below what the server can answer. This client does
// only what the measurement needs (about a third of vegeta's CPU).
//
// At a fixed rate R over C connections, connection i sends its n-th
// request at t0 + (i + n·C)/R, and a request's latency counts from that
// intended time, not from when it was sent (wrk2's correction of
// coordinated omission: a slow answer delays the connection's next
// requests, and their latencies include the delay). At rate 0 each
// connection sends its next request when the previous is answered. A
// connection still behind its schedule half a level after its end stops;
// the requests it had not sent count as failed (in the row's success and
// errors), so that a level ends on time however overloaded the server.

// rawTarget is one request: its bytes on the wire.
type rawTarget []byte

// rawTargets prebuilds the requests of ts for host.
func rawTargets(host string, ts []vegeta.Target) ([]rawTarget, error) {
	out := make([]rawTarget, len(ts))
	for i, t := range ts {
		u, err := url.Parse(t.URL)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
			t.Method, u.RequestURI(), host, len(t.Body))
		b.Write(t.Body)
		out[i] = b.Bytes()
	}
	return out, nil
}

// rawResult is one connection's outcome.
type rawResult struct {
	lat   []time.Duration
	codes map[int]int
	errs  []string
	errN  int
}

// rawAttack runs one load level with the raw client (see above) and
// returns the client's side of its row.
func rawAttack(name, addr string, ts []rawTarget, rate float64, per, conns int, du time.Duration) loadRow {
	results := make([]rawResult, conns)
	var wg sync.WaitGroup
	t0 := time.Now()
	stop := t0.Add(du)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = rawConn(addr, ts, i, conns, rate, t0, stop)
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	var lat []time.Duration
	codes := map[int]int{}
	var errs []string
	requests, ok := 0, 0
	for _, r := range results {
		lat = append(lat, r.lat...)
		for c, n := range r.codes {
			codes[c] += n
			requests += n
			if c/100 == 2 {
				ok += n
			}
		}
		requests += r.errN
		for _, e := range r.errs {
			if len(errs) < 3 && !slices.Contains(errs, e) {
				errs = append(errs, e)
			}
		}
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return report.Percentile(lat, p) } // nearest rank, as every latency table
	var cs []string
	for c, n := range codes {
		cs = append(cs, fmt.Sprintf("%d:%d", c, n))
	}
	slices.Sort(cs)
	row := loadRow{Name: name, Rate: rate, PerReq: per, Conns: conns, P50: q(0.5), P99: q(0.99), Requests: uint64(requests),
		Codes: strings.Join(cs, " "), Errors: errs}
	if len(lat) > 0 {
		row.Max = lat[len(lat)-1]
	}
	if requests > 0 {
		row.Success = float64(ok) / float64(requests)
	}
	row.QPS = float64(ok*per) / wall.Seconds()
	return row
}

// rawConn is connection i of n: requests ts[i], ts[i+n], ... (cycling)
// until stop, paced at its share of rate (0: closed loop).
func rawConn(addr string, ts []rawTarget, i, n int, rate float64, t0, stop time.Time) rawResult {
	res := rawResult{codes: map[int]int{}}
	fail := func(err error) {
		res.errN++
		if len(res.errs) < 3 {
			res.errs = append(res.errs, err.Error())
		}
	}
	var c net.Conn
	var br *bufio.Reader
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	grace := max(stop.Sub(t0)/2, 100*time.Millisecond)
	for k := 0; ; k++ {
		intended := time.Now()
		if rate > 0 {
			intended = t0.Add(time.Duration(float64(i+k*n) / rate * float64(time.Second)))
			if d := time.Until(intended); d > 0 {
				time.Sleep(d)
			}
		}
		if !intended.Before(stop) {
			return res
		}
		if rate > 0 && time.Since(stop) > grace {
			// Behind schedule well past the end: the requests not sent
			// by now count as failed (dropping them silently would hide
			// the backlog's latency), and the level ends.
			unsent := 0
			for kk := k; t0.Add(time.Duration(float64(i+kk*n) / rate * float64(time.Second))).Before(stop); kk++ {
				unsent++
			}
			res.errN += unsent
			res.errs = append(res.errs, fmt.Sprintf("%d requests not sent by the end of the level and %v (the connection was behind its schedule)", unsent, grace))
			return res
		}
		if c == nil {
			var err error
			if c, err = net.DialTimeout("tcp", addr, 30*time.Second); err != nil {
				c = nil
				fail(err)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			br = bufio.NewReaderSize(c, 16<<10)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		code, keep, err := rawRoundTrip(c, br, ts[(i+k*n)%len(ts)])
		if err != nil {
			fail(err)
			c.Close()
			c = nil
			continue
		}
		res.lat = append(res.lat, time.Since(intended))
		res.codes[code]++
		if !keep {
			c.Close()
			c = nil
		}
	}
}

// rawRoundTrip writes req and reads one answer: its status code, whether
// the connection stays open, the body read and dropped (Content-Length or
// chunked).
func rawRoundTrip(c net.Conn, br *bufio.Reader, req []byte) (code int, keep bool, err error) {
	if _, err := c.Write(req); err != nil {
		return 0, false, err
	}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, false, fmt.Errorf("bad status line %.40q", line)
	}
	if code, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, false, fmt.Errorf("bad status line %.40q", line)
	}
	length, chunked, keep := -1, false, true
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		k, v, _ := bytes.Cut(h, []byte(":"))
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(v)); err != nil {
				return 0, false, fmt.Errorf("bad Content-Length %q", v)
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(v, []byte("chunked"))
		case bytes.EqualFold(k, []byte("Connection")):
			keep = !bytes.EqualFold(v, []byte("close"))
		}
	}
	switch {
	case chunked:
		err = skipChunked(br)
	case length >= 0:
		_, err = br.Discard(length)
	default:
		return 0, false, errors.New("an answer without Content-Length or chunked encoding")
	}
	return code, keep, err
}

// skipChunked reads and drops a chunked body and its trailer.
func skipChunked(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		sz, _, _ := strings.Cut(strings.TrimSpace(string(line)), ";")
		n, err := strconv.ParseInt(sz, 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			for { // trailer, up to the blank line
				l, err := br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(l, "\r\n")) == 0 {
					return nil
				}
			}
		}
		if _, err := br.Discard(int(n) + 2); err != nil {
			return err
		}
	}
}

// rawAddr is the host:port of a base URL (http only).
func rawAddr(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return "", fmt.Errorf("%q: the raw client wants an http://host:port URL", base)
	}
	return u.Host, nil
}
