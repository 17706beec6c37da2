package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/score"
)

const cranfieldDir = "../../shared/data/collections/cranfield"

// simpleTokens lower-cases text and splits it on everything but letters and
// digits. (The real analyzer lives in index/analysis; the engine's tests do
// not depend on it so that they test the engine alone.)
func simpleTokens(dst []string, text []byte) []string {
	return append(dst, strings.FieldsFunc(strings.ToLower(string(text)), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})...)
}

type docSlice struct {
	docs []index.Document
	i    int
}

func (s *docSlice) Next() (*index.Document, error) {
	if s.i >= len(s.docs) {
		return nil, io.EOF
	}
	s.i++
	d := s.docs[s.i-1]
	return &d, nil
}

func readCranfield(t testing.TB) (docs []index.Document, queries [][2]string) {
	t.Helper()
	f, err := os.Open(filepath.Join(cranfieldDir, "docs.jsonl"))
	if err != nil {
		t.Skipf("cranfield not available: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var d struct{ ID, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, index.Document{ID: d.ID, Text: []byte(d.Text)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	qb, err := os.ReadFile(filepath.Join(cranfieldDir, "queries.tsv"))
	if err != nil {
		t.Skipf("cranfield queries not available: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(qb)), "\n") {
		id, text, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("bad query line %q", line)
		}
		queries = append(queries, [2]string{id, text})
	}
	return docs, queries
}

// TestCranfield indexes the Cranfield collection with index.Build and runs
// all 225 queries in every mode, algorithm and k against the brute-force
// reference built from the same tokens.
func TestCranfield(t *testing.T) {
	docs, queries := readCranfield(t)
	if len(queries) != 225 {
		t.Fatalf("%d queries, want 225", len(queries))
	}
	// The reference inverts the analyzed text itself (docIDs = input order).
	p := ref.Postings{}
	lens := make([]uint32, len(docs))
	for i, d := range docs {
		toks := simpleTokens(nil, d.Text)
		lens[i] = uint32(len(toks))
		for _, tok := range toks {
			if p[tok] == nil {
				p[tok] = map[uint32]uint32{}
			}
			p[tok][uint32(i)]++
		}
	}
	for _, cfg := range []struct {
		codec string
		bs    int
		ks    []int
	}{{"bp128", 128, []int{1, 10, 100, 1000}}, {"vbyte", 8, []int{10, 1000}}} {
		t.Run(fmt.Sprintf("%s/B%d", cfg.codec, cfg.bs), func(t *testing.T) {
			codec, err := compress.ByName(cfg.codec)
			if err != nil {
				t.Skip(err)
			}
			path := filepath.Join(t.TempDir(), "cran.qp")
			_, err = index.Build(context.Background(), &docSlice{docs: docs}, index.BuildOptions{
				Out: path, BlockSize: cfg.bs, DocCodec: codec, TempDir: t.TempDir(),
				NewAnalyzer: func() index.Analyzer { return simpleTokens },
			})
			if err != nil {
				t.Fatal(err)
			}
			x, err := index.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if x.NumDocs() != len(docs) || x.NumTerms() != len(p) {
				t.Fatalf("index: %d docs %d terms, want %d %d", x.NumDocs(), x.NumTerms(), len(docs), len(p))
			}
			params := x.Params()
			norms := params.Norms(nil, lens, score.AvgDL(lens))
			e := New(x)
			nonEmptyAnd := 0
			for _, q := range queries {
				terms := simpleTokens(nil, []byte(q[1]))
				o := newOracle(p, params, norms, len(docs), terms)
				if len(o.and) > 0 {
					nonEmptyAnd++
				}
				checkQuery(t, e, o, terms, cfg.ks, false, "cranfield q"+q[0])
			}
			t.Logf("%d queries, %d with a non-empty AND", len(queries), nonEmptyAnd)
		})
	}
}
