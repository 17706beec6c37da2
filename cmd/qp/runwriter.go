package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/qpengine/qp"
	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/eval"
	"github.com/qpengine/qp/index"
	"github.com/qpengine/qp/internal/pages"
	"github.com/qpengine/qp/topk"
)

// runWriter writes the responses of a batch as a TREC run. A chunk's lines
// are formatted on all cores into per-part buffers (kept between chunks)
// and written in query order, so that a fast processor does not wait on one
// goroutine's formatting.
type runWriter struct {
	w   io.Writer
	x   *index.Index
	ids *index.IDSlots // x's ids, checked once (useSlots); nil: ExternalID, checked per answer
	tag string
	// wordLines (default; QP_QUERY_TUNE=oldlines clears it) appends the
	// lines from the slots in 8-byte words (appendSlotLines) instead of
	// eval.AppendRunLine's appends.
	wordLines bool
	parts     [][]byte
	ents      [][]eval.RunEntry // each part's scratch (format)
	pre       *preRun           // lines formatted as the stream answered (answered)
	// timed (qp query --stats): answered times each piece's formatting,
	// and writePre sums the times of the pieces it writes into fmtTime
	// (read after the stream).
	timed   bool
	fmtTime time.Duration
}

func newRunWriter(w io.Writer, x *index.Index, tag string) *runWriter {
	n := runtime.GOMAXPROCS(0)
	return &runWriter{w: w, x: x, tag: tag, parts: make([][]byte, n), ents: make([][]eval.RunEntry, n), wordLines: true}
}

// useSlots formats from x's ids in fixed-width slots (index.IDSlots, checked
// once as it builds them) where they fit: one cache line a docid instead of
// ExternalID's offsets and bytes, and no docid's bytes read a second time
// by a check (docs/BENCHMARKS.md, cliq5). A damaged id is an error here,
// before any query runs.
func (rw *runWriter) useSlots() error {
	ids, err := rw.x.IDSlots()
	if err != nil {
		return fmt.Errorf("the run's document ids: %w", err)
	}
	rw.ids = ids
	return nil
}

// setProcs formats on at most procs goroutines (procs <= 0: all cores).
func (rw *runWriter) setProcs(procs int) {
	n := runtime.GOMAXPROCS(0)
	if procs > 0 {
		n = procs
	}
	rw.parts, rw.ents = make([][]byte, n), make([][]eval.RunEntry, n)
}

// minPart is the fewest queries formatted by one goroutine.
const minPart = 256

// writeChunk writes the chunk of the stream at lo: the lines its workers
// formatted (answered), else formatted now (write).
func (rw *runWriter) writeChunk(lo int, qs []engine.Query, out []engine.Response) error {
	if rw.preReady(lo, len(out)) {
		return rw.writePre(lo, len(out))
	}
	return rw.write(qs[lo:lo+len(out)], out)
}

// write formats out (answering qs, in order) and writes it. Failed queries
// write nothing.
func (rw *runWriter) write(qs []engine.Query, out []engine.Response) error {
	np := min(len(rw.parts), max(1, len(out)/minPart))
	errs := make([]error, np)
	var wg sync.WaitGroup
	for p := range np {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := p*len(out)/np, (p+1)*len(out)/np
			rw.parts[p], rw.ents[p], errs[p] = rw.format(rw.reserve(rw.parts[p][:0], qs[lo:hi], out[lo:hi]), rw.ents[p], qs[lo:hi], out[lo:hi])
		}()
	}
	wg.Wait()
	for p := range np {
		if errs[p] != nil {
			return errs[p]
		}
		if _, err := rw.w.Write(rw.parts[p]); err != nil {
			return fmt.Errorf("writing the run: %w", err)
		}
	}
	return nil
}

// lineBytes is the bytes of a run line besides its qid and tag, for
// reserving a part's buffer: " Q0 ", a docid of up to 24 bytes, the rank
// and the score with their spaces, the newline.
const lineBytes = 4 + 24 + 1 + 5 + 1 + 12 + 1 + 1

// reserve returns b (empty) with room for the run lines of out (docids of
// up to 24 bytes), so that a part's buffer is not doubled from empty in
// the first chunk (each doubling copies the lines written so far) and
// rarely replaced in later ones.
func (rw *runWriter) reserve(b []byte, qs []engine.Query, out []engine.Response) []byte {
	need := index.MaxIDSlot + maxWordLine // appendSlotLines' room after the last line
	for i := range out {
		need += len(out[i].Results) * (len(qs[i].ID) + len(rw.tag) + lineBytes)
	}
	if cap(b) < need {
		b = make([]byte, 0, need+need/4) // headroom: later chunks vary
	}
	return b
}

// format appends the run lines of out (answering qs) to b; entries is the
// caller's scratch, returned grown (kept between calls, so that formatting
// allocates nothing once it holds the calls' results: the stream's workers
// call this per grain of 16 queries, and a scratch grown from nil each call
// cost 5 allocations a grain).
//
// With the ids in slots (useSlots) every docid of the call is looked up in
// a pass of its own (one load of one line each: the misses overlap), then
// appended unchecked (formatSlots: the slots were checked when built).
// Else the docids of every query are looked up first (the offsets' misses
// overlap), their first and last bytes read in a pass of their own (the
// bytes' misses overlap), then appended query by query (eval.AppendRun,
// whose check reads cached bytes now): the id table is scattered over the
// index and evicted by the searches in between, and short passes over all
// of a call's results overlap more misses than one query's at a time
// (cliq4: 0.66-1.06 of the per-query time, median about 0.85, in paired
// grain-by-grain runs on GCIDE AND+OR answers with the caches evicted;
// TestRunWriterFormatPaired, docs/BENCHMARKS.md).
func (rw *runWriter) format(b []byte, entries []eval.RunEntry, qs []engine.Query, out []engine.Response) ([]byte, []eval.RunEntry, error) {
	if rw.ids != nil {
		return rw.formatSlots(b, entries, qs, out)
	}
	entries = entries[:0]
	for i := range out {
		if out[i].Err != nil {
			continue
		}
		for j, res := range out[i].Results {
			entries = append(entries, eval.RunEntry{DocID: rw.x.ExternalID(res.Doc), Rank: j + 1, Score: float64(res.Score)})
		}
	}
	// Touch every docid's first and last byte in a pass of their own (few
	// instructions a docid: many loads in flight); AppendRun then checks
	// them whole, cached.
	var touch byte
	for k := range entries {
		if id := entries[k].DocID; len(id) > 0 {
			touch += id[0] + id[len(id)-1]
		}
	}
	runtime.KeepAlive(touch)
	off := 0
	for i := range out {
		r := &out[i]
		if r.Err != nil {
			continue
		}
		n := len(r.Results)
		var err error
		if b, err = eval.AppendRun(b, qs[i].ID, entries[off:off+n], rw.tag); err != nil {
			return b, entries, err
		}
		off += n
	}
	return b, entries, nil
}

// formatSlots is format from rw.ids: every docid's slot loaded in a pass
// of its own (its length byte: the misses overlap), then the lines
// appended straight from the results (eval.AppendRunLine: no entries
// scratch, which the stream keeps per piece, ~5 KB a grain of cold memory
// written and read; each query's qid checked as AppendRun checks it).
func (rw *runWriter) formatSlots(b []byte, entries []eval.RunEntry, qs []engine.Query, out []engine.Response) ([]byte, []eval.RunEntry, error) {
	touch := 0
	for i := range out {
		if out[i].Err == nil {
			for _, r := range out[i].Results {
				touch += len(rw.ids.ID(r.Doc))
			}
		}
	}
	runtime.KeepAlive(touch)
	for i := range out {
		if out[i].Err != nil {
			continue
		}
		qid := qs[i].ID
		if err := eval.CheckRunColumns(qid, rw.tag); err != nil {
			return b, entries, err
		}
		if rw.wordLines {
			b = rw.appendSlotLines(b, qid, out[i].Results)
			continue
		}
		for j, r := range out[i].Results {
			b = eval.AppendRunLine(b, qid, rw.ids.ID(r.Doc), j+1, float64(r.Score), rw.tag)
		}
	}
	return b, entries, nil
}

// maxWordLine bounds what appendSlotLines writes for one line beyond its
// slot: the prefix's two words, the rank (20 digits) and the score
// (AppendScore: at most 13 bytes, strconv's 'g' with 6 digits) with their
// spaces, the tail's word, and a word of slack.
const maxWordLine = 16 + 1 + 20 + 1 + 24 + 8 + 8

// appendSlotLines appends the run lines of one query's results to b, as
// eval.AppendRunLine does line by line (qid and tag checked by the caller:
// CheckRunColumns), from the id slots: the line's constant prefix ("qid
// Q0 ", up to 16 bytes), the docid's slot, the score's bytes
// (eval.ScoreBytes) and the tail (" tag\n", up to 8 bytes) are each stored
// in 8-byte words into b's spare room, and only their bytes kept (the next
// field overwrites the rest), instead of an append (a memmove call and its
// length checks) per field. A qid or tag too long for its words takes
// AppendRunLine. The bytes are AppendRunLine's (TestAppendSlotLines,
// TestRunWriterParts, TestRunWriterPre; cliq6, docs/BENCHMARKS.md).
func (rw *runWriter) appendSlotLines(b []byte, qid string, res []topk.Result) []byte {
	pre := len(qid) + len(" Q0 ")
	tl := len(rw.tag) + 2 // " tag\n"
	if pre > 16 || tl > 8 {
		for j, r := range res {
			b = eval.AppendRunLine(b, qid, rw.ids.ID(r.Doc), j+1, float64(r.Score), rw.tag)
		}
		return b
	}
	var pw [16]byte
	copy(pw[copy(pw[:], qid):], " Q0 ")
	p0, p1 := binary.LittleEndian.Uint64(pw[:]), binary.LittleEndian.Uint64(pw[8:])
	var tw [8]byte
	tw[0] = ' '
	tw[1+copy(tw[1:], rw.tag)] = '\n'
	t0 := binary.LittleEndian.Uint64(tw[:])
	room := rw.ids.Width() + maxWordLine
	var sw [16]byte // the score's bytes (eval.ScoreBytes)
	for j, r := range res {
		if cap(b)-len(b) < room { // rare: reserve leaves this room after a part's lines
			b = slices.Grow(b, room)
		}
		n := len(b)
		d := b[n : n+room] // spare room: one bounds check for the words below
		binary.LittleEndian.PutUint64(d, p0)
		binary.LittleEndian.PutUint64(d[8:], p1)
		slot := rw.ids.Slot(r.Doc)
		for k := 0; k+8 <= len(slot); k += 8 {
			binary.LittleEndian.PutUint64(d[pre+k:], binary.LittleEndian.Uint64(slot[k:]))
		}
		k := pre + int(slot[len(slot)-1])
		d[k] = ' '
		k++
		if j < 9 {
			d[k] = byte('1' + j)
			b = b[:n+k+1]
		} else {
			b = strconv.AppendInt(b[:n+k], int64(j+1), 10)
		}
		n = len(b)
		d = b[n : n+1+24+8] // within room
		d[0] = ' '
		if sn := eval.ScoreBytes(&sw, float64(r.Score)); sn > 0 {
			binary.LittleEndian.PutUint64(d[1:], binary.LittleEndian.Uint64(sw[:]))
			binary.LittleEndian.PutUint64(d[9:], binary.LittleEndian.Uint64(sw[8:]))
			b = b[:n+1+sn]
		} else {
			b = eval.AppendScore(b[:n+1], float64(r.Score))
		}
		n = len(b)
		binary.LittleEndian.PutUint64(b[n:n+8], t0) // within room: the score is at most 24 bytes
		b = b[:n+tl]
	}
	return b
}

// preRun holds the run lines that the continuous CPU stream's workers
// format as they answer (qp.StreamOptions.Answered, runWriter.answered), so
// that the emit only writes them: the formatting runs on the core that holds
// the answers in its caches, with no goroutines started per chunk that would
// wait for a busy core (docs/BENCHMARKS.md, "`qp query`'s CPU batch path").
type preRun struct {
	chunk int
	// slots[c % len(slots)] holds chunk c's pieces, each at its offset in
	// the chunk: the stream answers or emits at most len(slots) chunks at
	// a time, and a chunk's pieces start at the same offsets every time.
	slots [qp.StreamChunksAhead + 1][]prePiece
}

// prePiece is the run of one piece of a chunk, formatted by its worker.
type prePiece struct {
	chunk int // the chunk's index + 1 whose lines b holds (0: none yet)
	end   int // the offset in the chunk after the piece
	b     []byte
	ents  []eval.RunEntry // format's scratch
	took  time.Duration   // formatting it took (runWriter.timed)
	err   error
}

// answered returns the StreamOptions.Answered hook that formats each piece
// of the stream of qs (in chunks of chunk queries) where it was answered;
// write then writes those pieces.
func (rw *runWriter) answered(qs []engine.Query, chunk int) func(lo int, out []engine.Response) {
	pr := &preRun{chunk: chunk}
	for s := range pr.slots {
		pr.slots[s] = pages.Zeroed[prePiece](min(chunk, len(qs))) // written first: no copy-on-write faults in the stream
	}
	rw.pre = pr
	return func(lo int, out []engine.Response) {
		c, off := lo/chunk, lo%chunk
		p := &pr.slots[c%len(pr.slots)][off]
		q := qs[lo : lo+len(out)]
		var t time.Time
		if rw.timed {
			t = time.Now()
		}
		p.b, p.ents, p.err = rw.format(rw.reserve(p.b[:0], q, out), p.ents, q, out)
		if rw.timed {
			p.took = time.Since(t)
		}
		p.chunk, p.end = c+1, off+len(out)
	}
}

// preReady reports whether every piece of the chunk at lo (n queries) was
// formatted where it was answered (a processor that does not call
// Answered formats none).
func (rw *runWriter) preReady(lo, n int) bool {
	pr := rw.pre
	if pr == nil || lo%pr.chunk != 0 {
		return false
	}
	c := lo / pr.chunk
	ps := pr.slots[c%len(pr.slots)]
	for off := 0; off < n; off = ps[off].end {
		if ps[off].chunk != c+1 || ps[off].end <= off {
			return false
		}
	}
	return true
}

// writePre writes the chunk at lo (n queries) from its formatted pieces
// (preReady).
func (rw *runWriter) writePre(lo, n int) error {
	ps := rw.pre.slots[lo/rw.pre.chunk%len(rw.pre.slots)]
	for off := 0; off < n; off = ps[off].end {
		if ps[off].err != nil {
			return ps[off].err
		}
		rw.fmtTime += ps[off].took
		if _, err := rw.w.Write(ps[off].b); err != nil {
			return fmt.Errorf("writing the run: %w", err)
		}
	}
	return nil
}
