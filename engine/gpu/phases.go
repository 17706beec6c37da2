package gpu

import (
	"math"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/cuda/kern"
)

// decodeBufs are the buffers of one pair of decoding launches (docIDs and
// frequencies of the same nblk blocks).
type decodeBufs struct {
	blkTerm, blkIdx, dOff, fOff, oOff, gdocs, gfreqs, base, last, docs, freqs *cuda.Buffer
}

func (d *decodeBufs) all() []*cuda.Buffer {
	if d == nil {
		return nil
	}
	return []*cuda.Buffer{d.blkTerm, d.blkIdx, d.dOff, d.fOff, d.oOff, d.gdocs, d.gfreqs, d.base, d.last, d.docs, d.freqs}
}

func allocDecode(mem *devMem, nblk, dbytes, fbytes, nval int) (*decodeBufs, error) {
	d := &decodeBufs{}
	err := mem.gets([]**cuda.Buffer{&d.blkTerm, &d.blkIdx, &d.dOff, &d.fOff, &d.oOff, &d.gdocs, &d.gfreqs,
		&d.base, &d.last, &d.docs, &d.freqs},
		4*nblk, 4*nblk, 8*(nblk+1), 8*(nblk+1), 8*(nblk+1), dbytes, fbytes, 4*nblk, 4*nblk, 4*nval, 4*nval)
	return d, err
}

// decode enqueues the gathering of the nblk blocks listed in d and their
// decoding into d.docs and d.freqs; the decoders' status words go to st
// (two views of 8 bytes).
func (b *Backend) decode(d *decodeBufs, nblk int, st [2]*cuda.Buffer) error {
	s := b.stream
	if err := b.qk.Gather(s, b.terms.Ptr(), b.post.Ptr(), nblk, d.blkTerm.Ptr(), d.blkIdx.Ptr(), d.dOff.Ptr(),
		d.fOff.Ptr(), d.gdocs.Ptr(), d.gfreqs.Ptr(), d.base.Ptr(), d.last.Ptr()); err != nil {
		return err
	}
	if err := b.kern.LaunchDecode(s, b.docCodec.ID(), kern.DecodeArgs{NBlocks: nblk, Mode: kern.Docs,
		Src: d.gdocs, SrcOff: d.dOff, OutOff: d.oOff, Base: d.base, Last: d.last, Out: d.docs, Status: st[0]}); err != nil {
		return err
	}
	b.prof.Launches += 3
	return b.kern.LaunchDecode(s, b.freqCodec.ID(), kern.DecodeArgs{NBlocks: nblk, Mode: kern.Freqs,
		Src: d.gfreqs, SrcOff: d.fOff, OutOff: d.oOff, Out: d.freqs, Status: st[1]})
}

// decodeLists enqueues the decoding of whole lists, nseg Segs at segs with
// nblk blocks in all (the descriptors of their blocks, then decode), into
// d, timed as the decode phase; the decoders' status words go to st.
func (b *Backend) decodeLists(d *decodeBufs, segs cuda.DevicePtr, nseg, nblk int, st [2]*cuda.Buffer) error {
	s := b.stream
	t := b.tm.start(s)
	if err := b.qk.FullDesc(s, segs, nseg, b.terms.Ptr(), b.post.Ptr(), nblk, b.bs, d.blkTerm.Ptr(), d.blkIdx.Ptr(),
		d.dOff.Ptr(), d.fOff.Ptr(), d.oOff.Ptr()); err != nil {
		return err
	}
	if err := b.decode(d, nblk, st); err != nil {
		return err
	}
	b.tm.stop(s, t, phDecode)
	return nil
}

// statusSlots hands out 8-byte views of a buffer for decoder status words.
type statusSlots struct {
	buf    *cuda.Buffer
	n      int
	codecs []string
}

func (s *statusSlots) pair(b *Backend) [2]*cuda.Buffer {
	if 8*(s.n+2) > s.buf.Len() {
		panic("BUG: gpu: too few decoder status slots")
	}
	v := [2]*cuda.Buffer{cuda.BufferView(s.buf, 8*s.n, 8), cuda.BufferView(s.buf, 8*s.n+8, 8)}
	s.n += 2
	s.codecs = append(s.codecs, b.docCodec.Name(), b.freqCodec.Name())
	return v
}

func pow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// querySlot is one query's place in a launch set's uploaded arrays: its
// first QTerm and first result key, and its top-k scratch offset (0 for
// k <= 4096, which needs none). querySlots computes them by prefix sums in
// one serial pass, so that workers then fill disjoint ranges.
type querySlot struct{ toff, res, scr int }

// querySlots returns the slots of qs (in *buf, reused), the result keys
// and the scratch words of the set: running sums, on up to workers
// goroutines (parallelScan, its chunk sums in *sums).
func querySlots(buf, sums *[]querySlot, workers int, qs []*prep) (slots []querySlot, nres, scratchWords int) {
	if cap(*buf) < len(qs) {
		*buf = make([]querySlot, len(qs))
	}
	slots = (*buf)[:len(qs)]
	tot := parallelScan(workers, len(qs), sums, querySlot.add, func(lo, hi int, s querySlot, write bool) querySlot {
		for a, p := range qs[lo:hi] {
			n := querySlot{toff: len(p.terms), res: p.q.K, scr: scratchOf(p.q.K)}
			if write {
				slots[lo+a] = s
				if n.scr == 0 {
					slots[lo+a].scr = 0
				}
			}
			s = s.add(n)
		}
		return s
	})
	return slots, tot.res, tot.scr
}

// add sums two slots' offsets (querySlots' running sum).
func (s querySlot) add(o querySlot) querySlot {
	return querySlot{s.toff + o.toff, s.res + o.res, s.scr + o.scr}
}

// fillQueries is fillQueriesIn on the owner's upload arena and slots
// (owner thread only).
func (b *Backend) fillQueries(qs []*prep, oMeta, oTerms, oScr int) (slots []querySlot, nres, scratchWords int) {
	return b.fillQueriesIn(&b.up, &b.slots, &b.slotSums, b.prepareWorkers(), qs, oMeta, oTerms, oScr)
}

// fillQueriesIn writes QMeta, QTerm and the top-k scratch offsets of qs
// into the arena up at the given byte offsets, on up to workers goroutines
// (each query's range from querySlots, in *slotBuf, with *sums its
// scratch); it returns the slots too, for the caller's own per-query
// arrays. It reads only immutable Backend state (the term table, the
// index's parameters): any goroutine may fill its own arena.
func (b *Backend) fillQueriesIn(up *pinned, slotBuf, sums *[]querySlot, workers int, qs []*prep, oMeta, oTerms, oScr int) (slots []querySlot, nres, scratchWords int) {
	slots, nres, scratchWords = querySlots(slotBuf, sums, workers, qs)
	b.fillQuerySlots(up, slots, workers, qs, oMeta, oTerms, oScr)
	return slots, nres, scratchWords
}

// fillQuerySlots is fillQueriesIn's fill from the slots of qs
// (querySlots).
func (b *Backend) fillQuerySlots(up *pinned, slots []querySlot, workers int, qs []*prep, oMeta, oTerms, oScr int) {
	meta := up.u32(oMeta, kern.QMetaWords*len(qs))
	exact := b.bmExact() && !b.opt.orNoPrune
	scr := up.u64(oScr, len(qs))
	parallelWorkers(workers, len(qs), 256, func(lo, hi int) { // --prepare-cores caps it too
		for a := lo; a < hi; a++ {
			p := qs[a]
			putQuery(up, meta, scr, oTerms, a, p.terms, p.q.K, slots[a], exact)
		}
	})
}

// putQuery writes the a-th query of a launch, of the given terms and k,
// whose QMetas are meta, scratch offsets scr and QTerms at byte offset
// oTerms of up, at its slot sl: its QMeta, its QTerms (their maximum
// scores with exact block maxima, else none) and its scratch offset.
func putQuery(up *pinned, meta []uint32, scr []uint64, oTerms, a int, terms []qterm, k int, sl querySlot, exact bool) {
	kern.PutQMeta(meta[kern.QMetaWords*a:], uint32(len(terms)), uint32(sl.toff), uint32(k), uint32(sl.res))
	qt := up.u32(oTerms+16*sl.toff, kern.QTermWords*len(terms))
	for j := range terms {
		t := &terms[j]
		mx := float32(math.MaxFloat32) // stale block maxima: no bound
		if exact {
			mx = t.w * t.ti.max
		}
		kern.PutQTerm(qt[kern.QTermWords*j:], uint32(t.id), t.w, t.idf, mx)
	}
	scr[a] = uint64(sl.scr)
}

// upload copies the first n bytes of the upload arena to a new device
// buffer.
func (b *Backend) upload(mem *devMem, n int) (cuda.DevicePtr, error) {
	dev, err := b.uploadFrom(mem, &b.up, 0, n, n)
	if err != nil {
		return 0, err
	}
	return dev.Ptr(), nil
}

// uploadFrom copies n bytes at offset at of the arena up to the start of a
// new device buffer of size bytes.
func (b *Backend) uploadFrom(mem *devMem, up *pinned, at, n, size int) (*cuda.Buffer, error) {
	dev, err := mem.get(size)
	if err != nil {
		return nil, err
	}
	t := b.tm.start(b.stream)
	if err := b.stream.CopyToDevice(dev, 0, up.h, at, n); err != nil {
		return nil, err
	}
	b.tm.stop(b.stream, t, phTransfer)
	return dev, nil
}

// download is one device-to-host copy of a phase's final transfer.
type download struct {
	src    *cuda.Buffer
	srcOff int // bytes into src
	n      int // bytes
	at     int // offset in the download arena
}

// fetch copies every part to the download arena and waits for the stream.
func (b *Backend) fetch(mem *devMem, parts []*download) error {
	n := placeParts(parts)
	if err := b.down.reset(n); err != nil {
		return err
	}
	return b.fetchAt(&b.down, b.down.take(n), mem, parts)
}

// placeParts lays the parts out from 0 (16-byte aligned) and returns the
// bytes they take.
func placeParts(parts []*download) int {
	var l layout
	for _, p := range parts {
		p.at = l.add(p.n)
	}
	return l.size
}

// fetchAt copies every part, placed by placeParts, to the arena a from
// its offset base on (reserved by the caller) and waits for the stream.
func (b *Backend) fetchAt(a *pinned, base int, mem *devMem, parts []*download) error {
	s := b.stream
	t := b.tm.start(s)
	for _, p := range parts {
		p.at += base
		if err := s.CopyFromDevice(a.h, p.at, p.src, p.srcOff, p.n); err != nil {
			return err
		}
	}
	b.tm.stop(s, t, phTransfer)
	if err := b.sync(); err != nil {
		return err
	}
	return mem.synced()
}
