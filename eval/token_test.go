package eval

import (
	"testing"

	"github.com/qpengine/qp/internal/extid"
)

// FuzzIsToken: isToken's ASCII fast path decides as extid.Valid does.
func FuzzIsToken(f *testing.F) {
	for _, s := range []string{"", "d1", "GX000-00-0000000", "a b", "a\tb", "a\u00a0b", "doc/ü.txt", "\x7f", "x\x00", "~!", "a\u2028b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isToken(s), extid.Valid(s); got != want {
			t.Fatalf("isToken(%q) = %v, extid.Valid = %v", s, got, want)
		}
	})
}
