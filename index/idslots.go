package index

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/qpengine/qp/internal/extid"
)

// MaxIDSlot is the widest slot IDSlots builds: a collection whose longest
// external id has MaxIDSlot bytes or more keeps ExternalID's table.
const MaxIDSlot = 32

// maxIDSlotsBytes bounds the table (a heap copy beside the mapped ids:
// 16-byte slots are about the size of the DOCIDS section itself); a larger
// collection keeps ExternalID's table. A variable for the tests.
var maxIDSlotsBytes = 1 << 30

// IDSlots is a copy of an index's external ids in fixed-width slots, for
// writers that print the ids of many answers (qp query's run): slot d is
// bytes [d·w, (d+1)·w) of one heap array, w a power of two (8, 16 or 32),
// the id's bytes first and its length in the slot's last byte. Looking an
// id up is one load of one cache line (slots never straddle lines), where
// ExternalID loads the id's offsets (8 bytes a document) and then its bytes
// at another place of the mapping: two dependent misses a docid once the
// searches between two lookups have evicted the table (docs/BENCHMARKS.md,
// cliq5). GCIDE's and RFC pages' ids (up to 12 bytes) take 16-byte slots:
// 2 MB and 3.3 MB.
//
// Every id is checked at build (extid.Valid, the rule the indexer applies
// and the run writer's), so a printer may skip the per-answer check
// (eval.AppendRunLine): a damaged id table is reported once, at build, as
// an error wrapping ErrCorrupt naming the document.
type IDSlots struct {
	b     []byte
	shift uint // log2 of the slot width
}

// IDSlots builds the slot table of x's external ids. It returns nil and no
// error when the longest id does not fit a slot of MaxIDSlot bytes (its
// length byte included) or the table would exceed 1 GiB: such ids are
// printed from ExternalID. The build
// reads the offsets and the ids once, in order, and checks the ids' bytes
// eight at a time where they are all printable ASCII (extid.Printable: the
// usual case), else one id at a time (extid.Valid).
func (x *Index) IDSlots() (*IDSlots, error) {
	n := x.NumDocs()
	longest, empty := 0, false
	prev := binary.LittleEndian.Uint64(x.idOffs)
	for d := range n {
		next := binary.LittleEndian.Uint64(x.idOffs[8*d+8:])
		longest = max(longest, int(next-prev)) // Open checked the order
		empty = empty || next == prev
		prev = next
	}
	shift := uint(max(bits.Len(uint(longest)), 3)) // 2^shift > longest: room for the length byte
	if longest+1 > MaxIDSlot || n<<shift > maxIDSlotsBytes {
		return nil, nil
	}
	if empty || !extid.Printable(x.idBytes) {
		for d := range n {
			if id := x.ExternalID(uint32(d)); !extid.Valid(id) {
				return nil, fmt.Errorf("index %s: %w: DOCIDS: document %d's id %q: %v", x.path, ErrCorrupt, d, id, extid.Check(id))
			}
		}
	}
	s := &IDSlots{b: make([]byte, n<<shift), shift: shift}
	for d := range n {
		a := binary.LittleEndian.Uint64(x.idOffs[8*d:])
		b := binary.LittleEndian.Uint64(x.idOffs[8*d+8:])
		slot := s.b[d<<shift : (d+1)<<shift]
		copy(slot, x.idBytes[a:b])
		slot[len(slot)-1] = byte(b - a)
	}
	return s, nil
}

// ID returns document d's external id, as ExternalID does. It does not
// allocate: the string shares the table's memory, which no one writes
// after IDSlots returns. d must be a document of the index (else it
// panics with an index out of range).
func (s *IDSlots) ID(d uint32) string {
	slot := s.b[uint(d)<<s.shift : (uint(d)+1)<<s.shift]
	return unsafe.String(&slot[0], slot[len(slot)-1])
}

// Slot returns document d's slot: Width bytes, the id's bytes first (zero
// bytes after them) and its length in the last byte. A writer that has
// Width bytes of room may copy the slot whole, in words, and keep the
// first slot[Width-1] bytes (cliq6: the run's lines). The slice shares the
// table's memory; the caller must not write it. d must be a document of
// the index (else it panics with an index out of range).
func (s *IDSlots) Slot(d uint32) []byte {
	return s.b[uint(d)<<s.shift : (uint(d)+1)<<s.shift : (uint(d)+1)<<s.shift]
}

// Width is the slots' width in bytes: a power of two from 8 to MaxIDSlot.
func (s *IDSlots) Width() int { return 1 << s.shift }

// Bytes is the table's size.
func (s *IDSlots) Bytes() int { return len(s.b) }
