package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/qpengine/qp/bench/collstats"
	"github.com/qpengine/qp/bench/queryset"
	"github.com/qpengine/qp/index"
)

// compareHelp is qp compare's description (before its flags).
const compareHelp = `Measures two indexes A and B with the same query sets and prints the
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
     --limit 10000 --generate and,known --csv cmp.csv`

func init() {
	c := command{name: "compare", args: "A B [--queries FILE ...] [--limit N] [--generate KINDS] [--csv FILE]", summary: "compare two collections side by side (lengths, df, bits, AND counts, Ao's R, pruning)"}
	c.run = func(args []string) error {
		fs := newFlags(c, compareHelp)
		var f compareFlags
		f.define(fs)
		pos, err := parseArgs(fs, args, 2)
		if err != nil {
			return err
		}
		return f.run(pos[0], pos[1])
	}
	register(c)
}

// compareFlags are qp compare's flags.
type compareFlags struct {
	qfiles                            multiFlag
	limit, k, maxTerms, workers, genN int
	csvOut, gen                       string
	genSeed                           uint64
}

// define defines the flags on fs.
func (f *compareFlags) define(fs *flag.FlagSet) {
	fs.Var(&f.qfiles, "queries", "query file (repeatable; one section each)")
	fs.IntVar(&f.limit, "limit", 0, "use the first N queries of each file (0 = all)")
	fs.StringVar(&f.csvOut, "csv", "", "also write the table as CSV to this file")
	fs.IntVar(&f.k, "k", 10, "top-k of the OR pruning measurements")
	fs.IntVar(&f.maxTerms, "max-terms", 6, "R ratios for queries of 2..N terms")
	fs.IntVar(&f.workers, "threads", 0, "threads over queries (0 = all cores)")
	fs.StringVar(&f.gen, "generate", "", "also draw query sets of these kinds (and,or,known) from each index\nitself, as 'qp queries' does (each index gets its own, drawn alike)")
	fs.IntVar(&f.genN, "gen-n", 1000, "queries per generated kind")
	fs.Uint64Var(&f.genSeed, "seed", 1, "seed of the generated sets")
}

// options checks the flags and returns collstats' options.
func (f *compareFlags) options() (collstats.Options, error) {
	if f.limit < 0 {
		return collstats.Options{}, fmt.Errorf("--limit %d: want >= 0", f.limit)
	}
	if f.k < 1 || f.k > 10000 {
		return collstats.Options{}, fmt.Errorf("-k %d: want 1..10000", f.k)
	}
	if f.maxTerms < 2 || f.maxTerms > 16 {
		return collstats.Options{}, fmt.Errorf("--max-terms %d: want 2..16", f.maxTerms)
	}
	if f.workers < 0 {
		return collstats.Options{}, fmt.Errorf("--threads %d: want >= 0", f.workers)
	}
	opt := collstats.Options{K: f.k, MaxTerms: f.maxTerms, Workers: f.workers, GenN: f.genN, GenSeed: f.genSeed}
	if f.gen != "" {
		var err error
		if opt.Generate, err = queryset.ParseKinds(f.gen); err != nil {
			return opt, fmt.Errorf("--generate: %w", err)
		}
		if f.genN < 1 {
			return opt, fmt.Errorf("--gen-n %d: want >= 1", f.genN)
		}
	}
	return opt, nil
}

// querySets reads the --queries files (the first --limit queries of each),
// one set each, named by the file's base name (primed when names repeat).
func (f *compareFlags) querySets() ([]collstats.QuerySet, error) {
	var sets []collstats.QuerySet
	names := map[string]bool{}
	for _, file := range f.qfiles {
		qs, err := readQueryFile(file, f.limit)
		if err != nil {
			return nil, err
		}
		name := filepath.Base(file)
		for names[name] {
			name += "'"
		}
		names[name] = true
		sets = append(sets, collstats.QuerySet{Name: name, Queries: qs})
	}
	return sets, nil
}

// run compares the indexes at pathA and pathB and prints (and with --csv
// writes) the table.
func (f *compareFlags) run(pathA, pathB string) error {
	if err := guardOutputs([]string{pathA, pathB}, f.csvOut); err != nil {
		return err
	}
	opt, err := f.options()
	if err != nil {
		return err
	}
	if f.csvOut != "" {
		for _, in := range append([]string{pathA, pathB}, f.qfiles...) {
			if same, _ := samePath(f.csvOut, in); same {
				return fmt.Errorf("--csv %s is an input", f.csvOut)
			}
		}
	}
	sets, err := f.querySets()
	if err != nil {
		return err
	}
	a, err := index.Open(pathA)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := index.Open(pathB)
	if err != nil {
		return err
	}
	defer b.Close()
	t, err := collstats.Compare(a, b, "a="+filepath.Base(pathA), "b="+filepath.Base(pathB), sets, opt)
	if err != nil {
		return err
	}
	if err := t.Write(os.Stdout); err != nil {
		return err
	}
	if f.csvOut == "" {
		return nil
	}
	var sb strings.Builder
	if err := t.WriteCSV(&sb); err != nil {
		return err
	}
	return writeFileAtomic(f.csvOut, []byte(sb.String()))
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
