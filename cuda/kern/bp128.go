package kern

import (
	"errors"
	"fmt"
	"math"

	"github.com/qpengine/qp/compress"
	"github.com/qpengine/qp/cuda"
)

// The BP128 baseline kernel, kernels/bp128.cu qp_bp128_docs: the first GPU
// decoder (one 128-thread CTA per block, one thread per value), kept to be
// measured against the batch decoders of decode.go (qp_decode_bp128 decodes
// the same blocks, and every other codec's, much faster) on the same GPU.
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

// BlockError is a block a GPU decoder rejected: the lowest-numbered such
// block of the launch. It wraps compress.ErrCorrupt, or ErrUnsupported when
// the block is valid but beyond what the kernel decodes (Code 7: more than
// MaxBlockValues values, or a block of 2 GiB or more); the caller then
// decodes it on the CPU.
type BlockError struct {
	Codec  string
	Block  int // index of the block within the launch
	Code   int // the kernel's status code
	Reason string
}

func (e *BlockError) Error() string {
	return fmt.Sprintf("cuda %s: block %d: %s", e.Codec, e.Block, e.Reason)
}

func (e *BlockError) Unwrap() error {
	if e.Code == codeTooLong {
		return ErrUnsupported
	}
	return compress.ErrCorrupt
}

// ErrUnsupported is wrapped by a BlockError for a valid block the GPU
// decoder does not handle (see BlockError).
var ErrUnsupported = errors.New("cuda: block not supported by the GPU decoder")

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
	Src, SrcOff, OutOff, Base, Last, Out, Status *cuda.Buffer
}

// LaunchBP128Docs enqueues the baseline kernel's decoding of a.NBlocks
// blocks on s (nil: the legacy default stream): a Fill32 of a.Status, then
// one launch of grid (NBlocks, 1, 1) × block (128, 1, 1). It does not wait.
// LaunchDecode with compress.IDBP128 is the fast path for the same work. Buffer sizes that
// cannot hold NBlocks entries are a programmer bug (panic).
func (k *Kernels) LaunchBP128Docs(s *cuda.Stream, a BP128Args) error {
	n := a.NBlocks
	if n < 0 || n > math.MaxInt32 {
		panic(fmt.Sprintf("BUG: cuda.LaunchBP128Docs of %d blocks (max %d per launch)", n, math.MaxInt32))
	}
	need := func(what string, b *cuda.Buffer, bytes int) {
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
	return launchBP128Docs(k.fn("qp_bp128_docs"), s, &BP128DocsParams{Src: bufPtr(a.Src), SrcOff: bufPtr(a.SrcOff),
		OutOff: bufPtr(a.OutOff), Base: bufPtr(a.Base), Last: bufPtr(a.Last), Out: bufPtr(a.Out), Status: bufPtr(a.Status)}, n)
}

// launchBP128Docs launches qp_bp128_docs with p, one CTA of
// bp128BlockValues threads per block, over n blocks.
func launchBP128Docs(f *cuda.Function, s *cuda.Stream, p *BP128DocsParams, n int) error {
	return cuda.LaunchFields(f, cuda.Dim3{X: uint32(n), Y: 1, Z: 1}, cuda.Dim3{X: bp128BlockValues, Y: 1, Z: 1}, 0, s, p)
}

// bufPtr is b's device address, 0 for a nil buffer (an optional argument).
func bufPtr(b *cuda.Buffer) cuda.DevicePtr {
	if b == nil {
		return 0
	}
	return b.Ptr()
}
