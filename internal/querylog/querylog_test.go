package querylog

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
)

// TestFirstAnalyzed: the first max non-empty analyzed queries, in order;
// a missing log is an error.
func TestFirstAnalyzed(t *testing.T) {
	dir := t.TempDir()
	x := buildIndex(t, dir, "red apple pie", "green apple")
	log := filepath.Join(dir, "q.txt")
	if err := os.WriteFile(log, []byte("1:Red Apples\n2:...\n3:green pie\n4:apple\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := FirstAnalyzed(x, log, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"red", "apples"}, {"green", "pie"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("FirstAnalyzed = %q, want %q", got, want)
	}
	if _, err := FirstAnalyzed(x, filepath.Join(dir, "none.txt"), 2); err == nil {
		t.Error("a missing log: no error")
	}
}

// docs is an index.DocSource over texts.
type docs struct {
	texts []string
	i     int
}

func (d *docs) Next() (*index.Document, error) {
	if d.i == len(d.texts) {
		return nil, io.EOF
	}
	d.i++
	return &index.Document{ID: fmt.Sprint(d.i), Text: []byte(d.texts[d.i-1])}, nil
}

// buildIndex builds texts into dir/x.qp with the default analysis and
// opens it.
func buildIndex(t *testing.T, dir string, texts ...string) *index.Index {
	t.Helper()
	codec, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.qp")
	_, err = index.Build(context.Background(), &docs{texts: texts}, index.BuildOptions{
		Out: path, BlockSize: 4, DocCodec: codec, TempDir: dir,
		NewAnalyzer: func() index.Analyzer {
			a, _ := analysis.New(analysis.Options{})
			return a.AppendTokens
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	x, err := index.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}
