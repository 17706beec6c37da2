package index

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"time"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/score"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriterOptions configure an index file.
type WriterOptions struct {
	BlockSize int            // postings per block; 0 = DefaultBlockSize
	DocCodec  compress.Codec // codec of docID blocks; nil = bp128
	FreqCodec compress.Codec // codec of frequency blocks; nil = DocCodec
	Params    score.Params   // BM25 parameters of the stored block maxima; zero = score.Default
	DocLens   []uint32       // length of every document, N = len(DocLens)
	DocIDs    []string       // external ids (len N), or nil for "0".."N-1"
	Stored    [][]byte       // stored fields (JSON objects), or nil
	Meta      Meta           // Stem, Stopwords, DocIDOrder, Source are copied from here
	// Bitmaps says when a list's docIDs are stored as a roaring bitmap
	// (format.go); the zero value is BitmapsOff.
	Bitmaps BitmapMode
}

// Writer writes an index file. Lists are added in ascending term order and
// streamed to disk; the file appears under its final name only when Close
// succeeds.
type Writer struct {
	path, tmp string
	f         *os.File
	bw        *bufio.Writer
	off       uint64 // bytes written to the file so far
	opt       WriterOptions
	enc       ListEncoder
	toc       []tocEntry
	sec       tocEntry // section being written
	crc       hash.Hash32
	termBytes []byte
	termOffs  []uint64
	recs      []byte
	lastTerm  string
	meta      Meta
	buf       []byte
	err       error
}

type tocEntry struct {
	kind        uint32
	offset, len uint64
	crc         uint32
}

// NewWriter creates path+".tmp" and starts the POSTINGS section.
func NewWriter(path string, opt WriterOptions) (*Writer, error) {
	if opt.BlockSize == 0 {
		opt.BlockSize = DefaultBlockSize
	}
	if opt.BlockSize < 1 || opt.BlockSize > MaxBlockSize {
		return nil, fmt.Errorf("index: block size %d out of range 1..%d", opt.BlockSize, MaxBlockSize)
	}
	if opt.DocCodec == nil {
		opt.DocCodec, _ = compress.ByName("bp128")
		if opt.DocCodec == nil {
			panic("BUG: bp128 codec not registered")
		}
	}
	if opt.FreqCodec == nil {
		opt.FreqCodec = opt.DocCodec
	}
	if opt.Params == (score.Params{}) {
		opt.Params = score.Default
	}
	if err := opt.Params.Validate(); err != nil {
		return nil, err
	}
	if opt.Bitmaps > BitmapsAlways {
		return nil, fmt.Errorf("index: %v", opt.Bitmaps)
	}
	if opt.DocIDs != nil && len(opt.DocIDs) != len(opt.DocLens) {
		return nil, fmt.Errorf("index: %d external ids for %d documents", len(opt.DocIDs), len(opt.DocLens))
	}
	if uint64(len(opt.DocLens)) >= uint64(Terminated) {
		return nil, fmt.Errorf("index: %d documents exceed the docID space", len(opt.DocLens))
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	w := &Writer{path: path, tmp: tmp, f: f, bw: bufio.NewWriterSize(f, 1<<20), opt: opt, crc: crc32.New(castagnoli)}
	w.enc = *NewListEncoder(opt.BlockSize, opt.DocCodec, opt.FreqCodec, opt.Params, opt.DocLens)
	w.enc.SetBitmaps(opt.Bitmaps)
	var hdr [headerSize]byte
	copy(hdr[:], magic)
	binary.LittleEndian.PutUint32(hdr[8:], formatVersion)
	w.raw(hdr[:])
	w.meta = opt.Meta
	if w.meta.DocIDOrder == "" {
		w.meta.DocIDOrder = "input"
	}
	w.meta.Version = formatVersion
	w.meta.Docs = uint64(len(opt.DocLens))
	w.meta.AvgDL = w.enc.avgdl
	w.meta.BlockSize = opt.BlockSize
	w.meta.DocCodec = opt.DocCodec.Name()
	w.meta.FreqCodec = opt.FreqCodec.Name()
	w.meta.K1, w.meta.B = opt.Params.K1, opt.Params.B
	w.meta.Bitmaps = opt.Bitmaps.String()
	for _, l := range opt.DocLens {
		w.meta.Tokens += uint64(l)
	}
	w.termOffs = append(w.termOffs, 0)
	w.begin(secPostings)
	return w, nil
}

// raw writes bytes outside any checksum (header, trailer).
func (w *Writer) raw(p []byte) {
	if w.err != nil {
		return
	}
	_, w.err = w.bw.Write(p)
	w.off += uint64(len(p))
}

func (w *Writer) begin(kind uint32) {
	w.sec = tocEntry{kind: kind, offset: w.off}
	w.crc.Reset()
}

func (w *Writer) write(p []byte) {
	if w.err != nil {
		return
	}
	w.crc.Write(p)
	w.raw(p)
}

func (w *Writer) end() {
	w.sec.len = w.off - w.sec.offset
	w.sec.crc = w.crc.Sum32()
	w.toc = append(w.toc, w.sec)
}

// AddList encodes and appends the posting list of term. Terms must come in
// strictly ascending byte order; docs must be strictly increasing and below
// N; every frequency must be >= 1.
func (w *Writer) AddList(term string, docs, freqs []uint32) error {
	if w.err != nil {
		return w.err
	}
	var err error
	w.buf, err = w.enc.Encode(w.buf[:0], docs, freqs)
	if err != nil {
		return fmt.Errorf("index: term %q: %w", term, err)
	}
	return w.AddEncoded(term, w.buf, w.enc.Rec)
}

// AddEncoded appends a list produced by a ListEncoder (which may run in
// another goroutine); rec is that encoder's Rec after Encode.
func (w *Writer) AddEncoded(term string, list []byte, rec TermRecord) error {
	if w.err != nil {
		return w.err
	}
	if len(w.termOffs) > 1 && term <= w.lastTerm {
		panic(fmt.Sprintf("BUG: index terms out of order: %q after %q", term, w.lastTerm))
	}
	if rec.DF == 0 {
		return nil // empty lists are not stored
	}
	w.lastTerm = term
	rec.Offset = w.off - w.sec.offset
	w.write(list)
	w.termBytes = append(w.termBytes, term...)
	w.termOffs = append(w.termOffs, uint64(len(w.termBytes)))
	w.recs = rec.appendTo(w.recs)
	w.meta.Terms++
	w.meta.Postings += uint64(rec.DF)
	if rec.Bitmap() {
		w.meta.BitmapLists++
	}
	return w.err
}

// Close writes the remaining sections, the TOC and the trailer, syncs, and
// renames the file into place. After an error the partial file is removed.
func (w *Writer) Close() error {
	if w.f == nil {
		return fmt.Errorf("index: writer already closed")
	}
	w.end() // POSTINGS
	w.writeTerms()
	w.writeU32s(secDocLens, w.opt.DocLens)
	w.writeStrings(secDocIDs, len(w.opt.DocLens), func(i int) []byte {
		if w.opt.DocIDs == nil {
			return []byte(fmt.Sprint(i))
		}
		return []byte(w.opt.DocIDs[i])
	})
	if w.opt.Stored != nil {
		w.writeStrings(secStored, len(w.opt.Stored), func(i int) []byte { return w.opt.Stored[i] })
	}
	if w.meta.Created == "" {
		w.meta.Created = time.Now().UTC().Format(time.RFC3339)
	}
	mj, err := json.MarshalIndent(w.meta, "", "  ")
	if err != nil {
		panic("BUG: meta does not marshal: " + err.Error())
	}
	w.begin(secMeta)
	w.write(mj)
	w.end()
	// TOC and trailer.
	tocOff := w.off
	toc := binary.LittleEndian.AppendUint32(nil, uint32(len(w.toc)))
	for _, e := range w.toc {
		toc = binary.LittleEndian.AppendUint32(toc, e.kind)
		toc = binary.LittleEndian.AppendUint64(toc, e.offset)
		toc = binary.LittleEndian.AppendUint64(toc, e.len)
		toc = binary.LittleEndian.AppendUint32(toc, e.crc)
	}
	w.raw(toc)
	tr := binary.LittleEndian.AppendUint64(nil, tocOff)
	tr = binary.LittleEndian.AppendUint64(tr, uint64(len(toc)))
	tr = binary.LittleEndian.AppendUint32(tr, crc32.Checksum(toc, castagnoli))
	tr = append(tr, trailerMagic...)
	w.raw(tr)
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	if w.err == nil {
		w.err = w.f.Sync()
	}
	if cerr := w.f.Close(); w.err == nil {
		w.err = cerr
	}
	w.f = nil
	if w.err == nil {
		w.err = os.Rename(w.tmp, w.path)
	}
	if w.err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("index: writing %s: %w", w.path, w.err)
	}
	return nil
}

// Abort removes the partial file.
func (w *Writer) Abort() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
		os.Remove(w.tmp)
	}
}

func (w *Writer) writeTerms() {
	w.begin(secTerms)
	n := len(w.termOffs) - 1
	w.write(binary.LittleEndian.AppendUint32(nil, uint32(n)))
	var b []byte
	for _, o := range w.termOffs {
		b = binary.LittleEndian.AppendUint64(b, o)
		if len(b) >= 1<<16 {
			w.write(b)
			b = b[:0]
		}
	}
	w.write(b)
	w.write(w.termBytes)
	pad := (8 - (4+8*(n+1)+len(w.termBytes))%8) % 8
	w.write(make([]byte, pad))
	w.write(w.recs)
	w.end()
}

func (w *Writer) writeU32s(kind uint32, vals []uint32) {
	w.begin(kind)
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, v)
		if len(b) >= 1<<16 {
			w.write(b)
			b = b[:0]
		}
	}
	w.write(b)
	w.end()
}

func (w *Writer) writeStrings(kind uint32, n int, get func(int) []byte) {
	w.begin(kind)
	var b []byte
	var total uint64
	b = binary.LittleEndian.AppendUint64(b, 0)
	for i := 0; i < n; i++ {
		total += uint64(len(get(i)))
		b = binary.LittleEndian.AppendUint64(b, total)
		if len(b) >= 1<<16 {
			w.write(b)
			b = b[:0]
		}
	}
	w.write(b)
	for i := 0; i < n; i++ {
		w.write(get(i))
	}
	w.end()
}

// TermRecord is the dictionary entry of one term.
type TermRecord struct {
	Offset    uint64 // of the list in POSTINGS
	CF        uint64 // collection frequency (sum of tf)
	DF        uint32 // document frequency
	DocCodec  compress.ID
	FreqCodec compress.ID
	MaxScore  float32 // max BM25 term score in the list (stored parameters)
	// Flags: flagBitmap when the docIDs are stored as a roaring bitmap of
	// BitmapBytes bytes (format.go).
	Flags       uint8
	BitmapBytes uint32
}

// Bitmap reports whether the list's docIDs are stored as a roaring bitmap.
func (r TermRecord) Bitmap() bool { return r.Flags&flagBitmap != 0 }

func (r TermRecord) appendTo(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, r.Offset)
	b = binary.LittleEndian.AppendUint64(b, r.CF)
	b = binary.LittleEndian.AppendUint32(b, r.DF)
	b = append(b, byte(r.DocCodec), byte(r.FreqCodec), r.Flags, 0)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.MaxScore))
	return binary.LittleEndian.AppendUint32(b, r.BitmapBytes)
}

// recDF is the offset of DF in a term record (readTermRecord).
const recDF = 16

func readTermRecord(b []byte) TermRecord {
	return TermRecord{
		Offset:    binary.LittleEndian.Uint64(b),
		CF:        binary.LittleEndian.Uint64(b[8:]),
		DF:        binary.LittleEndian.Uint32(b[recDF:]),
		DocCodec:  compress.ID(b[20]),
		FreqCodec: compress.ID(b[21]),
		MaxScore:  math.Float32frombits(binary.LittleEndian.Uint32(b[24:])),
		Flags:     b[22],
		// b[23] is reserved; a nonzero value is harmless and ignored.
		BitmapBytes: binary.LittleEndian.Uint32(b[28:]),
	}
}

// ListEncoder turns one posting list into its on-disk bytes (skip table, doc
// blocks, frequency blocks) and computes its dictionary record. It reuses its
// scratch buffers; use one per goroutine.
type ListEncoder struct {
	bs         int
	dc, fc     compress.Codec
	params     score.Params
	norms      []float32
	k1p1       float32
	n          uint64
	avgdl      float64
	vals       []uint32
	docs, frqs []byte
	skips      []byte
	bmp        bitmapEncoder
	Rec        TermRecord // the record of the last Encode
}

// SetBitmaps sets when Encode stores the docIDs as a roaring bitmap
// (default BitmapsOff).
func (e *ListEncoder) SetBitmaps(m BitmapMode) { e.bmp.mode = m }

// NewListEncoder prepares an encoder for a collection with the given
// document lengths (needed for the block-max BM25 bounds).
func NewListEncoder(blockSize int, dc, fc compress.Codec, p score.Params, lens []uint32) *ListEncoder {
	avg := score.AvgDL(lens)
	return &ListEncoder{bs: blockSize, dc: dc, fc: fc, params: p, norms: p.Norms(nil, lens, avg),
		k1p1: p.K1p1(), n: uint64(len(lens)), avgdl: avg, vals: make([]uint32, blockSize)}
}

// Encode appends the list's bytes to dst.
func (e *ListEncoder) Encode(dst []byte, docs, freqs []uint32) ([]byte, error) {
	if len(docs) != len(freqs) {
		return dst, fmt.Errorf("%d docs but %d frequencies", len(docs), len(freqs))
	}
	df := len(docs)
	e.Rec = TermRecord{DF: uint32(df), DocCodec: e.dc.ID(), FreqCodec: e.fc.ID()}
	if df == 0 {
		return dst, nil
	}
	idf := score.IDF(e.n, uint64(df))
	e.docs, e.frqs, e.skips = e.docs[:0], e.frqs[:0], e.skips[:0]
	base := uint32(0)
	prev := int64(-1)
	for start := 0; start < df; start += e.bs {
		end := min(start+e.bs, df)
		v := e.vals[:end-start]
		var bmax float32
		var sum uint64
		for i := start; i < end; i++ {
			d, tf := docs[i], freqs[i]
			if int64(d) <= prev || uint64(d) >= e.n {
				return dst, fmt.Errorf("docID %d at posting %d not increasing or >= N=%d", d, i, e.n)
			}
			if tf == 0 {
				return dst, fmt.Errorf("zero frequency at posting %d", i)
			}
			prev = int64(d)
			e.Rec.CF += uint64(tf)
			if s := score.Term(idf, e.k1p1, tf, e.norms[d]); s > bmax {
				bmax = s
			}
			if e.dc.Kind() == compress.Sorted {
				v[i-start] = d - base
			} else if i == start {
				v[0] = d - base
			} else {
				v[i-start] = d - docs[i-1] - 1
			}
		}
		e.docs = AppendDocBlock(e.docs, e.dc, v)
		for i := start; i < end; i++ {
			if e.fc.Kind() == compress.Sorted {
				sum += uint64(freqs[i] - 1)
				if sum > math.MaxUint32 {
					return dst, fmt.Errorf("frequency sum overflows the %s codec in block at posting %d", e.fc.Name(), start)
				}
				v[i-start] = uint32(sum)
			} else {
				v[i-start] = freqs[i] - 1
			}
		}
		e.frqs = AppendFreqBlock(e.frqs, e.fc, v)
		if len(e.docs) > math.MaxUint32 || len(e.frqs) > math.MaxUint32 {
			return dst, fmt.Errorf("list larger than 4 GiB")
		}
		last := docs[end-1]
		e.skips = binary.LittleEndian.AppendUint32(e.skips, last)
		e.skips = binary.LittleEndian.AppendUint32(e.skips, uint32(len(e.docs)))
		e.skips = binary.LittleEndian.AppendUint32(e.skips, uint32(len(e.frqs)))
		e.skips = binary.LittleEndian.AppendUint32(e.skips, math.Float32bits(bmax))
		if bmax > e.Rec.MaxScore {
			e.Rec.MaxScore = bmax
		}
		base = last + 1
	}
	if bm := e.bmp.encode(docs, len(e.docs)); bm != nil {
		// The skip table keeps the docID blocks' ends (format.go).
		e.Rec.Flags |= flagBitmap
		e.Rec.BitmapBytes = uint32(len(bm))
		dst = append(dst, e.skips...)
		dst = append(dst, bm...)
		return append(dst, e.frqs...), nil
	}
	dst = append(dst, e.skips...)
	dst = append(dst, e.docs...)
	return append(dst, e.frqs...), nil
}

var _ io.Closer = (*Writer)(nil)

// Sizes returns the bytes of the docID area (blocks or bitmap) and of the
// frequency blocks of the last Encode.
func (e *ListEncoder) Sizes() (docBytes, freqBytes int) {
	if e.Rec.Bitmap() {
		return int(e.Rec.BitmapBytes), len(e.frqs)
	}
	return len(e.docs), len(e.frqs)
}
