package serve

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/cuda"
)

// TestServeGPUPipelined serves the test collection from the GPU backend
// (a real GPU, or cuda/emu's emulator on LD_LIBRARY_PATH) with its
// defaults, two batches in flight, pipelined, and requires the answers of
// many concurrent requests to equal the CPU engine's.
func TestServeGPUPipelined(t *testing.T) {
	if ok, why := cuda.Available(); !ok {
		t.Skip("no GPU or emulator: " + why)
	}
	e := testEngineOn(t, qp.GPU)
	cpu := testEngine(t)
	s, hs := newTestServer(t, e, Config{})
	if c := s.Batch(); !c.Pipelined() || c.Inflight != 2 || c.Budget != 0 {
		t.Fatalf("GPU server: pipelined %v, inflight %d, budget %v; want true, 2, 0 (auto)", c.Pipelined(), c.Inflight, c.Budget)
	}
	texts := []string{"parallel", "gpu", "sorting parallel", "query processing", "compressed index",
		"graphics processors", "inverted index compression", "merge sort"}
	modes := []string{"and", "or", "andor"}
	type answer struct {
		q, mode string
		st      int
		body    []byte
		r       SearchResponse
	}
	const clients, each = 8, 12
	answers := make([]answer, clients*each)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				a := &answers[c*each+i]
				a.q, a.mode = texts[(c+i)%len(texts)], modes[(c*each+i)%len(modes)]
				body := fmt.Sprintf(`{"q":%q,"mode":%q,"k":5}`, a.q, a.mode)
				a.st, _, a.body = post(t, hs.URL+"/v1/search", body, &a.r)
			}
		}()
	}
	wg.Wait()
	procs := map[string]int{}
	for _, a := range answers {
		if a.st != 200 {
			t.Fatalf("%s %q: %d %s", a.mode, a.q, a.st, a.body)
		}
		wantHits(t, cpu, a.q, a.mode, 5, a.r.Hits)
		procs[a.r.Processor]++
	}
	if procs["gpu"] != len(answers) {
		t.Fatalf("processors %v, want every answer from the gpu", procs)
	}
	if st := s.Stats(); st.Queries != int64(len(answers)) || st.Batches < 1 {
		t.Fatalf("stats %+v for %d queries", st, len(answers))
	}
	// The fits PipeModel's bound reads (qp bench pipebound): exported,
	// and the device phase's measured.
	m := scrape(t, hs.URL)
	for _, name := range []string{"qp_serve_gpu_device_fixed_seconds ", "qp_serve_gpu_device_per_query_seconds ",
		"qp_serve_gpu_prepare_fixed_seconds ", "qp_serve_gpu_prepare_per_query_seconds "} {
		if !strings.Contains(m, name) {
			t.Errorf("metrics lack %s", name)
		}
	}
	if pm, ok := s.PipeModel(); !ok || pm.DeviceA+pm.DeviceB <= 0 {
		t.Errorf("PipeModel after %d batches: %+v, %v", s.Stats().Batches, pm, ok)
	}
	// Every batch logged whole, with the backend's account of its device
	// phase (GET /debug/batches).
	var rep BatchReport
	if st, body := get(t, hs.URL+"/debug/batches?rows=1", &rep); st != 200 {
		t.Fatalf("/debug/batches: %d %s", st, body)
	}
	st := s.Stats()
	queries := 0
	for _, r := range rep.Rows {
		queries += r.N
		if r.Sets < 1 || r.DriverCalls < 1 || r.OwnerRun <= 0 || r.OwnerRun+r.Finish > r.Device || r.Finish < 0 {
			t.Errorf("batch %+v: want sets, driver calls, owner run > 0, finish >= 0 and owner run + finish <= device phase", r)
		}
	}
	if int64(rep.Batches) != st.Batches || int64(queries) != st.Queries || len(rep.Rows) != rep.Batches {
		t.Errorf("/debug/batches: %d batches (%d rows) of %d queries; the server ran %d of %d", rep.Batches, len(rep.Rows), queries, st.Batches, st.Queries)
	}
	// Every batch closed by one rule, none by the wait (a pipelined GPU's
	// batch closes by the device, not by --batch-wait).
	if c := closeCounts(s.b); sum(c[:]) != st.Batches || c[closeWait] != 0 || c[closeDrain] != 0 {
		t.Errorf("closes %v (idle, device, threshold, cap, wait, drain) for %d batches", c, st.Batches)
	}
}
