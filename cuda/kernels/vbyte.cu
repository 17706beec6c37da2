// vbyte.cu — GPU decoding of VByte blocks (compress/vbyte.go: uvarint
// count, then one minimal uvarint per value, at most 5 bytes, 32 bits),
// many blocks of many lists per launch, into absolute docIDs or frequencies
// (decode.cuh). VByte is the CPU baseline codec; this kernel exists so that
// every index decodes on the GPU.
//
// Decoding: the value bytes are read in windows of 128 bytes, lane l taking
// bytes 4l..4l+3. A byte below 0x80 ends a value; each lane counts its
// terminators and a warp exclusive scan gives the value index of its
// first; an exclusive max-scan of each lane's last terminator position
// gives the position before the first (a value starts after the previous
// terminator). Each lane then assembles its values (1-5 bytes each) from
// the block's bytes into shared memory. A window ends at its last complete
// value; the next starts after it, so a block takes 1 (one-byte values) to
// 6 windows.
//
// Launch shape: persistent grid of CTAs of 256 threads (8 warps), at least 4 CTAs
// per SM (64 registers: at 5, 48 registers spilled 92 bytes once the block
// records held their View; at 4 it is as fast at 2^26 and 11% faster on
// batched short lists, run 38 of docs/GPU-TESTS.md); static shared memory
// 18560 bytes per CTA (per warp:
// 32 block records for phase 1 (decode.cuh), 512 bytes of values). Phase 1: one block per
// lane (the count); phase 2: one block per warp. Memory traffic per decoded
// integer: the block's bytes once (1-5 bytes per value; the header line read in
// phase 1, the rest prefetched into L2 and read through L1 in phase 2),
// 20 bytes of offsets and base per block (0.16 per integer, coalesced),
// 4 bytes written (16-byte stores).
//
// Validation matches compress Decode: the count, every value minimal, at
// most 5 bytes and 32 bits, no truncation, no bytes after the m-th value.

#include "decode.cuh"

namespace qp_vbyte {

using namespace qp_dec;

// Record: h[0] = length of the count header.
//
// Blocks of more than 128 values (kSeg, decode.cuh segments): the stream
// of values is decoded 128 at a time, each segment starting at the byte
// after the previous one's last value (the state); only the last checks
// for trailing bytes. Blocks of at most 128 values are one segment.
struct Codec {
	static constexpr bool kSorted = false;
	static constexpr u32 kChunk = 8;    // max_chunk (decode.cuh)
	static constexpr bool kCheck = true;
	static constexpr bool kSeg = true;
	static constexpr u32 kMaxM = kMaxSegValues;
	static constexpr bool kSegAlways = true; // values() is never called
	static constexpr int kHdr = 1;
	static constexpr int kAux = 0;

	__device__ __forceinline__ static u32 header(const View &v, u32 m, u32 *h) {
		if (m > 128) {
			u32 p = 0;
			ull cnt;
			if (uv64(v, p, cnt) || cnt != m) return kBadCount;
			h[0] = p;
			return 0;
		}
		const u32 hdr = count_header(v, m);
		if (!hdr) return kBadCount;
		if (m == 0) return v.len != hdr ? kTrailing : 0;
		h[0] = hdr;
		return 0;
	}

	template <class S>
	__device__ __forceinline__ static u32 values(const View &v, u32 m, const u32 *h, u32 (&x)[4], S &sm, u32 lane) {
		u32 p = h[0];
		return decode_from(v, m, p, true, x, sm, lane);
	}

	__device__ __forceinline__ static ull seg_start(const u32 *h) { return h[0]; }

	template <class S>
	__device__ __forceinline__ static u32 seg_values(const View &v, const u32 *, u32 ms, ull &st, bool fin, u32 (&x)[4], S &sm,
	                                                 u32 lane) {
		u32 p = static_cast<u32>(st);
		const u32 code = decode_from(v, ms, p, fin, x, sm, lane);
		st = p;
		return code;
	}

	// decode_from decodes m <= 128 values starting at byte p and leaves p
	// after the last; fin: no bytes may follow.
	template <class S>
	__device__ __forceinline__ static u32 decode_from(const View &v, u32 m, u32 &p, bool fin, u32 (&x)[4], S &sm,
	                                                  u32 lane) {
		u32 done = 0; // values decoded; p: first byte of the window (after the last complete value)
		u32 code = 0;
		while (done < m) {
			if (p >= v.len) {
				code = kTruncated;
				break;
			}
			// Terminators among my four bytes.
			const u32 q = p + lane * 4;
			u32 tmask = 0, lastpos = 0;
#pragma unroll
			for (int j = 0; j < 4; j++) {
				if (q + j < v.len && v.byte(q + j) < 0x80) {
					tmask |= 1u << j;
					lastpos = q + j + 1; // position + 1, so that 0 means none
				}
			}
			u32 total;
			const u32 first = excl_sum(static_cast<u32>(__popc(tmask)), total);
			u32 start = excl_max(lastpos, p); // one past the previous terminator
			if (total == 0) {
				// No value ends in the window: longer than 5 bytes, or truncated.
				code = p + 128 <= v.len ? kBadValue : kTruncated;
				break;
			}
			u32 idx = done + first;
#pragma unroll
			for (int j = 0; j < 4; j++) {
				if (tmask >> j & 1) {
					const u32 end = q + j; // terminator position
					if (idx < m) {
						const u32 n = end - start + 1;
						if (n > 5) {
							code = kBadValue;
						} else {
							u32 val = 0, c = 0;
							for (u32 k = 0; k < n; k++) {
								c = v.byte(start + k);
								val |= (c & 0x7f) << (7 * k);
							}
							if ((n == 5 && c > 0x0f) || (n > 1 && c == 0)) code = kBadValue;
							sm.vals[idx] = val;
						}
					}
					idx++;
					start = end + 1;
				}
			}
			code = warp_code(code);
			if (code) break;
			// The window ends after terminator number `used` - 1.
			const u32 used = qmin(total, m - done);
			const u32 k = used - 1; // index among the window's terminators
			const bool mine = first <= k && k < first + __popc(tmask);
			u32 endpos = 0;
			if (mine) {
				u32 t = tmask;
				for (u32 r = k - first; r > 0; r--) t &= t - 1;
				endpos = q + __ffs(t); // one past the terminator
			}
			p = __reduce_max_sync(kFull, endpos);
			done += used;
		}
		if (code == 0 && fin && p != v.len) code = kTrailing;
		__syncwarp();
		const u32 i0 = lane * 4;
#pragma unroll
		for (int j = 0; j < 4; j++) x[j] = sm.vals[i0 + j];
		return code;
	}
};

} // namespace qp_vbyte

QP_DECODE_KERNEL(qp_decode_vbyte, qp_vbyte::Codec, 8, 4)
