// Package ref holds trivially correct reference implementations that qp's
// real code is differentially tested against: a raw codec, a set-based
// intersection, a brute-force BM25 scorer and a full-sort top-k.
package ref

import (
	"encoding/binary"
	"fmt"
)

// Encode is the reference codec: a uint32 count, then each value as 4
// little-endian bytes.
func Encode(vals []uint32) []byte {
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(vals)))
	for _, v := range vals {
		out = binary.LittleEndian.AppendUint32(out, v)
	}
	return out
}

// Decode inverts Encode.
func Decode(src []byte) ([]uint32, error) {
	if len(src) < 4 {
		return nil, fmt.Errorf("ref: short input")
	}
	n := int(binary.LittleEndian.Uint32(src))
	if len(src) != 4+4*n {
		return nil, fmt.Errorf("ref: length %d does not match count %d", len(src), n)
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(src[4+4*i:])
	}
	return out, nil
}
