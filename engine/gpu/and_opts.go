package gpu

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
	"github.com/qpengine/qp/intersect"
)

// AndSearches are the values of Options.AndSearch: one binary search per
// candidate in the skip table; the same inside the Linear Regression safe
// range of the skip table (Ao et al. VLDB'11 §4.3, "lr": the model of each
// list's block lastDocs, fitted on first use); or Parallel Merge Find (Ding
// et al. WWW'09 §7) with 1 to 4 levels of recursive splitting (splitters
// every 4, 32, 256 and 1024 candidates of a query,
// cuda/kernels/query_and_step.cu).
var AndSearches = []string{"binsearch", "lr", "pmf1", "pmf2", "pmf3", "pmf4"}

// andSearchLR is the levels value of the "lr" search.
const andSearchLR = -1

// andState is the Backend's AND step state: the kernels (loaded on first
// use), the Parallel Merge Find levels (0: binary search, andSearchLR: LR
// ranges), the LR models fitted so far and scratch.
type andState struct {
	k      *kern.AndKernels
	levels int
	lr     map[int][kern.AndLRWords]uint32
	// decodeFreqs decodes the frequency blocks even where random access to
	// bp128 slots could be used (tests of both paths).
	decodeFreqs bool
	order       []*prep // the set's AND queries, by descending term count
	counts      []int   // countingSort's scratch
	active      []int   // active[j]: queries with more than j terms
}

// parseAndSearch maps Options.AndSearch to a number of Parallel Merge Find
// levels (0: binary search, andSearchLR: binary search in LR ranges).
func parseAndSearch(s string) (int, error) {
	switch {
	case s == "" || s == "binsearch":
		return 0, nil
	case s == "lr":
		return andSearchLR, nil
	case strings.HasPrefix(s, "pmf"):
		if l, err := strconv.Atoi(s[3:]); err == nil && l >= 1 && l <= kern.MaxAndLevels {
			return l, nil
		}
	}
	return 0, fmt.Errorf("gpu: AndSearch %q: want one of %s", s, strings.Join(AndSearches, ", "))
}

// decodeDocs enqueues the gathering of the docID blocks listed in d (not
// their frequencies) and their decoding into d.docs; the decoder's status
// word goes to st.
func (b *Backend) decodeDocs(d *decodeBufs, nblk int, st *cuda.Buffer) error {
	s := b.stream
	if err := b.qk.Gather(s, b.terms.Ptr(), b.post.Ptr(), nblk, d.blkTerm.Ptr(), d.blkIdx.Ptr(), d.dOff.Ptr(),
		0, d.gdocs.Ptr(), 0, d.base.Ptr(), d.last.Ptr()); err != nil {
		return err
	}
	b.prof.Launches++
	return b.kern.LaunchDecode(s, b.docCodec.ID(), kern.DecodeArgs{NBlocks: nblk, Mode: kern.Docs,
		Src: d.gdocs, SrcOff: d.dOff, OutOff: d.oOff, Base: d.base, Last: d.last, Out: d.docs, Status: st})
}

// one hands out one 8-byte status view (a docID-only decoding).
func (s *statusSlots) one(b *Backend) *cuda.Buffer {
	if 8*(s.n+1) > s.buf.Len() {
		panic("BUG: gpu: too few decoder status slots")
	}
	v := cuda.BufferView(s.buf, 8*s.n, 8)
	s.n++
	s.codecs = append(s.codecs, b.docCodec.Name())
	return v
}

// andTotals copies size bytes at off of sel (the S4 totals and the
// previous step's count, AndKernels.Select's sel[n..n+2)) into the small
// arena at 0 and waits for the stream: the one synchronization of an AND
// step.
func (b *Backend) andTotals(mem *devMem, sel *cuda.Buffer, off, size int) error {
	if err := b.small.reset(size); err != nil {
		return err
	}
	if err := b.stream.CopyFromDevice(b.small.h, 0, sel, off, size); err != nil {
		return err
	}
	if err := b.sync(); err != nil {
		return err
	}
	b.prof.Syncs++
	return mem.synced()
}

// lrMinBlocks is the shortest skip table that gets an LR model; shorter
// ones are searched whole (a binary search of at most 3 steps).
const lrMinBlocks = 8

// lrModel returns the LR model (kern.PutAndLR's words) of term t's skip
// table, lrFit of its blocks' lastDocs. The models of lists of at least
// lrMinBlocks blocks are fitted on first use and kept (the host reads the
// term's skip table once; at most one entry per such term); shorter lists
// get the whole table.
func (b *Backend) lrModel(t int) ([kern.AndLRWords]uint32, error) {
	nb := int(b.info[t].nb)
	if nb < lrMinBlocks {
		return lrFit(nil, nb), nil
	}
	if m, ok := b.and.lr[t]; ok {
		return m, nil
	}
	l, err := b.x.BlockCodedList(t)
	if err != nil {
		return [kern.AndLRWords]uint32{}, fmt.Errorf("gpu: %w", err)
	}
	last := make([]uint32, l.NBlocks)
	for i := range last {
		last[i] = l.LastDoc(i)
	}
	m := lrFit(last, nb)
	if b.and.lr == nil {
		b.and.lr = make(map[int][kern.AndLRWords]uint32)
	}
	b.and.lr[t] = m
	return m, nil
}

// lrFit is the model of a skip table of nb blocks whose lastDocs are last:
// intersect.LR fitted to them, or the whole table (no lastDocs given, or a
// fit whose integers do not fit the kernel's).
func lrFit(last []uint32, nb int) [kern.AndLRWords]uint32 {
	var m [kern.AndLRWords]uint32
	kern.PutAndLR(m[:], 0, 0, 0, uint32(nb))
	if len(last) > 0 {
		f := intersect.NewLR(last)
		if f.Gamma > 0 && f.Beta >= math.MinInt32 && f.Beta <= math.MaxInt32 && f.L < uint32(nb) && f.R < uint32(nb) {
			kern.PutAndLR(m[:], uint32(f.Gamma), int32(f.Beta), f.L, f.R)
		}
	}
	return m
}
