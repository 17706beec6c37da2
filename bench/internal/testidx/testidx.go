// Package testidx builds small real-text indexes for the bench packages'
// tests: a collection of ../shared/data/collections (CACM, CISI, ...) indexed
// as `qp index --stem english --stopwords english` would.
package testidx

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/score"
)

// DataDir is ../shared/data seen from a package two levels below the
// repository root (bench/NAME).
const DataDir = "../../../shared/data"

type docs struct {
	sc *bufio.Scanner
	f  *os.File
}

func (d *docs) Next() (*index.Document, error) {
	if !d.sc.Scan() {
		if err := d.sc.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	var j struct{ ID, Title, Text string }
	if err := json.Unmarshal(d.sc.Bytes(), &j); err != nil {
		return nil, err
	}
	return &index.Document{ID: j.ID, Text: []byte(j.Title + " " + j.Text)}, nil
}

// Build indexes collection name (e.g. "cacm") with English stemming and
// stop words into t.TempDir() and opens it; the test is skipped when the
// data is absent.
func Build(t testing.TB, name string, opt analysis.Options) *index.Index {
	t.Helper()
	f, err := os.Open(filepath.Join(DataDir, "collections", name, "docs.jsonl"))
	if err != nil {
		t.Skipf("collection %s not available: %v", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	out := filepath.Join(t.TempDir(), name+".qp")
	if err := opt.Validate(); err != nil {
		t.Fatal(err)
	}
	n := opt.Normalize()
	bp, err := compress.ByName("bp128")
	if err != nil {
		t.Fatal(err)
	}
	_, err = index.Build(context.Background(), &docs{sc: sc, f: f}, index.BuildOptions{
		Out: out, BlockSize: 128, DocCodec: bp, FreqCodec: bp,
		Params: score.Default,
		NewAnalyzer: func() index.Analyzer {
			a, _ := analysis.New(opt)
			return a.AppendTokens
		},
		Workers: runtime.GOMAXPROCS(0),
		Meta:    index.Meta{Stem: n.Stem, Stopwords: n.Stopwords},
		Bitmaps: index.BitmapsAuto,
	})
	if err != nil {
		t.Fatal(err)
	}
	x, err := index.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// English is the analysis of `qp index --stem english --stopwords english`.
var English = analysis.Options{Stem: "english", Stopwords: "english"}

// TREC06 returns the first limit queries of the TREC 2006 efficiency log
// and x's analyzer, for the bench tests that measure an index with it. The
// log is read from $QP_QUERIES (the device scripts' copy of the logs,
// scripts/device/lib.sh), else from DataDir/queries; the test skips when it
// is absent.
func TREC06(t testing.TB, x *index.Index, limit int) ([]eval.Query, *analysis.Analyzer) {
	t.Helper()
	dir := os.Getenv("QP_QUERIES")
	if dir == "" {
		dir = filepath.Join(DataDir, "queries")
	}
	qs, err := eval.ReadQueryFile(filepath.Join(dir, "06.efficiency_topics.txt"), limit)
	if err != nil {
		t.Skip(err)
	}
	an, err := x.Analyzer()
	if err != nil {
		t.Fatal(err)
	}
	return qs, an
}
