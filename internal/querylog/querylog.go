// Package querylog reads a TREC-style query log (qid:query, eval.ReadQueries)
// and analyzes its queries with an index's own analyzer, for the
// benchmarks that replay real queries on a real index (BenchmarkHostPrep,
// BenchmarkCanonicalTerms).
package querylog

import (
	"fmt"
	"os"

	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
)

// FirstAnalyzed returns the token lists of the first max queries of the
// log at path whose analysis by x's analyzer is not empty, in log order.
func FirstAnalyzed(x *index.Index, path string, max int) ([][]string, error) {
	an, err := x.Analyzer()
	if err != nil {
		return nil, err
	}
	return Read(path, max, an.Tokens)
}

// Read returns the token lists tokens gives for the queries of the log at
// path, in log order, dropping the empty ones and stopping after max (all
// of them when max < 0).
func Read(path string, max int, tokens func(string) []string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	eq, err := eval.ReadQueries(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out [][]string
	for _, q := range eq {
		if len(out) == max {
			break
		}
		if ts := tokens(q.Text); len(ts) > 0 {
			out = append(out, ts)
		}
	}
	return out, nil
}
