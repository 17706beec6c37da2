package serve

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/qpengine/qp/engine/gpu"
)

// TestBatchLog checks the served batches' ring (after: the records past a
// sequence number, the oldest kept when the ring wrapped) and the
// least-squares fits of their phases by size.
func TestBatchLog(t *testing.T) {
	var l batchLog
	dev := func(n int) time.Duration { return time.Millisecond + time.Duration(n)*2*time.Microsecond }
	for i := range batchLogSize + 10 {
		n := 100 + i%50*20
		l.record(n, 300*time.Microsecond, 0, dev(n), 40*time.Microsecond, &gpu.BatchDevice{Sets: 2, DriverCalls: 200,
			Wait: 50 * time.Microsecond, Run: dev(n) - 100*time.Microsecond, Sync: dev(n) / 2})
	}
	rs, seq := l.after(0)
	if seq != batchLogSize+10 || len(rs) != batchLogSize || rs[0].Seq != 11 || rs[len(rs)-1].Seq != seq {
		t.Fatalf("after(0): seq %d, %d records from %d to %d; want %d, %d from 11", seq, len(rs), rs[0].Seq, rs[len(rs)-1].Seq, batchLogSize+10, batchLogSize)
	}
	if rs, _ := l.after(seq - 3); len(rs) != 3 || rs[0].Seq != seq-2 {
		t.Fatalf("after(seq-3): %d records, first %d", len(rs), rs[0].Seq)
	}
	if rs, s := l.after(seq); len(rs) != 0 || s != seq {
		t.Fatalf("after(seq): %d records, seq %d", len(rs), s)
	}
	rep := batchReport(rs, seq)
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9+1e-6*math.Abs(want) }
	if !rep.Device.OK || !near(rep.Device.A, 1e-3) || !near(rep.Device.B, 2e-6) {
		t.Errorf("device fit %+v, want a = 1 ms, b = 2 µs", rep.Device)
	}
	if !near(rep.Batch.A, 1.3e-3) || !near(rep.Batch.B, 2e-6) {
		t.Errorf("batch fit %+v, want a = 1.3 ms (with the preparation), b = 2 µs", rep.Batch)
	}
	if !near(rep.Owner.A, 1e-3-50e-6) || !near(rep.Owner.B, 2e-6) || !near(rep.Sync.A, 0.5e-3) || !near(rep.Sync.B, 1e-6) {
		t.Errorf("owner fit %+v, sync fit %+v; want a = 0.95 ms, b = 2 µs; a = 0.5 ms, b = 1 µs", rep.Owner, rep.Sync)
	}
	if !near(rep.Finish.A, 40e-6) || !near(rep.Finish.B, 0) {
		t.Errorf("finish fit %+v, want a = 40 µs, b = 0", rep.Finish)
	}
	if !near(rep.Prepare.A, 300e-6) || !near(rep.Prepare.B, 0) || rep.MeanSets != 2 || rep.MeanDriverCalls != 200 {
		t.Errorf("prepare fit %+v, mean sets %v, driver calls %v", rep.Prepare, rep.MeanSets, rep.MeanDriverCalls)
	}
	if rep.MinN != 100 || rep.MaxN != 100+49*20 || rep.Batches != batchLogSize {
		t.Errorf("sizes %d-%d over %d batches", rep.MinN, rep.MaxN, rep.Batches)
	}
	// One size only: no slope, the mean per query.
	var one batchLog
	one.record(10, 0, 0, 10*time.Microsecond, 0, nil)
	one.record(10, 0, 0, 30*time.Microsecond, 0, nil)
	rs, seq = one.after(0)
	if f := batchReport(rs, seq).Device; f.OK || f.A != 0 || !near(f.B, 2e-6) {
		t.Errorf("one size: fit %+v, want not ok, b = 2 µs", f)
	}
}

// TestBatchesEndpoint checks GET /debug/batches' parameters, its text
// form with the p99 floor, and its refusals.
func TestBatchesEndpoint(t *testing.T) {
	s := &Server{m: &metrics{}}
	for _, n := range []int{100, 200, 400} {
		s.m.blog.record(n, 0, 0, time.Millisecond+time.Duration(n)*4*time.Microsecond, 0, nil)
	}
	get := func(q string) (int, string) {
		w := httptest.NewRecorder()
		s.handleBatches(w, httptest.NewRequest("GET", "/debug/batches"+q, nil))
		return w.Code, w.Body.String()
	}
	if code, body := get("?after=1&format=text&rate=100000"); code != 200 || !strings.Contains(body, "seq 3 batches 2 n 200-400") ||
		!strings.Contains(body, "fit device    a    1.000 ms b   4.000 us") || !strings.Contains(body, "floor rate 100000 p99") {
		t.Errorf("text: %d\n%s", code, body)
	}
	if code, body := get("?rows=1"); code != 200 || !strings.Contains(body, `"rows":[{"seq":1,"n":100`) || !strings.Contains(body, `"batches":3`) {
		t.Errorf("json: %d %s", code, body)
	}
	for _, q := range []string{"?after=x", "?rate=0", "?rate=1,abc"} {
		if code, _ := get(q); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, code)
		}
	}
}
