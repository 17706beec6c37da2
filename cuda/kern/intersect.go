package kern

import (
	"errors"
	"fmt"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/intersect"
)

// Batched list intersection (kernels/intersect.cu): the PARA execution of
// Ao et al. PVLDB'11 §4.1. A batch of queries, each a set of decoded sorted
// lists, is uploaded once (IntersectKernels.Upload); IsectBatch.Run then
// intersects every query at once with one algorithm: one thread per element
// of each query's shortest list looks it up in the query's next list, and a
// scan (QueryKernels.ScanU32) with stream compaction keeps the survivors for
// the next list, shortest first. The results equal package intersect's
// (intersect.Merge, PMF, LRSearch, HSSearch, SearchEncoded).

// IsectAlgo selects how a candidate is looked up in a longer list.
type IsectAlgo uint32

const (
	IsectBinary IsectAlgo = iota // binary search of the whole list (§4.2)
	IsectLR                      // binary search in the LR safe range (§4.3, intersect.LR)
	IsectHS                      // binary search in the HS bucket (§4.4, intersect.HS)
	IsectPMF                     // Parallel Merge Find, 1..4 levels (Ding et al. WWW'09 §7, intersect.PMF)
	IsectLRC                     // search in the list's LRC encoding (§5.3, without header lists)
	IsectLRCSeg                  // search in the LRCSeg encoding (§5.3 Algorithm 1, header list H)
	IsectSegLRC                  // search in the SegLRC encoding (Algorithm 1 and segment lines)
	IsectHSLRC                   // search in the HS-LRC encoding (§5.3 "HS.LRC")
)

var isectNames = [...]string{"binsearch", "lr", "hs", "pmf", "lrc", "lrcseg", "seglrc", "hslrc"}

func (a IsectAlgo) String() string {
	if int(a) < len(isectNames) {
		return isectNames[a]
	}
	return fmt.Sprintf("IsectAlgo(%d)", uint32(a))
}

// Codec is the LRC-family codec an encoded-list algorithm searches (nil
// for the others).
func (a IsectAlgo) Codec() compress.Searcher {
	var name string
	switch a {
	case IsectLRC, IsectLRCSeg, IsectSegLRC, IsectHSLRC:
		name = isectNames[a]
	default:
		return nil
	}
	c, err := compress.ByName(name)
	if err != nil {
		panic("BUG: cuda: codec " + name + " not registered")
	}
	return c.(compress.Searcher)
}

// IsectList is one list of a batch. Docs (strictly increasing) is always
// needed; LR and HS only for IsectLR and IsectHS (intersect.NewLR(Docs),
// intersect.NewHS(Docs, div)); Enc, the whole list encoded by one codec of
// the LRC family (lrc, lrcseg, seglrc or hslrc: the codec's AppendEncode of
// Docs, not index blocks), only for the encoded-list algorithm of that
// codec, which then reads Enc instead of Docs for every list but a query's
// shortest.
type IsectList struct {
	Docs []uint32
	LR   intersect.LR
	HS   intersect.HS
	Enc  []byte
}

// IsectListWords is the size of kernels/intersect.cu's List, in words.
const IsectListWords = 20

// IntersectKernels are the loaded intersection kernels of one Context.
type IntersectKernels struct {
	c                                    *cuda.Context
	q                                    *QueryKernels
	init, split, search, compact, qstart *cuda.Function
}

// LoadIntersectKernels looks the kernels up in c's embedded fatbin (with
// the query kernels, whose scan it uses).
func LoadIntersectKernels(c *cuda.Context) (*IntersectKernels, error) {
	q, err := LoadQueryKernels(c)
	if err != nil {
		return nil, err
	}
	k := &IntersectKernels{c: c, q: q}
	for _, f := range []struct {
		dst  **cuda.Function
		name string
	}{
		{&k.init, "qp_isect_init"}, {&k.split, "qp_isect_split"}, {&k.search, "qp_isect_search"},
		{&k.compact, "qp_isect_compact"}, {&k.qstart, "qp_isect_qstart"},
	} {
		fn, err := q.k.fb.Function(f.name)
		if err != nil {
			return nil, fmt.Errorf("cuda: the embedded fatbin lacks the intersection kernels (rebuild it with `make kernels`): %w", err)
		}
		*f.dst = fn
	}
	return k, nil
}

// IsectLists are lists resident on the device (UploadLists), as the paper
// keeps "the frequently accessed inverted indexes in the GPU memory" (§2.1);
// batches of queries reference them by index (Batch).
type IsectLists struct {
	k                       *IntersectKernels
	lens                    []int
	hasEnc                  bool
	bufs                    []*cuda.Buffer
	lists, vals, hsptr, enc *cuda.Buffer
}

// IsectBatch is one PARA batch of queries over resident lists (Batch).
type IsectBatch struct {
	l                  *IsectLists
	nq                 int
	ncand              int // candidates at the start: the shortest lists' total length
	maxLists           int
	qoff               []uint32 // nq+1: first candidate of each query at the start
	bufs               []*cuda.Buffer
	qmeta, lref, qoffB *cuda.Buffer
	cand, cq           [2]*cuda.Buffer
	flag, bnd, part    *cuda.Buffer
	qst                [2]*cuda.Buffer
	errs               *cuda.Buffer
}

// UploadLists copies lists (and their LR models, HS tables and encodings)
// to the device, where they stay until Free.
func (k *IntersectKernels) UploadLists(lists []IsectList) (*IsectLists, error) {
	r := &IsectLists{k: k, lens: make([]int, len(lists))}
	meta := make([]uint32, IsectListWords*max(len(lists), 1))
	var nvals, nptr, nenc int
	for i := range lists {
		l := &lists[i]
		r.lens[i] = len(l.Docs)
		w := meta[IsectListWords*i:]
		put64(w[0:], uint64(nvals))
		w[2] = count32("list length", len(l.Docs))
		put64(w[4:], l.LR.Gamma)
		put64(w[6:], uint64(l.LR.Beta))
		w[8], w[9] = l.LR.L, l.LR.R
		w[10], w[11] = uint32(l.HS.Shift), count32("HS buckets", l.HS.Buckets())
		put64(w[12:], uint64(nptr))
		put64(w[14:], uint64(nenc))
		w[16] = count32("encoding bytes", len(l.Enc))
		nvals += len(l.Docs)
		nptr += len(l.HS.Ptr)
		nenc += (len(l.Enc) + 7) &^ 7
		if len(l.Enc) > 0 {
			r.hasEnc = true
		}
	}
	vals := make([]uint32, 0, nvals+1)
	ptrs := make([]uint32, 0, nptr+1)
	enc := make([]uint32, nenc/4+2) // +8 bytes: slot reads fetch the next word
	nenc = 0
	for i := range lists {
		vals = append(vals, lists[i].Docs...)
		ptrs = append(ptrs, lists[i].HS.Ptr...)
		e := lists[i].Enc
		for j := 0; j < len(e); j += 4 {
			var v uint32
			for t := 0; t < 4 && j+t < len(e); t++ {
				v |= uint32(e[j+t]) << (8 * t)
			}
			enc[(nenc+j)/4] = v
		}
		nenc += (len(e) + 7) &^ 7
	}
	for _, u := range []struct {
		dst **cuda.Buffer
		v   []uint32
	}{{&r.lists, meta}, {&r.vals, vals}, {&r.hsptr, ptrs}, {&r.enc, enc}} {
		buf, err := k.c.Alloc(4 * max(len(u.v), 1))
		if err == nil {
			r.bufs = append(r.bufs, buf)
			*u.dst = buf
			if len(u.v) > 0 {
				err = cuda.CopyToDevice(buf, 0, u.v)
			}
		}
		if err != nil {
			r.Free()
			return nil, fmt.Errorf("cuda: uploading intersection lists: %w", err)
		}
	}
	return r, nil
}

// Free releases the lists' device memory (batches over them must be freed
// first).
func (r *IsectLists) Free() {
	for _, buf := range r.bufs {
		_ = buf.Free()
	}
	r.bufs = nil
}

// Batch uploads a batch of queries over the resident lists, queries[q] the
// indices of query q's lists. A query's lists are intersected shortest
// first (stable by length); a query with no lists has no results. Its
// buffers come from the context's pool and return there on Free.
func (r *IsectLists) Batch(queries [][]int) (*IsectBatch, error) {
	if r.bufs == nil {
		panic("BUG: cuda.IsectLists.Batch after Free")
	}
	b := &IsectBatch{l: r, nq: len(queries), qoff: make([]uint32, len(queries)+1)}
	qmeta := make([]uint32, 2*len(queries))
	var lref []uint32
	var ord []int
	for q, ids := range queries {
		ord = append(ord[:0], ids...)
		for i := 1; i < len(ord); i++ { // stable insertion sort by length
			for j := i; j > 0 && r.lens[ord[j-1]] > r.lens[ord[j]]; j-- {
				ord[j-1], ord[j] = ord[j], ord[j-1]
			}
		}
		qmeta[2*q], qmeta[2*q+1] = uint32(len(lref)), uint32(len(ord))
		for _, id := range ord {
			if id < 0 || id >= len(r.lens) {
				panic(fmt.Sprintf("BUG: cuda.IsectLists.Batch: query %d references list %d of %d", q, id, len(r.lens)))
			}
			lref = append(lref, uint32(id))
		}
		short := 0
		if len(ord) > 0 {
			short = r.lens[ord[0]]
		}
		b.qoff[q+1] = count32("batch candidates", int(b.qoff[q])+short)
		b.maxLists = max(b.maxLists, len(ord))
	}
	b.ncand = int(b.qoff[len(queries)])
	n := b.ncand
	pool := r.k.c.Pool()
	for _, u := range []struct {
		dst **cuda.Buffer
		v   []uint32
		n   int
	}{
		{&b.qmeta, qmeta, 0}, {&b.lref, lref, 0}, {&b.qoffB, b.qoff, 0},
		{&b.cand[0], nil, n}, {&b.cand[1], nil, n}, {&b.cq[0], nil, n}, {&b.cq[1], nil, n},
		{&b.flag, nil, n + 1}, {&b.bnd, nil, n}, {&b.part, nil, ScanParts(n) + 1},
		{&b.qst[0], nil, b.nq + 1}, {&b.qst[1], nil, b.nq + 1}, {&b.errs, nil, 1},
	} {
		buf, err := pool.Get(4 * max(u.n, len(u.v), 1))
		if err == nil {
			b.bufs = append(b.bufs, buf)
			*u.dst = buf
			if len(u.v) > 0 {
				err = cuda.CopyToDevice(buf, 0, u.v)
			}
		}
		if err != nil {
			b.Free()
			return nil, fmt.Errorf("cuda: uploading an intersection batch: %w", err)
		}
	}
	return b, nil
}

// Queries is the number of queries of the batch; Candidates the total
// length of their shortest lists (the PARA "computational effort" that the
// threshold c bounds, §4.1).
func (b *IsectBatch) Queries() int    { return b.nq }
func (b *IsectBatch) Candidates() int { return b.ncand }

// Free returns the batch's buffers to the pool.
func (b *IsectBatch) Free() {
	for _, buf := range b.bufs {
		_ = buf.Free()
	}
	b.bufs = nil
}

// ErrIsectCorrupt is wrapped when a kernel read an encoded slot above its
// piece's span (a corrupt LRC-family encoding).
var ErrIsectCorrupt = fmt.Errorf("cuda: intersection: %w", compress.ErrCorrupt)

// Run intersects every query of the batch with algo (levels: PMF's 1..4
// recursive levels, ignored otherwise) and returns the results appended to
// res[:0], query q's at res[off[q]:off[q+1]] ascending (off appended to
// off[:0], nq+1 entries). It waits for the device.
func (b *IsectBatch) Run(algo IsectAlgo, levels int, res, off []uint32) ([]uint32, []uint32, error) {
	if b.bufs == nil {
		panic("BUG: cuda.IsectBatch.Run after Free")
	}
	if algo == IsectPMF && (levels < 1 || levels > intersect.PMFMaxLevels) {
		panic(fmt.Sprintf("BUG: cuda.IsectBatch.Run: PMF levels %d outside 1..%d", levels, intersect.PMFMaxLevels))
	}
	if algo > IsectHSLRC {
		panic(fmt.Sprintf("BUG: cuda.IsectBatch.Run: %v", algo))
	}
	r := b.l
	if algo >= IsectLRC && !r.hasEnc && b.maxLists > 1 {
		return res[:0], off[:0], errors.New("cuda: intersection: the batch has no encoded lists for " + algo.String())
	}
	k := r.k
	n := b.ncand
	cur := 0
	var s *cuda.Stream
	if err := s.CopyDevice(b.qst[0], 0, b.qoffB, 0, 4*(b.nq+1)); err != nil {
		return res[:0], off[:0], err
	}
	if err := s.Fill32(b.errs, 0, 0, 1); err != nil {
		return res[:0], off[:0], err
	}
	if n > 0 {
		if err := launch(k.init, gridFor(n, queryThreads), s, &IsectInitParams{QOff: bufPtr(b.qoffB), NQ: uint32(b.nq),
			QMeta: bufPtr(b.qmeta), LRef: bufPtr(b.lref), Lists: bufPtr(r.lists), Vals: bufPtr(r.vals), N: uint32(n),
			Cand: bufPtr(b.cand[0]), CQ: bufPtr(b.cq[0])}); err != nil {
			return res[:0], off[:0], err
		}
	}
	var cnt [1]uint32
	for j := 1; j < b.maxLists && n > 0; j++ {
		stride := uint32(1)
		if algo == IsectPMF {
			for range levels {
				stride *= intersect.PMFFanout
			}
			parent := uint32(0)
			for ; stride >= intersect.PMFFanout; stride /= intersect.PMFFanout {
				if err := launch(k.split, gridFor(n, queryThreads), s, &IsectSplitParams{J: uint32(j), Stride: stride,
					Parent: parent, N: uint32(n), Cand: bufPtr(b.cand[cur]), CQ: bufPtr(b.cq[cur]), QStart: bufPtr(b.qst[cur]),
					QMeta: bufPtr(b.qmeta), LRef: bufPtr(b.lref), Lists: bufPtr(r.lists), Vals: bufPtr(r.vals), Bnd: bufPtr(b.bnd)}); err != nil {
					return res[:0], off[:0], err
				}
				parent = stride
			}
			stride = parent // the last level's: PMFFanout
		}
		if err := launch(k.search, gridFor(n, queryThreads), s, &IsectSearchParams{Algo: uint32(algo), J: uint32(j),
			Stride: stride, N: uint32(n), Cand: bufPtr(b.cand[cur]), CQ: bufPtr(b.cq[cur]), QStart: bufPtr(b.qst[cur]),
			QMeta: bufPtr(b.qmeta), LRef: bufPtr(b.lref), Lists: bufPtr(r.lists), Vals: bufPtr(r.vals), HSPtr: bufPtr(r.hsptr),
			Enc: bufPtr(r.enc), Bnd: bufPtr(b.bnd), Flag: bufPtr(b.flag), Errs: bufPtr(b.errs)}); err != nil {
			return res[:0], off[:0], err
		}
		if err := k.q.ScanU32(s, b.flag.Ptr(), b.flag.Ptr(), b.part.Ptr(), n); err != nil {
			return res[:0], off[:0], err
		}
		if err := launch(k.compact, gridFor(n, queryThreads), s, &IsectCompactParams{N: uint32(n), Pos: bufPtr(b.flag),
			Cand: bufPtr(b.cand[cur]), CQ: bufPtr(b.cq[cur]), NCand: bufPtr(b.cand[1-cur]), NCQ: bufPtr(b.cq[1-cur])}); err != nil {
			return res[:0], off[:0], err
		}
		if err := launch(k.qstart, gridFor(b.nq+1, queryThreads), s, &IsectQStartParams{NQ: uint32(b.nq), QStart: bufPtr(b.qst[cur]),
			Pos: bufPtr(b.flag), NQStart: bufPtr(b.qst[1-cur])}); err != nil {
			return res[:0], off[:0], err
		}
		if err := cuda.CopyFromDevice(cnt[:], b.flag, 4*n); err != nil {
			return res[:0], off[:0], err
		}
		cur = 1 - cur
		n = int(cnt[0])
	}
	if err := cuda.CopyFromDevice(cnt[:], b.errs, 0); err != nil {
		return res[:0], off[:0], err
	}
	if cnt[0] != 0 {
		return res[:0], off[:0], fmt.Errorf("%w: %d slots above their span (%v)", ErrIsectCorrupt, cnt[0], algo)
	}
	res = grow(res, n)
	off = grow(off, b.nq+1)
	if n > 0 {
		if err := cuda.CopyFromDevice(res, b.cand[cur], 0); err != nil {
			return res[:0], off[:0], err
		}
	}
	if err := cuda.CopyFromDevice(off, b.qst[cur], 0); err != nil {
		return res[:0], off[:0], err
	}
	return res, off, nil
}

// grow returns s[:n], reallocated when its capacity is smaller.
func grow(s []uint32, n int) []uint32 {
	if cap(s) < n {
		return make([]uint32, n)
	}
	return s[:n]
}
