package gen

import (
	"context"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/qpengine/qp/index"
)

// chunkDocs is the number of documents a worker generates per job.
const chunkDocs = 256

// GenDoc is one generated document: pre-tokenized by word id for
// index.Build (Doc.TermIDs, Doc.TFs; names by Topics.Name) and, when the stream was asked for text, its JSON
// line ({"id":...,"text":...} and a newline).
type GenDoc struct {
	Doc  *index.Document
	Line []byte
}

// Stream generates documents 0..N-1 in order with Config.Workers
// goroutines (chunks of 256 documents, at most 4 per worker ahead of the
// consumer). It is an index.DocSource; with text, Next also hands each
// document's JSON line to the text callback, in order.
type Stream struct {
	t      *Topics
	text   func([]byte) error
	chunks chan chan []GenDoc
	cur    []GenDoc
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// DocID is the external id of document d.
func DocID(d int) string { return "d" + strconv.Itoa(d) }

// NewStream starts the generating workers. text, if not nil, receives every
// document's JSON line in document order (from Next's goroutine); an error
// it returns stops the stream. Close must be called.
func (t *Topics) NewStream(text func(line []byte) error) *Stream {
	ctx, cancel := context.WithCancel(context.Background())
	w := t.cfg.workers()
	s := &Stream{t: t, text: text, chunks: make(chan chan []GenDoc, 4*w), cancel: cancel}
	jobs := make(chan struct {
		lo  int
		out chan []GenDoc
	})
	s.wg.Add(1)
	go func() { // dispatcher: jobs in order, result slots queued in order
		defer s.wg.Done()
		defer close(jobs)
		defer close(s.chunks)
		for lo := 0; lo < t.p.Docs; lo += chunkDocs {
			out := make(chan []GenDoc, 1)
			select {
			case s.chunks <- out:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- struct {
				lo  int
				out chan []GenDoc
			}{lo, out}:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range w {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			var sc docScratch
			for j := range jobs {
				hi := min(j.lo+chunkDocs, t.p.Docs)
				docs := make([]GenDoc, 0, hi-j.lo)
				for d := j.lo; d < hi; d++ {
					docs = append(docs, t.makeDoc(d, &sc, text != nil))
				}
				j.out <- docs
			}
		}()
	}
	return s
}

// makeDoc generates document d as a GenDoc.
func (t *Topics) makeDoc(d int, sc *docScratch, text bool) GenDoc {
	tokens := t.document(d, sc)
	id := DocID(d)
	var g GenDoc
	if text {
		line := make([]byte, 0, 32+8*len(tokens))
		line = append(line, `{"id":"`...)
		line = append(line, id...)
		line = append(line, `","text":"`...)
		for i, w := range tokens {
			if i > 0 {
				line = append(line, ' ')
			}
			line = t.appendName(line, w)
		}
		g.Line = append(line, "\"}\n"...)
	}
	ids, tfs := sc.counts(make([]uint32, 0, len(tokens)/2), nil)
	doc := &index.Document{ID: id, TermIDs: slices.Clip(ids), TFs: tfs}
	g.Doc = doc
	return g
}

// Next returns the next document, or io.EOF after the last.
func (s *Stream) Next() (*index.Document, error) {
	for len(s.cur) == 0 {
		ch, ok := <-s.chunks
		if !ok {
			return nil, io.EOF
		}
		s.cur = <-ch
	}
	g := s.cur[0]
	s.cur = s.cur[1:]
	if s.text != nil {
		if err := s.text(g.Line); err != nil {
			return nil, err
		}
	}
	return g.Doc, nil
}

// Close stops the workers (documents not yet consumed are dropped).
func (s *Stream) Close() {
	s.cancel()
	go func() {
		for ch := range s.chunks { // unblock workers' sends (buffered: never blocks)
			_ = ch
		}
	}()
	s.wg.Wait()
}
