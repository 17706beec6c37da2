// parapfor.cu — GPU decoding of ParaPFor blocks (compress/parapfor.go, Ao
// et al. PVLDB'11 Appendix D), many blocks of many lists per launch, into
// absolute docIDs or frequencies (decode.cuh).
//
// Format of one index block of m <= 128 values (one 128-value segment, so
// one 4-byte header):
//
//	uvarint(m), then for m > 0: bytes b, ib, hb, en, then one LSB-first bit
//	string of m*b + en*(ib+hb) bits, zero-padded to a byte:
//	l_j at j*b (low b bits of value j), i_x at m*b + x*ib (index of the
//	x-th exception, strictly increasing, < m), h_x at m*b + en*ib + x*hb
//	(its overflow, >= 1): value i_x is l_{i_x} | h_x << b.
//
// Decoding is Algorithm 2 of Appendix D with a warp for the 128-thread
// block: every lane unpacks its four slots, writes them to shared memory,
// and after __syncwarp the lanes owning exceptions x = 4l..4l+3 read i_x and
// h_x and patch in parallel (the indices are distinct, so no atomics).
//
// Launch shape: persistent grid of CTAs of 256 threads (8 warps), at least 4 CTAs
// per SM (56 registers, no spill: at 5 CTAs, 48 registers spilled 8 bytes once
// long blocks came); static shared memory 16512 bytes per CTA (per warp:
// 32 block records for phase 1 (decode.cuh), 512 bytes of values). Phase 1: one block per
// lane (the 4-byte header and the length checks); phase 2: one block per warp. Memory traffic per decoded
// integer: the block's bytes once (b/8 per value plus (ib+hb)/8 per exception and 4 header bytes per block; the header line read in
// phase 1, the rest prefetched into L2 and read through L1 in phase 2),
// 20 bytes of offsets and base per block (0.16 per integer, coalesced),
// 4 bytes written (16-byte stores).
//
// Validation matches compress Decode: b <= 32, ib <= 7, en <= m, no widths
// without exceptions, 1 <= hb <= 32-b with exceptions, exact length, zero
// padding, indices strictly increasing and < m, overflows nonzero.

#include "decode.cuh"

namespace qp_ppf {

using namespace qp_dec;

// Record (blocks of at most 128 values): h[0] = b | ib << 8 | hb << 16 |
// en << 24, h[1] = bit offset of the body.
//
// Blocks of more than 128 values (kSeg, decode.cuh segments) are the
// format's own 128-value segments: header() checks every segment header
// and body (widths, counts, lengths, each body's padding, no trailing
// bytes) and records h[0] = the byte offset of the header array, h[1] =
// that of the first body; segment k reads its header word and decodes its
// body like a short block, the state being k << 32 | the body's byte
// offset.
struct Codec {
	static constexpr bool kSorted = false;
	static constexpr bool kCheck = true;
	static constexpr bool kSeg = true;
	static constexpr bool kSegAlways = false;
	static constexpr u32 kMaxM = kMaxSegValues;
	static constexpr int kHdr = 2;
	static constexpr int kAux = 0;

	// seg_check checks one segment header f (of a segment of sk values)
	// whose body starts at byte q and returns the body's size in bytes in
	// size.
	__device__ __forceinline__ static u32 seg_check(const View &v, u32 f, u32 sk, u32 q, u32 &size) {
		const u32 b = f & 0xff, ib = f >> 8 & 0xff, hb = f >> 16 & 0xff, en = f >> 24;
		if (b > 32 || ib > 7) return kBadWidth;
		if (en > sk) return kBadException;
		if (en == 0 && (ib | hb)) return kBadWidth;
		if (en > 0 && (hb == 0 || b + hb > 32)) return kBadWidth;
		const u32 nbits = sk * b + en * (ib + hb);
		size = (nbits + 7) >> 3;
		if (size > v.len - q) return kTruncated;
		if ((nbits & 7) && (v.byte(q + size - 1) >> (nbits & 7))) return kBadPadding;
		return 0;
	}

	__device__ static u32 long_header(const View &v, u32 m, u32 *h) {
		u32 p = 0;
		ull cnt;
		if (uv64(v, p, cnt) || cnt != m) return kBadCount;
		const u32 ns = (m + 127) >> 7;
		if (v.len - p < 4 * ns) return kTruncated;
		u32 q = p + 4 * ns;
		for (u32 k = 0; k < ns; k++) {
			u32 size;
			const u32 code = seg_check(v, v.u32at(p + 4 * k), qmin(128, m - 128 * k), q, size);
			if (code) return code;
			q += size;
		}
		if (q != v.len) return kTrailing;
		h[0] = p;
		h[1] = p + 4 * ns;
		return 0;
	}

	__device__ __forceinline__ static ull seg_start(const u32 *h) { return h[1]; }

	template <class S>
	__device__ __forceinline__ static u32 seg_values(const View &v, const u32 *h, u32 ms, ull &st, bool, u32 (&x)[4],
	                                                 S &sm, u32 lane) {
		const u32 k = static_cast<u32>(st >> 32), q = static_cast<u32>(st);
		const u32 f = v.u32at(h[0] + 4 * k), b = f & 0xff, ib = f >> 8 & 0xff, hb = f >> 16 & 0xff, en = f >> 24;
		const u32 code = body(v, ms, f, q * 8, x, sm, lane);
		st = static_cast<ull>(k + 1) << 32 | (q + ((ms * b + en * (ib + hb) + 7) >> 3));
		return code;
	}

	__device__ __forceinline__ static u32 header(const View &v, u32 m, u32 *h) {
		if (m > 128) return long_header(v, m, h);
		const u32 hdr = count_header(v, m);
		if (!hdr) return kBadCount;
		if (m == 0) return v.len != hdr ? kTrailing : 0;
		if (v.len - hdr < 4) return kTruncated;
		const u32 b = v.byte(hdr), ib = v.byte(hdr + 1), hb = v.byte(hdr + 2), en = v.byte(hdr + 3);
		if (b > 32 || ib > 7) return kBadWidth;
		if (en > m) return kBadException;
		if (en == 0 && (ib | hb)) return kBadWidth;
		if (en > 0 && (hb == 0 || b + hb > 32)) return kBadWidth;
		const u32 nbits = m * b + en * (ib + hb);
		const u32 size = (nbits + 7) >> 3;
		const u32 body = hdr + 4;
		if (size > v.len - body) return kTruncated;
		if (body + size != v.len) return kTrailing;
		if ((nbits & 7) && (v.byte(v.len - 1) >> (nbits & 7))) return kBadPadding;
		h[0] = b | ib << 8 | hb << 16 | en << 24;
		h[1] = body * 8;
		return 0;
	}

	template <class S>
	__device__ __forceinline__ static u32 values(const View &v, u32 m, const u32 *h, u32 (&x)[4], S &sm, u32 lane) {
		return body(v, m, h[0], h[1], x, sm, lane);
	}

	// body decodes a segment of m <= 128 values with header f whose body
	// starts at bit bp.
	template <class S>
	__device__ __forceinline__ static u32 body(const View &v, u32 m, u32 f, u32 bp, u32 (&x)[4], S &sm, u32 lane) {
		const u32 b = f & 0xff, ib = f >> 8 & 0xff, hb = f >> 16 & 0xff, en = f >> 24;
		const u32 i0 = lane * 4, mask = wmask(b);
#pragma unroll
		for (int j = 0; j < 4; j++) x[j] = i0 + j < m && b ? v.field(bp + (i0 + j) * b, b, mask) : 0;
		if (en == 0) return 0;

		stage4(sm.vals, lane, x);
		__syncwarp();
		const u32 io = bp + m * b, ho = io + en * ib, imask = wmask(ib), hmask = wmask(hb);
		u32 code = 0, idx[4];
#pragma unroll
		for (int j = 0; j < 4; j++) idx[j] = i0 + j < en && ib ? v.field(io + (i0 + j) * ib, ib, imask) : 0;
		u32 prev = __shfl_up_sync(kFull, idx[3], 1);
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const u32 xi = i0 + j;
			if (xi < en) {
				const u32 hi = v.field(ho + xi * hb, hb, hmask); // hb >= 1
				if (idx[j] >= m || hi == 0 || (xi > 0 && idx[j] <= prev)) code = kBadException;
				if (idx[j] < m) sm.vals[idx[j]] |= hi << b;
			}
			prev = idx[j];
		}
		__syncwarp();
		unstage4(sm.vals, lane, x);
		return code;
	}
};

} // namespace qp_ppf

QP_DECODE_KERNEL(qp_decode_parapfor, qp_ppf::Codec, 8, 4)
