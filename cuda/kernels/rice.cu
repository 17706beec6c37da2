// rice.cu — GPU decoding of Rice blocks (compress/rice.go, the layout of
// Ding et al. WWW'09 §6), many blocks of many lists per launch, into
// absolute docIDs or frequencies (decode.cuh).
//
// Format of one index block of m <= 128 values (one 128-value block, so no
// block offsets are stored):
//
//	uvarint(m), then for m > 0: byte b (0..32), uvarint U (unary bits,
//	n + sum of quotients), ceil(m*b/8) bytes of b-bit remainders r_i,
//	ceil(U/8) bytes of unary codes: q_i zero bits then a one, LSB-first.
//	value i = q_i << b | r_i.
//
// Decoding by two prefix sums (Ding §6): (1) the unary array is cut into
// 32-bit words, lane k popcounts word k and a warp exclusive scan of the
// counts gives the index of the first code ending in each word; each lane
// then writes the bit position of each of its ones (the terminator of code
// i) to shared memory, and q_i = pos_i - pos_{i-1} - 1; (2) decode.cuh's
// docID prefix sum. The remainders are a BP128-style unpack. Unary arrays of
// more than 1024 bits take several rounds of the warp.
//
// Launch shape: persistent grid of CTAs of 256 threads (8 warps), at least 5 CTAs
// per SM (40 registers); static shared memory 22528 bytes per CTA (per warp:
// 32 block records for phase 1 (decode.cuh), 512 bytes of terminator positions). Phase 1: one block per
// lane (b, U and the lengths and paddings); phase 2: one block per warp. Memory traffic per decoded
// integer: the block's bytes once (b/8 + (1 + q)/8 bytes; the header line read in
// phase 1, the rest prefetched into L2 and read through L1 in phase 2),
// 20 bytes of offsets and base per block (0.16 per integer, coalesced),
// 4 bytes written (16-byte stores).
//
// Validation matches compress Decode: b <= 32, U minimal and >= m, exact
// lengths, zero padding in both arrays, exactly m terminators with the last
// at bit U-1, every quotient <= (2^32-1) >> b. Unsupported (kTooLong, not
// corrupt): U >= 2^32 (a block of over 512 MiB).

#include "decode.cuh"

namespace qp_rice {

using namespace qp_dec;

// Record: h[0] = b, h[1] = U, h[2] = bit offset of the remainders, h[3] =
// bit offset of the unary codes.
struct Codec {
	static constexpr bool kSorted = false;
	static constexpr bool kCheck = true;
	static constexpr int kHdr = 4;
	static constexpr int kAux = kMaxValues;

	__device__ __forceinline__ static u32 header(const View &v, u32 m, u32 *h) {
		const u32 hdr = count_header(v, m);
		if (!hdr) return kBadCount;
		if (m == 0) return v.len != hdr ? kTrailing : 0;
		u32 p = hdr;
		if (p >= v.len) return kTruncated;
		const u32 b = v.byte(p++);
		if (b > 32) return kBadWidth;
		ull U;
		u32 code = uv64(v, p, U);
		if (code) return code;
		if (U > 8ull * v.len) return kBadValue;
		if (U < m) return kBadStructure;
		const u32 nb = (m * b + 7) >> 3;
		if (nb > v.len - p) return kTruncated;
		const u32 bin = p;
		p += nb;
		const ull want = (U + 7) >> 3;
		if (v.len - p != want) return v.len - p < want ? kTruncated : kTrailing;
		const u32 u = static_cast<u32>(U); // < 2^31: the block is < 2^28 bytes
		const u32 pad = nb * 8 - m * b;
		if (pad && (v.byte(bin + nb - 1) >> (8 - pad))) return kBadPadding;
		if ((u & 7) && (v.byte(v.len - 1) >> (u & 7))) return kBadPadding;
		h[0] = b;
		h[1] = u;
		h[2] = bin * 8;
		h[3] = p * 8;
		return 0;
	}

	template <class S>
	__device__ __forceinline__ static u32 values(const View &v, u32 m, const u32 *h, u32 (&x)[4], S &sm, u32 lane) {
		const u32 b = h[0], u = h[1], bp = h[2], up = h[3];
		const u32 maxq = static_cast<u32>(0xffffffffull >> b);
		// Terminator positions, 32 unary words per round.
		u32 *pos = sm.aux;
		const u32 nwords = (u + 31) >> 5;
		u32 cnt = 0;
		for (u32 w0 = 0; w0 < nwords; w0 += 32) {
			const u32 k = w0 + lane;
			u32 bits = 0;
			if (k < nwords) {
				bits = v.bits(up + k * 32, 32);
				const u32 rest = u - k * 32;
				if (rest < 32) bits &= (1u << rest) - 1;
			}
			u32 total;
			u32 idx = cnt + excl_sum(static_cast<u32>(__popc(bits)), total);
			while (bits) {
				if (idx < m) pos[idx] = k * 32 + (__ffs(bits) - 1);
				idx++;
				bits &= bits - 1;
			}
			cnt += total;
			if (cnt > m) break;
		}
		__syncwarp();
		u32 code = 0;
		if (cnt != m || pos[m - 1] != u - 1) code = kBadStructure;
		const u32 i0 = lane * 4, mask = wmask(b);
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const u32 i = i0 + j;
			x[j] = 0;
			if (code == 0 && i < m) {
				const u32 q = pos[i] - (i ? pos[i - 1] + 1 : 0);
				if (q > maxq) code = kBadValue;
				x[j] = static_cast<u32>(static_cast<ull>(q) << b) | (b ? v.field(bp + i * b, b, mask) : 0);
			}
		}
		return code;
	}
};

} // namespace qp_rice

QP_DECODE_KERNEL(qp_decode_rice, qp_rice::Codec, 8, 5)
