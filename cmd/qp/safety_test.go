package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qpengine/qp/cuda"
)

// Tests of issue 19 ("data safety and bad input"), one per case, through
// the real CLI (runQP runs main() in a child process).

const safetyDocs = `{"id":"d1","text":"parallel sorting algorithms","year":"1990"}
{"id":"d2","text":"parallel query processing on graphics processors","year":"2009"}
{"id":"d3","text":"compressed inverted indexes","year":"2011"}
`

// fixture writes docs.jsonl and indexes it (English stop words).
func fixture(t *testing.T) (dir, docs, idx string) {
	t.Helper()
	dir = t.TempDir()
	docs = filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(docs, []byte(safetyDocs), 0o644); err != nil {
		t.Fatal(err)
	}
	idx = filepath.Join(dir, "idx.qp")
	if _, e, code := runQP(t, "index", "--in", docs, "--out", idx, "--stopwords", "english", "--quiet"); code != 0 {
		t.Fatalf("indexing the fixture: exit %d: %s", code, e)
	}
	return dir, docs, idx
}

func writeString(t *testing.T, path, s string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// expectFail runs qp and checks a non-zero exit with every want in its
// standard error.
func expectFail(t *testing.T, want []string, args ...string) string {
	t.Helper()
	_, e, code := runQP(t, args...)
	if code == 0 {
		t.Errorf("qp %s: exit 0, want a failure", strings.Join(args, " "))
	}
	for _, w := range want {
		if !strings.Contains(e, w) {
			t.Errorf("qp %s: stderr %q lacks %q", strings.Join(args, " "), e, w)
		}
	}
	return e
}

func unchanged(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s changed (%v)", path, err)
	}
}

// Case 1: an index never replaces one of its inputs, named or inside an
// --in directory, under its name or as the OUT.tmp it is written to.
func TestIndexRefusesToOverwriteInput(t *testing.T) {
	dir, docs, _ := fixture(t)
	orig := []byte(safetyDocs)
	expectFail(t, []string{"refusing to write", "input " + docs}, "index", "--in", docs, "--out", docs)
	unchanged(t, docs, orig)
	// Through a symbolic link, a hard link, a directory.
	sym := filepath.Join(dir, "link.qp")
	if err := os.Symlink(docs, sym); err != nil {
		t.Fatal(err)
	}
	expectFail(t, []string{"refusing to write"}, "index", "--in", docs, "--out", sym)
	hard := filepath.Join(dir, "hard.qp")
	if err := os.Link(docs, hard); err != nil {
		t.Fatal(err)
	}
	expectFail(t, []string{"refusing to write"}, "index", "--in", docs, "--out", hard)
	expectFail(t, []string{"refusing to write", "input " + docs}, "index", "--in", dir, "--out", docs)
	// OUT.tmp is an input.
	tmpIn := writeString(t, filepath.Join(dir, "new.qp.tmp"), safetyDocs)
	expectFail(t, []string{"temporary file of " + filepath.Join(dir, "new.qp")}, "index", "--in", tmpIn, "--format", "jsonl", "--out", filepath.Join(dir, "new.qp"))
	unchanged(t, tmpIn, orig)
	unchanged(t, docs, orig)
}

// Case 2: a run is never written over the index or the query file.
func TestQueryRefusesToOverwriteInputs(t *testing.T) {
	dir, _, idx := fixture(t)
	q := writeString(t, filepath.Join(dir, "q.tsv"), "1\tparallel\n")
	before, _ := os.ReadFile(idx)
	expectFail(t, []string{"--run", "index " + idx}, "query", idx, "--queries", q, "--run", idx)
	unchanged(t, idx, before)
	expectFail(t, []string{"--run", "query file " + q}, "query", idx, "--queries", q, "--run", q)
	unchanged(t, q, []byte("1\tparallel\n"))
	expectFail(t, []string{"does not exist"}, "query", idx, "--queries", q, "--run", filepath.Join(dir, "nonexistent", "r.run"))
}

// Case 3: a failed query makes the run fail, naming its qid, unless
// --allow-partial.
func TestQueryFailedQueriesExitNonZero(t *testing.T) {
	dir, _, idx := fixture(t)
	q := writeString(t, filepath.Join(dir, "q.tsv"), "1\tthe\n2\tparallel\n3\tof\n")
	run := filepath.Join(dir, "r.run")
	expectFail(t, []string{"2 of 3 queries failed (qids 1, 3)", "--allow-partial"}, "query", idx, "--queries", q, "--run", run, "--quiet", "--device", "cpu")
	_, e, code := runQP(t, "query", idx, "--queries", q, "--run", run, "--quiet", "--device", "cpu", "--allow-partial")
	if code != 0 || !strings.Contains(e, "qids 1, 3") {
		t.Errorf("--allow-partial: exit %d, stderr %q", code, e)
	}
	b, _ := os.ReadFile(run)
	if !strings.HasPrefix(string(b), "2 Q0 ") {
		t.Errorf("run %q", b)
	}
	// More failures than are named: a count.
	var many strings.Builder
	for i := 0; i < 25; i++ {
		many.WriteString(strings.Repeat("x", i%3) + itoa(i) + "\tthe\n")
	}
	q2 := writeString(t, filepath.Join(dir, "q2.tsv"), many.String())
	expectFail(t, []string{"25 of 25 queries failed", "(15 more)"}, "query", idx, "--queries", q2, "--run", run, "--quiet", "--device", "cpu")
}

func itoa(i int) string { return string(rune('a'+i/10)) + string(rune('0'+i%10)) }

// Case 6: a repeated qid is an error naming both lines.
func TestQueryDuplicateQID(t *testing.T) {
	dir, _, idx := fixture(t)
	q := writeString(t, filepath.Join(dir, "q.tsv"), "1\tparallel\n\n1\tsorting\n")
	expectFail(t, []string{"line 3", `"1"`, "line 1"}, "query", idx, "--queries", q, "--run", filepath.Join(dir, "r.run"))
}

// Case 5 and 13: repeated ids and ids a run cannot hold fail at index
// time, or are skipped with --on-error skip.
func TestIndexBadAndDuplicateIDs(t *testing.T) {
	dir := t.TempDir()
	in := writeString(t, filepath.Join(dir, "d.jsonl"), `{"id":"d1","text":"alpha"}
{"id":"d 2","text":"beta"}
{"id":"d1","text":"gamma"}
`)
	out := filepath.Join(dir, "d.qp")
	expectFail(t, []string{in + `:2: bad document id "d 2": contains white space`}, "index", "--in", in, "--out", out)
	_, e, code := runQP(t, "index", "--in", in, "--out", out, "--on-error", "skip", "--quiet")
	if code != 0 || !strings.Contains(e, in+`:3: duplicate document id "d1": first at `+in+":1") || !strings.Contains(e, "skipped 2") {
		t.Errorf("skip: exit %d, stderr %q", code, e)
	}
}

// Case 4: a damaged .gz file stops the build, or with --on-error skip is
// dropped with a warning; its damaged text is never indexed.
func TestIndexCorruptGzip(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	for i := 0; i < 500; i++ {
		zw.Write([]byte(`{"id":"g` + itoa(i%260) + itoa(i/260) + `","text":"gzipped document text"}` + "\n"))
	}
	zw.Close()
	data := b.Bytes()
	trunc := filepath.Join(dir, "t.jsonl.gz")
	if err := os.WriteFile(trunc, data[:len(data)-20], 0o644); err != nil {
		t.Fatal(err)
	}
	data[len(data)-6] ^= 0x40 // the CRC
	gz := filepath.Join(dir, "a.jsonl.gz")
	if err := os.WriteFile(gz, data, 0o644); err != nil {
		t.Fatal(err)
	}
	plain := writeString(t, filepath.Join(dir, "b.jsonl"), safetyDocs)
	out := filepath.Join(dir, "x.qp")
	expectFail(t, []string{gz, "damaged compressed file", "checksum"}, "index", "--in", gz, "--in", plain, "--out", out)
	o, e, code := runQP(t, "index", "--in", gz, "--in", plain, "--out", out, "--on-error", "skip", "--quiet")
	if code != 0 || !strings.Contains(e, "WARNING: "+gz+" was NOT indexed: damaged compressed file (gzip: invalid checksum)") || !strings.Contains(o, "indexed 3 documents") {
		t.Errorf("skip: exit %d, stdout %q, stderr %q", code, o, e)
	}
	// Truncated: the complete documents before the cut are kept.
	o, e, code = runQP(t, "index", "--in", trunc, "--in", plain, "--out", out, "--on-error", "skip", "--quiet")
	if code != 0 || !strings.Contains(e, "WARNING: the documents of "+trunc+" after line ") || !strings.Contains(e, "truncated stream") ||
		strings.Contains(o, "indexed 3 documents") || !strings.Contains(o, "indexed ") {
		t.Errorf("truncated, skip: exit %d, stdout %q, stderr %q", code, o, e)
	}
}

// Case 7: no documents is an error and writes nothing.
func TestIndexNoDocuments(t *testing.T) {
	dir := t.TempDir()
	empty := writeString(t, filepath.Join(dir, "e.jsonl"), "")
	out := filepath.Join(dir, "e.qp")
	expectFail(t, []string{"no documents"}, "index", "--in", empty, "--out", out)
	bad := writeString(t, filepath.Join(dir, "bad.jsonl"), "not json\n")
	expectFail(t, []string{"no documents", "every document or file was skipped"}, "index", "--in", bad, "--out", out, "--on-error", "skip")
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("files: %v", ents)
	}
}

// Case 12: numeric flags out of range and an unknown --docid-order field
// are rejected, naming the valid values.
func TestBadFlagValues(t *testing.T) {
	dir, docs, idx := fixture(t)
	out := filepath.Join(dir, "x.qp")
	for _, c := range []struct {
		want string
		args []string
	}{
		{"--block 0: want 1..65536", []string{"index", "--in", docs, "--out", out, "--block", "0"}},
		{"--block 70000", []string{"index", "--in", docs, "--out", out, "--block", "70000"}},
		{"--k1 -5: want a finite value >= 0", []string{"index", "--in", docs, "--out", out, "--k1", "-5"}},
		{"--b 1.5: want 0 <= b <= 1", []string{"index", "--in", docs, "--out", out, "--b", "1.5"}},
		{"--threads -2", []string{"index", "--in", docs, "--out", out, "--threads", "-2"}},
		{`--docid-order "nosuchfield": the document has no field "nosuchfield" (its fields: year)`, []string{"index", "--in", docs, "--out", out, "--docid-order", "nosuchfield"}},
		{"want input, random, bp, or a field", []string{"index", "--in", docs, "--out", out, "--docid-order", "bisection"}},
		{"--k1 -5", []string{"query", idx, "--k1", "-5", "x"}},
		{"--b 2", []string{"query", idx, "--b", "2", "x"}},
		{"--threads -1", []string{"query", idx, "--threads", "-1", "x"}},
		{"--limit -1", []string{"query", idx, "--queries", docs, "--limit", "-1"}},
		{"--block 0", []string{"gen", "--out", out, "--docs", "10", "--block", "0"}},
		{"--docs 0", []string{"gen", "--out", out, "--docs", "0"}},
		{"--threads -1", []string{"gen", "--out", out, "--docs", "10", "--threads", "-1"}},
		{`--setups: scheduler: unknown setup "both"`, []string{"bench", "sched", idx, docs, "--setups", "cpu,both"}},
		{"--search-repeats 0: want at least 1", []string{"bench", "sched", idx, docs, "--search-repeats", "0"}},
		{"--min-duration -1s: want >= 0", []string{"bench", "sched", idx, docs, "--min-duration", "-1s"}},
		{"--cpu-batch -1ms: want >= 0", []string{"bench", "sched", idx, docs, "--cpu-batch", "-1ms"}},
		{"--split-probe -1s: want >= 0", []string{"bench", "sched", idx, docs, "--split-probe", "-1s"}},
		{"--hybrid-cpu-slots -2: want -1, 0 or a slot count", []string{"bench", "sched", idx, docs, "--hybrid-cpu-slots", "-2"}},
		{`--placement: scheduler: unknown placement "fastest" (cost, gpu-first)`, []string{"bench", "sched", idx, docs, "--placement", "fastest"}},
		{"--target 0: want a fraction in (0, 1]", []string{"bench", "sched", idx, docs, "--target", "0"}},
		{"--target 1.5: want a fraction in (0, 1]", []string{"bench", "sched", idx, docs, "--target", "1.5"}},
		{"--cpu-cheap -1: want >= 0", []string{"bench", "sched", idx, docs, "--cpu-cheap", "-1"}},
		{`--client "bogus": want vegeta or raw`, []string{"bench", "serve", idx, docs, "--client", "bogus"}},
		{`--client "bogus": want vegeta or raw`, []string{"bench", "load", "http://127.0.0.1:1", docs, "--client", "bogus"}},
		{"--max-gen-lag 1ms: want >= 0, with --client raw and a --rate", []string{"bench", "load", "http://127.0.0.1:1", docs, "--client", "raw", "--max-gen-lag", "1ms"}},
		{"--max-gen-lag 1ms: want >= 0, with --client raw and a --rate", []string{"bench", "load", "http://127.0.0.1:1", docs, "--rate", "100", "--max-gen-lag", "1ms"}},
		{"--max-gen-lag -1ms: want >= 0", []string{"bench", "load", "http://127.0.0.1:1", docs, "--client", "raw", "--rate", "100", "--max-gen-lag", "-1ms"}},
		{`--rate "0": want positive numbers`, []string{"bench", "pipebound", "--device-a", "3ms", "--device-b", "4us", "--rate", "0"}},
		{"--rate: at least one rate", []string{"bench", "pipebound", "--device-a", "3ms", "--device-b", "4us"}},
		{"--q 1: want 0 < q < 1", []string{"bench", "pipebound", "--device-a", "3ms", "--device-b", "4us", "--rate", "1000", "--q", "1"}},
		{"without URL, --device-a and --device-b are required", []string{"bench", "pipebound", "--rate", "1000"}},
		{`--diagnose: bad CPU worker count "x"`, []string{"bench", "sched", idx, docs, "--diagnose", "0,x"}},
		{"--cpu-nice 20: want 0 to 19", []string{"bench", "sched", idx, docs, "--cpu-nice", "20"}},
		{"--spare-fixed -1: want >= 0", []string{"bench", "sched", idx, docs, "--spare-fixed", "-1"}},
		{"--submit-quantum -1ms: want >= 0", []string{"bench", "sched", idx, docs, "--submit-quantum", "-1ms"}},
		{`invalid boolean value "maybe" for -cpu-help`, []string{"bench", "sched", idx, docs, "--cpu-help=maybe"}},
		{`invalid boolean value "maybe" for -carry-lookups`, []string{"bench", "sched", idx, docs, "--carry-lookups=maybe"}},
		{"--cpu-share -1: want >= 0", []string{"bench", "sched", idx, docs, "--cpu-share", "-1"}},
		{"--cpu-share NaN: want >= 0", []string{"bench", "sched", idx, docs, "--cpu-share", "NaN"}},
		{"exists; not overwriting it", []string{"bench", "sched", idx, docs, "--cpuprofile", docs}},
		{"--diagnose-for 0s: want > 0", []string{"bench", "sched", idx, docs, "--diagnose", "1", "--diagnose-for", "0s"}},
		{"--gpu-slots 0: want 1 to 8", []string{"bench", "sched", idx, docs, "--gpu-slots", "0"}},
		{"--gpu-slots 9: want 1 to 8", []string{"bench", "sched", idx, docs, "--gpu-slots", "9"}},
		{"--prepare-cores -1: want 0 (all) to GOMAXPROCS", []string{"bench", "sched", idx, docs, "--prepare-cores", "-1"}},
		{"want on, off or auto, not \"sometimes\"", []string{"bench", "sched", idx, docs, "--prepare-adapt=sometimes"}},
		{"want on, off or auto, not \"maybe\"", []string{"bench", "query", idx, docs, "--gpu-bitmap-and=maybe"}},
		{"--gpu-bitmap-and off: write the value with '=': --gpu-bitmap-and=off", []string{"bench", "query", idx, docs, "--gpu-bitmap-and", "off"}},
		{"--prepare-cores 100000: want 0 (all) to GOMAXPROCS", []string{"bench", "sched", idx, docs, "--prepare-cores", "100000"}},
		{`--owner-cpu "x": want auto, off or a CPU number`, []string{"serve", idx, "--owner-cpu", "x"}},
		{`--owner-cpu "-3": want auto, off or a CPU number`, []string{"serve", idx, "--owner-cpu=-3"}},
		{"--owner-cpu 100000: not a CPU this process may run on", []string{"serve", idx, "--owner-cpu", "100000"}},
		{"--owner-cpu, --owner-poll and --gpu-profile need a GPU", []string{"serve", idx, "--device", "cpu", "--owner-poll"}},
		{"--owner-cpu, --owner-poll and --gpu-profile need a GPU", []string{"serve", idx, "--device", "cpu", "--gpu-profile"}},
	} {
		expectFail(t, []string{c.want}, c.args...)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an index was written")
	}
	// A field every document has works.
	if _, e, code := runQP(t, "index", "--in", docs, "--out", out, "--docid-order", "year", "--quiet"); code != 0 {
		t.Errorf("--docid-order year: exit %d: %s", code, e)
	}
}

// Case 9: the CPU-fallback notice prints once per process, never with
// --quiet.
func TestCPUFallbackNotice(t *testing.T) {
	if ok, _ := cuda.Available(); ok {
		t.Skip("a GPU is usable: no fallback")
	}
	_, _, idx := fixture(t)
	_, e, code := runQP(t, "query", idx, "--quiet", "parallel")
	if code != 0 || strings.Contains(e, "using the CPU backend") {
		t.Errorf("--quiet: exit %d, stderr %q", code, e)
	}
	_, e, _ = runQP(t, "query", idx, "parallel")
	if strings.Count(e, "using the CPU backend") != 1 {
		t.Errorf("without --quiet: stderr %q, want the notice once", e)
	}
	var buf bytes.Buffer
	old := stderr
	stderr = &buf
	defer func() { stderr = old }()
	for i := 0; i < 4; i++ { // as the demo's four query steps
		deviceNotice("qp: no GPU; using the CPU backend", false)
	}
	if n := strings.Count(buf.String(), "using the CPU backend"); n > 1 {
		t.Errorf("%d notices in one process", n)
	}
}

// A bench's outputs (--csv, --plot, --cpuprofile) are never written over
// its index or query log.
func TestBenchRefusesToOverwriteInputs(t *testing.T) {
	dir, _, idx := fixture(t)
	q := writeString(t, filepath.Join(dir, "q.txt"), "1:parallel\n")
	before, _ := os.ReadFile(idx)
	for _, c := range [][]string{
		{"bench", "query", idx, q, "--csv", q},
		{"bench", "query", idx, q, "--plot", idx},
		{"bench", "query", idx, q, "--cpuprofile", q},
		{"bench", "intersect", idx, q, "--csv", q},
		{"bench", "decode", idx, "--csv", idx},
		{"bench", "decode", idx, "--plot", idx},
		{"compare", idx, idx, "--csv", idx},
	} {
		expectFail(t, []string{"refusing to write", "input"}, c...)
		unchanged(t, idx, before)
		unchanged(t, q, []byte("1:parallel\n"))
	}
}
