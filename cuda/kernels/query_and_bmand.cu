// query_and_bmand.cu — the bitmap AND of queries whose every list has a
// device bitmap in use (issues 20 §4 and 25; Go side cuda/kern/query_and.go
// AndKernels.BitmapAnd, orchestration engine/gpu/bmand.go). For such a
// query the candidate plan decodes its shortest list and tests each of its
// postings against the other terms' columns (query_and.cu,
// query_and_bitmap.cu); here the word-wise AND of the query's group
// bitsets (31 documents a 4-byte word, the columns' layout of query.cuh)
// yields its intersection directly: N/31 words a term, read coalesced,
// whatever the lists' lengths (Wu et al.'s column-oriented AND, the COA
// pattern of kernels/wah.cu over decompressed columns).
//
// qp_and_bmwords: grid (x, nq) x 256 threads, grid-stride over the D groups
// in x, one query per blockIdx.y: cnt[q*D + g] = the documents of group g
// in every list of query q. Memory per (query, group): 4 bytes per term
// read (coalesced; the loop stops at the first empty AND) and 4 written.
// Then ScanU32 makes cnt the exclusive prefix sums (pos).
//
// qp_and_bmemit: the same grid: recomputes each group's AND and writes its
// documents, ascending, at cdoc[pos[q*D + g] ...] with cq = q, so the
// candidates are grouped by ascending query and ascending by docID within
// one, as the candidate plan leaves them. Slots past pos[nq*D] are left as
// the caller filled them (cq = kNone); a slot at or past n (never, when n
// bounds the intersections) is not written. Memory per (query, group): 4
// bytes per term read again, 8 bytes per document written.
//
// The host sends only queries all of whose terms have a column (col[] !=
// kNoCol); a term without one would make the query's AND empty. Scores
// are added by qp_and_bmscore_all (query_and_bitmap.cu) from term 0 on.

#include "query_params.cuh"

namespace qp_andbmw {

using namespace qp_q;

// and_word is the AND of word g of every column of the query's m terms
// (only the 31 rows of a group).
__device__ __forceinline__ u32 and_word(const QTerm *__restrict__ qt, u32 m, const u32 *__restrict__ col,
                                        const u32 *__restrict__ mat, u32 D, u32 g) {
	u32 w = (1u << kGroupRows) - 1;
	for (u32 j = 0; j < m && w != 0; j++) {
		const u32 c = col[qt[j].term];
		w = c == kNoCol ? 0 : w & mat[static_cast<u64>(c) * D + g];
	}
	return w;
}

__device__ __forceinline__ void and_bmwords(const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms,
                                            const u32 *__restrict__ col, const u32 *__restrict__ mat, u32 D, u32 nq,
                                            u32 *__restrict__ cnt) {
	const u32 q = blockIdx.y;
	if (q >= nq) return;
	const QMeta m = qmeta[q];
	const QTerm *qt = qterms + m.toff;
	for (u32 g = blockIdx.x * kThreads + threadIdx.x; g < D; g += gridDim.x * kThreads)
		cnt[static_cast<u64>(q) * D + g] = __popc(and_word(qt, m.m, col, mat, D, g));
}

__device__ __forceinline__ void and_bmemit(const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms,
                                           const u32 *__restrict__ col, const u32 *__restrict__ mat, u32 D, u32 nq,
                                           const u32 *__restrict__ pos, u32 n, u32 *__restrict__ cdoc,
                                           u32 *__restrict__ cq) {
	const u32 q = blockIdx.y;
	if (q >= nq) return;
	const QMeta m = qmeta[q];
	const QTerm *qt = qterms + m.toff;
	for (u32 g = blockIdx.x * kThreads + threadIdx.x; g < D; g += gridDim.x * kThreads) {
		u32 w = and_word(qt, m.m, col, mat, D, g);
		u32 o = pos[static_cast<u64>(q) * D + g];
		for (; w != 0 && o < n; o++) {
			const u32 r = __ffs(w) - 1;
			w &= w - 1;
			cdoc[o] = g * kGroupRows + r;
			cq[o] = q;
		}
	}
}

} // namespace qp_andbmw

extern "C" __global__ void __launch_bounds__(256)
qp_and_bmwords(const qp_q::QMeta *qmeta, const qp_q::QTerm *qterms, const qp_q::u32 *col, const qp_q::u32 *mat,
               qp_q::u32 D, qp_q::u32 nq, qp_q::u32 *cnt) {
	qp_andbmw::and_bmwords(qmeta, qterms, col, mat, D, nq, cnt);
}
QP_EMU_REGISTER(qp_and_bmwords)
static_assert(std::is_same<decltype(&qp_and_bmwords), QP_SIGNATURE_AndBMWordsParams>::value,
              "qp_and_bmwords's parameters differ from AndBMWordsParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_and_bmemit(const qp_q::QMeta *qmeta, const qp_q::QTerm *qterms, const qp_q::u32 *col, const qp_q::u32 *mat,
              qp_q::u32 D, qp_q::u32 nq, const qp_q::u32 *pos, qp_q::u32 n, qp_q::u32 *cdoc, qp_q::u32 *cq) {
	qp_andbmw::and_bmemit(qmeta, qterms, col, mat, D, nq, pos, n, cdoc, cq);
}
QP_EMU_REGISTER(qp_and_bmemit)
static_assert(std::is_same<decltype(&qp_and_bmemit), QP_SIGNATURE_AndBMEmitParams>::value,
              "qp_and_bmemit's parameters differ from AndBMEmitParams (cuda/kern/layout.go)");
