package eval

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Query is one line of a query file.
type Query struct {
	ID   string
	Text string
	Line int // 1-based line number in the file
}

// ReadQueries reads a query file with one query per line, either
// "qid:query text" (the TREC Terabyte efficiency topics, e.g.
// queries/06.efficiency_topics.txt) or "qid<TAB>query text" (the
// collections' queries.tsv). The separator is whichever of ':' and TAB comes
// first in the line, so a query text may itself contain either character.
// White space around the qid and the text is trimmed (a trailing '\r'
// included). Blank lines are skipped. A line with neither separator, or with
// an empty qid or one containing white space or a control character (it could not be written to
// a run), is an error naming the line number; repeated qids are kept
// (the TREC 2005 log repeats query strings under distinct qids; a repeated
// qid is checked by UniqueIDs, which every qp command that runs queries
// applies: a run with two rank-1 blocks for one qid is not a valid run).
//
// A query whose text is empty (or tokenizes to nothing) is kept, not
// dropped: the TREC 2005 efficiency log has such lines, and the engine
// reports them as empty queries so that query counts stay aligned with the
// log.
//
// The file is read whole and its lines cut out of one string (no copy or
// allocation per query: 100k TREC lines read in a few milliseconds).
func ReadQueries(r io.Reader) ([]Query, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("eval: reading query file: %w", err)
	}
	return parseQueries(string(b))
}

// maxQueryLine bounds a line of a query file.
const maxQueryLine = 16 << 20

// parseQueries is ReadQueries on the file's contents.
func parseQueries(data string) ([]Query, error) {
	qs := make([]Query, 0, strings.Count(data, "\n")+1)
	n := 0
	for len(data) > 0 {
		line := data
		if i := strings.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = ""
		}
		n++
		if len(line) > maxQueryLine {
			return nil, fmt.Errorf("eval: query file line %d: longer than %d bytes", n, maxQueryLine)
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		i := strings.IndexAny(line, ":\t")
		if i < 0 {
			return nil, fmt.Errorf("eval: query file line %d: no \"qid:\" or \"qid<TAB>\" separator in %q", n, clip(line))
		}
		id := strings.TrimSpace(line[:i])
		if id == "" {
			return nil, fmt.Errorf("eval: query file line %d: empty query id in %q", n, clip(line))
		}
		if !isToken(id) {
			return nil, fmt.Errorf("eval: query file line %d: query id %q contains white space or a control character", n, id)
		}
		qs = append(qs, Query{ID: id, Text: strings.TrimSpace(line[i+1:]), Line: n})
	}
	return qs, nil
}

// UniqueIDs returns an error naming both lines of the first qid that
// occurs twice in qs (as read by ReadQueries), or nil.
func UniqueIDs(qs []Query) error {
	seen := make(map[string]int, len(qs))
	for _, q := range qs {
		if l, ok := seen[q.ID]; ok {
			return fmt.Errorf("eval: query file line %d: query id %q repeats the one of line %d", q.Line, q.ID, l)
		}
		seen[q.ID] = q.Line
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// ReadQueryFile reads a query file (ReadQueries' formats), checks that its
// query ids are unique, and keeps the first limit queries (limit <= 0: all).
// Errors name the file.
func ReadQueryFile(path string, limit int) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	qs, err := ReadQueries(f)
	if err == nil {
		err = UniqueIDs(qs)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if limit > 0 && len(qs) > limit {
		qs = qs[:limit]
	}
	return qs, nil
}
