// query_and.cu — conjunctive (AND) query steps, many queries per launch
// (Ding et al. WWW'09 §8, Ao et al. VLDB'11 §4.1-4.2). Candidates are the
// documents of each query's shortest list (decoded whole by
// qp_query_full_desc + qp_query_gather + the batch decoder), kept as three
// parallel arrays cdoc/cscore/cq, grouped by query and ascending by docID
// within a query. Then, for each canonical term position j = 1, 2, ...:
//
//	qp_query_and_select    binary search of each candidate in the skip
//	                       table (lastDoc) of its query's j-th list: the
//	                       only block that can hold it (kDead: none).
//	qp_query_and_heads     marks the first candidate of each distinct
//	                       (query, block): S4{1, postings, doc bytes, freq
//	                       bytes}, else 0; exclusive scan (query_scan.cu)
//	                       gives every selected block its slot and offsets.
//	qp_query_and_desc      writes the selected blocks' list for
//	                       qp_query_gather and the decoders.
//	qp_query_and_intersect binary search of each candidate in its decoded
//	                       block; found: add the term's score (exact float32,
//	                       canonical order: bit-identical to the CPU) using
//	                       its frequency; flag = found. Exclusive scan.
//	qp_query_compact       keeps the flagged candidates, in order.
//
// Candidates whose query has fewer than j+1 terms pass through (kPass).
// Every kernel: grid ceil(n/256) x 256 threads (grid-stride loop), one
// thread per candidate (per decoded value for qp_query_and_init).

#include "query.cuh"

namespace qp_q {

__device__ __forceinline__ u32 grid_first() { return blockIdx.x * kThreads + threadIdx.x; }
__device__ __forceinline__ u32 grid_stride() { return gridDim.x * kThreads; }

// and_init: candidates from the decoded shortest lists, one segment per
// query (seg.q). Memory per value: reads 8 bytes decoded + 4 of the
// previous docID + 4 norm (random) + the segment's 40 (cached); writes 12.
__device__ __forceinline__ void and_init(const Seg *__restrict__ segs, u32 nseg, const QTerm *__restrict__ qterms,
                                         const float *__restrict__ norms, u32 ndocs, float k1p1,
                                         const u32 *__restrict__ docs, const u32 *__restrict__ freqs, u32 nval,
                                         u32 *__restrict__ cdoc, float *__restrict__ cscore, u32 *__restrict__ cq,
                                         u32 *__restrict__ err) {
	for (u32 i = grid_first(); i < nval; i += grid_stride()) {
		const u32 s = seg_of(nseg, i, [&](u32 x) { return segs[x].v0; });
		const Seg g = segs[s];
		u32 d = docs[i];
		if (d >= ndocs || (i > g.v0 && docs[i - 1] >= d)) {
			atomicAdd(&err[kErrDocs], 1u);
			d = 0;
		}
		const QTerm qt = qterms[g.qt];
		cdoc[i] = d;
		cscore[i] = term(qt.idf, k1p1, freqs[i], norms[d], qt.w);
		cq[i] = g.q;
	}
}

// and_select: memory per candidate: reads 8 bytes + the query's 16+16 and
// the term's 32 (cached) + log2(blocks) skip entries; writes 4.
__device__ __forceinline__ void and_select(const TermMeta *__restrict__ terms, const uint8_t *__restrict__ post,
                                           const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms,
                                           u32 j, u32 n, const u32 *__restrict__ cdoc, const u32 *__restrict__ cq,
                                           u32 *__restrict__ blk) {
	for (u32 i = grid_first(); i < n; i += grid_stride()) {
		const QMeta m = qmeta[cq[i]];
		if (j >= m.m) {
			blk[i] = kPass;
			continue;
		}
		const TermMeta t = terms[qterms[m.toff + j].term];
		const u32 b = find_block(skips(post, t), t.nb, cdoc[i]);
		blk[i] = b < t.nb ? b : kDead;
	}
}

__device__ __forceinline__ bool is_head(u32 i, const u32 *__restrict__ cq, const u32 *__restrict__ blk, u32 b) {
	return b < kDead && (i == 0 || blk[i - 1] != b || cq[i - 1] != cq[i]);
}

// and_heads: memory per candidate: reads 16 bytes (+ 2 skip entries and
// the query's metadata for heads); writes 32.
__device__ __forceinline__ void and_heads(const TermMeta *__restrict__ terms, const uint8_t *__restrict__ post,
                                          const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms,
                                          u32 j, u32 n, u32 bs, const u32 *__restrict__ cq,
                                          const u32 *__restrict__ blk, S4 *__restrict__ sel,
                                          u32 *__restrict__ qblocks, u32 *__restrict__ qpost) {
	for (u32 i = grid_first(); i < n; i += grid_stride()) {
		const u32 b = blk[i];
		if (!is_head(i, cq, blk, b)) {
			sel[i] = S4(0);
			continue;
		}
		const u32 a = cq[i];
		const TermMeta t = terms[qterms[qmeta[a].toff + j].term];
		const u32 *sk = skips(post, t);
		const u32 vals = block_len(t, b, bs);
		sel[i] = S4(1, vals, doc_end(sk, b) - doc_start(sk, b), freq_end(sk, b) - freq_start(sk, b));
		atomicAdd(&qblocks[a], 1u);
		atomicAdd(&qpost[a], vals);
	}
}

// and_desc: ex is the exclusive scan of and_heads' output (n+1 entries).
// Memory per candidate: reads 16 bytes (+ 32 of ex for heads); heads write
// 32 bytes of block list and offsets.
__device__ __forceinline__ void and_desc(const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms, u32 j,
                                         u32 n, const u32 *__restrict__ cq, const u32 *__restrict__ blk,
                                         const S4 *__restrict__ ex, u32 *__restrict__ blk_term,
                                         u32 *__restrict__ blk_idx, u64 *__restrict__ d_off,
                                         u64 *__restrict__ f_off, u64 *__restrict__ o_off) {
	for (u32 i = grid_first(); i < n; i += grid_stride()) {
		const u32 b = blk[i];
		if (is_head(i, cq, blk, b)) {
			const S4 e = ex[i];
			const u32 slot = static_cast<u32>(e.a);
			blk_term[slot] = qterms[qmeta[cq[i]].toff + j].term;
			blk_idx[slot] = b;
			o_off[slot] = e.b;
			d_off[slot] = e.c;
			f_off[slot] = e.d;
		}
		if (i + 1 == n) {
			const S4 e = ex[n];
			const u32 slot = static_cast<u32>(e.a);
			o_off[slot] = e.b;
			d_off[slot] = e.c;
			f_off[slot] = e.d;
		}
	}
}

// and_intersect: memory per candidate: reads 24 bytes + for candidates in
// a block 16 bytes of offsets, 7 docIDs (binary search in <= 128), one
// frequency and one norm; writes 4-8 bytes.
__device__ __forceinline__ void and_intersect(const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms,
                                              u32 j, u32 n, const float *__restrict__ norms, float k1p1,
                                              const u32 *__restrict__ cdoc, float *__restrict__ cscore,
                                              const u32 *__restrict__ cq, const u32 *__restrict__ blk,
                                              const S4 *__restrict__ ex, const u64 *__restrict__ o_off,
                                              const u32 *__restrict__ docs, const u32 *__restrict__ freqs,
                                              u32 *__restrict__ flag) {
	for (u32 i = grid_first(); i < n; i += grid_stride()) {
		const u32 b = blk[i];
		if (b == kPass) {
			flag[i] = 1;
			continue;
		}
		if (b == kDead) {
			flag[i] = 0;
			continue;
		}
		const u32 slot = static_cast<u32>(ex[i].a) + (is_head(i, cq, blk, b) ? 0 : static_cast<u32>(-1));
		u64 lo = o_off[slot], hi = o_off[slot + 1];
		const u64 end = hi;
		const u32 d = cdoc[i];
		while (lo < hi) {
			const u64 mid = (lo + hi) >> 1;
			if (docs[mid] < d)
				lo = mid + 1;
			else
				hi = mid;
		}
		const bool found = lo < end && docs[lo] == d;
		if (found) {
			const QTerm qt = qterms[qmeta[cq[i]].toff + j];
			cscore[i] = fadd(cscore[i], term(qt.idf, k1p1, freqs[lo], norms[d], qt.w));
		}
		flag[i] = found ? 1 : 0;
	}
}

// compact: pos is the exclusive scan of the flags (n+1 entries); keeps
// candidate i at pos[i] when pos[i+1] > pos[i]. Memory per candidate:
// reads 8 bytes (+12 kept), writes 12 per kept one.
__device__ __forceinline__ void compact(u32 n, const u32 *__restrict__ pos, const u32 *__restrict__ cdoc,
                                        const float *__restrict__ cscore, const u32 *__restrict__ cq,
                                        u32 *__restrict__ ndoc, float *__restrict__ nscore, u32 *__restrict__ nq) {
	for (u32 i = grid_first(); i < n; i += grid_stride()) {
		const u32 o = pos[i];
		if (pos[i + 1] != o) {
			ndoc[o] = cdoc[i];
			nscore[o] = cscore[i];
			nq[o] = cq[i];
		}
	}
}

} // namespace qp_q

extern "C" __global__ void __launch_bounds__(256)
qp_query_and_init(const qp_q::Seg *segs, uint32_t nseg, const qp_q::QTerm *qterms, const float *norms, uint32_t ndocs,
                  float k1p1, const uint32_t *docs, const uint32_t *freqs, uint32_t nval, uint32_t *cdoc,
                  float *cscore, uint32_t *cq, uint32_t *err) {
	qp_q::and_init(segs, nseg, qterms, norms, ndocs, k1p1, docs, freqs, nval, cdoc, cscore, cq, err);
}
QP_EMU_REGISTER(qp_query_and_init)

extern "C" __global__ void __launch_bounds__(256)
qp_query_and_select(const qp_q::TermMeta *terms, const uint8_t *post, const qp_q::QMeta *qmeta,
                    const qp_q::QTerm *qterms, uint32_t j, uint32_t n, const uint32_t *cdoc, const uint32_t *cq,
                    uint32_t *blk) {
	qp_q::and_select(terms, post, qmeta, qterms, j, n, cdoc, cq, blk);
}
QP_EMU_REGISTER(qp_query_and_select)

extern "C" __global__ void __launch_bounds__(256)
qp_query_and_heads(const qp_q::TermMeta *terms, const uint8_t *post, const qp_q::QMeta *qmeta,
                   const qp_q::QTerm *qterms, uint32_t j, uint32_t n, uint32_t bs, const uint32_t *cq,
                   const uint32_t *blk, qp_q::S4 *sel, uint32_t *qblocks, uint32_t *qpost) {
	qp_q::and_heads(terms, post, qmeta, qterms, j, n, bs, cq, blk, sel, qblocks, qpost);
}
QP_EMU_REGISTER(qp_query_and_heads)

extern "C" __global__ void __launch_bounds__(256)
qp_query_and_desc(const qp_q::QMeta *qmeta, const qp_q::QTerm *qterms, uint32_t j, uint32_t n, const uint32_t *cq,
                  const uint32_t *blk, const qp_q::S4 *ex, uint32_t *blk_term, uint32_t *blk_idx,
                  unsigned long long *d_off, unsigned long long *f_off, unsigned long long *o_off) {
	qp_q::and_desc(qmeta, qterms, j, n, cq, blk, ex, blk_term, blk_idx, d_off, f_off, o_off);
}
QP_EMU_REGISTER(qp_query_and_desc)

extern "C" __global__ void __launch_bounds__(256)
qp_query_and_intersect(const qp_q::QMeta *qmeta, const qp_q::QTerm *qterms, uint32_t j, uint32_t n,
                       const float *norms, float k1p1, const uint32_t *cdoc, float *cscore, const uint32_t *cq,
                       const uint32_t *blk, const qp_q::S4 *ex, const unsigned long long *o_off,
                       const uint32_t *docs, const uint32_t *freqs, uint32_t *flag) {
	qp_q::and_intersect(qmeta, qterms, j, n, norms, k1p1, cdoc, cscore, cq, blk, ex, o_off, docs, freqs, flag);
}
QP_EMU_REGISTER(qp_query_and_intersect)

extern "C" __global__ void __launch_bounds__(256)
qp_query_compact(uint32_t n, const uint32_t *pos, const uint32_t *cdoc, const float *cscore, const uint32_t *cq,
                 uint32_t *ndoc, float *nscore, uint32_t *nq) {
	qp_q::compact(n, pos, cdoc, cscore, cq, ndoc, nscore, nq);
}
QP_EMU_REGISTER(qp_query_compact)
