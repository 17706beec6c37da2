package ref

import (
	"fmt"
	"slices"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/index"
)

// Collection is a small in-memory collection for differential tests: terms
// in ascending byte order with their posting lists, and document lengths.
type Collection struct {
	Terms []string
	Docs  [][]uint32 // per term, strictly increasing docIDs
	Freqs [][]uint32 // per term, tf >= 1
	Lens  []uint32   // per document
}

// Postings is c as a brute-force map.
func (c *Collection) Postings() Postings { return PostingsFromLists(c.Terms, c.Docs, c.Freqs) }

// Collection turns p into a Collection (terms in byte order, docIDs
// ascending) of documents of the given lengths (the inverse of
// Collection.Postings).
func (p Postings) Collection(lens []uint32) *Collection {
	c := &Collection{Lens: lens}
	for t := range p {
		c.Terms = append(c.Terms, t)
	}
	slices.Sort(c.Terms)
	for _, t := range c.Terms {
		docs := make([]uint32, 0, len(p[t]))
		for d := range p[t] {
			docs = append(docs, d)
		}
		slices.Sort(docs)
		freqs := make([]uint32, len(docs))
		for i, d := range docs {
			freqs[i] = p[t][d]
		}
		c.Docs, c.Freqs = append(c.Docs, docs), append(c.Freqs, freqs)
	}
	return c
}

// WriteIndex writes c to path with index.NewWriter and opens it.
func (c *Collection) WriteIndex(path string, codec compress.Codec, blockSize int) (*index.Index, error) {
	return c.WriteIndexWith(path, index.WriterOptions{BlockSize: blockSize, DocCodec: codec})
}

// WriteIndexWith writes c to path with index.NewWriter under opt (DocLens
// is c.Lens unless set) and opens it: the one "write these lists, open the
// index" of the tests. On an error nothing is left at path.
func (c *Collection) WriteIndexWith(path string, opt index.WriterOptions) (*index.Index, error) {
	if opt.DocLens == nil {
		opt.DocLens = c.Lens
	}
	w, err := index.NewWriter(path, opt)
	if err != nil {
		return nil, err
	}
	for i, t := range c.Terms {
		if err := w.AddList(t, c.Docs[i], c.Freqs[i]); err != nil {
			w.Abort()
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return index.Open(path)
}

// CheckIndex decodes every list of x and compares it with c, so that a
// broken codec is reported as such rather than as an engine mismatch.
func (c *Collection) CheckIndex(x *index.Index) error {
	n := 0
	for i, t := range c.Terms {
		if len(c.Docs[i]) == 0 {
			continue
		}
		id, ok := x.Lookup(t)
		if !ok || id != n {
			return fmt.Errorf("term %q: lookup = %d,%v, want %d", t, id, ok, n)
		}
		n++
		l, err := x.List(id)
		if err != nil {
			return err
		}
		docs, freqs, err := l.Decode(nil, nil)
		if err != nil {
			return err
		}
		if len(docs) != len(c.Docs[i]) {
			return fmt.Errorf("term %q: %d postings decoded, want %d", t, len(docs), len(c.Docs[i]))
		}
		for j := range docs {
			if docs[j] != c.Docs[i][j] || freqs[j] != c.Freqs[i][j] {
				return fmt.Errorf("term %q posting %d: (%d,%d), want (%d,%d)", t, j, docs[j], freqs[j], c.Docs[i][j], c.Freqs[i][j])
			}
		}
	}
	return nil
}
