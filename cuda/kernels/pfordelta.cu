// pfordelta.cu — GPU decoding of PForDelta blocks (compress/pfordelta.go,
// Ding, He, Yan & Suel WWW'09 §6), many blocks of many lists per launch,
// into absolute docIDs or frequencies (decode.cuh).
//
// Format of one index block of m <= 128 values (the codec's 512-value
// sub-blocks and their exception-offset tables only exist for m > 512, so a
// block is one sub-block at every level and no offsets are stored):
//
//	uvarint(m), then for m > 0 PATCHED(m, level 0):
//	  byte b, uvarint e (<= m), ceil(m*b/8) bytes of b-bit slots (the low b
//	  bits of every value), then, if e > 0 (b < 32), H = PATCHED(e, 1) (the
//	  exceptions' high parts, value = slot | H[x] << b, 1 <= H[x] < 2^(32-b))
//	  and G = PATCHED(e, 1) (position gaps: pos[x] = pos[x-1] + 1 + G[x],
//	  pos[-1] = -1, pos < the array's length);
//	PATCHED(k, 1) is the same with FLAT(e') children: byte b', then e'
//	  values of b' bits.
//
// Decoding (Ding §6, groups of 16 lanes or a warp per block instead of one
// thread block per 512-value sub-block): in phase 1 each lane parses the 7
// parts of its own block (their widths, counts and bit offsets go to the
// block's record). In phase 2 most blocks (at most 32 exceptions, level-1
// arrays of at most 16 exceptions each: every block compress's encoder
// writes, "Choice of b") are decoded by a group of 16 lanes, two blocks per
// warp step (decode.cuh groups, values_g): lane t reads H[x] and G[x] of its
// exceptions x = 2t, 2t+1 and its 8 level-0 slots, all loads issued together
// (and the level-1 arrays' own exceptions, when there are some); the
// exception positions are the group's localized prefix sum of G[x]+1, and the
// high parts are ORed in through shared memory. The other blocks (written
// before that bound, or by another writer) are decoded by the whole warp
// (values), the level-1 arrays H and G completely first ("we always
// decompress the complete arrays for the exceptions"), each as slots plus its
// own exceptions, then the level-0 exceptions: blocks of at most 64
// exceptions from registers, every load issued at once, the rest array by
// array through shared memory (exceptions). The docID prefix sum is
// decode.cuh's.
//
// Launch shape: persistent grid of CTAs of 256 threads (8 warps), at least 4
// CTAs per SM (64 registers); static shared memory 38912 bytes per CTA (per
// warp: 32 block records for phase 1 (decode.cuh), 512 bytes of values, 1
// KiB for H and G, which the two groups' 512-byte arrays overlay). Phase 1:
// one block per lane (the 7 parts parsed and their lengths checked); phase 2:
// one block per group, or per warp. Memory traffic per decoded integer: the
// block's bytes once (b/8 bytes of slots plus the exception arrays, the
// encoder's minimal size; the header line read in phase 1, the rest
// prefetched into L2 and read through L1 in phase 2), 20 bytes of offsets
// and base per block (0.16 per integer, coalesced), 4 bytes written (16-byte
// stores).
//
// Validation matches compress Decode + the index's block-length and
// last-docID checks: widths <= 32, exception counts <= their array, no
// exceptions at width 32, lengths exact (no trailing bytes), zero padding,
// every gap keeping the position inside its array, every high part in
// [1, 2^(32-b)).

#include "decode.cuh"

namespace qp_pfd {

using namespace qp_dec;

// Part is one parsed array: m values of b-bit slots at bit sp of the block,
// with e exceptions (PATCHED) or none (FLAT).
struct Part {
	u32 m, b, e;
	u32 sp;
};

// parse reads the array of m values at level `level` (0, 1: PATCHED; 2:
// FLAT) at byte pos and advances pos past its slots.
__device__ __forceinline__ u32 parse(const View &v, u32 &pos, u32 level, u32 m, Part &p) {
	p.m = m;
	p.e = 0;
	p.b = 0;
	p.sp = 0;
	if (pos >= v.len) return kTruncated;
	p.b = v.byte(pos++);
	if (p.b > 32) return kBadWidth;
	if (level < 2) {
		if (!uv_small(v, pos, m, p.e)) return kBadCount;
		if (p.e > 0 && p.b == 32) return kBadException;
	}
	const u32 nbits = m * p.b;
	const u32 nb = (nbits + 7) >> 3;
	if (nb > v.len - pos) return kTruncated;
	p.sp = pos * 8;
	pos += nb;
	if ((nbits & 7) && (v.byte(pos - 1) >> (nbits & 7))) return kBadPadding;
	return 0;
}

// bad_exception is whether an exception with high part h and gap g of an
// array of k values of b-bit slots is out of range: its gap must keep it
// inside the array and its high part lie in [1, 2^(32-b)). patch() and the
// groups' values_g check every exception with it (the position itself is
// checked after the prefix sum).
__device__ __forceinline__ bool bad_exception(u32 h, u32 g, u32 k, u32 b) {
	return g >= k || h == 0 || (b > 0 && (h >> (32 - b)));
}

// patch ORs the ne exceptions of an array of k values of b-bit slots, held
// in arr (shared memory), into arr: exception x has high part hget(x) and
// gap gget(x). Lane l owns exceptions PER*l .. PER*l+PER-1 (ne <= 32*PER;
// values() uses PER = 4). Returns 0 or kBadException.
template <int PER, class HG, class GG>
__device__ __forceinline__ u32 patch(u32 *arr, u32 k, u32 ne, u32 b, u32 lane, HG hget, GG gget) {
	u32 code = 0, h[PER], c[PER], acc = 0;
#pragma unroll
	for (int j = 0; j < PER; j++) {
		const u32 x = lane * PER + j;
		h[j] = 0;
		if (x < ne) {
			const u32 g = gget(x);
			h[j] = hget(x);
			if (bad_exception(h[j], g, k, b)) code = kBadException;
			acc += g + 1;
		}
		c[j] = acc;
	}
	const u32 ex = excl_sum1(acc);
#pragma unroll
	for (int j = 0; j < PER; j++) {
		const u32 x = lane * PER + j;
		const u32 pos = ex + c[j] - 1;
		if (x < ne) {
			if (pos >= k) {
				code = kBadException;
			} else {
				arr[pos] |= h[j] << b;
			}
		}
	}
	return code;
}

// flat returns value y of a FLAT (or level-1 slot) array of part p.
__device__ __forceinline__ u32 flat(const View &v, const Part &p, u32 y) {
	return p.b ? v.field(p.sp + y * p.b, p.b, wmask(p.b)) : 0;
}

// level1 decodes the level-1 array a (a.m values) with FLAT children ah
// (high parts) and ag (gaps) into arr.
template <int PER>
__device__ __forceinline__ u32 level1(const View &v, const Part &a, const Part &ah, const Part &ag, u32 *arr,
                                      u32 lane) {
#pragma unroll
	for (int j = 0; j < PER; j++) {
		const u32 x = lane * PER + j;
		if (x < a.m) arr[x] = flat(v, a, x);
	}
	__syncwarp();
	if (a.e == 0) return 0;
	return patch<PER>(
	    arr, a.m, a.e, a.b, lane, [&](u32 y) { return flat(v, ah, y); }, [&](u32 y) { return flat(v, ag, y); });
}

// kLevel0First: values() issues the level-0 loads before the level-1 ones
// (sm_80, where the other order spills; see values).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
constexpr bool kLevel0First = true;
#else
constexpr bool kLevel0First = false;
#endif

// Record: for each of the 7 parts, b | e << 8 and the slots' bit offset: p0
// at h[0..1]; then for H (a = 0) and G (a = 1): the level-1 array at
// h[2+6a..], its FLAT high parts at h[4+6a..] and its FLAT gaps at h[6+6a..].
// The level-0 slots are cut with unpack4 (decode.cuh: one or two word loads
// per lane for b <= 8) instead of one field() per value: the "pfordelta-u4"
// variant before it was promoted (2026-11-22, H200: +3..8% from 2^20 to
// 2^26, within -2% below; docs/GPU-DECODE.md).
struct Codec {
	static constexpr bool kSorted = false;
	static constexpr bool kCheck = true;
	static constexpr int kHdr = 14;
	// H and G (values()), or with vals the groups' arrays (decode.cuh):
	// per group, 128 words for the level-0 values.
	static constexpr u32 kGroupArr = kMaxValues;
	static constexpr int kAux = 2 * kMaxValues;
	static constexpr bool kGroup = true;

	__device__ __forceinline__ static void put(u32 *h, const Part &p) {
		h[0] = p.b | p.e << 8;
		h[1] = p.sp;
	}
	__device__ __forceinline__ static Part get(const u32 *h, u32 m) {
		Part p;
		const u32 be = h[0];
		p.m = m;
		p.b = be & 0xff;
		p.e = be >> 8;
		p.sp = h[1];
		return p;
	}

	__device__ __forceinline__ static u32 header(const View &v, u32 m, u32 *h) {
		const u32 hdr = count_header(v, m);
		if (!hdr) return kBadCount;
		u32 pos = hdr;
		if (m == 0) return pos != v.len ? kTrailing : 0;
		Part p0;
		u32 code = parse(v, pos, 0, m, p0);
		if (code) return code;
		put(h, p0);
		if (p0.e) {
			for (int a = 0; a < 2; a++) {
				Part p1, ph, pg;
				if ((code = parse(v, pos, 1, p0.e, p1))) return code;
				put(h + 2 + 6 * a, p1);
				if (p1.e) {
					if ((code = parse(v, pos, 2, p1.e, ph))) return code;
					if ((code = parse(v, pos, 2, p1.e, pg))) return code;
					put(h + 4 + 6 * a, ph);
					put(h + 6 + 6 * a, pg);
				}
			}
		}
		return pos != v.len ? kTrailing : 0;
	}

	// exceptions patches the level-0 values x with the e0 exceptions.
	template <int PER, class S>
	__device__ __forceinline__ static u32 exceptions(const View &v, u32 m, const u32 *h, const Part &p0, u32 (&x)[4],
	                                                 S &sm, u32 lane) {
		u32 *H = sm.aux, *G = sm.aux + kMaxValues;
		u32 code = 0;
#pragma unroll
		for (int a = 0; a < 2; a++) {
			const Part p1 = get(h + 2 + 6 * a, p0.e);
			Part ph, pg;
			if (p1.e) {
				ph = get(h + 4 + 6 * a, p1.e);
				pg = get(h + 6 + 6 * a, p1.e);
			}
			code = qmax(code, level1<PER>(v, p1, ph, pg, a ? G : H, lane));
		}
		stage4(sm.vals, lane, x);
		__syncwarp();
		code = qmax(code, patch<PER>(
		                      sm.vals, m, p0.e, p0.b, lane, [&](u32 y) { return H[y]; }, [&](u32 y) { return G[y]; }));
		__syncwarp();
		unstage4(sm.vals, lane, x);
		return code;
	}

	// values decodes a block with the whole warp: the blocks the groups
	// decline (values_g), and any block whose check failed there, which
	// values() then reports with its exact code. Most declined blocks (all
	// of the 2^24 benchmark list's) have at most 64 exceptions and level-1
	// arrays of at most 32 exceptions each: the register path (reg) below;
	// the rest take exceptions<4>.
	//
	// The register path issues every load of the block before it uses
	// any: lane l reads H's and G's level-1 slots 2l and 2l+1, their
	// level-2 high parts and gaps y = l, and its four level-0 slots.
	// (Decoding H, then G, then patching level 0, each after a __syncwarp,
	// made each array's loads wait for the previous array's: the warp path
	// was 15% of the instructions but a third of the warps' time at 2^24,
	// run 80 of docs/GPU-TESTS.md; the register path made PForDelta 6-14%
	// faster, run 86.) Then one warp scan serves both level-1 arrays (the
	// position sums of H in the low 16 bits, of G in the high 16: at most
	// 32 exceptions of gap < 256 each, larger gaps being rejected anyway),
	// the exceptions' high parts are ORed into the level-1 values through
	// shared memory, and a second scan places the level-0 exceptions (lane
	// l: 2l, 2l+1).
	template <class S>
	__device__ __forceinline__ static u32 values(const View &v, u32 m, const u32 *h, u32 (&x)[4], S &sm, u32 lane) {
		const Part p0 = get(h, m);
		// H (a = 0) and G (a = 1): the level-1 array p1, its FLAT high
		// parts ph and gaps pg; n2: its exceptions (records of ph and pg
		// exist only when there are some).
		Part p1[2], ph[2], pg[2];
		u32 n2[2];
#pragma unroll
		for (int a = 0; a < 2; a++) {
			p1[a] = get(h + 2 + 6 * a, p0.e);
			n2[a] = p0.e ? p1[a].e : 0;
			ph[a] = get(h + 4 + 6 * a, n2[a]);
			pg[a] = get(h + 6 + 6 * a, n2[a]);
		}
		const bool reg = p0.e <= 64 && n2[0] <= 32 && n2[1] <= 32;
		const u32 n1 = reg && p0.e > 2 * lane ? qmin(2, p0.e - 2 * lane) : 0; // level-1 values 2l, 2l+1
		// The level-1 loads go first: unpack4 cuts the slots behind a
		// branch, which these loads would otherwise wait for (1-2% at 2^24
		// and 2^26, run 90). On sm_80 that order spills 8 bytes at 64
		// registers, so level 0 goes first there.
		if (kLevel0First) unpack4(v, p0.sp + lane * 4 * p0.b, p0.b, lane_count(m, lane), x);
		u32 s1[2][2], hi2[2][1], ga2[2][1];
#pragma unroll
		for (int a = 0; a < 2; a++) {
			const u32 on2 = reg && lane < n2[a];
			load_fields(v, p1[a].sp + 2 * lane * p1[a].b, p1[a].b, n1, s1[a]);
			load_fields(v, ph[a].sp + lane * ph[a].b, ph[a].b, on2, hi2[a]);
			load_fields(v, pg[a].sp + lane * pg[a].b, pg[a].b, on2, ga2[a]);
		}
		if (!kLevel0First) unpack4(v, p0.sp + lane * 4 * p0.b, p0.b, lane_count(m, lane), x);
		if (p0.e == 0) return 0;
		if (!reg) return exceptions<4>(v, m, h, p0, x, sm, lane);

		u32 *H = sm.aux, *G = sm.aux + kMaxValues;
		reinterpret_cast<uint2 *>(H)[lane] = make_uint2(s1[0][0], s1[0][1]);
		reinterpret_cast<uint2 *>(G)[lane] = make_uint2(s1[1][0], s1[1][1]);
		stage4(sm.vals, lane, x);
		// Level 1: exception y = lane of H and of G.
		u32 code = 0, acc = 0;
#pragma unroll
		for (int a = 0; a < 2; a++) {
			if (lane < n2[a]) {
				if (bad_exception(hi2[a][0], ga2[a][0], p0.e, p1[a].b)) code = kBadException;
				acc += (qmin(ga2[a][0], 255) + 1) << (16 * a);
			}
		}
		const u32 pos1 = incl_sum(acc);
		__syncwarp();
#pragma unroll
		for (int a = 0; a < 2; a++) {
			const u32 pos = (pos1 >> (16 * a) & 0xffff) - 1;
			if (lane < n2[a]) {
				if (pos >= p0.e)
					code = kBadException;
				else
					(a ? G : H)[pos] |= hi2[a][0] << p1[a].b;
			}
		}
		__syncwarp();
		// Level 0: exceptions 2l and 2l+1, high part H[x], gap G[x]. This
		// is patch<2> with H and G read as pairs, written out: calling
		// patch, and sharing the level-1 scan with values_g, was 0.5-1.3%
		// slower (run 96), and at the 64-register cap either alone spilled
		// on sm_80.
		const uint2 hv = reinterpret_cast<const uint2 *>(H)[lane], gv = reinterpret_cast<const uint2 *>(G)[lane];
		const u32 hx[2] = {hv.x, hv.y}, gx[2] = {gv.x, gv.y};
		u32 c[2];
		acc = 0;
#pragma unroll
		for (int j = 0; j < 2; j++) {
			if (static_cast<u32>(j) < n1) {
				if (bad_exception(hx[j], gx[j], m, p0.b)) code = kBadException;
				acc += gx[j] + 1;
			}
			c[j] = acc;
		}
		const u32 ex = excl_sum1(acc);
#pragma unroll
		for (int j = 0; j < 2; j++) {
			const u32 pos = ex + c[j] - 1;
			if (static_cast<u32>(j) < n1) {
				if (pos >= m)
					code = kBadException;
				else
					sm.vals[pos] |= hx[j] << p0.b;
			}
		}
		__syncwarp();
		unstage4(sm.vals, lane, x);
		return code;
	}

	// values_g (decode.cuh, groups) takes blocks of at most 32 exceptions
	// whose level-1 arrays have at most 16 exceptions each: lane t of the
	// group reads H[x] and G[x] for its exceptions x = 2t, 2t+1 with
	// load_fields, the loads issued together with its level-0 slots', then
	// the positions are the group's prefix sum of G[x]+1 and the high parts
	// are ORed in through the group's array. Level-1 exceptions (2.8% of
	// the blocks of the 2^24 benchmark list) take a branch that the warp
	// skips when neither group's block has any. It declines the other
	// blocks (more than 32 exceptions: 3.3%) and any block a check rejects,
	// which values() then decodes or rejects with its code. (Measured, run
	// numbers of docs/GPU-TESTS.md: taking level-1 exceptions by a walk over
	// their list, run 66, was 1-3% slower; by the branch below, run 91, +1 to
	// +4% from 2^20 to 2^24 and at 2^26, -1% at 2^25, -2% at 2^14; also
	// taking blocks of up to 64 exceptions, as two halves of 32, run 92,
	// was 2% slower at 2^24.)
	__device__ __forceinline__ static bool values_g(const View &v, u32 m, const u32 *h, u32 (&x)[kGroupValues],
	                                                u32 lane, u32 *arr, bool act) {
		constexpr int kE = 32 / kGroupLanes; // exceptions per lane
		const u32 t = lane % kGroupLanes;
		Part p0 = get(h, m);
		if (!act) p0.e = 0;
		// H's and G's records exist only when there are exceptions.
		const Part ph = get(h + 2, p0.e), pg = get(h + 8, p0.e);
		// Level-1 exceptions: at most one per lane of the group in each.
		const u32 e1h = p0.e ? ph.e : 0, e1g = p0.e ? pg.e : 0;
		const bool take = act && p0.e <= kE * kGroupLanes && e1h <= kGroupLanes && e1g <= kGroupLanes;
		const u32 ne = take && p0.e > kE * t ? qmin(kE, p0.e - kE * t) : 0;
		u32 hx[kE], gx[kE], bad = 0;
		load_fields(v, ph.sp + kE * t * ph.b, ph.b, ne, hx);
		load_fields(v, pg.sp + kE * t * pg.b, pg.b, ne, gx);
		unpack_g(v, p0.sp + t * kGroupValues * p0.b, p0.b, take ? group_count(m, t) : 0, x);
		if (__any_sync(kFull, take && (e1h | e1g))) {
			// Some group's H or G has exceptions of its own (2.8% of the
			// 2^24 benchmark list's blocks): lane t reads their high part
			// and gap y = t from the FLAT arrays, one scan of the group
			// places both (H's position sums in the low 16 bits, G's in
			// the high 16; gaps over 255 are rejected anyway), and the
			// high parts are ORed into H[x] and G[x], which the lanes hold
			// in registers (x = kE*t + k), through the group's array.
			const bool onh = take && t < e1h, ong = take && t < e1g;
			// H's FLAT high parts and gaps, then G's (their records exist
			// only when the array has exceptions).
			const Part fhh = get(h + 4, e1h), fhg = get(h + 6, e1h), fgh = get(h + 10, e1g), fgg = get(h + 12, e1g);
			u32 hiH[1], gapH[1], hiG[1], gapG[1];
			load_fields(v, fhh.sp + t * fhh.b, fhh.b, onh, hiH);
			load_fields(v, fhg.sp + t * fhg.b, fhg.b, onh, gapH);
			load_fields(v, fgh.sp + t * fgh.b, fgh.b, ong, hiG);
			load_fields(v, fgg.sp + t * fgg.b, fgg.b, ong, gapG);
			u32 acc = 0;
			if (onh) {
				if (bad_exception(hiH[0], gapH[0], p0.e, ph.b)) bad = 1;
				acc += qmin(gapH[0], 255) + 1;
			}
			if (ong) {
				if (bad_exception(hiG[0], gapG[0], p0.e, pg.b)) bad = 1;
				acc += (qmin(gapG[0], 255) + 1) << 16;
			}
			const u32 pos = gincl(acc, t);
			u32 *ah = arr, *ag = arr + kE * kGroupLanes;
#pragma unroll
			for (int k = 0; k < kE; k++) {
				ah[kE * t + k] = hx[k];
				ag[kE * t + k] = gx[k];
			}
			__syncwarp();
			const u32 ph1 = (pos & 0xffff) - 1, pg1 = (pos >> 16) - 1;
			if (onh) {
				if (ph1 >= p0.e)
					bad = 1;
				else
					ah[ph1] |= hiH[0] << ph.b;
			}
			if (ong) {
				if (pg1 >= p0.e)
					bad = 1;
				else
					ag[pg1] |= hiG[0] << pg.b;
			}
			__syncwarp();
#pragma unroll
			for (int k = 0; k < kE; k++) {
				hx[k] = ah[kE * t + k];
				gx[k] = ag[kE * t + k];
			}
			__syncwarp(); // the array holds the level-0 values next
		}
		// Exception kE*t+k: high part hx[k], gap gx[k]; position = the
		// group's exclusive sum of G+1 before it, plus its own, minus 1.
		u32 c[kE], acc = 0;
#pragma unroll
		for (int k = 0; k < kE; k++) {
			if (static_cast<u32>(k) < ne) {
				if (bad_exception(hx[k], gx[k], m, p0.b)) bad = 1;
				acc += gx[k] + 1;
			}
			c[k] = acc;
		}
		const u32 ex = gincl(acc, t) - acc;
		if (__any_sync(kFull, ne > 0)) {
			// The array holds quad q of lane t at uint4 q*kGroupLanes + t,
			// so that a quarter warp's 16-byte accesses hit distinct banks.
			uint4 *a4 = reinterpret_cast<uint4 *>(arr) + t;
#pragma unroll
			for (int q = 0; q < kGroupQuads; q++)
				a4[q * kGroupLanes] = make_uint4(x[4 * q], x[4 * q + 1], x[4 * q + 2], x[4 * q + 3]);
			__syncwarp();
#pragma unroll
			for (int k = 0; k < kE; k++) {
				const u32 pos = ex + c[k] - 1;
				if (static_cast<u32>(k) < ne) {
					if (pos >= m)
						bad = 1;
					else
						arr[((pos % kGroupValues) / 4 * kGroupLanes + pos / kGroupValues) * 4 + pos % 4] |=
						    hx[k] << p0.b;
				}
			}
			__syncwarp();
#pragma unroll
			for (int q = 0; q < kGroupQuads; q++) {
				const uint4 r = a4[q * kGroupLanes];
				x[4 * q] = r.x;
				x[4 * q + 1] = r.y;
				x[4 * q + 2] = r.z;
				x[4 * q + 3] = r.w;
			}
		}
		return !group_any(bad, lane) && take;
	}
};

} // namespace qp_pfd

// At least 4 CTAs per SM. Compiled for 5 (a 48-register cap with 16 bytes
// of spill: the "pfordelta-u4o5" variant, 2026-11-22) it was 2.6% faster
// at 2^26 (302.8 vs 295.1 G ints/s) but slower at every other length
// measured, by 2-13% (docs/GPU-DECODE.md), so the cap stays at 4.
QP_DECODE_KERNEL(qp_decode_pfordelta, qp_pfd::Codec, 8, 4)
