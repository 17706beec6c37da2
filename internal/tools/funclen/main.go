// Command funclen lists the Go functions longer than a number of lines
// (issue 21: "split the long functions into named phases"). It walks the
// directories given (default "."), skips _test.go files, generated files
// (the "Code generated ... DO NOT EDIT." line) and vendor/testdata
// directories, and prints "lines file:line name" per function over -min
// lines, longest first. Exit status 1 when any function exceeds -fail
// (0: never), so a check can gate on it.
//
//	go run ./internal/tools/funclen -min 150 .
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Func is one function's extent.
type Func struct {
	Name  string // Recv.Name for methods
	File  string
	Line  int
	Lines int // from the func keyword to the closing brace, inclusive
}

func main() {
	min := flag.Int("min", 150, "list functions of more than this many lines")
	fail := flag.Int("fail", 0, "exit 1 when a function has more than this many lines (0: never)")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	var all []Func
	for _, d := range dirs {
		fs, err := walk(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(2)
		}
		all = append(all, fs...)
	}
	if report(os.Stdout, all, *min, *fail) {
		os.Exit(1)
	}
}

// report prints the functions over min lines, longest first, and says
// whether one is over fail (fail > 0).
func report(w io.Writer, all []Func, min, fail int) bool {
	sort.Slice(all, func(i, j int) bool { return all[i].Lines > all[j].Lines })
	over := false
	for _, f := range all {
		if f.Lines <= min {
			break
		}
		fmt.Fprintf(w, "%5d %s:%d %s\n", f.Lines, f.File, f.Line, f.Name)
		over = over || (fail > 0 && f.Lines > fail)
	}
	return over
}

// walk lists the functions of the non-test, non-generated Go files under
// root.
func walk(root string) ([]Func, error) {
	var out []Func
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "vendor" || n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fs, err := funcs(path, src)
		if err != nil {
			return err
		}
		out = append(out, fs...)
		return nil
	})
	return out, err
}

// funcs parses one file and returns its functions (none for a generated
// file).
func funcs(path string, src []byte) ([]Func, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	var out []Func
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			name = recvName(fd.Recv.List[0].Type) + "." + name
		}
		start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
		out = append(out, Func{Name: name, File: path, Line: start.Line, Lines: end.Line - start.Line + 1})
	}
	return out, nil
}

// recvName is the receiver's type name without pointer or type parameters.
func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}
