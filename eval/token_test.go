package eval

import (
	"testing"

	"github.com/qpengine/qp/internal/extid"
)

// FuzzIsToken: isToken's ASCII fast path decides as extid.Valid does.
func FuzzIsToken(f *testing.F) {
	for _, s := range []string{"", "d1", "GX000-00-0000000", "a b", "a\tb", "a\u00a0b", "doc/ü.txt", "\x7f", "x\x00", "~!", "a\u2028b",
		"gcide-12345", "gcide-1234 ", "gcide-12345\x7f", "!~!~!~!~", "!~!~!~! ", "!~!~!~!~\x80", "0123456789abcdef", "0123456789abcde\x21",
		"0123456789abcdef\x20", "\x20123456789abcdef", "01234567\x7f9abcdef", "rfc9999-page-12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isToken(s), extid.Valid(s); got != want {
			t.Fatalf("isToken(%q) = %v, extid.Valid = %v", s, got, want)
		}
	})
}

// TestPrintable8: the word test decides as a byte loop on every word of
// single, paired and neighbouring bytes around the bounds.
func TestPrintable8(t *testing.T) {
	edge := []byte{0, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x41, 0x7d, 0x7e, 0x7f, 0x80, 0x81, 0xfe, 0xff}
	for pos := range 8 {
		for _, a := range edge {
			for _, b := range edge {
				w := make([]byte, 8)
				for i := range w {
					w[i] = 'a'
				}
				w[pos], w[(pos+1)%8] = a, b
				want := true
				for _, c := range w {
					if c <= ' ' || c >= 0x7f {
						want = false
					}
				}
				if got := printable8(le64(string(w), 0)); got != want {
					t.Fatalf("printable8(% x) = %v, want %v", w, got, want)
				}
			}
		}
	}
}
