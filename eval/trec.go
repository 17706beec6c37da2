// Package eval reads and writes TREC run, qrels and query files and computes
// the retrieval-effectiveness measures of trec_eval (NIST, Buckley;
// github.com/usnistgov/trec_eval, version 9.0.x / 10): map, P_k,
// ndcg_cut_k and the counts num_q, num_ret, num_rel, num_rel_ret.
//
// The computations follow trec_eval's source line by line (form_res_rels.c,
// m_map.c, m_P.c, m_ndcg_cut.c, trec_eval.c), including its ranking of a
// run (score descending, ties by docid descending, see OrderTrecEval), the
// set of queries averaged over, and the order in which per-query values are
// summed, so that the means agree with trec_eval's (bit for bit for map and
// P; nDCG's log2 may differ from the C library's in the last ulp).
package eval

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/qpengine/qp/internal/extid"
)

// Qrels are relevance judgments: qid → docid → relevance level. Levels are
// integers as in trec_eval (which parses them with atol); a document is
// relevant when its level is >= the relevance level (1 by default, i.e.
// rel > 0), and levels > 0 are the gains of nDCG.
type Qrels map[string]map[string]int

// RunEntry is one retrieved document of a query.
type RunEntry struct {
	DocID string
	Rank  int     // the run file's rank column (used by OrderRank)
	Score float64 // the run file's score column (used by OrderTrecEval)
}

// Run is a ranked result list per query: qid → entries in file order.
type Run map[string][]RunEntry

// scanLines calls fn for every line of r with its 1-based number, skipping
// blank lines and, as trec_eval does, lines whose first non-blank character
// is '#'.
func scanLines(r io.Reader, what string, fn func(n int, fields []string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if err := fn(n, strings.Fields(line)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("eval: reading %s after line %d: %w", what, n, err)
	}
	return nil
}

// ReadQrels reads a TREC qrels file: lines "qid iter docid rel", whitespace
// separated (iter is ignored). Blank lines and '#' comments are skipped. A
// line without exactly four fields, a rel that is not an integer, or a
// repeated (qid, docid) pair is an error naming the line number (trec_eval
// rejects all three too).
func ReadQrels(r io.Reader) (Qrels, error) {
	q := Qrels{}
	err := scanLines(r, "qrels", func(n int, f []string) error {
		if len(f) != 4 {
			return fmt.Errorf("eval: qrels line %d: want 4 fields \"qid iter docid rel\", got %d", n, len(f))
		}
		rel, err := strconv.Atoi(f[3])
		if err != nil {
			return fmt.Errorf("eval: qrels line %d: relevance %q is not an integer", n, f[3])
		}
		docs := q[f[0]]
		if docs == nil {
			docs = map[string]int{}
			q[f[0]] = docs
		}
		if old, dup := docs[f[2]]; dup && old != rel {
			// Real qrels (LISA) repeat judgments; a repeat that agrees is
			// harmless, one that contradicts is an error.
			return fmt.Errorf("eval: qrels line %d: conflicting judgment for query %s, doc %s (%d, then %d)", n, f[0], f[2], old, rel)
		}
		docs[f[2]] = rel
		return nil
	})
	if err != nil {
		return nil, err
	}
	return q, nil
}

// ReadRun reads a TREC run file: lines "qid Q0 docid rank score tag",
// whitespace separated; fields after the sixth are ignored and the second
// field is not checked (as in trec_eval). Blank lines and '#' comments are
// skipped. Fewer than six fields, a rank that is not an integer, a score that
// is not a number, or a docid retrieved twice for the same query is an error
// naming the line number (trec_eval rejects duplicates too). Scores are kept
// as float64, as trec_eval keeps them, so ties are the file's ties.
func ReadRun(r io.Reader) (Run, error) {
	run := Run{}
	seen := map[string]map[string]int{} // qid → docid → line
	err := scanLines(r, "run", func(n int, f []string) error {
		if len(f) < 6 {
			return fmt.Errorf("eval: run line %d: want 6 fields \"qid Q0 docid rank score tag\", got %d", n, len(f))
		}
		rank, err := strconv.Atoi(f[3])
		if err != nil {
			return fmt.Errorf("eval: run line %d: rank %q is not an integer", n, f[3])
		}
		score, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			return fmt.Errorf("eval: run line %d: score %q is not a number", n, f[4])
		}
		qid, doc := f[0], f[2]
		s := seen[qid]
		if s == nil {
			s = map[string]int{}
			seen[qid] = s
		}
		if prev, dup := s[doc]; dup {
			return fmt.Errorf("eval: run line %d: query %s retrieves doc %s again (first on line %d)", n, qid, doc, prev)
		}
		s[doc] = n
		run[qid] = append(run[qid], RunEntry{DocID: doc, Rank: rank, Score: score})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return run, nil
}

// FormatScore is how WriteRun prints a score: 6 significant digits, %g
// style (strconv.FormatFloat(s, 'g', 6, 64)), e.g. 12.033, 9.9014,
// 0.000123457, 1.23457e+06. Engine scores are float32 (about 7.2 significant
// digits), so distinct scores can print equal; trec_eval then breaks the tie
// by docid, not by the engine's order. Evaluate such a run with OrderRank to
// score the engine's ranking exactly.
func FormatScore(s float64) string {
	var b [24]byte
	return string(AppendScore(b[:0], s))
}

// WriteRun writes results, which must be in rank order, as TREC run lines
// "qid Q0 docid rank score tag" with rank = position + 1 (the entries' Rank
// fields are ignored) and the score printed by FormatScore. qid, docids and
// tag must be non-empty and free of white space, or the file would not read
// back; that is an error, as is any write error. A query with no results
// writes nothing.
func WriteRun(w io.Writer, qid string, results []RunEntry, tag string) error {
	b, err := AppendRun(nil, qid, results, tag)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("eval: writing run for query %s: %w", qid, err)
	}
	return nil
}

// AppendRun appends the lines WriteRun writes to b; on an error b is
// returned as it was.
func AppendRun(b []byte, qid string, results []RunEntry, tag string) ([]byte, error) {
	if err := CheckRunColumns(qid, tag); err != nil {
		return b, err
	}
	// The docids are checked in a pass of their own: their bytes are
	// usually cache misses (a run writer's docids are scattered over the
	// index's id table), and a loop that only loads and compares lets the
	// processor overlap them, where appends in between would not (a 10,000
	// query OR run formatted after evicting the caches: 0.88-0.92 of the
	// interleaved time, in three paired runs of 150 rounds).
	for i, e := range results {
		if !isToken(e.DocID) {
			return b, fmt.Errorf("eval: query %s rank %d: docid %q is empty or contains white space or a control character", qid, i+1, e.DocID)
		}
	}
	return appendLines(b, qid, results, tag), nil
}

// CheckRunColumns checks a run's qid and tag columns as AppendRun does:
// each non-empty, without white space or control characters.
func CheckRunColumns(qid, tag string) error {
	if !isToken(qid) {
		return fmt.Errorf("eval: run qid %q is empty or contains white space or a control character", qid)
	}
	if !isToken(tag) {
		return fmt.Errorf("eval: run tag %q is empty or contains white space or a control character", tag)
	}
	return nil
}

// appendLines appends the run lines of results (checked) to b.
func appendLines(b []byte, qid string, results []RunEntry, tag string) []byte {
	for i, e := range results {
		b = AppendRunLine(b, qid, e.DocID, i+1, e.Score, tag)
	}
	return b
}

// AppendRunLine appends one run line "qid Q0 docid rank score tag" to b
// (AppendRun's line), unchecked: qid and tag must pass CheckRunColumns and
// docid extid.Valid (index.IDSlots checks a whole id table once), else the
// run does not read back. For writers that print many answers straight
// from their results: no RunEntry values, no docid's bytes read twice
// (docs/BENCHMARKS.md, cliq5).
func AppendRunLine(b []byte, qid, docid string, rank int, score float64, tag string) []byte {
	b = append(b, qid...)
	b = append(b, " Q0 "...)
	b = append(b, docid...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(rank), 10)
	b = append(b, ' ')
	b = AppendScore(b, score)
	b = append(b, ' ')
	b = append(b, tag...)
	return append(b, '\n')
}

// isToken reports whether s can be a column of a run: the rule of
// internal/extid, which the indexer applies to document ids too.
// Printable ASCII (0x21..0x7e), the common case of ids, is decided eight
// bytes at a time (a run writer checks every docid it prints); any other
// byte sends s to extid.Valid.
func isToken(s string) bool {
	n := len(s)
	if n < 8 {
		for i := 0; i < n; i++ {
			if c := s[i]; c <= ' ' || c >= 0x7f {
				return extid.Valid(s)
			}
		}
		return n > 0
	}
	for i := 0; i < n-8; i += 8 {
		if !printable8(le64(s, i)) {
			return extid.Valid(s)
		}
	}
	if !printable8(le64(s, n-8)) { // the last 8 bytes (overlapping the loop's)
		return extid.Valid(s)
	}
	return true
}

// printable8 reports whether every byte of w is in 0x21..0x7e
// (extid.Printable8).
func printable8(w uint64) bool { return extid.Printable8(w) }

// le64 is the little-endian word of s[i:i+8].
func le64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
