package cuda

import (
	"fmt"
	"math"

	"github.com/qpengine/qp/compress"
)

// BP128 docID decoding on the GPU: kernels/bp128.cu, kernel qp_bp128_docs.
// One launch decodes any number of index blocks of any number of posting
// lists; each block is one compress "bp128" encoding of at most 128 docID
// gaps (index.List.DocBlock), and decodes to absolute docIDs exactly as
// index.List.DecodeDocs does on the CPU.

// bp128BlockValues is the most values one encoded block may hold (the
// kernel's thread-block size).
const bp128BlockValues = 128

// bp128Reasons names the kernel's status codes (bp128.cu, enum in qp_bp128).
var bp128Reasons = [...]string{
	1: "count header does not match the block length (or the block has more than 128 values)",
	2: "bit width > 32",
	3: "truncated block",
	4: "trailing bytes after the block",
	5: "nonzero padding bits",
	6: "last docID differs from the skip table",
}

// BlockError is a corrupt block found by a GPU decoder: the lowest-numbered
// corrupt block of the launch. It wraps compress.ErrCorrupt.
type BlockError struct {
	Codec  string
	Block  int // index of the block within the launch
	Code   int // the kernel's status code
	Reason string
}

func (e *BlockError) Error() string {
	return fmt.Sprintf("cuda %s: block %d: %s", e.Codec, e.Block, e.Reason)
}

func (e *BlockError) Unwrap() error { return compress.ErrCorrupt }

// BP128StatusError interprets the status word of a qp_bp128_docs launch:
// nil when no block was corrupt, else a *BlockError.
func BP128StatusError(status uint64) error {
	if status == math.MaxUint64 {
		return nil
	}
	code := int(status & 0xff)
	reason := fmt.Sprintf("unknown status code %d", code)
	if code < len(bp128Reasons) && bp128Reasons[code] != "" {
		reason = bp128Reasons[code]
	}
	return &BlockError{Codec: "bp128", Block: int(status >> 8), Code: code, Reason: reason}
}

// BP128Args are the device buffers of one qp_bp128_docs launch over
// NBlocks blocks. The caller guarantees what the kernel cannot check:
//
//   - SrcOff holds NBlocks+1 non-decreasing uint64 byte offsets into Src,
//     the last <= Src.Len(); block i is Src[SrcOff[i]:SrcOff[i+1]].
//   - OutOff holds NBlocks+1 non-decreasing uint64 value offsets into Out,
//     the last <= Out.Len()/4; block i decodes OutOff[i+1]-OutOff[i] values
//     into Out[OutOff[i]:OutOff[i+1]] (more than 128 is reported corrupt).
//   - Base holds NBlocks uint32 block bases (index.List.BlockBase).
//   - Last is nil or holds NBlocks uint32 expected last docIDs
//     (index.List.LastDoc), checked like DecodeDocs does.
//   - Status holds one uint64; the launch sets it to all ones first, and
//     BP128StatusError reads it after the stream has passed the launch.
//
// Src must be readable up to Src.Len() rounded up to a multiple of 4 (the
// kernel loads aligned 32-bit words): true of every pooled buffer, and of an
// Alloc'ed one whose size is a multiple of 4.
type BP128Args struct {
	NBlocks                                      int
	Src, SrcOff, OutOff, Base, Last, Out, Status *Buffer
}

// LaunchBP128Docs enqueues the decoding of a.NBlocks blocks on s (nil: the
// legacy default stream): a Fill32 of a.Status, then one launch of grid
// (NBlocks, 1, 1) × block (128, 1, 1). It does not wait. Buffer sizes that
// cannot hold NBlocks entries are a programmer bug (panic).
func (k *Kernels) LaunchBP128Docs(s *Stream, a BP128Args) error {
	n := a.NBlocks
	if n < 0 || n > math.MaxInt32 {
		panic(fmt.Sprintf("BUG: cuda.LaunchBP128Docs of %d blocks (max %d per launch)", n, math.MaxInt32))
	}
	need := func(what string, b *Buffer, bytes int) {
		if b == nil || b.Len() < bytes {
			panic(fmt.Sprintf("BUG: cuda.LaunchBP128Docs: %s buffer smaller than %d bytes", what, bytes))
		}
	}
	need("SrcOff", a.SrcOff, 8*(n+1))
	need("OutOff", a.OutOff, 8*(n+1))
	need("Base", a.Base, 4*n)
	need("Status", a.Status, 8)
	need("Src", a.Src, 0)
	need("Out", a.Out, 0)
	if a.Last != nil {
		need("Last", a.Last, 4*n)
	}
	if (a.Src.Len()+3)&^3 > a.Src.Cap() {
		panic(fmt.Sprintf("BUG: cuda.LaunchBP128Docs: Src of %d bytes is not readable up to a multiple of 4 (cap %d)", a.Src.Len(), a.Src.Cap()))
	}
	if err := s.Fill32(a.Status, 0, math.MaxUint32, 2); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return k.bp128Docs.Launch(Dim3{uint32(n), 1, 1}, Dim3{bp128BlockValues, 1, 1}, 0, s,
		a.Src, a.SrcOff, a.OutOff, a.Base, a.Last, a.Out, a.Status)
}

// BP128Batch is a host-side batch of encoded BP128 docID blocks, possibly of
// many posting lists: block i is Src[SrcOff[i]:SrcOff[i+1]], holds
// OutOff[i+1]-OutOff[i] values (<= 128), decodes from base Base[i] and, when
// Last is not nil, must end at docID Last[i]. The zero value is an empty
// batch; Add appends blocks.
type BP128Batch struct {
	Src    []byte
	SrcOff []uint64 // len NBlocks()+1 (or 0 when empty)
	OutOff []uint64 // len NBlocks()+1 (or 0 when empty)
	Base   []uint32
	Last   []uint32 // nil, or len NBlocks()
}

// NBlocks is the number of blocks in the batch.
func (b *BP128Batch) NBlocks() int { return len(b.Base) }

// Add appends one encoded block of count values decoding from base (its
// output follows the previous block's).
func (b *BP128Batch) Add(block []byte, count int, base uint32) {
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
func (b *BP128Batch) Values() int {
	if len(b.OutOff) == 0 {
		return 0
	}
	return int(b.OutOff[len(b.OutOff)-1])
}

// validate checks the host-side contract of the kernel.
func (b *BP128Batch) validate() error {
	n := len(b.Base)
	if n == 0 {
		return nil
	}
	if len(b.SrcOff) != n+1 || len(b.OutOff) != n+1 || (b.Last != nil && len(b.Last) != n) {
		return fmt.Errorf("cuda: BP128 batch of %d blocks with %d source offsets, %d output offsets, %d last docIDs",
			n, len(b.SrcOff), len(b.OutOff), len(b.Last))
	}
	for i := 0; i < n; i++ {
		if b.SrcOff[i] > b.SrcOff[i+1] || b.OutOff[i] > b.OutOff[i+1] {
			return fmt.Errorf("cuda: BP128 batch offsets of block %d decrease", i)
		}
	}
	if b.SrcOff[n] > uint64(len(b.Src)) {
		return fmt.Errorf("cuda: BP128 batch source offset %d beyond its %d bytes", b.SrcOff[n], len(b.Src))
	}
	if b.OutOff[n]-b.OutOff[0] > math.MaxInt32 {
		return fmt.Errorf("cuda: BP128 batch of %d values is too large for one call", b.OutOff[n]-b.OutOff[0])
	}
	return nil
}

// DecodeBP128Blocks decodes every block of b on c's GPU into
// out[b.OutOff[0]:b.OutOff[n]] (out must be that long) and returns nil when
// all blocks are valid, or a *BlockError (wrapping compress.ErrCorrupt) for
// the lowest corrupt block, in which case out's contents are unspecified.
// It is the synchronous convenience path: it uploads the batch into pooled
// buffers, launches on the legacy default stream and downloads the result.
// The error matches ErrOutOfMemory when the device is full.
func DecodeBP128Blocks(c *Context, b *BP128Batch, out []uint32) error {
	if err := b.validate(); err != nil {
		return err
	}
	n := b.NBlocks()
	if n == 0 {
		return nil
	}
	first, total := b.OutOff[0], b.OutOff[n]-b.OutOff[0]
	if uint64(len(out)) < b.OutOff[n] {
		return fmt.Errorf("cuda: DecodeBP128Blocks: output of %d values, need %d", len(out), b.OutOff[n])
	}
	k, err := c.Kernels()
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
		a := BP128Args{NBlocks: n}
		var bufs []*Buffer
		defer func() {
			for _, x := range bufs {
				_ = x.Free()
			}
		}()
		get := func(dst **Buffer, bytes int) error {
			x, err := c.pool.Get(bytes)
			if err != nil {
				return err
			}
			bufs = append(bufs, x)
			*dst = x
			return nil
		}
		srcEnd := int(b.SrcOff[n])
		for _, g := range []struct {
			dst   **Buffer
			bytes int
		}{
			{&a.Src, srcEnd}, {&a.SrcOff, 8 * (n + 1)}, {&a.OutOff, 8 * (n + 1)},
			{&a.Base, 4 * n}, {&a.Out, 4 * int(total)}, {&a.Status, 8},
		} {
			if err := get(g.dst, g.bytes); err != nil {
				return err
			}
		}
		if b.Last != nil {
			if err := get(&a.Last, 4*n); err != nil {
				return err
			}
			if err := CopyToDevice(a.Last, 0, b.Last); err != nil {
				return err
			}
		}
		for _, err := range []error{
			CopyToDevice(a.Src, 0, b.Src[:srcEnd]),
			CopyToDevice(a.SrcOff, 0, b.SrcOff),
			CopyToDevice(a.OutOff, 0, outOff),
			CopyToDevice(a.Base, 0, b.Base),
		} {
			if err != nil {
				return err
			}
		}
		if err := k.LaunchBP128Docs(nil, a); err != nil {
			return err
		}
		// Synchronous copies on the legacy default stream wait for the launch.
		if err := CopyFromDevice(status[:], a.Status, 0); err != nil {
			return err
		}
		if status[0] != math.MaxUint64 {
			return nil
		}
		return CopyFromDevice(out[first:b.OutOff[n]], a.Out, 0)
	})
	if err != nil {
		return err
	}
	return BP128StatusError(status[0])
}
