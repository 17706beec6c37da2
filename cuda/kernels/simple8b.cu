// simple8b.cu — GPU decoding of Simple8b blocks (compress/simple8b.go, Anh &
// Moffat 2010), many blocks of many lists per launch, into absolute docIDs
// or frequencies (decode.cuh).
//
// Format: uvarint(n), then 64-bit little-endian words, each a 4-bit
// selector s (bits 60..63) and N[s] values of W[s] bits:
//
//	s  0   1   2  3  4  5  6  7  8  9 10 11 12 13 14 15
//	N 240 120 60 30 20 15 12 10  8  7  6  5  4  3  2  1
//	W  0   0   1  2  3  4  5  6  7  8 10 12 15 20 30 60
//
// Decoding: every word holds at least one value, so a valid block of m <=
// 128 values has at most 128 words; lane l loads words 4l..4l+3, and a
// per-lane sum plus a warp exclusive scan of N[s] gives each word's first
// value index. Each word marks its first index in shared memory with its
// word number; a max-scan over the 128 value slots (per lane over its 4,
// then across the warp) gives every value its word, and the lane extracts
// value k of that word from the block's bytes. Balanced: no lane expands a
// 120-zero word alone.
//
// Launch shape: persistent grid of CTAs of 256 threads (8 warps), at least 5 CTAs
// per SM (48 registers); static shared memory 20480 bytes per CTA (per warp:
// 32 block records for phase 1 (decode.cuh), 512 bytes of word marks and 512 of word starts). Phase 1: one block per
// lane (the count and the word count); phase 2: one block per warp. Memory traffic per decoded
// integer: the block's bytes once (8 bytes per word; the header line read in
// phase 1, the rest prefetched into L2 and read through L1 in phase 2),
// 20 bytes of offsets and base per block (0.16 per integer, coalesced),
// 4 bytes written (16-byte stores).
//
// Validation matches compress Decode: the count, whole words only, no word
// holding more values than remain, no unused nonzero bits, selector-15
// values within 32 bits, exactly n values, no trailing words.

#include "decode.cuh"

namespace qp_s8b {

using namespace qp_dec;

__device__ __forceinline__ u32 sel_n(u32 s) {
	// N[s] packed as bytes: 240 120 60 30 | 20 15 12 10 | 8 7 6 5 | 4 3 2 1
	const u32 t = s < 4 ? 0x1e3c78f0u : s < 8 ? 0x0a0c0f14u : s < 12 ? 0x05060708u : 0x01020304u;
	return (t >> ((s & 3) * 8)) & 0xff;
}

__device__ __forceinline__ u32 sel_w(u32 s) {
	// W[s]: 0 0 1 2 | 3 4 5 6 | 7 8 10 12 | 15 20 30 60
	const u32 t = s < 4 ? 0x02010000u : s < 8 ? 0x06050403u : s < 12 ? 0x0c0a0807u : 0x3c1e140fu;
	return (t >> ((s & 3) * 8)) & 0xff;
}

// Record: h[0] = length of the count header, h[1] = number of words.
struct Codec {
	static constexpr bool kSorted = false;
	static constexpr bool kCheck = true;
	static constexpr int kHdr = 2;
	static constexpr int kAux = kMaxValues;

	__device__ __forceinline__ static u32 header(const View &v, u32 m, u32 *h) {
		const u32 hdr = count_header(v, m);
		if (!hdr) return kBadCount;
		const u32 r = v.len - hdr;
		if (r & 7) return kTruncated;
		const u32 nw = r >> 3;
		if (nw > m) return kTrailing; // every word holds >= 1 value
		if (m > 0 && nw == 0) return kTruncated;
		h[0] = hdr;
		h[1] = nw;
		return 0;
	}

	template <class S>
	__device__ __forceinline__ static u32 values(const View &v, u32 m, const u32 *h, u32 (&x)[4], S &sm, u32 lane) {
		const u32 hdr = h[0], nw = h[1];
		const u32 wp = hdr * 8;
		const u32 i0 = lane * 4;
		u32 code = 0, c[4], acc = 0;
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const u32 q = i0 + j;
			if (q < nw) {
				const ull w = v.bits64(wp + 64 * q);
				const u32 s = static_cast<u32>(w >> 60), n = sel_n(s);
				if ((w << 4 >> 4) >> (n * sel_w(s))) code = kBadPadding; // n*W <= 60
				if (s == 15 && (w << 4 >> 36)) code = kBadValue;
				acc += n;
			}
			c[j] = acc;
		}
		u32 total;
		const u32 ex = excl_sum(acc, total);
		// Word starts; mark each word's first value slot.
		u32 *mark = sm.vals, *start = sm.aux;
		*reinterpret_cast<uint4 *>(mark + i0) = make_uint4(0, 0, 0, 0);
		__syncwarp();
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const u32 q = i0 + j;
			if (q < nw) {
				const u32 st = ex + (j ? c[j - 1] : 0);
				const u32 end = ex + c[j];
				if (end > m) code = kBadCount; // the word holds more values than remain
				start[q] = st;
				if (st < m) mark[st] = q;
			}
		}
		if (total < m) code = qmax(code, kTruncated);
		code = warp_code(code);
		if (code) return code;
		__syncwarp(); // the marks
		// Owner word of each value slot: running max of the marks.
		u32 own[4], run = 0;
#pragma unroll
		for (int j = 0; j < 4; j++) {
			run = qmax(run, mark[i0 + j]);
			own[j] = run;
		}
		const u32 before = excl_max(run, 0u);
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const u32 q = qmax(own[j], before);
			const ull w = v.bits64(wp + 64 * q);
			const u32 s = static_cast<u32>(w >> 60), bw = sel_w(s);
			const u32 k = i0 + j - start[q];
			x[j] = s < 2 ? 0 : static_cast<u32>((w >> (k * bw)) & ((1ull << bw) - 1));
		}
		return 0;
	}
};

} // namespace qp_s8b

QP_DECODE_KERNEL(qp_decode_simple8b, qp_s8b::Codec, 8, 5)
