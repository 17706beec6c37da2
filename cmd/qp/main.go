// Command qp indexes document collections and runs batched top-k BM25
// queries (AND, OR, AND+OR) on the CPU or a CUDA GPU.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/qpengine/qp/internal/version"
)

type command struct {
	name, args, summary string
	run                 func(args []string) error
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

func usage() {
	fmt.Fprintf(os.Stderr, `qp — in-memory GPU/CPU query processor for compressed inverted indexes.

Usage: qp <command> [flags] [args]

Commands:
`)
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(os.Stderr, "\nRun 'qp <command> --help' for the flags of a command; 'qp --version' prints the\nversion and the commit it was built from.\n")
}

// aliases are top-level flags that stand for a command.
var aliases = map[string]string{"--version": "version", "-version": "version", "-V": "version"}

func init() {
	c := command{name: "version", args: "", summary: "print the version and the commit qp was built from (also: qp --version)"}
	c.run = func(args []string) error {
		fs := newFlags(c, `Prints qp's version, the git commit it was built from (with its time, and
"modified" when the tree had uncommitted changes) and the Go version. The
commit is known for binaries built with 'go build' or 'make build' inside
the git checkout; otherwise it prints "commit unknown".`)
		if _, err := parse(fs, args); err != nil {
			return err
		}
		fmt.Println(version.Get())
		return nil
	}
	register(c)
}

// errUsage marks an error that already printed its usage text.
var errUsage = errors.New("usage")

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		if len(os.Args) > 2 {
			if c, ok := commands[os.Args[2]]; ok {
				_ = c.run([]string{"--help"})
				return
			}
		}
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	if a, ok := aliases[os.Args[1]]; ok {
		os.Args[1] = a
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "qp: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err := c.run(os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		if !errors.Is(err, errUsage) {
			fmt.Fprintf(os.Stderr, "qp %s: %v\n", c.name, err)
		}
		os.Exit(1)
	}
}

// newFlags makes a FlagSet whose --help prints the command's synopsis.
func newFlags(c command, long string) *flag.FlagSet {
	fs := flag.NewFlagSet("qp "+c.name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: qp %s %s\n\n%s\n", c.name, c.args, strings.TrimSpace(long))
		fmt.Fprintf(fs.Output(), "\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs is parse for a command of exactly n positional arguments: any
// other count prints the usage and returns errUsage.
func parseArgs(fs *flag.FlagSet, args []string, n int) ([]string, error) {
	pos, err := parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != n {
		fs.Usage()
		return nil, errUsage
	}
	return pos, nil
}

// parse parses flags allowing them after positional arguments too.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if err := triValueApart(fs, args[:len(args)-len(rest)], rest[0]); err != nil {
			return nil, err
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// triValueApart catches `--gpu-bitmap-and off`: a triFlag (a boolean flag
// to the flag package) followed by one of its values as a separate
// argument, which would otherwise become a positional argument and a bare
// usage text. parsed are the arguments fs.Parse consumed before next.
func triValueApart(fs *flag.FlagSet, parsed []string, next string) error {
	if len(parsed) == 0 {
		return nil
	}
	name := strings.TrimLeft(parsed[len(parsed)-1], "-")
	f := fs.Lookup(name)
	if f == nil || strings.Contains(name, "=") {
		return nil
	}
	if _, ok := f.Value.(*triFlag); !ok {
		return nil
	}
	var v triFlag
	if v.Set(next) != nil {
		return nil
	}
	return fmt.Errorf("--%s %s: write the value with '=': --%s=%s", name, next, name, next)
}
