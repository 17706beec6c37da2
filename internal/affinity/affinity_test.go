package affinity

import (
	"strings"
	"testing"
)

// TestParseCPU checks --owner-cpu's values and its refusals.
func TestParseCPU(t *testing.T) {
	allowed := []int{0, 1, 2, 3, 8}
	for _, c := range []struct {
		v    string
		want int
	}{{"", Off}, {"off", Off}, {"auto", 8}, {"2", 2}, {"8", 8}} {
		if got, err := ParseCPU(c.v, allowed); err != nil || got != c.want {
			t.Errorf("ParseCPU(%q) = %d, %v; want %d", c.v, got, err, c.want)
		}
	}
	for _, c := range []struct {
		v    string
		cpus []int
		want string
	}{
		{"x", allowed, `--owner-cpu "x": want auto, off or a CPU number`},
		{"-1", allowed, `--owner-cpu "-1": want auto, off or a CPU number`},
		{"5", allowed, "--owner-cpu 5: not a CPU this process may run on (0-3,8)"},
		{"auto", []int{4}, "--owner-cpu auto: the process may run on 4 only; a CPU of its own needs at least two"},
		{"0", []int{0}, "needs at least two"},
	} {
		if _, err := ParseCPU(c.v, c.cpus); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseCPU(%q, %v): %v; want an error with %q", c.v, c.cpus, err, c.want)
		}
	}
}

func TestList(t *testing.T) {
	for _, c := range []struct {
		cpus []int
		want string
	}{{nil, "none"}, {[]int{3}, "3"}, {[]int{0, 1, 2, 3}, "0-3"}, {[]int{0, 2, 3, 5, 7, 8, 9}, "0,2-3,5,7-9"}} {
		if got := List(c.cpus); got != c.want {
			t.Errorf("List(%v) = %q, want %q", c.cpus, got, c.want)
		}
	}
}
