// eliasfano.cu — GPU decoding of Elias-Fano blocks (compress/eliasfano.go;
// Vigna WSDM'13, laid out for Li's Parallel-QS, NYU 2014 ch. 5), many blocks
// of many lists per launch, into absolute docIDs or frequencies
// (decode.cuh). Elias-Fano is a Sorted codec: block values are docID - base
// (no gap scan) or prefix sums of tf - 1.
//
// Format of one index block of n = m <= 128 values x_0 <= ... <= x_{n-1}:
//
//	uvarint(n), then for n > 0: uvarint(max = x_{n-1}); l = floor(log2(
//	(max+1)/n)) (0 if (max+1) < n); H = max >> l < 2n, so the upper-bits
//	array has N = n + H < 3n <= 384 bits, W = ceil(N/64) <= 6 words, one
//	512-bit counted block and therefore no stored counts; then
//	ceil(n*l/8) bytes LBA (low l bits of x_i at i*l) and W 64-bit words
//	UBA (bit h_i + i set for every i, h_i = x_i >> l).
//
// Decoding, Parallel-QS fused into one pass (Li §5.1-5.2): the LBA cut with
// decode.cuh unpack4 (lane l: x_{4l..4l+3}); the UBA cut into 32 chunks of
// 2W bits (<= 12), lane c popcounts chunk c and a warp exclusive scan of the
// counts (the block prefix sum) gives the element index i of each chunk's
// first one; the lane walks its ones (bit p of element i: h_i = p - i) and
// gathers h_i into shared memory; then x_i = h_i << l | low_i. With 32
// chunks of 2W bits instead of 4W <= 24 chunks of 16 bits (the first
// kernel), the divergent walk takes about m/32 iterations per lane (at
// most 12) instead of about m/(4W) (at most 16): the "eliasfano-v2"
// variant before it was promoted (2026-11-22, H200: +3..18% at every
// length, docs/GPU-DECODE.md). Docs add the block base,
// frequencies take differences (decode.cuh).
//
// Launch shape: persistent grid of CTAs of 256 threads (8 warps), at least 5 CTAs
// per SM (41 registers); static shared memory 18560 bytes per CTA (per warp:
// 32 block records for phase 1 (decode.cuh), 512 bytes of high parts). Phase 1: one block per
// lane (max, l, the lengths, the padding and the last UBA bit); phase 2: one block per warp. Memory traffic per decoded
// integer: the block's bytes once (about l/8 + 3/8 bytes plus the 2-6 header bytes per block; the header line read in
// phase 1, the rest prefetched into L2 and read through L1 in phase 2),
// 20 bytes of offsets and base per block (0.16 per integer, coalesced),
// 4 bytes written (16-byte stores).
//
// Validation matches compress Decode: count and max minimal uvarints, exact
// length, zero LBA padding, zero UBA bits past N with bit N-1 set, exactly n
// ones, non-decreasing values, last value = max.

#include "decode.cuh"

namespace qp_ef {

using namespace qp_dec;

// Record: h[0] = l, h[1] = bit offset of the LBA, h[2] = bit offset of the
// UBA, h[3] = W (UBA words), h[4] = max.
struct Codec {
	static constexpr bool kSorted = true;
	static constexpr bool kCheck = true;
	static constexpr bool kPrefetchNext = true; // decode.cuh: +4-5% from 2^22 to 2^26 (run 72)
	static constexpr int kHdr = 5;
	static constexpr int kAux = 0;

	__device__ __forceinline__ static u32 header(const View &v, u32 m, u32 *h) {
		const u32 hdr = count_header(v, m);
		if (!hdr) return kBadCount;
		if (m == 0) return v.len != hdr ? kTrailing : 0;
		if (m > 8ull * v.len) return kBadCount;
		u32 p = hdr;
		ull top;
		u32 code = uv64(v, p, top);
		if (code) return code;
		if (top > 0xffffffffull) return kBadValue;
		const ull q = (top + 1) / m;
		const u32 l = q ? 63 - __clzll(q) : 0;
		const u32 nbits = m + static_cast<u32>(top >> l); // < 3m: one counted block, no counts
		const u32 W = (nbits + 63) >> 6;
		const u32 nl = (m * l + 7) >> 3;
		const ull need = nl + 8ull * W;
		if (need != v.len - p) return need > v.len - p ? kTruncated : kTrailing;
		const u32 lba = p, uba = p + nl;
		if (((m * l) & 7) && (v.byte(uba - 1) >> ((m * l) & 7))) return kBadPadding;
		const u32 ub = uba * 8;
		const ull lastw = v.bits64(ub + 64 * (W - 1));
		if ((nbits & 63) && (lastw >> (nbits & 63))) return kBadPadding;
		if (!((lastw >> ((nbits - 1) & 63)) & 1)) return kBadStructure;
		h[0] = l;
		h[1] = lba * 8;
		h[2] = ub;
		h[3] = W;
		h[4] = static_cast<u32>(top);
		return 0;
	}

	template <class S>
	__device__ __forceinline__ static u32 values(const View &v, u32 m, const u32 *h, u32 (&x)[4], S &sm, u32 lane) {
		const u32 l = h[0], lp = h[1], ub = h[2], W = h[3], top = h[4];
		// Upper bits: 32 chunks of 2W <= 12 bits, one per lane.
		u32 *hv = sm.vals;
		const u32 cw = 2 * W; // chunk width in bits
		u32 ch = v.bits(ub + lane * cw, cw);
		u32 total;
		u32 i = excl_sum(static_cast<u32>(__popc(ch)), total);
		while (ch) {
			if (i < m) hv[i] = lane * cw + (__ffs(ch) - 1) - i;
			i++;
			ch &= ch - 1;
		}
		__syncwarp();
		u32 code = total != m ? kBadStructure : 0;
		const u32 i0 = lane * 4, nv = lane_count(m, lane);
		unpack4(v, lp + i0 * l, l, code ? 0 : nv, x);
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const u32 k = static_cast<u32>(j) < nv ? i0 + j : m - 1;
			x[j] = code ? 0 : static_cast<u32>(static_cast<ull>(hv[k]) << l) | x[j];
		}
		// Non-decreasing, and the last value is max.
		u32 prev = __shfl_up_sync(kFull, x[3], 1);
		if (lane == 0) prev = 0;
#pragma unroll
		for (int j = 0; j < 4; j++) {
			if (i0 + j < m) {
				if (x[j] < prev) code = qmax(code, kBadOrder);
				if (i0 + j == m - 1 && x[j] != top) code = qmax(code, kBadValue);
			}
			prev = x[j];
		}
		return code;
	}
};

} // namespace qp_ef

// At least 5 CTAs per SM. Compiled for 6 (a 40-register cap: the
// "eliasfano-v2o6" variant, 2026-11-22) it was no faster (-0..4%,
// docs/GPU-DECODE.md).
QP_DECODE_KERNEL(qp_decode_eliasfano, qp_ef::Codec, 8, 5)
