package extid

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for _, s := range []string{"d1", "GX000-00-0000000", "doc/ü.txt", "a:b", "1"} {
		if !Valid(s) || Check(s) != nil {
			t.Errorf("%q rejected: %v", s, Check(s))
		}
	}
	for s, want := range map[string]string{"": "empty", "a b": "white space", "a\tb": "white space", "a\u00a0b": "white space",
		"a\x00b": "control", "a\x1bb": "control", "a\u0085": "white space", "x\n": "white space", "\x7f": "control"} {
		if Valid(s) {
			t.Errorf("%q accepted", s)
		}
		if err := Check(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q) = %v, want %q", s, err, want)
		}
	}
}

// TestPrintable: Printable agrees with a byte loop over lengths around the
// word size, one bad byte at each place (and Valid accepts the good ones).
func TestPrintable(t *testing.T) {
	for n := range 20 {
		good := []byte(strings.Repeat("a~!Z", 5)[:n])
		if !Printable(good) || (n > 0 && !Valid(string(good))) {
			t.Fatalf("%q rejected", good)
		}
		for i := range n {
			for _, c := range []byte{' ', 0, 0x1f, 0x7f, 0x80, 0xc3, 0xff} {
				bad := append([]byte(nil), good...)
				bad[i] = c
				if Printable(bad) {
					t.Fatalf("%q accepted (byte %d = %#x)", bad, i, c)
				}
			}
		}
	}
}
