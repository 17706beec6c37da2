// query_and_bitmap.cu — bitmap lists in the GPU AND steps (issue #6; Go
// side cuda/kern/query_and.go, orchestration engine/gpu/bitmap.go and and.go).
//
// The densest lists of the index also live on the device as decompressed
// WAH bitmaps with rank directories (columns; their layout, col[] and the
// rank and rank_tf helpers are in query.cuh).
//
// A query's bitmap terms are the longest suffix of its canonical order
// (ascending df) whose terms all have a column, not counting term 0 (the
// shortest list, whose decoded docIDs are the candidates): bitmap_start
// finds where it begins, and the host (engine/gpu) applies the same rule.
//
// qp_and_filter (the candidate filter before scoring). Grid ceil(n/1024)
// x 256, 4 consecutive candidates per thread, after the candidates of the
// shortest lists are made: flag[i] = 1 when candidate i's document is in
// every bitmap term's list of its query (one bit test each, a random 4-byte
// load; the row-at-a-time AND of the paper's ROA pattern, done only for
// the candidate rows), and part[tile] = the tile's flag sum, for
// ScanFromPartsU32 and qp_and_compact. The AND steps that follow handle
// the surviving candidates only. Memory per candidate: reads 8 bytes + the
// query's QTerms and col entries (cached) + 4 bytes per bitmap term;
// writes 4.
//
// qp_and_bmscore (scoring by rank, Ding et al. WWW'09 §8: frequencies only
// for the candidates). Grid ceil(n/256) x 256 (grid-stride), after the
// list steps, when the frequency codec is bp128: each surviving candidate
// is in every bitmap term's list (the filter kept it), at rank r = the
// documents of the list before it (rk entry + popcounts of up to 7 words +
// the masked word); its frequency is slot r % bs of frequency block r / bs,
// read by random access (bp128_freq, checked like the decoder does; a
// corrupt block raises err[kErrFreqs] and counts tf 1), and the terms'
// scores are added in canonical order after those of the list steps, so
// the sum is the CPU's, bit for bit. Memory per candidate and bitmap term:
// reads the rk entry, 4-32 bytes of words, the skip entry and the block's
// header, last byte and slot bytes, 4 of norm; writes 4.

#include "query_params.cuh"

namespace qp_andbm {

using namespace qp_q;

// bitmap_start returns the first canonical position of q's bitmap terms
// (m when it has none; never 0).
__device__ __forceinline__ u32 bitmap_start(const QTerm *__restrict__ qt, u32 m, const u32 *__restrict__ col) {
	u32 j = m;
	while (j > 1 && col[qt[j - 1].term] != kNoCol) j--;
	return j;
}

__device__ __forceinline__ void and_filter(const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms,
                                           const u32 *__restrict__ col, const u32 *__restrict__ mat, u32 D, u32 n,
                                           const u32 *__restrict__ cdoc, const u32 *__restrict__ cq,
                                           u32 *__restrict__ flag, u32 *__restrict__ part) {
	flag_tile(n, flag, part, [&](u64 i) -> u32 {
		const u32 q = cq[i];
		if (q == kNone) return 0;
		const QMeta m = qmeta[q];
		const QTerm *qt = qterms + m.toff;
		u32 g, r;
		group(cdoc[i], g, r);
		for (u32 j = bitmap_start(qt, m.m, col); j < m.m; j++)
			if (((mat[static_cast<u64>(col[qt[j].term]) * D + g] >> r) & 1u) == 0) return 0;
		return 1;
	});
}

// and_bmscore: All = false for qp_and_bmscore (the bitmap terms, after the
// list steps), true for qp_and_bmscore_all (every term from term 0, for the
// candidates of qp_and_bmemit whose score slots hold 0: fadd(0, t0) = t0,
// so the sum is the CPU's, bit for bit).
template <bool All>
__device__ __forceinline__ void and_bmscore(const TermMeta *__restrict__ terms, const uint8_t *__restrict__ post,
                                            const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms,
                                            const u32 *__restrict__ col, const u32 *__restrict__ mat,
                                            const u32 *__restrict__ rk, u32 D, u32 S, u32 n, u32 bs,
                                            const float *__restrict__ norms, float k1p1,
                                            const u32 *__restrict__ cdoc, float *__restrict__ cscore,
                                            const u32 *__restrict__ cq, u32 *__restrict__ err) {
	for (u32 i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) {
		const u32 q = cq[i];
		if (q == kNone) continue;
		const QMeta m = qmeta[q];
		const QTerm *qt = qterms + m.toff;
		const u32 d = cdoc[i];
		const float norm = norms[d];
		float sc = cscore[i];
		for (u32 j = All ? 0 : bitmap_start(qt, m.m, col); j < m.m; j++) {
			const u32 c = col[qt[j].term];
			const u32 r = rank(mat + static_cast<u64>(c) * D, rk + static_cast<u64>(c) * S, d);
			u32 tf = rank_tf(post, terms[qt[j].term], r, bs);
			if (tf == 0) {
				atomicAdd(&err[kErrFreqs], 1u);
				tf = 1;
			}
			sc = fadd(sc, term(qt[j].idf, k1p1, tf, norm, qt[j].w));
		}
		cscore[i] = sc;
	}
}

} // namespace qp_andbm

extern "C" __global__ void __launch_bounds__(256)
qp_and_filter(const qp_q::QMeta *qmeta, const qp_q::QTerm *qterms, const qp_q::u32 *col, const qp_q::u32 *mat,
              qp_q::u32 D, qp_q::u32 n, const qp_q::u32 *cdoc, const qp_q::u32 *cq, qp_q::u32 *flag,
              qp_q::u32 *part) {
	qp_andbm::and_filter(qmeta, qterms, col, mat, D, n, cdoc, cq, flag, part);
}
QP_EMU_REGISTER(qp_and_filter)
static_assert(std::is_same<decltype(&qp_and_filter), QP_SIGNATURE_AndFilterParams>::value,
              "qp_and_filter's parameters differ from AndFilterParams (cuda/kern/layout.go)");

// QP_AND_BMSCORE_KERNEL defines the kernel NAME, and_bmscore<ALL> with the
// parameter list AndBMScoreParams (cuda/kern/layout.go): qp_and_bmscore
// (ALL = false) and qp_and_bmscore_all (ALL = true), one launcher on the Go
// side (AndKernels.BitmapScore).
#define QP_AND_BMSCORE_KERNEL(NAME, ALL)                                                                            \
	extern "C" __global__ void __launch_bounds__(256)                                                           \
	    NAME(const qp_q::TermMeta *terms, const uint8_t *post, const qp_q::QMeta *qmeta,                        \
	         const qp_q::QTerm *qterms, const qp_q::u32 *col, const qp_q::u32 *mat, const qp_q::u32 *rk,       \
	         qp_q::u32 D, qp_q::u32 S, qp_q::u32 n, qp_q::u32 bs, const float *norms, float k1p1,              \
	         const qp_q::u32 *cdoc, float *cscore, const qp_q::u32 *cq, qp_q::u32 *err) {                      \
		qp_andbm::and_bmscore<ALL>(terms, post, qmeta, qterms, col, mat, rk, D, S, n, bs, norms, k1p1, cdoc,   \
		                           cscore, cq, err);                                                           \
	}                                                                                                         \
	QP_EMU_REGISTER(NAME)                                                                                     \
	static_assert(std::is_same<decltype(&NAME), QP_SIGNATURE_AndBMScoreParams>::value,                        \
	              #NAME "'s parameters differ from AndBMScoreParams (cuda/kern/layout.go)");

QP_AND_BMSCORE_KERNEL(qp_and_bmscore, false)

// qp_and_bmscore_all: qp_and_bmscore over every term of the candidates'
// queries, term 0 included (the bitmap AND's candidates, query_and_bmand.cu);
// same launch shape and memory per candidate and term.
QP_AND_BMSCORE_KERNEL(qp_and_bmscore_all, true)
