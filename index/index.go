// Package index builds, writes and loads qp's compressed inverted index: per
// term a posting list of docIDs and term frequencies cut into blocks with a
// skip table (last docID, offsets and block-max BM25 score per block), the
// collection statistics, document lengths, external ids and the term
// dictionary, in one checksummed file (see format.go).
package index

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/qpengine/qp/index/analysis"
	"hash/crc32"
	"hash/maphash"
	"math"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/score"
)

// ErrCorrupt is wrapped by every error about a damaged index file.
var ErrCorrupt = errors.New("corrupt index")

// ErrOldFormat is wrapped by the error of opening a file whose format this
// qp no longer reads: a version 1 or 2 file with lists of a
// compress.Bounded codec (interpolative, bp128ip), whose blocks stored
// their count and sum (version 3 leaves them out, blockcode.go).
var ErrOldFormat = errors.New("index format no longer read")

// oldBounded reports whether codec c stores its blocks differently in a
// file of the given version than this qp reads them (then the file is
// refused with errOldFormat: never decoded wrongly).
func oldBounded(version uint32, c compress.Codec) bool {
	_, ok := c.(compress.Bounded)
	return ok && version < boundedVersion
}

func errOldFormat(path string, version uint32, codec string) error {
	return fmt.Errorf("index %s: %w: format version %d stores %s blocks with their count and sum, version %d without them; rebuild the index with this qp (qp index, with --docid-order bp or then qp reorder for BP order)",
		path, ErrOldFormat, version, codec, boundedVersion)
}

// Index is an open index, its file memory-mapped (Open). It is safe for
// concurrent readers; Close must not run concurrently with them.
type Index struct {
	Meta Meta
	path string

	post      []byte   // POSTINGS section
	termOffs  []byte   // (T+1) × u64
	termBytes []byte   // concatenated terms
	recs      []byte   // T × termRecord
	lens      []uint32 // N document lengths
	idOffs    []byte   // (N+1) × u64
	idBytes   []byte
	stOffs    []byte
	stBytes   []byte

	params   score.Params
	norms    []float32
	avgdl    float64
	blockMax []float32 // overrides the stored block maxima when params differ
	maxScore []float32 // likewise for list maxima
	firstBlk []uint32  // per term, index of its first block in blockMax

	version uint32
	bitmaps []*roaring.Bitmap // per term: its verified docID bitmap, or nil (block-coded)
	bcMu    sync.RWMutex
	bcDocs  map[int][]byte // BlockCodedList's docID blocks of bitmap lists

	release func() error // unmaps the file (nil: nothing to release)
	closed  atomic.Bool

	lookOnce sync.Once
	lookSeed maphash.Seed
	lookTab  []uint64 // Lookup's hash table (buildLookup)

	idfTab []float32 // IDF of df = 0..len-1 (fillIDF; nil: IDF computes)
}

func corruptf(path, format string, args ...any) error {
	return fmt.Errorf("index %s: %w: %s", path, ErrCorrupt, fmt.Sprintf(format, args...))
}

// Open maps an index file into memory (mmap, copy-on-write: the pages are
// the page cache's, shared by every process that opens the same file, see
// mapFile; where mmap is unavailable the file is read into the heap) and
// verifies it before returning, all eagerly: header, trailer, table of
// contents, the CRC-32C of every section (computed on all cores, see
// checksum), and the structure of the dictionary, of every skip table and
// of every docID bitmap. Damage is reported as an error wrapping ErrCorrupt
// that names the section. Posting lists, skip tables, terms and external
// ids are used in place in the mapping; what is decoded at open is small
// (the BM25 norms, N floats; the docID bitmaps of bitmap lists; Lookup's hash
// table on first use) — DOCLENS is used in place too where it is aligned.
//
// The caller must Close the Index when done with it (see Close).
func Open(path string) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("index %s: not a regular file", path)
	}
	data, release, err := mapFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("index %s: mapping the file: %w", path, err)
	}
	x, err := load(path, data)
	if err != nil {
		release()
		return nil, err
	}
	x.release = release
	return x, nil
}

// Close releases the file mapping. It must be called only once every use
// of the Index has finished: searches, and any List, Cursor, DocLens,
// ExternalID string or Stored bytes obtained from it (they point into the
// mapping). After Close, the Index's methods panic ("BUG: index ... used
// after Close") or with a nil-slice index error, and on Linux a slice kept
// from before faults at once (the range stays reserved without access;
// the Go runtime stops with "unexpected fault address") rather than reading
// other memory. Close is idempotent; an Index from load (tests) has
// nothing to release.
func (x *Index) Close() error {
	if x.closed.Swap(true) {
		return nil
	}
	x.post, x.termOffs, x.termBytes, x.recs = nil, nil, nil, nil
	x.lens, x.idOffs, x.idBytes, x.stOffs, x.stBytes = nil, nil, nil, nil, nil
	if x.release == nil {
		return nil
	}
	if err := x.release(); err != nil {
		return fmt.Errorf("index %s: unmapping: %w", x.path, err)
	}
	return nil
}

// mustOpen panics when the Index has been closed (a programmer's bug).
func (x *Index) mustOpen() {
	if x.closed.Load() {
		panic("BUG: index " + x.path + " used after Close")
	}
}

func load(path string, data []byte) (*Index, error) {
	le := binary.LittleEndian
	if len(data) < headerSize+trailerSize || string(data[:8]) != magic {
		return nil, corruptf(path, "not a qp index (bad magic or too short)")
	}
	version := le.Uint32(data[8:])
	if version < minVersion || version > formatVersion {
		return nil, fmt.Errorf("index %s: format version %d, this qp reads versions %d to %d", path, version, minVersion, formatVersion)
	}
	if le.Uint32(data[12:]) != 0 {
		return nil, corruptf(path, "reserved header field is not zero")
	}
	tr := data[len(data)-trailerSize:]
	if string(tr[20:]) != trailerMagic {
		return nil, corruptf(path, "bad trailer (truncated file?)")
	}
	tocOff, tocLen := le.Uint64(tr), le.Uint64(tr[8:])
	if tocOff > uint64(len(data)-trailerSize) || tocLen > uint64(len(data)-trailerSize)-tocOff || tocLen < 4 {
		return nil, corruptf(path, "table of contents out of range")
	}
	toc := data[tocOff : tocOff+tocLen]
	if crc32.Checksum(toc, castagnoli) != le.Uint32(tr[16:]) {
		return nil, corruptf(path, "table of contents checksum mismatch")
	}
	n := int(le.Uint32(toc))
	if uint64(4+24*n) != tocLen {
		return nil, corruptf(path, "table of contents length %d does not hold %d sections", tocLen, n)
	}
	secs := map[uint32][]byte{}
	for i := 0; i < n; i++ {
		e := toc[4+24*i:]
		kind, off, ln, crc := le.Uint32(e), le.Uint64(e[4:]), le.Uint64(e[12:]), le.Uint32(e[20:])
		name := sectionNames[kind]
		if name == "" {
			name = fmt.Sprintf("#%d", kind)
		}
		if off < headerSize || off > tocOff || ln > tocOff-off {
			return nil, corruptf(path, "section %s out of range", name)
		}
		b := data[off : off+ln]
		if checksum(b) != crc {
			return nil, corruptf(path, "section %s checksum mismatch", name)
		}
		secs[kind] = b
	}
	x := &Index{path: path, version: version}
	mb, ok := secs[secMeta]
	if !ok {
		return nil, corruptf(path, "no META section")
	}
	if err := json.Unmarshal(mb, &x.Meta); err != nil {
		return nil, corruptf(path, "META: %v", err)
	}
	m := &x.Meta
	for _, name := range []string{m.DocCodec, m.FreqCodec} {
		if c, err := compress.ByName(name); err == nil && oldBounded(version, c) {
			return nil, errOldFormat(path, version, name)
		}
	}
	if m.BlockSize < 1 || m.BlockSize > 1<<16 {
		return nil, corruptf(path, "META: block size %d", m.BlockSize)
	}
	// DOCLENS.
	dl := secs[secDocLens]
	if uint64(len(dl)) != 4*m.Docs {
		return nil, corruptf(path, "DOCLENS holds %d bytes for %d documents", len(dl), m.Docs)
	}
	x.lens = uint32s(dl)
	// DOCIDS and STORED.
	var err error
	if x.idOffs, x.idBytes, err = splitStrings(secs[secDocIDs], m.Docs); err != nil {
		return nil, corruptf(path, "DOCIDS: %v", err)
	}
	if st, ok := secs[secStored]; ok {
		if x.stOffs, x.stBytes, err = splitStrings(st, m.Docs); err != nil {
			return nil, corruptf(path, "STORED: %v", err)
		}
	}
	// TERMS.
	tb := secs[secTerms]
	if len(tb) < 4 {
		return nil, corruptf(path, "TERMS section missing or short")
	}
	nt := uint64(le.Uint32(tb))
	if nt != m.Terms {
		return nil, corruptf(path, "TERMS holds %d terms, META says %d", nt, m.Terms)
	}
	if uint64(len(tb)) < 4+8*(nt+1) {
		return nil, corruptf(path, "TERMS offsets truncated")
	}
	x.termOffs = tb[4 : 4+8*(nt+1)]
	tlen := le.Uint64(x.termOffs[8*nt:])
	rest := tb[4+8*(nt+1):]
	pad := (8 - (4+8*(nt+1)+tlen)%8) % 8
	if tlen > uint64(len(rest)) || uint64(len(rest)) != tlen+pad+termRecSize*nt {
		return nil, corruptf(path, "TERMS sizes inconsistent")
	}
	x.termBytes = rest[:tlen]
	x.recs = rest[tlen+pad:]
	if avg := score.AvgDL(x.lens); avg != m.AvgDL {
		return nil, corruptf(path, "META: average document length %v, the document lengths give %v", m.AvgDL, avg)
	}
	x.post = secs[secPostings]
	x.fillIDF()
	if err := x.verifyLists(); err != nil {
		return nil, err
	}
	if err := x.SetParams(score.Params{K1: m.K1, B: m.B}); err != nil {
		return nil, corruptf(path, "META: %v", err)
	}
	return x, nil
}

func splitStrings(b []byte, n uint64) (offs, bytes []byte, err error) {
	if uint64(len(b)) < 8*(n+1) {
		return nil, nil, fmt.Errorf("offsets truncated")
	}
	offs = b[:8*(n+1)]
	bytes = b[8*(n+1):]
	prev := uint64(0)
	for i := uint64(0); i <= n; i++ {
		o := binary.LittleEndian.Uint64(offs[8*i:])
		if o < prev || o > uint64(len(bytes)) || (i == 0 && o != 0) {
			return nil, nil, fmt.Errorf("offset %d out of order or range", i)
		}
		prev = o
	}
	if prev != uint64(len(bytes)) {
		return nil, nil, fmt.Errorf("trailing bytes")
	}
	return offs, bytes, nil
}

// verifyLists checks term order, that every list lies inside POSTINGS in
// order, that its codecs exist, and that its skip table (and docID bitmap)
// is consistent. The terms are checked in ranges on all cores (the bitmaps'
// verification is most of the cost of opening an index that has them); the
// error reported is the one of the first damaged term, as sequentially.
func (x *Index) verifyLists() error {
	nt := x.NumTerms()
	workers := min(runtime.GOMAXPROCS(0), max(1, nt/verifyGrain))
	res := make([]listsVerified, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[w], errs[w] = x.verifyRange(w*nt/workers, (w+1)*nt/workers)
		}()
	}
	wg.Wait()
	var total uint64
	for w := range workers {
		if errs[w] != nil {
			return errs[w]
		}
		total += res[w].postings
		for _, b := range res[w].bitmaps {
			if x.bitmaps == nil {
				x.bitmaps = make([]*roaring.Bitmap, nt)
			}
			x.bitmaps[b.term] = b.bm
		}
	}
	if nt == 0 && len(x.post) != 0 { // else the last list ends where POSTINGS does
		return corruptf(x.path, "POSTINGS: %d trailing bytes", len(x.post))
	}
	if total != x.Meta.Postings {
		return corruptf(x.path, "META says %d postings, lists hold %d", x.Meta.Postings, total)
	}
	return nil
}

// verifyGrain is the fewest terms per verifyLists range (a variable for
// tests).
var verifyGrain = 4096

// listsVerified is what verifyRange found in its terms.
type listsVerified struct {
	postings uint64
	bitmaps  []termBitmap
}

type termBitmap struct {
	term int
	bm   *roaring.Bitmap
}

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// verifyRange verifies terms [lo, hi) (verifyLists). The term before lo is
// compared with lo's for order when its bytes are in range (if they are
// not, the range holding it reports that).
func (x *Index) verifyRange(lo, hi int) (v listsVerified, err error) {
	le := binary.LittleEndian
	nt := x.NumTerms()
	prevOff := uint64(0)
	var prevTerm []byte
	if lo > 0 {
		prevOff = le64(x.recs[termRecSize*lo:])
		a, b := le64(x.termOffs[8*(lo-1):]), le64(x.termOffs[8*lo:])
		if a <= b && b <= uint64(len(x.termBytes)) {
			prevTerm = x.termBytes[a:b]
		}
	}
	for t := lo; t < hi; t++ {
		a, b := le.Uint64(x.termOffs[8*t:]), le.Uint64(x.termOffs[8*t+8:])
		if a > b || b > uint64(len(x.termBytes)) {
			return v, corruptf(x.path, "TERMS: term %d bytes out of range", t)
		}
		term := x.termBytes[a:b]
		if t > 0 && bytes.Compare(prevTerm, term) >= 0 {
			return v, corruptf(x.path, "TERMS: term %d %q not after %q", t, term, prevTerm)
		}
		prevTerm = term
		r := readTermRecord(x.recs[termRecSize*t:])
		if r.Offset != prevOff {
			return v, corruptf(x.path, "TERMS: list of term %q at %d, expected %d", term, r.Offset, prevOff)
		}
		if r.DF == 0 || uint64(r.DF) > x.Meta.Docs {
			return v, corruptf(x.path, "TERMS: term %q has df %d (N=%d)", term, r.DF, x.Meta.Docs)
		}
		for _, id := range []compress.ID{r.DocCodec, r.FreqCodec} {
			c, err := compress.ByID(id)
			if err != nil {
				return v, corruptf(x.path, "term %q: %v", term, err)
			}
			if oldBounded(x.version, c) {
				return v, errOldFormat(x.path, x.version, c.Name())
			}
		}
		if r.Flags&^knownFlags != 0 || (x.version < 2 && r.Flags != 0) || (r.Flags&flagBitmap == 0 && r.BitmapBytes != 0) {
			return v, corruptf(x.path, "TERMS: term %q has flags %#x and bitmap length %d (format version %d)", term, r.Flags, r.BitmapBytes, x.version)
		}
		end := uint64(len(x.post))
		if t+1 < nt {
			end = le.Uint64(x.recs[termRecSize*(t+1):])
		}
		if end < r.Offset || end > uint64(len(x.post)) {
			return v, corruptf(x.path, "POSTINGS: list of term %q out of range", term)
		}
		lb := x.post[r.Offset:end]
		nb := (uint64(r.DF) + uint64(x.Meta.BlockSize) - 1) / uint64(x.Meta.BlockSize)
		if uint64(len(lb)) < skipEntrySize*nb {
			return v, corruptf(x.path, "POSTINGS: skip table of term %q truncated", term)
		}
		var pd, pf uint32
		var bmax float32
		prevLast := int64(-1)
		for i := uint64(0); i < nb; i++ {
			e := lb[skipEntrySize*i:]
			last, de, fe := le.Uint32(e), le.Uint32(e[4:]), le.Uint32(e[8:])
			bm := math.Float32frombits(le.Uint32(e[12:]))
			if int64(last) <= prevLast || uint64(last) >= x.Meta.Docs || de < pd || fe < pf || !(bm >= 0) || math.IsInf(float64(bm), 0) {
				return v, corruptf(x.path, "POSTINGS: skip entry %d of term %q inconsistent", i, term)
			}
			prevLast, pd, pf = int64(last), de, fe
			bmax = max(bmax, bm)
		}
		if r.MaxScore != bmax {
			// Pruning (MaxScore, BlockMax-WAND) is exact only with true maxima.
			return v, corruptf(x.path, "TERMS: max score of term %q is %v, its blocks say %v", term, r.MaxScore, bmax)
		}
		docArea := uint64(pd)
		if r.Flags&flagBitmap != 0 {
			docArea = uint64(r.BitmapBytes)
		}
		if skipEntrySize*nb+docArea+uint64(pf) != uint64(len(lb)) {
			return v, corruptf(x.path, "POSTINGS: list of term %q has %d bytes, skip table accounts for %d", term, len(lb), skipEntrySize*nb+docArea+uint64(pf))
		}
		if r.Flags&flagBitmap != 0 {
			bm, err := x.verifyBitmap(term, lb[skipEntrySize*nb:skipEntrySize*nb+docArea], lb[:skipEntrySize*nb], r.DF)
			if err != nil {
				return v, err
			}
			v.bitmaps = append(v.bitmaps, termBitmap{t, bm})
		}
		prevOff = end
		v.postings += uint64(r.DF)
	}
	return v, nil
}

// verifyBitmap decodes the docID bitmap of a list and checks it completely
// (format.go): the portable roaring serialization is well formed
// (roaring_format.go: every container's header agrees with its values, no
// empty container, no byte left over), it holds df docIDs strictly
// increasing below N, and every block's last docID equals the skip table's.
// Which containers the writer chose is not checked: any valid encoding of
// the docIDs opens, whichever roaring version wrote it. It returns a bitmap
// rebuilt from the verified docIDs (AddMany, RunOptimize), so that queries
// never touch the file's bytes through roaring.
func (x *Index) verifyBitmap(term, data, skips []byte, df uint32) (*roaring.Bitmap, error) {
	bad := func(format string, args ...any) error {
		return corruptf(x.path, "POSTINGS: docID bitmap of term %q: %s", term, fmt.Sprintf(format, args...))
	}
	vals, err := decodeRoaring(make([]uint32, 0, df), data, int(df))
	if err != nil {
		return nil, bad("%v", err)
	}
	if len(vals) != int(df) {
		return nil, bad("%d docIDs, df = %d", len(vals), df)
	}
	if last := vals[len(vals)-1]; uint64(last) >= x.Meta.Docs {
		return nil, bad("docID %d >= N = %d", last, x.Meta.Docs)
	}
	bs := x.Meta.BlockSize
	for b := 0; b*bs < len(vals); b++ {
		d := vals[min((b+1)*bs, len(vals))-1]
		if last := binary.LittleEndian.Uint32(skips[skipEntrySize*b:]); last != d {
			return nil, bad("block %d ends at docID %d, the skip table says %d", b, d, last)
		}
	}
	canon := roaring.New()
	canon.AddMany(vals)
	canon.RunOptimize()
	return canon, nil
}

// NumDocs is N.
func (x *Index) NumDocs() int { return len(x.lens) }

// NumTerms is the number of distinct terms.
func (x *Index) NumTerms() int { return len(x.recs) / termRecSize }

// Term returns the term with ID t (IDs are ranks in byte order).
func (x *Index) Term(t int) string {
	a := binary.LittleEndian.Uint64(x.termOffs[8*t:])
	b := binary.LittleEndian.Uint64(x.termOffs[8*t+8:])
	return string(x.termBytes[a:b])
}

func (x *Index) termAt(t int) []byte {
	a := binary.LittleEndian.Uint64(x.termOffs[8*t:])
	b := binary.LittleEndian.Uint64(x.termOffs[8*t+8:])
	return x.termBytes[a:b]
}

// Lookup returns the ID of term, or false when the index does not hold it.
// The first call builds a hash table of the dictionary (open addressing
// with linear probing, load factor <= 1/2; safe for concurrent use), so
// that a query term costs one hash and usually one comparison instead of a
// binary search of ~log2(T) string comparisons over cold memory. A slot
// (8 bytes) holds the term ID + 1 and a 32-bit fingerprint of the term's
// hash (lookSlot), so that a probe passes the other terms of its cluster
// without reading their bytes (a colliding term costs two dependent cache
// misses, its offsets and its bytes) and an absent term usually reads none.
func (x *Index) Lookup(term string) (int, bool) {
	x.lookOnce.Do(x.buildLookup)
	mask := uint64(len(x.lookTab) - 1)
	h := maphash.String(x.lookSeed, term)
	if id := x.probeFrom(term, h&mask, lookFP(h)); id >= 0 {
		return id, true
	}
	return 0, false
}

// lookFP is the fingerprint of a term's hash h kept in its slot: the high
// half, which the slot index (h's low bits, the table having at most 2^32
// slots) does not use.
func lookFP(h uint64) uint32 { return uint32(h >> 32) }

// lookSlot is the table slot of term ID t with fingerprint fp (0: empty).
func lookSlot(t int, fp uint32) uint64 { return uint64(fp)<<32 | uint64(uint32(t+1)) }

// LookupAll sets ids[i] to the ID of terms[i], or -1 when the index does
// not hold it (len(ids) must be at least len(terms)). It is Lookup for a
// whole query with the probes interleaved: the hash-table slots of all the
// terms are read first, then their dictionary offsets, then their bytes, so
// that the cache misses of different terms overlap (memory-level
// parallelism) instead of forming one chain of three misses per term.
func (x *Index) LookupAll(terms []string, ids []int) { x.lookupAll(terms, ids, nil, true) }

// LookupDict is LookupAll for a caller that reads the terms' records but
// not their posting lists on the host (the GPU backend, whose lists are in
// device memory): it does not start the reads of the lists' heads that
// LookupAll overlaps with the dictionary's misses (four cache lines of
// posting data per term, 0.54 of the 27.3 s of CPU of a 3M q/s GPU-only
// run on the H100 host, issue 24, for lines nothing then reads).
func (x *Index) LookupDict(terms []string, ids []int) { x.lookupAll(terms, ids, nil, false) }

// LookupDictDF is LookupDict that also sets dfs[i] to the document
// frequency of terms[i] (0 when absent; len(dfs) at least len(terms)),
// read from the records whose lines the lookup's interleaved probes
// already brought in (issue 24: the GPU's batch preparation read each
// record again afterwards, one query at a time, a cache miss per term).
func (x *Index) LookupDictDF(terms []string, ids []int, dfs []uint32) {
	if len(dfs) < len(terms) {
		panic(fmt.Sprintf("BUG: index.LookupDictDF: %d dfs for %d terms", len(dfs), len(terms)))
	}
	x.lookupAll(terms, ids, dfs, false)
}

func (x *Index) lookupAll(terms []string, ids []int, dfs []uint32, lists bool) {
	if len(ids) < len(terms) {
		panic(fmt.Sprintf("BUG: index.LookupAll: %d ids for %d terms", len(ids), len(terms)))
	}
	x.lookOnce.Do(x.buildLookup)
	for len(terms) > 0 {
		n := min(len(terms), lookBatch)
		x.lookupBatch(terms[:n], ids[:n], lists)
		if dfs != nil {
			for i, id := range ids[:n] {
				dfs[i] = 0
				if id >= 0 {
					dfs[i] = binary.LittleEndian.Uint32(x.recs[termRecSize*id+recDF:])
				}
			}
			dfs = dfs[n:]
		}
		terms, ids = terms[n:], ids[n:]
	}
}

// lookBatch is the number of terms whose probes LookupAll interleaves.
const lookBatch = 32

// lookupBatch is LookupAll (lists: the lists' heads touched) or
// LookupDict for at most lookBatch terms.
func (x *Index) lookupBatch(terms []string, ids []int, lists bool) {
	var hs [lookBatch]uint64
	var slots [lookBatch]uint32
	var offs [lookBatch][2]uint64
	tab := x.lookTab
	mask := uint64(len(tab) - 1)
	terms = terms[:min(len(terms), lookBatch)]
	for i, t := range terms {
		hs[i] = maphash.String(x.lookSeed, t)
	}
	// The first slot of each term's cluster with its fingerprint (its ID
	// + 1), or 0 at the cluster's end (absent): hs[i] becomes that slot.
	for i := range terms {
		fp := lookFP(hs[i])
		h := hs[i] & mask
		for {
			s := tab[h]
			if s == 0 || uint32(s>>32) == fp {
				slots[i] = uint32(s)
				break
			}
			h = (h + 1) & mask
		}
		hs[i] = h
	}
	var touch byte
	for i := range terms {
		if id := slots[i]; id != 0 {
			t := int(id - 1)
			offs[i] = [2]uint64{binary.LittleEndian.Uint64(x.termOffs[8*t:]), binary.LittleEndian.Uint64(x.termOffs[8*t+8:])}
			touch ^= x.recs[termRecSize*t]
		}
	}
	// The slots' terms' records are on their way (read above, before the
	// terms are verified): start the reads of their lists' heads too, so
	// that these misses overlap with the dictionary bytes' (a slot holding
	// another term only wastes the reads).
	for i := range terms {
		if id := slots[i]; id != 0 && lists {
			touch ^= x.touchList(int(id - 1))
		}
	}
	keep(touch)
	for i, term := range terms {
		switch id := slots[i]; {
		case id == 0:
			ids[i] = -1
		case string(x.termBytes[offs[i][0]:offs[i][1]]) == term:
			ids[i] = int(id - 1)
		default: // equal fingerprints of different terms: probe on (rare)
			ids[i] = x.probeFrom(term, (hs[i]+1)&mask, lookFP(maphash.String(x.lookSeed, term)))
		}
	}
}

// probeFrom continues Lookup's linear probe for term, whose fingerprint is
// fp, at slot h: the term's ID, or -1.
func (x *Index) probeFrom(term string, h uint64, fp uint32) int {
	tab := x.lookTab
	mask := uint64(len(tab) - 1)
	for ; ; h = (h + 1) & mask {
		s := tab[h]
		if s == 0 {
			return -1
		}
		if uint32(s>>32) == fp {
			if t := int(uint32(s) - 1); string(x.termAt(t)) == term {
				return t
			}
		}
	}
}

// BuildLookup builds Lookup's hash table now (the first Lookup does it
// otherwise): an open cost that a throughput measurement or a server's first
// query should not pay.
func (x *Index) BuildLookup() { x.lookOnce.Do(x.buildLookup) }

// lookupSorted is Lookup by binary search of the sorted dictionary (the
// reference the hash table is tested against).
func (x *Index) lookupSorted(term string) (int, bool) {
	n := x.NumTerms()
	t := sort.Search(n, func(i int) bool { return string(x.termAt(i)) >= term })
	if t < n && string(x.termAt(t)) == term {
		return t, true
	}
	return 0, false
}

// buildLookup fills x.lookTab: slot = lookSlot(term ID, fingerprint), 0
// empty.
func (x *Index) buildLookup() {
	n := x.NumTerms()
	size := 2
	for size < 2*n {
		size <<= 1
	}
	x.lookSeed = maphash.MakeSeed()
	tab := make([]uint64, size)
	mask := uint64(size - 1)
	for t := 0; t < n; t++ {
		hash := maphash.Bytes(x.lookSeed, x.termAt(t))
		h := hash & mask
		for tab[h] != 0 {
			h = (h + 1) & mask
		}
		tab[h] = lookSlot(t, lookFP(hash))
	}
	x.lookTab = tab
}

// Record returns the dictionary entry of term t.
func (x *Index) Record(t int) TermRecord { return readTermRecord(x.recs[termRecSize*t:]) }

// DocLens returns the document lengths (do not modify).
func (x *Index) DocLens() []uint32 { return x.lens }

// Norms returns the BM25 length norms of the current parameters (do not modify).
func (x *Index) Norms() []float32 { return x.norms }

// AvgDL is the average document length.
func (x *Index) AvgDL() float64 { return x.avgdl }

// Params are the BM25 parameters the index scores with.
func (x *Index) Params() score.Params { return x.params }

// ExternalID returns the id a document had in the collection. It does not
// allocate: the string shares the index's memory, which no one writes after
// loading.
func (x *Index) ExternalID(d uint32) string {
	a := binary.LittleEndian.Uint64(x.idOffs[8*d:])
	b := binary.LittleEndian.Uint64(x.idOffs[8*d+8:])
	if a == b {
		return ""
	}
	return unsafe.String(&x.idBytes[a], b-a)
}

// HasStored reports whether the index has a STORED section.
func (x *Index) HasStored() bool { return x.stOffs != nil }

// Stored returns the stored fields of a document as a JSON object, or nil.
func (x *Index) Stored(d uint32) []byte {
	if x.stOffs == nil {
		return nil
	}
	a := binary.LittleEndian.Uint64(x.stOffs[8*d:])
	b := binary.LittleEndian.Uint64(x.stOffs[8*d+8:])
	return x.stBytes[a:b]
}

// SizeBytes is the size of the postings (skip tables and blocks).
func (x *Index) SizeBytes() int { return len(x.post) }

// SetParams changes the BM25 parameters. It must not run while searches are
// in progress (it rewrites the norms and maxima in place). When they differ from those the
// block maxima were stored with, every list is decoded once (on all cores)
// to recompute exact block and list maxima, so pruning stays exact.
func (x *Index) SetParams(p score.Params) error {
	if err := p.Validate(); err != nil {
		return err
	}
	x.params = p
	x.avgdl = x.Meta.AvgDL
	if x.avgdl <= 0 {
		x.avgdl = score.AvgDL(x.lens)
	}
	x.norms = p.Norms(x.norms, x.lens, x.avgdl)
	if p == (score.Params{K1: x.Meta.K1, B: x.Meta.B}) {
		x.blockMax, x.maxScore, x.firstBlk = nil, nil, nil
		return nil
	}
	nt := x.NumTerms()
	x.firstBlk = make([]uint32, nt+1)
	bs := uint64(x.Meta.BlockSize)
	for t := 0; t < nt; t++ {
		nb := (uint64(x.Record(t).DF) + bs - 1) / bs
		x.firstBlk[t+1] = x.firstBlk[t] + uint32(nb)
	}
	bm := make([]float32, x.firstBlk[nt])
	ms := make([]float32, nt)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	workers := runtime.GOMAXPROCS(0)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			docs := make([]uint32, x.Meta.BlockSize)
			freqs := make([]uint32, x.Meta.BlockSize)
			for t := w; t < nt; t += workers {
				l, err := x.list(t, nil, nil)
				if err == nil {
					err = l.computeMaxima(x, docs, freqs, bm[x.firstBlk[t]:x.firstBlk[t+1]], &ms[t])
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}(w)
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	x.blockMax, x.maxScore = bm, ms
	return nil
}

// IDF is the BM25 idf of a list with document frequency df: score.IDF,
// from a table for the small document frequencies of most query terms
// (fillIDF), which spares Index.List a logarithm per call.
func (x *Index) IDF(df uint32) float32 {
	if df < uint32(len(x.idfTab)) {
		return x.idfTab[df]
	}
	return score.IDF(uint64(len(x.lens)), uint64(df))
}

// idfTabSize bounds the IDF table: 256 KiB (filled in about a millisecond
// when the index opens), of which the entries of a batch's query terms stay
// in cache. 4,096 entries (16 KiB) left GCIDE's frequent query terms (df
// 4,096-65,535 of 126k documents) a logarithm each: issue 24, the GPU's
// batch preparation 0.7-0.8x with the larger table
// (engine/gpu BenchmarkPrepareRange, GCIDE and TREC'06, paired runs).
const idfTabSize = 1 << 16

// fillIDF tabulates score.IDF for df < min(N+1, idfTabSize); the idf
// depends on N and df only (not on SetParams' k1 and b), and the table holds
// the same float32 bits as the function.
func (x *Index) fillIDF() {
	n := uint64(len(x.lens))
	x.idfTab = make([]float32, min(n+1, idfTabSize))
	for df := range x.idfTab {
		x.idfTab[df] = score.IDF(n, uint64(df))
	}
}

// ListsInto sets out[i] = List(ids[i]) for every i (len(out) must be at
// least len(ids)): TouchLists, then ListInto for each term.
func (x *Index) ListsInto(out []List, ids []int) error {
	if len(out) < len(ids) {
		panic(fmt.Sprintf("BUG: index.ListsInto: %d lists for %d terms", len(out), len(ids)))
	}
	x.TouchLists(ids)
	for i, t := range ids {
		if err := x.ListInto(&out[i], t); err != nil {
			return err
		}
	}
	return nil
}

// TouchLists reads the dictionary records of the terms ids and the heads
// and ends of their skip tables and first docID blocks, in loops of their
// own, so that the cache misses of a query's lists overlap (memory-level
// parallelism) instead of forming one chain per list; List and ListInto
// then find them in cache.
func (x *Index) TouchLists(ids []int) {
	var touch byte
	for _, t := range ids {
		touch ^= x.recs[termRecSize*t]
	}
	for _, t := range ids {
		touch ^= x.touchList(t)
	}
	keep(touch)
}

// ListInto sets *dst to List(t), writing it in place: a List is some 240
// bytes, which List's result and the caller's assignment copy twice
// (docs/CPU-ENGINE.md, step 47).
func (x *Index) ListInto(dst *List, t int) error {
	bm, ms := x.blockMaxOf(t)
	return x.listInto(dst, t, bm, ms)
}

// blockMaxOf returns term t's block maxima and list maximum, or nothing
// when the index has none.
func (x *Index) blockMaxOf(t int) ([]float32, *float32) {
	x.mustOpen()
	if x.blockMax == nil {
		return nil, nil
	}
	return x.blockMax[x.firstBlk[t]:x.firstBlk[t+1]], &x.maxScore[t]
}

// touchList reads a byte of the head and of the end of term t's skip table
// and of its first docID block (and the block's next line), and returns
// their xor: loads whose cache misses overlap with others' before List and
// the cursors read these lines.
func (x *Index) touchList(t int) byte {
	r := x.recs[termRecSize*t:]
	off := binary.LittleEndian.Uint64(r)
	bs := uint64(x.Meta.BlockSize)
	nb := (uint64(binary.LittleEndian.Uint32(r[16:])) + bs - 1) / bs
	if e := off + skipEntrySize*nb; off < e && e+64 < uint64(len(x.post)) {
		return x.post[off] ^ x.post[e-1] ^ x.post[e] ^ x.post[e+64]
	}
	return 0
}

// keep consumes a value so that the loads computing it are not removed.
//
//go:noinline
func keep(byte) {}

// List returns the posting list of term t.
func (x *Index) List(t int) (List, error) {
	bm, ms := x.blockMaxOf(t)
	return x.list(t, bm, ms)
}

func (x *Index) list(t int, bm []float32, ms *float32) (List, error) {
	var l List
	err := x.listInto(&l, t, bm, ms)
	return l, err
}

// listInto is list writing *l field by field (a composite literal would be
// built aside and copied); on an error *l is unspecified.
func (x *Index) listInto(l *List, t int, bm []float32, ms *float32) error {
	if t < 0 || t >= x.NumTerms() {
		panic(fmt.Sprintf("BUG: term ID %d out of range", t))
	}
	r := x.Record(t)
	dc, err := compress.ByID(r.DocCodec)
	if err != nil {
		return corruptf(x.path, "term %d: %v", t, err)
	}
	fc, err := compress.ByID(r.FreqCodec)
	if err != nil {
		return corruptf(x.path, "term %d: %v", t, err)
	}
	end := uint64(len(x.post))
	if t+1 < x.NumTerms() {
		end = binary.LittleEndian.Uint64(x.recs[termRecSize*(t+1):])
	}
	b := x.post[r.Offset:end]
	bs := x.Meta.BlockSize
	nb := (int(r.DF) + bs - 1) / bs
	skips := b[:skipEntrySize*nb]
	dl := binary.LittleEndian.Uint32(skips[skipEntrySize*(nb-1)+4:])
	var dbm *roaring.Bitmap
	if r.Flags&flagBitmap != 0 {
		dl, dbm = r.BitmapBytes, x.bitmaps[t]
	}
	l.Term, l.DF, l.CF, l.IDF, l.MaxScore = t, r.DF, r.CF, x.IDF(r.DF), r.MaxScore
	l.DocCodec, l.FreqCodec, l.NBlocks, l.BlockSize = dc, fc, nb, bs
	l.skips, l.docs, l.freqs = skips, b[len(skips):len(skips)+int(dl)], b[len(skips)+int(dl):]
	l.blockMax, l.path, l.bm = bm, x.path, dbm
	l.docB, _ = dc.(compress.Bounded)
	l.docBP = dc.ID() == compress.IDBP128
	l.freqBP = fc.ID() == compress.IDBP128
	l.freqB, _ = fc.(compress.Bounded)
	if ms != nil {
		l.MaxScore = *ms
	}
	return nil
}

// computeMaxima fills bm with the exact block maxima under x's parameters.
func (l *List) computeMaxima(x *Index, docs, freqs []uint32, bm []float32, ms *float32) error {
	k1p1 := x.params.K1p1()
	*ms = 0
	for b := 0; b < l.NBlocks; b++ {
		n, err := l.DecodeDocs(b, docs)
		if err != nil {
			return err
		}
		if _, err := l.DecodeFreqs(b, freqs); err != nil {
			return err
		}
		var m float32
		for i := 0; i < n; i++ {
			if s := score.Term(l.IDF, k1p1, freqs[i], x.norms[docs[i]]); s > m {
				m = s
			}
		}
		bm[b] = m
		*ms = float32(math.Max(float64(*ms), float64(m)))
	}
	return nil
}

// Analyzer returns the analyzer the index's documents were tokenized with
// (Meta.Stem, Meta.Stopwords), so that query text is analyzed the same way.
func (x *Index) Analyzer() (*analysis.Analyzer, error) {
	an, err := analysis.New(analysis.Options{Stem: x.Meta.Stem, Stopwords: x.Meta.Stopwords})
	if err != nil {
		return nil, fmt.Errorf("index analysis options: %w", err)
	}
	return an, nil
}

// uint32s is b read as little-endian uint32s: b itself where the host is
// little-endian and b 4-byte aligned (the mapping, used in place), else a
// decoded copy.
func uint32s(b []byte) []uint32 {
	n := len(b) / 4
	if n == 0 {
		return []uint32{}
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if hostLittleEndian && uintptr(p)%4 == 0 {
		return unsafe.Slice((*uint32)(p), n)
	}
	v := make([]uint32, n)
	for i := range v {
		v[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return v
}

var hostLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()
