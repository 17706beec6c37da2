// query_ortile.cu — tiled disjunctive (OR) queries with threshold filtering:
// Ding et al. WWW'09 §8's TAAT, with the accumulators of one document range
// (a tile of T <= kTileMax documents) in shared memory instead of a dense
// row of N floats per query, block-max upper bounds per tile to skip tiles,
// and a running lower bound theta on each query's k-th best rank key so
// that tiles emit only candidates that can still make the top k. Go side:
// cuda/kern/query_or.go; orchestration: engine/gpu/ortile.go. On bp128
// indexes the queries of few postings (at most 2048 in all their lists)
// run whole, one CTA each, without tiles (query_orwhole.cu).
//
// Two ways to get the postings (a template parameter of the accumulation):
//
//  - fused (qp_ortile_accumulate_bp128, indexes whose docID and frequency
//    blocks are both bp128, the default): the tile kernel decodes, from
//    the resident compressed postings, only the blocks that overlap its
//    tile, and only for tiles above the threshold. No decoded list is
//    written; skipped tiles cost no decoding.
//  - decoded (qp_ortile_accumulate, every other codec): all lists of the
//    set are decoded whole by the batch decoders first (segment (q, j) =
//    query q's j-th canonical term at docs/freqs[Seg.v0 ..]), checked by
//    qp_ortile_check (every decoded docID < N and increasing within its
//    segment; grid-stride, one thread per posting, 8 bytes read each), and
//    the tiles find their postings by binary search.
//
// Launch sequence per OR launch set (OQuery.seg0 = query q's first Seg):
//
//  1. (decoded only) FullDesc + batch decoders + qp_ortile_check.
//  2. qp_ortile_bounds: one CTA of 256 threads per query (grid-stride).
//     For each term in canonical order, start[t] = the first block whose
//     skip-table lastDoc is >= t*T (one pass over the skip table), then per
//     tile the max of the blockMax of its blocks [start[t], start[t+1]]
//     times the query weight, summed over terms with fadd in canonical
//     order: ub[q][t]. Rounding is monotone, so ub[q][t] >= the float32
//     score of every document of tile t, exactly (no slack; blockMax is
//     score.Term's maximum, index/format.go). use_bm == 0 (maxima stale:
//     the index's BM25 parameters changed) gives ub = FLT_MAX where a list
//     has a block. Then order[q][r], the tiles by descending ub (ties by
//     ascending tile): a bitonic sort of the (ub, tile) pairs in shared
//     memory (log2(P) (log2(P)+1) / 2 stages of P/2 compare-exchanges,
//     P = pow2 >= ntiles); the bounds are written in that order too
//     (ub[q][r] is the bound of tile order[q][r]), so that a tile's pick
//     loads both at once. For the fused tiles, also the block ranges rng
//     (per term and tile, with kRngEnd) and a copy of each term's
//     TermMeta (qtm). Shared: 4(kMaxTiles+1) + 4 kMaxTiles bytes.
//     Memory per query: 16 bytes per block of its lists plus 4 bytes per
//     block in the tiles' ranges, writes 8 bytes per tile (fused: plus 4
//     per term and tile, 32 per term).
//  2b. (fused, when the launch has lists with fewer blocks than tiles)
//     qp_ortile_predecode: those lists' blocks decoded once, one warp per
//     block, into (document, score bits) pairs, and their rng entries
//     replaced by posting numbers (Bp128Src, "Pre-decoded lists").
//     Memory: the encoded blocks and norms once, 8 bytes written per
//     posting plus 4 per tile and list.
//  3. qp_ortile_accumulate(_bp128), one pass over the first S ranks of
//     every query (the seeds: their tiles set a first threshold), then one
//     over the rest: one CTA of 256 threads per item (grid-stride), an
//     item being a run of consecutive ranks of one query (queries
//     interleaved); the CTA stops at the first tile whose ub is below
//     score(theta[q]) (every later rank is too). Per tile: zero T shared
//     float accumulators (or, the default, clear at the tile's end only
//     those its adds touched: the touch marks, acc_add); add the
//     postings term by term in canonical
//     order (decoded: one thread per posting, a __syncthreads between
//     terms; fused: blocks decoded 8 at a time across terms, their scores
//     added term by term, a __syncthreads where the term changes, see
//     Bp128Src), w * term(tf, norm) with fadd, so that each document's
//     sum is the CPU's, bit for bit, with no atomics on floats.
//     Selection: the c touched documents whose rank key (query.cuh
//     rank_key) is <= theta[q]; when c > k, the tile's own k-th best key
//     (kth_key: an MSD radix select from the highest bit in which their
//     scores differ, then the few sharing the selected prefix ranked by
//     their full keys, ties by docID) replaces theta (u64
//     atomicMin: the tile has k documents with keys <= it, so the global
//     k-th best key is too) and exactly k documents are emitted. A query
//     thus emits at most min(k, T) candidates per tile: the host sizes
//     the candidate region so, or smaller (cnt[q] counts every emitted
//     one, also past cap: an overflowing query reruns with the full
//     region). Memory per tile: fused, the encoded bytes of the blocks
//     overlapping it (about 1.7 bytes per posting for bp128 on gen) plus
//     2 words per term of the block-range table rng and the skip entries
//     of those blocks; decoded, 8 bytes per posting in the tile;
//     both 4 bytes of norm per posting (the tile's 4T bytes of norms, from
//     L2) and 8 bytes per emitted candidate. Static shared memory: 4
//     kTileMax + 1 KiB + small, plus (fused) 6 KiB of block records.
//  4. qp_ortile_clamp + the u32 scan of query_scan.cu + qp_ortile_compact:
//     the candidates, min(cnt, cap) per query, packed by ascending query
//     for qp_query_topk (sparse) or qp_ortile_maxtree.
//  5. qp_ortile_maxtree: Ding §8's multi-level max tree for small k, see
//     below.
//
// Exactness: every emitted score is a complete float32 sum (all terms of
// the tile are added before selection; a block the fused tiles skip holds
// only documents scoring below the threshold the tile started with, whose
// partial sums the selection never takes; with the split of Bp128Src, the
// documents whose partial sums can still reach the threshold are
// completed by rank, and the others stay below it). A document D of the final top
// k is in its tile's top k and has key <= the final theta <= theta at any
// time, so it is counted and emitted when its tile runs; its tile is not
// skipped, since ub >= score(D) >= score(theta) and every tile ranked
// before it has a bound at least as large (a skipped tile has ub <
// score(theta) <= score(D)). The top-k over the candidates is exact in
// topk's order.

#include "query_params.cuh"

namespace qp_ot {

using qp_q::u32;
using qp_q::u64;

constexpr u32 kThreads = qp_q::kThreads;
constexpr u32 kTileMax = 8192;  // documents per tile (shared accumulators)
constexpr u32 kMaxTiles = 4096; // tiles per query (qp_ortile_bounds' shared arrays)
constexpr u32 kChunk = 32;      // terms whose ranges are searched at once
constexpr u32 kNone = 0xffffffffu;
// rng entries (qp_ortile_bounds): the block number, and kRngEnd when the
// block before it ends at the last document before its tile's start.
constexpr u32 kRngEnd = 0x80000000u, kRngBlock = kRngEnd - 1;
constexpr float kFltMax = 3.402823466e+38f;
// err[] counters besides qp_q::kErrDocs: corrupt frequency blocks (fused
// path), and the work done (tiles accumulated, blocks decoded by tiles).
constexpr u32 kErrFreqs = 1, kCntTiles = 2, kCntBlocks = 3;
// err[kCntSkipped] counts the blocks the fused tiles skipped by their
// block maxima (kern.OrCntSkipped).
constexpr u32 kCntSkipped = 4;
// err[kCntSelect]: tiles whose candidates outnumbered k (kth_key ran);
// err[kCntEmit]: tiles that emitted candidates (kern.OrCntSelect, OrCntEmit).
constexpr u32 kCntSelect = 5, kCntEmit = 6;
// err[kCntLookups]: documents whose bitmap terms the fused tiles added by
// rank (kern.OrCntLookups; see Bp128Src's split).
constexpr u32 kCntLookups = 7;
// err[kCntPre]: blocks decoded once per launch by qp_ortile_predecode
// (kern.OrCntPre; see Bp128Src's pre-decoded lists).
constexpr u32 kCntPre = 8;
// A pre-decoded list's postings are added by the tiles in items of
// kDecItem (one warp each, 4 per lane, like a block).
constexpr u32 kDecItem = 128;
constexpr u32 kGather = 128; // candidates ranked directly by the selection
// The verdicts of pair_header and pair_sum.
constexpr u32 kBadDocs = 1, kBadFreqs = 2;

using qp_q::OQuery; // query.cuh

#ifdef QP_EMU
} // namespace qp_ot
#include <cstdio>
#include <cstdlib>
namespace qp_ot {
// Emulator-only work counters of the fused OR tiles (docs/GPU-QUERY.md, "OR
// tiles on real text: where the work goes"): printed to stderr at exit when
// QP_EMU_ORSTATS is set. The device build compiles them out.
enum {
	kStTiles, kStTilesNoTh, kStBlocks, kStBlocksNoTh, kStBlocksShared, kStPostIn, kStPostDec, kStTouched,
	kStCand, kStKthPass, kStKthGather, kStKth, kStEmit, kStSplit, kStBlocksCol, kStTermsIn, kStBlocksShort,
	kStPostShort, kStDecItems, kStDecPost, kStScanned, kStN
};
inline u64 emu_stats[kStN];
inline void emu_stat(u32 i, u64 v) { __atomic_fetch_add(&emu_stats[i], v, __ATOMIC_RELAXED); }
// emu_stats_dump writes the counters to the file $QP_EMU_ORSTATS (the
// last CTA of each accumulation launch calls it: the emulator runs CTAs in
// order; Go's exit runs no C destructors).
inline void emu_stats_dump() {
	const char *path = getenv("QP_EMU_ORSTATS");
	if (path == nullptr || *path == 0) return;
	static const char *names[kStN] = {"tiles", "tiles_no_threshold", "blocks_decoded", "blocks_no_threshold",
	                                  "blocks_spanning_tiles", "postings_in_tile", "postings_decoded",
	                                  "accumulators_touched", "candidates_counted", "kth_passes", "kth_gathers",
	                                  "kth_selections", "emitted", "tiles_split", "blocks_of_bitmap_terms",
	                                  "terms_with_blocks", "blocks_short_lists", "postings_short_lists",
	                                  "predecoded_items", "predecoded_postings_added",
	                                  "accumulators_scanned"};
	FILE *f = fopen(path, "w");
	if (f == nullptr) return;
	for (u32 i = 0; i < kStN; i++) fprintf(f, "%s %llu\n", names[i], (unsigned long long)emu_stats[i]);
	fclose(f);
}
#define QP_OR_STAT(i, v) qp_ot::emu_stat(qp_ot::i, (v))
#else
#define QP_OR_STAT(i, v) ((void)0)
#endif

// put writes candidate slot p of query o (document, score) when the query
// has that many slots; a count past them is an overflow the host reruns.
__device__ __forceinline__ void put(const OQuery &o, u32 p, u32 doc, float score, u32 *__restrict__ cdoc,
                                    float *__restrict__ cscore) {
	if (p < o.cap) {
		cdoc[o.coff + p] = doc;
		cscore[o.coff + p] = score;
	}
}

// theta_score is the score part of a rank key (0 for the "no bound" key ~0).
__device__ __forceinline__ float theta_score(u64 key) {
	if (key == ~0ull) return 0.0f;
	return qp_q::float_of_bits(~static_cast<u32>(key >> 32));
}

// lower_bound_warp: the first i in [0, n) with at(i) >= x (n if none), for
// at ascending, found by the 32 lanes of a warp together (32-ary search:
// ceil(log32 n) + 1 rounds of one load per lane). All lanes return the
// answer.
template <class At>
__device__ __forceinline__ u32 lower_bound_warp(At at, u32 n, u32 x) {
	const u32 lane = threadIdx.x & 31;
	u32 lo = 0, hi = n;
	while (hi - lo > 32) {
		const u32 step = (hi - lo + 31) / 32;
		const u32 p = lo + lane * step;
		const bool less = p < hi && at(p) < x;
		const u32 c = __popc(__ballot_sync(0xffffffffu, less));
		if (c == 0) return lo;
		const u32 nlo = lo + (c - 1) * step + 1;
		const u32 nhi = lo + c * step;
		lo = nlo;
		hi = nhi < hi ? nhi : hi;
	}
	const u32 p = lo + lane;
	const bool less = p < hi && at(p) < x;
	return lo + __popc(__ballot_sync(0xffffffffu, less));
}

// ---- accumulators and their touch marks ----
//
// A tile's accumulators acc[0, T) live in shared memory. With the sparse
// passes (the default; issue 20 §4: at 25M documents a tile holds a few
// hundred to a few thousand postings of the query in 8,192 accumulators),
// the adds mark every accumulator they touch in a bitmap of one word per
// thread: position x is bit x / kThreads of word x % kThreads, so word w
// holds the positions w, w + 256, ..., which thread w owns in every
// per-thread pass (the same positions the strided dense passes give it,
// and bank-conflict-free: position x is in bank x % 32). The passes that
// read every accumulator (complete()'s candidates, the count, the
// emission) then visit only the marked ones, and the tile clears only
// those at its end instead of zeroing all T at its start. Invariant: an
// unmarked accumulator is 0 (a document leaves 0 only through an add,
// and an add to 0 marks it first), and a 0 accumulator never beats theta
// (query.cuh beats), so the passes find the same documents either way.
static_assert(kTileMax == 32 * kThreads, "the touch marks are one 32-bit word per thread");

// acc_add adds v to acc[x] (fadd: the CPU's float32 sum in the caller's
// term order), marking x in touch first when it is 0 (touch == nullptr:
// the dense passes, no marks). The caller's adds of one term are to
// distinct positions; different terms are separated by a barrier.
__device__ __forceinline__ void acc_add(float *acc, u32 *touch, u32 x, float v) {
	const float a = acc[x];
	if (touch != nullptr && a == 0.0f) atomicOr(&touch[x % kThreads], 1u << (x / kThreads));
	acc[x] = qp_q::fadd(a, v);
}

// each_own calls f(i), in ascending i, for the accumulator positions i <
// span of this thread: with touch, the marked ones of its word;
// without, every i = tid + 256 j (the dense passes).
template <class F>
__device__ __forceinline__ void each_own(const u32 *touch, u32 span, F f) {
	const u32 tid = threadIdx.x;
	if (touch != nullptr) {
		for (u32 b = touch[tid]; b != 0; b &= b - 1) f(tid + kThreads * static_cast<u32>(__ffs(static_cast<int>(b)) - 1));
	} else {
		for (u32 i = tid; i < span; i += kThreads) f(i);
	}
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

// ---- 2. tile upper bounds and the tile order ----

// before is the tile order: descending bound, ties by ascending tile.
__device__ __forceinline__ bool before(float ka, u32 ia, float kb, u32 ib) {
	return ka > kb || (ka == kb && ia < ib);
}

__device__ __forceinline__ void bounds(u32 nq, const qp_q::QMeta *__restrict__ qmeta, const OQuery *__restrict__ oq,
                                       const qp_q::Seg *__restrict__ segs, const qp_q::QTerm *__restrict__ qterms,
                                       const qp_q::TermMeta *__restrict__ terms, const uint8_t *__restrict__ post,
                                       u32 use_bm, u32 tile, u32 ntiles, float *__restrict__ ub,
                                       u32 *__restrict__ order, u32 *__restrict__ rng,
                                       qp_q::TermMeta *__restrict__ qtm) {
	__shared__ u32 start[kMaxTiles + 1];
	__shared__ float sub[kMaxTiles];
	const u32 tid = threadIdx.x;
	u32 np = 1; // the sort's power of two >= ntiles
	while (np < ntiles) np <<= 1;
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
			if (rng != nullptr) {
				u32 *r = rng + static_cast<u64>(o.seg0 + j) * (ntiles + 1);
				for (u32 t = tid; t <= ntiles; t += kThreads) {
					const u32 b = start[t];
					const bool end = b > 0 && b < nb && qp_q::last_doc(sk, b - 1) == t * tile - 1;
					r[t] = b | (end ? kRngEnd : 0u);
				}
				if (tid == 0) qtm[o.seg0 + j] = tm;
			}
			for (u32 t = tid; t < ntiles; t += kThreads) {
				const u32 bl = start[t];
				if (bl >= nb) continue;
				u32 bh = start[t + 1];
				bh = bh < nb - 1 ? bh : nb - 1;
				float mx = 0.0f;
				if (use_bm) {
					for (u32 b = bl; b <= bh; b++) {
						const float v = qp_q::float_of_bits(sk[4 * b + 3]);
						mx = v > mx ? v : mx;
					}
					sub[t] = qp_q::fadd(sub[t], qp_q::fmul(w, mx));
				} else {
					sub[t] = kFltMax;
				}
			}
			__syncthreads();
		}
		// The order: a bitonic sort of (sub[t], t) pairs, the index in
		// start[], padded to np with (-1, kNone), which sort last.
		for (u32 t = tid; t < np; t += kThreads) {
			if (t >= ntiles) sub[t] = -1.0f;
			start[t] = t < ntiles ? t : kNone;
		}
		__syncthreads();
		for (u32 size = 2; size <= np; size <<= 1) {
			for (u32 stride = size >> 1; stride > 0; stride >>= 1) {
				for (u32 i = tid; i < np / 2; i += kThreads) {
					const u32 lo = 2 * i - (i & (stride - 1)), hi = lo + stride;
					const float ka = sub[lo], kb = sub[hi];
					const u32 ia = start[lo], ib = start[hi];
					const bool up = (lo & size) == 0;
					if (up ? before(kb, ib, ka, ia) : before(ka, ia, kb, ib)) {
						sub[lo] = kb;
						sub[hi] = ka;
						start[lo] = ib;
						start[hi] = ia;
					}
				}
				__syncthreads();
			}
		}
		for (u32 r = tid; r < ntiles; r += kThreads) {
			order[static_cast<u64>(q) * ntiles + r] = start[r];
			ub[static_cast<u64>(q) * ntiles + r] = sub[r];
		}
		__syncthreads();
	}
}

// ---- 3. tiled accumulation, selection, emission ----

// DecodedSrc adds a tile's postings from lists the batch decoders decoded
// whole (Seg.v0 into docs/freqs): for each chunk of 32 terms, warp w finds
// the range of term j (j = w mod 8) inside the tile with a 32-ary search;
// then, term by term, one thread per posting.
struct DecodedSrc {
	const u32 *docs, *freqs;
	struct Shared {
		u32 lo[kChunk], hi[kChunk], qt[kChunk];
		u64 v0[kChunk];
	};
	u32 *err; // the counters (accumulate adds its tiles at kCntTiles)
	// add adds the tile's postings. Like every Src's add, it passes a
	// __syncthreads before it touches acc; its adds are complete after the
	// next __syncthreads (accumulate's), when thread 0 calls done.
	__device__ __forceinline__ void add(float *acc, u32 *touch, Shared &s, const qp_q::QMeta &m, const OQuery &o,
	                                   const qp_q::Seg *__restrict__ segs, const qp_q::QTerm *__restrict__ qterms,
	                                   const qp_q::TermMeta *__restrict__ terms, const float *__restrict__ norms,
	                                   float k1p1, u32, u32 t0, u32 t1, float) const {
		const u32 tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, span = t1 - t0;
		for (u32 c0 = 0; c0 < m.m; c0 += kChunk) {
			const u32 nc = m.m - c0 < kChunk ? m.m - c0 : kChunk;
			for (u32 jj = warp; jj < nc; jj += kThreads / 32) {
				const qp_q::Seg g = segs[o.seg0 + c0 + jj];
				const u32 df = terms[g.term].df;
				const u32 *a = docs + g.v0;
				const u32 lo = lower_bound_warp([&](u32 p) { return a[p]; }, df, t0);
				const u32 hi = lower_bound_warp([&](u32 p) { return a[p]; }, df, t1);
				if (lane == 0) {
					s.lo[jj] = lo;
					s.hi[jj] = hi;
					s.qt[jj] = g.qt;
					s.v0[jj] = g.v0;
				}
			}
			__syncthreads();
			for (u32 jj = 0; jj < nc; jj++) {
				const qp_q::QTerm qt = qterms[s.qt[jj]];
				const u32 *dp = docs + s.v0[jj];
				const u32 *fp = freqs + s.v0[jj];
				for (u32 i = s.lo[jj] + tid; i < s.hi[jj]; i += kThreads) {
					const u32 d = dp[i];
					const u32 x = d - t0;
					if (x >= span) continue; // corrupt order; qp_ortile_check reports it
					acc_add(acc, touch, x, qp_q::term(qt.idf, k1p1, fp[i], norms[d], qt.w));
				}
				__syncthreads();
			}
		}
	}

	// done: no blocks decoded here (the lists were decoded before).
	__device__ __forceinline__ u32 done(const Shared &) const { return 0; }

	// complete: nothing to do, add added every term (see Bp128Src).
	__device__ __forceinline__ u32 complete(float *, const u32 *, Shared &, u32, u32, u32, float, const float *,
	                                        float) const {
		return 0;
	}
};

// A fused tile decodes a block of a list whose docID and frequency blocks
// are both bp128 (compress/bp128.go) in two halves, like decode.cuh's
// kernels: pair_header, one lane per block, reads the skip entries b-1 and
// b (16 bytes each: lastDoc, docEnd, freqEnd, blockMax) and checks both
// blocks' headers (widths, lengths, padding: qp_bp128::Codec::header) into
// a PairRec; pair_values, one warp per block, cuts the values (lane l:
// postings 4l..4l+3), sums the docIDs and checks them against the skip
// table's last docID (strictly increasing, no wrap), and the frequencies
// for overflow. Together they check what index.List.DecodeDocs and
// DecodeFreqs check.

// PairRec is one block's record (24 bytes): its blocks' byte offsets in
// the term's docID and frequency data, the previous block's last docID,
// its own, and pk = wd | wf << 6 | (docID header bytes) << 12 | (frequency
// header bytes) << 14 | m << 16 | st << 24 | first << 28, st a verdict
// (kPairOK, kPairSkip: skipped by its maximum, kBadDocs, kBadFreqs), first
// set for the list's first block; jj is its term (index in the chunk).
struct PairRec {
	u32 ds, fs, prev, last, pk, jj;
};
constexpr u32 kPairOK = 0, kPairSkip = 3;
// kPairDec: an item of a pre-decoded list (ds: its first posting in dec,
// m: its postings, at most kDecItem).
constexpr u32 kPairDec = 4;

__device__ __forceinline__ PairRec pair_header(const uint8_t *__restrict__ post, const qp_q::TermMeta &tm,
                                               const u32 *__restrict__ sk, u32 b, u32 m, u32 jj) {
	using namespace qp_dec;
	const uint4 *se = reinterpret_cast<const uint4 *>(sk);
	const uint4 e1 = se[b];
	const uint4 e0 = b ? se[b - 1] : make_uint4(0, 0, 0, 0);
	const u32 ds = e0.y, de = e1.y, fs = e0.z, fe = e1.z;
	PairRec r{ds, fs, e0.x, e1.x, 0, jj};
	u32 st = kBadDocs;
	u32 hd[2] = {0, 0}, hf[2] = {0, 0};
	if (de >= ds && fe >= fs && m > 0 && m <= 128) {
		const u32 sd = qp_bp128::Codec::header(view(post, tm.doc + ds, de - ds), m, hd);
		const u32 sf = qp_bp128::Codec::header(view(post, tm.freq + fs, fe - fs), m, hf);
		st = sd ? kBadDocs : sf ? kBadFreqs : kPairOK;
	}
	r.pk = hd[0] | hf[0] << 6 | (hd[1] >> 3) << 12 | (hf[1] >> 3) << 14 | m << 16 | st << 24 | (b == 0) << 28;
	return r;
}

// pair_values decodes the block of record r (verdict kPairOK) on every
// lane of the warp: docIDs d[j] and frequencies f[j] of postings 4l+j < m.
// It returns 0, kBadDocs or kBadFreqs, the same on every lane.
__device__ __forceinline__ u32 pair_values(const uint8_t *__restrict__ post, const qp_q::TermMeta &tm,
                                           const PairRec &r, u32 lane, u32 (&d)[4], u32 (&f)[4]) {
	using namespace qp_dec;
	const u32 wd = r.pk & 63, wf = r.pk >> 6 & 63, m = r.pk >> 16 & 255;
	const u64 s0 = tm.doc + r.ds, s1 = tm.freq + r.fs;
	View dv, fv; // only b and off: the headers passed, every field lies inside the block
	dv.b = post + (s0 & ~15ull);
	dv.off = static_cast<u32>(s0 & 15);
	fv.b = post + (s1 & ~15ull);
	fv.off = static_cast<u32>(s1 & 15);
	dv.len = fv.len = 0;
	dv.nw = fv.nw = 1;
	u32 x[4], y[4];
	const u32 n = lane_count(m, lane);
	unpack4(dv, (r.pk >> 12 & 3) * 8 + lane * 4 * wd, wd, n, x);
	unpack4(fv, (r.pk >> 14 & 3) * 8 + lane * 4 * wf, wf, n, y);
	// d[i] = base - 1 + sum_{k<=i} (x[k] + 1), checked against the skip
	// table's last docID without wrapping: in 32 bits when the width is at
	// most 24 (128 values of at most 2^24 sum below 2^31; the common case,
	// fewer registers), else in 64 bits.
	// Positions >= m hold x = y = 0 (unpack4), so the sums below run
	// unmasked: each such position adds exactly 1, which the totals take
	// back (pad = 128 - m; the 32 lanes hold 128 positions), and they only
	// move docIDs that item() never uses.
	bool bad = false;
#pragma unroll
	for (int j = 0; j < 4; j++) {
		bad |= y[j] == 0xffffffffu;
		f[j] = y[j] + 1;
	}
	const u32 pad = 128 - m;
	const u64 base = r.pk >> 28 & 1 ? 0 : static_cast<u64>(r.prev) + 1;
	if (wd <= 24) {
		u32 c[4], a = 0, total;
#pragma unroll
		for (int j = 0; j < 4; j++) {
			a += x[j] + 1;
			c[j] = a;
		}
		const u32 ex = excl_sum<u32>(a, total);
		if (base + (total - pad) - 1 != r.last) return kBadDocs;
		const u32 b32 = static_cast<u32>(base) + ex - 1;
#pragma unroll
		for (int j = 0; j < 4; j++) d[j] = b32 + c[j];
	} else {
		u64 c[4], a = 0, total;
#pragma unroll
		for (int j = 0; j < 4; j++) {
			a += static_cast<u64>(x[j]) + 1;
			c[j] = a;
		}
		const u64 ex = excl_sum<u64>(a, total);
		if (base + (total - pad) - 1 != r.last) return kBadDocs;
#pragma unroll
		for (int j = 0; j < 4; j++) d[j] = static_cast<u32>(base + ex + c[j] - 1);
	}
	return __any_sync(0xffffffffu, bad) ? kBadFreqs : 0;
}

// Slack of the block-max bounds: a float32 sum of m <= 32 positive terms in
// any order is within (m+1) * 2^-24 (relative) of the exact sum, so a bound
// computed in another order than the CPU's canonical one, times
// 1 + 2^-17, is still >= every score it bounds.
constexpr float kSlack = 1.0000077f;

__device__ __forceinline__ bool below(float bound, float ths) { return qp_q::fmul(bound, kSlack) < ths; }

// Bp128Src adds a tile's postings straight from the resident bp128 blocks
// (no decoded lists):
//
//  - Ranges: the blocks of term j that can hold documents of tile t are
//    [rng[t], hi): rng (qp_ortile_bounds) holds, per term and tile, the
//    first block whose lastDoc is >= t*T, and hi excludes block rng[t+1]
//    when it starts at (t+1)T or later. Thread jj (of warp 0) finds term
//    jj's range; warp 0 numbers the blocks of all terms consecutively in
//    canonical order (pre[jj]: the first item of term jj), the tile's
//    items.
//  - Headers, per lane (pair_header): for up to 32 waves at a time, lane
//    l of warp w checks the skip entries and both headers of item
//    g0 + 8l + w, or skips it by its maximum (below), into a PairRec in
//    shared memory: one pass of parallel loads instead of one chain per
//    block.
//  - Waves: item w0 + w goes to warp w (w0 = 0, 8, 16, ...): the warp
//    decodes its block from the record (pair_values: values, docID sums,
//    checks) and computes the scores of its postings inside the tile
//    into registers, all 8 warps at once and whatever the terms of their
//    items (Nsight Compute, H100: 535 warp instructions per block before
//    the headers moved to phase 1). Then the wave's add phase adds
//    them to the accumulators term by term in canonical order, with a
//    __syncthreads only where the term changes. Postings of one term are
//    distinct documents, so warps adding the same term never collide,
//    and each document's sum is the CPU's float32 sum in canonical order,
//    bit for bit. The expensive part, the chain of dependent loads of a
//    block (skip entries, headers, values, norms), thus runs for up to 8
//    blocks of any terms at once; the previous version took one term per
//    round, with the CTA waiting at each term's barrier for its slowest
//    block and most warps idle on short lists (80% of a tile's terms have
//    fewer than 8 blocks in it on gen; 30% of the kernel's stall samples
//    were that barrier, Nsight Compute on an H100, docs/GPU-QUERY.md).
//  - Block-max skipping (Ding & Suel's block-max bound, at the level of a
//    block within the tile): with ths > 0, the query's threshold score
//    when the tile starts, a block of term j is not decoded when its
//    blockMax (times w) plus the other terms' maxima mx (QTerm) is below
//    ths: no document in it can make the top k. mx = FLT_MAX (the block
//    maxima are stale: the index's BM25 parameters changed) turns it off.
//    Its other postings still get added, so such a document ends with a
//    partial score, below ths, which the selection never takes; every
//    other document gets its exact score (the CPU's float32 sum in
//    canonical order).
//
//  - The split (MaxScore, Turtle & Flood, over the device bitmaps of
//    query.cuh; issue #6): with ths > 0 and at most kChunk terms, warp 0
//    finds the smallest e >= 1 such that terms e..m-1 all have a column
//    in use and the float32 sum of their maxima, in canonical order, is
//    below ths. Only terms [0, e) are decoded (the others' ranges are
//    emptied). A document in none of them scores at most that sum, below
//    ths: it cannot make the top k. After the adds, complete() gives every
//    document whose partial sum plus those maxima reaches the count
//    pass's threshold the scores of terms e..m-1 by rank (a bit test, the
//    rank, the frequency by slot), in canonical order, so its score is
//    the CPU's float32 sum; the other partial sums stay below the
//    threshold, which the selection never takes. On the 10M-document gen
//    index with the TREC 2006 queries this decodes 51M blocks per 10,000
//    queries instead of 481M and completes 596M documents
//    (docs/GPU-QUERY.md). Without bitmaps in use (col == nullptr) every
//    term is decoded.
//
//  - Pre-decoded lists (issue 20 §4): a list with fewer blocks than the
//    query has tiles is decoded by every tile its blocks overlap (a block
//    spans many tiles; on GCIDE 92% of the tiles' decoded blocks were of
//    such lists, docs/GPU-QUERY.md). qp_ortile_predecode decodes each
//    block of those lists (dvo[x] != kNone) once per launch into dec
//    (document, score bits) at dvo[x] and overwrites their rng entries
//    with posting numbers: rng[t] = the first posting whose document is
//    >= t*T. A tile then adds postings [rng[t], rng[t+1]) of such a term
//    in items of kDecItem postings (kPairDec records, no header phase,
//    never skipped by block maxima), in the same waves and canonical term
//    order as the blocks, so every document's sum is unchanged bit for
//    bit (the scores are the same term() of the same inputs).
//
// Only tiles above the threshold are decoded at all. (A MaxScore variant
// without bitmaps, candidates from the lists whose maxima reach ths and
// exact rescoring of the survivors by decoding the other lists' blocks,
// was tried: on the gen collection, whose top scores tie at the lists'
// maxima, it decoded more blocks than this, docs/GPU-QUERY.md.)
struct Bp128Src {
	const uint8_t *post;
	u32 bs;
	u32 *err;
	const u32 *rng;
	u32 ntiles;
	const qp_q::TermMeta *qtm; // per query term (qp_ortile_bounds' copies)
	// The device bitmaps (query.cuh): col[x] is query term x's column
	// (kNoCol: none in use; col == nullptr: no bitmaps).
	const u32 *col, *mat, *rk;
	u32 D, S;
	// Pre-decoded lists: dvo[x] is query term x's first posting in dec, or
	// kNone (decoded by the tiles; dvo == nullptr: none).
	const u32 *dvo;
	const uint2 *dec;
	struct Shared {
		u32 lo[kChunk], hi[kChunk], pre[kChunk + 1];
		u32 dv[kChunk]; // dvo of term jj (lo, hi: postings, not blocks, unless kNone)
		float idf[kChunk], w[kChunk], mx[kChunk], rest[kChunk];
		u32 col[kChunk];
		qp_q::TermMeta tm[kChunk];
		PairRec rec[kThreads / 32][32]; // warp w, lane l: item g0 + 8l + w
		u32 nblk, nskip;
		u32 e;                   // the split: terms e.. are added by rank (complete)
		u32 wsum[kThreads / 32]; // complete's per-warp candidate counts
	};

	// ranges fills s for terms c0 .. c0+nc-1 (thread jj: term c0+jj). The
	// query's term x = o.seg0 + c0 + jj is Seg x and QTerm x; its loads
	// (the TermMeta copy and the rng entries of qp_ortile_bounds, the
	// QTerm, the column) are independent: one round trip.
	__device__ __forceinline__ void ranges(Shared &s, const OQuery &o, const qp_q::QTerm *__restrict__ qterms,
	                                       u32 c0, u32 nc, u32 t) const {
		const u32 tid = threadIdx.x;
		if (tid < nc) {
			const u32 x = o.seg0 + c0 + tid;
			const qp_q::TermMeta tm = qtm[x];
			const u32 *r = rng + static_cast<u64>(x) * (ntiles + 1);
			const u32 dv = dvo != nullptr ? dvo[x] : kNone;
			u32 lo = r[t] & kRngBlock, rh = r[t + 1];
			// The blocks [lo, hi): hi excludes block rh when the block
			// before it ends just before tile t+1 (kRngEnd). Pre-decoded:
			// the postings [lo, hi) (qp_ortile_predecode), clamped to the
			// list (a corrupt block leaves its entries as they were; the
			// launch fails then, but reads stay inside the list).
			u32 hi = rh & kRngBlock;
			if (dv != kNone) {
				hi = hi < tm.df ? hi : tm.df;
				lo = lo < hi ? lo : hi;
			} else if (lo >= tm.nb)
				hi = lo;
			else if (hi < tm.nb && (rh & kRngEnd) == 0)
				hi++;
			s.dv[tid] = dv;
			const qp_q::QTerm qt = qterms[x];
			s.lo[tid] = lo;
			s.hi[tid] = hi < lo ? lo : hi;
			s.idf[tid] = qt.idf;
			s.w[tid] = qt.w;
			s.mx[tid] = qt.mx;
			s.col[tid] = col != nullptr ? col[x] : qp_q::kNoCol;
			s.tm[tid] = tm;
		}
	}

	// term_of returns (on every lane of the warp) the term of item i <
	// s.pre[kChunk]: the last jj with s.pre[jj] <= i (terms without blocks
	// in the tile have s.pre[jj] == s.pre[jj+1] and are passed over).
	__device__ __forceinline__ static u32 term_of(const Shared &s, u32 nc, u32 i) {
		const u32 lane = threadIdx.x & 31;
		const u32 bal = __ballot_sync(0xffffffffu, lane < nc && s.pre[lane] <= i);
		return 31 - __clz(static_cast<int>(bal));
	}

	// header is phase 1 for item i (term jj), on one lane: the record of
	// its block, or kPairSkip when its blockMax plus the other terms'
	// maxima is below ths.
	__device__ __forceinline__ PairRec header(const Shared &s, u32 jj, u32 i, float ths) const {
		if (s.dv[jj] != kNone) {
			const u32 p = s.lo[jj] + (i - s.pre[jj]) * kDecItem;
			const u32 n = s.hi[jj] - p < kDecItem ? s.hi[jj] - p : kDecItem;
			return PairRec{s.dv[jj] + p, 0, 0, 0, n << 16 | kPairDec << 24, jj};
		}
		const qp_q::TermMeta &tm = s.tm[jj];
		const u32 *sk = qp_q::skips(post, tm);
		const u32 b = s.lo[jj] + (i - s.pre[jj]);
		if (ths > 0.0f && s.mx[jj] < kFltMax &&
		    below(qp_q::fadd(qp_q::fmul(s.w[jj], qp_q::float_of_bits(sk[4 * b + 3])), s.rest[jj]), ths))
			return PairRec{0, 0, 0, 0, kPairSkip << 24, jj};
		return pair_header(post, tm, sk, b, qp_q::block_len(tm, b, bs), jj);
	}

	// item is phase 2 for the record r: it leaves the scores of the
	// block's postings inside the tile in sc[j] at tile positions x[j]
	// (kNone: none), lane l holding postings 4l+j.
	__device__ __forceinline__ void item(Shared &s, const PairRec &r, const float *__restrict__ norms, float k1p1,
	                                     u32 t0, u32 span, float (&sc)[4], u32 (&x)[4]) const {
		const u32 lane = threadIdx.x & 31;
		u32 st = r.pk >> 24 & 7;
		if (st == kPairSkip) return;
		if (st == kPairDec) {
			// Postings r.ds + 4l + j of dec (the tile's, by rng).
			const u32 m = r.pk >> 16 & 255;
#pragma unroll
			for (int j = 0; j < 4; j++) {
				if (lane * 4 + j < m) {
					const uint2 v = dec[r.ds + lane * 4 + j];
					const u32 p = v.x - t0;
					if (p < span) {
						x[j] = p;
						sc[j] = qp_q::float_of_bits(v.y);
					}
				}
			}
#ifdef QP_EMU
			if (lane == 0) {
				QP_OR_STAT(kStDecItems, 1);
				QP_OR_STAT(kStDecPost, m);
			}
#endif
			return;
		}
		const qp_q::TermMeta &tm = s.tm[r.jj];
		u32 d[4], f[4];
		if (st == kPairOK) st = pair_values(post, tm, r, lane, d, f);
		if (lane == 0) atomicAdd(&s.nblk, 1u);
		if (st != kPairOK) {
			if (lane == 0) atomicAdd(&err[st == kBadDocs ? qp_q::kErrDocs : kErrFreqs], 1u);
			return;
		}
		const u32 m = r.pk >> 16 & 255;
		const float idf = s.idf[r.jj], w = s.w[r.jj];
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const u32 p = d[j] - t0;
			if (lane * 4 + j < m && p < span) {
				x[j] = p;
				sc[j] = qp_q::term(idf, k1p1, f[j], norms[d[j]], w);
			}
		}
#ifdef QP_EMU
		if (lane == 0) {
			QP_OR_STAT(kStBlocks, 1);
			QP_OR_STAT(kStPostDec, m);
			if (((r.pk >> 28 & 1) == 0 && r.prev + 1 < t0) || r.last >= t0 + span) QP_OR_STAT(kStBlocksShared, 1);
			if (s.col[r.jj] != qp_q::kNoCol) QP_OR_STAT(kStBlocksCol, 1);
			if (s.tm[r.jj].nb < ntiles) {
				QP_OR_STAT(kStBlocksShort, 1);
				QP_OR_STAT(kStPostShort, m);
			}
		}
		for (int j = 0; j < 4; j++) QP_OR_STAT(kStPostIn, x[j] != kNone);
#endif
	}

	// add adds the tile's postings (see above). It passes a __syncthreads
	// before it touches acc (accumulate zeroes acc just before the call);
	// its adds are complete after the next __syncthreads (accumulate's).
	__device__ __forceinline__ void add(float *acc, u32 *touch, Shared &s, const qp_q::QMeta &m, const OQuery &o,
	                                   const qp_q::Seg *__restrict__ segs, const qp_q::QTerm *__restrict__ qterms,
	                                   const qp_q::TermMeta *__restrict__ terms, const float *__restrict__ norms,
	                                   float k1p1, u32 t, u32 t0, u32 t1, float ths) const {
		constexpr u32 kWarps = kThreads / 32;
		const u32 tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, span = t1 - t0;
		if (tid == 0) s.nblk = s.nskip = 0;
		if (m.m > kChunk) ths = 0.0f; // the other terms' maxima span chunks: no skipping
		for (u32 c0 = 0; c0 < m.m; c0 += kChunk) {
			const u32 nc = m.m - c0 < kChunk ? m.m - c0 : kChunk;
			if (c0 > 0) __syncthreads(); // the previous chunk's adds are done and s is free
			// ranges and the item numbering are warp 0's (nc <= 32 lanes).
			ranges(s, o, qterms, c0, nc, t);
			if (warp == 0) {
				__syncwarp();
				// The split: the first e terms are decoded here, the rest
				// are added by rank for the documents that need them.
				u32 e = nc;
				if (col != nullptr && ths > 0.0f) { // then m.m <= kChunk: one chunk
					float sj = 0.0f; // the maxima of terms lane.. in canonical order
					bool all = true;
					for (u32 i = lane; i < nc; i++) {
						sj = qp_q::fadd(sj, s.mx[i]);
						all = all && s.col[i] != qp_q::kNoCol;
					}
					const u32 ok = __ballot_sync(0xffffffffu, lane >= 1 && lane < nc && all && sj < ths);
					if (ok) e = __ffs(static_cast<int>(ok)) - 1;
				}
				if (lane == 0) s.e = c0 + e;
				// Items: a block each, or kDecItem postings of a
				// pre-decoded list.
				u32 n = lane < e ? s.hi[lane] - s.lo[lane] : 0;
				if (lane < e && s.dv[lane] != kNone) n = (n + kDecItem - 1) / kDecItem;
				const u32 incl = qp_dec::incl_sum(n);
				s.pre[lane] = incl - n;
				if (lane == 31) s.pre[kChunk] = incl;
#ifdef QP_EMU
				if (lane == 0) {
					u32 nt = 0;
					for (u32 i = 0; i < nc; i++) nt += s.hi[i] > s.lo[i];
					QP_OR_STAT(kStTermsIn, nt);
				}
#endif
				if (ths > 0.0f && lane < nc) {
					float r = 0.0f; // the other terms' maxima
					for (u32 i = 0; i < nc; i++)
						if (i != lane) r = qp_q::fadd(r, s.mx[i]);
					s.rest[lane] = r;
				}
			}
			__syncthreads();
			const u32 total = s.pre[kChunk];
			u32 prev = kNone; // the term of the last add phase (the same on every thread)
			// Groups of up to 32 waves: phase 1 (lane l of warp w: the
			// record of item g0 + 8l + w), then the waves.
			for (u32 g0 = 0; g0 < total; g0 += 32 * kWarps) {
				{
					const u32 i = g0 + kWarps * lane + warp;
					bool skip = false;
					if (i < total) {
						u32 jj = 0;
						while (jj + 1 < nc && s.pre[jj + 1] <= i) jj++;
						const PairRec r = header(s, jj, i, ths);
						s.rec[warp][lane] = r;
						skip = (r.pk >> 24 & 7) == kPairSkip;
					}
					const u32 sk = __ballot_sync(0xffffffffu, skip);
					if (sk && lane == 0) atomicAdd(&s.nskip, static_cast<u32>(__popc(sk)));
					__syncwarp();
				}
				const u32 g1 = total - g0 < 32 * kWarps ? total : g0 + 32 * kWarps;
				for (u32 w0 = g0; w0 < g1; w0 += kWarps) {
					const u32 i = w0 + warp;
					float sc[4];
					u32 x[4] = {kNone, kNone, kNone, kNone};
					u32 jj = kNone;
					if (i < g1) {
						const PairRec r = s.rec[warp][(w0 - g0) / kWarps];
						jj = r.jj;
						item(s, r, norms, k1p1, t0, span, sc, x);
					}
					const u32 ja = term_of(s, nc, w0);
					const u32 jb = term_of(s, nc, w0 + kWarps - 1 < g1 ? w0 + kWarps - 1 : g1 - 1);
					for (u32 jt = ja; jt <= jb; jt++) {
						if (s.pre[jt] == s.pre[jt + 1]) continue; // no blocks in the tile
						if (prev != kNone && prev != jt) __syncthreads();
						prev = jt;
						if (jj == jt) {
#pragma unroll
							for (int j = 0; j < 4; j++)
								if (x[j] != kNone) acc_add(acc, touch, x[j], sc[j]);
						}
					}
				}
				__syncwarp(); // the records are rewritten by the next group
			}
		}
	}

	// bound returns x plus the maxima of terms e..m-1, added in canonical
	// order: for x a document's sum over terms [0, e), at least its full
	// score (rounding is monotone and the terms it lacks count 0).
	__device__ __forceinline__ float bound(const Shared &s, u32 e, u32 m, float x) const {
		for (u32 j = e; j < m; j++) x = qp_q::fadd(x, s.mx[j]);
		return x;
	}

	// bm_score returns term j's score for document d, 0 when d is not in
	// its list: one bit test, d's rank in the list and the frequency in
	// that slot (query.cuh rank, rank_tf; a corrupt block counts tf 1 and
	// raises err[kErrFreqs]). The rank directory entry, the words, the
	// norm are loaded at once, then the skip entries, then the block.
	__device__ __forceinline__ float bm_score(const Shared &s, u32 j, u32 d, const float *__restrict__ norms,
	                                          float k1p1) const {
		const u64 c = s.col[j];
		const u32 *w = mat + c * D;
		u32 g, r;
		qp_q::group(d, g, r);
		const float norm = norms[d];
		const u32 rnk = qp_q::rank(w, rk + c * S, d); // loaded with the bit's word
		if (((w[g] >> r) & 1u) == 0) return 0.0f;
		u32 tf = qp_q::rank_tf(post, s.tm[j], rnk, bs);
		if (tf == 0) {
			atomicAdd(&err[kErrFreqs], 1u);
			tf = 1;
		}
		return qp_q::term(s.idf[j], k1p1, tf, norm, s.w[j]);
	}

	// complete runs on every thread after add's barrier, with ths the
	// threshold score of the count pass that follows. With a split (s.e <
	// m: add added terms [0, e) only), every document with a sum over
	// those terms (acc > 0) whose bound() reaches ths is completed: the
	// scores of terms e..m-1 that hold it are added in canonical order,
	// so acc holds its full score, the CPU's float32 sum (adding 0 for a
	// term that lacks it changes nothing). Every other accumulator stays
	// below ths, so the count pass never takes it. The candidates are
	// numbered by a CTA scan and completed R at a time (R = 1536 / (m-e+1),
	// scratch in the block records, free after add): one thread per
	// (candidate, term) finds the term's score (bm_score) into shared
	// memory, then one per candidate adds them in order. Returns the
	// number of documents completed (the same on every thread); it ends
	// with a __syncthreads when it completed any.
	__device__ __forceinline__ u32 complete(float *acc, const u32 *touch, Shared &s, u32 m, u32 t0, u32 span,
	                                        float ths, const float *__restrict__ norms, float k1p1) const {
		const u32 e = s.e;
		if (e >= m) return 0;
		const u32 tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nsuf = m - e;
		if (tid == 0) QP_OR_STAT(kStSplit, 1);
		const auto cand = [&](float v) { return v > 0.0f && !(bound(s, e, m, v) < ths); };
		u32 mine = 0;
		each_own(touch, span, [&](u32 i) { mine += cand(acc[i]); });
		const u32 incl = qp_dec::incl_sum(mine);
		if (lane == 31) s.wsum[warp] = incl;
		__syncthreads();
		u32 off = incl - mine, total = 0;
		for (u32 x = 0; x < kThreads / 32; x++) {
			off += x < warp ? s.wsum[x] : 0;
			total += s.wsum[x];
		}
		if (total == 0) return 0;
		constexpr u32 kScratch = sizeof(s.rec) / 4;
		const u32 R = kScratch / (nsuf + 1);
		u32 *pos = reinterpret_cast<u32 *>(&s.rec[0][0]);
		float *val = reinterpret_cast<float *>(pos + R);
		for (u32 r0 = 0; r0 < total; r0 += R) {
			if (r0 > 0) __syncthreads(); // the previous round's readers are done
			if (off < r0 + R && off + mine > r0) {
				// This thread's candidates in the order counted above.
				u32 o = off;
				each_own(touch, span, [&](u32 i) {
					if (o < r0 + R && cand(acc[i])) {
						if (o >= r0) pos[o - r0] = i;
						o++;
					}
				});
			}
			__syncthreads();
			const u32 nr = total - r0 < R ? total - r0 : R;
			for (u32 x = tid; x < nr * nsuf; x += kThreads) {
				const u32 c = x / nsuf;
				val[x] = bm_score(s, e + (x - c * nsuf), t0 + pos[c], norms, k1p1);
			}
			__syncthreads();
			for (u32 c = tid; c < nr; c += kThreads) {
				float v = acc[pos[c]];
				for (u32 j = 0; j < nsuf; j++) v = qp_q::fadd(v, val[c * nsuf + j]);
				acc[pos[c]] = v;
			}
		}
		__syncthreads();
		return total;
	}

	// done is called by thread 0 after the barrier that follows add: it
	// returns the number of blocks the tile decoded and counts those it
	// skipped.
	__device__ __forceinline__ u32 done(const Shared &s) const {
		if (s.nskip) atomicAdd(&err[kCntSkipped], s.nskip);
		return s.nblk;
	}
};

// predecode decodes the blocks of the pre-decoded lists of a launch once
// (Bp128Src, "Pre-decoded lists"): one warp per block, grid-stride over
// the nblk blocks of the npre lists; list i is query term plist[i].x, its
// blocks are numbers plist[i].y .. (plist ascending in y). With the
// tiles' checks (pair_header, pair_values; documents < ndocs), it writes
// each posting p (document d, frequency f) of query term x to
// dec[dvo[x] + p] = (d, bits of term(idf, k1p1, f, norm[d], w)) and,
// where p is the first posting of tile t (prev < tT <= d), rng[x][t] = p;
// after the list's last posting, rng[x][t] = df up to t = ntiles. It runs
// after qp_ortile_bounds (whose block numbers it overwrites) and before
// the accumulation. A corrupt block is counted in err (kErrDocs,
// kErrFreqs) and left undecoded; err[kCntPre] counts the blocks decoded.
__device__ __forceinline__ void predecode(u32 npre, const uint2 *__restrict__ plist, u32 nblk,
                                          const qp_q::Seg *__restrict__ segs, const qp_q::QTerm *__restrict__ qterms,
                                          const qp_q::TermMeta *__restrict__ terms, const uint8_t *__restrict__ post,
                                          u32 bs, const float *__restrict__ norms, float k1p1, u32 ndocs, u32 tile,
                                          u32 ntiles, const u32 *__restrict__ dvo, u32 *__restrict__ rng,
                                          uint2 *__restrict__ dec, u32 *__restrict__ err) {
	const u32 lane = threadIdx.x & 31;
	const u32 nw = gridDim.x * (kThreads / 32);
	u32 done = 0;
	for (u32 g = blockIdx.x * (kThreads / 32) + (threadIdx.x >> 5); g < nblk; g += nw) {
		u32 lo = 0, hi = npre; // the last list i with plist[i].y <= g
		while (hi - lo > 1) {
			const u32 mid = (lo + hi) / 2;
			if (plist[mid].y <= g)
				lo = mid;
			else
				hi = mid;
		}
		const u32 x = plist[lo].x, b = g - plist[lo].y;
		const qp_q::TermMeta tm = terms[segs[x].term];
		const u32 *sk = qp_q::skips(post, tm);
		const PairRec r = pair_header(post, tm, sk, b, qp_q::block_len(tm, b, bs), 0);
		u32 st = r.pk >> 24 & 7, d[4], f[4];
		if (st == kPairOK) st = pair_values(post, tm, r, lane, d, f);
		const u32 m = r.pk >> 16 & 255;
		bool bad = false;
		for (int j = 0; j < 4; j++) bad |= st == kPairOK && lane * 4 + j < m && d[j] >= ndocs;
		if (__any_sync(0xffffffffu, bad)) st = kBadDocs;
		if (st != kPairOK) {
			if (lane == 0) atomicAdd(&err[st == kBadDocs ? qp_q::kErrDocs : kErrFreqs], 1u);
			continue;
		}
		done++;
		const qp_q::QTerm qt = qterms[x];
		const u32 v0 = dvo[x];
		u32 *rt = rng + static_cast<u64>(x) * (ntiles + 1);
		const u32 up = __shfl_up_sync(0xffffffffu, d[3], 1); // lane l-1's last posting
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const u32 i = lane * 4 + j;
			if (i >= m) continue;
			const u32 p = b * bs + i;
			dec[v0 + p] = make_uint2(d[j], qp_q::fbits(qp_q::term(qt.idf, k1p1, f[j], norms[d[j]], qt.w)));
			// The tiles whose first posting this is: (tile(prev), tile(d)].
			const bool first = p == 0;
			const u32 prev = j > 0 ? d[j - 1] : lane > 0 ? up : r.prev;
			const u32 th = d[j] / tile;
			for (u32 t = first ? 0 : prev / tile + 1; t <= th; t++) rt[t] = p;
			if (p + 1 == tm.df)
				for (u32 t = th + 1; t <= ntiles; t++) rt[t] = tm.df;
		}
	}
	if (lane == 0 && done) atomicAdd(&err[kCntPre], done);
}

// block_minmax_count reduces (mn, mx, c) over the CTA: min and max of mn/mx
// and the sum of c (every thread gets the results).
__device__ __forceinline__ void block_minmax_count(u32 &mn, u32 &mx, u32 &c, u32 (&red)[3][kThreads / 32]) {
	const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (u32 off = 16; off > 0; off >>= 1) {
		const u32 a = __shfl_xor_sync(0xffffffffu, mn, off), b = __shfl_xor_sync(0xffffffffu, mx, off);
		mn = a < mn ? a : mn;
		mx = b > mx ? b : mx;
		c += __shfl_xor_sync(0xffffffffu, c, off);
	}
	if (lane == 0) {
		red[0][warp] = mn;
		red[1][warp] = mx;
		red[2][warp] = c;
	}
	__syncthreads();
	mn = 0xffffffffu;
	mx = 0;
	c = 0;
	for (u32 w = 0; w < kThreads / 32; w++) {
		mn = red[0][w] < mn ? red[0][w] : mn;
		mx = red[1][w] > mx ? red[1][w] : mx;
		c += red[2][w];
	}
	// red is written again only by the next tile's call, behind the
	// barriers of that tile: no barrier here.
}

// Selection state of one tile (shared).
struct Sel {
	u32 hist[256];
	u64 list[kGather];
	u32 red[3][kThreads / 32];
	u32 wcnt[kThreads / 32];
	u32 dg, cum, n, x, base, pos;
	u32 tiles, blocks, sels, emits, looks; // the CTA's counts (thread 0)
	u64 kth;
};

// kth_key returns (on every thread) the k-th smallest rank key among the
// tile's candidates (documents with a score, key <= th), of which there
// are c > k, whose score bits lie in [mn, mx]. The bits above the highest
// bit in which mn and mx differ are common; an MSD radix select takes 8
// bits a pass below it (histograms with warp-aggregated shared atomics,
// __match_any_sync; the digit found by a warp scan from the top) until at
// most kGather candidates share the selected prefix, which are then
// gathered and ranked by their full keys (ties by docID are exact). If
// more than kGather candidates tie on the whole score, the k-th is the
// remaining count's document among them in position (docID) order.
__device__ __noinline__ u64 kth_key(const float *acc, u32 span, u32 t0, u64 th, u32 k, u32 mn, u32 mx, Sel &s) {
	const u32 tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	u32 want = k;
	u32 prefix = mx, mask = 0, shift = 0, r = 0;
	const u32 diff = mn ^ mx;
	if (diff != 0) {
		const u32 top = 31 - __clz(static_cast<int>(diff));
		mask = top == 31 ? 0 : ~((2u << top) - 1);
		prefix = mx & mask;
		shift = top >= 7 ? top - 7 : 0;
		for (;;) {
			for (u32 i = tid; i < 256; i += kThreads) s.hist[i] = 0;
			__syncthreads();
			for (u32 i0 = 0; i0 < span; i0 += kThreads) {
				const u32 i = i0 + tid;
				u32 dig = 256;
				if (i < span) {
					const float v = acc[i];
					const u32 b = qp_q::fbits(v);
					if ((b & mask) == prefix && qp_q::beats(t0 + i, b, th)) dig = (b >> shift) & 255;
				}
				const u32 peers = __match_any_sync(0xffffffffu, dig);
				if (dig != 256 && lane == static_cast<u32>(__ffs(static_cast<int>(peers)) - 1))
					atomicAdd(&s.hist[dig], static_cast<u32>(__popc(peers)));
			}
			__syncthreads();
			if (tid == 0) QP_OR_STAT(kStKthPass, 1);
			if (warp == 0) {
				// Lane l holds digits 255-8l .. 248-8l (descending).
				u32 v[8], sum = 0;
#pragma unroll
				for (int e = 0; e < 8; e++) {
					v[e] = s.hist[255 - 8 * lane - e];
					sum += v[e];
				}
				const u32 incl = qp_dec::incl_sum(sum);
				const u32 reach = __ballot_sync(0xffffffffu, incl >= want);
				if (lane == static_cast<u32>(__ffs(static_cast<int>(reach)) - 1)) {
					u32 cum = incl - sum, dg = 0;
#pragma unroll
					for (int e = 0; e < 8; e++) {
						if (cum + v[e] >= want) {
							dg = 255 - 8 * lane - e;
							break;
						}
						cum += v[e];
					}
					s.dg = dg;
					s.cum = cum;
				}
			}
			__syncthreads();
			const u32 dg = s.dg;
			want -= s.cum;
			r = s.hist[dg];
			prefix = (prefix & ~(255u << shift)) | dg << shift;
			mask |= 255u << shift;
			__syncthreads(); // s.hist, s.dg are rewritten
			if (r <= kGather || shift == 0) break;
			shift = shift >= 8 ? shift - 8 : 0;
		}
	}
	if (diff != 0 && r <= kGather) {
		// Gather the r candidates with the prefix and rank them.
		if (tid == 0) s.n = 0;
		if (tid == 0) QP_OR_STAT(kStKthGather, 1);
		__syncthreads();
		for (u32 i = tid; i < span; i += kThreads) {
			const float v = acc[i];
			const u32 b = qp_q::fbits(v);
			if ((b & mask) == prefix && qp_q::beats(t0 + i, b, th)) {
				const u32 p = atomicAdd(&s.n, 1u);
				if (p < kGather) s.list[p] = qp_q::rank_key_bits(t0 + i, b);
			}
		}
		__syncthreads();
		const u32 n = s.n < kGather ? s.n : kGather;
		if (tid < n) {
			const u64 key = s.list[tid];
			u32 rank = 0;
			for (u32 j = 0; j < n; j++) rank += s.list[j] < key;
			if (rank == want - 1) s.kth = key;
		}
		__syncthreads();
		return s.kth;
	}
	// Every remaining candidate scores exactly `prefix` (all 32 bits fixed,
	// or mn == mx): the want-th of them by position, in rounds of 256
	// positions counted by warp ballots.
	u32 need = want;
	for (u32 b0 = 0; b0 < span; b0 += kThreads) {
		const u32 i = b0 + tid;
		bool hit = false;
		if (i < span) {
			const float v = acc[i];
			const u32 b = qp_q::fbits(v);
			hit = b == prefix && qp_q::beats(t0 + i, b, th);
		}
		const u32 bal = __ballot_sync(0xffffffffu, hit);
		if (lane == 0) s.wcnt[warp] = __popc(bal);
		__syncthreads();
		u32 pre = 0, tot = 0;
		for (u32 w = 0; w < kThreads / 32; w++) {
			pre += w < warp ? s.wcnt[w] : 0;
			tot += s.wcnt[w];
		}
		if (hit && pre + __popc(bal & ((1u << lane) - 1)) + 1 == need) s.x = i;
		__syncthreads();
		if (need <= tot) break;
		need -= tot;
	}
	return static_cast<u64>(~prefix) << 32 | (t0 + s.x);
}

// accumulate runs one pass over the tile ranks [r0, r1) of every query:
// item it is query it % nq and ranks r0 + (it / nq) * per .. + per - 1
// (queries interleaved, so that each query's threshold tightens as its
// earlier ranks finish). A CTA takes its ranks in order and stops at the
// first tile whose bound is 0 or below the query's threshold score: the
// order is by descending bound, so every later tile would be skipped too.
// For a tile: zero the accumulators, add the postings (Src), select,
// emit. Selection: the c documents of the tile whose rank key is <=
// theta[q]; when c > k, the tile's own k-th best key (kth_key) replaces
// theta (u64 atomicMin) and exactly k documents are emitted. So a query
// emits at most k per tile, and min(k, T) x ntiles candidate slots can
// never overflow. err[kCntTiles] and err[kCntBlocks] count the tiles
// accumulated and the blocks they decoded. kDense runs the dense passes
// (every tile zeroes and scans all its accumulators: the A/B twin
// qp_ortile_accumulate_bp128_dense, QP_GPU_OR_SPARSE=0), else the sparse
// ones over the touch marks (acc_add, each_own): the same documents,
// scores and emissions. (A runtime switch instead of two kernels cost 32
// more bytes of spills in both: nvcc 11.8, sm_90.)
template <bool kDense, class Src>
__device__ __forceinline__ void accumulate(const Src &src, u32 nq, u32 nitems, u32 ntiles, u32 tile,
                                           const u32 *__restrict__ order, u32 r0, u32 r1, u32 per,
                                           const qp_q::QMeta *__restrict__ qmeta, const OQuery *__restrict__ oq,
                                           const qp_q::Seg *__restrict__ segs, const qp_q::QTerm *__restrict__ qterms,
                                           const qp_q::TermMeta *__restrict__ terms, const float *__restrict__ norms,
                                           u32 ndocs, float k1p1, const float *__restrict__ ub,
                                           u64 *__restrict__ theta, u32 *__restrict__ cnt, u32 *__restrict__ cdoc,
                                           float *__restrict__ cscore) {
	alignas(16) __shared__ float acc[kTileMax];
	__shared__ u32 marks[kThreads]; // the touch marks (acc_add)
	__shared__ Sel sel;
	__shared__ typename Src::Shared ss;
	// The tile of each rank and theta when it was picked, by thread 0,
	// double-buffered (par) so that the next pick needs no barrier first.
	__shared__ u32 sh_t[2];
	__shared__ u64 sh_th0[2], sh_th;
	u32 par = 0;
	const u32 tid = threadIdx.x;
	if (tid == 0) sel.tiles = sel.blocks = sel.sels = sel.emits = sel.looks = 0;
	u32 *const touch = kDense ? nullptr : marks;
	if (!kDense) {
		// Sparse: all zero once; each tile then clears what it touched
		// (behind the first pick's barrier).
		for (u32 i = 4 * tid; i < kTileMax; i += 4 * kThreads)
			*reinterpret_cast<uint4 *>(&acc[i]) = make_uint4(0, 0, 0, 0);
		touch[tid] = 0;
	}
	for (u32 it = blockIdx.x; it < nitems; it += gridDim.x) {
		const u32 q = it % nq;
		const u32 ra = r0 + (it / nq) * per;
		const u32 rb = ra + per < r1 ? ra + per : r1;
		const qp_q::QMeta m = qmeta[q];
		const OQuery o = oq[q];
		for (u32 r = ra; r < rb; r++) {
			if (tid == 0) {
				// The tile of rank r and its bound (in rank order: both
				// loads at once).
				u32 t = order[static_cast<u64>(q) * ntiles + r];
				const float u = ub[static_cast<u64>(q) * ntiles + r];
				const u64 th = *reinterpret_cast<volatile u64 *>(&theta[q]);
				if (!(u > 0.0f) || u < theta_score(th)) t = kNone;
				sh_t[par] = t;
				sh_th0[par] = th;
			}
			__syncthreads();
			const u32 t = sh_t[par];
			const u64 th0 = sh_th0[par];
			par ^= 1;
			if (t == kNone) break;
			const u32 t0 = t * tile;
			const u32 t1 = t0 + tile < ndocs ? t0 + tile : ndocs;
			const u32 span = t1 - t0;
			// Dense: zero the accumulators up to a multiple of 4 (the
			// count pass reads them 4 at a time). (Src::add passes a
			// barrier before it touches acc.)
			if (kDense)
				for (u32 i = 4 * tid; i < span; i += 4 * kThreads)
					*reinterpret_cast<uint4 *>(&acc[i]) = make_uint4(0, 0, 0, 0);
			src.add(acc, touch, ss, m, o, segs, qterms, terms, norms, k1p1, t, t0, t1, theta_score(th0));
			if (tid == 0) {
				sh_th = *reinterpret_cast<volatile u64 *>(&theta[q]);
				sel.pos = 0;
			}
			__syncthreads(); // the adds are complete
			if (tid == 0) {
				sel.tiles++;
#ifdef QP_EMU
				const u32 nb0 = sel.blocks;
#endif
				sel.blocks += src.done(ss);
#ifdef QP_EMU
				QP_OR_STAT(kStTiles, 1);
				if (th0 == ~0ull) {
					QP_OR_STAT(kStTilesNoTh, 1);
					QP_OR_STAT(kStBlocksNoTh, sel.blocks - nb0);
				}
#endif
			}
			// Count the documents that beat theta, with their score range;
			// each thread keeps the positions of its first two (the usual
			// case: a tile has a few documents above theta, if any).
			u64 th = sh_th;
			// With a split (the tile added some terms only), the documents
			// that can still beat theta get the others' scores now.
			const u32 looks = src.complete(acc, touch, ss, m.m, t0, span, theta_score(th), norms, k1p1);
			if (tid == 0) sel.looks += looks;
			// A score below theta's (as bits: the scores are positive) never
			// beats it: most accumulators take one max and one compare
			// per four.
			const u32 thb = th == ~0ull ? 1u : ~static_cast<u32>(th >> 32);
			u32 c = 0, mn = 0xffffffffu, mx = 0, p0 = kNone, p1 = kNone;
			const auto count = [&](u32 i, u32 b) {
				if (qp_q::beats(t0 + i, b, th)) {
					p1 = c == 1 ? i : p1;
					p0 = c == 0 ? i : p0;
					c++;
					mn = b < mn ? b : mn;
					mx = b > mx ? b : mx;
				}
			};
			if (!kDense) {
				each_own(touch, span, [&](u32 i) {
					const u32 b = qp_q::fbits(acc[i]);
					if (b >= thb) count(i, b);
				});
			}
			for (u32 i = 4 * tid; kDense && i < span; i += 4 * kThreads) {
				const uint4 v4 = *reinterpret_cast<const uint4 *>(&acc[i]);
				const u32 m01 = v4.x > v4.y ? v4.x : v4.y, m23 = v4.z > v4.w ? v4.z : v4.w;
				if ((m01 > m23 ? m01 : m23) < thb) continue;
				const u32 bv[4] = {v4.x, v4.y, v4.z, v4.w};
#pragma unroll
				for (int j = 0; j < 4; j++) count(i + j, bv[j]);
			}
			const u32 mine = c;
#ifdef QP_EMU
			{
				u32 nz = 0;
				for (u32 i = tid; i < span; i += kThreads) nz += acc[i] != 0.0f;
				QP_OR_STAT(kStTouched, nz);
				// The accumulators each per-thread pass visits.
				QP_OR_STAT(kStScanned, !kDense ? __popc(touch[tid])
				                       : tid < span ? (span - tid + kThreads - 1) / kThreads : 0);
			}
#endif
			block_minmax_count(mn, mx, c, sel.red);
			const bool selected = c > m.k;
#ifdef QP_EMU
			if (tid == 0) {
				QP_OR_STAT(kStCand, c);
				QP_OR_STAT(kStEmit, c > m.k ? m.k : c);
				if (selected) QP_OR_STAT(kStKth, 1);
			}
#endif
			if (selected) {
				th = kth_key(acc, span, t0, th, m.k, mn, mx, sel);
				if (tid == 0) {
					atomicMin(&theta[q], th);
					sel.sels++;
				}
				c = m.k;
			}
			if (c > 0 && !selected) {
				// Every document counted is emitted, each thread its own:
				// slots from one atomic per warp (no CTA barrier).
				const u32 lane = tid & 31;
				const u32 incl = qp_dec::incl_sum(mine);
				const u32 wtot = __shfl_sync(0xffffffffu, incl, 31);
				u32 wbase = 0;
				if (lane == 31 && wtot) wbase = atomicAdd(&cnt[q], wtot);
				wbase = __shfl_sync(0xffffffffu, wbase, 31);
				if (tid == 0) sel.emits++;
				u32 p = wbase + incl - mine;
				auto emit = [&](u32 i) { put(o, p++, t0 + i, acc[i], cdoc, cscore); };
				if (mine > 0) emit(p0);
				if (mine > 1) emit(p1);
				if (mine > 2 && !kDense)
					each_own(touch, span, [&](u32 i) {
						if (i > p1 && qp_q::beats(t0 + i, qp_q::fbits(acc[i]), th)) emit(i);
					});
				for (u32 i = 4 * tid; mine > 2 && kDense && i < span; i += 4 * kThreads) {
					if (i + 3 <= p1) continue;
					for (u32 j = 0; j < 4; j++) {
						const u32 b = qp_q::fbits(acc[i + j]);
						if (i + j > p1 && qp_q::beats(t0 + i + j, b, th)) emit(i + j);
					}
				}
			} else if (c > 0) {
				// Exactly k documents (keys <= the tile's k-th) are emitted.
				if (tid == 0) {
					sel.base = atomicAdd(&cnt[q], c);
					sel.emits++;
				}
				__syncthreads();
				const u32 base = sel.base;
				for (u32 i = tid; i < span; i += kThreads) {
					const float v = acc[i];
					if (qp_q::beats(t0 + i, qp_q::fbits(v), th)) {
						const u32 p = atomicAdd(&sel.pos, 1u);
						if (p < c) put(o, base + p, t0 + i, v, cdoc, cscore);
					}
				}
			}
			// Sparse: clear this thread's touched accumulators and marks
			// (only this thread read them since complete()'s barrier).
			if (!kDense) {
				each_own(touch, span, [&](u32 i) { acc[i] = 0.0f; });
				touch[tid] = 0;
			}
			__syncthreads(); // acc and the shared words are reused by the next tile
		}
	}
#ifdef QP_EMU
	if (tid == 0 && blockIdx.x == gridDim.x - 1) emu_stats_dump();
#endif
	if (tid == 0 && sel.tiles) {
		atomicAdd(&src.err[kCntTiles], sel.tiles);
		if (sel.blocks) atomicAdd(&src.err[kCntBlocks], sel.blocks);
		if (sel.sels) atomicAdd(&src.err[kCntSelect], sel.sels);
		if (sel.emits) atomicAdd(&src.err[kCntEmit], sel.emits);
		if (sel.looks) atomicAdd(&src.err[kCntLookups], sel.looks);
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
// entries (the root): three levels, n <= 512^2 items (kern.OrTreeItems,
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
		const auto at = [&](u32 p) { return cq[p]; };
		const u32 first = qp_q::lower_bound(0u, ncand, a, at);
		const u32 n = qp_q::lower_bound(first, ncand, a + 1, at) - first;
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
qp_ortile_check(const qp_q::Seg *segs, qp_q::u32 nseg, const qp_q::u32 *docs, qp_q::u32 nval, qp_q::u32 ndocs,
                qp_q::u32 *err) {
	qp_ot::check(segs, nseg, docs, nval, ndocs, err);
}
QP_EMU_REGISTER(qp_ortile_check)
static_assert(std::is_same<decltype(&qp_ortile_check), QP_SIGNATURE_OrTileCheckParams>::value,
              "qp_ortile_check's parameters differ from OrTileCheckParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_ortile_bounds(qp_q::u32 nq, const qp_q::QMeta *qmeta, const qp_q::OQuery *oq, const qp_q::Seg *segs,
                 const qp_q::QTerm *qterms, const qp_q::TermMeta *terms, const uint8_t *post, qp_q::u32 use_bm,
                 qp_q::u32 tile, qp_q::u32 ntiles, float *ub, qp_q::u32 *order, qp_q::u32 *rng,
                 qp_q::TermMeta *qtm) {
	qp_ot::bounds(nq, qmeta, oq, segs, qterms, terms, post, use_bm, tile, ntiles, ub, order, rng, qtm);
}
QP_EMU_REGISTER(qp_ortile_bounds)
static_assert(std::is_same<decltype(&qp_ortile_bounds), QP_SIGNATURE_OrTileBoundsParams>::value,
              "qp_ortile_bounds's parameters differ from OrTileBoundsParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_ortile_accumulate(uint32_t nq, uint32_t nitems, uint32_t ntiles, uint32_t tile, const uint32_t *order,
                     uint32_t r0, uint32_t r1, uint32_t per, const qp_q::QMeta *qmeta, const qp_ot::OQuery *oq,
                     const qp_q::Seg *segs, const qp_q::QTerm *qterms, const qp_q::TermMeta *terms,
                     const float *norms, uint32_t ndocs, float k1p1, const uint32_t *docs, const uint32_t *freqs,
                     uint32_t *err, const float *ub, unsigned long long *theta, uint32_t *cnt, uint32_t *cdoc,
                     float *cscore) {
	const qp_ot::DecodedSrc src{docs, freqs, err};
	qp_ot::accumulate<false>(src, nq, nitems, ntiles, tile, order, r0, r1, per, qmeta, oq, segs, qterms, terms, norms,
	                         ndocs, k1p1, ub, theta, cnt, cdoc, cscore);
}
QP_EMU_REGISTER(qp_ortile_accumulate)

// qp_ortile_accumulate_bp128 is compiled for 5 CTAs per SM (48 registers,
// 56 bytes of stack for spills, 44.1 KB of shared memory each, which also
// caps it at 5): measured on an H100 (10M-document gen index, TREC 2006 OR
// queries, docs/GPU-QUERY.md) 17,727 OR queries/s against 17,496 for 4 CTAs
// (64 registers, no spill). The tiles wait on dependent loads (skip
// entries, block headers, values, norms) and barriers, so more resident
// tiles hide more of that latency.
extern "C" __global__ void __launch_bounds__(256, 5)
qp_ortile_accumulate_bp128(uint32_t nq, uint32_t nitems, uint32_t ntiles, uint32_t tile, const uint32_t *order,
                           uint32_t r0, uint32_t r1, uint32_t per, const qp_q::QMeta *qmeta, const qp_ot::OQuery *oq,
                           const qp_q::Seg *segs, const qp_q::QTerm *qterms, const qp_q::TermMeta *terms,
                           const float *norms, uint32_t ndocs, float k1p1, const uint8_t *post, uint32_t bs,
                           const uint32_t *rng, const qp_q::TermMeta *qtm, const uint32_t *col,
                           const uint32_t *mat, const uint32_t *rk, uint32_t D, uint32_t S, const uint32_t *dvo,
                           const uint32_t *dec, uint32_t *err, const float *ub, unsigned long long *theta,
                           uint32_t *cnt, uint32_t *cdoc, float *cscore) {
	const qp_ot::Bp128Src src{post, bs, err, rng, ntiles, qtm, col, mat, rk, D, S, dvo,
	                          reinterpret_cast<const uint2 *>(dec)};
	qp_ot::accumulate<false>(src, nq, nitems, ntiles, tile, order, r0, r1, per, qmeta, oq, segs, qterms, terms, norms,
	                         ndocs, k1p1, ub, theta, cnt, cdoc, cscore);
}
QP_EMU_REGISTER(qp_ortile_accumulate_bp128)

// qp_ortile_accumulate_bp128_dense is qp_ortile_accumulate_bp128 with the
// dense accumulator passes (every tile zeroes and scans its T
// accumulators), the path before the touch marks: the A/B switch
// QP_GPU_OR_SPARSE=0 (kern.OrPass.Dense). Same parameters, same results.
extern "C" __global__ void __launch_bounds__(256, 5)
qp_ortile_accumulate_bp128_dense(uint32_t nq, uint32_t nitems, uint32_t ntiles, uint32_t tile, const uint32_t *order,
                                 uint32_t r0, uint32_t r1, uint32_t per, const qp_q::QMeta *qmeta, const qp_ot::OQuery *oq,
                                 const qp_q::Seg *segs, const qp_q::QTerm *qterms, const qp_q::TermMeta *terms,
                                 const float *norms, uint32_t ndocs, float k1p1, const uint8_t *post, uint32_t bs,
                                 const uint32_t *rng, const qp_q::TermMeta *qtm, const uint32_t *col,
                                 const uint32_t *mat, const uint32_t *rk, uint32_t D, uint32_t S, const uint32_t *dvo,
                                 const uint32_t *dec, uint32_t *err, const float *ub, unsigned long long *theta,
                                 uint32_t *cnt, uint32_t *cdoc, float *cscore) {
	const qp_ot::Bp128Src src{post, bs, err, rng, ntiles, qtm, col, mat, rk, D, S, dvo,
	                          reinterpret_cast<const uint2 *>(dec)};
	qp_ot::accumulate<true>(src, nq, nitems, ntiles, tile, order, r0, r1, per, qmeta, oq, segs, qterms, terms, norms,
	                        ndocs, k1p1, ub, theta, cnt, cdoc, cscore);
}
QP_EMU_REGISTER(qp_ortile_accumulate_bp128_dense)

extern "C" __global__ void __launch_bounds__(256)
qp_ortile_predecode(qp_q::u32 npre, const qp_q::u32 *plist, qp_q::u32 nblk, const qp_q::Seg *segs,
                    const qp_q::QTerm *qterms, const qp_q::TermMeta *terms, const uint8_t *post, qp_q::u32 bs,
                    const float *norms, float k1p1, qp_q::u32 ndocs, qp_q::u32 tile, qp_q::u32 ntiles,
                    const qp_q::u32 *dvo, qp_q::u32 *rng, qp_q::u32 *dec, qp_q::u32 *err) {
	qp_ot::predecode(npre, reinterpret_cast<const uint2 *>(plist), nblk, segs, qterms, terms, post, bs, norms, k1p1,
	                 ndocs, tile, ntiles, dvo, rng, reinterpret_cast<uint2 *>(dec), err);
}
QP_EMU_REGISTER(qp_ortile_predecode)
static_assert(std::is_same<decltype(&qp_ortile_predecode), QP_SIGNATURE_OrTilePredecodeParams>::value,
              "qp_ortile_predecode's parameters differ from OrTilePredecodeParams (cuda/kern/layout.go)");


extern "C" __global__ void __launch_bounds__(256)
qp_ortile_clamp(qp_q::u32 nq, const qp_q::OQuery *oq, const qp_q::u32 *cnt, qp_q::u32 *out) {
	qp_ot::clamp(nq, oq, cnt, out);
}
QP_EMU_REGISTER(qp_ortile_clamp)
static_assert(std::is_same<decltype(&qp_ortile_clamp), QP_SIGNATURE_OrTileClampParams>::value,
              "qp_ortile_clamp's parameters differ from OrTileClampParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_ortile_compact(qp_q::u32 nq, const qp_q::OQuery *oq, const qp_q::u32 *ex, const qp_q::u32 *cdoc,
                  const float *cscore, qp_q::u32 *ndoc, float *nscore, qp_q::u32 *ncq) {
	qp_ot::compact(nq, oq, ex, cdoc, cscore, ndoc, nscore, ncq);
}
QP_EMU_REGISTER(qp_ortile_compact)
static_assert(std::is_same<decltype(&qp_ortile_compact), QP_SIGNATURE_OrTileCompactParams>::value,
              "qp_ortile_compact's parameters differ from OrTileCompactParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_ortile_maxtree(qp_q::u32 nq, const qp_q::QMeta *qmeta, const qp_q::u32 *cdoc, const float *cscore,
                  const qp_q::u32 *cq, qp_q::u32 ncand, const qp_q::OQuery *oq, qp_q::u64 *keys, qp_q::u64 *res,
                  qp_q::u32 *cnt, qp_q::u32 *total) {
	qp_ot::maxtree(nq, qmeta, cdoc, cscore, cq, ncand, oq, keys, res, cnt, total);
}
QP_EMU_REGISTER(qp_ortile_maxtree)
static_assert(std::is_same<decltype(&qp_ortile_maxtree), QP_SIGNATURE_OrTileMaxTreeParams>::value,
              "qp_ortile_maxtree's parameters differ from OrTileMaxTreeParams (cuda/kern/layout.go)");

// The accumulations keep positional parameters, as every kernel does (a
// struct parameter made ptxas spill more in qp_ortile_accumulate_bp128);
// Go passes its OrTileAccumulate(BP128)Params field by field, and these
// check that the kernels' parameter lists are those structs' fields
// (query_params.cuh).
static_assert(std::is_same<decltype(&qp_ortile_accumulate), QP_SIGNATURE_OrTileAccumulateParams>::value,
              "qp_ortile_accumulate's parameters differ from OrTileAccumulateParams (cuda/kern/layout.go)");
static_assert(std::is_same<decltype(&qp_ortile_accumulate_bp128), QP_SIGNATURE_OrTileAccumulateBP128Params>::value,
              "qp_ortile_accumulate_bp128's parameters differ from OrTileAccumulateBP128Params (cuda/kern/layout.go)");
static_assert(std::is_same<decltype(&qp_ortile_accumulate_bp128_dense), QP_SIGNATURE_OrTileAccumulateBP128Params>::value,
              "qp_ortile_accumulate_bp128_dense's parameters differ from OrTileAccumulateBP128Params (cuda/kern/layout.go)");
