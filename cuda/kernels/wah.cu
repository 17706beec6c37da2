// wah.cu — WAH bitmaps on the GPU (Go side cuda/kern/wah.go, CPU reference
// bitmap/wah): the parallel decompression of Algorithm 2 and the COA, ROA,
// hybrid and ideal-hybrid reductions of the GPU range-query paper
// (../shared/papers/wah-bitmap-gpu-range-queries.txt, "GPU range query
// execution strategies"), with 32-bit words: a literal holds 31 rows (bit
// 31 = 0), a fill is bit 31 = 1, bit 30 = fill bit, bits 0..29 = run length
// in 31-row groups (>= 1). A decompressed bitmap ("column") is its group
// bitset: one u32 per group, bit 31 zero.
//
// Decompression of a batch of nb bitmaps, their words concatenated in
// words[0..n) (bitmap b at woff[b]..woff[b+1]) and their columns at
// goff[b]..goff[b+1] of out (ng groups in all), as in Algorithm 2 but over
// the whole batch at once (bitmap boundaries are word boundaries, so one
// scan serves every bitmap):
//
//	qp_wah_sizes  DecompSizes: sz[i] = run length of word i (1 for a
//	              literal); a zero-length fill counts in *err. Grid-stride,
//	              256 threads. Reads and writes n words.
//	(ScanU32)     StartingPoints: st = exclusive scan of sz (n+1 entries).
//	qp_wah_check  one thread per bitmap: st[woff[b]] == goff[b] and
//	              st[woff[b+1]] == goff[b+1] (its words cover exactly its
//	              groups), goff[b+1]-goff[b] == ceil(nbits[b]/31), and the
//	              padding rows of its last group are zero; else *err += 1.
//	qp_wah_ends   EndPoints (zeroed by the host, ng+1 entries): ends[st[i]-1]
//	              = 1 for 1 <= i < n (guarded: garbage never writes outside).
//	              Reads n, writes n-1 scattered words.
//	(ScanU32)     WordIndex: wi = exclusive scan of ends; wi[j] is the word
//	              holding group j.
//	qp_wah_fill   out[j] = the literal, 0 or 0x7fffffff of word wi[j].
//	              Reads ng + ng (cached) words, writes ng.
//
// When *err != 0 after the batch the output is unspecified (the host
// reports wah.ErrCorrupt); no kernel reads or writes out of bounds on any
// input.
//
// Reductions: nq queries, query q reducing (OR or AND: op 0 / 1) the m_q
// columns sel[qoff[q]..qoff[q+1]) of the column matrix mat (column c at
// mat + c*D, D groups each). Its result is res + q*D. Intermediate columns
// of query q are numbered 1, 2, ... and live at extra + (ebase[q] + c-1)*D
// (column 0 is the result itself); ebase gives ceil(m_q/2) - 1 columns per
// query, enough for every pattern.
//
//	qp_wah_coa    COA (Algorithm 3), one launch per level L = 0, 1, ...:
//	              m_L = ceil(m_{L-1}/2), s = ceil(m_L/2); column p < s
//	              becomes p op (p+s) when p+s < m_L (level 0 reads the
//	              matrix, writes the intermediate columns: the inputs are
//	              shared between queries and stay intact; level 0 also copies
//	              column p when p+s >= m). Grid (ceil(D/256) capped, s_max,
//	              nq) x 256, one thread per word pair (grid-stride in x).
//	              Global traffic per query ~ (2m-2) D reads, (m-1) D writes.
//	qp_wah_tile   the 2-D tile of the hybrid pattern (Algorithm 5); block
//	              (j, k): threadIdx.x = row within j consecutive rows
//	              (coalesced), threadIdx.y = column pair within the tile's
//	              2k columns (column t*2k + y and + y + k); the pairs are
//	              combined then reduced across y in shared memory (log2 k
//	              steps); grid (ceil(D/j), max tiles, nq). A query's tile t
//	              writes its intermediate column t (column 0 = the result
//	              when it has one tile). Round 1 (rnd 0) reads the matrix,
//	              round 2 (rnd 1) reduces the p_q = ceil(m_q/2k1) partial
//	              columns of the queries with p_q > 1, in one tile (the host
//	              picks k >= p/2, read-all-then-write in one CTA, so in
//	              place is safe). Shapes: ROA (Algorithm 4) is j = 1, k =
//	              pow2 >= ceil(m/2) (one CTA per row, shared memory only);
//	              ideal hybrid (Algorithm 6) is k = pow2 >= ceil(m_max/2),
//	              j = 1024/k (all columns in one tile, no round 2); hybrid
//	              is any smaller k with j = 1024/k. Reads m D words per
//	              query (+ p D in round 2), writes D (+ p D).
//
// Candidate output of the results (nr = nq*D groups):
//
//	qp_wah_popc   cnt[i] = popcount(res[i]). Grid-stride, 256 threads.
//	(ScanU32)     pos = exclusive scan of cnt (nr+1).
//	qp_wah_emit   group i of query q = i/D, g = i%D writes its rows g*31+b
//	              to docs[pos[i]..] (only below cap), and dq[q] = pos[q*D]
//	              (dq[nq] = pos[nr]): query q's docIDs are docs[dq[q]..
//	              dq[q+1]), ascending. Reads nr words, writes the docIDs.
//	qp_wah_bitset repacks each result into a plain bitset of W = ceil(N/32)
//	              u32 words per query (row r = bit r%32 of word r/32), from
//	              two adjacent groups per word (funnel shift).
//
// Only static shared memory (1024 words in qp_wah_tile); the CUB scan of
// query_scan.cu does the prefix sums.

#include "query_params.cuh"

namespace qp_wah {

typedef uint32_t u32;
typedef unsigned long long u64;

constexpr u32 kThreads = 256;
constexpr u32 kFill = 0x80000000u, kFillBit = 0x40000000u, kRun = 0x3fffffffu, kLit = 0x7fffffffu;
constexpr u32 kTileMax = 1024; // threads (and shared words) of a tile CTA

__device__ __forceinline__ u32 apply(u32 op, u32 a, u32 b) { return op ? (a & b) : (a | b); }
__device__ __forceinline__ u32 ident(u32 op) { return op ? kLit : 0u; }

// column c of query q in the intermediate layout (c = 0: the result).
__device__ __forceinline__ u32 *icol(u32 *res, u32 *extra, const u32 *ebase, u32 q, u32 c, u32 D) {
	return c == 0 ? res + static_cast<u64>(q) * D : extra + static_cast<u64>(ebase[q] + c - 1) * D;
}

} // namespace qp_wah

extern "C" __global__ void __launch_bounds__(256)
qp_wah_sizes(const uint32_t *words, uint32_t n, uint32_t *sz, uint32_t *err) {
	using namespace qp_wah;
	for (u32 i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) {
		const u32 w = words[i];
		u32 s = 1;
		if (w & kFill) {
			s = w & kRun;
			if (s == 0) atomicAdd(err, 1u);
		}
		sz[i] = s;
	}
}
QP_EMU_REGISTER(qp_wah_sizes)
static_assert(std::is_same<decltype(&qp_wah_sizes), QP_SIGNATURE_WAHSizesParams>::value,
              "qp_wah_sizes's parameters differ from WAHSizesParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_wah_check(const uint32_t *words, const uint32_t *woff, const uint32_t *goff, const uint32_t *nbits,
             uint32_t nb, const uint32_t *st, uint32_t *err) {
	using namespace qp_wah;
	for (u32 b = blockIdx.x * kThreads + threadIdx.x; b < nb; b += gridDim.x * kThreads) {
		const u32 w0 = woff[b], w1 = woff[b + 1], n = nbits[b];
		const u64 groups = (static_cast<u64>(n) + 30) / 31;
		bool bad = st[w0] != goff[b] || st[w1] != goff[b + 1] || goff[b + 1] - goff[b] != groups;
		const u32 rem = n % 31;
		if (!bad && rem != 0 && w1 > w0) {
			const u32 last = words[w1 - 1];
			bad = (last & kFill) ? (last & kFillBit) != 0 : (last >> rem) != 0;
		}
		if (bad) atomicAdd(err, 1u);
	}
}
QP_EMU_REGISTER(qp_wah_check)
static_assert(std::is_same<decltype(&qp_wah_check), QP_SIGNATURE_WAHCheckParams>::value,
              "qp_wah_check's parameters differ from WAHCheckParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_wah_ends(const uint32_t *st, uint32_t n, uint32_t *ends, uint32_t ng) {
	using namespace qp_wah;
	for (u32 i = 1 + blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) {
		const u32 e = st[i];
		if (e >= 1 && e <= ng) ends[e - 1] = 1;
	}
}
QP_EMU_REGISTER(qp_wah_ends)
static_assert(std::is_same<decltype(&qp_wah_ends), QP_SIGNATURE_WAHEndsParams>::value,
              "qp_wah_ends's parameters differ from WAHEndsParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_wah_fill(const uint32_t *words, uint32_t n, const uint32_t *wi, uint32_t ng, uint32_t *out) {
	using namespace qp_wah;
	for (u32 j = blockIdx.x * kThreads + threadIdx.x; j < ng; j += gridDim.x * kThreads) {
		const u32 i = wi[j];
		u32 v = 0;
		if (i < n) {
			const u32 w = words[i];
			v = (w & kFill) ? ((w & kFillBit) ? kLit : 0u) : w;
		}
		out[j] = v;
	}
}
QP_EMU_REGISTER(qp_wah_fill)
static_assert(std::is_same<decltype(&qp_wah_fill), QP_SIGNATURE_WAHFillParams>::value,
              "qp_wah_fill's parameters differ from WAHFillParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_wah_coa(uint32_t op, uint32_t level, const uint32_t *mat, const uint32_t *sel, const uint32_t *qoff,
           uint32_t *res, uint32_t *extra, const uint32_t *ebase, uint32_t D) {
	using namespace qp_wah;
	const u32 q = blockIdx.z, p = blockIdx.y;
	u32 m = qoff[q + 1] - qoff[q];
	for (u32 l = 0; l < level; l++) m = (m + 1) / 2;
	if (m == 0 || (level > 0 && m == 1)) return;
	const u32 s = (m + 1) / 2;
	if (p >= s) return;
	const bool pair = p + s < m;
	u32 *dst = icol(res, extra, ebase, q, p, D);
	const u32 *a, *b = nullptr;
	if (level == 0) {
		a = mat + static_cast<u64>(sel[qoff[q] + p]) * D;
		if (pair) b = mat + static_cast<u64>(sel[qoff[q] + p + s]) * D;
	} else {
		a = dst;
		if (pair) b = icol(res, extra, ebase, q, p + s, D);
	}
	if (level > 0 && !pair) return; // column p carries over unchanged
	for (u32 r = blockIdx.x * kThreads + threadIdx.x; r < D; r += gridDim.x * kThreads)
		dst[r] = pair ? apply(op, a[r], b[r]) : a[r];
}
QP_EMU_REGISTER(qp_wah_coa)
static_assert(std::is_same<decltype(&qp_wah_coa), QP_SIGNATURE_WAHCoaParams>::value,
              "qp_wah_coa's parameters differ from WAHCoaParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(1024)
qp_wah_tile(uint32_t op, uint32_t rnd, uint32_t k1, const uint32_t *mat, const uint32_t *sel,
            const uint32_t *qoff, uint32_t *res, uint32_t *extra, const uint32_t *ebase, uint32_t D) {
	using namespace qp_wah;
	__shared__ u32 sh[kTileMax];
	const u32 q = blockIdx.z, t = blockIdx.y;
	const u32 j = blockDim.x, k = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
	u32 m = qoff[q + 1] - qoff[q];
	if (rnd) {
		m = (m + 2 * k1 - 1) / (2 * k1);
		if (m <= 1) return; // one tile in round 1: already the result
	}
	if (m == 0 || t >= (m + 2 * k - 1) / (2 * k)) return; // whole CTA
	const u32 row = blockIdx.x * j + tx;
	const u32 c0 = t * 2 * k + ty, c1 = c0 + k;
	u32 v = ident(op);
	if (row < D) {
		if (c0 < m) {
			const u32 *a = rnd ? icol(res, extra, ebase, q, c0, D) : mat + static_cast<u64>(sel[qoff[q] + c0]) * D;
			v = a[row];
		}
		if (c1 < m) {
			const u32 *b = rnd ? icol(res, extra, ebase, q, c1, D) : mat + static_cast<u64>(sel[qoff[q] + c1]) * D;
			v = apply(op, v, b[row]);
		}
	}
	sh[ty * j + tx] = v;
	__syncthreads();
	for (u32 s = k / 2; s > 0; s /= 2) {
		if (ty < s) sh[ty * j + tx] = apply(op, sh[ty * j + tx], sh[(ty + s) * j + tx]);
		__syncthreads();
	}
	if (ty == 0 && row < D) icol(res, extra, ebase, q, t, D)[row] = sh[tx];
}
QP_EMU_REGISTER(qp_wah_tile)
static_assert(std::is_same<decltype(&qp_wah_tile), QP_SIGNATURE_WAHTileParams>::value,
              "qp_wah_tile's parameters differ from WAHTileParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256) qp_wah_popc(const uint32_t *res, uint32_t n, uint32_t *cnt) {
	using namespace qp_wah;
	for (u32 i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) cnt[i] = __popc(res[i]);
}
QP_EMU_REGISTER(qp_wah_popc)
static_assert(std::is_same<decltype(&qp_wah_popc), QP_SIGNATURE_WAHPopcParams>::value,
              "qp_wah_popc's parameters differ from WAHPopcParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_wah_emit(const uint32_t *res, uint32_t n, uint32_t D, const uint32_t *pos, uint32_t *docs, uint32_t cap,
            uint32_t *dq) {
	using namespace qp_wah;
	for (u32 i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) {
		const u32 g = i % D;
		if (g == 0) dq[i / D] = pos[i];
		if (i == n - 1) dq[n / D] = pos[n];
		u32 o = pos[i];
		const u32 base = g * 31;
		for (u32 w = res[i]; w != 0; w &= w - 1, o++)
			if (o < cap) docs[o] = base + static_cast<u32>(__ffs(static_cast<int>(w)) - 1);
	}
}
QP_EMU_REGISTER(qp_wah_emit)
static_assert(std::is_same<decltype(&qp_wah_emit), QP_SIGNATURE_WAHEmitParams>::value,
              "qp_wah_emit's parameters differ from WAHEmitParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_wah_bitset(const uint32_t *res, uint32_t nq, uint32_t D, uint32_t nbits, uint32_t *out) {
	using namespace qp_wah;
	const u32 W = (nbits + 31) / 32;
	const u64 total = static_cast<u64>(nq) * W;
	for (u64 x = static_cast<u64>(blockIdx.x) * kThreads + threadIdx.x; x < total;
	     x += static_cast<u64>(gridDim.x) * kThreads) {
		const u32 q = static_cast<u32>(x / W), w = static_cast<u32>(x % W);
		const u32 *r = res + static_cast<u64>(q) * D;
		const u64 p = static_cast<u64>(w) * 32;
		const u32 g = static_cast<u32>(p / 31), o = static_cast<u32>(p % 31);
		u32 v = r[g] >> o;
		if (g + 1 < D) v |= r[g + 1] << (31 - o);
		if (w == W - 1 && nbits % 32 != 0) v &= (1u << (nbits % 32)) - 1;
		out[x] = v;
	}
}
QP_EMU_REGISTER(qp_wah_bitset)
static_assert(std::is_same<decltype(&qp_wah_bitset), QP_SIGNATURE_WAHBitsetParams>::value,
              "qp_wah_bitset's parameters differ from WAHBitsetParams (cuda/kern/layout.go)");
