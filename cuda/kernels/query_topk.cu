// query_topk.cu — exact top-k per query in topk's order (score descending,
// docID ascending), for k = 1 .. 10000.
//
// qp_query_topk: one CTA of 256 threads per query (grid min(nq, 65535),
// CTAs loop over queries). Items are either the query's AND candidates
// (dense == 0: its run of cq, found by binary search; cq is ascending) or
// its dense OR accumulator row (dense == 1: acc[q][0..N), documents with
// an accumulator of 0 were not touched and are skipped; every touched one
// is > 0 since BM25 term scores are). Each item maps to the 64-bit key
// ~bits(score) << 32 | doc (rank_key), unique per query, whose ascending
// order is the rank order; the k smallest keys are selected exactly:
//
//  1. MSD radix select, 8 bits per pass (at most 8 passes): a shared
//     histogram (atomicAdd) of the next digit of the keys that match the
//     prefix found so far, then thread 0 picks the digit where the count
//     reaches the number still wanted. It stops as soon as a whole bucket
//     is wanted, so the threshold key T has exactly min(k, items) keys <= T.
//     The first pass also counts the items; with <= k items there is no
//     selection at all.
//  2. The kept keys are collected (shared atomic counter) into a buffer of
//     P = next power of two >= kept keys: static shared memory for P <= 4096,
//     else the query's region of scratch (scratch_off[q] 8-byte words), and
//     sorted ascending by a bitonic network (log2(P)(log2(P)+1)/2 stages,
//     one __syncthreads each).
//  3. res[qmeta.res + r] = r-th key (r < kept), cnt[q] = kept, total[q] =
//     number of items (candidates, or touched documents).
//
// One pass for small k over many items (sparse only: k <= kLocalK and at
// least kOnePassItems items, i.e. the AND queries of common terms whose
// candidates number in the 10^5-10^6 on large collections, where up to 8
// radix passes over them by one CTA made this kernel the AND's longest
// phase): each thread keeps the k smallest keys it reads, sorted, in
// registers (a compare-exchange chain inserts a key below its k-th), then
// the CTA sorts the 256 k survivors in shared memory; the query's k smallest
// keys are among them (any key outside them is above k keys of its own
// thread). Reads every item once: 8 bytes (cdoc, cscore) per item.
//
// Memory per query: each radix pass reads the items (4-12 bytes each) once;
// dense rows read 4N bytes per pass (a future tiled version should cut the
// passes for large N); writes 8 bytes per result.
// Static shared memory: 32 KiB sort buffer + 1 KiB histogram + 40 bytes.

#include "query_params.cuh"

namespace qp_q {

constexpr u32 kSortShared = 4096;
// The one-pass path: k up to kLocalK (kThreads * kLocalK keys fit the shared
// sort buffer), from kOnePassItems items of one query.
constexpr u32 kLocalK = kSortShared / kThreads;
constexpr u64 kOnePassItems = 16384;
constexpr u32 kOnePassUnroll = 8;
static_assert(kThreads * kLocalK <= kSortShared, "one-pass survivors must fit the sort buffer");

struct Items {
	u32 dense;
	const u32 *cdoc;
	const float *cscore;
	const float *row;
	u64 lo;
	// item i: valid and its key
	__device__ __forceinline__ bool get(u64 i, u64 &key) const {
		if (dense) {
			const float s = row[i];
			key = rank_key(static_cast<u32>(i), s);
			return fbits(s) != 0;
		}
		key = rank_key(cdoc[lo + i], cscore[lo + i]);
		return true;
	}
};

__device__ __forceinline__ void bitonic_sort(u64 *buf, u32 p) {
	for (u32 size = 2; size <= p; size <<= 1) {
		for (u32 stride = size >> 1; stride > 0; stride >>= 1) {
			for (u32 i = threadIdx.x; i < p; i += kThreads) {
				const u32 j = i ^ stride;
				if (j > i) {
					const u64 x = buf[i], y = buf[j];
					const bool asc = (i & size) == 0;
					if ((x > y) == asc) {
						buf[i] = y;
						buf[j] = x;
					}
				}
			}
			__syncthreads();
		}
	}
}

// topk_onepass: the query's k (<= kLocalK) smallest keys among n sparse
// items, ascending, into res[0..k); n >= k. Uses sbuf (kSortShared keys);
// ends with a __syncthreads.
__device__ __forceinline__ void topk_onepass(const Items &it, u64 n, u32 k, u64 *sbuf, u64 *__restrict__ res) {
	const u32 tid = threadIdx.x;
	u64 best[kLocalK];
#pragma unroll
	for (u32 j = 0; j < kLocalK; j++) best[j] = ~0ull;
	u64 worst = ~0ull; // best[k - 1]: the thread's k-th smallest so far
	const auto insert = [&](u64 x) {
		if (x < worst) {
#pragma unroll
			for (u32 j = 0; j < kLocalK; j++) {
				const u64 lo = best[j] < x ? best[j] : x;
				x = best[j] < x ? x : best[j];
				best[j] = lo;
			}
#pragma unroll
			for (u32 j = 0; j < kLocalK; j++)
				if (j + 1 == k) worst = best[j];
		}
	};
	// kOnePassUnroll loads in flight per thread (one CTA streams the whole
	// query: latency, not bandwidth, bounds it), then the rest one by one.
	u64 i = tid;
	for (; i + (kOnePassUnroll - 1) * kThreads < n; i += kOnePassUnroll * kThreads) {
		u64 xs[kOnePassUnroll];
#pragma unroll
		for (u32 u = 0; u < kOnePassUnroll; u++) it.get(i + u * kThreads, xs[u]);
#pragma unroll
		for (u32 u = 0; u < kOnePassUnroll; u++) insert(xs[u]);
	}
	for (; i < n; i += kThreads) {
		u64 x;
		it.get(i, x);
		insert(x);
	}
	const u32 m = kThreads * k;
	u32 p = 1;
	while (p < m) p <<= 1;
#pragma unroll
	for (u32 j = 0; j < kLocalK; j++)
		if (j < k) sbuf[tid * k + j] = best[j];
	for (u32 i = m + tid; i < p; i += kThreads) sbuf[i] = ~0ull;
	__syncthreads();
	bitonic_sort(sbuf, p);
	for (u32 r = tid; r < k; r += kThreads) res[r] = sbuf[r];
	__syncthreads();
}

__device__ __forceinline__ void topk(u32 dense, u32 nq, const QMeta *__restrict__ qmeta,
                                     const u32 *__restrict__ cdoc, const float *__restrict__ cscore,
                                     const u32 *__restrict__ cq, u32 ncand, const float *__restrict__ acc,
                                     u32 ndocs, u64 *__restrict__ res, u32 *__restrict__ cnt,
                                     u32 *__restrict__ total, u64 *__restrict__ scratch,
                                     const u64 *__restrict__ scratch_off) {
	__shared__ u64 sbuf[kSortShared];
	__shared__ u32 hist[256];
	__shared__ u64 sh_prefix, sh_mask, sh_thresh;
	__shared__ u32 sh_rem, sh_done, sh_total, sh_pos;
	const u32 tid = threadIdx.x;

	for (u32 a = blockIdx.x; a < nq; a += gridDim.x) {
		const QMeta m = qmeta[a];
		Items it;
		it.dense = dense;
		it.cdoc = cdoc;
		it.cscore = cscore;
		it.row = nullptr;
		it.lo = 0;
		u64 n;
		if (dense) {
			it.row = acc + static_cast<u64>(a) * ndocs;
			n = ndocs;
		} else {
			const auto at = [&](u32 p) { return cq[p]; };
			it.lo = lower_bound(0u, ncand, a, at);
			n = lower_bound(0u, ncand, a + 1, at) - it.lo;
		}
		if (!dense && m.k <= kLocalK && n >= kOnePassItems) {
			topk_onepass(it, n, m.k, sbuf, res + m.res);
			if (tid == 0) {
				cnt[a] = m.k;
				total[a] = static_cast<u32>(n);
			}
			continue; // topk_onepass ended with a __syncthreads
		}
		if (tid == 0) {
			sh_prefix = 0;
			sh_mask = 0;
			sh_thresh = ~0ull;
			sh_rem = m.k;
			sh_done = 0;
			sh_total = 0;
			sh_pos = 0;
		}
		// 1. radix select
		for (int shift = 56; shift >= 0; shift -= 8) {
			for (u32 i = tid; i < 256; i += kThreads) hist[i] = 0;
			__syncthreads();
			const u64 prefix = sh_prefix, mask = sh_mask;
			for (u64 i = tid; i < n; i += kThreads) {
				u64 key;
				if (it.get(i, key) && (key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255], 1u);
			}
			__syncthreads();
			if (tid == 0) {
				if (shift == 56) {
					u32 t = 0;
					for (u32 dg = 0; dg < 256; dg++) t += hist[dg];
					sh_total = t;
					if (t <= m.k) sh_done = 1; // keep everything: threshold stays ~0
				}
				if (!sh_done) {
					const u32 want = sh_rem;
					u32 cum = 0, dg = 0;
					for (; dg < 255; dg++) {
						if (cum + hist[dg] >= want) break;
						cum += hist[dg];
					}
					const u32 rem = want - cum;
					sh_prefix |= static_cast<u64>(dg) << shift;
					sh_mask |= 255ull << shift;
					sh_rem = rem;
					if (hist[dg] == rem) {
						sh_done = 1;
						sh_thresh = sh_prefix | ((1ull << shift) - 1);
					} else if (shift == 0) {
						sh_thresh = sh_prefix; // unreachable with unique keys
					}
				}
			}
			__syncthreads();
			if (sh_done) break;
		}
		const u32 kept = sh_total < m.k ? sh_total : m.k;
		if (kept > 0) {
			u32 p = 1;
			while (p < kept) p <<= 1;
			u64 *buf = p <= kSortShared ? sbuf : scratch + scratch_off[a];
			const u64 th = sh_thresh;
			// 2. collect and sort
			for (u64 i = tid; i < n; i += kThreads) {
				u64 key;
				if (it.get(i, key) && key <= th) {
					const u32 at = atomicAdd(&sh_pos, 1u);
					if (at < kept) buf[at] = key;
				}
			}
			for (u32 i = kept + tid; i < p; i += kThreads) buf[i] = ~0ull;
			__syncthreads();
			bitonic_sort(buf, p);
			// 3. results
			for (u32 r = tid; r < kept; r += kThreads) res[m.res + r] = buf[r];
		}
		if (tid == 0) {
			cnt[a] = kept;
			total[a] = sh_total;
		}
		__syncthreads(); // shared state is reset for the next query
	}
}

} // namespace qp_q

extern "C" __global__ void __launch_bounds__(256)
qp_query_topk(qp_q::u32 dense, qp_q::u32 nq, const qp_q::QMeta *qmeta, const qp_q::u32 *cdoc, const float *cscore,
              const qp_q::u32 *cq, qp_q::u32 ncand, const float *acc, qp_q::u32 ndocs, qp_q::u64 *res,
              qp_q::u32 *cnt, qp_q::u32 *total, qp_q::u64 *scratch, const qp_q::u64 *scratch_off) {
	qp_q::topk(dense, nq, qmeta, cdoc, cscore, cq, ncand, acc, ndocs, res, cnt, total, scratch, scratch_off);
}
QP_EMU_REGISTER(qp_query_topk)
static_assert(std::is_same<decltype(&qp_query_topk), QP_SIGNATURE_TopKParams>::value,
              "qp_query_topk's parameters differ from TopKParams (cuda/kern/layout.go)");
