package kern

import (
	"errors"
	"fmt"
	"math"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
)

// Batch decoding of index blocks on the GPU, every codec of package compress:
// kernels/decode.cuh (the warp-per-block framework) and one kernel family
// per codec in kernels/<codec>.cu. One launch decodes any number of index
// blocks of any number of posting lists, all of one codec; block i is one
// compress encoding of at most MaxBlockValues values (index.List.DocBlock or
// FreqBlock) and decodes into absolute docIDs (Docs) or term frequencies
// (Freqs) exactly as index.List.DecodeDocs / DecodeFreqs do on the CPU, bit
// for bit; corrupt blocks are rejected where the CPU rejects them.

// Mode selects what a batch decoding kernel writes.
type Mode uint32

const (
	// Docs writes absolute docIDs: the prefix sum of the d-gaps from the
	// block base for General codecs, value + base for Sorted codecs; the
	// last docID is checked against DecodeArgs.Last when it is given.
	Docs Mode = 0
	// Freqs writes term frequencies: value + 1 for General codecs, the
	// differences of the prefix sums plus 1 for Sorted codecs.
	Freqs Mode = 1
)

func (m Mode) String() string {
	switch m {
	case Docs:
		return "docs"
	case Freqs:
		return "freqs"
	}
	return fmt.Sprintf("Mode(%d)", uint32(m))
}

// MaxBlockValues is the longest block (in values) every batch decoder takes:
// the index's default block size. A longer block is reported as a
// BlockError wrapping ErrUnsupported, not as corrupt, unless the codec's
// decoder takes longer blocks (MaxBlock).
const MaxBlockValues = 128

// maxSegValues is the longest block of a codec whose kernel decodes long
// blocks as segments of 128 (decode.cuh kMaxSegValues; index.Open's block
// size limit).
const maxSegValues = 1 << 16

// segmented gives the longest block of the codecs whose kernels decode blocks of more than MaxBlockValues values (decode.cuh
// kSeg, kMaxM).
var segmented = map[compress.ID]int{
	compress.IDBP128:    maxSegValues,
	compress.IDVByte:    maxSegValues,
	compress.IDLRC:      maxSegValues,
	compress.IDParaPFor: maxSegValues,
	compress.IDLRCSeg:   256, // the LRC form, byte for byte, up to 256 values
	compress.IDSegLRC:   256,
}

// MaxBlock returns the longest block, in values, that the GPU decodes for
// the codec (0: no GPU decoder): MaxBlockValues, or more for codecs whose
// kernel walks a long block in segments of 128 values (bp128, vbyte, lrc,
// parapfor:
// 2^16, the index's largest block size; lrcseg, seglrc: 256). An index whose block size exceeds it must be
// decoded on the CPU.
func MaxBlock(id compress.ID) int {
	if _, ok := decodeKernels[id]; !ok {
		return 0
	}
	if n, ok := segmented[id]; ok {
		return n
	}
	return MaxBlockValues
}

// decodeWarps is the number of warps per CTA of every qp_decode_* kernel
// (the WPC of QP_DECODE_KERNEL).
const decodeWarps = 8

// codeTooLong is the status code of an unsupported block (decode.cuh
// kTooLong).
const codeTooLong = 7

// decodeReasons names the status codes of decode.cuh.
var decodeReasons = [...]string{
	1:  "count header does not match the block length",
	2:  "bit width, selector or parameter out of range",
	3:  "truncated block",
	4:  "trailing bytes after the block",
	5:  "nonzero padding or unused bits",
	6:  "last docID differs from the skip table",
	7:  "unsupported by the GPU decoder: more values than it takes (cuda.MaxBlock), or 256 MiB or more",
	8:  "value out of range",
	9:  "exception position or high part out of range",
	10: "values decrease",
	11: "inconsistent unary, upper-bits or bucket structure",
}

// decodeKernel is one batch decoding kernel.
type decodeKernel struct {
	name   string // kernel name in the fatbin
	id     compress.ID
	sorted bool
}

// decodeKernels maps every codec to its kernel (one per codec: the
// candidate kernels measured on 2026-11-22 were promoted or removed,
// docs/GPU-DECODE.md). LRCSeg and SegLRC encode
// blocks of at most 256 values byte for byte like LRC, so the LRC kernel
// decodes all three (compiled for at most 256 values for those two).
var decodeKernels = map[compress.ID]decodeKernel{
	compress.IDVByte:     {"qp_decode_vbyte", compress.IDVByte, false},
	compress.IDBP128:     {"qp_decode_bp128", compress.IDBP128, false},
	compress.IDSimple8b:  {"qp_decode_simple8b", compress.IDSimple8b, false},
	compress.IDPForDelta: {"qp_decode_pfordelta", compress.IDPForDelta, false},
	compress.IDParaPFor:  {"qp_decode_parapfor", compress.IDParaPFor, false},
	compress.IDRice:      {"qp_decode_rice", compress.IDRice, false},
	compress.IDEliasFano: {"qp_decode_eliasfano", compress.IDEliasFano, true},
	compress.IDLRC:       {"qp_decode_lrc", compress.IDLRC, true},
	compress.IDLRCSeg:    {"qp_decode_lrc256", compress.IDLRCSeg, true},
	compress.IDSegLRC:    {"qp_decode_lrc256", compress.IDSegLRC, true},
	compress.IDHSLRC:     {"qp_decode_hslrc", compress.IDHSLRC, true},
}

// Supported reports whether the GPU decodes blocks of the codec.
func Supported(id compress.ID) bool {
	_, ok := decodeKernels[id]
	return ok
}

// DecodeStatusError interprets the status word of a qp_decode_* launch for
// the codec: nil when every block decoded, else a *BlockError for the
// lowest rejected block.
func DecodeStatusError(codec string, status uint64) error {
	if status == math.MaxUint64 {
		return nil
	}
	return blockError(codec, int(status>>8), int(status&0xff))
}

func blockError(codec string, block, code int) *BlockError {
	reason := fmt.Sprintf("unknown status code %d", code)
	if code < len(decodeReasons) && decodeReasons[code] != "" {
		reason = decodeReasons[code]
	}
	return &BlockError{Codec: codec, Block: block, Code: code, Reason: reason}
}

// DecodeArgs are the device buffers of one batch decoding launch over
// NBlocks blocks. The caller guarantees what the kernel cannot check:
//
//   - SrcOff holds NBlocks+1 non-decreasing uint64 byte offsets into Src,
//     the last <= Src.Len(); block i is Src[SrcOff[i]:SrcOff[i+1]].
//   - OutOff holds NBlocks+1 non-decreasing uint64 value offsets into Out,
//     the last <= Out.Len()/4; block i decodes OutOff[i+1]-OutOff[i] values
//     into Out[OutOff[i]:OutOff[i+1]]. Blocks whose output offset is a
//     multiple of 4 are written with 16-byte stores (faster).
//   - Base holds NBlocks uint32 block bases (index.List.BlockBase); it may
//     be nil in Freqs mode.
//   - Last is nil or (Docs only) holds NBlocks uint32 expected last docIDs
//     (index.List.LastDoc), checked like DecodeDocs does.
//   - Codes is nil or holds NBlocks uint32: block i's status code (0 when
//     it decoded) is written to Codes[i].
//   - Status holds one uint64; the launch sets it to all ones first, and
//     DecodeStatusError reads it after the stream has passed the launch.
//
// Src must be 16-byte aligned and readable up to Src.Len() rounded up to a
// multiple of 16 (the kernels read the aligned 16-byte chunks that hold a
// block): true of every pooled buffer, and of an Alloc'ed one whose size is
// a multiple of 16. The other buffers must be aligned to their element
// size. Outputs at 16-byte aligned addresses are written with 16-byte
// stores.
type DecodeArgs struct {
	NBlocks                                             int
	Mode                                                Mode
	Src, SrcOff, OutOff, Base, Last, Codes, Out, Status *cuda.Buffer

	// Chunk forces the blocks per warp chunk, 1..32 (tests, benchmarks);
	// 0: the kernel's choice.
	Chunk int
}

// LaunchDecode enqueues the decoding of a.NBlocks blocks of the codec on s
// (nil: the legacy default stream): a Fill32 of a.Status, then one launch
// of a persistent grid (as many CTAs of 256 threads as fit on the GPU at
// once, fewer for small batches). It does not wait. Buffer sizes that
// cannot hold NBlocks entries are a programmer bug (panic); an unsupported
// codec is an error.
func (k *Kernels) LaunchDecode(s *cuda.Stream, id compress.ID, a DecodeArgs) error {
	dk, ok := decodeKernels[id]
	if !ok {
		return fmt.Errorf("cuda: no GPU decoder for codec ID %d", id)
	}
	return k.launchDecode(s, k.fn(dk.name), a)
}

func (k *Kernels) launchDecode(s *cuda.Stream, f *cuda.Function, a DecodeArgs) error {
	n := a.NBlocks
	if n < 0 || n > math.MaxInt32 {
		panic(fmt.Sprintf("BUG: cuda.LaunchDecode of %d blocks (max %d per launch)", n, math.MaxInt32))
	}
	need := func(what string, b *cuda.Buffer, bytes int) {
		if b == nil || b.Len() < bytes {
			panic(fmt.Sprintf("BUG: cuda.LaunchDecode: %s buffer smaller than %d bytes", what, bytes))
		}
	}
	need("SrcOff", a.SrcOff, 8*(n+1))
	need("OutOff", a.OutOff, 8*(n+1))
	need("Status", a.Status, 8)
	need("Src", a.Src, 0)
	need("Out", a.Out, 0)
	switch a.Mode {
	case Docs:
		need("Base", a.Base, 4*n)
		if a.Last != nil {
			need("Last", a.Last, 4*n)
		}
	case Freqs:
		if a.Last != nil {
			panic("BUG: cuda.LaunchDecode: Last given in Freqs mode")
		}
	default:
		panic(fmt.Sprintf("BUG: cuda.LaunchDecode: mode %d", a.Mode))
	}
	if a.Codes != nil {
		need("Codes", a.Codes, 4*n)
	}
	if (a.Src.Len()+15)&^15 > a.Src.Cap() {
		panic(fmt.Sprintf("BUG: cuda.LaunchDecode: Src of %d bytes is not readable up to a multiple of 16 (cap %d)", a.Src.Len(), a.Src.Cap()))
	}
	for _, al := range []struct {
		what  string
		b     *cuda.Buffer
		align cuda.DevicePtr
	}{{"Src", a.Src, 16}, {"SrcOff", a.SrcOff, 8}, {"OutOff", a.OutOff, 8}, {"Base", a.Base, 4},
		{"Last", a.Last, 4}, {"Codes", a.Codes, 4}, {"Out", a.Out, 4}, {"Status", a.Status, 8}} {
		if al.b != nil && al.b.Ptr()%al.align != 0 {
			panic(fmt.Sprintf("BUG: cuda.LaunchDecode: %s at %#x is not %d-byte aligned", al.what, al.b.Ptr(), al.align))
		}
	}
	if err := s.Fill32(a.Status, 0, math.MaxUint32, 2); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return k.enqueueDecode(s, f, a)
}

// enqueueDecode launches f over a's blocks: a persistent grid of at most
// as many CTAs as fit on the GPU at once. No checks, no status reset.
func (k *Kernels) enqueueDecode(s *cuda.Stream, f *cuda.Function, a DecodeArgs) error {
	n := a.NBlocks
	grid := (n + decodeWarps - 1) / decodeWarps
	if most := k.Context().Device().SMs * k.ResidentCTAs(f, 32*decodeWarps); grid > most {
		grid = most
	}
	return cuda.LaunchFields(f, cuda.Dim3{X: uint32(grid), Y: 1, Z: 1}, cuda.Dim3{X: 32 * decodeWarps, Y: 1, Z: 1}, 0, s,
		&DecodeParams{Src: bufPtr(a.Src), SrcOff: bufPtr(a.SrcOff), OutOff: bufPtr(a.OutOff), Base: bufPtr(a.Base),
			Last: bufPtr(a.Last), Out: bufPtr(a.Out), Status: bufPtr(a.Status), Codes: bufPtr(a.Codes), NBlocks: uint32(n),
			Mode: uint32(a.Mode) | uint32(a.Chunk)<<8})
}

// DecodeKernel is one decoding kernel launched as LaunchDecode (or
// LaunchBP128Docs) launches it but without their checks and status reset:
// benchmarks time the kernel alone (bench/decode).
type DecodeKernel struct {
	k        *Kernels
	f        *cuda.Function
	baseline bool
}

// DecodeKernel returns the kernel of codec id in mode; variant "" is the
// codec's kernel, "bp128-baseline" the first BP128 kernel (qp_bp128_docs,
// docIDs only).
func (k *Kernels) DecodeKernel(id compress.ID, variant string, mode Mode) (DecodeKernel, error) {
	switch variant {
	case "":
		dk, ok := decodeKernels[id]
		if !ok {
			return DecodeKernel{}, fmt.Errorf("cuda: no GPU decoder for codec ID %d", id)
		}
		return DecodeKernel{k: k, f: k.fn(dk.name)}, nil
	case "bp128-baseline":
		if id != compress.IDBP128 || mode != Docs {
			return DecodeKernel{}, errors.New("cuda: the baseline kernel decodes bp128 docIDs only")
		}
		return DecodeKernel{k: k, f: k.fn("qp_bp128_docs"), baseline: true}, nil
	}
	return DecodeKernel{}, fmt.Errorf("cuda: no kernel %q for codec ID %d", variant, id)
}

// Name is the kernel's name.
func (d DecodeKernel) Name() string { return d.f.Name() }

// Baseline says whether d is the BP128 baseline (its status words read
// with BP128StatusError, not DecodeStatusError).
func (d DecodeKernel) Baseline() bool { return d.baseline }

// Enqueue launches d over a's blocks on s; a.Last and a.Codes must be nil
// (and a.Base nil in Freqs mode). The caller has checked the buffers and
// set a.Status to all ones; d does neither.
func (d DecodeKernel) Enqueue(s *cuda.Stream, a DecodeArgs) error {
	if a.NBlocks <= 0 {
		return nil
	}
	if d.baseline {
		return launchBP128Docs(d.f, s, &BP128DocsParams{Src: bufPtr(a.Src), SrcOff: bufPtr(a.SrcOff),
			OutOff: bufPtr(a.OutOff), Base: bufPtr(a.Base), Out: bufPtr(a.Out), Status: bufPtr(a.Status)}, a.NBlocks)
	}
	return d.k.enqueueDecode(s, d.f, a)
}

// Batch is a host-side batch of encoded blocks of one codec, possibly of
// many posting lists: block i is Src[SrcOff[i]:SrcOff[i+1]], holds
// OutOff[i+1]-OutOff[i] values, decodes from base Base[i] (Docs) and, when
// Last is not nil, must end at docID Last[i]. The zero value is an empty
// batch; Add appends blocks.
type Batch struct {
	Src    []byte
	SrcOff []uint64 // len NBlocks()+1 (or 0 when empty)
	OutOff []uint64 // len NBlocks()+1 (or 0 when empty)
	Base   []uint32
	Last   []uint32 // nil, or len NBlocks()
}

// NBlocks is the number of blocks in the batch.
func (b *Batch) NBlocks() int { return len(b.Base) }

// Add appends one encoded block of count values decoding from base (its
// output follows the previous block's).
func (b *Batch) Add(block []byte, count int, base uint32) {
	if len(b.SrcOff) == 0 {
		b.SrcOff = append(b.SrcOff, uint64(len(b.Src)))
		b.OutOff = append(b.OutOff, 0)
	}
	b.Src = append(b.Src, block...)
	b.SrcOff = append(b.SrcOff, uint64(len(b.Src)))
	b.OutOff = append(b.OutOff, b.OutOff[len(b.OutOff)-1]+uint64(count))
	b.Base = append(b.Base, base)
}

// Values is the number of values the batch decodes to (OutOff[n]).
func (b *Batch) Values() int {
	if len(b.OutOff) == 0 {
		return 0
	}
	return int(b.OutOff[len(b.OutOff)-1])
}

// validate checks the host-side contract of the kernels.
func (b *Batch) validate() error {
	n := len(b.Base)
	if n == 0 {
		return nil
	}
	if len(b.SrcOff) != n+1 || len(b.OutOff) != n+1 || (b.Last != nil && len(b.Last) != n) {
		return fmt.Errorf("cuda: batch of %d blocks with %d source offsets, %d output offsets, %d last docIDs",
			n, len(b.SrcOff), len(b.OutOff), len(b.Last))
	}
	for i := 0; i < n; i++ {
		if b.SrcOff[i] > b.SrcOff[i+1] || b.OutOff[i] > b.OutOff[i+1] {
			return fmt.Errorf("cuda: batch offsets of block %d decrease", i)
		}
	}
	if b.SrcOff[n] > uint64(len(b.Src)) {
		return fmt.Errorf("cuda: batch source offset %d beyond its %d bytes", b.SrcOff[n], len(b.Src))
	}
	if b.OutOff[n]-b.OutOff[0] > math.MaxInt32 {
		return fmt.Errorf("cuda: batch of %d values is too large for one call", b.OutOff[n]-b.OutOff[0])
	}
	return nil
}

// DecodeBlocks decodes every block of b, encoded with codec, on c's GPU into
// out[b.OutOff[0]:b.OutOff[n]] (out must be that long) and returns nil when
// all blocks decoded, or a *BlockError for the lowest rejected block
// (wrapping compress.ErrCorrupt, or ErrUnsupported for a block the GPU does
// not take), in which case out's contents are unspecified. It is the
// synchronous convenience path: it uploads the batch into pooled buffers,
// launches on the legacy default stream and downloads the result. In Freqs
// mode b.Base and b.Last are ignored. The error matches ErrOutOfMemory when
// the device is full.
func DecodeBlocks(c *cuda.Context, codec compress.Codec, b *Batch, mode Mode, out []uint32) error {
	dk, ok := decodeKernels[codec.ID()]
	if !ok {
		return fmt.Errorf("cuda: no GPU decoder for codec %s", codec.Name())
	}
	return decodeBlocks(c, dk.name, codec.Name(), b, mode, out, decodeOpts{})
}

// decodeOpts are the test hooks of decodeBlocks.
type decodeOpts struct {
	codes  []uint32 // when not nil (len NBlocks): every block's status code
	poison uint32   // when not 0: the device output is filled with it first
	chunk  int      // blocks per warp chunk (DecodeArgs.chunk)
}

// decodeBlocks is DecodeBlocks with kernel kname and the test hooks of o:
// stale memory of a pooled buffer cannot pass for output, and the chunk
// size, which the kernel otherwise derives from the batch size, can be set.
func decodeBlocks(c *cuda.Context, kname, codec string, b *Batch, mode Mode, out []uint32, o decodeOpts) error {
	codes, poison := o.codes, o.poison
	if err := b.validate(); err != nil {
		return err
	}
	n := b.NBlocks()
	if n == 0 {
		return nil
	}
	first, total := b.OutOff[0], b.OutOff[n]-b.OutOff[0]
	if uint64(len(out)) < b.OutOff[n] {
		return fmt.Errorf("cuda: DecodeBlocks: output of %d values, need %d", len(out), b.OutOff[n])
	}
	if codes != nil && len(codes) != n {
		panic("BUG: cuda.decodeBlocks: codes of the wrong length")
	}
	k, err := Load(c)
	if err != nil {
		return err
	}
	f, err := k.fb.Function(kname)
	if err != nil {
		return err
	}
	outOff := b.OutOff
	if first != 0 {
		outOff = make([]uint64, n+1)
		for i, o := range b.OutOff {
			outOff[i] = o - first
		}
	}
	var status [1]uint64
	err = c.Do(func() error {
		a := DecodeArgs{NBlocks: n, Mode: mode, Chunk: o.chunk}
		var bufs pooled
		defer bufs.free()
		if err := bufs.stage(c, &a, b, outOff, int(total), codes != nil); err != nil {
			return err
		}
		if poison != 0 {
			if err := (*cuda.Stream)(nil).Fill32(a.Out, 0, poison, int(total)); err != nil {
				return err
			}
		}
		if err := k.launchDecode(nil, f, a); err != nil {
			return err
		}
		// Synchronous copies on the legacy default stream wait for the launch.
		if err := cuda.CopyFromDevice(status[:], a.Status, 0); err != nil {
			return err
		}
		if codes != nil {
			if err := cuda.CopyFromDevice(codes, a.Codes, 0); err != nil {
				return err
			}
		}
		if status[0] != math.MaxUint64 && codes == nil {
			return nil
		}
		return cuda.CopyFromDevice(out[first:b.OutOff[n]], a.Out, 0)
	})
	if err != nil {
		return err
	}
	return DecodeStatusError(codec, status[0])
}

// pooled are the pool buffers of one DecodeBlocks call.
type pooled []*cuda.Buffer

func (p *pooled) free() {
	for _, x := range *p {
		_ = x.Free()
	}
}

// get takes a buffer of bytes from c's pool into *dst.
func (p *pooled) get(c *cuda.Context, dst **cuda.Buffer, bytes int) error {
	x, err := c.Pool().Get(bytes)
	if err != nil {
		return err
	}
	*p = append(*p, x)
	*dst = x
	return nil
}

// stage allocates a's buffers for batch b (total values, outOff relative
// to the first; Base and Last in Docs mode, Codes when withCodes) and
// uploads the encoded blocks, offsets, bases and last docIDs.
func (p *pooled) stage(c *cuda.Context, a *DecodeArgs, b *Batch, outOff []uint64, total int, withCodes bool) error {
	n := a.NBlocks
	srcEnd := int(b.SrcOff[n])
	for _, g := range []struct {
		dst   **cuda.Buffer
		bytes int
	}{
		{&a.Src, srcEnd}, {&a.SrcOff, 8 * (n + 1)}, {&a.OutOff, 8 * (n + 1)},
		{&a.Out, 4 * total}, {&a.Status, 8},
	} {
		if err := p.get(c, g.dst, g.bytes); err != nil {
			return err
		}
	}
	for _, err := range []error{
		cuda.CopyToDevice(a.Src, 0, b.Src[:srcEnd]),
		cuda.CopyToDevice(a.SrcOff, 0, b.SrcOff),
		cuda.CopyToDevice(a.OutOff, 0, outOff),
	} {
		if err != nil {
			return err
		}
	}
	if a.Mode == Docs {
		if err := p.get(c, &a.Base, 4*n); err != nil {
			return err
		}
		if err := cuda.CopyToDevice(a.Base, 0, b.Base); err != nil {
			return err
		}
		if b.Last != nil {
			if err := p.get(c, &a.Last, 4*n); err != nil {
				return err
			}
			if err := cuda.CopyToDevice(a.Last, 0, b.Last); err != nil {
				return err
			}
		}
	}
	if withCodes {
		return p.get(c, &a.Codes, 4*n)
	}
	return nil
}
