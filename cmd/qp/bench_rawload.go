package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
// One open-loop schedule for all connections (issue 25's p99 at fixed
// rates): at a fixed rate R the j-th request of the level is due at
// t0 + j/R, and the next free connection takes the next due request
// (a shared counter), sleeps until its time and sends it. Each request
// records its send lag (actual send − due time: the generator's
// shortfall, no free connection or no CPU), the generator's own part of it
// (gen_lag: send − max(due, claim), late although a connection was free
// for it: its timers or CPU; --max-gen-lag fails a level on it), its
// service time (answer −
// actual send: what the server and the network took) and its latency from
// the due time (service + lag: wrk2's correction of coordinated omission;
// a slow answer does not hide the requests it delayed). With a schedule
// per connection (before: connection i sent its n-th request at
// t0 + (i + n·C)/R), a request due on a busy connection waited for that
// connection even while others idled, so the lag measured the
// connection count, not the server. The connections needed are about
// R × latency (Little's law): a level with fewer shows a growing send lag.
// At rate 0 each connection sends its next request when the previous is
// answered (closed loop; lag 0).
//
// Connections are dialed before t0 (at most rawDialers at once, so that
// a level of 16,384 does not overflow the server's listen queue and
// measure SYN retransmits); a connection that fails or is closed is
// redialed (counted). A level still behind its schedule half its length
// after its end stops; the due requests not sent by then count as failed
// (in the row's success and errors), so that a level ends on time however
// overloaded the server. Latency percentiles are exact (every request's,
// nearest rank: report.Percentile, qp's one definition).

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

// rawDialers bounds the connections being dialed at once before a level.
const rawDialers = 256

// rawReadBuf is a connection's read buffer: an answer's status line and
// headers fit (a larger body is read through it). (16 KiB before; the
// pages an answer does not touch are never resident, so the peak RSS at
// 4,096 connections was the same, 70-77 MB, on the dev machine.)
const rawReadBuf = 4 << 10

// rawSchedule is a level's shared open-loop schedule (see above).
type rawSchedule struct {
	t0, stop time.Time
	rate     float64 // requests/s; 0: closed loop
	conns    int     // the connections sharing it
	grace    time.Duration
	next     atomic.Int64 // the next request's index
}

// due is the time request j is due at (rate > 0).
func (s *rawSchedule) due(j int64) time.Time {
	return s.t0.Add(time.Duration(float64(j) / s.rate * float64(time.Second)))
}

// scheduled is the number of requests due before stop (rate > 0): the j
// with j/rate < du.
func (s *rawSchedule) scheduled() int64 {
	du := s.stop.Sub(s.t0).Seconds()
	n := int64(math.Ceil(du * s.rate))
	for n > 0 && !s.due(n-1).Before(s.stop) { // float rounding at the edge
		n--
	}
	for s.due(n).Before(s.stop) {
		n++
	}
	return n
}

// rawResult is one connection's outcome.
type rawResult struct {
	lat, svc, lag []time.Duration // per answered request: from due, from send, send − due
	// own: per answered request, send − max(due, claim), claim being when
	// the connection took it from the schedule: the generator's own
	// lateness (timer, CPU), not the wait for a free connection (which a
	// server slower than rate × connections causes; counted in short).
	own     []time.Duration
	short   int // requests claimed after their due time (no connection was free)
	codes   map[int]int
	errs    []string
	errN    int
	unsent  int // due requests claimed but not sent before the level stopped
	redials int
}

// rawAttack runs one load level with the raw client (see above) and
// returns the client's side of its row.
func rawAttack(name, addr string, ts []rawTarget, rate float64, per, conns int, du time.Duration) loadRow {
	results := make([]rawResult, conns)
	cs := make([]net.Conn, conns)
	var wg sync.WaitGroup
	dialers := make(chan struct{}, rawDialers)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dialers <- struct{}{}
			defer func() { <-dialers }()
			c, err := net.DialTimeout("tcp", addr, 30*time.Second)
			if err != nil {
				results[i].fail(err) // dialed again in the level
				return
			}
			cs[i] = c
		}()
	}
	wg.Wait()
	sch := &rawSchedule{rate: rate, conns: conns}
	sch.t0 = time.Now()
	sch.stop = sch.t0.Add(du)
	sch.grace = max(du/2, 100*time.Millisecond)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rawConn(&results[i], addr, cs[i], ts, sch)
		}()
	}
	wg.Wait()
	return rawRow(name, per, conns, sch, results, time.Since(sch.t0))
}

// rawRow sums the connections' results of a level that ran wall on the
// schedule sch into the client's side of its row.
func rawRow(name string, per, conns int, sch *rawSchedule, results []rawResult, wall time.Duration) loadRow {
	rate := sch.rate
	var lat, svc, lag, own []time.Duration
	codes := map[int]int{}
	var errs []string
	requests, ok, redials, short := 0, 0, 0, 0
	for _, r := range results {
		lat, svc, lag, own = append(lat, r.lat...), append(svc, r.svc...), append(lag, r.lag...), append(own, r.own...)
		short += r.short
		for c, n := range r.codes {
			codes[c] += n
			requests += n
			if c/100 == 2 {
				ok += n
			}
		}
		requests += r.errN
		redials += r.redials
		for _, e := range r.errs {
			if len(errs) < 3 && !slices.Contains(errs, e) {
				errs = append(errs, e)
			}
		}
	}
	if rate > 0 {
		// Due requests not sent before the level stopped: those claimed
		// by a connection that then gave up, and those none claimed.
		n := max(0, sch.scheduled()-sch.next.Load())
		for _, r := range results {
			n += int64(r.unsent)
		}
		if n > 0 {
			requests += int(n)
			if len(errs) < 3 {
				errs = append(errs, fmt.Sprintf("%d requests not sent by the end of the level and %v (the generator was behind its schedule)", n, sch.grace))
			}
		}
	}
	slices.Sort(lat)
	slices.Sort(svc)
	slices.Sort(lag)
	slices.Sort(own)
	q := func(v []time.Duration, p float64) time.Duration { return report.Percentile(v, p) } // nearest rank, as every latency table
	var cl []string
	for c, n := range codes {
		cl = append(cl, fmt.Sprintf("%d:%d", c, n))
	}
	slices.Sort(cl)
	row := loadRow{Name: name, Rate: rate, PerReq: per, Conns: conns, Requests: uint64(requests),
		P50: q(lat, 0.5), P90: q(lat, 0.9), P99: q(lat, 0.99), P999: q(lat, 0.999), Max: q(lat, 1),
		SvcP50: q(svc, 0.5), SvcP99: q(svc, 0.99), LagP50: q(lag, 0.5), LagP99: q(lag, 0.99), LagMax: q(lag, 1),
		OwnLagP99: q(own, 0.99), OwnLagMax: q(own, 1), Short: short,
		Redials: redials, GenPeakRSSMB: peakRSSMB(), Codes: strings.Join(cl, " "), Errors: errs}
	if requests > 0 {
		row.Success = float64(ok) / float64(requests)
	}
	row.QPS = float64(ok*per) / wall.Seconds()
	return row
}

func (r *rawResult) fail(err error) {
	r.errN++
	if len(r.errs) < 3 {
		r.errs = append(r.errs, err.Error())
	}
}

// rawConn is one connection (c: dialed before the level, nil if that
// failed) taking requests from the schedule until its end; res collects
// its outcome.
func rawConn(res *rawResult, addr string, c net.Conn, ts []rawTarget, sch *rawSchedule) {
	if res.codes == nil {
		res.codes = map[int]int{}
	}
	var br *bufio.Reader
	if c != nil {
		br = bufio.NewReaderSize(c, rawReadBuf)
	}
	if sch.rate > 0 { // room for this connection's share of the level's requests, and some
		n := min(1<<16, int(sch.rate*sch.stop.Sub(sch.t0).Seconds()/float64(sch.conns))+64)
		res.lat, res.svc, res.lag, res.own = make([]time.Duration, 0, n), make([]time.Duration, 0, n),
			make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	}
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for {
		if sch.rate == 0 && !time.Now().Before(sch.stop) {
			return
		}
		j := sch.next.Add(1) - 1
		intended := time.Now()
		start := intended // when the request may go: its due time, or its claim when later
		if sch.rate > 0 {
			intended = sch.due(j)
			if !intended.Before(sch.stop) {
				return
			}
			if d := time.Until(intended); d > 0 {
				start = intended
				time.Sleep(d)
			} else if -d > time.Millisecond {
				res.short++
			}
			if time.Since(sch.stop) > sch.grace {
				// Behind schedule well past the end: this request and
				// the due ones no connection claimed (rawAttack counts
				// those) fail; dropping them silently would hide the
				// backlog's latency.
				res.unsent++
				return
			}
		}
		if c == nil {
			var err error
			if c, err = net.DialTimeout("tcp", addr, 30*time.Second); err != nil {
				c = nil
				res.fail(err)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			res.redials++
			br = bufio.NewReaderSize(c, rawReadBuf)
		}
		sent := time.Now()
		_ = c.SetDeadline(sent.Add(30 * time.Second))
		code, keep, err := rawRoundTrip(c, br, ts[j%int64(len(ts))])
		if err != nil {
			res.fail(err)
			c.Close()
			c = nil
			continue
		}
		end := time.Now()
		res.lat = append(res.lat, end.Sub(intended))
		res.svc = append(res.svc, end.Sub(sent))
		res.lag = append(res.lag, max(0, sent.Sub(intended)))
		res.own = append(res.own, max(0, sent.Sub(start)))
		res.codes[code]++
		if !keep {
			c.Close()
			c = nil
		}
	}
}

// peakRSSMB is this process's peak resident set (Linux VmHWM), 0
// elsewhere: for qp bench load, one level's generator.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
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
