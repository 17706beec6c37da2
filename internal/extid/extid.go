// Package extid defines which external ids (document ids, query ids, run
// tags) qp accepts: what a TREC run file can hold, so that the indexer
// rejects at index time the ids that the run writer would reject later.
package extid

import (
	"encoding/binary"
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

// Printable8 reports whether every byte of w is in 0x21..0x7e (printable
// ASCII, which Valid accepts): none below 0x21 and none above 0x7e (the
// "hasless" and "hasmore" tests of Sean Anderson's Bit Twiddling Hacks,
// exact for these bounds; a borrow or carry between bytes can only start
// at a byte that fails itself).
func Printable8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	less := (w - ones*0x21) &^ w & highs
	more := ((w + ones*(0x7f-0x7e)) | w) & highs
	return less|more == 0
}

// Printable reports whether every byte of b is printable ASCII
// (0x21..0x7e), eight bytes at a time: then every non-empty id cut from b
// is Valid (index.IDSlots checks a whole id table so).
func Printable(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if !Printable8(binary.LittleEndian.Uint64(b[i:])) {
			return false
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}
