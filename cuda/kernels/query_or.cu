// query_or.cu — disjunctive (OR) queries: Ding et al. WWW'09 §8 brute-force
// term-at-a-time with a dense float32 accumulator of N documents per query
// (row q of acc), zeroed by the host (cuMemsetD32Async) before the first
// term. The host decodes, for each canonical term position j, the j-th list
// of every query of the launch (one Seg each) and launches:
//
// qp_query_or_accumulate: acc[q][d] = acc[q][d] + w * term(tf, norm[d]) in
// float32 (exact operations: bit-identical to the CPU's TAAT, which adds the
// lists in the same canonical order). Launch: grid ceil(nval/256) x 256
// threads, one thread per decoded posting (grid-stride loop); a launch holds
// at most one list per query and a list holds a docID once, so no two
// threads touch the same accumulator: no atomics, a deterministic order.
// Memory per posting: reads 8 bytes decoded + 4 of the previous docID
// (cached) + 4 norm and 4 accumulator (both random), writes 4.
// Decoded docIDs that are >= N or do not increase count in err[kErrDocs]
// and are skipped (the host reports the index as corrupt).

#include "query_params.cuh"

namespace qp_q {

__device__ __forceinline__ void or_accumulate(const Seg *__restrict__ segs, u32 nseg,
                                              const QTerm *__restrict__ qterms, const float *__restrict__ norms,
                                              u32 ndocs, float k1p1, const u32 *__restrict__ docs,
                                              const u32 *__restrict__ freqs, u32 nval, float *__restrict__ acc,
                                              u32 *__restrict__ err) {
	for (u32 i = blockIdx.x * kThreads + threadIdx.x; i < nval; i += gridDim.x * kThreads) {
		const u32 s = seg_of(nseg, i, [&](u32 x) { return segs[x].v0; });
		const Seg g = segs[s];
		const u32 d = docs[i];
		if (d >= ndocs || (i > g.v0 && docs[i - 1] >= d)) {
			atomicAdd(&err[kErrDocs], 1u);
			continue;
		}
		const QTerm qt = qterms[g.qt];
		float *a = acc + static_cast<u64>(g.q) * ndocs + d;
		*a = fadd(*a, term(qt.idf, k1p1, freqs[i], norms[d], qt.w));
	}
}

} // namespace qp_q

extern "C" __global__ void __launch_bounds__(256)
qp_query_or_accumulate(const qp_q::Seg *segs, qp_q::u32 nseg, const qp_q::QTerm *qterms, const float *norms,
                       qp_q::u32 ndocs, float k1p1, const qp_q::u32 *docs, const qp_q::u32 *freqs, qp_q::u32 nval,
                       float *acc, qp_q::u32 *err) {
	qp_q::or_accumulate(segs, nseg, qterms, norms, ndocs, k1p1, docs, freqs, nval, acc, err);
}
QP_EMU_REGISTER(qp_query_or_accumulate)
static_assert(std::is_same<decltype(&qp_query_or_accumulate), QP_SIGNATURE_OrAccumulateParams>::value,
              "qp_query_or_accumulate's parameters differ from OrAccumulateParams (cuda/kern/layout.go)");
