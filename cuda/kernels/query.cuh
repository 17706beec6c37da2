// query.cuh — shared definitions of the query-processing kernels
// (cuda/kernels/query_*.cu; Go side cuda/kern/query.go, orchestration in
// engine/gpu). Included by each query_*.cu (#pragma once): `make kernels`
// compiles every cuda/kernels/*.cu as one translation unit, and the CPU
// emulator of cuda/emu compiles the same sources with g++ (QP_EMU), so these
// kernels use only what cuda/emu/emu.h emulates: full-warp intrinsics,
// __syncthreads, cub::BlockScan::InclusiveSum, atomicAdd on unsigned and
// atomicMin on unsigned long long, static shared memory.
//
// Device-resident index (uploaded once by engine/gpu.New):
//
//	post   every posting list, each at a 16-byte aligned offset: its skip
//	       table (nblocks x 16 bytes: lastDoc, docEnd, freqEnd, blockMax,
//	       index/format.go), then its encoded docID blocks, then its
//	       encoded frequency blocks, exactly as in the index file.
//	terms  TermMeta per term ID: where its three areas start in post, its
//	       number of blocks and its document frequency.
//	norms  N float32 BM25 length norms (index.Index.Norms).
//
// Per launch set the host uploads QMeta per query and QTerm per query term
// (canonical order: ascending df, ties by term ID; score/bm25.go).
//
// Exactness: a term's score is computed exactly like score.Term and
// engine's term(): f = float(tf); idf * ((f * k1p1) / (f + norm)), then
// times the query weight w, each operation rounded to float32 (explicit
// __fmul_rn/__fadd_rn/__fdiv_rn: no contraction into FMA even without
// --fmad=false), and a document's score is the float32 sum of its terms in
// canonical order starting from the first, as on the CPU. The results are
// therefore bit-identical to the CPU engine's.
#pragma once

#include <cstdint>
#ifndef QP_EMU
#include <cub/block/block_scan.cuh>
#else
#include <cstring>
#endif

#ifndef QP_EMU_REGISTER
#define QP_EMU_REGISTER(NAME)
#endif

namespace qp_q {

typedef uint32_t u32;
typedef unsigned long long u64;

// Threads per CTA of every query kernel.
constexpr u32 kThreads = 256;

// Block markers of a candidate at one AND step (any real block index is
// smaller: a list has fewer than 2^32 - 2 blocks).
constexpr u32 kPass = 0xffffffffu; // the candidate's query has no term at this step
constexpr u32 kDead = 0xfffffffeu; // no block can hold the candidate: it is not in the list

// Error counters (err[i]) set by the kernels; the host turns a nonzero one
// into an error wrapping index.ErrCorrupt.
constexpr u32 kErrDocs = 0; // decoded docIDs >= N or not increasing
constexpr u32 kErrFreqs = 1; // AND: bp128 frequency blocks read by slot that are corrupt

// kNone is the query ID of an empty AND candidate slot (query_and_step.cu):
// above every query, so searches by query stop before such slots.
constexpr u32 kNone = 0xffffffffu;

struct TermMeta { // 32 bytes; cuda/kern/layout.go TermMeta (query_params.cuh checks the layouts)
	u64 skip, doc, freq; // byte offsets in post
	u32 nb, df;          // blocks, postings
};

struct QMeta { // 16 bytes, one per query of a phase
	u32 m;    // distinct terms (canonical order)
	u32 toff; // its first QTerm
	u32 k;    // results wanted
	u32 res;  // its first result slot
};

struct QTerm { // 16 bytes
	u32 term;
	float w, idf;
	float mx; // w times the list's largest blockMax (its maximum score), FLT_MAX when unknown
};

// Seg is one whole posting list decoded in a launch (OR, and the shortest
// list of AND): its blocks are blk0 .. blk0+nb-1 of the launch, its encoded
// docs/freqs land at d0/f0 of the gathered buffers and its values at v0 of
// the decoded ones. 40 bytes.
struct Seg {
	u64 d0, f0, v0;
	u32 term, blk0;
	u32 q;  // query (row) it belongs to
	u32 qt; // its QTerm
};

// OQuery is one query of a tiled OR launch set (query_ortile.cu). 16 bytes.
struct OQuery {
	u32 seg0; // first Seg of the query
	u32 cap;  // candidate slots
	u32 coff; // first candidate slot
	u32 pad;
};

// ---- exact float32 arithmetic ----

__device__ __forceinline__ float fadd(float a, float b) {
#ifdef QP_EMU
	return a + b;
#else
	return __fadd_rn(a, b);
#endif
}
__device__ __forceinline__ float fmul(float a, float b) {
#ifdef QP_EMU
	return a * b;
#else
	return __fmul_rn(a, b);
#endif
}
__device__ __forceinline__ float fdiv(float a, float b) {
#ifdef QP_EMU
	return a / b;
#else
	return __fdiv_rn(a, b);
#endif
}
__device__ __forceinline__ float u2f(u32 v) {
#ifdef QP_EMU
	return static_cast<float>(v);
#else
	return __uint2float_rn(v);
#endif
}
__device__ __forceinline__ u32 fbits(float f) {
#ifdef QP_EMU
	u32 u;
	memcpy(&u, &f, 4);
	return u;
#else
	return __float_as_uint(f);
#endif
}
// float_of_bits is fbits' inverse.
__device__ __forceinline__ float float_of_bits(u32 b) {
#ifdef QP_EMU
	float f;
	memcpy(&f, &b, 4);
	return f;
#else
	return __uint_as_float(b);
#endif
}

// term is w * score.Term(idf, k1p1, tf, norm), rounded like the CPU.
__device__ __forceinline__ float term(float idf, float k1p1, u32 tf, float norm, float w) {
	const float f = u2f(tf);
	const float num = fmul(f, k1p1);
	const float den = fadd(f, norm);
	const float q = fdiv(num, den);
	return fmul(w, fmul(idf, q));
}

// rank_key maps (doc, score > 0) to a 64-bit key whose ascending order is
// topk's rank order: score descending, then docID ascending. For positive
// floats the bit pattern grows with the value, so its complement shrinks.
__device__ __forceinline__ u64 rank_key_bits(u32 doc, u32 bits) { return static_cast<u64>(~bits) << 32 | doc; }
__device__ __forceinline__ u64 rank_key(u32 doc, float score) { return rank_key_bits(doc, fbits(score)); }

// beats reports whether a document whose score has the bits `bits` (0: it
// has no score) is a candidate against the bound th: a score, and a rank
// key at most th (~0: no bound yet).
__device__ __forceinline__ bool beats(u32 doc, u32 bits, u64 th) { return bits != 0 && rank_key_bits(doc, bits) <= th; }

// ---- the skip table ----

__device__ __forceinline__ const u32 *skips(const uint8_t *post, const TermMeta &t) {
	return reinterpret_cast<const u32 *>(post + t.skip);
}
__device__ __forceinline__ u32 last_doc(const u32 *sk, u32 b) { return sk[4 * b]; }
__device__ __forceinline__ u32 doc_start(const u32 *sk, u32 b) { return b ? sk[4 * (b - 1) + 1] : 0; }
__device__ __forceinline__ u32 doc_end(const u32 *sk, u32 b) { return sk[4 * b + 1]; }
__device__ __forceinline__ u32 freq_start(const u32 *sk, u32 b) { return b ? sk[4 * (b - 1) + 2] : 0; }
__device__ __forceinline__ u32 freq_end(const u32 *sk, u32 b) { return sk[4 * b + 2]; }
__device__ __forceinline__ u32 block_len(const TermMeta &t, u32 b, u32 bs) {
	return b + 1 == t.nb ? t.df - b * bs : bs;
}

// lower_bound returns the first position i in [lo, hi) whose key(i) is >=
// x, or hi (I: u32 or u64 positions; key(i) loads the i-th key of a
// non-decreasing sequence). The binary search of every query kernel. The
// midpoint of u32 positions is taken without overflow; u64 positions stay
// far below 2^63, where lo + hi cannot overflow.
template <class I, class K>
__device__ __forceinline__ I lower_bound(I lo, I hi, u32 x, K key) {
	while (lo < hi) {
		const I mid = sizeof(I) == 8 ? (lo + hi) >> 1 : lo + ((hi - lo) >> 1);
		if (key(mid) < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

// find_block returns the first block of the list whose last docID is >= d,
// or t.nb when d is past the list's end (binary search over the skip
// table: ceil(log2(nb+1)) loads of 4 bytes, 16 bytes apart).
__device__ __forceinline__ u32 find_block(const u32 *sk, u32 nb, u32 d) {
	return lower_bound(0u, nb, d, [&](u32 b) { return last_doc(sk, b); });
}

// bp128_freq returns the frequency in slot p of the bp128 block of m values
// at blk[0..len) (compress/bp128.go: uvarint(m), width byte, values LSB-first)
// or 0 when the block's header, width, length or padding is corrupt.
__device__ __forceinline__ u32 bp128_freq(const uint8_t *__restrict__ blk, u32 len, u32 m, u32 p) {
	u32 h;
	if (m < 128) {
		if (len < 2 || blk[0] != m) return 0;
		h = 1;
	} else {
		if (len < 3 || blk[0] != ((m & 0x7f) | 0x80) || blk[1] != (m >> 7)) return 0;
		h = 2;
	}
	const u32 w = blk[h];
	if (w > 32) return 0;
	const u64 bits = static_cast<u64>(m) * w;
	const u32 nbytes = static_cast<u32>((bits + 7) >> 3);
	if (len != h + 1 + nbytes) return 0;
	const uint8_t *v = blk + h + 1;
	if ((bits & 7) != 0 && (v[nbytes - 1] >> (bits & 7)) != 0) return 0;
	if (w == 0) return 1;
	const u64 o = static_cast<u64>(p) * w;
	const u32 b0 = static_cast<u32>(o >> 3), sh = static_cast<u32>(o & 7);
	const u32 need = (sh + w + 7) >> 3;
	u64 acc = 0;
	for (u32 k = 0; k < need; k++) acc |= static_cast<u64>(v[b0 + k]) << (8 * k);
	const u64 mask = w == 32 ? 0xffffffffull : ((1ull << w) - 1);
	return static_cast<u32>((acc >> sh) & mask) + 1;
}

// ---- device bitmaps of the densest lists (issue #6; engine/gpu/bitmap.go) ----
//
// A list with a device bitmap has column c: its 31-row group bitset (the
// group words of kernels/wah.cu, Algorithm 2 of the GPU WAH range-query
// paper) at mat + c*D, D = ceil(N/31), and its rank directory at rk + c*S,
// S = ceil(D/8): rk[s] is the number of documents of the list in groups
// [0, 8s). col[term] is the term's column, or kNoCol when the planner does
// not use its bitmap. Used by the AND (query_and_bitmap.cu) and the fused
// OR tiles (query_ortile.cu).

constexpr u32 kNoCol = 0xffffffffu; // col[] of a term without a bitmap in use
constexpr u32 kGroupRows = 31;      // rows per group word (bitmap/wah)
constexpr u32 kRankWords = 8;       // group words per rank directory entry

// group splits document d into its group word and row.
__device__ __forceinline__ void group(u32 d, u32 &g, u32 &r) {
	g = d / kGroupRows;
	r = d - g * kGroupRows;
}

// rank returns the number of documents of column w (rank directory rk)
// before document d: the rk entry, popcounts of up to 7 words and the
// masked word (4-32 bytes of words, most often one sector). The loads are
// predicated, not a loop, so that they are issued together.
__device__ __forceinline__ u32 rank(const u32 *__restrict__ w, const u32 *__restrict__ rk, u32 d) {
	u32 g, r;
	group(d, g, r);
	const u32 s = g / kRankWords, x0 = s * kRankWords;
	u32 n = rk[s];
#pragma unroll
	for (u32 k = 0; k + 1 < kRankWords; k++)
		if (x0 + k < g) n += __popc(w[x0 + k]);
	return n + __popc(w[g] & ((1u << r) - 1u));
}

// rank_tf returns the frequency of the posting at rank r of list t, whose
// frequency blocks are bp128 (bs postings per block): slot r % bs of
// block r / bs, read by random access (Ding et al. WWW'09 §8: frequencies
// only for the candidates), or 0 when the block is corrupt or r is past
// the list. Memory: the skip entries' freqEnd words, the block's header,
// last byte and slot bytes.
__device__ __forceinline__ u32 rank_tf(const uint8_t *__restrict__ post, const TermMeta &t, u32 r, u32 bs) {
	const u32 b = r / bs;
	if (b >= t.nb) return 0;
	const u32 *sk = skips(post, t);
	const u32 fs = freq_start(sk, b);
	return bp128_freq(post + t.freq + fs, freq_end(sk, b) - fs, block_len(t, b, bs), r - b * bs);
}

// seg_of returns the segment holding position x: the last s with
// key(s) <= x, for keys ascending (binary search over nseg entries).
template <class Key>
__device__ __forceinline__ u32 seg_of(u32 nseg, u64 x, Key key) {
	u32 lo = 0, hi = nseg; // invariant: key(lo) <= x (key(0) == 0)
	while (hi - lo > 1) {
		const u32 mid = (lo + hi) >> 1;
		if (key(mid) <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

// ---- block-wide scans (CUB's BlockScan; the emulator provides the same) ----

// S4 is the 4-field value of the AND block-selection scan: selected blocks,
// their postings, their encoded docID bytes and frequency bytes.
struct S4 {
	u64 a, b, c, d;
	S4() = default;
	__host__ __device__ S4(int v) : a(v), b(v), c(v), d(v) {}
	__host__ __device__ S4(u64 a_, u64 b_, u64 c_, u64 d_) : a(a_), b(b_), c(c_), d(d_) {}
	__host__ __device__ S4 operator+(const S4 &o) const { return S4(a + o.a, b + o.b, c + o.c, d + o.d); }
	__host__ __device__ S4 operator-(const S4 &o) const { return S4(a - o.a, b - o.b, c - o.c, d - o.d); }
};

constexpr u32 kScanItems = 4;                      // per thread, consecutive
constexpr u32 kScanTile = kThreads * kScanItems;   // items per CTA

template <class T>
struct BlockSum {
	typedef cub::BlockScan<T, kThreads, cub::BLOCK_SCAN_WARP_SCANS> Scan;
};

// block_total is the sum of every thread's s, the same in every thread
// (integer sums: the order of the additions does not matter); tmp is free
// again on return.
template <class T>
__device__ __forceinline__ T block_total(T s, typename BlockSum<T>::Scan::TempStorage &tmp) {
	__shared__ T sum;
	T incl;
	typename BlockSum<T>::Scan(tmp).InclusiveSum(s, incl);
	if (threadIdx.x == kThreads - 1) sum = incl;
	__syncthreads();
	const T r = sum;
	__syncthreads(); // sum and the scan storage are reused
	return r;
}

// tile_prefix is the sum of part[0..tile) (the unscanned sums of the tiles
// before this CTA's: the scans' partials launch folded into their apply
// launch, kern.ScanFuseParts), the same in every thread.
template <class T>
__device__ __forceinline__ T tile_prefix(const T *__restrict__ part, u32 tile,
                                         typename BlockSum<T>::Scan::TempStorage &tmp) {
	T s = T(0);
	for (u32 i = threadIdx.x; i < tile; i += kThreads) s = s + part[i];
	return block_total<T>(s, tmp);
}

// piece_prefix loads a thread's piece, the kScanItems consecutive items
// a[base..base+kScanItems) (T(0) at and past n), into v, sets s to their
// sum and returns the sum of the pieces of the CTA's threads before this
// one (the exclusive block scan of the pieces' sums): the first half of
// every scan of a tile here (scan_partials; scan_apply, qp_and_select and
// qp_and_compact through scan_piece).
template <class T>
__device__ __forceinline__ T piece_prefix(const T *a, u64 base, u64 n, T (&v)[kScanItems], T &s,
                                          typename BlockSum<T>::Scan::TempStorage &tmp) {
	s = T(0);
	for (u32 j = 0; j < kScanItems; j++) {
		v[j] = base + j < n ? a[base + j] : T(0);
		s = s + v[j];
	}
	T incl;
	typename BlockSum<T>::Scan(tmp).InclusiveSum(s, incl);
	return incl - s;
}

// scan_piece is the first half of the tile scans applied from partials
// (scan_apply, qp_and_select, qp_and_compact): thread t's piece is the
// kScanItems items of the CTA's tile at base = blockIdx.x * kScanTile +
// t * kScanItems; it loads them into v (piece_prefix: T(0) at and past n)
// and returns the sum of the pieces before it in the tile, to which the
// caller adds the items before the tile (tile_prefix, or the scanned
// partial). Every thread of the CTA calls it, with tmp free. (Adding the
// tiles' offset here, or choosing it in a helper, reorders the S4 loads of
// qp_and_select and qp_query_scan_apply_s4 in nvcc 11.8's SASS: the callers
// keep those lines, and every kernel's SASS stays as it was.)
template <class T>
__device__ __forceinline__ T scan_piece(const T *a, u64 n, u64 &base, T (&v)[kScanItems],
                                        typename BlockSum<T>::Scan::TempStorage &tmp) {
	base = static_cast<u64>(blockIdx.x) * kScanTile + threadIdx.x * kScanItems;
	T s;
	return piece_prefix<T>(a, base, n, v, s, tmp);
}

// flag_tile is the candidate loop of the AND kernels that keep or drop
// candidates (qp_and_match, qp_and_filter): the CTA's tile of kScanTile
// candidates, kScanItems consecutive ones per thread; flag[i] = keep(i)
// (0 or 1) for i < n, and part[tile] = the tile's flag sum, for the scan
// from partials.
template <class Keep>
__device__ __forceinline__ void flag_tile(u32 n, u32 *__restrict__ flag, u32 *__restrict__ part, Keep keep) {
	__shared__ typename BlockSum<u32>::Scan::TempStorage tmp;
	const u64 t0 = static_cast<u64>(blockIdx.x) * kScanTile;
	u32 sum = 0;
	for (u32 k = 0; k < kScanItems; k++) {
		const u64 i = t0 + threadIdx.x * kScanItems + k;
		if (i >= n) break;
		const u32 f = keep(i);
		flag[i] = f;
		sum += f;
	}
	u32 incl;
	typename BlockSum<u32>::Scan(tmp).InclusiveSum(sum, incl);
	if (threadIdx.x == kThreads - 1) part[blockIdx.x] = incl;
}

} // namespace qp_q
