package main

import (
	"strings"
	"testing"
)

// TestParseMemTotal: MemTotal in kB becomes bytes; a missing or malformed
// line is an error, not a zero.
func TestParseMemTotal(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"MemTotal:       16318412 kB\nMemFree:  1 kB\n", 16318412 << 10, false},
		{"MemFree:  1 kB\nMemTotal: 2 kB\n", 2 << 10, false},
		{"MemFree:  1 kB\n", 0, true},
		{"MemTotal: 12 MB\n", 0, true},
		{"MemTotal: x kB\n", 0, true},
		{"MemTotal:\n", 0, true},
		{"", 0, true},
	} {
		got, err := parseMemTotal(strings.NewReader(c.in))
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("parseMemTotal(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.wantErr)
		}
	}
}

// TestGCDefaultRespectsEnv: with GOGC set, gcDefault changes nothing and
// says so.
func TestGCDefaultRespectsEnv(t *testing.T) {
	t.Setenv("GOGC", "150")
	if got := gcDefault(); got != "GOGC=150 (environment)" {
		t.Errorf("gcDefault() = %q", got)
	}
}

// FuzzParseMemTotal: any text gives a value or an error, never a panic,
// and a value only from a well-formed line.
func FuzzParseMemTotal(f *testing.F) {
	f.Add("MemTotal:       16318412 kB\n")
	f.Add("MemTotal: 1 MB")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseMemTotal(strings.NewReader(s))
		if err == nil && !strings.Contains(s, "MemTotal:") {
			t.Fatalf("%q: %d without a MemTotal line", s, n)
		}
	})
}
