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
	"github.com/qpengine/qp/index/analysis"
	"github.com/qpengine/qp/internal/ref"
	"github.com/qpengine/qp/score"
)

const cranfieldDir = "../../shared/data/collections/cranfield"

// simpleTokens lower-cases text and splits it on everything but letters and
// digits: every word is kept, so queries have many long lists and few
// non-empty conjunctions.
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
// reference built from the same tokens: once with simpleTokens (all words
// kept) and once with the real analyzer (index/analysis, English stopwords
// and Porter stemming, under which most conjunctions are non-empty).
func TestCranfield(t *testing.T) {
	docs, queries := readCranfield(t)
	if len(queries) != 225 {
		t.Fatalf("%d queries, want 225", len(queries))
	}
	english, err := analysis.New(analysis.Options{Stem: analysis.English, Stopwords: analysis.English})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []struct {
		analyzer string
		tokens   index.Analyzer
		codec    string
		bs       int
		ks       []int
		prefixes bool // also run each query's first 2 and 3 terms
	}{
		{"simple", simpleTokens, "bp128", 128, []int{1, 10, 100, 1000}, false},
		{"english", english.AppendTokens, "vbyte", 8, []int{1, 10, 1000}, true},
	} {
		t.Run(fmt.Sprintf("%s/%s/B%d", cfg.analyzer, cfg.codec, cfg.bs), func(t *testing.T) {
			codec, err := compress.ByName(cfg.codec)
			if err != nil {
				t.Skip(err)
			}
			// The reference inverts the analyzed text itself (docIDs =
			// input order).
			p := ref.Postings{}
			lens := make([]uint32, len(docs))
			for i, d := range docs {
				toks := cfg.tokens(nil, d.Text)
				lens[i] = uint32(len(toks))
				for _, tok := range toks {
					if p[tok] == nil {
						p[tok] = map[uint32]uint32{}
					}
					p[tok][uint32(i)]++
				}
			}
			path := filepath.Join(t.TempDir(), "cran.qp")
			_, err = index.Build(context.Background(), &docSlice{docs: docs}, index.BuildOptions{
				Out: path, BlockSize: cfg.bs, DocCodec: codec, TempDir: t.TempDir(),
				NewAnalyzer: func() index.Analyzer { return cfg.tokens },
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
				terms := cfg.tokens(nil, []byte(q[1]))
				if len(terms) == 0 {
					t.Fatalf("query %s analyzes to nothing", q[0])
				}
				variants := [][]string{terms}
				if cfg.prefixes {
					variants = append(variants, terms[:min(2, len(terms))], terms[:min(3, len(terms))])
				}
				for _, v := range variants {
					o := newOracle(p, params, norms, len(docs), v)
					if len(o.and) > 0 {
						nonEmptyAnd++
					}
					checkQuery(t, e, o, v, cfg.ks, false, fmt.Sprintf("cranfield q%s %q", q[0], v))
				}
			}
			t.Logf("%d queries, %d runs with a non-empty AND", len(queries), nonEmptyAnd)
		})
	}
}
