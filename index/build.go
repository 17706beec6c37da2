package index

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/internal/fileguard"
	"github.com/qpengine/qp/score"
)

// Document is one parsed input document.
type Document struct {
	ID     string // external id
	Text   []byte
	Stored []byte // stored fields as a JSON object, or nil
	Key    string // sort key for DocIDOrder "field" (the field's value)
	// Terms, when not nil, makes the document pre-tokenized: Text is
	// ignored, no analyzer runs, and the document holds the distinct terms
	// Terms (strictly ascending in byte order) with the frequencies TFs
	// (same length, each >= 1); its length is Σ TFs. Synthetic collections
	// (gen.Topics) enter the builder this way instead of rendering and
	// re-parsing text. Build rejects unsorted, duplicate or empty terms and
	// zero frequencies.
	Terms []string
	TFs   []uint32
	// TermIDs, when not nil, makes the document pre-tokenized by term ids
	// (strictly ascending; TFs as for Terms): the builder keys its lists by
	// id and names each term once per spilled run through
	// BuildOptions.TermName, which must then be set and give distinct ids
	// distinct names. It is the fast path of synthetic collections (no
	// string per posting).
	TermIDs []uint32
}

// DocSource yields documents in input order; Next returns io.EOF at the end.
type DocSource interface {
	Next() (*Document, error)
}

// Analyzer turns text into tokens, appending to dst. Each build worker gets
// its own Analyzer from BuildOptions.NewAnalyzer.
type Analyzer func(dst []string, text []byte) []string

// BuildOptions configure Build.
type BuildOptions struct {
	Out         string
	BlockSize   int
	DocCodec    compress.Codec
	FreqCodec   compress.Codec
	Params      score.Params
	NewAnalyzer func() Analyzer
	// DocIDOrder is "input" (default), "random" (by a hash of the external
	// id; Ao et al. VLDB'11 §6 show it helps linear-regression methods) or
	// "field" (by Document.Key, then input order).
	DocIDOrder string
	Seed       int64 // for "random"
	// MemBudget bounds the bytes of postings held in memory; past it the
	// builder spills a sorted run to TempDir. 0 = 1 GiB.
	MemBudget int64
	TempDir   string
	Workers   int // 0 = all cores
	Meta      Meta
	Bitmaps   BitmapMode // when lists are stored as roaring bitmaps (zero: off)
	// TermName names the term ids of Document.TermIDs (called
	// concurrently only with itself: it must be safe for concurrent use).
	TermName func(id uint32) string
	// Progress is called from time to time (never concurrently) with the
	// number of documents indexed so far.
	Progress func(BuildStats)
}

// BuildStats summarises an index build.
type BuildStats struct {
	Docs, Tokens, Postings, Terms uint64
	Runs                          int   // sorted runs spilled to disk
	DocBytes, FreqBytes           int64 // encoded sizes of docID areas (blocks or bitmaps) and frequency blocks
	BitmapLists                   uint64
}

type tokDoc struct {
	err    error
	ids    []uint32 // pre-tokenized by id (terms is nil)
	seq    uint64
	doc    *Document
	terms  []string
	tfs    []uint32
	length uint32
}

type postBuf struct {
	docs, tfs []uint32
}

// Build reads every document of src, inverts it with bounded memory and
// writes the index to opt.Out. Tokenizing runs on all cores; inversion is one
// goroutine appending to per-term lists in docID order; when the postings in
// memory exceed MemBudget they are written as a sorted run, and the runs are
// merged term by term at the end (encoding on all cores).
//
// Before reading any document, Build validates the options and checks that
// opt.Out can be created (so that a bad output path fails at once, not
// after the whole input was read). Spilled runs go to a folder of
// TempDir named after opt.Out and the process (spillDirPrefix); the folder
// and OUT.tmp are removed when Build returns, on cancellation too, and the
// leftovers of a killed build into the same output are removed by the next
// one. An input without documents is an error (ErrNoDocuments) and writes
// nothing.
//
// The phases: readBatches (one goroutine, input order) → tokenizeBatches
// (opt.Workers goroutines, any order) → invertInOrder (this goroutine, back in
// input order; spills) → writeBuilt (docID order, merge, encode on all
// cores).
func Build(ctx context.Context, src DocSource, opt BuildOptions) (BuildStats, error) {
	if opt.NewAnalyzer == nil {
		panic("BUG: BuildOptions.NewAnalyzer is nil")
	}
	if err := opt.validate(); err != nil {
		return BuildStats{}, err
	}
	opt.setDefaults()
	if err := fileguard.Creatable(opt.Out); err != nil {
		return BuildStats{}, fmt.Errorf("index: %w", err)
	}
	tmpDir, err := makeSpillDir(opt.TempDir, opt.Out)
	if err != nil {
		return BuildStats{}, err
	}
	defer os.RemoveAll(tmpDir)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Documents pre-tokenized by term ids are inverted by idInv (sort-based,
	// opt.Workers shards; build_ids.go); the tokenizers bucket their
	// postings by shard.
	var idInv *idInverter
	if opt.TermName != nil {
		idInv = newIDInverter(tmpDir, opt.Workers, opt.MemBudget)
		defer func() {
			if idInv != nil {
				idInv.stop()
			}
		}()
	}
	in, readErr := readBatches(ctx, src, opt.Workers)
	out := tokenizeBatches(ctx, in, &opt, idInv)
	inv := newInverter(tmpDir, opt.MemBudget)
	cols, st, err := invertInOrder(ctx, out, inv, idInv, &opt)
	if err != nil {
		return st, err
	}
	if *readErr != nil { // out is closed, so the reader has returned
		return st, *readErr
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if st.Docs == 0 {
		return st, ErrNoDocuments
	}
	return writeBuilt(ctx, &opt, cols, inv, idInv, st)
}

// setDefaults fills the zero Workers, MemBudget and BlockSize.
func (opt *BuildOptions) setDefaults() {
	if opt.Workers == 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	if opt.MemBudget == 0 {
		opt.MemBudget = 1 << 30
	}
	if opt.BlockSize == 0 {
		opt.BlockSize = DefaultBlockSize
	}
}

// buildBatch is up to batchDocs consecutive documents of the input; the
// first one's seq orders the batches.
type buildBatch struct {
	docs    []tokDoc
	buckets [][]idPosting // postings of the term-id documents by shard
}

// batchDocs is the number of documents the reader hands over at once.
const batchDocs = 64

// readBatches reads src in order on one goroutine and sends its documents
// in batches until src ends, fails or ctx is done; it closes the channel then.
// *err holds src's error (nil at its end): read it only after everything
// downstream of the channel has seen it closed.
func readBatches(ctx context.Context, src DocSource, workers int) (<-chan *buildBatch, *error) {
	in := make(chan *buildBatch, workers*2)
	readErr := new(error)
	go func() {
		defer close(in)
		var seq uint64
		for {
			b := &buildBatch{}
			for len(b.docs) < batchDocs {
				d, err := src.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					*readErr = err
					break
				}
				b.docs = append(b.docs, tokDoc{seq: seq, doc: d})
				seq++
			}
			if len(b.docs) > 0 {
				select {
				case in <- b:
				case <-ctx.Done():
					return
				}
			}
			if len(b.docs) < batchDocs {
				return
			}
		}
	}()
	return in, readErr
}

// tokenizeBatches tokenizes the documents of every batch on opt.Workers
// goroutines (each with its own analyzer; batches leave in any order) and
// closes the returned channel when in is drained or ctx is done. A
// document's error is left in its tokDoc for invertInOrder to report in
// input order.
func tokenizeBatches(ctx context.Context, in <-chan *buildBatch, opt *BuildOptions, idInv *idInverter) <-chan *buildBatch {
	out := make(chan *buildBatch, opt.Workers*2)
	var wg sync.WaitGroup
	for w := 0; w < opt.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := tokenizer{an: opt.NewAnalyzer(), counts: map[string]uint32{}}
			for b := range in {
				for i := range b.docs {
					td := &b.docs[i]
					switch {
					case td.doc.TermIDs != nil:
						td.err = pretokenizedIDs(td, opt.TermName != nil)
					case td.doc.Terms != nil:
						td.err = pretokenized(td)
					default:
						tk.tokenize(td)
					}
				}
				if idInv != nil {
					b.buckets = idInv.idBuckets(b.docs)
				}
				select {
				case out <- b:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(out) }()
	return out
}

// tokenizer is one tokenizing goroutine's analyzer and scratch.
type tokenizer struct {
	an     Analyzer
	toks   []string
	counts map[string]uint32
}

// tokenize analyzes td's text into its distinct terms (sorted) with their
// frequencies and its length in tokens, and drops the text.
func (tk *tokenizer) tokenize(td *tokDoc) {
	tk.toks = tk.an(tk.toks[:0], td.doc.Text)
	td.length = uint32(len(tk.toks))
	clear(tk.counts)
	for _, t := range tk.toks {
		tk.counts[t]++
	}
	td.terms = make([]string, 0, len(tk.counts))
	for t := range tk.counts {
		td.terms = append(td.terms, t)
	}
	sort.Strings(td.terms)
	td.tfs = make([]uint32, len(td.terms))
	for j, t := range td.terms {
		td.tfs[j] = tk.counts[t]
	}
	td.doc.Text = nil
}

// docColumns are the per-document data gathered in input order (docID =
// input position until writeBuilt applies the docID order).
type docColumns struct {
	lens      []uint32
	ids       []string
	stored    [][]byte
	keys      []string // DocIDOrder "field" only
	anyStored bool
}

// invertInOrder takes the tokenized batches back into input order and adds
// their postings to inv (spilling past the budget) or, bucketed, to idInv;
// it gathers the documents' columns and calls opt.Progress after each
// batch. It returns when out is closed; the first document error, spill
// error or cancellation stops it.
func invertInOrder(ctx context.Context, out <-chan *buildBatch, inv *inverter, idInv *idInverter, opt *BuildOptions) (docColumns, BuildStats, error) {
	var cols docColumns
	var st BuildStats
	pending := map[uint64]*buildBatch{}
	var next uint64
	for {
		var b *buildBatch
		select {
		case b = <-out:
		case <-ctx.Done(): // also while the reader waits for input
			return cols, st, ctx.Err()
		}
		if b == nil {
			return cols, st, nil
		}
		pending[b.docs[0].seq] = b
		for {
			pb, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			if err := cols.invertBatch(pb, inv, opt.DocIDOrder == "field", &st); err != nil {
				return cols, st, err
			}
			if pb.buckets != nil {
				if err := idInv.send(ctx, pb.buckets); err != nil {
					return cols, st, idInv.failure(err)
				}
			}
			next += uint64(len(pb.docs))
			st.Docs = next
			if opt.Progress != nil {
				st.Postings, st.Runs = inv.postings, len(inv.runs)
				if idInv != nil {
					st.Postings += idInv.postings.Load()
				}
				opt.Progress(st)
			}
		}
		if ctx.Err() != nil {
			return cols, st, ctx.Err()
		}
	}
}

// invertBatch appends the batch's documents (the next ones in input order)
// to the columns and their term-string postings to inv, spilling when the
// budget is reached; a document's tokenizing error is returned naming it.
func (cols *docColumns) invertBatch(b *buildBatch, inv *inverter, keys bool, st *BuildStats) error {
	for i := range b.docs {
		td := &b.docs[i]
		if td.err != nil {
			return fmt.Errorf("index: document %d (%q): %w", td.seq, td.doc.ID, td.err)
		}
		id := uint32(td.seq)
		if uint64(td.seq) >= uint64(Terminated) {
			return fmt.Errorf("index: more than %d documents", Terminated-1)
		}
		cols.lens = append(cols.lens, td.length)
		cols.ids = append(cols.ids, td.doc.ID)
		cols.stored = append(cols.stored, td.doc.Stored)
		cols.anyStored = cols.anyStored || td.doc.Stored != nil
		if keys {
			cols.keys = append(cols.keys, td.doc.Key)
		}
		st.Tokens += uint64(td.length)
		for j, t := range td.terms {
			inv.add(t, id, td.tfs[j])
		}
		if err := inv.maybeSpill(); err != nil {
			return err
		}
	}
	return nil
}

// writeBuilt applies the docID order (a permutation of the columns, and of
// the postings at merge time), opens the writer, merges the spilled runs
// and in-memory lists of inv and idInv term by term into it (encoding on
// opt.Workers cores) and closes it. On an error the output is not written
// (Writer.Abort).
func writeBuilt(ctx context.Context, opt *BuildOptions, cols docColumns, inv *inverter, idInv *idInverter, st BuildStats) (BuildStats, error) {
	var perm []uint32 // old docID -> new docID
	if opt.DocIDOrder == "random" || opt.DocIDOrder == "field" {
		perm = docPermutation(cols.ids, cols.keys, opt.DocIDOrder, opt.Seed)
		cols.lens = permute(cols.lens, perm)
		cols.ids = permute(cols.ids, perm)
		cols.stored = permute(cols.stored, perm)
	}
	if !cols.anyStored {
		cols.stored = nil
	}
	meta := opt.Meta
	meta.DocIDOrder = opt.DocIDOrder
	if meta.DocIDOrder == "" {
		meta.DocIDOrder = "input"
	}
	w, err := NewWriter(opt.Out, WriterOptions{
		BlockSize: opt.BlockSize, DocCodec: opt.DocCodec, FreqCodec: opt.FreqCodec,
		Params: opt.Params, DocLens: cols.lens, DocIDs: cols.ids, Stored: cols.stored, Meta: meta, Bitmaps: opt.Bitmaps,
	})
	if err != nil {
		return st, err
	}
	st.Runs = len(inv.runs)
	var idm *idMerge
	if idInv != nil {
		if err := idInv.finish(opt.TermName); err != nil {
			w.Abort()
			return st, err
		}
		st.Runs += idInv.runCount()
		idm = newIDMerge(idInv.shards, perm, 8*opt.Workers)
	}
	if idm != nil && inv.postings == 0 {
		// Term ids alone (qp gen): merged and encoded on all cores.
		err = idm.writeAll(ctx, w, opt.Workers, &st)
	} else {
		err = inv.merge(ctx, w, perm, idm, opt.Workers, &st)
	}
	if err != nil {
		w.Abort()
		return st, err
	}
	if err := w.Close(); err != nil {
		return st, err
	}
	st.Terms = w.meta.Terms
	st.Postings = w.meta.Postings
	st.BitmapLists = w.meta.BitmapLists
	return st, nil
}

// ErrNoDocuments is returned by Build for an input without documents.
var ErrNoDocuments = errors.New("index: no documents in the input (an index needs at least one)")

// validate checks the options before any input is read.
func (opt *BuildOptions) validate() error {
	if opt.Out == "" {
		return errors.New("index: no output path")
	}
	if opt.BlockSize != 0 && (opt.BlockSize < 1 || opt.BlockSize > MaxBlockSize) {
		return fmt.Errorf("index: block size %d out of range 1..%d", opt.BlockSize, MaxBlockSize)
	}
	if opt.Params != (score.Params{}) {
		if err := opt.Params.Validate(); err != nil {
			return fmt.Errorf("index: %w", err)
		}
	}
	if opt.Workers < 0 {
		return fmt.Errorf("index: %d workers; want 0 (all cores) or more", opt.Workers)
	}
	if opt.MemBudget < 0 {
		return fmt.Errorf("index: negative memory budget %d", opt.MemBudget)
	}
	if opt.Bitmaps > BitmapsAlways {
		return fmt.Errorf("index: %v", opt.Bitmaps)
	}
	switch opt.DocIDOrder {
	case "", "input", "random", "field":
	default:
		return fmt.Errorf("index: unknown docid order %q (input, random or field)", opt.DocIDOrder)
	}
	return nil
}

// pretokenized checks a pre-tokenized document (Document.Terms) and takes
// its terms and frequencies.
func pretokenized(td *tokDoc) error {
	d := td.doc
	// Strictly ascending terms can hold "" only first.
	if len(d.Terms) > 0 && d.Terms[0] == "" {
		return fmt.Errorf("pre-tokenized document has an empty term")
	}
	length, err := pretokLength(d.Terms, d.TFs, "terms")
	if err != nil {
		return err
	}
	td.terms, td.tfs, td.length = d.Terms, d.TFs, length
	d.Terms, d.TFs, d.Text = nil, nil, nil
	return nil
}

// pretokLength checks the terms (or term ids) of a pre-tokenized document,
// strictly ascending with one frequency >= 1 each, and returns its length in
// tokens.
func pretokLength[T string | uint32](terms []T, tfs []uint32, kind string) (uint32, error) {
	if len(tfs) != len(terms) {
		return 0, fmt.Errorf("pre-tokenized document has %d %s but %d frequencies", len(terms), kind, len(tfs))
	}
	var length uint64
	for j, t := range terms {
		if j > 0 && t <= terms[j-1] {
			return 0, fmt.Errorf("pre-tokenized %s not strictly ascending: %q after %q", kind, fmt.Sprint(t), fmt.Sprint(terms[j-1]))
		}
		if tfs[j] == 0 {
			return 0, fmt.Errorf("pre-tokenized document: %s %q has frequency 0", kind[:len(kind)-1], fmt.Sprint(t))
		}
		length += uint64(tfs[j])
	}
	if length > math.MaxUint32 {
		return 0, fmt.Errorf("pre-tokenized document has %d tokens (more than 2^32-1)", length)
	}
	return uint32(length), nil
}

// pretokenizedIDs checks a document pre-tokenized by term ids.
func pretokenizedIDs(td *tokDoc, named bool) error {
	d := td.doc
	if !named {
		return fmt.Errorf("pre-tokenized by term ids but BuildOptions.TermName is nil")
	}
	if d.Terms != nil {
		return fmt.Errorf("pre-tokenized document has both Terms and TermIDs")
	}
	length, err := pretokLength(d.TermIDs, d.TFs, "term ids")
	if err != nil {
		return err
	}
	td.ids, td.tfs, td.length = d.TermIDs, d.TFs, length
	d.TermIDs, d.TFs, d.Text = nil, nil, nil
	return nil
}

func permute[T any](s []T, perm []uint32) []T {
	out := make([]T, len(s))
	for old, nw := range perm {
		out[nw] = s[old]
	}
	return out
}

// docPermutation returns old->new docIDs sorting documents by a hash of
// their external id (random) or by key, ties by input order.
func docPermutation(ids, keys []string, order string, seed int64) []uint32 {
	n := len(ids)
	idx := make([]uint32, n)
	for i := range idx {
		idx[i] = uint32(i)
	}
	if order == "random" {
		h := make([]uint64, n)
		var sb [8]byte
		binary.LittleEndian.PutUint64(sb[:], uint64(seed))
		for i, id := range ids {
			f := fnv.New64a()
			f.Write(sb[:])
			f.Write([]byte(id))
			h[i] = f.Sum64()
		}
		sort.SliceStable(idx, func(a, b int) bool { return h[idx[a]] < h[idx[b]] })
	} else {
		sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
	}
	perm := make([]uint32, n)
	for nw, old := range idx {
		perm[old] = uint32(nw)
	}
	return perm
}

// inverter accumulates postings per term and spills sorted runs.
type inverter struct {
	dir      string
	budget   int64
	lists    map[string]*postBuf
	mem      int64
	postings uint64
	runs     []string
}

func newInverter(dir string, budget int64) *inverter {
	return &inverter{dir: dir, budget: budget, lists: map[string]*postBuf{}}
}

func (v *inverter) add(term string, doc, tf uint32) {
	p := v.lists[term]
	if p == nil {
		p = &postBuf{}
		// The key is copied: term may be a substring of a document's text
		// or token arena, which must not stay alive for the whole build.
		v.lists[strings.Clone(term)] = p
		v.mem += int64(len(term)) + 96
	}
	if len(p.docs) == cap(p.docs) {
		v.mem += int64(cap(p.docs)+1) * 8 // growth doubles the two slices
	}
	p.docs = append(p.docs, doc)
	p.tfs = append(p.tfs, tf)
	v.postings++
}

func (v *inverter) sortedTerms() []string {
	terms := make([]string, 0, len(v.lists))
	for t := range v.lists {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	return terms
}

func (v *inverter) maybeSpill() error {
	if v.mem < v.budget {
		return nil
	}
	return v.spill()
}

// spill writes the in-memory lists as a sorted run:
// per term: uvarint len(term), term, uvarint n, n × (uvarint doc gap, uvarint tf);
// a zero length ends the run.
func (v *inverter) spill() error {
	path := filepath.Join(v.dir, fmt.Sprintf("run-%05d", len(v.runs)))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("index: spilling run: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	var b []byte
	for _, t := range v.sortedTerms() {
		p := v.lists[t]
		b = binary.AppendUvarint(b[:0], uint64(len(t)))
		b = append(b, t...)
		b = binary.AppendUvarint(b, uint64(len(p.docs)))
		prev := uint32(0)
		for i, d := range p.docs {
			b = binary.AppendUvarint(b, uint64(d-prev))
			b = binary.AppendUvarint(b, uint64(p.tfs[i]))
			prev = d
		}
		bw.Write(b)
	}
	bw.WriteByte(0)
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("index: spilling run: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("index: spilling run: %w", err)
	}
	v.runs = append(v.runs, path)
	v.lists = map[string]*postBuf{}
	v.mem = 0
	return nil
}

// runReader reads a spilled run term by term.
type runReader struct {
	f    *os.File
	r    *bufio.Reader
	term string
	n    int
	path string
}

func openRun(path string) (*runReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	rr := &runReader{f: f, r: bufio.NewReaderSize(f, 1<<20), path: path}
	return rr, rr.advance()
}

func (rr *runReader) advance() error {
	l, err := binary.ReadUvarint(rr.r)
	if err != nil {
		return fmt.Errorf("index: run %s: %w", rr.path, err)
	}
	if l == 0 {
		rr.term = ""
		return nil
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(rr.r, b); err != nil {
		return fmt.Errorf("index: run %s: %w", rr.path, err)
	}
	n, err := binary.ReadUvarint(rr.r)
	if err != nil {
		return fmt.Errorf("index: run %s: %w", rr.path, err)
	}
	rr.term, rr.n = string(b), int(n)
	return nil
}

// read appends the current term's postings and advances.
func (rr *runReader) read(docs, tfs []uint32) ([]uint32, []uint32, error) {
	prev := uint32(0)
	for i := 0; i < rr.n; i++ {
		g, err := binary.ReadUvarint(rr.r)
		if err != nil {
			return nil, nil, fmt.Errorf("index: run %s: %w", rr.path, err)
		}
		tf, err := binary.ReadUvarint(rr.r)
		if err != nil {
			return nil, nil, fmt.Errorf("index: run %s: %w", rr.path, err)
		}
		prev += uint32(g)
		docs = append(docs, prev)
		tfs = append(tfs, uint32(tf))
	}
	return docs, tfs, rr.advance()
}

type mergedList struct {
	term      string
	docs, tfs []uint32
	enc       []byte
	rec       TermRecord
	docBytes  int
	freqBytes int
	err       error
}

// merge combines the runs, the in-memory lists and the lists of ids (if
// not nil: documents pre-tokenized by term ids) term by term, remaps
// docIDs through perm, encodes lists on all cores and writes them in order.
func (v *inverter) merge(ctx context.Context, w *Writer, perm []uint32, ids *idMerge, workers int, st *BuildStats) error {
	var readers []*runReader
	defer func() {
		for _, r := range readers {
			r.f.Close()
		}
	}()
	runs := v.runs
	var idSrc *idStream
	if ids != nil {
		// Its lists are in docID order already: perm is applied below.
		ids.perm = nil
		var err error
		if idSrc, err = newIDStream(ids); err != nil {
			return err
		}
	}
	for _, p := range runs {
		r, err := openRun(p)
		if err != nil {
			return err
		}
		readers = append(readers, r)
	}
	memTerms := v.sortedTerms()
	mi := 0
	nextList := func() (*mergedList, error) {
		// The smallest term among the runs and memory.
		term := ""
		found := false
		for _, r := range readers {
			if r.term != "" && (!found || r.term < term) {
				term, found = r.term, true
			}
		}
		if mi < len(memTerms) && (!found || memTerms[mi] < term) {
			term, found = memTerms[mi], true
		}
		if idSrc != nil && idSrc.head != nil && (!found || idSrc.head.term < term) {
			term, found = idSrc.head.term, true
		}
		if !found {
			return nil, nil
		}
		ml := &mergedList{term: term}
		var err error
		for _, r := range readers { // runs hold ascending docID ranges in run order
			if r.term == term {
				if ml.docs, ml.tfs, err = r.read(ml.docs, ml.tfs); err != nil {
					return nil, err
				}
			}
		}
		if mi < len(memTerms) && memTerms[mi] == term {
			p := v.lists[term]
			ml.docs = append(ml.docs, p.docs...)
			ml.tfs = append(ml.tfs, p.tfs...)
			delete(v.lists, term)
			mi++
		}
		if idSrc != nil && idSrc.head != nil && idSrc.head.term == term {
			ml.docs = append(ml.docs, idSrc.head.docs...)
			ml.tfs = append(ml.tfs, idSrc.head.tfs...)
			if err := idSrc.advance(); err != nil {
				return nil, err
			}
		}
		if perm != nil {
			for i, d := range ml.docs {
				ml.docs[i] = perm[d]
			}
			sort.Sort(byDoc(*ml))
		} else if !ascending(ml.docs) {
			// The term came both as text and as a term id (two inverters):
			// each part is ascending; sorting merges them.
			sort.Stable(byDoc(*ml))
		}
		return ml, nil
	}
	// Batches of lists are encoded in parallel and written in order.
	pe := newParallelEncoder(w, workers)
	const batchPostings = 1 << 20
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var batch []*mergedList
		n := 0
		for n < batchPostings && len(batch) < 4096 {
			ml, err := nextList()
			if err != nil {
				return err
			}
			if ml == nil {
				break
			}
			batch = append(batch, ml)
			n += len(ml.docs)
		}
		if len(batch) == 0 {
			return nil
		}
		if err := pe.run(batch, nil, st); err != nil {
			return err
		}
	}
}

// parallelEncoder encodes batches of lists on all cores and writes them in
// order.
type parallelEncoder struct {
	w    *Writer
	encs []*ListEncoder
}

func newParallelEncoder(w *Writer, workers int) *parallelEncoder {
	pe := &parallelEncoder{w: w, encs: make([]*ListEncoder, workers)}
	for i := range pe.encs {
		pe.encs[i] = NewListEncoder(w.opt.BlockSize, w.opt.DocCodec, w.opt.FreqCodec, w.opt.Params, w.opt.DocLens)
		pe.encs[i].SetBitmaps(w.opt.Bitmaps)
	}
	return pe
}

// run encodes batch (first calling produce(i, ml) for each list when produce
// is not nil, in parallel) and appends the lists to the writer in order.
func (pe *parallelEncoder) run(batch []*mergedList, produce func(i int, ml *mergedList) error, st *BuildStats) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	for wi := range pe.encs {
		wg.Add(1)
		go func(e *ListEncoder) {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(batch) {
					return
				}
				ml := batch[i]
				if produce != nil {
					if ml.err = produce(i, ml); ml.err != nil {
						continue
					}
				}
				ml.enc, ml.err = e.Encode(ml.enc[:0], ml.docs, ml.tfs)
				ml.rec = e.Rec
				ml.docBytes, ml.freqBytes = e.Sizes()
			}
		}(pe.encs[wi])
	}
	wg.Wait()
	for _, ml := range batch {
		if ml.err != nil {
			return fmt.Errorf("index: term %q: %w", ml.term, ml.err)
		}
		if err := pe.w.AddEncoded(ml.term, ml.enc, ml.rec); err != nil {
			return err
		}
		if st != nil {
			st.DocBytes += int64(ml.docBytes)
			st.FreqBytes += int64(ml.freqBytes)
			st.Postings += uint64(len(ml.docs))
			st.Terms++
		}
	}
	return nil
}

// ProduceFunc fills list i (in ascending term order) into docs/freqs (which
// it may grow and return) and returns its term. It is called concurrently.
type ProduceFunc func(i int, docs, freqs []uint32) (term string, d, f []uint32, err error)

// AddListsParallel generates n lists with produce on all cores (workers),
// encodes them and appends them in order. progress, if not nil, is called
// after each batch with the number of lists written.
func (w *Writer) AddListsParallel(ctx context.Context, n, workers int, produce ProduceFunc, progress func(done int, st BuildStats)) (BuildStats, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	pe := newParallelEncoder(w, workers)
	var st BuildStats
	batch := make([]*mergedList, 0, 1024)
	pool := make([]*mergedList, 1024)
	for i := range pool {
		pool[i] = &mergedList{}
	}
	for lo := 0; lo < n; lo += len(pool) {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		hi := min(lo+len(pool), n)
		batch = batch[:0]
		for i := lo; i < hi; i++ {
			batch = append(batch, pool[i-lo])
		}
		err := pe.run(batch, func(i int, ml *mergedList) error {
			var err error
			ml.term, ml.docs, ml.tfs, err = produce(lo+i, ml.docs[:0], ml.tfs[:0])
			return err
		}, &st)
		if err != nil {
			return st, err
		}
		if progress != nil {
			progress(hi, st)
		}
	}
	return st, nil
}

func ascending(d []uint32) bool {
	for i := 1; i < len(d); i++ {
		if d[i] <= d[i-1] {
			return false
		}
	}
	return true
}

type byDoc mergedList

func (b byDoc) Len() int           { return len(b.docs) }
func (b byDoc) Less(i, j int) bool { return b.docs[i] < b.docs[j] }
func (b byDoc) Swap(i, j int) {
	b.docs[i], b.docs[j] = b.docs[j], b.docs[i]
	b.tfs[i], b.tfs[j] = b.tfs[j], b.tfs[i]
}
