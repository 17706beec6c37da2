// query_and.cu — conjunctive (AND) query steps, many queries per launch
// (Ding et al. WWW'09 §8, Ao et al. VLDB'11 §4.1-4.2). Candidates are the
// documents of each query's shortest list (decoded whole by
// qp_query_full_desc + qp_query_gather + the batch decoder), kept as three
// parallel arrays cdoc/cscore/cq, grouped by query and ascending by docID
// within a query:
//
//	qp_query_and_init      the candidates, scored with the first term.
//
// Then, for each canonical term position j = 1, 2, ..., the kernels of
// query_and_step.cu select each candidate's block and list the selected
// blocks for qp_query_gather and the decoders (qp_and_locate,
// qp_and_select), and qp_and_match and qp_and_compact finish the step.
// and_init: grid ceil(n/256) x 256 threads (grid-stride loop), one thread
// per decoded value.

#include "query_params.cuh"

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

} // namespace qp_q

extern "C" __global__ void __launch_bounds__(256)
qp_query_and_init(const qp_q::Seg *segs, qp_q::u32 nseg, const qp_q::QTerm *qterms, const float *norms,
                  qp_q::u32 ndocs, float k1p1, const qp_q::u32 *docs, const qp_q::u32 *freqs, qp_q::u32 nval,
                  qp_q::u32 *cdoc, float *cscore, qp_q::u32 *cq, qp_q::u32 *err) {
	qp_q::and_init(segs, nseg, qterms, norms, ndocs, k1p1, docs, freqs, nval, cdoc, cscore, cq, err);
}
QP_EMU_REGISTER(qp_query_and_init)
static_assert(std::is_same<decltype(&qp_query_and_init), QP_SIGNATURE_AndInitParams>::value,
              "qp_query_and_init's parameters differ from AndInitParams (cuda/kern/layout.go)");
