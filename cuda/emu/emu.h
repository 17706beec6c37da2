// emu.h — compiles cuda/kernels/*.cu with g++ for the CPU emulator of the
// CUDA driver (emu.cc, libcuda.so.1). Pre-included (g++ -include) before
// every kernel source: it maps the CUDA C++ keywords, built-in variables,
// warp intrinsics and the CUB warp/block scans the kernels use onto the
// emulator's coroutine threads. See emu.cc for the execution model.
#pragma once

#define QP_EMU 1

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__ static

struct alignas(16) uint4 {
	uint32_t x, y, z, w;
};
inline uint4 make_uint4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) { return uint4{x, y, z, w}; }
struct alignas(8) uint2 {
	uint32_t x, y;
};
inline uint2 make_uint2(uint32_t x, uint32_t y) { return uint2{x, y}; }
struct dim3 {
	uint32_t x, y, z;
};

namespace emu {

struct CpState;

struct Thread {
	dim3 tid;
	int lane, warp;
	CpState *cp; // cp.async groups of this thread
};

extern Thread *cur;
extern dim3 block_idx, block_dim, grid_dim;

// Warp-wide all-gather: every lane of the calling warp contributes size
// bytes; all receives 32 slots. kind names the call site class, so that
// lanes meeting in different collectives are caught.
void warp_gather(const void *in, size_t size, void *all, int kind, unsigned mask);
// CTA-wide all-gather (all: blockDim.x slots).
void block_gather(const void *in, size_t size, void *all, int kind);

enum { kShfl = 1, kBallot, kReduce, kSyncwarp, kScan, kSyncthreads, kBlockScan };

template <class T>
inline void gather(const T &v, T (&all)[32], int kind, unsigned mask) {
	warp_gather(&v, sizeof(T), all, kind, mask);
}

// cp.async: copies are queued per thread and performed only when a
// cp_wait that covers their group runs, so that reading the destination
// before waiting sees stale data (as it may on a GPU).
void cp_async(void *dst, const void *src, size_t n);
void cp_commit();
void cp_wait(int pending);

// Kernel registry: QP_EMU_REGISTER(f) makes kernel f launchable by name.
typedef void (*Invoker)(void *fn, void **params);
void register_kernel(const char *name, void *fn, Invoker inv);

template <class... A, size_t... I>
inline void invoke(void (*fn)(A...), void **p, std::index_sequence<I...>) {
	fn(*static_cast<std::remove_reference_t<A> *>(p[I])...);
}

template <class... A>
struct Reg {
	Reg(const char *name, void (*fn)(A...)) {
		register_kernel(name, reinterpret_cast<void *>(fn), [](void *f, void **p) {
			invoke(reinterpret_cast<void (*)(A...)>(f), p, std::index_sequence_for<A...>{});
		});
	}
};

} // namespace emu

#define QP_EMU_REGISTER(NAME) static emu::Reg qp_emu_reg_##NAME(#NAME, NAME);

#define threadIdx (emu::cur->tid)
#define blockIdx (emu::block_idx)
#define blockDim (emu::block_dim)
#define gridDim (emu::grid_dim)

// ---- intrinsics ----

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
	unsigned r = 0;
	for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
	return r;
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned sh) {
	return static_cast<unsigned>(((static_cast<unsigned long long>(hi) << 32) | lo) >> (sh & 31));
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned sh) {
	return static_cast<unsigned>((((static_cast<unsigned long long>(hi) << 32) | lo) << (sh & 31)) >> 32);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
	return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
// One OS thread runs every emulated thread, switching only at collectives:
// atomics need no locking.
inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v) {
	unsigned long long o = *p;
	if (v < o) *p = v;
	return o;
}
inline unsigned atomicAdd(unsigned *p, unsigned v) {
	unsigned o = *p;
	*p = o + v;
	return o;
}
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
	unsigned long long o = *p;
	*p = o + v;
	return o;
}
inline unsigned atomicOr(unsigned *p, unsigned v) {
	unsigned o = *p;
	*p = o | v;
	return o;
}

// Cache-hinted stores and loads are plain ones here.
template <class T>
inline void __stcs(T *p, T v) {
	*p = v;
}

inline void __syncwarp(unsigned mask = 0xffffffffu) {
	char c = 0, all[32];
	emu::warp_gather(&c, 1, all, emu::kSyncwarp, mask);
}
inline void __syncthreads() { emu::block_gather(nullptr, 0, nullptr, emu::kSyncthreads); }

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
	T all[32];
	emu::gather(v, all, emu::kShfl, mask);
	const int lane = emu::cur->lane;
	return all[(lane & ~(width - 1)) + (src & (width - 1))];
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
	T all[32];
	emu::gather(v, all, emu::kShfl, mask);
	const int lane = emu::cur->lane, seg = lane & ~(width - 1);
	return lane - static_cast<int>(d) >= seg ? all[lane - d] : v;
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
	T all[32];
	emu::gather(v, all, emu::kShfl, mask);
	const int lane = emu::cur->lane, seg = lane & ~(width - 1);
	return lane + static_cast<int>(d) < seg + width ? all[lane + d] : v;
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int x, int width = 32) {
	T all[32];
	emu::gather(v, all, emu::kShfl, mask);
	return all[emu::cur->lane ^ x];
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
	int all[32];
	const int p = pred != 0;
	emu::gather(p, all, emu::kBallot, mask);
	unsigned r = 0;
	for (int i = 0; i < 32; i++) r |= static_cast<unsigned>(all[i] != 0) << i;
	return r & mask;
}
inline unsigned __match_any_sync(unsigned mask, unsigned v) {
	unsigned all[32];
	emu::gather(v, all, emu::kBallot, mask);
	unsigned r = 0;
	for (int i = 0; i < 32; i++) r |= static_cast<unsigned>((mask >> i & 1) && all[i] == v) << i;
	return r;
}
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == mask; }
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }

#define QP_EMU_REDUCE(NAME, INIT, OP)                                                                           \
	inline unsigned NAME(unsigned mask, unsigned v) {                                                       \
		unsigned all[32];                                                                               \
		emu::gather(v, all, emu::kReduce, mask);                                                        \
		unsigned r = INIT;                                                                              \
		for (int i = 0; i < 32; i++)                                                                    \
			if (mask >> i & 1) r = OP;                                                              \
		return r;                                                                                       \
	}
QP_EMU_REDUCE(__reduce_add_sync, 0u, r + all[i])
QP_EMU_REDUCE(__reduce_max_sync, 0u, (all[i] > r ? all[i] : r))
QP_EMU_REDUCE(__reduce_min_sync, 0xffffffffu, (all[i] < r ? all[i] : r))
QP_EMU_REDUCE(__reduce_or_sync, 0u, r | all[i])
QP_EMU_REDUCE(__reduce_and_sync, 0xffffffffu, r &all[i])
#undef QP_EMU_REDUCE

// ---- CUB subset: WarpScan and BlockScan with the reference semantics ----

namespace cub {

struct Sum {
	template <class T>
	T operator()(const T &a, const T &b) const {
		return a + b;
	}
};
struct Max {
	template <class T>
	T operator()(const T &a, const T &b) const {
		return a < b ? b : a;
	}
};

template <class T, int LOGICAL_WARP_THREADS = 32, int PTX_ARCH = 0>
class WarpScan {
	static_assert(LOGICAL_WARP_THREADS == 32, "emu: only full warps");

public:
	struct TempStorage {};
	explicit WarpScan(TempStorage &) {}

	template <class Op>
	void InclusiveScan(T in, T &out, Op op, T &agg) {
		T all[32];
		emu::gather(in, all, emu::kScan, 0xffffffffu);
		const int lane = emu::cur->lane;
		T acc = all[0];
		for (int i = 1; i <= lane; i++) acc = op(acc, all[i]);
		out = acc;
		agg = all[0];
		for (int i = 1; i < 32; i++) agg = op(agg, all[i]);
	}
	template <class Op>
	void InclusiveScan(T in, T &out, Op op) {
		T agg;
		InclusiveScan(in, out, op, agg);
	}
	template <class Op>
	void ExclusiveScan(T in, T &out, T init, Op op, T &agg) {
		T all[32];
		emu::gather(in, all, emu::kScan, 0xffffffffu);
		const int lane = emu::cur->lane;
		T acc = init;
		for (int i = 0; i < lane; i++) acc = op(acc, all[i]);
		out = acc;
		agg = all[0];
		for (int i = 1; i < 32; i++) agg = op(agg, all[i]);
	}
	template <class Op>
	void ExclusiveScan(T in, T &out, T init, Op op) {
		T agg;
		ExclusiveScan(in, out, init, op, agg);
	}
	void InclusiveSum(T in, T &out) { InclusiveScan(in, out, Sum()); }
	void InclusiveSum(T in, T &out, T &agg) { InclusiveScan(in, out, Sum(), agg); }
	void ExclusiveSum(T in, T &out) { ExclusiveScan(in, out, T(0), Sum()); }
	void ExclusiveSum(T in, T &out, T &agg) { ExclusiveScan(in, out, T(0), Sum(), agg); }
};

enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };

template <class T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int PTX_ARCH = 0>
class BlockScan {
public:
	struct TempStorage {};
	explicit BlockScan(TempStorage &) {}

	void InclusiveSum(T in, T &out) {
		static T all[4096];
		emu::block_gather(&in, sizeof(T), all, emu::kBlockScan);
		T acc = T(0);
		for (unsigned i = 0; i <= threadIdx.x; i++) acc = acc + all[i];
		out = acc;
		__syncthreads(); // all is reused by the next call
	}
};

} // namespace cub
