package gen

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/index/analysis"
)

// TextAnalysis are the analyzer settings under which `qp index` on a
// collection written by WriteText gives the same index as BuildIndex: no
// stemming, no stop words (`qp index --stem none --stopwords none`, the
// defaults).
var TextAnalysis = analysis.Options{Stem: analysis.None, Stopwords: analysis.None}

// textFile writes JSON lines to a new file, gzip-compressed when the name
// ends in .gz.
type textFile struct {
	f  *os.File
	gz *gzip.Writer
	bw *bufio.Writer
}

// createText creates path (never overwriting an existing file).
func createText(path string) (*textFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("gen: --text: %w", err)
	}
	tf := &textFile{f: f}
	var w io.Writer = f
	if strings.HasSuffix(path, ".gz") {
		tf.gz = gzip.NewWriter(f)
		w = tf.gz
	}
	tf.bw = bufio.NewWriterSize(w, 1<<20)
	return tf, nil
}

func (tf *textFile) write(line []byte) error {
	if _, err := tf.bw.Write(line); err != nil {
		return fmt.Errorf("gen: --text %s: %w", tf.f.Name(), err)
	}
	return nil
}

func (tf *textFile) close() error {
	err := tf.bw.Flush()
	if tf.gz != nil {
		if e := tf.gz.Close(); err == nil {
			err = e
		}
	}
	if e := tf.f.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("gen: --text %s: %w", tf.f.Name(), err)
	}
	return nil
}

// abort closes and removes the partial file.
func (tf *textFile) abort() {
	tf.f.Close()
	os.Remove(tf.f.Name())
}

// BuildOptions configure Topics.Build.
type BuildOptions struct {
	// Index are the builder's options (Out empty: no index is written);
	// Build sets NewAnalyzer and the analysis metadata.
	Index index.BuildOptions
	// Text, when not empty, is a new file that receives the collection as
	// JSON lines ({"id":"d17","text":"w1 w2 ..."}, .gz compressed).
	Text string
}

// Build generates the collection and feeds it, pre-tokenized, through
// index.Build (spilling, all cores, Progress as for `qp index`), and/or
// writes it as text. On error the partial text file is removed.
func (t *Topics) Build(ctx context.Context, opt BuildOptions) (index.BuildStats, error) {
	var tf *textFile
	var textFn func([]byte) error
	if opt.Text != "" {
		var err error
		if tf, err = createText(opt.Text); err != nil {
			return index.BuildStats{}, err
		}
		textFn = tf.write
	}
	s := t.NewStream(textFn)
	defer s.Close()
	var st index.BuildStats
	var err error
	if opt.Index.Out != "" {
		bo := opt.Index
		bo.NewAnalyzer = func() index.Analyzer {
			a, _ := analysis.New(TextAnalysis)
			return a.AppendTokens
		}
		bo.TermName = t.Name
		n := TextAnalysis.Normalize()
		bo.Meta.Stem, bo.Meta.Stopwords = n.Stem, n.Stopwords
		st, err = index.Build(ctx, s, bo)
	} else {
		for err == nil {
			if err = ctx.Err(); err != nil {
				break
			}
			var d *index.Document
			if d, err = s.Next(); err == nil {
				st.Docs++
				st.Postings += uint64(len(d.TermIDs))
				for _, f := range d.TFs {
					st.Tokens += uint64(f)
				}
				if opt.Index.Progress != nil && st.Docs%chunkDocs == 0 {
					opt.Index.Progress(st)
				}
			}
		}
		if err == io.EOF {
			err = nil
		}
	}
	if tf != nil {
		if err != nil {
			tf.abort()
		} else {
			err = tf.close()
		}
	}
	return st, err
}
