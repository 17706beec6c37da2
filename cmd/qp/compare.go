package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/qpengine/qp/bench/collstats"
	"github.com/qpengine/qp/bench/queryset"
	"github.com/qpengine/qp/index"
)

func init() {
	c := command{name: "compare", args: "A B [--queries FILE ...] [--limit N] [--generate KINDS] [--csv FILE]", summary: "compare two collections side by side (lengths, df, bits, AND counts, Ao's R, pruning)"}
	c.run = func(args []string) error {
		fs := newFlags(c, `Measures two indexes A and B with the same query sets and prints the
statistics side by side with the ratio b/a (issue 20: how alike is a
synthetic collection to a real one?):

  documents     count, terms, postings, tokens; length mean, p10/p50/p90/p99, max
  df            quantiles over terms, hapax share, lists > 4096 and their postings
  compression   bits per docID and per frequency, every list re-encoded with
                bp128 in the index's docID order (as 'qp stats --codecs bp128')
  block maxima  over lists of >= 2 blocks, weighted by list length: p90 block
                max / list max, and the coefficient of variation of block maxima
  queries FILE  per --queries set, each query analyzed by each index's own
                analyzer: AND result count median / mean / empty share; Ao et
                al. VLDB'11 Table 4 length ratios R (%) for k-term queries,
                stage x: |l1 ∩ ... ∩ lx| / |lx+1| with lists sorted by length,
                averaged over queries whose k terms are all in the index; the
                share of postings and blocks MaxScore and BMW decode for top-k
                OR (roaring OR path off), and the documents they score fully
                per posting of the queries' lists

--generate and,or,known adds sets drawn from each index itself ('qp queries'
with --gen-n and --seed): A is measured with A's, B with B's, drawn alike.
Query files are read as by 'qp query --queries' (qid:query or qid<TAB>query);
'qp queries' writes generated sets. Values print with 4 significant digits,
"-" where undefined; --csv writes full precision.

Example:
  qp compare gcide.qp gen.qp --queries ../shared/data/queries/06.efficiency_topics.txt \
     --limit 10000 --generate and,known --csv cmp.csv`)
		var qfiles multiFlag
		fs.Var(&qfiles, "queries", "query file (repeatable; one section each)")
		limit := fs.Int("limit", 0, "use the first N queries of each file (0 = all)")
		csvOut := fs.String("csv", "", "also write the table as CSV to this file")
		k := fs.Int("k", 10, "top-k of the OR pruning measurements")
		maxTerms := fs.Int("max-terms", 6, "R ratios for queries of 2..N terms")
		workers := fs.Int("threads", 0, "threads over queries (0 = all cores)")
		gen := fs.String("generate", "", "also draw query sets of these kinds (and,or,known) from each index\nitself, as 'qp queries' does (each index gets its own, drawn alike)")
		genN := fs.Int("gen-n", 1000, "queries per generated kind")
		genSeed := fs.Uint64("seed", 1, "seed of the generated sets")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 2 {
			fs.Usage()
			return errUsage
		}
		if err := guardOutputs(pos, *csvOut); err != nil {
			return err
		}
		if *limit < 0 {
			return fmt.Errorf("--limit %d: want >= 0", *limit)
		}
		if *k < 1 || *k > 10000 {
			return fmt.Errorf("-k %d: want 1..10000", *k)
		}
		if *maxTerms < 2 || *maxTerms > 16 {
			return fmt.Errorf("--max-terms %d: want 2..16", *maxTerms)
		}
		if *workers < 0 {
			return fmt.Errorf("--threads %d: want >= 0", *workers)
		}
		opt := collstats.Options{K: *k, MaxTerms: *maxTerms, Workers: *workers, GenN: *genN, GenSeed: *genSeed}
		if *gen != "" {
			if opt.Generate, err = queryset.ParseKinds(*gen); err != nil {
				return fmt.Errorf("--generate: %w", err)
			}
			if *genN < 1 {
				return fmt.Errorf("--gen-n %d: want >= 1", *genN)
			}
		}
		if *csvOut != "" {
			for _, in := range append(append([]string{}, pos...), qfiles...) {
				if same, _ := samePath(*csvOut, in); same {
					return fmt.Errorf("--csv %s is an input", *csvOut)
				}
			}
		}
		var sets []collstats.QuerySet
		names := map[string]bool{}
		for _, f := range qfiles {
			qs, err := readQueryFile(f, *limit)
			if err != nil {
				return err
			}
			name := filepath.Base(f)
			for names[name] {
				name += "'"
			}
			names[name] = true
			sets = append(sets, collstats.QuerySet{Name: name, Queries: qs})
		}
		a, err := index.Open(pos[0])
		if err != nil {
			return err
		}
		defer a.Close()
		b, err := index.Open(pos[1])
		if err != nil {
			return err
		}
		defer b.Close()
		t, err := collstats.Compare(a, b, "a="+filepath.Base(pos[0]), "b="+filepath.Base(pos[1]), sets, opt)
		if err != nil {
			return err
		}
		if err := t.Write(os.Stdout); err != nil {
			return err
		}
		if *csvOut == "" {
			return nil
		}
		var sb strings.Builder
		if err := t.WriteCSV(&sb); err != nil {
			return err
		}
		return writeFileAtomic(*csvOut, []byte(sb.String()))
	}
	register(c)
}

// writeFileAtomic writes data to path via path.tmp and a rename.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
