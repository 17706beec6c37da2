package main

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
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
over the synthetic vocabulary. Takes about a minute on 2 cores.`)
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
			// Random 2-4 term queries over the synthetic vocabulary.
			qfile = filepath.Join(dir, "queries.txt")
			rng := rand.New(rand.NewSource(1))
			var sb strings.Builder
			for i := 1; i <= 10000; i++ {
				fmt.Fprintf(&sb, "%d:", i)
				for j := 2 + rng.Intn(3); j > 0; j-- {
					fmt.Fprintf(&sb, " t%d", rng.Intn(2000))
				}
				sb.WriteString("\n")
			}
			if err := os.WriteFile(qfile, []byte(sb.String()), 0o644); err != nil {
				return err
			}
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
