// lrc.cu — GPU decoding of the Linear Regression Compression family
// (compress/lrc.go, lrcseg.go, seglrc.go, hslrc.go, lrcfit.go; Ao et al.
// PVLDB'11 §5.2), many blocks of many lists per launch, into absolute docIDs
// or frequencies (decode.cuh). The family is Sorted: block values are
// docID - base, or prefix sums of tf - 1.
//
// Every element decodes alone (random access, §5.3): with an exact integer
// line per piece,
//
//	v[i] = base + floor(slope*(i-o) / 2^32) + slot(i)   (int64; slot <= span)
//
// so lane l evaluates v[4l..4l+3] directly: one 64-bit multiply, one funnel
// shift for the w-bit slot, adds. No scan, no shared memory beyond the
// block records.
//
// qp_decode_lrc serves lrc (blocks of up to 2^16 values, decode.cuh
// segments), qp_decode_lrc256 lrcseg and seglrc: for n <= 256 values the
// segmented codecs write byte for byte the LRC form (longer blocks are
// unsupported: kTooLong):
//
//	n u32, span u32, slope u64, base i64, then ceil(n*w/8) bytes of w-bit
//	slots, w = bitlen(span).
//
// qp_decode_hslrc: HS-LRC (hash-segmented LRC): n u32, sh u32, d u32,
// ptr[0..d] u32, zero padding to T = 8-aligned, d bucket headers of 24
// bytes (slope u64, base i64, span u32, off u32), then the slot area:
// bucket h's slots at word off_h, one line per bucket. Element i's bucket is
// the last h with ptr[h] <= i (binary search over the bucket pointers);
// lanes also check every bucket header (pointers, lines, the off_h chain by
// a warp exclusive scan of bucket word counts, empty buckets zero). The
// encoder writes one bucket for n <= 256; any d <= n decodes.
//
// Launch shape (both): persistent grid of CTAs of 256 threads (8 warps), at
// least 5 (lrc, lrc256: 48 registers) or 4 (hslrc, 64 registers) CTAs per SM;
// static shared memory 20608 / 18560 bytes per CTA (per warp: 32 block
// records for phase 1, decode.cuh). Phase 1: one block per lane (the
// header, the line range and the length; for HS-LRC every bucket header);
// phase 2: one block per warp. Memory traffic per decoded integer: the
// block's bytes once (w/8 bytes of slots plus 24 header bytes per block;
// the header line read in phase 1, the rest prefetched into L2 and read
// through L1 in phase 2), 20 bytes of offsets and base per block (0.16 per
// integer, coalesced), 4 bytes written (16-byte stores).
//
// Validation matches compress Decode: count, line range (|base| <= 2^32-1,
// slope*(n-1) < 2^64), exact length, every slot <= span, values
// non-decreasing and <= 2^32-1; HS-LRC also its hash parameters, pointers,
// bucket lines, slot offsets and that every bucket's first and last value
// hash to it. Slot padding is ignored, as on the CPU.

#include "decode.cuh"

namespace qp_lrc {

using namespace qp_dec;

constexpr i64 kMaxBase = 0xffffffffll;

// line_ok is lrcLineOK: |base| <= 2^32-1 and slope*maxj < 2^64.
__device__ __forceinline__ bool line_ok(ull slope, i64 base, u32 maxj) {
	return base >= -kMaxBase && base <= kMaxBase && __umul64hi(slope, maxj) == 0;
}

// order checks that the values v (value 4*lane+j in v[j], valid below m)
// are non-decreasing from 0 and the last is <= 2^32-1.
__device__ __forceinline__ u32 order(const i64 (&v)[4], u32 m, u32 lane) {
	i64 prev = __shfl_up_sync(kFull, v[3], 1);
	if (lane == 0) prev = 0;
	u32 code = 0;
#pragma unroll
	for (int j = 0; j < 4; j++) {
		const u32 i = lane * 4 + j;
		if (i < m) {
			if (v[j] < prev) code = kBadOrder;
			if (i == m - 1 && v[j] > kMaxBase) code = kBadValue;
		}
		prev = v[j];
	}
	return code;
}

// CodecT is LRC (and LRCSeg, SegLRC for n <= 256) for blocks of up to
// MAXM values. Record: h[0] = span, h[1..2] = slope, h[3..4] = base, h[5] =
// w. Blocks of more than 128 values (kSeg, decode.cuh segments) are one
// line like any other; segment k evaluates elements 128k + 4l + j, and its
// lane 0 takes element 128k - 1, left in sm.aux by the previous segment,
// for the order check across segments.
template <u32 MAXM>
struct CodecT {
	static constexpr bool kSorted = true;
	static constexpr bool kCheck = true;
	static constexpr bool kSeg = MAXM > kMaxValues;
	static constexpr bool kSegAlways = true; // one copy of the decoder (values() is unused): no spills
	static constexpr u32 kMaxM = MAXM;
	static constexpr int kHdr = 6;
	static constexpr int kAux = kSeg ? 2 : 0;

	__device__ __forceinline__ static ull seg_start(const u32 *) { return 0; }

	template <class S>
	__device__ __forceinline__ static u32 seg_values(const View &v, const u32 *h, u32 ms, ull &st, bool fin,
	                                                 u32 (&x)[4], S &sm, u32 lane) {
		const u32 span = h[0], w = h[5];
		const ull slope = h[1] | static_cast<ull>(h[2]) << 32;
		const i64 base = static_cast<i64>(h[3] | static_cast<ull>(h[4]) << 32);
		const u32 mask = wmask(w);
		u32 code = 0;
		i64 val[4];
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const u32 k = lane * 4 + j, i = static_cast<u32>(st) + k;
			const u32 s = k < ms && w ? v.field(192 + i * w, w, mask) : 0;
			val[j] = base + static_cast<i64>((slope * i) >> 32) + s;
			if (k < ms && s > span) code = kBadValue;
			x[j] = static_cast<u32>(val[j]);
		}
		// Non-decreasing from the previous segment's last element (0 before
		// the first), and the block's last value <= 2^32-1.
		i64 prev = __shfl_up_sync(kFull, val[3], 1);
		if (lane == 0) prev = st > 0 ? static_cast<i64>(sm.aux[0] | static_cast<ull>(sm.aux[1]) << 32) : 0;
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const u32 k = lane * 4 + j;
			if (k < ms) {
				if (val[j] < prev) code = kBadOrder;
				if (fin && k == ms - 1 && val[j] > kMaxBase) code = kBadValue;
			}
			prev = val[j];
		}
		__syncwarp(); // lane 0 has read the previous segment's last value
		if (lane == 31) {
			sm.aux[0] = static_cast<u32>(val[3]);
			sm.aux[1] = static_cast<u32>(static_cast<ull>(val[3]) >> 32);
		}
		st += ms;
		return code;
	}

	__device__ __forceinline__ static u32 header(const View &v, u32 m, u32 *h) {
		if (v.len < 4) return kTruncated;
		const u32 n = v.u32at(0);
		if (n > 0x7fffffffu || n != m) return kBadCount;
		if (m == 0) return v.len != 4 ? kTrailing : 0;
		if (v.len < 24) return kTruncated;
		const u32 span = v.u32at(4);
		const ull slope = v.u64at(8);
		const i64 base = static_cast<i64>(v.u64at(16));
		if (!line_ok(slope, base, m - 1)) return kBadValue;
		const u32 w = bitlen(span);
		const u32 want = 24 + ((m * w + 7) >> 3);
		if (v.len != want) return v.len < want ? kTruncated : kTrailing;
		h[0] = span;
		h[1] = static_cast<u32>(slope);
		h[2] = static_cast<u32>(slope >> 32);
		h[3] = static_cast<u32>(base);
		h[4] = static_cast<u32>(static_cast<ull>(base) >> 32);
		h[5] = w;
		return 0;
	}

	// values is never called (kSegAlways): a block of m <= 128 values is
	// one segment.
	template <class S>
	__device__ __forceinline__ static u32 values(const View &v, u32 m, const u32 *h, u32 (&x)[4], S &sm, u32 lane) {
		ull st = 0;
		return seg_values(v, h, m, st, true, x, sm, lane);
	}
};

using Codec = CodecT<kMaxSegValues>;  // lrc: one line of any length
using Codec256 = CodecT<256>;         // lrcseg, seglrc: the LRC form up to 256 values

// HSCodec is HS-LRC. Record: h[0] = sh, h[1] = d, h[2] = T (bucket table),
// h[3] = S (slot area). Every bucket header is checked per lane in header(),
// a serial walk (one bucket for canonical blocks).
struct HSCodec {
	static constexpr bool kSorted = true;
	static constexpr bool kCheck = true;
	static constexpr int kHdr = 4;
	static constexpr int kAux = 0;

	__device__ __forceinline__ static u32 header(const View &v, u32 m, u32 *h) {
		if (v.len < 4) return kTruncated;
		const u32 n = v.u32at(0);
		if (n > 0x7fffffffu || n != m) return kBadCount;
		if (m == 0) return v.len != 4 ? kTrailing : 0;
		if (v.len < 16) return kTruncated;
		const u32 sh = v.u32at(4), d = v.u32at(8);
		if (sh > 32 || d < 1 || d > m || (sh == 32 && d != 1) ||
		    (sh < 32 && (static_cast<ull>(d - 1) << sh) > 0xffffffffull))
			return kBadStructure;
		const u32 T = (16 + 4 * d + 7) & ~7u, S0 = T + 24 * d;
		if (v.len < S0) return kTruncated;
		if (v.u32at(12) != 0 || v.u32at(12 + 4 * d) != m || v.u32at(12 + 4 * (d - 1)) >= m) return kBadStructure;
		const ull area = v.len - S0;
		{
			const u32 hd = T + 24 * (d - 1);
			const u32 wl = bitlen(v.u32at(hd + 16));
			const ull words = v.u32at(hd + 20) + ((static_cast<ull>(m - v.u32at(12 + 4 * (d - 1))) * wl + 31) >> 5);
			if (area != 4 * words) return area < 4 * words ? kTruncated : kTrailing;
		}
		// Every bucket: pointers, slot offsets chain, line, empty buckets zero.
		ull words = 0;
		for (u32 g = 0; g < d; g++) {
			const u32 a = v.u32at(12 + 4 * g), b = v.u32at(16 + 4 * g), hd = T + 24 * g;
			const ull slope = v.u64at(hd);
			const i64 base = static_cast<i64>(v.u64at(hd + 8));
			const u32 span = v.u32at(hd + 16), w = bitlen(span), off = v.u32at(hd + 20);
			if (off != words || a > b || b > m) return kBadStructure;
			const u32 len = b - a;
			if (4ull * off > area || area - 4ull * off < ((static_cast<ull>(len) * w + 7) >> 3)) return kBadStructure;
			if (len > 0 ? !line_ok(slope, base, len - 1) : (slope | static_cast<ull>(base) | span) != 0)
				return kBadStructure;
			words += (static_cast<ull>(len) * w + 31) >> 5;
		}
		h[0] = sh;
		h[1] = d;
		h[2] = T;
		h[3] = S0;
		return 0;
	}

	template <class S>
	__device__ __forceinline__ static u32 values(const View &v, u32 m, const u32 *h, u32 (&x)[4], S &, u32 lane) {
		const u32 sh = h[0], d = h[1], T = h[2];
		const u32 sp = h[3] * 8;
		auto ptr = [&](u32 g) { return v.u32at(12 + 4 * g); };
		u32 code = 0;
		i64 val[4];
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const u32 i = lane * 4 + j;
			val[j] = 0;
			x[j] = 0;
			if (i < m) {
				// Element i is in the last bucket g with ptr[g] <= i.
				u32 lo = 0, hi = d - 1;
				while (lo < hi) {
					const u32 mid = (lo + hi + 1) >> 1;
					if (ptr(mid) <= i) {
						lo = mid;
					} else {
						hi = mid - 1;
					}
				}
				const u32 a = ptr(lo), b = ptr(lo + 1), hd = T + 24 * lo;
				const ull slope = v.u64at(hd);
				const i64 base = static_cast<i64>(v.u64at(hd + 8));
				const u32 span = v.u32at(hd + 16), w = bitlen(span), off = v.u32at(hd + 20);
				const u32 k = i - a;
				const u32 s = w ? v.field(sp + 32 * off + k * w, w, wmask(w)) : 0;
				val[j] = base + static_cast<i64>((slope * k) >> 32) + s;
				x[j] = static_cast<u32>(val[j]);
				if (s > span) code = kBadValue;
				if ((i == a || i + 1 == b) && (static_cast<ull>(x[j]) >> sh) != lo) code = kBadStructure;
			}
		}
		return qmax(code, order(val, m, lane));
	}
};

} // namespace qp_lrc

QP_DECODE_KERNEL(qp_decode_lrc, qp_lrc::Codec, 8, 5)
QP_DECODE_KERNEL(qp_decode_lrc256, qp_lrc::Codec256, 8, 5)
QP_DECODE_KERNEL(qp_decode_hslrc, qp_lrc::HSCodec, 8, 4)
