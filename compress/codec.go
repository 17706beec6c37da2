// Package compress holds the integer codecs of qp's inverted lists.
//
// A Codec encodes an array of uint32 values into bytes and back. The index
// cuts every posting list into blocks (default 128 postings) and encodes each
// block's docIDs and frequencies as one array, so a codec sees arrays of any
// length (0 included) and must be self-delimiting: the encoding records the
// number of values. Codecs of kind General take arbitrary values (the index
// feeds them d-gaps minus one and tf minus one); codecs of kind Sorted take a
// non-decreasing array (the index feeds docID minus the block base, and
// prefix sums of tf minus one), which is what Elias-Fano and the LRC family
// need for random access. A Bounded codec also has encodings without the
// count (and the sum), for readers that know them: the index's blocks
// (index/blockcode.go).
//
// Every codec has a persisted ID: an index file names its codec by that ID,
// so an ID is never reused or renumbered.
package compress

import (
	"errors"
	"fmt"
	"sort"
)

// ID is the persisted identifier of a codec. Never renumber.
type ID uint8

// Persisted codec IDs.
const (
	IDVByte     ID = 1
	IDBP128     ID = 2
	IDSimple8b  ID = 3
	IDPForDelta ID = 4
	IDParaPFor  ID = 5
	IDRice      ID = 6
	IDEliasFano ID = 7
	IDLRC       ID = 8
	IDLRCSeg    ID = 9
	IDSegLRC    ID = 10
	IDHSLRC     ID = 11
	// IDInterpolative is binary interpolative coding (interpolative.go).
	IDInterpolative ID = 12
	// IDBP128IP is bp128 with interpolative partial blocks (bp128ip.go).
	IDBP128IP ID = 13
)

// Kind says what input a codec accepts.
type Kind uint8

const (
	// General codecs take any uint32 values.
	General Kind = iota
	// Sorted codecs take non-decreasing values only (AppendEncode panics
	// otherwise: that is a programmer bug, not corrupt data).
	Sorted
)

// Codec encodes and decodes arrays of uint32.
type Codec interface {
	// ID is the codec's persisted identifier.
	ID() ID
	// Name is the codec's command-line name (lower case, e.g. "bp128").
	Name() string
	// Kind says whether the input must be non-decreasing.
	Kind() Kind
	// AppendEncode appends the encoding of vals to dst and returns the
	// extended slice. The encoding records len(vals).
	AppendEncode(dst []byte, vals []uint32) []byte
	// Decode decodes src into out and returns the number of values. It
	// returns an error wrapping ErrCorrupt when src is not a valid encoding
	// (truncated, trailing garbage where detectable, counts out of range),
	// and ErrShortBuffer when out is too small. It never panics on any
	// input and does not allocate.
	Decode(out []uint32, src []byte) (int, error)
	// Count returns the number of values recorded in src without decoding.
	Count(src []byte) (int, error)
}

// RandomAccess is implemented by codecs that fetch one value without
// decoding the whole array (bit-packed widths, Elias-Fano, LRC).
type RandomAccess interface {
	Codec
	// Get returns value i of the array encoded in src.
	Get(src []byte, i int) (uint32, error)
}

// Searcher is implemented by Sorted codecs that find the first value >= x
// without decoding the whole array (Elias-Fano skipping; the LRC family's
// safe search range, Ao et al. VLDB'11 §5.3 Algorithm 1).
type Searcher interface {
	RandomAccess
	// Search returns the smallest i >= from whose value is >= x, and that
	// value; i equals the count (and the value is 0) when there is none.
	Search(src []byte, from int, x uint32) (int, uint32, error)
}

// Bounded is implemented by General codecs that can leave out of an
// encoding what its reader knows from elsewhere. The index knows the number
// of values of every block (from the list's df, the block size and the
// block's index) and, for docID blocks, their sum too (the block's last
// docID from the skip table minus its base minus n-1; format.go), as PISA's
// block codecs do (pisa-engine/pisa, codec/block_codecs.hpp:
// interpolative_block takes a docID block's upper bound from the skip
// data). Such an encoding is not self-delimiting: it is decoded only with
// the count, and the sum, it was written with.
type Bounded interface {
	Codec
	// AppendEncodeKnownN appends an encoding of vals that does not record
	// len(vals).
	AppendEncodeKnownN(dst []byte, vals []uint32) []byte
	// DecodeKnownN decodes len(out) values from src, which must be exactly
	// one encoding of AppendEncodeKnownN (ErrCorrupt otherwise, trailing
	// bytes included). It never panics and does not allocate.
	DecodeKnownN(out []uint32, src []byte) error
	// AppendEncodeKnownSum appends an encoding of vals that records
	// neither len(vals) nor the sum of vals.
	AppendEncodeKnownSum(dst []byte, vals []uint32) []byte
	// DecodeKnownSum decodes len(out) values whose sum is sum from src,
	// which must be exactly one encoding of AppendEncodeKnownSum: an error
	// wraps ErrCorrupt when it is not (trailing bytes, nonzero padding, a
	// sum above len(out)·(2^32-1), a value above 2^32-1), and the values
	// it returns without error always add up to sum. It never panics and
	// does not allocate.
	DecodeKnownSum(out []uint32, src []byte, sum uint64) error
}

// ErrCorrupt is wrapped by every decode error caused by invalid input.
var ErrCorrupt = errors.New("corrupt encoding")

// ErrShortBuffer is returned when the output buffer cannot hold the values.
var ErrShortBuffer = errors.New("output buffer too small")

// corrupt builds an ErrCorrupt-wrapping error naming the codec.
func corrupt(codec, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", codec, ErrCorrupt, fmt.Sprintf(format, args...))
}

var (
	byID = map[ID]Codec{}
	// byIDArr is byID as an array: ByID runs for every list of every
	// query (Index.List), where a map lookup showed in profiles.
	byIDArr [256]Codec
	byName  = map[string]Codec{}
)

// register is called from each codec file's init.
func register(c Codec) {
	if _, dup := byID[c.ID()]; dup {
		panic(fmt.Sprintf("BUG: codec ID %d registered twice", c.ID()))
	}
	if _, dup := byName[c.Name()]; dup {
		panic(fmt.Sprintf("BUG: codec name %q registered twice", c.Name()))
	}
	byID[c.ID()] = c
	byIDArr[c.ID()] = c
	byName[c.Name()] = c
}

// ByID returns the codec with a persisted ID.
func ByID(id ID) (Codec, error) {
	if c := byIDArr[id]; c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("unknown codec ID %d", id)
}

// ByName returns the codec with a command-line name.
func ByName(name string) (Codec, error) {
	c, ok := byName[name]
	if !ok {
		return nil, fmt.Errorf("unknown codec %q (known: %v)", name, Names())
	}
	return c, nil
}

// All returns every registered codec in ID order.
func All() []Codec {
	out := make([]Codec, 0, len(byID))
	for _, c := range byID {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// Names returns the names of all codecs in ID order.
func Names() []string {
	var out []string
	for _, c := range All() {
		out = append(out, c.Name())
	}
	return out
}
