// query_ortile.cu — tiled disjunctive (OR) queries with threshold filtering:
// Ding et al. WWW'09 §8's TAAT, with the accumulators of one document range
// (a tile of T <= kTileMax documents) in shared memory instead of a dense
// row of N floats per query, block-max upper bounds per tile to skip tiles,
// and a running lower bound theta on each query's k-th best rank key so
// that tiles emit only candidates that can still make the top k. Go side:
// cuda/query_or.go; orchestration: engine/gpu/ortile.go.
//
// Launch sequence per OR launch set (all lists of its queries decoded whole
// by the batch decoders, segment (q, j) = query q's j-th canonical term at
// docs/freqs[Seg.v0 ..]; OQuery.seg0 = the first segment of query q):
//
//  1. qp_ortile_check: every decoded docID < N and increasing within its
//     segment (the dense path's check; the tiles below only visit the
//     postings their binary searches find). Grid-stride, one thread per
//     posting: reads 8 bytes per posting.
//  2. qp_ortile_bounds: one CTA of 256 threads per query (grid-stride).
//     For each term in canonical order, start[t] = the first block whose
//     skip-table lastDoc is >= t*T (one pass over the skip table), then per
//     tile the max of the blockMax of its blocks [start[t], start[t+1]]
//     times the query weight, summed over terms with fadd in canonical
//     order: ub[q][t]. Rounding is monotone, so ub[q][t] >= the float32
//     score of every document of tile t, exactly (no slack; blockMax is
//     score.Term's maximum, index/format.go). bm == nullptr (maxima stale:
//     the index's BM25 parameters changed) gives ub = FLT_MAX where a list
//     has a block. Then the S tiles of largest ub (seeds[q*S + s], ~0u for
//     none) are marked processed (ub = -1). Shared: 4(kMaxTiles+1) +
//     4 kMaxTiles bytes. Memory per query: 16 bytes per block of its lists
//     plus 4 bytes per block in the tiles' ranges, writes 4 bytes per tile.
//  3. qp_ortile_accumulate, first over the seeds, then over every (query,
//     tile) with ub >= score(theta): one CTA of 256 threads per work item
//     (grid-stride). The CTA zeroes T shared float accumulators; for each
//     chunk of 32 terms, warp w finds with a 32-ary search the range
//     [lo, hi) of postings of term j (j = w mod 8) inside the tile in the
//     decoded list; then, term by term in canonical order, one thread per
//     posting adds w * term(tf, norm) with fadd, and a __syncthreads
//     separates terms: each document's sum is the CPU's, bit for bit, with
//     no atomics on floats. Selection: the c touched documents whose rank
//     key (query.cuh rank_key) is <= theta[q] are counted; when c > k a
//     4-pass MSD radix select over the score bits finds the tile's k-th
//     best score s_k, and theta[q] = min(theta[q], key(s_k, 0xffffffff))
//     (u64 atomicMin; the tile has >= k documents with keys <= that, so
//     the global k-th best key is too). Documents with key <= theta are
//     appended to the query's candidate region (cnt[q] counts every one,
//     also past cap: the host sees overflow and reruns the query on the
//     dense path). Memory per item: 8 bytes per posting in the tile plus
//     4 of its norm (coalesced reads), 8 bytes per emitted candidate;
//     about 5 log32(df) loads per term for the searches. Static shared
//     memory: 4 kTileMax + 1 KiB + small.
//  4. qp_ortile_clamp + the u32 scan of query_scan.cu + qp_ortile_compact:
//     the candidates, min(cnt, cap) per query, packed by ascending query
//     for qp_query_topk (sparse) or qp_ortile_maxtree.
//  5. qp_ortile_maxtree: Ding §8's multi-level max tree for small k, see
//     below.
//
// Exactness: every emitted score is a complete float32 sum (all terms of
// the tile are added before selection); a document of the final top k has
// key <= the final theta <= theta at any time, and its tile is not skipped
// since ub >= its score >= score(theta), so it is emitted. The top-k over
// the candidates is exact in topk's order.

#include "query.cuh"

namespace qp_ot {

using qp_q::u32;
using qp_q::u64;

constexpr u32 kThreads = qp_q::kThreads;
constexpr u32 kTileMax = 8192;  // documents per tile (shared accumulators)
constexpr u32 kMaxTiles = 4096; // tiles per query (qp_ortile_bounds' shared arrays)
constexpr u32 kChunk = 32;      // terms whose ranges are searched at once
constexpr u32 kNone = 0xffffffffu;
constexpr float kFltMax = 3.402823466e+38f;

struct OQuery { // 16 bytes, cuda/query_or.go OQueryWords
	u32 seg0; // first Seg of the query
	u32 cap;  // candidate slots
	u32 coff; // first candidate slot
	u32 pad;
};

__device__ __forceinline__ float bits_float(u32 b) {
#ifdef QP_EMU
	float f;
	memcpy(&f, &b, 4);
	return f;
#else
	return __uint_as_float(b);
#endif
}

// theta_score is the score part of a rank key (0 for the "no bound" key ~0).
__device__ __forceinline__ float theta_score(u64 key) {
	if (key == ~0ull) return 0.0f;
	return bits_float(~static_cast<u32>(key >> 32));
}

// lower_bound_warp: the first i in [0, n) with a[i] >= x (n if none), found
// by the 32 lanes of a warp together (32-ary search: ceil(log32 n) + 1
// rounds of one load per lane). All lanes return the answer.
__device__ __forceinline__ u32 lower_bound_warp(const u32 *__restrict__ a, u32 n, u32 x) {
	const u32 lane = threadIdx.x & 31;
	u32 lo = 0, hi = n;
	while (hi - lo > 32) {
		const u32 step = (hi - lo + 31) / 32;
		const u32 p = lo + lane * step;
		const bool less = p < hi && a[p] < x;
		const u32 c = __popc(__ballot_sync(0xffffffffu, less));
		if (c == 0) return lo;
		const u32 nlo = lo + (c - 1) * step + 1;
		const u32 nhi = lo + c * step;
		lo = nlo;
		hi = nhi < hi ? nhi : hi;
	}
	const u32 p = lo + lane;
	const bool less = p < hi && a[p] < x;
	return lo + __popc(__ballot_sync(0xffffffffu, less));
}

// ---- 1. corruption check ----

__device__ __forceinline__ void check(const qp_q::Seg *__restrict__ segs, u32 nseg, const u32 *__restrict__ docs,
                                      u32 nval, u32 ndocs, u32 *__restrict__ err) {
	for (u32 i = blockIdx.x * kThreads + threadIdx.x; i < nval; i += gridDim.x * kThreads) {
		const u32 s = qp_q::seg_of(nseg, i, [&](u32 x) { return segs[x].v0; });
		const u32 d = docs[i];
		if (d >= ndocs || (i > segs[s].v0 && docs[i - 1] >= d)) atomicAdd(&err[qp_q::kErrDocs], 1u);
	}
}

// ---- 2. tile upper bounds and seeds ----

__device__ __forceinline__ void bounds(u32 nq, const qp_q::QMeta *__restrict__ qmeta, const OQuery *__restrict__ oq,
                                       const qp_q::Seg *__restrict__ segs, const qp_q::QTerm *__restrict__ qterms,
                                       const qp_q::TermMeta *__restrict__ terms, const uint8_t *__restrict__ post,
                                       u32 use_bm, u32 tile, u32 ntiles, u32 nseed, float *__restrict__ ub,
                                       u32 *__restrict__ seeds) {
	__shared__ u32 start[kMaxTiles + 1];
	__shared__ float sub[kMaxTiles];
	__shared__ float wbest[kThreads / 32];
	__shared__ u32 wtile[kThreads / 32];
	const u32 tid = threadIdx.x;
	for (u32 q = blockIdx.x; q < nq; q += gridDim.x) {
		const qp_q::QMeta m = qmeta[q];
		const OQuery o = oq[q];
		for (u32 t = tid; t < ntiles; t += kThreads) sub[t] = 0.0f;
		for (u32 j = 0; j < m.m; j++) {
			const qp_q::Seg g = segs[o.seg0 + j];
			const qp_q::TermMeta tm = terms[g.term];
			const u32 *sk = qp_q::skips(post, tm);
			const float w = qterms[g.qt].w;
			const u32 nb = tm.nb;
			for (u32 t = tid; t <= ntiles; t += kThreads) start[t] = nb;
			__syncthreads();
			for (u32 b = tid; b < nb; b += kThreads) {
				const u32 lo = b ? qp_q::last_doc(sk, b - 1) / tile + 1 : 0;
				u32 hi = qp_q::last_doc(sk, b) / tile;
				hi = hi < ntiles - 1 ? hi : ntiles - 1;
				for (u32 t = lo; t <= hi; t++) start[t] = b;
			}
			__syncthreads();
			for (u32 t = tid; t < ntiles; t += kThreads) {
				const u32 bl = start[t];
				if (bl >= nb) continue;
				u32 bh = start[t + 1];
				bh = bh < nb - 1 ? bh : nb - 1;
				float mx = 0.0f;
				if (use_bm) {
					for (u32 b = bl; b <= bh; b++) {
						const float v = bits_float(sk[4 * b + 3]);
						mx = v > mx ? v : mx;
					}
					sub[t] = qp_q::fadd(sub[t], qp_q::fmul(w, mx));
				} else {
					sub[t] = kFltMax;
				}
			}
			__syncthreads();
		}
		for (u32 t = tid; t < ntiles; t += kThreads) ub[static_cast<u64>(q) * ntiles + t] = sub[t];
		__syncthreads();
		// The nseed tiles of largest bound (lowest tile on ties).
		for (u32 s = 0; s < nseed; s++) {
			float best = 0.0f;
			u32 bt = kNone;
			for (u32 t = tid; t < ntiles; t += kThreads) {
				if (sub[t] > best) {
					best = sub[t];
					bt = t;
				}
			}
			for (u32 off = 16; off > 0; off >>= 1) {
				const float ob = __shfl_down_sync(0xffffffffu, best, off);
				const u32 ot = __shfl_down_sync(0xffffffffu, bt, off);
				if (ob > best || (ob == best && ot < bt)) {
					best = ob;
					bt = ot;
				}
			}
			if ((tid & 31) == 0) {
				wbest[tid >> 5] = best;
				wtile[tid >> 5] = bt;
			}
			__syncthreads();
			if (tid == 0) {
				for (u32 w = 1; w < kThreads / 32; w++) {
					if (wbest[w] > best || (wbest[w] == best && wtile[w] < bt)) {
						best = wbest[w];
						bt = wtile[w];
					}
				}
				seeds[static_cast<u64>(q) * nseed + s] = bt;
				if (bt != kNone) {
					sub[bt] = -1.0f;
					ub[static_cast<u64>(q) * ntiles + bt] = -1.0f;
				}
			}
			__syncthreads();
		}
	}
}

// ---- 3. tiled accumulation, selection, emission ----

__device__ __forceinline__ void accumulate(u32 nitems, u32 ntiles, u32 tile, const u32 *__restrict__ seeds, u32 nseed,
                                           const qp_q::QMeta *__restrict__ qmeta, const OQuery *__restrict__ oq,
                                           const qp_q::Seg *__restrict__ segs, const qp_q::QTerm *__restrict__ qterms,
                                           const qp_q::TermMeta *__restrict__ terms, const float *__restrict__ norms,
                                           u32 ndocs, float k1p1, const u32 *__restrict__ docs,
                                           const u32 *__restrict__ freqs, const float *__restrict__ ub,
                                           u64 *__restrict__ theta, u32 *__restrict__ cnt, u32 *__restrict__ cdoc,
                                           float *__restrict__ cscore) {
	__shared__ float acc[kTileMax];
	__shared__ u32 hist[256];
	__shared__ u32 r_lo[kChunk], r_hi[kChunk], r_qt[kChunk];
	__shared__ u64 r_v0[kChunk];
	__shared__ u32 sh_q, sh_t, sh_c, sh_base, sh_pos, sh_prefix, sh_want;
	__shared__ u64 sh_th;
	const u32 tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	for (u32 it = blockIdx.x; it < nitems; it += gridDim.x) {
		if (tid == 0) {
			u32 q, t;
			if (seeds != nullptr) {
				q = it / nseed;
				t = seeds[it];
			} else {
				q = it / ntiles;
				t = it % ntiles;
				const float u = ub[it];
				const u64 th = *reinterpret_cast<volatile u64 *>(&theta[q]);
				if (!(u > 0.0f) || u < theta_score(th)) t = kNone;
			}
			sh_q = q;
			sh_t = t;
		}
		__syncthreads();
		const u32 q = sh_q, t = sh_t;
		if (t == kNone) {
			__syncthreads(); // sh_q/sh_t are rewritten by the next item
			continue;
		}
		const qp_q::QMeta m = qmeta[q];
		const OQuery o = oq[q];
		const u32 t0 = t * tile;
		const u32 t1 = t0 + tile < ndocs ? t0 + tile : ndocs;
		const u32 span = t1 - t0;
		for (u32 i = tid; i < span; i += kThreads) acc[i] = 0.0f;
		for (u32 c0 = 0; c0 < m.m; c0 += kChunk) {
			const u32 nc = m.m - c0 < kChunk ? m.m - c0 : kChunk;
			for (u32 jj = warp; jj < nc; jj += kThreads / 32) {
				const qp_q::Seg g = segs[o.seg0 + c0 + jj];
				const u32 df = terms[g.term].df;
				const u32 *a = docs + g.v0;
				const u32 lo = lower_bound_warp(a, df, t0);
				const u32 hi = lower_bound_warp(a, df, t1);
				if (lane == 0) {
					r_lo[jj] = lo;
					r_hi[jj] = hi;
					r_qt[jj] = g.qt;
					r_v0[jj] = g.v0;
				}
			}
			__syncthreads();
			for (u32 jj = 0; jj < nc; jj++) {
				const qp_q::QTerm qt = qterms[r_qt[jj]];
				const u32 *dp = docs + r_v0[jj];
				const u32 *fp = freqs + r_v0[jj];
				for (u32 i = r_lo[jj] + tid; i < r_hi[jj]; i += kThreads) {
					const u32 d = dp[i];
					const u32 x = d - t0;
					if (x >= span) continue; // corrupt order; qp_ortile_check reports it
					acc[x] = qp_q::fadd(acc[x], qp_q::term(qt.idf, k1p1, fp[i], norms[d], qt.w));
				}
				__syncthreads();
			}
		}
		// Selection: count the documents that beat theta.
		if (tid == 0) {
			sh_th = *reinterpret_cast<volatile u64 *>(&theta[q]);
			sh_c = 0;
		}
		__syncthreads();
		u64 th = sh_th;
		u32 c = 0;
		for (u32 i = tid; i < span; i += kThreads) {
			const float s = acc[i];
			if (qp_q::fbits(s) != 0 && qp_q::rank_key(t0 + i, s) <= th) c++;
		}
		if (c) atomicAdd(&sh_c, c);
		__syncthreads();
		c = sh_c;
		if (c > m.k) {
			// The k-th best score among them: MSD radix select on the bits
			// (positive floats order like their bits), 8 bits per pass.
			if (tid == 0) {
				sh_prefix = 0;
				sh_want = m.k;
			}
			u32 mask = 0;
			for (int shift = 24; shift >= 0; shift -= 8) {
				for (u32 i = tid; i < 256; i += kThreads) hist[i] = 0;
				__syncthreads();
				const u32 prefix = sh_prefix;
				for (u32 i = tid; i < span; i += kThreads) {
					const float s = acc[i];
					const u32 b = qp_q::fbits(s);
					if (b != 0 && qp_q::rank_key(t0 + i, s) <= th && (b & mask) == prefix)
						atomicAdd(&hist[(b >> shift) & 255], 1u);
				}
				__syncthreads();
				if (tid == 0) {
					u32 want = sh_want, cum = 0, dg = 255;
					for (;; dg--) {
						if (cum + hist[dg] >= want || dg == 0) break;
						cum += hist[dg];
					}
					sh_want = want - cum;
					sh_prefix = prefix | dg << shift;
				}
				mask |= 255u << shift;
				__syncthreads();
			}
			const u64 nth = static_cast<u64>(~sh_prefix) << 32 | 0xffffffffull;
			if (nth < th) {
				th = nth;
				if (tid == 0) atomicMin(&theta[q], nth);
			}
			// Recount under the new bound.
			if (tid == 0) sh_c = 0;
			__syncthreads();
			c = 0;
			for (u32 i = tid; i < span; i += kThreads) {
				const float s = acc[i];
				if (qp_q::fbits(s) != 0 && qp_q::rank_key(t0 + i, s) <= th) c++;
			}
			if (c) atomicAdd(&sh_c, c);
			__syncthreads();
			c = sh_c;
		}
		if (c > 0) {
			if (tid == 0) {
				sh_base = atomicAdd(&cnt[q], c);
				sh_pos = 0;
			}
			__syncthreads();
			const u32 base = sh_base;
			for (u32 i = tid; i < span; i += kThreads) {
				const float s = acc[i];
				if (qp_q::fbits(s) != 0 && qp_q::rank_key(t0 + i, s) <= th) {
					const u32 p = base + atomicAdd(&sh_pos, 1u);
					if (p < o.cap) {
						cdoc[o.coff + p] = t0 + i;
						cscore[o.coff + p] = s;
					}
				}
			}
		}
		__syncthreads(); // acc and the shared words are reused by the next item
	}
}

// ---- 4. packing ----

__device__ __forceinline__ void clamp(u32 nq, const OQuery *__restrict__ oq, const u32 *__restrict__ cnt,
                                      u32 *__restrict__ out) {
	for (u32 q = blockIdx.x * kThreads + threadIdx.x; q < nq; q += gridDim.x * kThreads)
		out[q] = cnt[q] < oq[q].cap ? cnt[q] : oq[q].cap;
}

__device__ __forceinline__ void compact(u32 nq, const OQuery *__restrict__ oq, const u32 *__restrict__ ex,
                                        const u32 *__restrict__ cdoc, const float *__restrict__ cscore,
                                        u32 *__restrict__ ndoc, float *__restrict__ nscore, u32 *__restrict__ ncq) {
	for (u32 q = blockIdx.x; q < nq; q += gridDim.x) {
		const u32 at = ex[q], n = ex[q + 1] - ex[q], from = oq[q].coff;
		for (u32 i = threadIdx.x; i < n; i += kThreads) {
			ndoc[at + i] = cdoc[from + i];
			nscore[at + i] = cscore[from + i];
			ncq[at + i] = q;
		}
	}
}

// ---- 5. Ding §8's multi-level max tree ----
//
// qp_ortile_maxtree: one CTA of 256 threads per query (grid-stride), for
// small k (the host uses it for k <= 64). Items: the query's run of the packed candidates (cq
// ascending, as for qp_query_topk), as rank keys (smaller is better: the
// "max" of Ding's tree is the minimum key). Level 1 holds the best key of
// each group of 512 items, level 2 the best of each group of 512 level-1
// entries (the root): three levels, n <= 512^2 items (cuda.OrTreeItems,
// the host checks). Then k times: the root is the next result; its item is
// found by following the path (the level-2 group, then the level-1 group
// whose best key equals it: keys are unique per query), marked used (~0),
// and the two groups on the path are recomputed (512 items each, a block
// reduction). Memory per query: reads 8 bytes per item once, plus 2 KiB
// (8 bytes x 512 items, the groups on the path) per extraction; writes 8
// bytes per result. Shared: 8 x 512 x 2 + small (level 1 lives in shared
// memory when <= 512 groups, i.e. n <= 262144; the host uses the radix
// select beyond). A query with <= k items keeps them all (sorted by the
// same extractions).

constexpr u32 kGroup = 512;

// block_min: the minimum of v over the CTA (all threads get it).
__device__ __forceinline__ u64 block_min(u64 v, u64 *red) {
	for (u32 off = 16; off > 0; off >>= 1) {
		const u64 o = __shfl_down_sync(0xffffffffu, v, off);
		v = o < v ? o : v;
	}
	if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
	__syncthreads();
	u64 r = red[0];
	for (u32 w = 1; w < kThreads / 32; w++) r = red[w] < r ? red[w] : r;
	__syncthreads();
	return r;
}

__device__ __forceinline__ void maxtree(u32 nq, const qp_q::QMeta *__restrict__ qmeta, const u32 *__restrict__ cdoc,
                                        const float *__restrict__ cscore, const u32 *__restrict__ cq, u32 ncand,
                                        const OQuery *__restrict__ oq, u64 *__restrict__ keys,
                                        u64 *__restrict__ res, u32 *__restrict__ cnt, u32 *__restrict__ total) {
	__shared__ u64 l1[kGroup];
	__shared__ u64 l2;
	__shared__ u64 red[kThreads / 32];
	const u32 tid = threadIdx.x;
	for (u32 a = blockIdx.x; a < nq; a += gridDim.x) {
		const qp_q::QMeta m = qmeta[a];
		// The query's run of candidates.
		u32 lo = 0, hi = ncand;
		while (lo < hi) {
			const u32 mid = (lo + hi) >> 1;
			if (cq[mid] < a) lo = mid + 1; else hi = mid;
		}
		const u32 first = lo;
		hi = ncand;
		while (lo < hi) {
			const u32 mid = (lo + hi) >> 1;
			if (cq[mid] < a + 1) lo = mid + 1; else hi = mid;
		}
		const u32 n = lo - first;
		u64 *key = keys + oq[a].coff; // n <= cap keys of scratch
		for (u32 i = tid; i < n; i += kThreads) key[i] = qp_q::rank_key(cdoc[first + i], cscore[first + i]);
		const u32 ng = (n + kGroup - 1) / kGroup; // level-1 groups (<= kGroup)
		__syncthreads();
		// Level 1: best key of each group of 512 items.
		for (u32 g = 0; g < ng; g++) {
			u64 v = ~0ull;
			for (u32 i = g * kGroup + tid; i < n && i < (g + 1) * kGroup; i += kThreads) v = key[i] < v ? key[i] : v;
			v = block_min(v, red);
			if (tid == 0) l1[g] = v;
		}
		__syncthreads();
		// Level 2 (the root over the <= 512 level-1 groups).
		u64 v = ~0ull;
		for (u32 g = tid; g < ng; g += kThreads) v = l1[g] < v ? l1[g] : v;
		v = block_min(v, red);
		if (tid == 0) l2 = v;
		__syncthreads();
		const u32 kept = n < m.k ? n : m.k;
		for (u32 r = 0; r < kept; r++) {
			const u64 best = l2;
			if (tid == 0) res[m.res + r] = best;
			// Path: the level-1 group holding best, then the item.
			u32 gsel = kNone;
			for (u32 g = tid; g < ng; g += kThreads)
				if (l1[g] == best) gsel = g;
			gsel = static_cast<u32>(block_min(gsel, red));
			for (u32 i = gsel * kGroup + tid; i < n && i < (gsel + 1) * kGroup; i += kThreads)
				if (key[i] == best) key[i] = ~0ull;
			__syncthreads();
			u64 gv = ~0ull;
			for (u32 i = gsel * kGroup + tid; i < n && i < (gsel + 1) * kGroup; i += kThreads)
				gv = key[i] < gv ? key[i] : gv;
			gv = block_min(gv, red);
			if (tid == 0) l1[gsel] = gv;
			__syncthreads();
			u64 rv = ~0ull;
			for (u32 g = tid; g < ng; g += kThreads) rv = l1[g] < rv ? l1[g] : rv;
			rv = block_min(rv, red);
			if (tid == 0) l2 = rv;
			__syncthreads();
		}
		if (tid == 0) {
			cnt[a] = kept;
			total[a] = n;
		}
		__syncthreads();
	}
}

} // namespace qp_ot

extern "C" __global__ void __launch_bounds__(256)
qp_ortile_check(const qp_q::Seg *segs, uint32_t nseg, const uint32_t *docs, uint32_t nval, uint32_t ndocs,
                uint32_t *err) {
	qp_ot::check(segs, nseg, docs, nval, ndocs, err);
}
QP_EMU_REGISTER(qp_ortile_check)

extern "C" __global__ void __launch_bounds__(256)
qp_ortile_bounds(uint32_t nq, const qp_q::QMeta *qmeta, const qp_ot::OQuery *oq, const qp_q::Seg *segs,
                 const qp_q::QTerm *qterms, const qp_q::TermMeta *terms, const uint8_t *post, uint32_t use_bm,
                 uint32_t tile, uint32_t ntiles, uint32_t nseed, float *ub, uint32_t *seeds) {
	qp_ot::bounds(nq, qmeta, oq, segs, qterms, terms, post, use_bm, tile, ntiles, nseed, ub, seeds);
}
QP_EMU_REGISTER(qp_ortile_bounds)

extern "C" __global__ void __launch_bounds__(256)
qp_ortile_accumulate(uint32_t nitems, uint32_t ntiles, uint32_t tile, const uint32_t *seeds, uint32_t nseed,
                     const qp_q::QMeta *qmeta, const qp_ot::OQuery *oq, const qp_q::Seg *segs,
                     const qp_q::QTerm *qterms, const qp_q::TermMeta *terms, const float *norms, uint32_t ndocs,
                     float k1p1, const uint32_t *docs, const uint32_t *freqs, const float *ub,
                     unsigned long long *theta, uint32_t *cnt, uint32_t *cdoc, float *cscore) {
	qp_ot::accumulate(nitems, ntiles, tile, seeds, nseed, qmeta, oq, segs, qterms, terms, norms, ndocs, k1p1, docs,
	                  freqs, ub, theta, cnt, cdoc, cscore);
}
QP_EMU_REGISTER(qp_ortile_accumulate)

extern "C" __global__ void __launch_bounds__(256)
qp_ortile_clamp(uint32_t nq, const qp_ot::OQuery *oq, const uint32_t *cnt, uint32_t *out) {
	qp_ot::clamp(nq, oq, cnt, out);
}
QP_EMU_REGISTER(qp_ortile_clamp)

extern "C" __global__ void __launch_bounds__(256)
qp_ortile_compact(uint32_t nq, const qp_ot::OQuery *oq, const uint32_t *ex, const uint32_t *cdoc,
                  const float *cscore, uint32_t *ndoc, float *nscore, uint32_t *ncq) {
	qp_ot::compact(nq, oq, ex, cdoc, cscore, ndoc, nscore, ncq);
}
QP_EMU_REGISTER(qp_ortile_compact)

extern "C" __global__ void __launch_bounds__(256)
qp_ortile_maxtree(uint32_t nq, const qp_q::QMeta *qmeta, const uint32_t *cdoc, const float *cscore,
                  const uint32_t *cq, uint32_t ncand, const qp_ot::OQuery *oq, unsigned long long *keys,
                  unsigned long long *res, uint32_t *cnt, uint32_t *total) {
	qp_ot::maxtree(nq, qmeta, cdoc, cscore, cq, ncand, oq, keys, res, cnt, total);
}
QP_EMU_REGISTER(qp_ortile_maxtree)
