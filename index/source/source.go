// Package source reads document collections as a stream of documents, in
// constant memory (bounded by the largest record) whatever the size of the
// files.
//
// # Inputs
//
// Open takes files and directories. Directories are walked recursively in
// lexical order; names starting with "." are skipped, symbolic links to
// files are followed and links to directories are not. Files are read in
// the order given, each directory's files at its place in that order.
//
// With Format "auto" (the default) the format is detected from the file
// name, after removing a ".gz" suffix:
//
//	.jsonl .ndjson   JSON Lines
//	.json            JSON Lines; inside a directory, only when its first
//	                 non-blank line is a JSON object (so that a
//	                 pretty-printed stats.json next to docs.jsonl is
//	                 ignored)
//	.trec            TREC SGML
//	.sgml .xml       TREC SGML when the first 64 KiB contain a <DOC> tag
//	                 (inside a directory, other such files are ignored)
//	.txt             one document per file
//
// Inside a directory, files with other names are ignored; a file named
// explicitly whose format cannot be detected is an error. With a forced
// Format every file named, and every file inside the directories, is read
// in that format. Files whose name ends in ".gz", or that start with the
// gzip magic number, are decompressed transparently.
//
// # JSON Lines
//
// One JSON object per line; blank lines are skipped. The document id is
// the member "id", else "docid", else "_id": a string, or a number (the id
// is then the number as written, e.g. "17"). The text is the member "text",
// else "contents", else "body", a string (it may be empty). A null value
// counts as absent. Every other member whose value is a string or a number
// is kept in Doc.Fields (the same member name twice: the last wins); other
// values (true, false, null, objects, arrays) are ignored.
//
// Title: when a non-empty string member "title" is present, the indexed
// text is title + "\n" + text (Options.Title "prepend"), except that with
// Options.Title "auto" (the default) the title is not prepended when the
// text already begins with it, comparing letters and digits only and
// ignoring case, whitespace and punctuation: the Cranfield, CISI and LISA
// collections repeat the title at the start of the text, and prepending it
// again would double-count title terms (Anserini indexes the text alone).
// Options.Title "ignore" never prepends. The title is kept in
// Doc.Fields["title"] in every case.
//
// # TREC
//
// A sequence of <DOC> ... </DOC> elements; anything outside them is
// ignored. Tag names are matched case-insensitively and may carry
// attributes. The id is the content of the first <DOCNO> element, trimmed.
// The text is everything else inside the DOC element (all of its <TEXT>,
// <HEADLINE>, ... sections) with the DOCNO element and any <DOCHDR>
// element (HTTP headers in TREC web collections) removed and every tag
// replaced by a space; entities such as &amp; are left as they are. A
// document's Line is the line of its <DOC> tag.
//
// # Plain text
//
// Each .txt file is one document: the id is the file's path relative to
// the directory given to Open (with "/" separators, and without a ".gz"
// suffix), or the file's base name for a file given directly; the text is
// the file's contents, without a UTF-8 byte order mark.
//
// # Errors
//
// A malformed document is reported as an *Error naming the file and the
// line ("cranfield/docs.jsonl:17: invalid JSON: ..."), wrapping
// ErrInvalidJSON, ErrMissingID, ErrMissingText, ErrTooLarge or
// ErrMalformed. With Mode Fail (the default) the first error stops the
// reader: Next returns it, and again on every later call. With Mode Skip,
// or when OnError returns nil, the document is skipped, counted (Skipped)
// and reading goes on. Errors that make the rest of a file unreadable (an
// I/O error) are handled the same way, skipping the rest of that file.
// Documents returned before an error are never affected.
//
// A document id must not contain white space or control characters
// (ErrBadID; the rule of internal/extid, which the run writer applies): a
// TREC run could not hold it. With Options.UniqueIDs, an id seen before is
// an error (ErrDuplicateID) naming the file and line of its first
// occurrence. Both are errors of the document, handled as above.
//
// # Damaged compressed files
//
// A corrupt or truncated gzip stream is an error of the file, not of a
// document (ErrCorruptFile). With Mode Fail it stops the reader like any
// error. When errors may be skipped (Mode Skip or OnError), each gzip
// file is first decompressed once to check its CRC and length, so that no
// text of a corrupt file is ever returned: a corrupt file is skipped whole
// (one error, counted once); a truncated one (its data intact but ending
// early) yields its complete documents and then the error, which skips
// the rest of the file.
package source

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/qpengine/qp/internal/extid"
)

// Doc is one document. The Reader never reuses a Doc or its slices; they
// belong to the caller.
type Doc struct {
	ID   string
	Text []byte // the text to index
	// Fields holds the extra string and number members of a JSON document,
	// to be kept as stored fields; nil when there are none (and for other
	// formats).
	Fields map[string]string
	File   string // the file it was read from
	Line   int    // the line where it starts (1-based)
}

// Values of Options.Format.
const (
	FormatAuto  = "auto"
	FormatJSONL = "jsonl"
	FormatTREC  = "trec"
	FormatTxt   = "txt"
)

// Values of Options.Title.
const (
	TitleAuto    = "auto"
	TitlePrepend = "prepend"
	TitleIgnore  = "ignore"
)

// Mode selects what happens on a malformed document when Options.OnError
// is nil.
type Mode int

const (
	Fail Mode = iota // stop at the first error (the default)
	Skip             // skip the document, count it, go on
)

// DefaultMaxRecordSize is the default Options.MaxRecordSize.
const DefaultMaxRecordSize = 64 << 20

// Options configures a Reader. The zero value reads any supported format
// and stops at the first error.
type Options struct {
	// Format is "" or "auto" (detect by file name), "jsonl", "trec" or
	// "txt".
	Format string
	// Mode is Fail or Skip. It is ignored when OnError is set.
	Mode Mode
	// OnError, if set, is called (from Next) with each error: returning
	// nil skips the document and goes on; returning an error stops the
	// reader, and Next returns that error.
	OnError func(err error) error
	// Title is "" or "auto", "prepend" or "ignore"; see the package
	// documentation.
	Title string
	// MaxRecordSize bounds the size in bytes of a JSON line, of a TREC
	// document (and of each of its lines) and of a text file; larger
	// records are errors (ErrTooLarge). 0 means DefaultMaxRecordSize.
	MaxRecordSize int
	// UniqueIDs makes a repeated document id an error (ErrDuplicateID).
	// The Reader then keeps every id in a map (about 50 bytes per
	// document besides the id).
	UniqueIDs bool
}

// Validate reports an error for unknown option values.
func (o Options) Validate() error {
	switch o.Format {
	case "", FormatAuto, FormatJSONL, FormatTREC, FormatTxt:
	default:
		return fmt.Errorf("source: unknown format %q (allowed: %q, %q, %q, %q)", o.Format, FormatAuto, FormatJSONL, FormatTREC, FormatTxt)
	}
	switch o.Title {
	case "", TitleAuto, TitlePrepend, TitleIgnore:
	default:
		return fmt.Errorf("source: unknown title mode %q (allowed: %q, %q, %q)", o.Title, TitleAuto, TitlePrepend, TitleIgnore)
	}
	if o.Mode != Fail && o.Mode != Skip {
		return fmt.Errorf("source: unknown mode %d", o.Mode)
	}
	if o.MaxRecordSize < 0 {
		return fmt.Errorf("source: negative MaxRecordSize %d", o.MaxRecordSize)
	}
	return nil
}

// Error is a malformed document, or an unreadable file (Line 0, or the
// line reached).
type Error struct {
	File string
	Line int
	Err  error
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// input is one file to read.
type input struct {
	path   string
	id     string // document id for the txt format
	format string
	size   int64
}

// parser reads the documents of one file. It returns *Error for a
// malformed document (and can go on after it), io.EOF at the end, and any
// other error when the rest of the file cannot be read.
type parser interface {
	next() (*Doc, error)
	line() int // the line reached, for errors
}

func (p *jsonlParser) line() int { return p.lr.n }
func (p *trecParser) line() int  { return p.lr.n }

// Reader streams the documents of a list of files. Next, Close and
// SkipErrors must be called from one goroutine; BytesRead, TotalSize and
// Skipped may be called from any goroutine (e.g. to show progress).
type Reader struct {
	opts     Options
	files    []input
	total    int64
	fi       int // index of the next file to open
	cur      parser
	curFile  string
	closers  []io.Closer
	err      error // sticky: returned by every later Next
	read     atomic.Int64
	skipped  atomic.Int64
	skipErrs []error
	seen     map[string]docPos // with UniqueIDs: where each id was first read
}

// docPos is where a document starts: r.files[file], line.
type docPos struct{ file, line int32 }

// Open returns a Reader over the given files and directories with the
// default Options.
func Open(paths ...string) (*Reader, error) { return Options{}.Open(paths...) }

// Open returns a Reader over the given files and directories. It lists
// the files up front, so that errors such as a missing path or an
// undetectable format are reported here; it is an error for the list to
// be empty.
func (o Options) Open(paths ...string) (*Reader, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Format == "" {
		o.Format = FormatAuto
	}
	if o.Title == "" {
		o.Title = TitleAuto
	}
	if o.MaxRecordSize == 0 {
		o.MaxRecordSize = DefaultMaxRecordSize
	}
	files, err := o.collect(paths)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("source: no document files in %s", strings.Join(paths, ", "))
	}
	r := &Reader{opts: o, files: files}
	for _, f := range files {
		r.total += f.size
	}
	return r, nil
}

// TotalSize returns the size on disk of the files that Open with the
// default Options would read (compressed sizes for .gz files), for a
// progress bar.
func TotalSize(paths ...string) (int64, error) { return Options{}.TotalSize(paths...) }

// TotalSize returns the size on disk of the files that o.Open would read.
func (o Options) TotalSize(paths ...string) (int64, error) {
	if err := o.Validate(); err != nil {
		return 0, err
	}
	if o.Format == "" {
		o.Format = FormatAuto
	}
	files, err := o.collect(paths)
	var n int64
	for _, f := range files {
		n += f.size
	}
	return n, err
}

// collect lists the files to read.
func (o Options) collect(paths []string) ([]input, error) {
	var files []input
	for _, root := range paths {
		fi, err := os.Stat(root)
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		if !fi.IsDir() {
			in, ok, err := o.classify(root, fi, true)
			if err != nil {
				return nil, err
			}
			if ok {
				in.id = stripGz(filepath.Base(root))
				files = append(files, in)
			}
			continue
		}
		walkRoot := root
		if li, err := os.Lstat(root); err == nil && li.Mode()&fs.ModeSymlink != 0 {
			walkRoot += string(filepath.Separator) // make WalkDir follow the link
		}
		err = filepath.WalkDir(walkRoot, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != walkRoot && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			fi, err := os.Stat(path) // follows a link to a file
			if err != nil {
				return err
			}
			if !fi.Mode().IsRegular() {
				return nil
			}
			in, ok, err := o.classify(path, fi, false)
			if err != nil || !ok {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			in.id = stripGz(filepath.ToSlash(rel))
			files = append(files, in)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
	}
	return files, nil
}

func stripGz(name string) string {
	if strings.HasSuffix(strings.ToLower(name), ".gz") {
		return name[:len(name)-3]
	}
	return name
}

// classify returns the format of a file; ok is false for a file inside a
// directory that is not a document file. explicit: the file was named.
func (o Options) classify(path string, fi fs.FileInfo, explicit bool) (in input, ok bool, err error) {
	in = input{path: path, size: fi.Size(), format: o.Format}
	if o.Format != FormatAuto {
		return in, true, nil
	}
	switch strings.ToLower(filepath.Ext(stripGz(filepath.Base(path)))) {
	case ".jsonl", ".ndjson":
		in.format = FormatJSONL
	case ".json":
		in.format = FormatJSONL
		if !explicit {
			ok, err := sniff(path, sniffJSONL)
			if err != nil || !ok {
				return in, false, err
			}
		}
	case ".trec":
		in.format = FormatTREC
	case ".txt":
		in.format = FormatTxt
	case ".sgml", ".xml":
		in.format = FormatTREC
		ok, err := sniff(path, sniffTREC)
		if err != nil {
			return in, false, err
		}
		if !ok {
			if explicit {
				return in, false, fmt.Errorf("source: %s: no <DOC> tag in the first 64 KiB, not a TREC file (set Options.Format to force a format)", path)
			}
			return in, false, nil
		}
	default:
		if explicit {
			return in, false, fmt.Errorf("source: %s: cannot detect the format from the file name (.jsonl, .json, .ndjson, .trec, .sgml, .xml, .txt, optionally .gz); set Options.Format", path)
		}
		return in, false, nil
	}
	return in, true, nil
}

// sniff opens path (decompressing it if needed) and applies test to its
// start.
func sniff(path string, test func(io.Reader) bool) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	r, closer, err := decompress(bufio.NewReaderSize(f, 64<<10), path)
	if err != nil {
		return false, nil // not readable as declared: not a document file
	}
	if closer != nil {
		defer closer.Close()
	}
	return test(r), nil
}

var gzipMagic = []byte{0x1f, 0x8b}

// decompress returns a reader of the decompressed contents of br: gzip
// when the name ends in ".gz" or the contents start with the gzip magic
// number.
func decompress(br *bufio.Reader, name string) (io.Reader, io.Closer, error) {
	magic, _ := br.Peek(2)
	if !strings.HasSuffix(strings.ToLower(name), ".gz") && !bytes.Equal(magic, gzipMagic) {
		return br, nil, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		if !errors.Is(err, gzip.ErrHeader) {
			err = fmt.Errorf("gzip: %w", err)
		}
		return nil, nil, err
	}
	return &gzipReader{zr}, zr, nil
}

// gzipReader marks the errors of a gzip stream (a bad CRC or length, corrupt
// deflate data, an unexpected end) as errors of the file: ErrCorruptFile.
type gzipReader struct{ zr *gzip.Reader }

func (g *gzipReader) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && err != io.EOF {
		err = corruptError(err)
	}
	return n, err
}

// corruptError wraps an error of a gzip stream in ErrCorruptFile.
func corruptError(err error) error {
	what := "corrupt"
	if errors.Is(err, io.ErrUnexpectedEOF) {
		what = "truncated"
	}
	return fmt.Errorf("%w: %s stream (%w)", ErrCorruptFile, what, err)
}

// verifyGzip decompresses the file at path once, checking the CRC and
// length of every gzip member; it returns nil for an intact stream.
func verifyGzip(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, bufSize))
	if err != nil {
		return err
	}
	defer zr.Close()
	_, err = io.Copy(io.Discard, zr)
	return err
}

// countingReader counts the bytes read from the file.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Files returns the paths of the files the Reader reads, in order.
func (r *Reader) Files() []string {
	out := make([]string, len(r.files))
	for i, f := range r.files {
		out[i] = f.path
	}
	return out
}

// TotalSize returns the total size on disk of the files (see BytesRead).
func (r *Reader) TotalSize() int64 { return r.total }

// BytesRead returns the number of bytes read so far from the files on disk
// (compressed bytes for compressed files), at most TotalSize, for progress
// reporting. It runs slightly ahead of the documents returned, by the
// read buffer.
func (r *Reader) BytesRead() int64 { return r.read.Load() }

// Skipped returns the number of errors skipped so far (with Mode Skip or
// an OnError that returned nil): each is a malformed document or the
// unreadable rest of a file.
func (r *Reader) Skipped() int64 { return r.skipped.Load() }

// maxSkipErrors bounds the errors kept for SkipErrors.
const maxSkipErrors = 100

// SkipErrors returns the first 100 skipped errors, for a report.
func (r *Reader) SkipErrors() []error { return append([]error(nil), r.skipErrs...) }

var errClosed = errors.New("source: reader closed")

// Next returns the next document, or io.EOF after the last one. After an
// error that stops the reader (see Options), every later call returns the
// same error.
func (r *Reader) Next() (*Doc, error) {
	for r.err == nil {
		if r.cur == nil {
			if r.fi == len(r.files) {
				r.err = io.EOF
				break
			}
			if err := r.openNext(); err != nil {
				if err := r.handle(err); err != nil {
					return nil, err
				}
			}
			continue
		}
		doc, err := r.cur.next()
		if err == nil {
			if err = r.checkID(doc); err == nil {
				return doc, nil
			}
		}
		if err == io.EOF {
			r.closeCur()
			continue
		}
		var de *Error
		if !errors.As(err, &de) {
			// The rest of the file cannot be read.
			err = &Error{File: r.curFile, Line: r.cur.line(), Err: err}
			r.closeCur()
		}
		if err := r.handle(err); err != nil {
			return nil, err
		}
	}
	return nil, r.err
}

// checkID returns an *Error for an id that a run could not hold, or (with
// UniqueIDs) that an earlier document has, and records the id otherwise.
func (r *Reader) checkID(d *Doc) error {
	if err := extid.Check(d.ID); err != nil {
		return &Error{File: d.File, Line: d.Line, Err: fmt.Errorf("%w %q: %v", ErrBadID, d.ID, err)}
	}
	if !r.opts.UniqueIDs {
		return nil
	}
	if r.seen == nil {
		r.seen = map[string]docPos{}
	}
	if p, ok := r.seen[d.ID]; ok {
		return &Error{File: d.File, Line: d.Line, Err: fmt.Errorf("%w %q: first at %s:%d", ErrDuplicateID, d.ID, r.files[p.file].path, p.line)}
	}
	r.seen[d.ID] = docPos{file: int32(r.fi - 1), line: int32(min(d.Line, math.MaxInt32))}
	return nil
}

// handle applies the error policy: it returns nil to go on, or the error
// that stops the reader.
func (r *Reader) handle(err error) error {
	stop := err
	if r.opts.OnError != nil {
		stop = r.opts.OnError(err)
	} else if r.opts.Mode == Skip {
		stop = nil
	}
	if stop != nil {
		r.err = stop
		r.closeCur()
		return stop
	}
	r.skipped.Add(1)
	if len(r.skipErrs) < maxSkipErrors {
		r.skipErrs = append(r.skipErrs, err)
	}
	return nil
}

// openNext opens the next file and sets r.cur.
func (r *Reader) openNext() error {
	in := r.files[r.fi]
	r.fi++
	f, err := os.Open(in.path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &Error{File: in.path, Err: err}
	}
	br := bufio.NewReaderSize(&countingReader{f, &r.read}, bufSize)
	src, zc, err := decompress(br, in.path)
	if err != nil {
		f.Close()
		return &Error{File: in.path, Err: err}
	}
	if zc != nil && (r.opts.Mode == Skip || r.opts.OnError != nil) {
		// Errors may be skipped: check the whole stream before returning
		// any of its text (see "Damaged compressed files").
		if err := verifyGzip(in.path); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			f.Close()
			return &Error{File: in.path, Err: fmt.Errorf("%w (%v)", ErrCorruptFile, err)}
		}
	}
	r.closers = append(r.closers[:0], f)
	if zc != nil {
		r.closers = append(r.closers, zc)
	}
	r.curFile = in.path
	max := r.opts.MaxRecordSize
	switch in.format {
	case FormatJSONL:
		r.cur = &jsonlParser{lr: newLineReader(src, max), file: in.path, title: r.opts.Title, first: true}
	case FormatTREC:
		r.cur = &trecParser{lr: newLineReader(src, max), file: in.path, max: max}
	case FormatTxt:
		r.cur = &txtParser{r: src, file: in.path, id: in.id, max: max}
	}
	return nil
}

func (r *Reader) closeCur() {
	for _, c := range r.closers {
		c.Close()
	}
	r.closers = r.closers[:0]
	r.cur = nil
}

// Close releases the open file. Next returns an error after Close.
func (r *Reader) Close() error {
	r.closeCur()
	if r.err == nil || r.err == io.EOF {
		r.err = errClosed
	}
	return nil
}

// txtParser reads one text file as one document.
type txtParser struct {
	r    io.Reader
	file string
	id   string
	max  int
	done bool
}

func (p *txtParser) line() int { return 0 }

func (p *txtParser) next() (*Doc, error) {
	if p.done {
		return nil, io.EOF
	}
	p.done = true
	text, err := io.ReadAll(io.LimitReader(p.r, int64(p.max)+1))
	if err != nil {
		return nil, err
	}
	if len(text) > p.max {
		return nil, &Error{File: p.file, Err: fmt.Errorf("%w: file longer than %d bytes", ErrTooLarge, p.max)}
	}
	text = bytes.TrimPrefix(text, utf8BOM)
	return &Doc{ID: p.id, Text: text, File: p.file, Line: 1}, nil
}
