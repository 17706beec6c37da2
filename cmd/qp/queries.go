package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/qpengine/qp/bench/queryset"
	"github.com/qpengine/qp/index"
)

func init() {
	c := command{name: "queries", args: "INDEX --out FILE [--seed S] [--n N] [--kinds and,or,known]", summary: "write benchmark query sets (df buckets, known-item) drawn from an index"}
	c.run = func(args []string) error {
		fs := newFlags(c, `Writes benchmark query sets drawn from INDEX, deterministic by --seed, in
the query-file format of 'qp query --queries' (qid<TAB>query), like Lucene's
nightly benchmark task files:

  and, or  --n queries each of 2-5 distinct terms (--terms), the counts in
           equal shares; each term's document-frequency bucket is drawn
           uniformly among high (df/N >= 1%), medium (0.1%..1%) and low
           (0.01%..0.1%), all with df >= 2 (--buckets), then the term
           uniformly within it. The qid names the kind, the buckets and the
           term count: and-hml-3-000017. and and or sets are drawn alike
           (separate random streams); the mode is the benchmark's choice.
  known    --n known-item queries: 2-5 distinct terms of one document drawn
           uniformly, so that their AND holds at least that document:
           known-3-000004. Candidate documents are sampled first and their
           terms collected by probing each list at those docIDs only (no
           forward index is built); a document with fewer eligible terms
           than a query needs is passed over for it.

Terms are written as indexed; a term is used only if the index's analyzer
(its stemmer and stop words, from the index metadata) maps it back to itself,
so 'qp query' finds exactly these terms (the count of terms left out is
printed). Kinds use separate random streams: one kind's queries do not
depend on the others requested. The file is written to FILE.tmp and renamed.

Example:
  qp queries gcide.qp --out gcide-known.tsv --kinds known --n 10000 --seed 1`)
		out := fs.String("out", "", "query file to write (qid<TAB>query)")
		seed := fs.Uint64("seed", 1, "random seed")
		n := fs.Int("n", 1000, "queries per kind")
		kinds := fs.String("kinds", "and,or,known", "kinds to write, in this order: and, or, known")
		terms := fs.String("terms", "2-5", "terms per query, MIN-MAX (counts cycle through the range)")
		buckets := fs.String("buckets", "0.01,0.001,0.0001", "df/N lower bounds of the high, medium and low buckets")
		mindf := fs.Uint("min-df", 2, "smallest df of a bucketed term")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 1 || *out == "" {
			fs.Usage()
			return fmt.Errorf("want one INDEX and --out")
		}
		opt := queryset.Options{Seed: *seed, N: *n}
		if opt.Kinds, err = queryset.ParseKinds(*kinds); err != nil {
			return fmt.Errorf("--kinds: %w", err)
		}
		if opt.MinTerms, opt.MaxTerms, err = parseRange(*terms); err != nil {
			return fmt.Errorf("--terms: %w", err)
		}
		if opt.Buckets, err = parseBuckets(*buckets); err != nil {
			return fmt.Errorf("--buckets: %w", err)
		}
		if *mindf < 1 || *mindf > 1<<31 {
			return fmt.Errorf("--min-df %d: want >= 1", *mindf)
		}
		opt.Buckets.MinDF = uint32(*mindf)
		if same, _ := samePath(*out, pos[0]); same {
			return fmt.Errorf("--out %s is the index itself", *out)
		}
		x, err := index.Open(pos[0])
		if err != nil {
			return err
		}
		defer x.Close()
		an, err := x.Analyzer()
		if err != nil {
			return err
		}
		qs, st, err := queryset.Generate(x, an.Tokens, opt)
		if err != nil {
			return err
		}
		if err := writeQueries(*out, qs); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %d queries to %s; bucket pools h/m/l %d/%d/%d terms; %d terms left out (analysis does not give them back",
			len(qs), *out, st.Pool[0], st.Pool[1], st.Pool[2], st.Ineligible)
		if len(st.Skipped) > 0 {
			fmt.Fprintf(os.Stderr, ", e.g. %q", st.Skipped[:min(3, len(st.Skipped))])
		}
		fmt.Fprintln(os.Stderr, ")")
		return nil
	}
	register(c)
}

// writeQueries writes qid<TAB>text lines to path via path.tmp.
func writeQueries(path string, qs []queryset.Query) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, q := range qs {
		fmt.Fprintf(w, "%s\t%s\n", q.ID, q.Text())
	}
	err = w.Flush()
	if e := f.Close(); err == nil {
		err = e
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// samePath reports whether a and b name the same existing file.
func samePath(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	if os.SameFile(fa, fb) {
		return true, nil
	}
	aa, _ := filepath.Abs(a)
	ab, _ := filepath.Abs(b)
	return aa == ab, nil
}

// parseRange parses "MIN-MAX" or a single count.
func parseRange(s string) (int, int, error) {
	lo, hi, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		hi = lo
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || a < 1 || b < a || b > 64 {
		return 0, 0, fmt.Errorf("bad range %q: want MIN-MAX with 1 <= MIN <= MAX <= 64", s)
	}
	return a, b, nil
}

// parseBuckets parses "HIGH,MEDIUM,LOW" df/N bounds.
func parseBuckets(s string) (queryset.Buckets, error) {
	p := splitComma(s)
	if len(p) != 3 {
		return queryset.Buckets{}, fmt.Errorf("%q: want three df/N bounds HIGH,MEDIUM,LOW", s)
	}
	var v [3]float64
	for i := range p {
		f, err := strconv.ParseFloat(p[i], 64)
		if err != nil {
			return queryset.Buckets{}, fmt.Errorf("%q: %v", p[i], err)
		}
		v[i] = f
	}
	b := queryset.Buckets{High: v[0], Medium: v[1], Low: v[2]}
	return b, b.Validate()
}
