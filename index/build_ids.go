package index

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// idPosting is one posting of a document pre-tokenized by term ids.
type idPosting struct{ id, doc, tf uint32 }

// idInverter inverts the documents pre-tokenized by term ids
// (Document.TermIDs) on all cores, by sort-based inversion (Witten, Moffat &
// Bell, Managing Gigabytes, 2nd ed., §5.2, "sort-based inversion"): there
// is no per-term structure while documents arrive.
//
//   - Shard s of W holds the ids ≡ s (mod W). The tokenizing workers bucket
//     each batch's postings by shard (idBuckets); the in-order stage hands
//     bucket s to shard s's goroutine, which appends it to a flat buffer, so
//     every shard sees its postings in docID order.
//   - Past its share of the memory budget a shard sorts its buffer by id
//     (a stable LSD radix sort: docID order is kept within an id) and writes
//     it as a run: the lists in id order (uvarint docID gaps and
//     frequencies), with an in-memory directory (id, offset, count).
//   - At the end each shard names its distinct ids (BuildOptions.TermName)
//     and sorts them by name. The term space is cut into name ranges of about
//     equal postings (idMerge); the ranges are merged — each list read from
//     the runs that hold it, through the directories — and encoded on all
//     cores, and written in name order.
//
// The index does not depend on W: every list is the same docIDs in the same
// order, and terms are written in name order.
type idInverter struct {
	shards   []*idShard
	wg       sync.WaitGroup
	failed   atomic.Bool
	postings atomic.Uint64
	finished bool  // the inputs are closed
	budget   int64 // BuildOptions.MemBudget: the postings buffers, then the mapped runs
	pages    *runPages
}

// idShard is one shard of an idInverter.
type idShard struct {
	dir, prefix string
	w           uint32 // shards
	in          chan []idPosting
	free        chan []idPosting // drained buckets, for the tokenizers to reuse
	limit       int              // postings in chunks before a spill
	chunks      [][]idPosting    // the postings since the last spill, in arrival order
	n           int              // postings in chunks
	spare       [][]idPosting    // emptied chunks
	a, b        []idPosting      // the radix sort's arrays
	runs        []*idRun
	err         error
	terms       []idTerm // after finish: distinct ids, by name
	postings    *atomic.Uint64
	pages       *runPages // after finish: bounds the mapped runs' resident pages
}

// idRun is one spilled run of a shard: lists in id order.
type idRun struct {
	f     *os.File
	data  []byte // the file, mapped (or read) after the last spill
	unmap func()
	ids   []uint32 // ascending
	offs  []uint64 // offs[i]..offs[i+1]: the bytes of ids[i]'s list
	ns    []uint32 // postings of ids[i]
}

// idTerm is a distinct term id of a shard, its name and its df.
type idTerm struct {
	name   string
	id, df uint32
}

// newIDInverter starts w shard goroutines spilling runs to dir, each past
// budget/w bytes of buffered postings.
func newIDInverter(dir string, w int, budget int64) *idInverter {
	v := &idInverter{budget: budget}
	// A shard's memory: its chunks and the radix sort's two arrays, 3 ×
	// limit × 12 bytes.
	limit := int(max(budget/int64(w)/36, 64))
	for s := range w {
		sh := &idShard{dir: dir, w: uint32(w), prefix: fmt.Sprintf("id%03d-", s), in: make(chan []idPosting, 64),
			free: make(chan []idPosting, 128), limit: limit, postings: &v.postings}
		v.shards = append(v.shards, sh)
		v.wg.Add(1)
		go func() {
			defer v.wg.Done()
			sh.loop(&v.failed)
		}()
	}
	return v
}

// idBuckets returns the postings of docs bucketed by shard (nil when no
// document of docs has term ids), reusing drained buckets.
func (v *idInverter) idBuckets(docs []tokDoc) [][]idPosting {
	var out [][]idPosting
	w := uint32(len(v.shards))
	for i := range docs {
		td := &docs[i]
		if td.ids == nil || td.err != nil {
			continue
		}
		if out == nil {
			out = make([][]idPosting, w)
			for s, sh := range v.shards {
				select {
				case b := <-sh.free:
					out[s] = b
				default:
				}
			}
		}
		doc := uint32(td.seq)
		for j, id := range td.ids {
			s := id % w
			out[s] = append(out[s], idPosting{id, doc, td.tfs[j]})
		}
	}
	return out
}

// send hands a batch's buckets (from idBuckets) to the shards, in document
// order. It returns an error if a shard has failed (its error is returned
// by finish).
func (v *idInverter) send(ctx context.Context, buckets [][]idPosting) error {
	for s, b := range buckets {
		if len(b) == 0 {
			continue
		}
		select {
		case v.shards[s].in <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if v.failed.Load() {
		return errors.New("index: a term-id shard failed")
	}
	return nil
}

// runs is the number of runs spilled so far (racy: for progress only
// after finish).
func (v *idInverter) runCount() int {
	n := 0
	for _, sh := range v.shards {
		n += len(sh.runs)
	}
	return n
}

// loop appends the buckets it receives and spills past its limit; when in
// closes it spills the rest.
func (sh *idShard) loop(failed *atomic.Bool) {
	for b := range sh.in {
		if sh.err == nil {
			sh.append(b)
			sh.postings.Add(uint64(len(b)))
			if sh.n >= sh.limit {
				if sh.err = sh.spill(); sh.err != nil {
					failed.Store(true)
				}
			}
		}
		select {
		case sh.free <- b[:0]:
		default:
		}
	}
	if sh.err == nil && sh.n > 0 {
		if sh.err = sh.spill(); sh.err != nil {
			failed.Store(true)
		}
	}
	sh.chunks, sh.spare, sh.a, sh.b = nil, nil, nil, nil
}

// idChunk is the number of postings of a chunk: the buffer grows by
// chunks, never copied, until the spill's radix sort reads them.
const idChunk = 1 << 14

// append copies b into the chunks.
func (sh *idShard) append(b []idPosting) {
	for len(b) > 0 {
		if len(sh.chunks) == 0 || len(sh.chunks[len(sh.chunks)-1]) == idChunk {
			var c []idPosting
			if k := len(sh.spare); k > 0 {
				c, sh.spare = sh.spare[k-1], sh.spare[:k-1]
			} else {
				c = make([]idPosting, 0, idChunk)
			}
			sh.chunks = append(sh.chunks, c)
		}
		last := &sh.chunks[len(sh.chunks)-1]
		k := min(len(b), idChunk-len(*last))
		*last = append(*last, b[:k]...)
		b = b[k:]
		sh.n += k
	}
}

// radixSortByID sorts the postings of chunks by id, stably, and returns
// the sorted array and the other (a and b are grown to n). An LSD radix
// sort on the shard key id/w (the shard's ids are ≡ s mod w): digits of
// at most 13 bits (a 64 KiB count table), as few passes as the largest key
// needs (two up to 2^26 keys: GOV2's 285M-id space on 16 shards); the first
// pass reads the chunks, the others go between a and b.
func radixSortByID(chunks [][]idPosting, n int, w uint32, a, b []idPosting) (sorted, other []idPosting) {
	if cap(a) < n {
		a = make([]idPosting, n)
	}
	if cap(b) < n {
		b = make([]idPosting, n)
	}
	a, b = a[:n], b[:n]
	var maxKey uint32
	for _, c := range chunks {
		for _, p := range c {
			maxKey = max(maxKey, p.id/w)
		}
	}
	nb := max(bits.Len32(maxKey), 1)
	passes := (nb + 12) / 13
	digit := uint((nb + passes - 1) / passes)
	mask := uint32(1)<<digit - 1
	cnt := make([]int, 1<<digit)
	for pass := range passes {
		shift := uint(pass) * digit
		clear(cnt)
		var src [][]idPosting
		if pass == 0 {
			src = chunks
		} else {
			src = [][]idPosting{a}
		}
		for _, c := range src {
			for _, p := range c {
				cnt[(p.id/w>>shift)&mask]++
			}
		}
		sum := 0
		for i, c := range cnt {
			cnt[i] = sum
			sum += c
		}
		dst := b
		if pass == 0 {
			dst = a
		}
		for _, c := range src {
			for _, p := range c {
				d := (p.id / w >> shift) & mask
				dst[cnt[d]] = p
				cnt[d]++
			}
		}
		if pass > 0 {
			a, b = b, a
		}
	}
	return a, b
}

// spill sorts the chunks by id and writes them as a run; the file stays
// open for the merge.
func (sh *idShard) spill() error {
	sorted, other := radixSortByID(sh.chunks, sh.n, sh.w, sh.a, sh.b)
	sh.a, sh.b = sorted, other
	for _, c := range sh.chunks {
		sh.spare = append(sh.spare, c[:0])
	}
	sh.chunks, sh.n = sh.chunks[:0], 0
	path := filepath.Join(sh.dir, fmt.Sprintf("run-%s%05d", sh.prefix, len(sh.runs)))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("index: spilling run: %w", err)
	}
	run := &idRun{f: f, unmap: func() {}}
	sh.runs = append(sh.runs, run)
	bw := bufio.NewWriterSize(f, 1<<20)
	var b []byte
	var off uint64
	for i := 0; i < len(sorted); {
		id := sorted[i].id
		b = b[:0]
		prev := uint32(0)
		j := i
		for ; j < len(sorted) && sorted[j].id == id; j++ {
			b = binary.AppendUvarint(b, uint64(sorted[j].doc-prev))
			b = binary.AppendUvarint(b, uint64(sorted[j].tf))
			prev = sorted[j].doc
		}
		run.ids = append(run.ids, id)
		run.offs = append(run.offs, off)
		run.ns = append(run.ns, uint32(j-i))
		bw.Write(b)
		off += uint64(len(b))
		i = j
	}
	run.offs = append(run.offs, off)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("index: spilling run: %w", err)
	}
	return nil
}

// finish closes the shards' inputs, waits for their last spills, returns
// the freed postings buffers to the operating system, maps the runs (their
// resident pages bounded by the memory budget: runPages) and names and
// sorts each shard's distinct ids (all shards in parallel).
func (v *idInverter) finish(name func(uint32) string) error {
	v.finished = true
	for _, sh := range v.shards {
		close(sh.in)
	}
	v.wg.Wait()
	for _, sh := range v.shards {
		if sh.err != nil {
			return sh.err
		}
	}
	// The shards' chunks and radix arrays (up to the budget) are garbage
	// now; without this the runtime would keep their pages resident for
	// minutes while the merge maps the runs, and the process would hold
	// both.
	debug.FreeOSMemory()
	var sizes []int64
	for _, sh := range v.shards {
		for _, r := range sh.runs {
			sizes = append(sizes, int64(r.offs[len(r.offs)-1]))
		}
	}
	v.pages = newRunPages(v.budget, sizes)
	errs := make([]error, len(v.shards))
	var wg sync.WaitGroup
	for s, sh := range v.shards {
		sh.pages = v.pages
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range sh.runs {
				data, unmap, err := mapRun(r.f, int64(r.offs[len(r.offs)-1]))
				if err != nil {
					errs[s] = err
					return
				}
				r.data, r.unmap = data, unmap
			}
			errs[s] = sh.nameTerms(name)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stop ends the shard goroutines (if finish did not) and closes the run
// files (Build removes the spill folder).
func (v *idInverter) stop() {
	if !v.finished {
		v.finished = true
		for _, sh := range v.shards {
			close(sh.in)
		}
		v.wg.Wait()
	}
	if onRunPages != nil && v.pages != nil {
		onRunPages(v.pages)
	}
	for _, sh := range v.shards {
		for _, r := range sh.runs {
			r.unmap()
			r.unmap = func() {}
			r.f.Close()
		}
	}
}

// failure returns the error of a failed shard, or err.
func (v *idInverter) failure(err error) error {
	if !v.failed.Load() {
		return err
	}
	v.stop()
	for _, sh := range v.shards {
		if sh.err != nil {
			return sh.err
		}
	}
	return err
}

// nameTerms fills sh.terms: the shard's distinct ids with their dfs and
// names, sorted by name.
func (sh *idShard) nameTerms(name func(uint32) string) error {
	n := 0
	for _, r := range sh.runs {
		n += len(r.ids)
	}
	ids := make([]uint32, 0, n)
	for _, r := range sh.runs {
		ids = append(ids, r.ids...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	sh.terms = make([]idTerm, len(ids))
	for i, id := range ids {
		sh.terms[i] = idTerm{id: id}
	}
	for _, r := range sh.runs {
		j := 0
		for i, id := range r.ids {
			for ids[j] != id {
				j++
			}
			sh.terms[j].df += r.ns[i]
		}
	}
	for i := range sh.terms {
		sh.terms[i].name = name(sh.terms[i].id)
	}
	slices.SortFunc(sh.terms, func(a, b idTerm) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(sh.terms); i++ {
		if sh.terms[i].name == sh.terms[i-1].name {
			return fmt.Errorf("index: term ids %d and %d have the same name %q (BuildOptions.TermName must give distinct ids distinct names)", sh.terms[i-1].id, sh.terms[i].id, sh.terms[i].name)
		}
	}
	return nil
}

// read appends the postings of id (from every run of the shard that holds
// it, in run order, i.e. docID order) to docs and tfs; raw is the caller's
// buffer for lists read from the file (runPages).
func (sh *idShard) read(id uint32, docs, tfs []uint32, raw *[]byte) ([]uint32, []uint32, error) {
	for _, r := range sh.runs {
		i, ok := slices.BinarySearch(r.ids, id)
		if !ok {
			continue
		}
		buf, err := sh.pages.list(r, r.offs[i], r.offs[i+1], raw)
		if err != nil {
			return docs, tfs, err
		}
		prev := uint32(0)
		for k := uint32(0); k < r.ns[i]; k++ {
			g, m := binary.Uvarint(buf)
			if m <= 0 {
				return docs, tfs, fmt.Errorf("index: run %s: corrupt list of term id %d", r.f.Name(), id)
			}
			buf = buf[m:]
			tf, m := binary.Uvarint(buf)
			if m <= 0 {
				return docs, tfs, fmt.Errorf("index: run %s: corrupt list of term id %d", r.f.Name(), id)
			}
			buf = buf[m:]
			prev += uint32(g)
			docs = append(docs, prev)
			tfs = append(tfs, uint32(tf))
		}
		sh.pages.done(r, r.offs[i], r.offs[i+1]) // read once: its pages can go
	}
	return docs, tfs, nil
}

// idMerge merges the shards' runs in name order, by name ranges (parts)
// of about equal postings.
type idMerge struct {
	shards []*idShard
	perm   []uint32
	// ranges[p][s] is the index range of shard s's terms in part p.
	ranges [][][2]int
}

// newIDMerge cuts the term space of the finished shards into about parts
// name ranges of equal postings, from a sample of each shard's terms
// (every term past each postings step of 1/(16·parts) of the total).
func newIDMerge(shards []*idShard, perm []uint32, parts int) *idMerge {
	var total uint64
	for _, sh := range shards {
		for _, t := range sh.terms {
			total += uint64(t.df)
		}
	}
	type sample struct {
		name string
		df   uint64
	}
	var smp []sample
	step := max(total/uint64(16*parts), 1)
	for _, sh := range shards {
		var acc uint64
		for _, t := range sh.terms {
			acc += uint64(t.df)
			if acc >= step {
				smp = append(smp, sample{t.name, acc})
				acc = 0
			}
		}
	}
	slices.SortFunc(smp, func(a, b sample) int { return strings.Compare(a.name, b.name) })
	// Boundaries: the first name of each part after the first.
	var bounds []string
	var acc uint64
	per := max(total/uint64(parts), 1)
	for _, s := range smp {
		acc += s.df
		if acc >= per {
			if len(bounds) == 0 || s.name > bounds[len(bounds)-1] {
				bounds = append(bounds, s.name)
			}
			acc = 0
		}
	}
	m := &idMerge{shards: shards, perm: perm}
	lo := make([]int, len(shards))
	for p := 0; p <= len(bounds); p++ {
		r := make([][2]int, len(shards))
		for s, sh := range shards {
			hi := len(sh.terms)
			if p < len(bounds) {
				b := bounds[p]
				hi = sort.Search(len(sh.terms), func(i int) bool { return sh.terms[i].name >= b })
			}
			r[s] = [2]int{lo[s], hi}
			lo[s] = hi
		}
		m.ranges = append(m.ranges, r)
	}
	return m
}

// idScratch is one merging goroutine's reusable buffers.
type idScratch struct {
	docs, tfs []uint32
	heads     [][2]int
	raw       []byte // a short list read from its run (runPages)
}

// part merges part p, calling emit for each term in name order with its
// list (docIDs through perm, ascending; valid until the next call).
func (m *idMerge) part(p int, sc *idScratch, emit func(term string, docs, tfs []uint32) error) error {
	sc.heads = append(sc.heads[:0], m.ranges[p]...)
	prev := ""
	for first := true; ; first = false {
		best := -1
		var bt *idTerm
		for s, h := range sc.heads {
			if h[0] < h[1] {
				t := &m.shards[s].terms[h[0]]
				if best < 0 || t.name < bt.name {
					best, bt = s, t
				}
			}
		}
		if best < 0 {
			return nil
		}
		sc.heads[best][0]++
		if !first && bt.name == prev {
			return fmt.Errorf("index: two term ids have the same name %q (BuildOptions.TermName must give distinct ids distinct names)", bt.name)
		}
		prev = bt.name
		var err error
		sc.docs, sc.tfs, err = m.shards[best].read(bt.id, sc.docs[:0], sc.tfs[:0], &sc.raw)
		if err != nil {
			return err
		}
		if m.perm != nil {
			for i, d := range sc.docs {
				sc.docs[i] = m.perm[d]
			}
			sort.Sort(byDoc(mergedList{docs: sc.docs, tfs: sc.tfs}))
		}
		if err := emit(bt.name, sc.docs, sc.tfs); err != nil {
			return err
		}
	}
}

// encodedPart is a merged and encoded part, waiting for its turn to be
// written.
type encodedPart struct {
	terms     []string
	recs      []TermRecord
	ends      []int // enc[ends[i-1]:ends[i]] is term i's list
	enc       []byte
	docBytes  int64
	freqBytes int64
	postings  uint64
	err       error
}

// writeAll merges and encodes the parts on workers goroutines and writes
// them in order. 2·workers part buffers circulate (reused: no growth after
// the first parts), which bounds how far the workers run ahead of the
// writer.
func (m *idMerge) writeAll(ctx context.Context, w *Writer, workers int, st *BuildStats) error {
	np := len(m.ranges)
	slots := make([]chan *encodedPart, np)
	for i := range slots {
		slots[i] = make(chan *encodedPart, 1)
	}
	pool := make(chan *encodedPart, 2*workers)
	for range cap(pool) {
		pool <- &encodedPart{}
	}
	var next atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := NewListEncoder(w.opt.BlockSize, w.opt.DocCodec, w.opt.FreqCodec, w.opt.Params, w.opt.DocLens)
			e.SetBitmaps(w.opt.Bitmaps)
			var sc idScratch
			for {
				var ep *encodedPart
				select {
				case ep = <-pool:
				case <-ctx.Done():
					return
				}
				p := int(next.Add(1) - 1)
				if p >= np {
					return
				}
				ep.err = m.part(p, &sc, func(term string, docs, tfs []uint32) error {
					var err error
					if ep.enc, err = e.Encode(ep.enc, docs, tfs); err != nil {
						return fmt.Errorf("index: term %q: %w", term, err)
					}
					db, fb := e.Sizes()
					ep.terms = append(ep.terms, term)
					ep.recs = append(ep.recs, e.Rec)
					ep.ends = append(ep.ends, len(ep.enc))
					ep.docBytes += int64(db)
					ep.freqBytes += int64(fb)
					ep.postings += uint64(len(docs))
					return nil
				})
				slots[p] <- ep
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	for _, slot := range slots {
		var ep *encodedPart
		select {
		case ep = <-slot:
		case <-ctx.Done():
			return ctx.Err()
		}
		if ep.err != nil {
			return ep.err
		}
		start := 0
		for i, t := range ep.terms {
			if err := w.AddEncoded(t, ep.enc[start:ep.ends[i]], ep.recs[i]); err != nil {
				return err
			}
			start = ep.ends[i]
		}
		st.DocBytes += ep.docBytes
		st.FreqBytes += ep.freqBytes
		st.Postings += ep.postings
		st.Terms += uint64(len(ep.terms))
		clear(ep.terms) // the names, for the collector
		*ep = encodedPart{terms: ep.terms[:0], recs: ep.recs[:0], ends: ep.ends[:0], enc: ep.enc[:0]}
		pool <- ep
	}
	return nil
}

// idStream yields the merged lists of an idMerge one by one in name order,
// on the caller's goroutine (for builds that mix term ids with text, whose
// lists the inverter's merge combines by name).
type idStream struct {
	m    *idMerge
	p    int
	sc   idScratch
	cur  []*mergedList
	head *mergedList // the next list, nil at the end
}

func newIDStream(m *idMerge) (*idStream, error) {
	s := &idStream{m: m}
	return s, s.advance()
}

// advance moves head to the next list.
func (s *idStream) advance() error {
	for len(s.cur) == 0 && s.p < len(s.m.ranges) {
		err := s.m.part(s.p, &s.sc, func(term string, docs, tfs []uint32) error {
			s.cur = append(s.cur, &mergedList{term: term, docs: slices.Clone(docs), tfs: slices.Clone(tfs)})
			return nil
		})
		if err != nil {
			return err
		}
		s.p++
	}
	s.head = nil
	if len(s.cur) > 0 {
		s.head = s.cur[0]
		s.cur = s.cur[1:]
	}
	return nil
}
