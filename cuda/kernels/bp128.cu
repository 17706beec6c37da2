// bp128.cu — GPU decoding of BP128 blocks (compress/bp128.go), many blocks of
// many posting lists per launch, into absolute docIDs or frequencies.
//
// Input format: each block is one complete compress "bp128" encoding of one
// index block of m <= 128 values, exactly as index.List.DocBlock (or
// FreqBlock) returns it:
//
//	uvarint(m)            1 byte for m < 128, the 2 bytes 0x80 0x01 for 128
//	1 byte w              bit width, 0..32 (present only when m > 0)
//	ceil(m*w/8) bytes     value j at bits [j*w, (j+1)*w), LSB-first; the
//	                      padding bits of the last byte are zero
//
// Two kernels:
//
// qp_decode_bp128: the decode.cuh framework. Phase 1, per lane: the count,
// width, length and padding checks of its block. Phase 2, per group of 16
// lanes and block (decode.cuh groups, two blocks per warp step): lane t
// extracts values 8t..8t+7 with decode.cuh unpack_g (for w <= 8 one or two
// 32-bit word loads per four values, all issued before any is used, cut with
// 64-bit shifts; else two loads and a funnel shift each), the docID prefix
// sum is a per-lane sum of 8 plus a 16-lane segmented scan, and 16-byte
// stores (evict-first, decode.cuh store_out) write the result. Blocks of more than 128 values take the warp per
// block path (values(), unpack4, segments). The groups replaced the warp per
// block (run 64 of docs/GPU-TESTS.md, H100: +3 to +5% from 2^14 to 2^26;
// before them, "bp128-u4" had replaced one load per value, 2026-11-22).
// Launch shape: persistent grid of CTAs of 256 threads (8 warps), at least 5
// CTAs per SM (48 registers; at 6, 40 registers spilled); static shared
// memory 18560 bytes per CTA (per warp: 32 block records of 48 bytes, 512
// unused value bytes). Memory traffic per decoded integer: reads w/8 bytes
// of packed data in place through L1 (each 128-byte line from DRAM once: the
// header line in phase 1, the rest prefetched into L2), plus per block the
// 2-3 header bytes and 20 (24 with last) bytes of offsets, base and last
// (coalesced across the lanes of phase 1): 0.16 bytes per integer; writes 4
// bytes.
//
// qp_bp128_docs: the first kernel (baseline, kept to compare with on the
// same GPU): one 128-thread CTA per block, one thread per value,
// cub::BlockScan. Docs only. Its status codes are its own (bp128Reasons in
// cuda/kern/bp128.go).
//
// Validation (both) matches the CPU's Decode + DecodeDocs: a block is
// corrupt when its count header is not the minimal uvarint of m (m taken from
// the output offsets), its width exceeds 32, its byte length is not exactly
// header + 1 + ceil(m*w/8) (truncated or trailing bytes), its padding bits
// are not zero, or (docIDs, when last != NULL) its decoded last docID
// differs from last[i].

#include <cstdint>
#ifndef QP_EMU
#include <cub/block/block_scan.cuh>
#endif
#include "decode.cuh"
#include "query_params.cuh"

namespace qp_bp128 {

using namespace qp_dec;

// Codec is BP128 for decode.cuh. Record: h[0] = width w, h[1] = bit offset
// of the packed values; values cut with unpack4 (decode.cuh).
//
// Blocks of more than 128 values (kSeg, decode.cuh segments) are the
// codec's own sub-blocks of 128: header() walks and checks all of them
// (width <= 32, length, zero padding of each, no trailing bytes) and
// records h[0] = the byte offset of the first width byte; segment s reads
// its width byte at the state st and moves st past its packed values.
struct Codec {
	static constexpr bool kSorted = false;
	static constexpr u32 kChunk = 8;    // max_chunk (decode.cuh)
	static constexpr bool kCheck = false;
	static constexpr bool kSeg = true;
	static constexpr u32 kMaxM = kMaxSegValues;
	static constexpr bool kSegAlways = false;
	static constexpr int kHdr = 2;
	static constexpr bool kGroup = true; // values_g, decode.cuh
	static constexpr u32 kGroupArr = 0; // values_g needs no shared memory
	static constexpr int kAux = 0;

	// long_header is header() for m > 128.
	__device__ static u32 long_header(const View &v, u32 m, u32 *h) {
		u32 p = 0;
		ull cnt;
		if (uv64(v, p, cnt) || cnt != m) return kBadCount;
		h[0] = p;
		for (u32 s = 0; s < m; s += 128) {
			const u32 ms = qmin(128, m - s);
			if (p >= v.len) return kTruncated;
			const u32 w = v.byte(p);
			if (w > 32) return kBadWidth;
			const u32 nb = (ms * w + 7) >> 3;
			if (nb > v.len - p - 1) return kTruncated;
			const u32 pad = nb * 8 - ms * w;
			if (pad && (v.byte(p + nb) >> (8 - pad))) return kBadPadding;
			p += 1 + nb;
		}
		return p != v.len ? kTrailing : 0;
	}

	__device__ __forceinline__ static ull seg_start(const u32 *h) { return h[0]; }

	template <class S>
	__device__ __forceinline__ static u32 seg_values(const View &v, const u32 *, u32 ms, ull &st, bool, u32 (&x)[4], S &, u32 lane) {
		const u32 p = static_cast<u32>(st), w = v.byte(p);
		unpack4(v, (p + 1) * 8 + lane * 4 * w, w, lane_count(ms, lane), x);
		st = p + 1 + ((ms * w + 7) >> 3);
		return 0;
	}

	__device__ __forceinline__ static u32 header(const View &v, u32 m, u32 *h) {
		if (m > 128) return long_header(v, m, h);
		const u32 hdr = count_header(v, m);
		if (!hdr) return kBadCount;
		if (m == 0) return v.len != 1 ? kTrailing : 0;
		if (v.len < hdr + 1) return kTruncated;
		const u32 w = v.byte(hdr);
		if (w > 32) return kBadWidth;
		const u32 nb = (m * w + 7) >> 3;
		const u32 want = hdr + 1 + nb;
		if (v.len < want) return kTruncated;
		if (v.len > want) return kTrailing;
		const u32 pad = nb * 8 - m * w;
		if (pad && (v.byte(hdr + nb) >> (8 - pad))) return kBadPadding;
		h[0] = w;
		h[1] = (hdr + 1) * 8;
		return 0;
	}

	// values_g (decode.cuh, groups): a lane's kGroupValues values; it takes
	// every block of at most 128 values.
	__device__ __forceinline__ static bool values_g(const View &v, u32 m, const u32 *h, u32 (&x)[kGroupValues],
	                                                u32 lane, u32 *, bool act) {
		const u32 w = act ? h[0] : 0, t = lane % kGroupLanes;
		unpack_g(v, h[1] + t * kGroupValues * w, w, act ? group_count(m, t) : 0, x);
		return act;
	}

	template <class S>
	__device__ __forceinline__ static u32 values(const View &v, u32 m, const u32 *h, u32 (&x)[4], S &, u32 lane) {
		const u32 w = h[0];
		unpack4(v, h[1] + lane * 4 * w, w, lane_count(m, lane), x);
		return 0;
	}
};

} // namespace qp_bp128

QP_DECODE_KERNEL(qp_decode_bp128, qp_bp128::Codec, 8, 5)

// ---- qp_bp128_docs: the baseline kernel ----
//
// Launch shape: grid (nblocks, 1, 1), block (128, 1, 1), one thread block per
// encoded block and one thread per value; static shared memory: 528 bytes of
// packed words plus CUB's scan storage. Memory traffic per integer as above,
// but the packed data is read as aligned 32-bit words and the output written
// with 4-byte stores.

namespace qp_bp128_legacy {

constexpr int kBlockValues = 128;

// Status codes; keep in sync with bp128Reasons in cuda/kern/bp128.go.
enum : unsigned {
	kBadCount = 1,   // count header is not the minimal uvarint of m, or m > 128
	kBadWidth = 2,   // bit width > 32
	kTruncated = 3,  // fewer bytes than the header and width need
	kTrailing = 4,   // more bytes than the header and width need
	kBadPadding = 5, // nonzero padding bits in the last data byte
	kBadLast = 6,    // last decoded docID differs from last[i]
};

__device__ __forceinline__ void report(unsigned long long *status, unsigned blk, unsigned code) {
	atomicMin(status, (static_cast<unsigned long long>(blk) << 8) | code);
}

extern "C" __global__ void __launch_bounds__(kBlockValues)
qp_bp128_docs(const uint8_t *__restrict__ src,
              const unsigned long long *__restrict__ src_off,
              const unsigned long long *__restrict__ out_off,
              const uint32_t *__restrict__ base,
              const uint32_t *__restrict__ last,  // may be NULL
              uint32_t *__restrict__ out,
              unsigned long long *__restrict__ status) {
	typedef cub::BlockScan<uint32_t, kBlockValues, cub::BLOCK_SCAN_WARP_SCANS> Scan;
	__shared__ typename Scan::TempStorage scan_tmp;
	// Up to 3 bytes of misalignment + 512 data bytes = 129 words, plus one
	// zero word for the 64-bit extraction window of the last value.
	__shared__ uint32_t words[132];

	const unsigned blk = blockIdx.x;
	const unsigned t = threadIdx.x;
	const unsigned long long s = src_off[blk];
	const unsigned long long len = src_off[blk + 1] - s;
	const unsigned long long o = out_off[blk];
	const unsigned long long m64 = out_off[blk + 1] - o;

	// Header checks: every thread reads the same bytes (broadcast loads), so
	// the verdict is uniform across the thread block and an early return
	// cannot split a __syncthreads.
	unsigned code = 0, m = 0, hdr = 1, w = 0, nb = 0;
	if (m64 > kBlockValues) {
		code = kBadCount;
	} else {
		m = static_cast<unsigned>(m64);
		hdr = m == kBlockValues ? 2 : 1;
		if (len < hdr) {
			code = kBadCount;
		} else if (m == kBlockValues ? (src[s] != 0x80 || src[s + 1] != 0x01) : src[s] != m) {
			code = kBadCount;
		} else if (m == 0) {
			if (len != 1) code = kTrailing;
		} else if (len < hdr + 1) {
			code = kTruncated;
		} else {
			w = src[s + hdr];
			if (w > 32) {
				code = kBadWidth;
			} else {
				nb = (m * w + 7) >> 3;
				const unsigned long long want = hdr + 1 + nb;
				const unsigned pad = nb * 8 - m * w;
				if (len < want) {
					code = kTruncated;
				} else if (len > want) {
					code = kTrailing;
				} else if (pad > 0 && (src[s + hdr + nb] >> (8 - pad)) != 0) {
					code = kBadPadding;
				}
			}
		}
	}
	if (code != 0) {
		if (t == 0) report(status, blk, code);
		return;
	}
	if (m == 0) return;

	// Stage the packed data in shared memory with aligned, coalesced 32-bit
	// loads; words past the data are zero.
	const unsigned long long d0 = s + hdr + 1;
	const unsigned long long a0 = d0 & ~3ull;
	const unsigned mis = static_cast<unsigned>(d0 - a0);
	const unsigned nwords = (mis + nb + 3) >> 2;
	const uint32_t *wsrc = reinterpret_cast<const uint32_t *>(src + a0);
	for (unsigned i = t; i < 132; i += kBlockValues) {
		words[i] = i < nwords ? wsrc[i] : 0u;
	}
	__syncthreads();

	uint32_t v = 0;
	if (t < m && w != 0) {
		const unsigned p = mis * 8 + t * w;
		const unsigned k = p >> 5;
		const unsigned long long win =
		    (static_cast<unsigned long long>(words[k + 1]) << 32) | words[k];
		v = static_cast<uint32_t>(win >> (p & 31)) & static_cast<uint32_t>((1ull << w) - 1);
	}
	Scan(scan_tmp).InclusiveSum(v, v);
	const uint32_t d = base[blk] + v + t;
	if (t < m) {
		out[o + t] = d;
		if (t == m - 1 && last != nullptr && d != last[blk]) report(status, blk, kBadLast);
	}
}

QP_EMU_REGISTER(qp_bp128_docs)
static_assert(std::is_same<decltype(&qp_bp128_docs), QP_SIGNATURE_BP128DocsParams>::value,
              "qp_bp128_docs's parameters differ from BP128DocsParams (cuda/kern/layout.go)");

}  // namespace qp_bp128_legacy
