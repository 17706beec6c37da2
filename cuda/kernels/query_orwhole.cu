// query_orwhole.cu — disjunctive (OR) top-k of a query with few postings
// in one CTA, without tiles (issue #20 part 4). Go side: cuda/kern/
// query_or.go (OrTileKernels.Whole); orchestration: engine/gpu/orwhole.go.
//
// Why: on real text most OR queries are short lists. GCIDE (126k
// documents, 16 tiles of 8192) with the TREC 2006 queries: the fused tiles
// (query_ortile.cu) ran 15.4 tiles per query, zeroed and scanned 8192
// shared accumulators in each for 81 touched ones (1.0%), and decoded
// 54.6 blocks per query for 22.6 in its lists (2.4x: a block of a sparse
// list spans several tiles and each of them decodes it whole; 75% of the
// decoded postings lay outside the decoding tile). 68% of those queries
// have at most 2048 postings in all their lists (emulator counts,
// TestOrWorkShares, docs/GPU-QUERY.md). Such a query needs no
// accumulators at all: its postings fit in shared memory.
//
// qp_orwhole_bp128: one CTA of 256 threads per query (grid-stride), for
// queries of m <= kTerms terms whose lists hold n <= kMax postings in
// all (the host routes the others to the tiles), on indexes whose docID
// and frequency blocks are both bp128 (the fused tiles' decoding):
//  1. Thread j < m loads query term j's QTerm and TermMeta; warp 0 sums
//     the lists' postings and blocks (prefixes pre, bpre).
//  2. Every block of every list is decoded once: warp w takes blocks w,
//     w+8, ...; each lane checks the block's skip entries and headers
//     (qp_ot::pair_header, the same record on every lane), the warp
//     cuts the values (qp_ot::pair_values: docID sums checked against
//     the skip table, frequency overflow). Posting x of block b of term
//     j sits at position p = pre[j] + b*bs + x; it writes key[p] = doc <<
//     32 | p and sc[p] = w * term(tf, norm) (score.Term with fmul/fdiv,
//     bit for bit the CPU's).
//  3. A bitonic sort of the keys (P = pow2 >= n, padded with ~0) orders
//     the postings by document and, within a document, by position: by
//     term in canonical order, since positions are term-major.
//  4. The first posting of each document sums its run in that order with
//     fadd, starting from the first term it holds: the CPU's float32 sum
//     (its accumulator starts at 0, and 0 + x = x). Its rank key
//     (query.cuh rank_key: score descending, then docID) goes to rk[i].
//  5. A bitonic sort of rk; the first min(k, documents) keys are the
//     query's results in topk's order: res[m.res ..], cnt[q] that
//     number, total[q] the documents (cnt[q] = ~0: the query was too
//     large, a host bug).
// Exactness: every document of the lists gets its complete score, and
// the results are the k smallest rank keys of all of them, as the CPU's
// exhaustive OR (and its pruning algorithms, which return the same).
// Corrupt blocks: err[qp_q::kErrDocs] (docIDs, also a docID >= N) and
// err[qp_ot::kErrFreqs] (frequencies) count them, as the fused tiles do,
// and their postings keep the key ~0 (never a result). err[kCntBlocks]
// counts the blocks decoded (kern.OrCntBlocks; engine/gpu's OrWholeBlocks).
// Memory per query: the blocks' encoded bytes, 16 bytes of skip entries
// and their headers per block, 4 bytes of norm per posting; writes 8 bytes
// per result. Shared: 8 kMax (keys) + 4 kMax (scores) + 8 kMax (rank keys)
// + about 1.5 KiB = 41.5 KiB.

#include "query_params.cuh"

namespace qp_ow {

using qp_q::u32;
using qp_q::u64;

constexpr u32 kThreads = qp_q::kThreads;
constexpr u32 kWarps = kThreads / 32;
constexpr u32 kMax = 2048; // postings per query, all lists (kern.OrWholeMax)
constexpr u32 kTerms = 32; // terms per query (kern.OrWholeTerms)
constexpr u32 kNone = 0xffffffffu;

struct Shared {
	u64 key[kMax];
	float sc[kMax];
	u64 rk[kMax];
	qp_q::TermMeta tm[kTerms];
	float idf[kTerms], w[kTerms];
	u32 pre[kTerms + 1], bpre[kTerms + 1];
	u32 docs, blocks;
};

// sort orders a[0, np) ascending (np a power of two >= 2): a bitonic
// network, log2(np) (log2(np)+1) / 2 stages of np/2 compare-exchanges, a
// __syncthreads after each (and none needed before: the caller's).
__device__ __forceinline__ void sort(u64 *a, u32 np) {
	for (u32 size = 2; size <= np; size <<= 1) {
		for (u32 stride = size >> 1; stride > 0; stride >>= 1) {
			for (u32 i = threadIdx.x; i < np / 2; i += kThreads) {
				const u32 lo = 2 * i - (i & (stride - 1)), hi = lo + stride;
				const bool up = (lo & size) == 0;
				const u64 x = a[lo], y = a[hi];
				if (up ? y < x : x < y) {
					a[lo] = y;
					a[hi] = x;
				}
			}
			__syncthreads();
		}
	}
}

__device__ __forceinline__ void whole(u32 nq, const qp_q::QMeta *__restrict__ qmeta,
                                      const qp_q::QTerm *__restrict__ qterms, const qp_q::TermMeta *__restrict__ terms,
                                      const uint8_t *__restrict__ post, u32 bs, const float *__restrict__ norms,
                                      u32 ndocs, float k1p1, u32 *__restrict__ err, u64 *__restrict__ res,
                                      u32 *__restrict__ cnt, u32 *__restrict__ total) {
	__shared__ Shared s;
	const u32 tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	if (tid == 0) s.blocks = 0;
	for (u32 q = blockIdx.x; q < nq; q += gridDim.x) {
		const qp_q::QMeta m = qmeta[q];
		if (tid < m.m && tid < kTerms) {
			const qp_q::QTerm qt = qterms[m.toff + tid];
			s.tm[tid] = terms[qt.term];
			s.idf[tid] = qt.idf;
			s.w[tid] = qt.w;
		}
		if (tid == 0) s.docs = 0;
		__syncthreads();
		if (warp == 0) {
			const bool in = lane < m.m;
			const u32 df = in ? s.tm[lane].df : 0, nb = in ? s.tm[lane].nb : 0;
			const u32 ip = qp_dec::incl_sum(df), ib = qp_dec::incl_sum(nb);
			s.pre[lane] = ip - df;
			s.bpre[lane] = ib - nb;
			if (lane == 31) {
				s.pre[kTerms] = ip;
				s.bpre[kTerms] = ib;
			}
		}
		__syncthreads();
		const u32 n = s.pre[kTerms], nblk = s.bpre[kTerms];
		if (n > kMax || m.m > kTerms) { // the host routes such queries to the tiles: its BUG panic
			if (tid == 0) cnt[q] = kNone;
			__syncthreads();
			continue;
		}
		u32 np = 2;
		while (np < n) np <<= 1;
		for (u32 i = tid; i < np; i += kThreads) s.key[i] = ~0ull;
		__syncthreads();
		for (u32 i = warp; i < nblk; i += kWarps) {
			// The block's term: the last jj < m with bpre[jj] <= i
			// (every known term has at least one block).
			const u32 bal = __ballot_sync(0xffffffffu, lane < m.m && s.bpre[lane] <= i);
			const u32 jj = 31 - __clz(static_cast<int>(bal));
			const qp_q::TermMeta &tm = s.tm[jj];
			const u32 b = i - s.bpre[jj];
			const u32 blen = qp_q::block_len(tm, b, bs);
			const qp_ot::PairRec r = qp_ot::pair_header(post, tm, qp_q::skips(post, tm), b, blen, jj);
			u32 st = r.pk >> 24 & 7, d[4], f[4];
			if (st == qp_ot::kPairOK) st = qp_ot::pair_values(post, tm, r, lane, d, f);
			if (lane == 0) atomicAdd(&s.blocks, 1u);
			if (st != qp_ot::kPairOK) {
				if (lane == 0) atomicAdd(&err[st == qp_ot::kBadDocs ? qp_q::kErrDocs : qp_ot::kErrFreqs], 1u);
				continue;
			}
			const float idf = s.idf[jj], w = s.w[jj];
			const u32 p0 = s.pre[jj] + b * bs;
#pragma unroll
			for (int j = 0; j < 4; j++) {
				const u32 x = lane * 4 + j;
				if (x >= blen) continue;
				if (d[j] >= ndocs) {
					atomicAdd(&err[qp_q::kErrDocs], 1u);
					continue;
				}
				s.key[p0 + x] = static_cast<u64>(d[j]) << 32 | (p0 + x);
				s.sc[p0 + x] = qp_q::term(idf, k1p1, f[j], norms[d[j]], w);
			}
		}
		__syncthreads();
		sort(s.key, np);
		// Each document's first posting sums its run in canonical order.
		u32 mine = 0;
		for (u32 i = tid; i < np; i += kThreads) {
			const u64 k = s.key[i];
			u64 out = ~0ull;
			const u32 d = static_cast<u32>(k >> 32);
			if (k != ~0ull && (i == 0 || static_cast<u32>(s.key[i - 1] >> 32) != d)) {
				float v = s.sc[static_cast<u32>(k)];
				for (u32 i2 = i + 1; i2 < np; i2++) {
					const u64 k2 = s.key[i2];
					if (k2 == ~0ull || static_cast<u32>(k2 >> 32) != d) break;
					v = qp_q::fadd(v, s.sc[static_cast<u32>(k2)]);
				}
				out = qp_q::rank_key(d, v);
				mine++;
			}
			s.rk[i] = out;
		}
		if (mine) atomicAdd(&s.docs, mine);
		__syncthreads();
		sort(s.rk, np);
		const u32 docs = s.docs, kept = docs < m.k ? docs : m.k;
		for (u32 r = tid; r < kept; r += kThreads) res[m.res + r] = s.rk[r];
		if (tid == 0) {
			cnt[q] = kept;
			total[q] = docs;
		}
		__syncthreads(); // s is reused by the next query
	}
	if (tid == 0 && s.blocks) atomicAdd(&err[qp_ot::kCntBlocks], s.blocks);
}

} // namespace qp_ow

// 5 CTAs per SM (the shared memory's limit; 68 registers without the
// bound allowed 3).
extern "C" __global__ void __launch_bounds__(256, 5)
qp_orwhole_bp128(qp_q::u32 nq, const qp_q::QMeta *qmeta, const qp_q::QTerm *qterms, const qp_q::TermMeta *terms,
                 const uint8_t *post, qp_q::u32 bs, const float *norms, qp_q::u32 ndocs, float k1p1, qp_q::u32 *err,
                 qp_q::u64 *res, qp_q::u32 *cnt, qp_q::u32 *total) {
	qp_ow::whole(nq, qmeta, qterms, terms, post, bs, norms, ndocs, k1p1, err, res, cnt, total);
}
QP_EMU_REGISTER(qp_orwhole_bp128)
static_assert(std::is_same<decltype(&qp_orwhole_bp128), QP_SIGNATURE_OrWholeParams>::value,
              "qp_orwhole_bp128's parameters differ from OrWholeParams (cuda/kern/layout.go)");
