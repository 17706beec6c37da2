// Package fileguard keeps a command from writing over its own inputs and
// checks that an output can be created before any work is done (issue 19,
// cases 1, 2 and 8).
package fileguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Output is a file a command will create or replace.
type Output struct {
	Path string
	// Of, when not empty, is the final output that Path is a temporary
	// file of (an index is written to OUT.tmp and renamed), for messages.
	Of string
}

// Same reports whether a and b name the same file: when both exist, the
// same file on disk (os.SameFile: the same device and inode, so hard
// links and symbolic links count); otherwise the same absolute path after
// resolving the symbolic links of its existing directories.
func Same(a, b string) (bool, error) {
	ai, aerr := os.Stat(a)
	bi, berr := os.Stat(b)
	if aerr == nil && berr == nil {
		return os.SameFile(ai, bi), nil
	}
	for _, err := range []error{aerr, berr} {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
	}
	ra, err := resolve(a)
	if err != nil {
		return false, err
	}
	rb, err := resolve(b)
	if err != nil {
		return false, err
	}
	return ra == rb, nil
}

// resolve returns the absolute path of p with the symbolic links of its
// longest existing prefix resolved.
func resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// Check returns an error naming the first output that is the same file as
// one of ins (what the output would overwrite), or nil. role names the
// inputs in the message ("input", "index", "query file").
func Check(outs []Output, role string, ins ...string) error {
	for _, o := range outs {
		for _, in := range ins {
			same, err := Same(o.Path, in)
			if err != nil {
				return fmt.Errorf("checking %s against the %s %s: %w", o.Path, role, in, err)
			}
			if !same {
				continue
			}
			if o.Of != "" {
				return fmt.Errorf("refusing to write %s (the temporary file of %s): it is the %s %s", o.Path, o.Of, role, in)
			}
			return fmt.Errorf("refusing to write %s: it is the %s %s, which would be overwritten", o.Path, role, in)
		}
	}
	return nil
}

// Creatable checks, without leaving anything behind, that path can be
// created or replaced: its directory exists and accepts new files, and
// path is not a directory.
func Creatable(path string) error {
	if path == "" {
		return errors.New("empty output path")
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("output %s is a directory", path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot create %s: the directory %s does not exist", path, dir)
		}
		return fmt.Errorf("cannot create %s: %w", path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("cannot create %s: %s is not a directory", path, dir)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".probe-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot create %s: directory %s: %w", path, dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
