// Package extid defines which external ids (document ids, query ids, run
// tags) qp accepts: what a TREC run file can hold, so that the indexer
// rejects at index time the ids that the run writer would reject later.
package extid

import (
	"fmt"
	"strings"
	"unicode"
)

// bad reports a rune that an id may not contain: white space (it separates
// the columns of a run or qrels file) or a control character.
func bad(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }

// Valid reports whether s is a non-empty id without white space or
// control characters.
func Valid(s string) bool { return s != "" && !strings.ContainsFunc(s, bad) }

// Check returns nil for a valid id, else an error saying what is wrong.
func Check(s string) error {
	if s == "" {
		return fmt.Errorf("empty")
	}
	if i := strings.IndexFunc(s, bad); i >= 0 {
		r := []rune(s[i:])[0]
		what := "white space"
		if !unicode.IsSpace(r) {
			what = "a control character"
		}
		return fmt.Errorf("contains %s (%U at byte %d); a TREC run could not hold it", what, r, i)
	}
	return nil
}
