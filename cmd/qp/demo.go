package main

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/index"
)

func init() {
	c := command{name: "demo", args: "[--docs N] [--keep DIR]", summary: "the main job on a built-in default: index, query, evaluate, measure"}
	c.run = func(args []string) error {
		fs := newFlags(c, `Runs qp end to end on built-in defaults, in a temporary directory:
  1. indexes the CACM test collection (../shared/data/collections/cacm) with
     Porter stemming and stop words, runs its 64 topics as top-1000 OR
     queries and scores the run (MAP, P@10, nDCG@10) against its qrels;
  2. generates a GOV2-like synthetic index (qp gen, --docs documents) and
     runs the TREC 2006 efficiency queries (first 10,000) in AND, OR and
     AND+OR top-10 on all cores, printing queries/s and latency.
Without ../shared/data, step 1 is skipped and step 2 runs random queries
of 2-4 of the synthetic index's 2,000 most frequent terms. Takes about a
minute on 2 cores.`)
		docs := fs.Int("docs", 200000, "documents of the synthetic collection")
		keep := fs.String("keep", "", "keep the indexes and runs in this directory")
		device := fs.String("device", "auto", "cpu, gpu or auto")
		if _, err := parse(fs, args); err != nil {
			return err
		}
		dir := *keep
		if dir == "" {
			d, err := os.MkdirTemp("", "qp-demo-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			dir = d
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if *device != "cpu" { // the query steps are --quiet: say it once here
			if ok, why := cuda.Available(); !ok {
				fmt.Printf("(%s: the queries run on the CPU)\n", strings.TrimSuffix(why, "; using the CPU backend"))
			}
		}
		step := func(title string, name string, args ...string) error {
			fmt.Printf("\n== %s\n$ qp %s %s\n", title, name, strings.Join(args, " "))
			return commands[name].run(args)
		}
		var coll string
		for _, s := range sharedDirs() {
			if _, err := os.Stat(filepath.Join(s, "data", "collections", "cacm", "docs.jsonl")); err == nil {
				coll = filepath.Join(s, "data", "collections", "cacm")
				break
			}
		}
		if coll != "" {
			cidx := filepath.Join(dir, "cacm.qp")
			crun := filepath.Join(dir, "cacm.run")
			if err := step("Index CACM (3,204 abstracts)", "index", "--in", filepath.Join(coll, "docs.jsonl"), "--out", cidx, "--stem", "english", "--stopwords", "english", "--quiet"); err != nil {
				return err
			}
			if err := step("Run the 64 CACM topics, top-1000 OR, Lucene query-term weighting", "query", cidx, "--device", *device, "--mode", "or", "-k", "1000", "--qtf", "--quiet",
				"--queries", filepath.Join(coll, "queries.tsv"), "--run", crun); err != nil {
				return err
			}
			if err := step("Evaluate (Anserini BM25 publishes MAP 0.3123 on CACM)", "eval", crun, filepath.Join(coll, "qrels")); err != nil {
				return err
			}
		} else {
			fmt.Println("\n(../shared/data not found: skipping the CACM effectiveness step)")
		}
		gidx := filepath.Join(dir, "gov2like.qp")
		if err := step("Generate a GOV2-like synthetic index", "gen", "--docs", fmt.Sprint(*docs), "--out", gidx, "--quiet"); err != nil {
			return err
		}
		qfile := ""
		if logs := defaultQueryLogs(); len(logs) > 0 {
			qfile = logs[len(logs)-1]
		} else {
			qfile = filepath.Join(dir, "queries.txt")
			if err := demoQueries(gidx, qfile, 10000); err != nil {
				return err
			}
			fmt.Printf("(no TREC query log: 10,000 random queries of 2-4 of the index's %d most frequent terms in %s)\n",
				demoVocab, qfile)
		}
		for _, mode := range []string{"and", "or", "andor"} {
			run := filepath.Join(dir, "gov2like-"+mode+".run")
			if err := step("Top-10 "+strings.ToUpper(mode)+" on the synthetic index, all cores", "query", gidx, "--device", *device, "--mode", mode,
				"--queries", qfile, "--limit", "10000", "--run", run, "--quiet"); err != nil {
				return err
			}
		}
		fmt.Printf("\ndone; see 'qp --help' and README.md for more (qp bench, qp stats, qp devices).\n")
		return nil
	}
	register(c)
}

// demoVocab is how many of the most frequent terms demoQueries draws from.
const demoVocab = 2000

// demoQueries writes n random queries ("id: t1 t2 ...") of 2 to 4 distinct
// terms drawn from the demoVocab most frequent terms of the index at path
// (a query log for a synthetic index when no TREC log is at hand: its
// terms exist and co-occur, so AND, OR and AND+OR all find results).
func demoQueries(path, out string, n int) error {
	x, err := index.Open(path)
	if err != nil {
		return err
	}
	defer x.Close()
	ids := make([]int, x.NumTerms())
	for t := range ids {
		ids[t] = t
	}
	sort.Slice(ids, func(a, b int) bool {
		da, db := x.Record(ids[a]).DF, x.Record(ids[b]).DF
		return da > db || (da == db && ids[a] < ids[b])
	})
	ids = ids[:min(demoVocab, len(ids))]
	if len(ids) < 4 {
		return fmt.Errorf("demo: the index has %d terms, too few for queries", len(ids))
	}
	rng := rand.New(rand.NewSource(1))
	var sb strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, "%d:", i)
		for _, k := range rng.Perm(len(ids))[:2+rng.Intn(3)] {
			sb.WriteString(" " + x.Term(ids[k]))
		}
		sb.WriteString("\n")
	}
	return os.WriteFile(out, []byte(sb.String()), 0o644)
}
