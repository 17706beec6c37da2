package eval

import (
	"io"
	"strings"
	"testing"
)

// TestUniqueIDs: a repeated qid is an error naming both lines (issue 19
// case 6).
func TestUniqueIDs(t *testing.T) {
	qs, err := ReadQueries(strings.NewReader("1\tparallel\n2:x\n\n1\tsorting\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = UniqueIDs(qs)
	if err == nil || !strings.Contains(err.Error(), `line 4: query id "1" repeats the one of line 1`) {
		t.Errorf("error %v", err)
	}
	if err := UniqueIDs(qs[:2]); err != nil {
		t.Errorf("distinct ids: %v", err)
	}
}

// TestRunRejectsControlCharacters: the run writer and the query reader
// reject control characters as well as white space (issue 19 case 13, the
// rule the indexer applies to document ids).
func TestRunRejectsControlCharacters(t *testing.T) {
	for _, id := range []string{"d\x00", "d\x1b[0m", "a\u00a0b"} {
		if err := WriteRun(io.Discard, "1", []RunEntry{{DocID: id, Rank: 1, Score: 1}}, "qp"); err == nil {
			t.Errorf("docid %q written", id)
		}
		if _, err := ReadQueries(strings.NewReader(id + "\tq\n")); err == nil {
			t.Errorf("qid %q accepted", id)
		}
	}
}
