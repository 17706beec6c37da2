// intersect.cu — batched list intersection on the GPU (PARA, Ao et al.
// PVLDB'11 §4.1; Go side cuda/kern/intersect.go, CPU references in intersect/).
// A batch holds many queries, each a set of sorted uint32 docID lists
// ordered shortest first; the lists, their LR models, HS tables and
// LRC-family encodings are uploaded once. The candidates are the elements of
// every query's shortest list, one thread each; step j (j = 1, 2, ...) looks
// every candidate up in its query's j-th list and flags it, and a scan
// (query_scan.cu, kern.QueryKernels.ScanU32) plus qp_isect_compact keep the
// survivors, grouped by query and ascending, for the next step.
//
// Kernels (all 256-thread CTAs, grid-stride over the n candidates, no
// shared memory):
//
//	qp_isect_init     cand/cq of the shortest lists: reads n docIDs, n+log(nq)
//	                  offsets; writes 8n bytes.
//	qp_isect_split    one level of Parallel Merge Find (Ding et al. WWW'09 §7):
//	                  the candidates at local index r = 0 mod stride (and not
//	                  0 mod the parent stride) find their lower bound in the
//	                  j-th list within the range between their parent
//	                  splitters' bounds, written to bnd[i]. Reads ~log2(range)
//	                  list words per splitter.
//	qp_isect_search   per candidate: the membership test in the j-th list by
//	                  algo: binary search on the whole list (§4.2), PMF (the
//	                  range between the last level's splitter bounds), LR
//	                  (the §4.3 safe range of the integer model, exactly
//	                  intersect.LR), HS (the §4.4 bucket, exactly
//	                  intersect.HS), or directly in the list's LRC / LRCSeg /
//	                  SegLRC / HS-LRC encoding (§5.3 Algorithm 1: safe range,
//	                  header list H, then single random-access slots; never
//	                  decoding the list). Writes flag[i]; reads about
//	                  log2(range) list words (LRC: two slot words plus the
//	                  piece header per probe).
//	qp_isect_compact  keeps candidate i at pos[i] when flagged (pos = exclusive
//	                  scan of flag): reads 12n, writes 8 per survivor.
//	qp_isect_qstart   the queries' new first candidate, pos[qstart[q]].
//
// The lists are trusted input (encoded by compress in the same process);
// a slot above its span still raises errs[0] instead of a silent result.

#include <cstdint>

#include "query_params.cuh" // lower_bound (query.cuh), the kernels' signatures

namespace qp_isect {

typedef uint32_t u32;
typedef unsigned long long ull;
typedef long long i64;

// Algorithms (cuda/kern/intersect.go IsectAlgo).
enum : u32 { kBinary = 0, kLR = 1, kHS = 2, kPMF = 3, kLRC = 4, kLRCSeg = 5, kSegLRC = 6, kHSLRC = 7 };

// List is one list's record, 20 words (cuda/kern/intersect.go IsectListWords).
struct List {
	ull off;     // first element in vals
	u32 n;       // length
	u32 pad0;
	ull gamma;   // LR: Pred(x) = (x*gamma >> 32) - beta
	i64 beta;
	u32 L, R;    // LR deviations
	u32 sh, d;   // HS: shift and buckets
	ull hsoff;   // HS: first pointer in hsptr (d+1 of them)
	ull enc;     // LRC family: byte offset of the encoding in enc (8-aligned)
	u32 enclen, pad1, pad2, pad3;
};

struct QMeta { // 2 words: first list reference, number of lists
	u32 first, nl;
};

__device__ __forceinline__ u32 lower_bound(const u32 *v, u32 lo, u32 hi, u32 x) {
	return qp_q::lower_bound(lo, hi, x, [&](u32 i) { return v[i]; });
}

__device__ __forceinline__ bool found(const u32 *v, u32 lo, u32 hi, u32 x) {
	const u32 p = lower_bound(v, lo, hi, x);
	return p < hi && v[p] == x;
}

// Encoded-list view: 32-bit words of one encoding.
struct Enc {
	const u32 *w;
	__device__ __forceinline__ u32 u32at(u32 byte) const { return w[byte >> 2]; }
	__device__ __forceinline__ ull u64at(u32 byte) const {
		return static_cast<ull>(w[byte >> 2]) | static_cast<ull>(w[(byte >> 2) + 1]) << 32;
	}
};

// Piece is one exact integer line of the LRC family (compress/lrcfit.go):
// v[i] = base + ((slope*(i-o)) >> 32) + slot(i - a), a <= i < b.
struct Piece {
	const u32 *slots; // 4-aligned start of the piece's bit string
	ull slope;
	i64 base;
	u32 span, w;
	i64 o, a, b;

	__device__ __forceinline__ i64 P(i64 j) const { return static_cast<i64>((slope * static_cast<ull>(j)) >> 32); }

	// value is v[i]; *bad is set when the slot exceeds span.
	__device__ __forceinline__ i64 value(i64 i, bool *bad) const {
		u32 s = 0;
		if (w) {
			const ull p = static_cast<ull>(i - a) * w;
			const ull two = static_cast<ull>(slots[p >> 5]) | static_cast<ull>(slots[(p >> 5) + 1]) << 32;
			s = static_cast<u32>(two >> (p & 31)) & (w == 32 ? 0xffffffffu : (1u << w) - 1);
		}
		if (s > span) *bad = true;
		return base + P(i - o) + s;
	}

	// inv is lrcPiece.inv: the smallest i in [a, b) with P(i-o) >= t, or b.
	__device__ __forceinline__ i64 inv(i64 t) const {
		if (t <= P(a - o)) return a;
		if (b <= a || t > P(b - 1 - o)) return b;
		const ull num = static_cast<ull>(t) << 32;
		ull q = num / slope;
		if (q * slope != num) q++;
		i64 i = o + static_cast<i64>(q);
		return i < a ? a : (i > b ? b : i);
	}

	// search is lrcPiece.search: the first i in [A, B) with v[i] >= x, or B,
	// after contracting [A, B] with the piece's safe range.
	__device__ __forceinline__ i64 search(i64 A, i64 B, u32 x, bool *bad) const {
		const i64 t = static_cast<i64>(x) - base;
		const i64 lo = inv(t - static_cast<i64>(span)), hi = inv(t);
		A = A > lo ? A : lo;
		const i64 hB = hi > A ? hi : A;
		B = B < hB ? B : hB;
		while (A < B) {
			const i64 m = A + ((B - A) >> 1);
			if (value(m, bad) >= x) {
				B = m;
			} else {
				A = m + 1;
			}
		}
		return A;
	}
};

__device__ __forceinline__ Piece whole_piece(const Enc &e, u32 n) {
	Piece p;
	p.span = e.u32at(4);
	p.slope = e.u64at(8);
	p.base = static_cast<i64>(e.u64at(16));
	p.w = 32 - __clz(static_cast<int>(p.span));
	p.slots = e.w + 6;
	p.o = 0;
	p.a = 0;
	p.b = n;
	return p;
}

// seg_piece is lrcSegView.piece: segment g of an LRCSeg (local = false)
// or SegLRC (local = true) encoding of n > 256 values.
__device__ __forceinline__ Piece seg_piece(const Enc &e, u32 n, u32 G, bool local, u32 g) {
	const u32 hsz = local ? 24 : 16, hd = 24 + g * hsz;
	const u32 area = 24 + G * hsz;
	Piece p;
	const u32 first = e.u32at(hd), d = e.u32at(hd + 4);
	p.span = e.u32at(hd + 8);
	if (local) {
		p.slope = e.u64at(hd + 16);
		p.base = static_cast<i64>(first) - static_cast<i64>(d);
		p.o = static_cast<i64>(g) << 8;
	} else {
		p.slope = e.u64at(8);
		p.base = static_cast<i64>(e.u64at(16)) + static_cast<i64>(d);
		p.o = 0;
	}
	p.w = 32 - __clz(static_cast<int>(p.span));
	p.slots = e.w + (area >> 2) + 8 * e.u32at(hd + 12);
	p.a = static_cast<i64>(g) << 8;
	p.b = p.a + 256 < n ? p.a + 256 : n;
	return p;
}

// lrc_contains: is x in the encoded list (codec algo, n values)?
__device__ bool lrc_contains(u32 algo, const Enc &e, u32 n, u32 x, bool *bad) {
	if (n == 0) return false;
	if (algo == kHSLRC) {
		const u32 sh = e.u32at(4), d = e.u32at(8);
		const ull h = static_cast<ull>(x) >> sh;
		if (h >= d) return false;
		const u32 a = e.u32at(12 + 4 * static_cast<u32>(h)), b = e.u32at(16 + 4 * static_cast<u32>(h));
		if (a >= b) return false;
		const u32 T = (16 + 4 * d + 7) & ~7u, hd = T + 24 * static_cast<u32>(h), S = T + 24 * d;
		Piece p;
		p.slope = e.u64at(hd);
		p.base = static_cast<i64>(e.u64at(hd + 8));
		p.span = e.u32at(hd + 16);
		p.w = 32 - __clz(static_cast<int>(p.span));
		p.slots = e.w + (S >> 2) + e.u32at(hd + 20);
		p.o = a;
		p.a = a;
		p.b = b;
		const i64 i = p.search(a, b, x, bad);
		return i < b && p.value(i, bad) == x;
	}
	if (algo == kLRC || n <= 256) { // LRCSeg and SegLRC write the LRC form for n <= 256
		const Piece p = whole_piece(e, n);
		const i64 i = p.search(0, n, x, bad);
		return i < n && p.value(i, bad) == x;
	}
	// Segmented, §5.3 Algorithm 1 (lrcSegView.search from 0): the global
	// safe range (line 4), binary search of the header list H over the
	// segments of that range (line 5), then the segment (line 6).
	const bool local = algo == kSegLRC;
	const u32 G = (n + 255) >> 8, hsz = local ? 24 : 16;
	Piece gp = whole_piece(e, n);
	const i64 t = static_cast<i64>(x) - gp.base;
	const i64 lo = gp.inv(t - static_cast<i64>(gp.span)), hi = gp.inv(t);
	i64 A = lo > 0 ? lo : 0;
	i64 B = hi > A ? hi : A;
	B = B < n ? B : n;
	i64 i = A; // the first element >= x when the range is empty (A == B)
	if (A < B) {
		const i64 gA = A >> 8;
		i64 g = gA + 1, gEnd = ((B - 1) >> 8) + 1;
		while (g < gEnd) {
			const i64 mid = g + ((gEnd - g) >> 1);
			if (e.u32at(24 + static_cast<u32>(mid) * hsz) >= x) {
				gEnd = mid;
			} else {
				g = mid + 1;
			}
		}
		if (g <= ((B - 1) >> 8)) B = g << 8; // H[g] = v[256g] >= x
		const i64 seg = g - 1;
		if (seg > gA) A = A > (seg << 8) + 1 ? A : (seg << 8) + 1; // v[256 seg] < x
		i = seg_piece(e, n, G, local, static_cast<u32>(seg)).search(A, B, x, bad);
	}
	if (i >= n) return false;
	return seg_piece(e, n, G, local, static_cast<u32>(i >> 8)).value(i, bad) == x;
}

__device__ __forceinline__ u32 upper_query(const u32 *qoff, u32 nq, u32 i) {
	// The query q with qoff[q] <= i < qoff[q+1].
	u32 lo = 0, hi = nq;
	while (lo + 1 < hi) {
		const u32 m = (lo + hi) >> 1;
		if (qoff[m] <= i) {
			lo = m;
		} else {
			hi = m;
		}
	}
	return lo;
}

#define QP_ISECT_LOOP(n) \
	for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < (n); \
	     i += static_cast<unsigned long long>(gridDim.x) * blockDim.x)

} // namespace qp_isect

extern "C" __global__ void __launch_bounds__(256)
qp_isect_init(const uint32_t *qoff, uint32_t nq, const qp_isect::QMeta *qmeta, const uint32_t *lref,
              const qp_isect::List *lists, const uint32_t *vals, uint32_t n, uint32_t *cand, uint32_t *cq) {
	using namespace qp_isect;
	QP_ISECT_LOOP(n) {
		const u32 q = upper_query(qoff, nq, static_cast<u32>(i));
		const List &l = lists[lref[qmeta[q].first]];
		cand[i] = vals[l.off + (static_cast<u32>(i) - qoff[q])];
		cq[i] = q;
	}
}
QP_EMU_REGISTER(qp_isect_init)
static_assert(std::is_same<decltype(&qp_isect_init), QP_SIGNATURE_IsectInitParams>::value,
              "qp_isect_init's parameters differ from IsectInitParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_isect_split(uint32_t j, uint32_t stride, uint32_t parent, uint32_t n, const uint32_t *cand, const uint32_t *cq,
               const uint32_t *qstart, const qp_isect::QMeta *qmeta, const uint32_t *lref,
               const qp_isect::List *lists, const uint32_t *vals, uint32_t *bnd) {
	using namespace qp_isect;
	QP_ISECT_LOOP(n) {
		const u32 q = cq[i];
		const QMeta m = qmeta[q];
		if (j >= m.nl) continue;
		const u32 s0 = qstart[q], r = static_cast<u32>(i) - s0, cnt = qstart[q + 1] - s0;
		if (r % stride != 0 || (parent != 0 && r % parent == 0)) continue;
		const List &l = lists[lref[m.first + j]];
		u32 lo = 0, hi = l.n;
		if (parent != 0) {
			const u32 pl = r - r % parent, pr = pl + parent;
			lo = bnd[s0 + pl];
			hi = pr < cnt ? bnd[s0 + pr] : l.n;
		}
		bnd[i] = lower_bound(vals + l.off, lo, hi, cand[i]);
	}
}
QP_EMU_REGISTER(qp_isect_split)
static_assert(std::is_same<decltype(&qp_isect_split), QP_SIGNATURE_IsectSplitParams>::value,
              "qp_isect_split's parameters differ from IsectSplitParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_isect_search(uint32_t algo, uint32_t j, uint32_t stride, uint32_t n, const uint32_t *cand, const uint32_t *cq,
                const uint32_t *qstart, const qp_isect::QMeta *qmeta, const uint32_t *lref,
                const qp_isect::List *lists, const uint32_t *vals, const uint32_t *hsptr, const uint32_t *enc,
                const uint32_t *bnd, uint32_t *flag, uint32_t *errs) {
	using namespace qp_isect;
	QP_ISECT_LOOP(n) {
		const u32 q = cq[i];
		const QMeta m = qmeta[q];
		if (j >= m.nl) {
			flag[i] = 1; // the query has no j-th list: the candidate passes
			continue;
		}
		const List &l = lists[lref[m.first + j]];
		const u32 x = cand[i];
		const u32 *v = vals + l.off;
		bool hit = false;
		switch (algo) {
		case kBinary:
			hit = found(v, 0, l.n, x);
			break;
		case kLR: {
			// intersect.LR.Range: [Pred-L, Pred+R] clamped to [0, n).
			const i64 p = static_cast<i64>((static_cast<ull>(x) * l.gamma) >> 32) - l.beta;
			i64 lo = p - static_cast<i64>(l.L), hi = p + static_cast<i64>(l.R) + 1;
			lo = lo < 0 ? 0 : lo;
			hi = hi > static_cast<i64>(l.n) ? static_cast<i64>(l.n) : hi;
			hit = lo < hi && found(v, static_cast<u32>(lo), static_cast<u32>(hi), x);
			break;
		}
		case kHS: {
			// intersect.HS.Bucket.
			const ull h = static_cast<ull>(x) >> l.sh;
			if (l.n > 0 && h < l.d) {
				const u32 *pt = hsptr + l.hsoff;
				hit = found(v, pt[h], pt[h + 1], x);
			}
			break;
		}
		case kPMF: {
			const u32 s0 = qstart[q], r = static_cast<u32>(i) - s0, cnt = qstart[q + 1] - s0;
			const u32 pl = r - r % stride, pr = pl + stride;
			const u32 lo = bnd[s0 + pl], hi = pr < cnt ? bnd[s0 + pr] : l.n;
			hit = found(v, lo, hi, x);
			break;
		}
		default: {
			bool bad = false;
			Enc e{enc + (l.enc >> 2)};
			hit = lrc_contains(algo, e, l.n, x, &bad);
			if (bad) atomicAdd(errs, 1u);
			break;
		}
		}
		flag[i] = hit ? 1 : 0;
	}
}
QP_EMU_REGISTER(qp_isect_search)
static_assert(std::is_same<decltype(&qp_isect_search), QP_SIGNATURE_IsectSearchParams>::value,
              "qp_isect_search's parameters differ from IsectSearchParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_isect_compact(uint32_t n, const uint32_t *pos, const uint32_t *cand, const uint32_t *cq, uint32_t *ncand,
                 uint32_t *ncq) {
	QP_ISECT_LOOP(n) {
		const uint32_t p = pos[i];
		if (pos[i + 1] > p) {
			ncand[p] = cand[i];
			ncq[p] = cq[i];
		}
	}
}
QP_EMU_REGISTER(qp_isect_compact)
static_assert(std::is_same<decltype(&qp_isect_compact), QP_SIGNATURE_IsectCompactParams>::value,
              "qp_isect_compact's parameters differ from IsectCompactParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_isect_qstart(uint32_t nq, const uint32_t *qstart, const uint32_t *pos, uint32_t *nqstart) {
	QP_ISECT_LOOP(nq + 1) { nqstart[i] = pos[qstart[i]]; }
}
QP_EMU_REGISTER(qp_isect_qstart)
static_assert(std::is_same<decltype(&qp_isect_qstart), QP_SIGNATURE_IsectQStartParams>::value,
              "qp_isect_qstart's parameters differ from IsectQStartParams (cuda/kern/layout.go)");
