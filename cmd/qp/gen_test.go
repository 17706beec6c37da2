package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qpengine/qp/bench/collstats"
	"github.com/qpengine/qp/gen"
)

// TestGenTopicsCLI: --save-params then --params regenerates the identical
// index; --fit on it writes a collection of the same size; bad flags fail
// with clear errors and write nothing.
func TestGenTopicsCLI(t *testing.T) {
	dir := t.TempDir()
	qlog := filepath.Join(dir, "queries.txt")
	if err := os.WriteFile(qlog, []byte("1:alpha beta\n2:beta gamma delta\n3:alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) error {
		return commands["gen"].run(append([]string{"--quiet", "--queries", qlog}, args...))
	}
	a, b := filepath.Join(dir, "a.idx"), filepath.Join(dir, "b.idx")
	params := filepath.Join(dir, "p.json")
	if err := run("--docs", "800", "--out", a, "--save-params", params); err != nil {
		t.Fatal(err)
	}
	if err := run("--params", params, "--out", b); err != nil {
		t.Fatal(err)
	}
	ba, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if len(ba) == 0 || len(ba) != len(bb) {
		t.Fatalf("index from saved params: %d bytes, original %d", len(bb), len(ba))
	}
	// --fit fits the topic spread too; its saved parameters regenerate
	// the same collection.
	fit, fit2 := filepath.Join(dir, "fit.idx"), filepath.Join(dir, "fit2.idx")
	fparams := filepath.Join(dir, "fit.json")
	if err := run("--fit", a, "--out", fit, "--save-params", fparams); err != nil {
		t.Fatal(err)
	}
	fp, err := gen.LoadParams(fparams)
	if err != nil {
		t.Fatal(err)
	}
	if fp.TopicSpread < 1 {
		t.Errorf("--fit saved topic_spread %d, want a fitted value >= 1", fp.TopicSpread)
	}
	// --fit raises φ from 0.95 at most to 0.999; --query-topical
	// overrides it (no fit), --fit-query-topical=false keeps 0.95.
	if fp.QueryTopical < gen.DefaultQueryTopical || fp.QueryTopical > gen.MaxFitQueryTopical {
		t.Errorf("--fit saved query_topical %v, want %v..%v", fp.QueryTopical, gen.DefaultQueryTopical, gen.MaxFitQueryTopical)
	}
	for _, c := range []struct {
		flag string
		want float64
	}{{"--query-topical=0.7", 0.7}, {"--fit-query-topical=false", gen.DefaultQueryTopical}} {
		qparams := filepath.Join(dir, "q"+c.flag[2:8]+".json")
		if err := run("--fit", a, "--fit-topics=false", c.flag, "--save-params", qparams); err != nil {
			t.Fatal(err)
		}
		if qp, err := gen.LoadParams(qparams); err != nil || qp.QueryTopical != c.want {
			t.Errorf("%s: query_topical %v (err %v), want %v", c.flag, qp.QueryTopical, err, c.want)
		}
	}
	if err := run("--params", fparams, "--out", fit2); err != nil {
		t.Fatal(err)
	}
	fa, _ := os.ReadFile(fit)
	fb, _ := os.ReadFile(fit2)
	if len(fa) == 0 || len(fa) != len(fb) {
		t.Fatalf("index from fitted params: %d bytes, fitted %d", len(fb), len(fa))
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "bogus", "--out", filepath.Join(dir, "x")}, "--model"},
		{[]string{"--model", "independent", "--text", filepath.Join(dir, "x.jsonl"), "--out", filepath.Join(dir, "x")}, "needs --model topics"},
		{[]string{"--params", filepath.Join(dir, "missing.json"), "--out", filepath.Join(dir, "x")}, "missing.json"},
		{[]string{"--fit", filepath.Join(dir, "missing.idx"), "--out", filepath.Join(dir, "x")}, "missing.idx"},
		{[]string{"--docs", "0", "--out", filepath.Join(dir, "x")}, "docs"},
		{[]string{"--docs", "10", "--topics", "-1", "--out", filepath.Join(dir, "x")}, "topics"},
		{[]string{"--docs", "10"}, "--out, --text or --save-params"},
		{[]string{"--params", params, "--fit", a, "--out", filepath.Join(dir, "x")}, "use one"},
		{[]string{"--docs", "10", "--save-params", params}, "exists"},
		{[]string{"--docs", "10", "--mem", "lots", "--out", filepath.Join(dir, "x")}, "--mem"},
		{[]string{"--docs", "10", "--validate", "--out", filepath.Join(dir, "x")}, "--validate needs --fit"},
		{[]string{"--fit", a, "--docs", "10", "--validate", "--out", filepath.Join(dir, "x")}, "drop --docs"},
		{[]string{"--docs", "10", "--topic-spread", "-1", "--out", filepath.Join(dir, "x")}, "--topic-spread"},
		{[]string{"--docs", "10", "--query-topical", "1", "--out", filepath.Join(dir, "x")}, "--query-topical 1: want"},
		{[]string{"--docs", "10", "--query-topical", "-0.5", "--out", filepath.Join(dir, "x")}, "--query-topical -0.5: want"},
		{[]string{"--model", "independent", "--query-topical", "0.5", "--out", filepath.Join(dir, "x")}, "needs --model topics"},
		{[]string{"--fit", a, "--validate", "--validate-gen", "0", "--out", filepath.Join(dir, "x")}, "--validate-gen 0"},
		{[]string{"--docs", "10", "--validate-gen", "100", "--out", filepath.Join(dir, "x")}, "--validate-gen needs --validate"},
		{[]string{"--docs", "10", "--topic-spread", "2000000", "--out", filepath.Join(dir, "x")}, "--topic-spread"},
		{[]string{"--docs", "10", "--fit-topics", "--out", filepath.Join(dir, "x")}, "--fit-topics needs --fit"},
		{[]string{"--docs", "10", "--fit-query-topical", "--out", filepath.Join(dir, "x")}, "--fit-query-topical needs --fit"},
		{[]string{"--model", "independent", "--fit-query-topical=false", "--out", filepath.Join(dir, "x")}, "needs --model topics"},
		{[]string{"--model", "independent", "--topic-spread", "64", "--out", filepath.Join(dir, "x")}, "needs --model topics"},
	} {
		err := run(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("qp gen %s: err = %v, want it to mention %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a failed qp gen left an output file")
	}
}

// TestGenValidateCLI: --fit --validate writes the stand-in and prints the
// comparison table and the targets, each row counted once.
func TestGenValidateCLI(t *testing.T) {
	dir := t.TempDir()
	qlog := filepath.Join(dir, "06.queries.txt")
	if err := os.WriteFile(qlog, []byte("1:alpha beta\n2:beta gamma delta\n3:alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a.idx")
	if err := commands["gen"].run([]string{"--quiet", "--queries", qlog, "--docs", "600", "--out", a}); err != nil {
		t.Fatal(err)
	}
	out, err := captureStdout(func() error {
		return commands["gen"].run([]string{"--quiet", "--queries", qlog, "--fit", a, "--validate", "--validate-gen", "400"})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bp128 bits/docID", "AND results median", "R k=3 x=2 s.e. (%)", "issue 20 targets", "bits per docID within 15%", "rows within their targets"} {
		if !strings.Contains(out, want) {
			t.Errorf("--validate output lacks %q:\n%s", want, out)
		}
	}
}

// TestValidateWithin: the target test of one row.
func TestValidateWithin(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		a, b, f     float64
		ok, defined bool
	}{
		{10, 11.4, 1.15, true, true}, {10, 11.6, 1.15, false, true}, {10, 8.6, 1.15, true, true},
		{2, 2.9, 1.5, true, true}, {2, 3.1, 1.5, false, true}, {3, 2.1, 1.5, true, true}, {3, 1.9, 1.5, false, true},
		{0, 0, 1.5, true, true}, {0, 1, 1.5, false, true}, {nan, nan, 1.5, false, false}, {nan, 1, 1.5, false, true},
	} {
		ok, defined := within(collstatsRow(c.a, c.b), c.f)
		if ok != c.ok || defined != c.defined {
			t.Errorf("within(%g, %g, %g) = %v, %v; want %v, %v", c.a, c.b, c.f, ok, defined, c.ok, c.defined)
		}
	}
}

func collstatsRow(a, b float64) collstats.Row { return collstats.Row{A: a, B: b} }
