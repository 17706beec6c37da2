package qp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qpengine/qp/engine"
)

// fakeDF gives each term the document frequency its text names ("t300":
// 300) for queryClass.
func fakeDF(terms []string, dfs []uint32) {
	for i, t := range terms {
		var n uint32
		for _, c := range strings.TrimPrefix(t, "t") {
			n = 10*n + uint32(c-'0')
		}
		dfs[i] = n
	}
}

// profileQueries are n queries of mode m, each of terms terms of document
// frequency df.
func profileQueries(n int, m engine.Mode, terms int, df string) []engine.Query {
	qs := queriesOf(n, m)
	for i := range qs {
		qs[i].Terms = nil
		for range terms {
			qs[i].Terms = append(qs[i].Terms, "t"+df)
		}
	}
	return qs
}

// testProfile opens a profile at a new path for a fake index file in
// another directory; notes collects its notices.
func testProfile(t *testing.T) (open func() *profile, path, index string, notes *[]string) {
	t.Helper()
	index = filepath.Join(t.TempDir(), "x.qp")
	if err := os.WriteFile(index, []byte("an index's header"), 0o644); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "qp", "auto-profile.json")
	notes = new([]string)
	open = func() *profile {
		return openProfile(path, index, 16, "Fake GPU", fakeDF, func(s string) { *notes = append(*notes, s) })
	}
	return open, path, index, notes
}

// TestProfileKey: the profile's identity changes with the index file's
// contents, size and modification time, the CPU workers and the GPU's
// name; the query class separates short queries of long lists from
// longer queries of rare terms, and not two samples of one set.
func TestProfileKey(t *testing.T) {
	open, _, index, _ := testProfile(t)
	p := open()
	if p == nil {
		t.Fatal("no profile")
	}
	id := p.identity
	if q := openProfile(p.path, index, 8, "Fake GPU", fakeDF, func(string) {}); q.identity == id {
		t.Error("the identity ignores the CPU workers")
	}
	if q := openProfile(p.path, index, 16, "Other GPU", fakeDF, func(string) {}); q.identity == id {
		t.Error("the identity ignores the GPU")
	}
	if err := os.WriteFile(index, []byte("an index's headeR"), 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(index, past, past); err != nil {
		t.Fatal(err)
	}
	if q := open(); q.identity == id {
		t.Error("the identity ignores the index's contents and time")
	}
	trec := queryClass(profileQueries(20000, engine.And, 2, "300000"), DefaultChunk, fakeDF)
	known := queryClass(profileQueries(20000, engine.And, 5, "40"), DefaultChunk, fakeDF)
	if trec == known {
		t.Errorf("TREC-like and known-item-like queries share the class %q", trec)
	}
	if again := queryClass(profileQueries(3000, engine.And, 2, "300001"), DefaultChunk, fakeDF); again != trec {
		t.Errorf("one set's classes %q and %q", trec, again)
	}
	t.Logf("classes: %s, %s", trec, known)
}

// profiledRun is one run (a new router, as a new process has) of qs
// under the profile open gives, on fakes fitted to the device's TREC AND
// (the CPU 1.4× faster than the GPU's stream).
func profiledRun(t *testing.T, p *profile, qs []engine.Query) (*router, *fakeProc) {
	t.Helper()
	clk, cpu, gpu := deviceFakes(qs[0].Mode, 0.236, 0.339)
	r := oneClockRouter(clk, cpu, gpu)
	r.race = simRace(clk, cpu, gpu, 0.4)
	r.profile = p
	autoStreamTime(t, clk, r, cpu, gpu, qs)
	return r, cpu
}

// TestProfileRouting: a run records both processors' stream times; the
// next run (a new router) with the same key starts on the recorded
// winner's own stream with no race, and a race re-checks the record
// after profileRecheck such runs; a run of another class races.
func TestProfileRouting(t *testing.T) {
	open, path, _, notes := testProfile(t)
	qs := profileQueries(100000, engine.And, 2, "300000")
	r, _ := profiledRun(t, open(), qs)
	if st := r.modes[engine.And].stream; st.races != 1 || st.profiled != 0 {
		t.Fatalf("the first run: %d races, %d profiled\n%s", st.races, st.profiled, r.routing())
	}
	var f profileFile
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &f)
	}
	if err != nil || len(f.Entries) != 1 || !(f.Entries[0].CPU > 0 && f.Entries[0].GPU > f.Entries[0].CPU) {
		t.Fatalf("the profile after a run: %v %+v", err, f)
	}
	for run := range profileRecheck {
		r, cpu := profiledRun(t, open(), qs)
		st := r.modes[engine.And].stream
		if st.races != 0 || st.profiled != 1 || cpu.streamed != len(qs) {
			t.Fatalf("repeat run %d: %d races, %d profiled, the CPU streamed %d of %d\n%s", run, st.races, st.profiled, cpu.streamed, len(qs), r.routing())
		}
	}
	r, _ = profiledRun(t, open(), qs)
	if st := r.modes[engine.And].stream; st.races != 1 {
		t.Errorf("after %d runs on the record: %d races", profileRecheck, st.races)
	}
	if r, _ := profiledRun(t, open(), profileQueries(100000, engine.And, 5, "40")); r.modes[engine.And].stream.races != 1 {
		t.Error("a run of another class did not race")
	}
	if len(*notes) != 0 {
		t.Errorf("notices: %q", *notes)
	}
}

// TestProfileNarrowMargin: a record whose winner is less than
// profileMargin faster is raced again on every run.
func TestProfileNarrowMargin(t *testing.T) {
	open, _, _, _ := testProfile(t)
	p := open()
	p.record("and", "c", [2]float64{procCPU: 1e-6, procGPU: 1.2e-6}, true)
	if _, ok := open().lookup("and", "c"); ok {
		t.Error("a record 1.2× apart routed a run without a race")
	}
	p.record("and", "c", [2]float64{procCPU: 1e-6, procGPU: 2e-6}, true)
	if per, ok := open().lookup("and", "c"); !ok || per[procGPU] != 2e-6 {
		t.Errorf("a record 2× apart: %v %v", per, ok)
	}
}

// TestProfileCorruptStale: a corrupt file, or one recorded for another
// state of the index, is noted once and raced past, never fatal; the
// next run rewrites a corrupt file; a profile beside the index is not
// used.
func TestProfileCorruptStale(t *testing.T) {
	open, path, index, notes := testProfile(t)
	qs := profileQueries(100000, engine.And, 2, "300000")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"format": 1, "entries": [{"ident`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ := profiledRun(t, open(), qs)
	if r.modes[engine.And].stream.races != 1 || len(*notes) != 1 || !strings.Contains((*notes)[0], "ignored") {
		t.Fatalf("a corrupt profile: notices %q\n%s", *notes, r.routing())
	}
	if _, ok := open().lookup("and", queryClass(qs, DefaultChunk, fakeDF)); !ok {
		t.Error("the corrupt profile was not rewritten")
	}
	// The index rebuilt: the record is stale.
	*notes = nil
	if err := os.WriteFile(index, []byte("another index's header"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ = profiledRun(t, open(), qs)
	if r.modes[engine.And].stream.races != 1 || len(*notes) != 1 || !strings.Contains((*notes)[0], "another state") {
		t.Errorf("a stale profile: notices %q\n%s", *notes, r.routing())
	}
	*notes = nil
	if p := openProfile(filepath.Join(filepath.Dir(index), "p.json"), index, 16, "Fake GPU", fakeDF, func(s string) { *notes = append(*notes, s) }); p != nil || len(*notes) != 1 {
		t.Errorf("a profile beside the index: %v, notices %q", p, *notes)
	}
}
