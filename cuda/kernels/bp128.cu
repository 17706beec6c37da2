// bp128.cu — GPU decoding of BP128 docID blocks (compress/bp128.go) into
// absolute docIDs, many blocks of many posting lists per launch.
//
// Input format: each block is one complete compress "bp128" encoding of one
// index block of m <= 128 d-gaps, exactly as index.List.DocBlock returns it:
//
//	uvarint(m)            1 byte for m < 128, the 2 bytes 0x80 0x01 for 128
//	1 byte w              bit width, 0..32 (present only when m > 0)
//	ceil(m*w/8) bytes     value j at bits [j*w, (j+1)*w), LSB-first; the
//	                      padding bits of the last byte are zero
//
// The values are the index's General-codec docID gaps (index/list.go,
// DecodeDocs): v[0] = d[0] - base, v[j] = d[j] - d[j-1] - 1, so
//
//	d[j] = base + v[0] + ... + v[j] + j       (mod 2^32, like the CPU)
//
// which is an inclusive prefix sum (cub::BlockScan) plus the thread index.
//
// Validation matches the CPU's Decode + DecodeDocs: a block is corrupt when
// its count header is not the minimal uvarint of m (m taken from the output
// offsets; m > 128 is corrupt too), its width exceeds 32, its byte length is
// not exactly header + 1 + ceil(m*w/8) (truncated or trailing bytes), its
// padding bits are not zero, or (when last != NULL) its decoded last docID
// differs from last[i]. A corrupt block reports (i << 8 | code) to *status
// with atomicMin, so after the launch *status holds the lowest corrupt block
// and its code, or stays at the all-ones value the host stored before the
// launch. Blocks with a bad header write nothing; once any block is corrupt
// the caller must treat all of out as unspecified.
//
// Launch shape: grid (nblocks, 1, 1), block (128, 1, 1), one thread block per
// encoded block and one thread per value; no dynamic shared memory (static:
// 528 bytes of packed words plus CUB's scan storage).
//
// Memory traffic per decoded integer: reads w/8 bytes of packed data (plus,
// per 128 values, 1-2 count bytes, the width byte, 8+8 bytes of offsets and
// 4 (8 with last) bytes of base/last: about 0.2 bytes per integer), writes 4
// bytes. Packed data is read once, in aligned 32-bit words, coalesced; the
// output is written as 128 consecutive uint32 per block, coalesced.
//
// Host contract (checked by the Go side, cuda.LaunchBP128Docs): src_off and
// out_off hold nblocks+1 non-decreasing entries; src is readable up to
// src_off[nblocks] rounded up to a multiple of 4 and is 4-byte aligned (the
// aligned word loads may read up to 3 bytes past a block's end); out holds
// out_off[nblocks] values; *status == ~0ull before the launch.

#include <cstdint>
#include <cub/block/block_scan.cuh>

// `make kernels` compiles all cuda/kernels/*.cu as one translation unit, so
// each file keeps its helpers in a namespace of its own (extern "C" kernels
// keep their plain names inside it).
namespace qp_bp128 {

constexpr int kBlockValues = 128;

// Status codes; keep in sync with bp128Reasons in cuda/bp128.go.
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

}  // namespace qp_bp128
