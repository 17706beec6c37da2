// query_blocks.cu — preparing index blocks for the batch decoders of
// cuda/kern/decode.go. Those decode block i from src[src_off[i], src_off[i+1]),
// i.e. the blocks of one launch must lie back to back, while the blocks a
// query step needs lie in many lists of the device-resident index (and, for
// AND, only some blocks of each). So a launch set first lists its blocks
// (blkTerm[k], blkIdx[k]: block blkIdx[k] of term blkTerm[k]) with their
// offsets in contiguous staging buffers, then copies them there:
//
// qp_query_full_desc lists every block of nseg whole posting lists (Seg,
// query.cuh: OR lists, the shortest list of an AND query). Launch: grid
// ceil(nblk/256) x 256 threads, thread k = block k; it finds its segment by
// binary search over the segments' first blocks and reads two skip entries.
// Writes blkTerm, blkIdx, dOff, fOff (staged byte offsets) and oOff (value
// offsets), nblk+1 entries for the three offset arrays (the last thread
// writes the end offsets). Memory: ~40 bytes read and 28 written per block.
//
// qp_query_gather copies each listed block's encoded docIDs (and, unless
// fOff is NULL, its encoded frequencies) from the resident postings to
// gdocs[dOff[k]..dOff[k+1]) (gfreqs[fOff[k]..]), and writes the decoder's
// base[k] (previous block's last docID + 1, 0 for block 0) and last[k] (the
// block's last docID, checked by the decoder like index.List.DecodeDocs).
// Launch: grid ceil(nblk/8) x 256 threads, one warp per block, lanes copying
// consecutive bytes (coalesced 32-byte segments). Memory: the block's
// encoded bytes read once and written once, 16+8 bytes of skip entries
// read, 8 bytes of base/last written.

#include "query_params.cuh"

namespace qp_q {

__device__ __forceinline__ void full_desc(const Seg *__restrict__ segs, u32 nseg, const TermMeta *__restrict__ terms,
                                          const uint8_t *__restrict__ post, u32 nblk, u32 bs,
                                          u32 *__restrict__ blk_term, u32 *__restrict__ blk_idx,
                                          u64 *__restrict__ d_off, u64 *__restrict__ f_off,
                                          u64 *__restrict__ o_off) {
	for (u32 k = blockIdx.x * kThreads + threadIdx.x; k < nblk; k += gridDim.x * kThreads) {
		const u32 s = seg_of(nseg, k, [&](u32 i) { return static_cast<u64>(segs[i].blk0); });
		const Seg g = segs[s];
		const TermMeta t = terms[g.term];
		const u32 *sk = skips(post, t);
		const u32 b = k - g.blk0;
		blk_term[k] = g.term;
		blk_idx[k] = b;
		d_off[k] = g.d0 + doc_start(sk, b);
		f_off[k] = g.f0 + freq_start(sk, b);
		o_off[k] = g.v0 + static_cast<u64>(b) * bs;
		if (k + 1 == nblk) {
			d_off[nblk] = g.d0 + doc_end(sk, b);
			f_off[nblk] = g.f0 + freq_end(sk, b);
			o_off[nblk] = g.v0 + t.df;
		}
	}
}

__device__ __forceinline__ void copy_bytes(uint8_t *__restrict__ dst, const uint8_t *__restrict__ src, u32 n,
                                           u32 lane) {
	for (u32 i = lane; i < n; i += 32) dst[i] = src[i];
}

__device__ __forceinline__ void gather(const TermMeta *__restrict__ terms, const uint8_t *__restrict__ post,
                                       u32 nblk, const u32 *__restrict__ blk_term,
                                       const u32 *__restrict__ blk_idx, const u64 *__restrict__ d_off,
                                       const u64 *__restrict__ f_off, uint8_t *__restrict__ gdocs,
                                       uint8_t *__restrict__ gfreqs, u32 *__restrict__ base,
                                       u32 *__restrict__ last) {
	const u32 lane = threadIdx.x & 31;
	const u32 warps = gridDim.x * (kThreads / 32);
	for (u32 k = blockIdx.x * (kThreads / 32) + (threadIdx.x >> 5); k < nblk; k += warps) {
		const TermMeta t = terms[blk_term[k]];
		const u32 *sk = skips(post, t);
		const u32 b = blk_idx[k];
		const u32 ds = doc_start(sk, b);
		copy_bytes(gdocs + d_off[k], post + t.doc + ds, static_cast<u32>(d_off[k + 1] - d_off[k]), lane);
		if (f_off != nullptr) {
			const u32 fs = freq_start(sk, b);
			copy_bytes(gfreqs + f_off[k], post + t.freq + fs, static_cast<u32>(f_off[k + 1] - f_off[k]), lane);
		}
		if (lane == 0) {
			base[k] = b ? last_doc(sk, b - 1) + 1 : 0;
			last[k] = last_doc(sk, b);
		}
	}
}

} // namespace qp_q

extern "C" __global__ void __launch_bounds__(256)
qp_query_full_desc(const qp_q::Seg *segs, qp_q::u32 nseg, const qp_q::TermMeta *terms, const uint8_t *post,
                   qp_q::u32 nblk, qp_q::u32 bs, qp_q::u32 *blk_term, qp_q::u32 *blk_idx, qp_q::u64 *d_off,
                   qp_q::u64 *f_off, qp_q::u64 *o_off) {
	qp_q::full_desc(segs, nseg, terms, post, nblk, bs, blk_term, blk_idx, d_off, f_off, o_off);
}
QP_EMU_REGISTER(qp_query_full_desc)
static_assert(std::is_same<decltype(&qp_query_full_desc), QP_SIGNATURE_FullDescParams>::value,
              "qp_query_full_desc's parameters differ from FullDescParams (cuda/kern/layout.go)");

extern "C" __global__ void __launch_bounds__(256)
qp_query_gather(const qp_q::TermMeta *terms, const uint8_t *post, qp_q::u32 nblk, const qp_q::u32 *blk_term,
                const qp_q::u32 *blk_idx, const qp_q::u64 *d_off, const qp_q::u64 *f_off, uint8_t *gdocs,
                uint8_t *gfreqs, qp_q::u32 *base, qp_q::u32 *last) {
	qp_q::gather(terms, post, nblk, blk_term, blk_idx, d_off, f_off, gdocs, gfreqs, base, last);
}
QP_EMU_REGISTER(qp_query_gather)
static_assert(std::is_same<decltype(&qp_query_gather), QP_SIGNATURE_GatherParams>::value,
              "qp_query_gather's parameters differ from GatherParams (cuda/kern/layout.go)");
