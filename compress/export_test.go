package compress

// PForDeltaUnbounded is the PForDelta codec with an encoder that picks the
// smallest encoding whatever its number of exceptions (OptPFD without
// pfdMaxExc's bound): encodings qp wrote before the bound, or a foreign
// writer may write, which the decoders must accept. Decode, Count and Get
// are PForDelta's own.
type PForDeltaUnbounded struct{ pforDeltaCodec }

// AppendEncode implements Codec.
func (PForDeltaUnbounded) AppendEncode(dst []byte, vals []uint32) []byte {
	return pfdEncode(dst, vals, false)
}
