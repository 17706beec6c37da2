// query_scan.cu — device-wide exclusive prefix sums for the query kernels
// (stream compaction of AND candidates, slots of selected blocks), built on
// cub::BlockScan as reduce-then-scan in three launches, or two when the
// apply launch sums the partials itself (raw), so that no CTA ever waits
// for another (the CPU emulator runs CTAs one after the other):
//
//	qp_query_scan_reduce_T    grid ceil(n/1024) x 256 threads: CTA i sums
//	                          tile i (1024 items, 4 consecutive per thread)
//	                          into part[i]. Reads n items, writes n/1024.
//	qp_query_scan_partials_T  grid 1 x 256: exclusive scan of part[0..np)
//	                          in place, 1024 at a time with a carry, and
//	                          part[np] = the total. Reads and writes np.
//	qp_query_scan_apply_T     grid ceil(n/1024) x 256: exclusive scan of
//	                          each tile plus part[tile]; out[i] = sum of
//	                          in[0..i), out[n] = the total. Reads n items
//	                          and np partials, writes n+1. in may equal out.
//	                          With raw != 0 the partials are the tiles'
//	                          sums, unscanned (the partials launch is
//	                          skipped): CTA i sums part[0..i) itself
//	                          (tile_prefix) and part[np] is not written.
//	                          Reads i partials more per CTA: the host
//	                          takes this path only for np <= 512
//	                          (kern.ScanFuseParts), where it reads at most
//	                          half a tile more on average (docs/GPU-QUERY.md,
//	                          "Fewer launches per step").
//
// T is u32 (candidate flags) or S4 (four u64 fields). Static shared memory:
// CUB's scan storage plus one T.

#include "query_params.cuh"

namespace qp_q {

template <class T>
__device__ __forceinline__ void scan_reduce(const T *__restrict__ in, T *__restrict__ part, u32 n) {
	__shared__ typename BlockSum<T>::Scan::TempStorage tmp;
	const u64 base = static_cast<u64>(blockIdx.x) * kScanTile + threadIdx.x * kScanItems;
	T s = T(0);
	for (u32 j = 0; j < kScanItems; j++)
		if (base + j < n) s = s + in[base + j];
	T incl;
	typename BlockSum<T>::Scan(tmp).InclusiveSum(s, incl);
	if (threadIdx.x == kThreads - 1) part[blockIdx.x] = incl;
}

template <class T>
__device__ __forceinline__ void scan_partials(T *part, u32 np) {
	__shared__ typename BlockSum<T>::Scan::TempStorage tmp;
	__shared__ T chunk;
	T carry = T(0);
	for (u32 base = 0; base < np; base += kScanTile) {
		const u32 i0 = base + threadIdx.x * kScanItems;
		T v[kScanItems];
		T s;
		const T excl = piece_prefix<T>(part, i0, np, v, s, tmp);
		T run = carry + excl;
		for (u32 j = 0; j < kScanItems; j++) {
			if (i0 + j < np) part[i0 + j] = run;
			run = run + v[j];
		}
		if (threadIdx.x == kThreads - 1) chunk = excl + s;
		__syncthreads();
		carry = carry + chunk;
		__syncthreads(); // chunk and the scan storage are reused
	}
	if (threadIdx.x == 0) part[np] = carry;
}

template <class T>
__device__ __forceinline__ void scan_apply(const T *in, T *out, const T *__restrict__ part, u32 n, u32 raw) {
	__shared__ typename BlockSum<T>::Scan::TempStorage tmp;
	const T p = raw != 0 ? tile_prefix<T>(part, blockIdx.x, tmp) : part[blockIdx.x];
	u64 base;
	T v[kScanItems];
	T run = p + scan_piece<T>(in, n, base, v, tmp);
	for (u32 j = 0; j < kScanItems; j++) {
		if (base + j < n) {
			out[base + j] = run;
			if (base + j + 1 == n) out[n] = run + v[j];
		}
		run = run + v[j];
	}
}

} // namespace qp_q

extern "C" __global__ void __launch_bounds__(256)
qp_query_scan_reduce_u32(const uint32_t *in, uint32_t *part, uint32_t n) {
	qp_q::scan_reduce<uint32_t>(in, part, n);
}
QP_EMU_REGISTER(qp_query_scan_reduce_u32)
static_assert(std::is_same<decltype(&qp_query_scan_reduce_u32), QP_SIGNATURE_ScanReduceU32Params>::value,
              "qp_query_scan_reduce_u32's parameters differ from ScanReduceU32Params (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256) qp_query_scan_partials_u32(uint32_t *part, uint32_t np) {
	qp_q::scan_partials<uint32_t>(part, np);
}
QP_EMU_REGISTER(qp_query_scan_partials_u32)
static_assert(std::is_same<decltype(&qp_query_scan_partials_u32), QP_SIGNATURE_ScanPartialsU32Params>::value,
              "qp_query_scan_partials_u32's parameters differ from ScanPartialsU32Params (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_query_scan_apply_u32(const uint32_t *in, uint32_t *out, const uint32_t *part, uint32_t n, uint32_t raw) {
	qp_q::scan_apply<uint32_t>(in, out, part, n, raw);
}
QP_EMU_REGISTER(qp_query_scan_apply_u32)
static_assert(std::is_same<decltype(&qp_query_scan_apply_u32), QP_SIGNATURE_ScanApplyU32Params>::value,
              "qp_query_scan_apply_u32's parameters differ from ScanApplyU32Params (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_query_scan_reduce_s4(const qp_q::S4 *in, qp_q::S4 *part, uint32_t n) {
	qp_q::scan_reduce<qp_q::S4>(in, part, n);
}
QP_EMU_REGISTER(qp_query_scan_reduce_s4)
static_assert(std::is_same<decltype(&qp_query_scan_reduce_s4), QP_SIGNATURE_ScanReduceS4Params>::value,
              "qp_query_scan_reduce_s4's parameters differ from ScanReduceS4Params (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256) qp_query_scan_partials_s4(qp_q::S4 *part, uint32_t np) {
	qp_q::scan_partials<qp_q::S4>(part, np);
}
QP_EMU_REGISTER(qp_query_scan_partials_s4)
static_assert(std::is_same<decltype(&qp_query_scan_partials_s4), QP_SIGNATURE_ScanPartialsS4Params>::value,
              "qp_query_scan_partials_s4's parameters differ from ScanPartialsS4Params (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_query_scan_apply_s4(const qp_q::S4 *in, qp_q::S4 *out, const qp_q::S4 *part, uint32_t n, uint32_t raw) {
	qp_q::scan_apply<qp_q::S4>(in, out, part, n, raw);
}
QP_EMU_REGISTER(qp_query_scan_apply_s4)
static_assert(std::is_same<decltype(&qp_query_scan_apply_s4), QP_SIGNATURE_ScanApplyS4Params>::value,
              "qp_query_scan_apply_s4's parameters differ from ScanApplyS4Params (cuda/kern/layout.go)");
