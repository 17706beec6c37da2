package index

// The qp index file format, version 3. All integers are little-endian.
//
//	file    = header, section*, toc, trailer
//	header  = magic "QPINDEX\x00" (8 bytes), version u32, reserved u32
//	section = payload bytes (the TOC records where each one is)
//	toc     = count u32, then per section: kind u32, offset u64, length u64, crc32c u32
//	trailer = toc offset u64, toc length u64, toc crc32c u32, magic "QPEND\x00\x00\x00" (8 bytes)
//
// Sections (each at most once, META required):
//
//	META     JSON (Meta): collection statistics, block size, BM25 parameters
//	         of the stored block maxima, analysis options.
//	DOCLENS  N × u32 document lengths (kept tokens).
//	DOCIDS   (N+1) × u64 offsets into the bytes that follow, then the
//	         external ids' bytes.
//	STORED   like DOCIDS, each entry a JSON object of stored fields (optional).
//	TERMS    count u32, then count+1 × u64 offsets into the term bytes, then
//	         the term bytes (terms in ascending byte order, so term ID =
//	         rank), padded to 8 bytes, then count × termRecord.
//	POSTINGS every list's bytes, at termRecord.Offset:
//	         nblocks × skipEntry, then the docID area, then the frequency
//	         blocks. nblocks = ceil(df / blockSize). The docID area is the
//	         docID blocks, or, when the record's flags have flagBitmap, the
//	         list's docIDs as one roaring bitmap in the portable RoaringFormatSpec
//	         serialization (github.com/RoaringBitmap/RoaringFormatSpec),
//	         bitmapBytes long.
//
//	termRecord (32 bytes) = offset u64 (into POSTINGS), cf u64, df u32,
//	         docCodec u8, freqCodec u8, flags u8, reserved u8, maxScore f32,
//	         bitmapBytes u32 (0 unless flags has flagBitmap)
//	skipEntry  (16 bytes) = lastDoc u32, docEnd u32, freqEnd u32, blockMax f32
//	         (docEnd/freqEnd: end of this block's encoding, relative to the
//	         start of the list's doc/freq area; a block starts where the
//	         previous one ends.)
//
// Block b holds postings [b*B, min((b+1)*B, df)). Its docIDs are encoded by
// the list's doc codec as an array: for General codecs v[0] = d[0] - base,
// v[i] = d[i] - d[i-1] - 1; for Sorted codecs v[i] = d[i] - base; where base
// is the previous block's lastDoc + 1 (0 for the first block). Frequencies
// (tf >= 1) are encoded as tf - 1 for General codecs and as the running sum
// of tf - 1 within the block for Sorted codecs.
//
// Blocks of compress.Bounded codecs (version 3; interpolative, bp128ip)
// record what the reader knows (blockcode.go): a docID block holds
// AppendEncodeKnownSum's encoding, neither its count n (from df and b) nor
// its values' sum (lastDoc(b) - base - (n-1): the values are d[0] - base
// and the gaps minus one, which add up to d[n-1] - base - (n-1)); a
// frequency block holds AppendEncodeKnownN's (no count). A docID block of
// one posting then takes no bytes (docEnd repeats the previous block's).
// Versions 1 and 2 stored these codecs' self-delimiting encodings; Open
// refuses such a file (ErrOldFormat, naming the fix: rebuild) rather than
// decode it wrongly. Every other codec's blocks are the same in all
// versions.
//
// Bitmap lists (version 2). A list whose flags have flagBitmap stores its
// docIDs as a roaring bitmap instead of docID blocks (the writer chooses it
// when the serialized bitmap is smaller than the blocks, WriterOptions.Bitmaps).
// Everything else is unchanged: the frequencies stay block-coded by rank
// (posting i of the list is the i-th smallest docID of the bitmap, block
// i/B), and the skip table is exactly the one of the block-coded list,
// docEnd included: docEnd then refers to the docID blocks the list would have
// with its doc codec (Index.BlockCodedList rebuilds them, for the GPU), not
// to bytes in the file. A bitmap is any valid encoding of the list's docIDs
// in the portable format (RoaringFormatSpec; which containers the writer
// chose is not part of the format: roaring v1 and v2 choose differently);
// Open verifies the encoding (roaring_format.go), its cardinality (= df), its
// docIDs (< N) and every block's last docID against the skip table, so that a
// damaged bitmap is an error wrapping ErrCorrupt and never reaches roaring's
// operations.
//
// Version 1 files (no bitmap lists; flags and bitmapBytes were reserved,
// zero) are read unchanged; this qp writes version 3.
//
// Every section's CRC-32C is verified when the index is opened.

const (
	magic         = "QPINDEX\x00"
	trailerMagic  = "QPEND\x00\x00\x00"
	formatVersion = 3
	minVersion    = 1 // the oldest version Open reads
	// boundedVersion is the first version whose blocks of compress.Bounded
	// codecs hold no count (and docID blocks no sum); older files with such
	// lists are refused (ErrOldFormat).
	boundedVersion = 3
	headerSize     = 16
	trailerSize    = 28
	termRecSize    = 32
	skipEntrySize  = 16
)

// Term record flags.
const (
	flagBitmap uint8 = 1 // the docID area is a roaring bitmap
	knownFlags       = flagBitmap
)

// Section kinds.
const (
	secMeta     uint32 = 1
	secDocLens  uint32 = 2
	secDocIDs   uint32 = 3
	secStored   uint32 = 4
	secTerms    uint32 = 5
	secPostings uint32 = 6
)

var sectionNames = map[uint32]string{
	secMeta: "META", secDocLens: "DOCLENS", secDocIDs: "DOCIDS",
	secStored: "STORED", secTerms: "TERMS", secPostings: "POSTINGS",
}

// DefaultBlockSize is the number of postings per block.
const DefaultBlockSize = 128

// MaxBlockSize is the largest number of postings per block.
const MaxBlockSize = 1 << 16

// Meta is the META section.
type Meta struct {
	Version    int     `json:"version"`
	Docs       uint64  `json:"docs"`
	Terms      uint64  `json:"terms"`
	Postings   uint64  `json:"postings"`
	Tokens     uint64  `json:"tokens"`
	AvgDL      float64 `json:"avgdl"`
	BlockSize  int     `json:"block_size"`
	DocCodec   string  `json:"doc_codec"`
	FreqCodec  string  `json:"freq_codec"`
	K1         float64 `json:"k1"`
	B          float64 `json:"b"`
	Stem       string  `json:"stem,omitempty"`
	Stopwords  string  `json:"stopwords,omitempty"`
	DocIDOrder string  `json:"docid_order,omitempty"`
	Source     string  `json:"source,omitempty"`
	// Bitmaps is the writer's BitmapMode ("off", "auto", "always"; empty in
	// version 1 files) and BitmapLists the number of lists stored as bitmaps.
	Bitmaps     string `json:"bitmaps,omitempty"`
	BitmapLists uint64 `json:"bitmap_lists,omitempty"`
	Created     string `json:"created,omitempty"`
}
