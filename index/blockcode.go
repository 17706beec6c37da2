package index

import "github.com/qpengine/qp/compress"

// AppendDocBlock appends one docID block's values (format.go: gaps minus
// one, the first relative to the block base, or docID minus the base for
// Sorted codecs) as the index stores them. A compress.Bounded codec writes
// neither the count nor the sum (format version 3): the reader knows the
// count from the list's df and the block's index, and the sum from the skip
// table, lastDoc - base - (n-1), as PISA's block_interpolative takes it
// from its skip data (pisa-engine/pisa, codec/block_codecs.hpp). Every other
// codec writes its self-delimiting encoding.
func AppendDocBlock(dst []byte, c compress.Codec, vals []uint32) []byte {
	if b, ok := c.(compress.Bounded); ok {
		return b.AppendEncodeKnownSum(dst, vals)
	}
	return c.AppendEncode(dst, vals)
}

// AppendFreqBlock appends one frequency block's values (format.go) as the
// index stores them: without the count for a compress.Bounded codec
// (format version 3; the sum stays, the skip table does not know it), else
// self-delimiting.
func AppendFreqBlock(dst []byte, c compress.Codec, vals []uint32) []byte {
	if b, ok := c.(compress.Bounded); ok {
		return b.AppendEncodeKnownN(dst, vals)
	}
	return c.AppendEncode(dst, vals)
}
