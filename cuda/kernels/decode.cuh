// decode.cuh — the framework every batch decoding kernel of
// cuda/kernels/*.cu is built on (qp_decode_<codec>, Go side cuda/kern/decode.go).
//
// One launch decodes any number of index blocks of any number of posting
// lists. Block i is one complete compress encoding of m_i values (<= 128, or
// up to the codec's kMaxM for segmented codecs, below),
// src[src_off[i], src_off[i+1]), with m_i = out_off[i+1] - out_off[i]; it
// decodes into out[out_off[i], out_off[i+1]) exactly as the index's CPU code
// does (index/list.go):
//
//	mode kDocs,  General codec:  d[j] = base + v[0] + ... + v[j] + j
//	mode kDocs,  Sorted codec:   d[j] = base + v[j]
//	mode kFreqs, General codec:  f[j] = v[j] + 1
//	mode kFreqs, Sorted codec:   f[j] = v[j] - v[j-1] + 1   (v[-1] = 0)
//
// all mod 2^32, and (kDocs, last != NULL) the last docID must equal
// last[i]. Blocks longer than 128 values (an index built with a larger
// block size) are decoded by the codecs that set kSeg (segments, below; up
// to kMaxSegValues values) and reported as kTooLong by the others; blocks
// of 256 MiB or more are kTooLong too: unsupported, not corrupt, so the
// caller decodes them on the CPU.
//
// Work decomposition: chunks of blocks per warp, headers per lane. The grid
// is persistent (the host launches as many CTAs of WPC warps as fit on the
// GPU at once); the blocks are cut into chunks of cs <= 32 consecutive
// blocks, cs = min(kChunk, ceil(nblocks / warps in the grid)) (kChunk: the
// codec's, 32 unless it sets fewer, max_chunk), and each warp
// walks the chunks c = warp, warp + W, ... In phase 1 lane l of the warp
// takes block c*cs + l of its chunk alone: it loads the block's offsets and
// base (coalesced across the lanes), asks for the block's cache lines (L2
// prefetch), and parses and checks the block's headers (Codec::header, no
// warp collectives, divergent control flow allowed), leaving a record in
// shared memory. In phase 2 the warp decodes
// the chunk's blocks one after the other (Codec::values, warp collectives):
// lane l owns values 4l..4l+3 (a "blocked" layout), a per-lane inclusive sum
// of four plus one cub::WarpScan gives the docID prefix sum, and when the
// output offset is a multiple of 4 each lane writes its four results with
// one 16-byte store (the warp's 512 bytes are one contiguous write). Header
// parsing, serial and branchy, thus costs a warp one pass per chunk instead
// of one pass per block. Bits 8..15 of the mode parameter, when nonzero,
// force cs (tests).
//
// Memory access: a block's bytes are read in place from global memory (L1)
// through a View, which reads only whole 32-bit words of the aligned
// 16-byte chunks that hold the block, so nothing outside
// [src_off[i] & ~15, roundup16(src_off[i+1])) is touched: the host
// guarantees src is readable up to its length rounded up to 16 bytes.
//
// Validation: Codec::header and Codec::values check everything the CPU
// decoder checks (compress/*.go) and return a status code; values() codes
// are reduced over the warp (warp_code). A rejected block reports
// (i << 8 | code) to *status with atomicMin, so after the launch *status is
// the lowest rejected block and its code, or the all-ones value the host
// stored first; with codes != NULL every block's code (0 = decoded) is also
// written to codes[i]. Once a block is rejected, its output is unspecified.
//
// Each codec provides
//
//	struct Codec {
//	  static constexpr bool kSorted; // compress.Sorted
//	  (optional) static constexpr u32 kChunk; // most blocks per chunk (max_chunk)
//	  static constexpr bool kCheck;  // values() can reject a block
//	  static constexpr int kHdr;     // 32-bit header words per block record
//	  static constexpr int kAux;     // extra shared 32-bit words per warp
//	  // per lane, for its own block: check it and fill h[0..kHdr)
//	  __device__ static unsigned header(const View &v, unsigned m, unsigned *h);
//	  // per warp, for a block whose header passed: value 4*lane+j in x[j]
//	  template <class S> __device__ static unsigned
//	  values(const View &v, unsigned m, const unsigned *h, unsigned (&x)[4], S &sm, unsigned lane);
//	};
//
// values() may use sm.vals[128] and sm.aux[kAux].
//
// `make kernels` compiles every cuda/kernels/*.cu as ONE translation unit;
// this header is included by each of them (#pragma once) and keeps its
// helpers in namespace qp_dec. The same sources also build, with g++ and
// cuda/emu/emu.h (QP_EMU), into the CPU emulator of cuda/emu.

#pragma once

#include <cstdint>
#ifndef QP_EMU
#include <cub/warp/warp_scan.cuh>

#include "query_params.cuh" // QP_SIGNATURE_DecodeParams
#endif

namespace qp_dec {

typedef uint32_t u32;
typedef unsigned long long ull;
typedef long long i64;

constexpr u32 kFull = 0xffffffffu;
constexpr u32 kMaxValues = 128;          // values per block a warp decodes
constexpr ull kMaxBytes = 1ull << 28;     // longer blocks are kTooLong (bit positions fit 32 bits)
constexpr u32 kMaxSegValues = 1u << 16;  // longest block of a segmented codec (index.Open's block size limit)

enum : u32 { kDocs = 0, kFreqs = 1 };

// Status codes; keep in sync with decodeReasons in cuda/kern/decode.go.
enum : u32 {
	kBadCount = 1,      // count header is not (the minimal encoding of) the block length
	kBadWidth = 2,      // bit width, selector or parameter out of range
	kTruncated = 3,     // fewer bytes than the headers need
	kTrailing = 4,      // more bytes than the headers need
	kBadPadding = 5,    // nonzero padding or unused bits
	kBadLast = 6,       // last docID differs from last[i]
	kTooLong = 7,       // unsupported: more than 128 values, or 256 MiB or more
	kBadValue = 8,      // a value (or header value) out of range
	kBadException = 9,  // exception position or high part out of range
	kBadOrder = 10,     // values of a Sorted codec decrease
	kBadStructure = 11, // unary/upper-bits/bucket structure inconsistent
};

// View is one block's bytes, read in place: the aligned 16-byte chunks that
// hold them.
struct View {
	const uint8_t *b; // first chunk (16-byte aligned)
	u32 off;          // the block's first byte is b[off], off < 16
	u32 len;          // block length in bytes
	u32 nw;           // 32-bit words readable at b (>= 1)

	// byte i of the block, i < len.
	__device__ __forceinline__ u32 byte(u32 i) const { return b[off + i]; }

	// word k of the chunks, clamped to the last one (reads past the block
	// only feed bits that the caller masks off or that belong to a block
	// already found corrupt).
	__device__ __forceinline__ u32 word(u32 k) const {
		return reinterpret_cast<const u32 *>(b)[k < nw ? k : nw - 1];
	}

	// bits [pos, pos+width) of the block, LSB-first, width 0..32. Blocks
	// are shorter than 2^28 bytes, so bit positions fit 32 bits; callers
	// compute positions that may overflow (from corrupt headers) in 64 bits
	// and pass pos64 instead.
	__device__ __forceinline__ u32 bits(u32 pos, u32 width) const {
		const u32 a = off * 8 + pos;
		const u32 k = a >> 5;
		const u32 r = __funnelshift_r(word(k), word(k + 1), a & 31);
		return width >= 32 ? r : r & ((1u << width) - 1);
	}
	__device__ __forceinline__ u32 bits64pos(ull pos, u32 width) const {
		return bits(pos < (1ull << 31) ? static_cast<u32>(pos) : 1u << 31, width);
	}

	// field returns bits [pos, pos+w) of a block whose headers passed, w
	// in 1..32, mask = 2^w - 1 (all ones for 32): the field lies inside the
	// block, so no clamping is needed, and the second word is read only
	// when the field reaches into it.
	__device__ __forceinline__ u32 field(u32 pos, u32 w, u32 mask) const {
		const u32 a = off * 8 + pos, k = a >> 5, s = a & 31;
		const u32 *wp = reinterpret_cast<const u32 *>(b);
		const u32 lo = wp[k];
		const u32 hi = s + w > 32 ? wp[k + 1] : 0;
		return __funnelshift_r(lo, hi, s) & mask;
	}

	// 64 bits at bit pos (little-endian).
	__device__ __forceinline__ ull bits64(u32 pos) const {
		return static_cast<ull>(bits(pos, 32)) | static_cast<ull>(bits(pos + 32, 32)) << 32;
	}

	// little-endian integers at byte position p (p+size <= len).
	__device__ __forceinline__ u32 u32at(u32 p) const { return bits(p * 8, 32); }
	__device__ __forceinline__ ull u64at(u32 p) const { return bits64(p * 8); }
};

// unpack4 sets x[j] (j < 4) to the b-bit field at bit pos + j*b of a block
// whose headers passed (b in 0..32) for j < nv, and to 0 for j >= nv: the
// nv <= 4 consecutive values a lane owns inside the block. For b <= 8 the
// four fields lie in two 32-bit words (31 + 4*8 < 64 bits), which are loaded
// once (the second only when the last field reaches into it) and cut with
// 64-bit shifts: 1-2 loads per lane instead of 4-8 and no per-field
// address arithmetic (the common case on long lists: 2-6 bits per value).
// Wider fields take View::field each. Like field(), it reads no word that
// holds none of the requested bits.
__device__ __forceinline__ void unpack4(const View &v, u32 pos, u32 b, u32 nv, u32 (&x)[4]) {
	const u32 mask = b >= 32 ? 0xffffffffu : (1u << b) - 1;
	if (b == 0 || nv == 0) {
#pragma unroll
		for (int j = 0; j < 4; j++) x[j] = 0;
		return;
	}
	if (b <= 8) {
		const u32 a = v.off * 8 + pos, k = a >> 5, s = a & 31;
		const u32 *wp = reinterpret_cast<const u32 *>(v.b);
		const u32 lo = wp[k];
		const u32 hi = s + nv * b > 32 ? wp[k + 1] : 0;
		const ull w = static_cast<ull>(lo) | static_cast<ull>(hi) << 32;
#pragma unroll
		for (int j = 0; j < 4; j++) x[j] = static_cast<u32>(j) < nv ? static_cast<u32>(w >> (s + j * b)) & mask : 0;
		return;
	}
#pragma unroll
	for (int j = 0; j < 4; j++) x[j] = static_cast<u32>(j) < nv ? v.field(pos + j * b, b, mask) : 0;
}

// lane_count is how many of values 4*lane .. 4*lane+3 lie in a block of m.
__device__ __forceinline__ u32 lane_count(u32 m, u32 lane) {
	const u32 i0 = lane * 4;
	return m > i0 ? (m - i0 < 4 ? m - i0 : 4) : 0;
}

// ---- warp primitives (cub::WarpScan; its shuffle form needs no storage) ----

template <class T>
__device__ __forceinline__ T excl_sum(T x, T &total) {
	typename cub::WarpScan<T>::TempStorage ts;
	T r;
	cub::WarpScan<T>(ts).ExclusiveSum(x, r, total);
	return r;
}

template <class T>
__device__ __forceinline__ T incl_sum(T x) {
	typename cub::WarpScan<T>::TempStorage ts;
	T r;
	cub::WarpScan<T>(ts).InclusiveSum(x, r);
	return r;
}

// excl_sum1 is the exclusive sum without the total: the inclusive sum minus
// x, one shuffle fewer.
template <class T>
__device__ __forceinline__ T excl_sum1(T x) {
	return incl_sum(x) - x;
}

template <class T>
__device__ __forceinline__ T excl_max(T x, T init) {
	typename cub::WarpScan<T>::TempStorage ts;
	T r;
	cub::WarpScan<T>(ts).ExclusiveScan(x, r, init, cub::Max());
	return r;
}

// reg4 returns x[k] for a run-time k in 0..3 without indexing the register
// array (which would move it to local memory).
__device__ __forceinline__ u32 reg4(const u32 (&x)[4], u32 k) {
	return k == 0 ? x[0] : k == 1 ? x[1] : k == 2 ? x[2] : x[3];
}

// stage4 stores a lane's values x (the block's values 4*lane..4*lane+3)
// into the block's values in shared memory, vals, where the exception
// patches of PForDelta and ParaPFor add to them; unstage4 loads them back
// (one 16-byte access each).
__device__ __forceinline__ void stage4(u32 *vals, u32 lane, const u32 (&x)[4]) {
	reinterpret_cast<uint4 *>(vals)[lane] = make_uint4(x[0], x[1], x[2], x[3]);
}
__device__ __forceinline__ void unstage4(const u32 *vals, u32 lane, u32 (&x)[4]) {
	const uint4 r = reinterpret_cast<const uint4 *>(vals)[lane];
	x[0] = r.x;
	x[1] = r.y;
	x[2] = r.z;
	x[3] = r.w;
}

__device__ __forceinline__ u32 bitlen(u32 x) { return 32 - __clz(x); }
// wmask is 2^w - 1 for w in 0..32.
__device__ __forceinline__ u32 wmask(u32 w) { return w >= 32 ? 0xffffffffu : (1u << w) - 1; }
__device__ __forceinline__ u32 qmax(u32 a, u32 b) { return a > b ? a : b; }
__device__ __forceinline__ u32 qmin(u32 a, u32 b) { return a < b ? a : b; }

// warp_code is the largest of the lanes' status codes, the same on every
// lane: a vote first (a fixed-latency instruction), the reduction only when
// some lane rejected the block, which valid data never does.
__device__ __forceinline__ u32 warp_code(u32 code) {
	return __any_sync(kFull, code) ? __reduce_max_sync(kFull, code) : 0;
}

// ---- header helpers shared by the codecs ----

// count_header checks that the block starts with the minimal uvarint of m
// (m <= 128) and returns its length (1 or 2), or 0 when it does not: the
// CPU rejects a non-minimal count, and a count other than m fails the
// index's block-length check, so both are corrupt.
__device__ __forceinline__ u32 count_header(const View &v, u32 m) {
	if (m < 128) return v.len >= 1 && v.byte(0) == m ? 1 : 0;
	return v.len >= 2 && v.byte(0) == 0x80 && v.byte(1) == 0x01 ? 2 : 0;
}

// uv_small reads a minimal uvarint of at most max (max < 2^14) at pos and
// advances pos; false when it is missing, truncated, non-minimal or larger
// (a 3-byte minimal uvarint is >= 2^14 > max, so two bytes suffice).
__device__ __forceinline__ bool uv_small(const View &v, u32 &pos, u32 max, u32 &val) {
	if (pos >= v.len) return false;
	const u32 c0 = v.byte(pos);
	if (c0 < 0x80) {
		val = c0;
		pos += 1;
		return val <= max;
	}
	if (pos + 1 >= v.len) return false;
	const u32 c1 = v.byte(pos + 1);
	if (c1 >= 0x80 || c1 == 0) return false;
	val = (c0 & 0x7f) | c1 << 7;
	pos += 2;
	return val <= max;
}

// uv64 reads a uvarint of up to 64 bits at pos like encoding/binary.Uvarint
// and advances pos. It returns 0, kTruncated (missing or truncated) or
// kBadValue (overflows 64 bits, or non-minimal).
__device__ __forceinline__ u32 uv64(const View &v, u32 &pos, ull &val) {
	ull x = 0;
	for (u32 i = 0; i < 10; i++) {
		if (pos + i >= v.len) return kTruncated;
		const u32 c = v.byte(pos + i);
		if (i == 9 && c > 1) return kBadValue;
		if (c < 0x80) {
			if (i > 0 && c == 0) return kBadValue;
			val = x | static_cast<ull>(c) << (7 * i);
			pos += i + 1;
			return 0;
		}
		x |= static_cast<ull>(c & 0x7f) << (7 * i);
	}
	return kBadValue;
}

// ---- the epilogue: from raw values to docIDs or frequencies ----

// store_out writes 16 output bytes with the streaming hint (st.global.cs:
// evict first), so that the output a launch streams through L2, larger than
// L2 for lists of 2^24 integers and more, does not push out the blocks its
// warps prefetched before phase 2 reads them (with prefetch_l2's evict-last
// hint: PForDelta +11% at 2^24, Elias-Fano +5%, BP128 +1%; runs 74-75 of
// docs/GPU-TESTS.md). The engine, whose AND decodes lists that its next
// kernel reads, ran as fast with the hints (run 78: AND 146-149k queries/s
// against 146-151k without, OR and AND+OR within 1%).
__device__ __forceinline__ void store_out(uint4 *p, uint4 v) { __stcs(p, v); }

// finish turns the block's raw values x (value 4*lane+j in x[j]) into
// docIDs or frequencies, checks the last docID (against lastv, when last
// is not NULL) and writes out[0 .. m) (out: the block's first output).
//
// TAIL (segments, below): *tail is set to lane 31's last result r[3] on
// every lane (the segment's last docID when the segment is full).
template <bool SORTED, u32 MODE, bool TAIL = false>
__device__ __forceinline__ u32 finish(const u32 (&x)[4], u32 m, u32 base, const u32 *last, u32 lastv, u32 *out,
                                      u32 lane, u32 *tail = nullptr) {
	const u32 i0 = lane * 4;
	u32 r[4];
	if (MODE == kDocs) {
		if (SORTED) {
#pragma unroll
			for (int j = 0; j < 4; j++) r[j] = x[j] + base;
		} else {
			// d[i] = base - 1 + sum_{k<=i} (v[k] + 1). Values past m are
			// summed too, unmasked: they lie after every value of the
			// block (blocked layout), so they only move results that are
			// never written.
			u32 c[4], acc = 0;
#pragma unroll
			for (int j = 0; j < 4; j++) {
				acc += x[j] + 1;
				c[j] = acc;
			}
			const u32 ex = excl_sum1(acc) + base - 1;
#pragma unroll
			for (int j = 0; j < 4; j++) r[j] = ex + c[j];
		}
	} else if (SORTED) {
		u32 prev = __shfl_up_sync(kFull, x[3], 1);
		if (lane == 0) prev = 0;
		r[0] = x[0] - prev + 1;
		r[1] = x[1] - x[0] + 1;
		r[2] = x[2] - x[1] + 1;
		r[3] = x[3] - x[2] + 1;
	} else {
#pragma unroll
		for (int j = 0; j < 4; j++) r[j] = x[j] + 1;
	}
	if (MODE == kDocs && last != nullptr) {
		u32 code = 0;
		if ((m - 1) >> 2 == lane && reg4(r, (m - 1) & 3) != lastv) code = kBadLast;
		if (__any_sync(kFull, code)) return kBadLast;
	}
	if (TAIL) *tail = __shfl_sync(kFull, r[3], 31);
	u32 *dst = out + i0;
	if ((reinterpret_cast<uintptr_t>(dst) & 15) == 0 && i0 + 4 <= m) {
		store_out(reinterpret_cast<uint4 *>(dst), make_uint4(r[0], r[1], r[2], r[3]));
	} else {
#pragma unroll
		for (int j = 0; j < 4; j++)
			if (i0 + j < m) dst[j] = r[j];
	}
	return 0;
}

// ---- blocks of more than 128 values: segments ----
//
// A codec that sets kSeg = true takes blocks of up to kMaxM values (at
// most kMaxSegValues: an index built with a larger --block): its header()
// checks the whole block, and the warp decodes it as consecutive segments
// of up to 128 values, lane l owning values 4l..4l+3 of each, with
//
//	static ull seg_start(const u32 *h);   // the state before segment 0
//	template <class S> static u32 seg_values(const View &v, const u32 *h,
//	        u32 ms, ull &st, bool fin, u32 (&x)[4], S &sm, u32 lane);
//
// (segment of ms values, the last one when fin; it advances st, which is
// the same on every lane, and checks what only the last segment can, such
// as trailing bytes). The docID prefix sum, or the Sorted
// frequencies' differences, carry over from one segment to the next; the
// last docID is checked after the last segment. Blocks of at most 128
// values take values() as before, so the segment path costs them nothing,
// unless the codec sets kSegAlways (its blocks of any length take the
// segment path: one copy of its decoder in the kernel, fewer registers).

// QP_CODEC_TRAIT defines NAME<C>::value: C::MEMBER when the codec C
// declares it (CHECK, an expression in C, must then hold), else DEFAULT.
#define QP_CODEC_TRAIT(NAME, TYPE, MEMBER, DEFAULT, CHECK)                                                      \
	template <class C, class = void>                                                                         \
	struct NAME {                                                                                            \
		static constexpr TYPE value = DEFAULT;                                                             \
	};                                                                                                       \
	template <class C>                                                                                       \
	struct NAME<C, decltype(void(C::MEMBER))> {                                                              \
		static constexpr TYPE value = C::MEMBER;                                                           \
		static_assert(CHECK, "BUG: " #NAME ": " #CHECK);                                                   \
	};

QP_CODEC_TRAIT(seg_of, bool, kSeg, false, !C::kSeg || (C::kMaxM > kMaxValues && C::kMaxM <= kMaxSegValues))

// max_values is the longest block the codec C takes.
template <class C>
__device__ __forceinline__ constexpr u32 max_values() {
	if constexpr (seg_of<C>::value) {
		return C::kMaxM;
	} else {
		return kMaxValues;
	}
}

// max_chunk is the most blocks per chunk (1..32) the codec C takes: its
// kChunk, or 32. A chunk's headers are parsed by one lane per block
// (phase 1), so codecs with long header chains want full chunks, while
// codecs with short ones gain from more, smaller chunks per warp on long
// launches: BP128 and VByte at 8 were 4-10% faster on lists of 2^24 and
// 2^26 (runs 40, 43 and 44 of docs/GPU-TESTS.md); PForDelta, Rice,
// Elias-Fano and LRC were slower at 2^26. Launches of fewer than kChunk
// blocks per warp (every batch up to 2^22 integers) are unaffected.
QP_CODEC_TRAIT(chunk_of, u32, kChunk, 32, C::kChunk >= 1 && C::kChunk <= 32)
template <class C>
__device__ __forceinline__ constexpr u32 max_chunk() {
	return chunk_of<C>::value;
}

// ---- groups: several lanes per block ----
//
// A codec that sets kGroup = true decodes most blocks of at most 128 values
// with kGroupLanes (16) lanes each instead of a whole warp: phase 2 takes
// the chunk's blocks kGroups (2) at a time, lane t of group g (lanes
// 16g..16g+15) owning values 8t..8t+7 of block j0+g. The docID prefix sum
// is the same localized sum (a lane's values, then the group's lane totals:
// Ding et al. WWW'09 §6), by segmented shuffles.
//
// The code is convergent: every lane of the warp runs every instruction,
// a group without a block (or declining one) with no loads and no stores,
// and the collectives name the whole warp with a width of kGroupLanes.
// Collectives that name a group's mask in divergent code compile to a
// serialized slow path (WARPSYNC.COLLECTIVE loops), which made the first
// version slower than the warp per block (GPU-DECODE.md, fifth round).
//
//	static bool values_g(const View &v, u32 m, const u32 *h, u32 (&x)[kGroupValues],
//	        u32 lane, u32 *arr, bool act);
//
// is called by every lane of the warp; for act (the group has a block) it
// sets value kGroupValues*t+j in x[j] (0 past m) and returns true on every
// lane of the group, or false to decline the block: a case it does not take,
// or a check that failed. For !act it touches no memory and returns false;
// h, v and m are then not a block's. arr is the group's kGroupArr words of
// shared memory (the codec's; the groups' arrays cover vals and aux, so
// kAux + 128 >= kGroups * kGroupArr). Declined blocks, and blocks whose last docID differs, are
// then decoded by the whole warp with values() as before, which reports the
// exact status code; nothing is written for them in the group pass.

constexpr int kGroupLanes = 16, kGroupValues = kMaxValues / kGroupLanes, kGroupQuads = kGroupValues / 4,
              kGroups = 32 / kGroupLanes;
static_assert(kGroupLanes >= 4 && kGroupLanes <= 32 && (kGroupLanes & (kGroupLanes - 1)) == 0, "BUG: kGroupLanes");

// A kGroup codec needs kAux for the groups' arrays, and must be General.
QP_CODEC_TRAIT(group_of, bool, kGroup, false, !C::kGroup || (C::kAux + kMaxValues >= kGroups * C::kGroupArr && !C::kSorted))

// load_fields sets x[j] (j < N) to the w-bit field at bit pos + j*w of a
// block whose headers passed (w in 0..32) for j < nv, and to 0 for j >= nv,
// like unpack4, with every word load issued before any is used: predicated
// loads, no branch between them, so that their latencies overlap (a branch
// per field made the compiler wait for each load in turn: GPU-DECODE.md,
// fourth round). For nv = 0 it reads nothing (w and pos may be garbage).
template <int N>
__device__ __forceinline__ void load_fields(const View &v, u32 pos, u32 w, u32 nv, u32 (&x)[N]) {
	const u32 *wp = reinterpret_cast<const u32 *>(v.b);
	u32 lo[N], hi[N], sh[N];
#pragma unroll
	for (int j = 0; j < N; j++) {
		const u32 a = v.off * 8 + pos + j * w;
		const bool on = static_cast<u32>(j) < nv && w > 0;
		sh[j] = a & 31;
		lo[j] = on ? wp[a >> 5] : 0;
		hi[j] = on && sh[j] + w > 32 ? wp[(a >> 5) + 1] : 0;
	}
	const u32 mask = wmask(w);
#pragma unroll
	for (int j = 0; j < N; j++) x[j] = __funnelshift_r(lo[j], hi[j], sh[j]) & mask;
}

// unpack_g is unpack4 for the nv <= kGroupValues consecutive b-bit values at
// bit pos that a lane of a group owns, its loads issued together: for b <= 8
// one or two words per quad of values (cut with 64-bit shifts), wider
// fields by load_fields. For nv = 0 it reads nothing.
__device__ __forceinline__ void unpack_g(const View &v, u32 pos, u32 b, u32 nv, u32 (&x)[kGroupValues]) {
	if (b > 8) {
		load_fields(v, pos, b, nv, x);
		return;
	}
	const u32 *wp = reinterpret_cast<const u32 *>(v.b);
	u32 lo[kGroupQuads], hi[kGroupQuads], sh[kGroupQuads], n[kGroupQuads];
#pragma unroll
	for (int q = 0; q < kGroupQuads; q++) {
		n[q] = nv > 4u * q ? qmin(4, nv - 4u * q) : 0;
		const u32 a = v.off * 8 + pos + 4u * q * b;
		sh[q] = a & 31;
		lo[q] = n[q] && b ? wp[a >> 5] : 0;
		hi[q] = sh[q] + n[q] * b > 32 ? wp[(a >> 5) + 1] : 0;
	}
	const u32 mask = wmask(b);
#pragma unroll
	for (int q = 0; q < kGroupQuads; q++) {
		const ull w = static_cast<ull>(lo[q]) | static_cast<ull>(hi[q]) << 32;
#pragma unroll
		for (int j = 0; j < 4; j++)
			x[4 * q + j] = static_cast<u32>(j) < n[q] ? static_cast<u32>(w >> (sh[q] + j * b)) & mask : 0;
	}
}

// group_count is how many of a group lane's values (t: its index in the
// group) lie in a block of m.
__device__ __forceinline__ u32 group_count(u32 m, u32 t) {
	const u32 i0 = t * kGroupValues;
	return m > i0 ? qmin(kGroupValues, m - i0) : 0;
}

// gincl is the inclusive sum of x over each group's lanes (every lane of
// the warp calls it; t: the lane's index in its group).
__device__ __forceinline__ u32 gincl(u32 x, u32 t) {
#pragma unroll
	for (u32 d = 1; d < static_cast<u32>(kGroupLanes); d <<= 1) {
		const u32 y = __shfl_up_sync(kFull, x, d, kGroupLanes);
		if (t >= d) x += y;
	}
	return x;
}

// group_any is, on every lane, whether pred holds on some lane of its group.
__device__ __forceinline__ bool group_any(bool pred, u32 lane) {
	const u32 bal = __ballot_sync(kFull, pred);
	constexpr u32 gbits = kGroupLanes == 32 ? kFull : (1u << kGroupLanes) - 1;
	return (bal >> (lane / kGroupLanes * kGroupLanes) & gbits) != 0;
}

// finish_g is finish() for the groups (General codecs; every lane of the
// warp calls it): docIDs or frequencies from the raw values x, then, when
// store, the writes, unless the last docID differs from lastv (chk): it
// returns false then and writes nothing. The last docID needs no search:
// values past m are 0, so the group's total of v+1 exceeds the block's by
// 128 - m.
template <u32 MODE>
__device__ __forceinline__ bool finish_g(u32 (&x)[kGroupValues], u32 m, u32 base, bool chk, u32 lastv, u32 *out,
                                         u32 lane, bool store) {
	const u32 t = lane % kGroupLanes;
	bool ok = true;
	if (MODE == kDocs) {
		u32 acc = 0;
#pragma unroll
		for (int j = 0; j < kGroupValues; j++) {
			acc += x[j] + 1;
			x[j] = acc;
		}
		const u32 inc = gincl(acc, t);
		const u32 ex = inc - acc + base - 1;
#pragma unroll
		for (int j = 0; j < kGroupValues; j++) x[j] += ex;
		if (chk) {
			const u32 total = __shfl_sync(kFull, inc, kGroupLanes - 1, kGroupLanes);
			ok = base - 1 + total - (kMaxValues - m) == lastv;
		}
	} else {
#pragma unroll
		for (int j = 0; j < kGroupValues; j++) x[j] += 1;
	}
	if (!store || !ok) return ok;
	const u32 i0 = t * kGroupValues;
	u32 *dst = out + i0;
	if ((reinterpret_cast<uintptr_t>(dst) & 15) == 0 && i0 + kGroupValues <= m) {
#pragma unroll
		for (int q = 0; q < kGroupQuads; q++)
			store_out(reinterpret_cast<uint4 *>(dst) + q, make_uint4(x[4 * q], x[4 * q + 1], x[4 * q + 2], x[4 * q + 3]));
	} else {
#pragma unroll
		for (int j = 0; j < kGroupValues; j++)
			if (i0 + j < m) dst[j] = x[j];
	}
	return true;
}

template <class C, u32 MODE, class S>
__device__ __forceinline__ u32 segments(const View &v, u32 m, const u32 *h, u32 base, const u32 *last, u32 lastv,
                                        u32 *out, S &sm, u32 lane) {
	ull st = C::seg_start(h);
	u32 carry = base; // Docs, General: this segment's base; Sorted Freqs: the previous segment's last value
	if (MODE != kDocs) carry = 0;
	for (u32 s = 0; s < m; s += kMaxValues) {
		const u32 ms = qmin(kMaxValues, m - s);
		u32 x[4];
		u32 code = C::seg_values(v, h, ms, st, s + ms == m, x, sm, lane);
		if (C::kCheck) code = warp_code(code);
		if (code) return code;
		const u32 *lst = s + ms == m ? last : nullptr;
		if (MODE == kDocs && !C::kSorted) {
			u32 tail;
			code = finish<false, MODE, true>(x, ms, carry, lst, lastv, out + s, lane, &tail);
			carry = tail + 1;
		} else if (MODE != kDocs && C::kSorted) {
			// Differences continue from the previous segment's last value.
			const u32 t = __shfl_sync(kFull, x[3], 31);
#pragma unroll
			for (int j = 0; j < 4; j++) x[j] -= carry;
			code = finish<true, MODE>(x, ms, 0, lst, lastv, out + s, lane);
			carry = t;
		} else {
			code = finish<C::kSorted, MODE>(x, ms, carry, lst, lastv, out + s, lane);
		}
		if (code) return code;
		__syncwarp(); // seg_values may reuse sm.vals and sm.aux
	}
	return 0;
}

// ---- the kernel body ----

// Rec is one block's record in shared memory: phase 1 writes it (lane l,
// block l of the chunk), phase 2 reads it (every lane, the same address).
// It holds the block's View and output address, computed once in phase 1
// (per lane, 1/32 of a warp instruction per block) instead of by the whole
// warp per block in phase 2 (64-bit offset arithmetic).
template <int HDR>
struct Rec {
	View v;
	u32 *dst; // out + out_off[i]
	u32 m, base, last, code;
	u32 h[HDR > 0 ? HDR : 1];
};

// alignas(16): vals and aux are accessed as uint4 too (and every element
// of a per-warp array of Smem must start on 16 bytes).
template <int HDR, int AUX>
struct alignas(16) Smem {
	Rec<HDR> rec[32];
	u32 vals[kMaxValues];
	u32 aux[AUX > 0 ? AUX : 1];
};

#ifndef QP_EMU
// prefetch_l2 asks for the 128-byte line at p to be brought into L2, marked
// evict-last (store_out).
__device__ __forceinline__ void prefetch_l2(const void *p) {
	asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p));
}
#else
inline void prefetch_l2(const void *) {}
#endif

// view returns the View of the block at src[s0, s0+len) (len < 2^28).
__device__ __forceinline__ View view(const uint8_t *src, ull s0, u32 len) {
	View v;
	v.b = src + (s0 & ~15ull);
	v.off = static_cast<u32>(s0 & 15);
	v.len = len;
	const u32 nch = len ? static_cast<u32>(((s0 + len + 15) >> 4) - (s0 >> 4)) : 0;
	v.nw = nch ? nch * 4 : 1; // a 0-byte block reads no words (its first would be past src)
	return v;
}

// warp_block decodes the block of record r with the whole warp (values(),
// or segments for long blocks) and returns its code.
template <class C, u32 MODE, class S>
__device__ __forceinline__ u32 warp_block(const Rec<C::kHdr> &r, const u32 *last, S &sm, u32 lane) {
	const u32 m = r.m;
	const View v = r.v;
	u32 code = 0;
	if constexpr (seg_of<C>::value) {
		if (m > kMaxValues || C::kSegAlways) {
			code = segments<C, MODE>(v, m, r.h, r.base, last, r.last, r.dst, sm, lane);
			__syncwarp(); // values() may reuse sm.vals and sm.aux for the next block
			return code;
		}
	}
	u32 x[4];
	code = C::values(v, m, r.h, x, sm, lane);
	if (C::kCheck) code = warp_code(code);
	if (code == 0) code = finish<C::kSorted, MODE>(x, m, r.base, last, r.last, r.dst, lane);
	__syncwarp(); // values() may reuse sm.vals and sm.aux for the next block
	return code;
}

// Next-chunk prefetch (codecs that set kPrefetchNext, in launches of several
// chunks per warp). A warp's next chunk, c + W, is asked for in two steps
// while the warp decodes chunk c, so that its phase 1 finds offsets and
// blocks in L2 instead of waiting for DRAM: prefetch_offsets right after
// phase 1 (the offsets' lines: no value needed), prefetch_blocks halfway
// through phase 2 (the offsets, by then in L2, give the blocks' lines, at
// most 1 KiB each, as phase 1 asks). Elias-Fano gained 4-5% from 2^22 to
// 2^26; BP128 and PForDelta lost 2-5% (run 72 of docs/GPU-TESTS.md), so
// only Elias-Fano sets it.
QP_CODEC_TRAIT(prefetch_of, bool, kPrefetchNext, false, true)

__device__ __forceinline__ void prefetch_offsets(const ull *src_off, const ull *out_off, const u32 *base,
                                                 const u32 *last, u32 b, bool on) {
	if (!on) return;
	prefetch_l2(src_off + b);
	prefetch_l2(out_off + b);
	if (base) prefetch_l2(base + b);
	if (last) prefetch_l2(last + b);
}
__device__ __forceinline__ void prefetch_blocks(const uint8_t *src, const ull *src_off, u32 b, bool on) {
	if (!on) return;
	const ull s0 = src_off[b], s1 = src_off[b + 1];
	const ull lim = (s0 & ~127ull) + 1024, a1 = s1 < lim ? s1 : lim;
	for (ull a = s0 & ~127ull; a < a1; a += 128) prefetch_l2(src + a);
}

template <class C, int WPC, u32 MODE>
__device__ __forceinline__ void run(Smem<C::kHdr, C::kAux> *smem, const uint8_t *__restrict__ src,
                                    const ull *__restrict__ src_off, const ull *__restrict__ out_off,
                                    const u32 *__restrict__ base, const u32 *__restrict__ last,
                                    u32 *__restrict__ out, ull *status, u32 *codes, u32 nblocks, u32 force) {
	const u32 lane = threadIdx.x & 31;
	Smem<C::kHdr, C::kAux> &sm = smem[threadIdx.x >> 5];
	const u32 nwarps = gridDim.x * WPC;
	// Blocks per chunk: forced (tests), or the fewest that give every warp
	// of the grid work, at most the codec's kChunk.
	const u32 cs = force ? qmin(32, force) : qmin(max_chunk<C>(), (nblocks + nwarps - 1) / nwarps);
	const u32 nchunks = (nblocks + cs - 1) / cs;
	if (MODE != kDocs) last = nullptr;

	for (u32 c = blockIdx.x * WPC + (threadIdx.x >> 5); c < nchunks; c += nwarps) {
		const u32 b0 = c * cs, nb = qmin(cs, nblocks - b0);

		// Phase 1: lane l checks block b0+l and writes its record.
		u32 mycode = 0; // lane l: the final code of block b0+l
		bool todo = false; // lane l: block b0+l has values to decode
		if (lane < nb) {
			const u32 b = b0 + lane;
			Rec<C::kHdr> &r = sm.rec[lane];
			const ull s0 = src_off[b], s1 = src_off[b + 1], o0 = out_off[b], o1 = out_off[b + 1];
			// base and last are loaded with the offsets, not after the
			// header parse (which has loops: the compiler does not hoist
			// loads above them), so that their DRAM round trips overlap
			// (run 81 of docs/GPU-TESTS.md: BP128 +2.5-5% from 2^14 to 2^24).
			const u32 bv = MODE == kDocs ? base[b] : 0, lv = last ? last[b] : 0;
			const ull len = s1 - s0, m = o1 - o0;
			u32 code = kTooLong;
			const View v = view(src, s0, len < kMaxBytes ? static_cast<u32>(len) : 0);
			r.v = v;
			if (m <= max_values<C>() && len < kMaxBytes) {
				// Phase 2 reads the block's lines soon: ask for them now,
				// all lanes at once, rather than one block at a time (the
				// header read brings the first; canonical blocks are
				// shorter than 1 KiB).
				const ull lim = (s0 & ~127ull) + 1024, a1 = s1 < lim ? s1 : lim;
				for (ull a = (s0 & ~127ull) + 128; a < a1; a += 128) prefetch_l2(src + a);
				code = C::header(v, static_cast<u32>(m), r.h);
			}
			r.dst = out + o0;
			r.m = static_cast<u32>(m);
			r.base = bv;
			r.last = lv;
			r.code = code;
			mycode = code;
			todo = code == 0 && m > 0;
		}
		__syncwarp();
		const u32 b2 = b0 + nwarps * cs, nb2 = b2 < nblocks ? qmin(cs, nblocks - b2) : 0;
		const bool pf = prefetch_of<C>::value && lane < nb2;
		prefetch_offsets(src_off, out_off, MODE == kDocs ? base : nullptr, last, b2 + lane, pf);
		const u32 mid = nb / 2; // the step (j0 or j) that prefetches the next chunk's blocks

		if constexpr (group_of<C>::value) {
			// Phase 2, groups: kGroups blocks at a time, every lane in
			// every step (convergent); then the warp decodes the blocks
			// the groups declined (bit j of todo: block b0+j).
			u32 todo_w = __ballot_sync(kFull, todo);
			const u32 g = lane / kGroupLanes;
			u32 *arr = sm.vals + g * C::kGroupArr;
			for (u32 j0 = 0; j0 < nb; j0 += kGroups) {
				if (j0 == (mid & ~(kGroups - 1u))) prefetch_blocks(src, src_off, b2 + lane, pf);
				const u32 j = j0 + g; // < 32: rec[j] exists, if stale
				const Rec<C::kHdr> &r = sm.rec[j];
				const bool act = j < nb && (todo_w >> j & 1) && r.m <= kMaxValues;
				u32 x[kGroupValues];
				bool ok = C::values_g(r.v, act ? r.m : 0, r.h, x, lane, arr, act);
				ok = finish_g<MODE>(x, r.m, r.base, last != nullptr, r.last, r.dst, lane, ok) && ok;
				const u32 done = __ballot_sync(kFull, ok && lane % kGroupLanes == 0);
#pragma unroll
				for (u32 k = 0; k < static_cast<u32>(kGroups); k++)
					todo_w &= ~((done >> (k * kGroupLanes) & 1) << (j0 + k));
			}
			__syncwarp(); // the groups' arrays overlay vals and aux
			for (; todo_w; todo_w &= todo_w - 1) {
				const u32 j = __ffs(todo_w) - 1;
				const u32 code = warp_block<C, MODE>(sm.rec[j], last, sm, lane);
				if (lane == j) mycode = code;
			}
		} else {
			// Phase 2: the warp decodes the chunk's blocks.
			for (u32 j = 0; j < nb; j++) {
				if (j == mid) prefetch_blocks(src, src_off, b2 + lane, pf);
				const Rec<C::kHdr> &r = sm.rec[j];
				u32 code = r.code;
				if (code == 0 && r.m > 0) code = warp_block<C, MODE>(r, last, sm, lane);
				if (lane == j) mycode = code;
			}
		}
		if (lane < nb) {
			const u32 b = b0 + lane;
			if (mycode) atomicMin(status, static_cast<ull>(b) << 8 | mycode);
			if (codes) codes[b] = mycode;
		}
		__syncwarp(); // the records are free for the next chunk
	}
}

// kernel dispatches on mode (bits 0..7) to a body compiled for it, so that
// the mode's tests cost nothing per block; bits 8..15 force the chunk size.
template <class C, int WPC>
__device__ __forceinline__ void kernel(const uint8_t *__restrict__ src, const ull *__restrict__ src_off,
                                       const ull *__restrict__ out_off, const u32 *__restrict__ base,
                                       const u32 *__restrict__ last, u32 *__restrict__ out, ull *status, u32 *codes,
                                       u32 nblocks, u32 mode) {
	__shared__ Smem<C::kHdr, C::kAux> smem[WPC];
	if ((mode & 0xff) == kDocs) {
		run<C, WPC, kDocs>(smem, src, src_off, out_off, base, last, out, status, codes, nblocks, mode >> 8);
	} else {
		run<C, WPC, kFreqs>(smem, src, src_off, out_off, base, last, out, status, codes, nblocks, mode >> 8);
	}
}

} // namespace qp_dec

// QP_DECODE_KERNEL defines extern "C" kernel NAME decoding codec CODEC with
// WPC warps per CTA, compiled for at least MINB resident CTAs per SM (a
// register cap: 65536 / (32 * WPC * MINB) registers per thread; 1 for no
// cap). Every batch decoding kernel has this parameter list (cuda/kern/decode.go
// passes DecodeParams, layout.go; the static_assert checks the list):
//
//	src, src_off, out_off, base, last, out, status, codes, nblocks, mode
//
// base may be NULL in mode kFreqs, last and codes may be NULL; bits 8..15
// of mode, when not zero, set the chunk size (tests).
#define QP_DECODE_KERNEL(NAME, CODEC, WPC, MINB)                                                                    \
	extern "C" __global__ void __launch_bounds__(32 * (WPC), MINB)                                              \
	    NAME(const uint8_t *__restrict__ src, const unsigned long long *__restrict__ src_off,                   \
	         const unsigned long long *__restrict__ out_off, const uint32_t *__restrict__ base,                 \
	         const uint32_t *__restrict__ last, uint32_t *__restrict__ out, unsigned long long *status,         \
	         uint32_t *codes, uint32_t nblocks, uint32_t mode) {                                                 \
		qp_dec::kernel<CODEC, WPC>(src, src_off, out_off, base, last, out, status, codes, nblocks, mode);    \
	}                                                                                                         \
	QP_EMU_REGISTER(NAME)                                                                                     \
	static_assert(std::is_same<decltype(&NAME), QP_SIGNATURE_DecodeParams>::value,                            \
	              #NAME "'s parameters differ from DecodeParams (cuda/kern/layout.go)");

#ifndef QP_EMU_REGISTER
#define QP_EMU_REGISTER(NAME)
#endif
