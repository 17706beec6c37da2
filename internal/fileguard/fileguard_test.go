package fileguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSame(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(a, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.jsonl")
	if err := os.Link(a, hard); err != nil {
		t.Fatal(err)
	}
	sym := filepath.Join(dir, "sym.jsonl")
	if err := os.Symlink(a, sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	linkDir := filepath.Join(dir, "ld")
	if err := os.Symlink(filepath.Join(dir, "sub"), linkDir); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "b.jsonl")
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{a, a, true},
		{a, hard, true},
		{a, sym, true},
		{a, filepath.Join(dir, "sub", "..", "a.jsonl"), true},
		{a, other, false},
		// Neither exists: compared by resolved path.
		{filepath.Join(dir, "sub", "new.qp"), filepath.Join(linkDir, "new.qp"), true},
		{filepath.Join(dir, "sub", "new.qp"), filepath.Join(dir, "new.qp"), false},
		{filepath.Join(dir, "none", "x"), filepath.Join(dir, "none", ".", "x"), true},
	} {
		got, err := Same(c.a, c.b)
		if err != nil || got != c.want {
			t.Errorf("Same(%s, %s) = %v, %v; want %v", c.a, c.b, got, err, c.want)
		}
	}
	out := filepath.Join(dir, "x.qp")
	outs := []Output{{Path: out}, {Path: out + ".tmp", Of: out}}
	if err := Check(outs, "input", other, a); err != nil {
		t.Errorf("no overlap: %v", err)
	}
	if err := os.WriteFile(out+".tmp", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := Check(outs, "input", other, filepath.Join(linkDir, "..", "x.qp.tmp"))
	if err == nil || !strings.Contains(err.Error(), "temporary file of "+out) {
		t.Errorf("OUT.tmp is an input: %v", err)
	}
	if err := Check([]Output{{Path: sym}}, "index", a); err == nil || !strings.Contains(err.Error(), "index "+a) {
		t.Errorf("output through a symbolic link to the index: %v", err)
	}
}

func TestCreatable(t *testing.T) {
	dir := t.TempDir()
	if err := Creatable(filepath.Join(dir, "x.qp")); err != nil {
		t.Errorf("writable directory: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("probe left %v behind", ents)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "nonexistent", "x.qp"), "does not exist"},
		{dir, "is a directory"},
		{"", "empty"},
	} {
		if err := Creatable(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Creatable(%q) = %v, want an error with %q", c.path, err, c.want)
		}
	}
	f := filepath.Join(dir, "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Creatable(filepath.Join(f, "x.qp")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("under a file: %v", err)
	}
	if os.Geteuid() != 0 { // root may write anywhere
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := Creatable(filepath.Join(ro, "x.qp")); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("read-only directory: %v", err)
		}
	}
}
