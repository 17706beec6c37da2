package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qpengine/qp/eval"
)

// TestQueriesAndCompare runs `qp queries` twice with one seed (same bytes,
// a file `qp query --queries` reads) and `qp compare` of an index with
// itself (every ratio 1), and checks that bad values fail without writing.
func TestQueriesAndCompare(t *testing.T) {
	dir := t.TempDir()
	qlog := filepath.Join(dir, "log.txt")
	if err := os.WriteFile(qlog, []byte("1:alpha beta\n2:beta gamma delta\n3:alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dir, "g.qp")
	if err := commands["gen"].run([]string{"--docs", "5000", "--out", idx, "--quiet", "--queries", qlog}); err != nil {
		t.Fatal(err)
	}
	var outs [][]byte
	for _, name := range []string{"q1.tsv", "q2.tsv"} {
		out := filepath.Join(dir, name)
		if err := commands["queries"].run([]string{idx, "--out", out, "--n", "40", "--seed", "3"}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, b)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatal("same seed, different query files")
	}
	qs, err := eval.ReadQueries(bytes.NewReader(outs[0]))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 120 || !strings.HasPrefix(qs[0].ID, "and-") || !strings.HasPrefix(qs[119].ID, "known-") {
		t.Fatalf("%d queries, first %q, last %q", len(qs), qs[0].ID, qs[len(qs)-1].ID)
	}
	for _, bad := range [][]string{
		{"--n", "0"}, {"--kinds", "and,nand"}, {"--terms", "3-2"}, {"--buckets", "0.1,0.2,0.01"}, {"--buckets", "x,1,2"}, {"--min-df", "0"},
	} {
		out := filepath.Join(dir, "bad.tsv")
		if err := commands["queries"].run(append([]string{idx, "--out", out}, bad...)); err == nil {
			t.Errorf("qp queries %v accepted", bad)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("qp queries %v wrote %s", bad, out)
		}
	}
	before, _ := os.ReadFile(idx)
	if err := commands["queries"].run([]string{idx, "--out", idx, "--n", "5"}); err == nil {
		t.Error("qp queries --out INDEX accepted")
	}
	if err := commands["compare"].run([]string{idx, idx, "--queries", filepath.Join(dir, "q1.tsv"), "--csv", idx}); err == nil {
		t.Error("qp compare --csv INDEX accepted")
	}
	if after, _ := os.ReadFile(idx); !bytes.Equal(before, after) {
		t.Fatal("the index changed")
	}

	c := filepath.Join(dir, "cmp.csv")
	if err := commands["compare"].run([]string{idx, idx, "--queries", filepath.Join(dir, "q1.tsv"), "--generate", "known", "--gen-n", "20", "--csv", c}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 40 {
		t.Fatalf("%d CSV rows", len(rows))
	}
	for _, r := range rows[1:] {
		if r[4] != "" && r[4] != "1" {
			t.Errorf("self-comparison row %v: ratio %s", r[:2], r[4])
		}
	}
	for _, bad := range [][]string{{"--limit", "-1"}, {"--generate", "xor"}, {"--k", "0"}, {"--max-terms", "1"}, {"--queries", filepath.Join(dir, "missing.tsv")}} {
		if err := commands["compare"].run(append([]string{idx, idx}, bad...)); err == nil {
			t.Errorf("qp compare %v accepted", bad)
		}
	}
}
