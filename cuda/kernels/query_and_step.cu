// query_and_step.cu — the AND step kernels of engine/gpu (Ding et al.
// WWW'09 §7-§8, Ao et al. VLDB'11 §4.2), the successors of
// the former qp_query_and_select/heads/intersect/compact. They keep
// the candidate count on the device so that the host synchronizes once per
// step (for the number of blocks the decoders need):
//
//   - The host sizes every grid by an upper bound n of the candidates (the
//     exact count of the previous step). Slots past the real count hold the
//     query ID kNone (0xffffffff), written by qp_and_compact; every kernel
//     treats such a slot as a dead candidate, and qp_query_topk's binary
//     search by query stops before them (kNone is above every query).
//   - qp_and_locate and qp_and_match work on tiles of kScanTile = 1024
//     candidates (256 threads x 4 consecutive, the tile of query_scan.cu) and
//     write their tile's sum to part[tile]: qp_and_select scans
//     qp_and_locate's output (summing the raw partials before its tile when
//     there are at most kern.ScanFuseParts, otherwise after
//     qp_query_scan_partials_s4) and qp_and_compact qp_and_match's flags.
//
// Candidates are grouped by query (ascending query ID) and ascending by
// docID within a query; the host orders a set's queries by descending term
// count, so the queries still active at step j are the first qactive ones
// and the kernels skip the others (kPass) without reading their metadata.
//
// qp_and_locate (block selection + heads). Grid ceil(n/1024) x 256. For
// every candidate, the block of its query's j-th list that can hold it:
// the first block whose skip-table lastDoc is >= the docID (Ding §8: only
// those blocks are decoded). levels = 0: one binary search per candidate in
// the whole skip table, or, with qlr (one Linear Regression model of the
// skip table per query term, parallel to qterms), in the model's safe range
// (lr_range; Ao et al. VLDB'11 §4.3). levels = L in 1..4: Parallel Merge Find (Ding §7)
// with L levels of recursive splitting: the splitters at spacing
// kSpacing[L-1] of the tile (and the next tile's first candidate) are
// searched in the whole table, those of each finer level in the range
// their enclosing coarser splitters found (when of the same query), and the
// other candidates of each 4-candidate piece by a merge: the block of the
// previous candidate is tested first, then a binary search up to the block
// of the next piece's splitter. Every choice gives the same blocks. Then the
// first candidate of each distinct (query, block) is a head: sel = {1,
// postings, doc bytes, freq bytes}, else 0. Static shared memory: 3 x 1025
// words + CUB scan storage. Memory per candidate: reads 8 bytes + the
// query's metadata (cached) + the skip entries of its searches (log2 of
// the range; 1 for a merge hit); writes 4 (blk) + 32 (sel); 32 per tile.
//
// qp_and_select (the exclusive scan of qp_and_locate's sel, in place,
// fused with the list of the selected blocks and the step's one copy).
// Grid ceil(n/1024) x 256, the tiles of qp_and_locate. part holds the
// tiles' sel sums: raw (each CTA sums those before its tile) or, with raw
// = 0, scanned by qp_query_scan_partials_s4. sel[i] becomes the sum of
// sel[0..i), sel[n] the total; every head (sel.a = 1: the first candidate
// of its (query, block)) writes its block's entry at slot = its scanned
// .a for qp_query_gather and the decoders: blk_term (the j-th term of its
// query), blk_idx (the block), o_off/d_off/f_off (the scanned postings,
// docID bytes, frequency bytes); the entry at slot total.a gets the ends.
// sel[n+1] = {the previous step's kept count (*prev: flag[n] of
// qp_and_compact; 0 when prev is NULL), cq[0], 0, 0}: the host copies
// sel[n..n+2) in one copy before its one wait of the step, and ends the
// steps when cq[0] (the first candidate's query) has no j-th or (j+1)-th
// list. Memory per candidate: reads and writes
// 32 bytes; heads read 8 + the query's metadata and write 32; per CTA the
// partials before it (raw) or one.
//
// qp_and_match (intersection + score). Grid ceil(n/1024) x 256, 4
// consecutive candidates per thread. Each candidate with a selected block
// is binary-searched in the decoded block; when found, the j-th term's
// score is added (exact float32, canonical order, as in query_and.cu). Its
// frequency comes from the decoded frequencies, or, when freqs is NULL
// (bp128 frequency blocks), by random access to its b-bit slot in the
// encoded block (Ding §8: frequencies only for the found candidates), with
// the block's count header, width, length and padding checked like the
// decoder does (errors counted in err[kErrFreqs]). flag = found; the tile's
// keep = 1 (keep-misses, the MaxScore OR of
// engine/gpu/orms.go): a miss adds nothing instead of dropping the
// candidate, qp_and_locate marks a candidate past the list's last block
// kPass instead of kDead, and flag = ms_keep (the candidate's bound can
// still reach the seed threshold of res0/cnt0, when given). The tile's
// flag sum goes to part. Memory per candidate: reads 24 bytes + for
// candidates in a block 16 bytes of offsets, ~7 docIDs, and either one
// decoded frequency or the block's 2-3 header bytes, its last byte and the
// 1-5 bytes of the slot (same cache lines for neighbours); writes 4-8.
//
// qp_and_compact (the flags' scan apply fused with the compaction). Grid
// ceil(n/1024) x 256, the tiles of qp_and_match (4 consecutive candidates
// per thread). flag holds the 0/1 flags of the n candidates (n+1 words),
// part the tiles' flag sums: raw (unscanned, np of them: each CTA sums
// those before its tile and all of them) or, with raw = 0, scanned by
// qp_query_scan_partials_u32 (part[tile] the kept candidates before the
// tile, part[np] all). A kept candidate i goes to its exclusive prefix
// sum of the flags (the CTA's block scan plus the tiles before); slots
// [kept, n) of the new arrays get kNone; flag[n] = kept (the exact count
// that the next step's wait reads), the flags themselves stay. Memory per
// candidate: reads 4 bytes (+12 kept), writes 12 kept or 4; per CTA np
// (raw) or 2 partials.

#include "query_params.cuh"

namespace qp_andstep {

using namespace qp_q;

constexpr u32 kPiece = kScanItems; // candidates per thread
constexpr u32 kTile = kScanTile;   // candidates per CTA
// spacing is the splitter spacing of Parallel Merge Find level l (1 is the
// finest): the piece of a thread, 8 threads, 2 warps, the tile.
__device__ __forceinline__ u32 spacing(u32 l) {
	return l <= 1 ? kPiece : l == 2 ? 8 * kPiece : l == 3 ? 64 * kPiece : kTile;
}

// lower_block: the first block b in [lo, hi) whose lastDoc is >= d, or hi.
__device__ __forceinline__ u32 lower_block(const u32 *sk, u32 lo, u32 hi, u32 d) {
	return lower_bound(lo, hi, d, [&](u32 b) { return last_doc(sk, b); });
}

// head: candidate i, in block b, is the first of its (query, block) (the
// rule of qp_and_locate's sel, which qp_and_select lists).
__device__ __forceinline__ bool head(u64 i, const u32 *__restrict__ cq, const u32 *__restrict__ blk, u32 b) {
	return b < kDead && (i == 0 || blk[i - 1] != b || cq[i - 1] != cq[i]);
}

// List is the j-th list of a candidate's query.
struct List {
	const u32 *sk;
	TermMeta t;
};

__device__ __forceinline__ List list_of(const TermMeta *__restrict__ terms, const uint8_t *__restrict__ post,
                                        const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms, u32 j,
                                        u32 q) {
	List l;
	l.t = terms[qterms[qmeta[q].toff + j].term];
	l.sk = skips(post, l.t);
	return l;
}

// Shared state of one locate tile: slot x is candidate tile0 + x; x = kTile
// is the next tile's first candidate (a right bound for the splitters).
struct Tile {
	u32 doc[kTile + 1];
	u32 q[kTile + 1]; // query, or kNone (absent, or its query has no term j)
	u32 res[kTile + 1]; // raw block (0..nb) once searched
};

// lr_range narrows [lo, hi) = [0, nb) to the Linear Regression safe range
// of the skip table (Ao et al. VLDB'11 §4.3 over the blocks' lastDocs; the
// model m = {Gamma, Beta, L, R} of intersect.LR, Beta as int32): with
// Pred(d) = (d * Gamma >> 32) - Beta, non-decreasing in d, and
// Pred(last[i]) - L <= i <= Pred(last[i]) + R for every block i, the first
// block whose lastDoc is >= d (i: last[i-1] < d <= last[i]) satisfies
// i >= Pred(last[i]) - L >= Pred(d) - L, and, when i >= 1, i - 1 <=
// Pred(last[i-1]) + R <= Pred(d) + R: so the search runs in
// [max(0, Pred(d) - L), min(nb, max(1, Pred(d) + R + 2))), and still
// returns nb when no block can hold d. A model {0, 0, 0, nb} is the whole
// table. (engine/gpu TestLRBlockRange checks this range for every kind of
// d.)
__device__ __forceinline__ void lr_range(const uint4 m, u32 d, u32 nb, u32 &lo, u32 &hi) {
	const long long p =
	    static_cast<long long>((static_cast<u64>(d) * m.x) >> 32) - static_cast<long long>(static_cast<int>(m.y));
	const long long a = p - static_cast<long long>(m.z), c = p + static_cast<long long>(m.w) + 2;
	hi = c < static_cast<long long>(nb) ? (c < 1 ? 1u : static_cast<u32>(c)) : nb;
	hi = hi < nb ? hi : nb;
	lo = a > 0 ? (a < static_cast<long long>(hi) ? static_cast<u32>(a) : hi) : 0;
}

__device__ __forceinline__ void search(Tile &s, const TermMeta *__restrict__ terms, const uint8_t *__restrict__ post,
                                       const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms,
                                       const uint4 *__restrict__ qlr, u32 j, u32 x, u32 parent) {
	const u32 q = s.q[x];
	if (q == kNone) return;
	const List l = list_of(terms, post, qmeta, qterms, j, q);
	u32 lo = 0, hi = l.t.nb;
	if (qlr != nullptr) lr_range(qlr[qmeta[q].toff + j], s.doc[x], l.t.nb, lo, hi);
	if (parent != 0) {
		const u32 a = x / parent * parent, b = a + parent;
		if (s.q[a] == q) lo = s.res[a];
		if (b <= kTile && s.q[b] == q) hi = s.res[b];
	}
	s.res[x] = lower_block(l.sk, lo, hi, s.doc[x]);
}

__device__ __forceinline__ void and_locate(const TermMeta *__restrict__ terms, const uint8_t *__restrict__ post,
                                           const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms,
                                           const uint4 *__restrict__ qlr, u32 j, u32 qactive, u32 n, u32 bs,
                                           u32 levels, u32 keep, const u32 *__restrict__ cdoc,
                                           const u32 *__restrict__ cq,
                                           u32 *__restrict__ blk, S4 *__restrict__ sel, S4 *__restrict__ part,
                                           u32 *__restrict__ qblocks, u32 *__restrict__ qpost) {
	__shared__ Tile s;
	__shared__ typename BlockSum<S4>::Scan::TempStorage tmp;
	const u64 t0 = static_cast<u64>(blockIdx.x) * kTile;
	for (u32 x = threadIdx.x; x <= kTile; x += kThreads) {
		const u64 i = t0 + x;
		u32 q = kNone, d = 0;
		if (i < n) {
			q = cq[i];
			d = cdoc[i];
		}
		s.q[x] = q < qactive ? q : kNone;
		s.doc[x] = d;
	}
	__syncthreads();
	if (levels == 0) {
		for (u32 x = threadIdx.x; x < kTile; x += kThreads) search(s, terms, post, qmeta, qterms, qlr, j, x, 0);
	} else {
		for (u32 l = levels; l >= 1; l--) {
			const u32 sp = spacing(l), parent = l == levels ? 0 : spacing(l + 1);
			for (u32 x = threadIdx.x * sp; x <= kTile; x += kThreads * sp)
				if (parent == 0 || x % parent != 0) search(s, terms, post, qmeta, qterms, nullptr, j, x, parent);
			__syncthreads();
		}
		// Merge each piece: its splitter is searched; the others start from
		// the block of their predecessor and end at the next splitter's.
		const u32 x0 = threadIdx.x * kPiece, r = x0 + kPiece;
		for (u32 x = x0 + 1; x < r; x++) {
			const u32 q = s.q[x];
			if (q == kNone) continue;
			const List l = list_of(terms, post, qmeta, qterms, j, q);
			const u32 d = s.doc[x];
			u32 lo = s.q[x - 1] == q ? s.res[x - 1] : 0;
			const u32 hi = s.q[r] == q ? s.res[r] : l.t.nb;
			if (lo < hi && last_doc(l.sk, lo) < d) lo = lower_block(l.sk, lo + 1, hi, d);
			s.res[x] = lo;
		}
	}
	__syncthreads();
	// Heads and outputs: thread t owns candidates 4t..4t+3 of the tile.
	S4 sum(0);
	for (u32 k = 0; k < kPiece; k++) {
		const u32 x = threadIdx.x * kPiece + k;
		const u64 i = t0 + x;
		if (i >= n) break;
		const u32 q = s.q[x];
		u32 b = kDead;
		S4 v(0);
		if (q == kNone) {
			// Absent (kNone) or passing (a query without a j-th term).
			b = cq[i] == kNone ? kDead : kPass;
		} else {
			const List l = list_of(terms, post, qmeta, qterms, j, q);
			const u32 r = s.res[x];
			if (r >= l.t.nb && keep != 0) b = kPass; // keep misses: past the list's last block
			if (r < l.t.nb) {
				b = r;
				bool first;
				if (x > 0) {
					first = s.q[x - 1] != q || s.res[x - 1] != r;
				} else if (i == 0) {
					first = true;
				} else {
					// The previous candidate lies in the previous tile.
					first = cq[i - 1] != q || find_block(l.sk, l.t.nb, cdoc[i - 1]) != r;
				}
				if (first) {
					const u32 vals = block_len(l.t, r, bs);
					v = S4(1, vals, doc_end(l.sk, r) - doc_start(l.sk, r), freq_end(l.sk, r) - freq_start(l.sk, r));
					atomicAdd(&qblocks[q], 1u);
					atomicAdd(&qpost[q], vals);
				}
			}
		}
		blk[i] = b;
		sel[i] = v;
		sum = sum + v;
	}
	S4 incl;
	typename BlockSum<S4>::Scan(tmp).InclusiveSum(sum, incl);
	if (threadIdx.x == kThreads - 1) part[blockIdx.x] = incl;
}

// ms_keep (keep-misses mode with a seed threshold, engine/gpu/orms.go):
// whether candidate q's partial score s after canonical term j, plus the
// maxima of its terms j+1..m-1 (QTerm.mx, folded with fadd in canonical
// order: fadd is monotone, so this bounds every completion), can still
// reach theta0, the k-th best term-0 score among the query's candidates
// (res0/cnt0: qp_query_topk's keys and counts after step 0; every
// candidate's full score is at least its term-0 score, so theta0 is at
// most the final k-th score). A bound strictly below theta0 cannot enter
// the top k, not even by docID. Without res0, or with fewer than k seed
// results, every candidate is kept.
__device__ __forceinline__ bool ms_keep(const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms,
                                        const u64 *__restrict__ res0, const u32 *__restrict__ cnt0, u32 q, u32 j,
                                        float s) {
	if (res0 == nullptr) return true;
	const QMeta m = qmeta[q];
	if (cnt0[q] < m.k || m.k == 0) return true;
	const float th = float_of_bits(~static_cast<u32>(res0[m.res + m.k - 1] >> 32));
	float bnd = s;
	for (u32 r = j + 1; r < m.m; r++) bnd = fadd(bnd, qterms[m.toff + r].mx);
	return bnd >= th;
}

__device__ __forceinline__ void and_match(const TermMeta *__restrict__ terms, const uint8_t *__restrict__ post,
                                          const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms, u32 j,
                                          u32 n, u32 bs, const float *__restrict__ norms, float k1p1,
                                          const u32 *__restrict__ cdoc, float *__restrict__ cscore,
                                          const u32 *__restrict__ cq, const u32 *__restrict__ blk,
                                          const S4 *__restrict__ ex, const u64 *__restrict__ o_off,
                                          const u32 *__restrict__ docs, const u32 *__restrict__ freqs,
                                          u32 *__restrict__ flag, u32 *__restrict__ part, u32 *__restrict__ err,
                                          u32 keep, const u64 *__restrict__ res0, const u32 *__restrict__ cnt0) {
	flag_tile(n, flag, part, [&](u64 i) -> u32 {
		const u32 b = blk[i];
		if (b == kDead) return 0;
		if (b == kPass) return keep == 0 ? 1u : static_cast<u32>(ms_keep(qmeta, qterms, res0, cnt0, cq[i], j, cscore[i]));
		const u32 slot = static_cast<u32>(ex[i].a) + (head(i, cq, blk, b) ? 0 : static_cast<u32>(-1));
		const u64 first = o_off[slot], end = o_off[slot + 1];
		const u32 d = cdoc[i];
		const u64 lo = lower_bound(first, end, d, [&](u64 p) { return docs[p]; });
		if (lo >= end || docs[lo] != d) {
			// A miss: AND drops the candidate; keep-misses adds nothing.
			return keep == 0 ? 0u : static_cast<u32>(ms_keep(qmeta, qterms, res0, cnt0, cq[i], j, cscore[i]));
		}
		const QTerm qt = qterms[qmeta[cq[i]].toff + j];
		u32 tf;
		if (freqs != nullptr) {
			tf = freqs[lo];
		} else {
			const TermMeta t = terms[qt.term];
			const u32 *sk = skips(post, t);
			const u32 fs = freq_start(sk, b);
			tf = bp128_freq(post + t.freq + fs, freq_end(sk, b) - fs, block_len(t, b, bs), static_cast<u32>(lo - first));
			if (tf == 0) {
				atomicAdd(&err[kErrFreqs], 1u);
				tf = 1;
			}
		}
		const float s = fadd(cscore[i], term(qt.idf, k1p1, tf, norms[d], qt.w));
		cscore[i] = s;
		return keep == 0 ? 1u : static_cast<u32>(ms_keep(qmeta, qterms, res0, cnt0, cq[i], j, s));
	});
}

__device__ __forceinline__ void and_select(const QMeta *__restrict__ qmeta, const QTerm *__restrict__ qterms, u32 j,
                                           u32 n, const u32 *__restrict__ cq, const u32 *__restrict__ blk, S4 *sel,
                                           const S4 *__restrict__ part, u32 raw, const u32 *__restrict__ prev,
                                           u32 *__restrict__ blk_term, u32 *__restrict__ blk_idx,
                                           u64 *__restrict__ d_off, u64 *__restrict__ f_off,
                                           u64 *__restrict__ o_off) {
	__shared__ typename BlockSum<S4>::Scan::TempStorage tmp;
	const S4 p = raw != 0 ? tile_prefix<S4>(part, blockIdx.x, tmp) : part[blockIdx.x];
	u64 base;
	S4 v[kPiece];
	S4 run = p + scan_piece<S4>(sel, n, base, v, tmp);
	for (u32 k = 0; k < kPiece; k++) {
		const u64 i = base + k;
		if (i >= n) break;
		sel[i] = run;
		if (v[k].a != 0) {
			const u32 slot = static_cast<u32>(run.a);
			blk_term[slot] = qterms[qmeta[cq[i]].toff + j].term;
			blk_idx[slot] = blk[i];
			o_off[slot] = run.b;
			d_off[slot] = run.c;
			f_off[slot] = run.d;
		}
		run = run + v[k];
		if (i + 1 == n) {
			sel[n] = run;
			const u32 slot = static_cast<u32>(run.a);
			o_off[slot] = run.b;
			d_off[slot] = run.c;
			f_off[slot] = run.d;
			sel[n + 1] = S4(prev != nullptr ? static_cast<u64>(*prev) : 0, cq[0], 0, 0);
		}
	}
}

__device__ __forceinline__ void and_compact(u32 n, u32 *__restrict__ flag, const u32 *__restrict__ part, u32 np,
                                            u32 raw, const u32 *__restrict__ cdoc,
                                            const float *__restrict__ cscore, const u32 *__restrict__ cq,
                                            u32 *__restrict__ ndoc, float *__restrict__ nscore,
                                            u32 *__restrict__ nq) {
	__shared__ typename BlockSum<u32>::Scan::TempStorage tmp;
	// before: the kept candidates of the tiles before this one; kept: of all.
	u32 before, kept;
	if (raw != 0) {
		u32 sb = 0, sa = 0;
		for (u32 t = threadIdx.x; t < np; t += kThreads) {
			const u32 v = part[t];
			sa += v;
			if (t < blockIdx.x) sb += v;
		}
		before = block_total<u32>(sb, tmp);
		kept = block_total<u32>(sa, tmp);
	} else {
		before = part[blockIdx.x];
		kept = part[np];
	}
	u64 base;
	u32 v[kScanItems];
	u32 o = before + scan_piece<u32>(flag, n, base, v, tmp);
	for (u32 j = 0; j < kScanItems; j++) {
		const u64 i = base + j;
		if (i >= n) break;
		if (v[j] != 0) {
			ndoc[o] = cdoc[i];
			nscore[o] = cscore[i];
			nq[o] = cq[i];
		}
		o += v[j];
		if (i >= kept) nq[i] = kNone;
	}
	if (blockIdx.x == 0 && threadIdx.x == 0) flag[n] = kept;
}

} // namespace qp_andstep

extern "C" __global__ void __launch_bounds__(256)
qp_and_locate(const qp_q::TermMeta *terms, const uint8_t *post, const qp_q::QMeta *qmeta, const qp_q::QTerm *qterms,
              const uint4 *qlr, qp_q::u32 j, qp_q::u32 qactive, qp_q::u32 n, qp_q::u32 bs, qp_q::u32 levels,
              qp_q::u32 keep, const qp_q::u32 *cdoc, const qp_q::u32 *cq, qp_q::u32 *blk, qp_q::S4 *sel,
              qp_q::S4 *part, qp_q::u32 *qblocks, qp_q::u32 *qpost) {
	qp_andstep::and_locate(terms, post, qmeta, qterms, qlr, j, qactive, n, bs, levels, keep, cdoc, cq, blk,
	                       sel, part, qblocks, qpost);
}
QP_EMU_REGISTER(qp_and_locate)
static_assert(std::is_same<decltype(&qp_and_locate), QP_SIGNATURE_AndLocateParams>::value,
              "qp_and_locate's parameters differ from AndLocateParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_and_match(const qp_q::TermMeta *terms, const uint8_t *post, const qp_q::QMeta *qmeta, const qp_q::QTerm *qterms,
             qp_q::u32 j, qp_q::u32 n, qp_q::u32 bs, const float *norms, float k1p1, const qp_q::u32 *cdoc,
             float *cscore, const qp_q::u32 *cq, const qp_q::u32 *blk, const qp_q::S4 *ex, const qp_q::u64 *o_off,
             const qp_q::u32 *docs, const qp_q::u32 *freqs, qp_q::u32 *flag, qp_q::u32 *part, qp_q::u32 *err,
             qp_q::u32 keep, const qp_q::u64 *res0, const qp_q::u32 *cnt0) {
	qp_andstep::and_match(terms, post, qmeta, qterms, j, n, bs, norms, k1p1, cdoc, cscore, cq, blk, ex, o_off, docs,
	                      freqs, flag, part, err, keep, res0, cnt0);
}
QP_EMU_REGISTER(qp_and_match)
static_assert(std::is_same<decltype(&qp_and_match), QP_SIGNATURE_AndMatchParams>::value,
              "qp_and_match's parameters differ from AndMatchParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_and_select(const qp_q::QMeta *qmeta, const qp_q::QTerm *qterms, qp_q::u32 j, qp_q::u32 n, const qp_q::u32 *cq,
              const qp_q::u32 *blk, qp_q::S4 *sel, const qp_q::S4 *part, qp_q::u32 raw, const qp_q::u32 *prev,
              qp_q::u32 *blk_term, qp_q::u32 *blk_idx, qp_q::u64 *d_off, qp_q::u64 *f_off, qp_q::u64 *o_off) {
	qp_andstep::and_select(qmeta, qterms, j, n, cq, blk, sel, part, raw, prev, blk_term, blk_idx, d_off, f_off, o_off);
}
QP_EMU_REGISTER(qp_and_select)
static_assert(std::is_same<decltype(&qp_and_select), QP_SIGNATURE_AndSelectParams>::value,
              "qp_and_select's parameters differ from AndSelectParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_and_compact(qp_q::u32 n, qp_q::u32 *flag, const qp_q::u32 *part, qp_q::u32 np, qp_q::u32 raw, const qp_q::u32 *cdoc,
               const float *cscore, const qp_q::u32 *cq, qp_q::u32 *ndoc, float *nscore, qp_q::u32 *nq) {
	qp_andstep::and_compact(n, flag, part, np, raw, cdoc, cscore, cq, ndoc, nscore, nq);
}
QP_EMU_REGISTER(qp_and_compact)
static_assert(std::is_same<decltype(&qp_and_compact), QP_SIGNATURE_AndCompactParams>::value,
              "qp_and_compact's parameters differ from AndCompactParams (cuda/kern/layout.go)");
