package gpu

import (
	"math"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/engine"
)

// OrMaxScore (Options.Or) runs each OR query whose shortest list is short
// against the others (orMSRoute) as MaxScore with one to orMSPasses
// essential lists (Turtle & Flood, IP&M 1995; PISA's maxscore), on the AND step
// machinery of and.go in keep-misses mode (runAndMode with keep).
//
// Pass A, for every routed query:
//
//  1. Step 0 decodes the shortest list (canonical term 0); its documents
//     are the candidates, scored with term 0. qp_query_topk over them
//     gives theta0, the k-th best term-0 score: every candidate's full
//     score is at least that, so the final k-th score is too.
//  2. Steps 1..m-1 probe every other list for the candidates in canonical
//     order (block located from the skip table, only those blocks decoded,
//     Ding et al. WWW'09 §8); a miss adds nothing (AND would drop it), and
//     a candidate is dropped once its partial score plus the maxima of
//     the terms still to come is strictly below theta0 (qp_and_match's
//     ms_keep). Scores are summed with fadd in canonical order like AND's,
//     hence bit-identical to the CPU's.
//  3. qp_query_topk selects the top k of the survivors: the exact top k of
//     the shortest list's documents.
//  4. Certificate (host, msCertified): that is the query's answer when no
//     other document can reach its k-th score theta: the fold (float32
//     adds, canonical order) of the other terms' maxima is strictly below
//     theta (such a document's score is a fold of at most those
//     contributions, and fadd is monotone; equal could still win a tie by
//     docID). This is MaxScore with one essential list.
//
// Passes e = 1, 2, ... (up to orMSPasses in all), for the queries the
// earlier passes could not certify and orMSRoute still picks: the same
// over the query's terms e..m-1 (list e's documents as candidates),
// merged with the earlier passes' top k (runOrMSPass says why the merge is
// the top k of the documents of lists 0..e), certified when the maxima of
// terms e+1..m-1 fold strictly below its k-th score (MaxScore with e+1
// essential lists). Queries no pass certifies, and those not routed
// (one-term queries among them), run on the OR tiles.
const OrMaxScore = "maxscore"

// OrGPUMaxScore is the engine.Stats OrAlgo of the OR queries that
// OrMaxScore answered (the others say OrGPU).
const OrGPUMaxScore engine.OrStrategy = "gpu-maxscore"

// orMSPasses is the most passes a query runs (pass e covers canonical
// list e): MaxScore with up to this many essential lists.
const orMSPasses = 3

// orMSProbeCost is the cost of probing one candidate in one further list
// relative to one posting added by the tiles (orMSRoute): locate (a
// binary search in the skip table), the share of a decoded block, match
// and compaction. A guess, to be set from device runs
// (scripts/device/orms.sh).
const orMSProbeCost = 4

// orMSRoute reports whether an OR query of m terms whose lists hold post
// postings runs pass e (0: A), given that its first e+1 lists hold cand
// postings (the candidates of passes 0..e): when their probes cost less
// than the tiles' work on all postings.
func orMSRoute(post, cand int64, m, e int) bool {
	return m > 1 && e < m-1 && e < orMSPasses && cand*(1+orMSProbeCost*int64(m-1)) < post
}

// runOrMS runs the passes over the OR queries of qs that orMSRoute picks
// (every query has >= 1 known term and needOr); those they certify get
// their results and needOr = false, the others keep needOr for the tiles.
func (b *Backend) runOrMS(mem *devMem, qs []*prep, out []engine.Response) error {
	var cur []*prep
	for _, p := range qs {
		if orMSRoute(p.postings(), int64(p.terms[0].df), len(p.terms), 0) {
			cur = append(cur, p)
		}
	}
	if len(cur) == 0 {
		return nil
	}
	if err := b.runAndMode(mem, cur, out, true); err != nil {
		return err
	}
	b.prof.OrMSQueries += int64(len(cur))
	for e := 1; len(cur) > 0; e++ {
		next := cur[:0]
		for _, p := range cur {
			cand := int64(0)
			for _, t := range p.terms[:min(e+1, len(p.terms))] {
				cand += int64(t.df)
			}
			switch {
			case b.msCertified(p, p.ms, e):
				b.msAnswer(p, p.ms, out)
				if e == 1 {
					b.prof.OrMSCertified++
				} else {
					b.prof.OrMSCertified2++
				}
			case orMSRoute(p.postings(), cand, len(p.terms), e):
				next = append(next, p)
			}
		}
		if len(next) == 0 {
			break
		}
		if err := b.runOrMSPass(mem, next, e, out); err != nil {
			return err
		}
		cur = next
	}
	return nil
}

// runOrMSPass is pass e >= 1 over qs: the sub-queries of their terms
// e..m-1 run in keep-misses mode (list e's documents as candidates,
// scored without terms 0..e-1: exact for the documents of none of those
// lists, never above the true score for the others), and each query's
// keys so far (p.ms) are merged with theirs (msMerge). Why the merge's top
// k is the top k of the documents of lists 0..e: a document of the answer
// whose first list is c has its exact score in pass c; had pass c's top k
// missed it, k documents would rank above it by scores no higher than
// their true ones. Every entry is at most its document's true score, and
// an earlier pass's entry is at least a later one's (more terms added,
// fadd monotone): keeping the first entry of a document keeps its best,
// and a document outside the answer ranks below the answer's k documents,
// whose exact entries are there.
func (b *Backend) runOrMSPass(mem *devMem, qs []*prep, e int, out []engine.Response) error {
	if len(b.msB) < len(qs) {
		b.msB = make([]prep, len(qs))
	}
	subs := make([]*prep, len(qs))
	for i, p := range qs {
		s := &b.msB[i]
		*s = prep{i: p.i, q: p.q, terms: p.terms[e:], ms: s.ms[:0]}
		subs[i] = s
	}
	if err := b.runAndMode(mem, subs, out, true); err != nil {
		return err
	}
	b.prof.OrMSSecond += int64(len(qs))
	for i, p := range qs {
		s := subs[i]
		p.st.BlocksDecoded += s.st.BlocksDecoded
		p.st.PostingsDecoded += s.st.PostingsDecoded
		p.st.Candidates += s.st.Candidates
		b.msKeys = msMerge(b.msKeys[:0], p.ms, s.ms, p.q.K)
		p.ms = append(p.ms[:0], b.msKeys...)
	}
	return nil
}

// msAnswer writes p's results (rank keys, best first) and marks it done.
func (b *Backend) msAnswer(p *prep, keys []uint64, out []engine.Response) {
	p.needOr, p.st.OrAlgo = false, OrGPUMaxScore
	out[p.i].Results = results(out[p.i].Results[:0], keys)
}

// msCertified reports whether keys (rank keys, best first), the exact top
// k of the documents of p's first e canonical lists, is p's OR answer:
// the query has no other list, or it has k of them and the maxima of the
// other lists fold strictly below the k-th score.
func (b *Backend) msCertified(p *prep, keys []uint64, e int) bool {
	if len(p.terms) <= e {
		return true
	}
	if len(keys) < p.q.K || !b.bmExact() || b.opt.orNoPrune {
		return false
	}
	theta := math.Float32frombits(^uint32(keys[p.q.K-1] >> 32))
	var other float32
	for _, t := range p.terms[e:] {
		other += float32(t.w * t.ti.max) // the QTerm mx of fillQueries; no FMA
	}
	return other < theta
}

// msMerge appends to dst the first k of the rank keys a and b (each
// ascending, i.e. best first), without b's keys of documents a holds.
func msMerge(dst, a, b []uint64, k int) []uint64 {
	inA := make(map[uint32]struct{}, len(a))
	for _, x := range a {
		inA[uint32(x)] = struct{}{}
	}
	i, j := 0, 0
	for len(dst) < k && (i < len(a) || j < len(b)) {
		if j < len(b) {
			if _, dup := inA[uint32(b[j])]; dup {
				j++
				continue
			}
		}
		if j >= len(b) || (i < len(a) && a[i] < b[j]) {
			dst = append(dst, a[i])
			i++
		} else {
			dst = append(dst, b[j])
			j++
		}
	}
	return dst
}

// validOr reports whether name is an OR strategy (Options.Or).
func validOr(name string) bool { return name == OrTiled || name == OrDense || name == OrMaxScore }

// seedTheta is OrMaxScore's step 1 after step 0: each query's top k over
// the step-0 candidates (term-0 scores) into r.res0/r.cnt0, which
// qp_and_match reads as theta0.
func (r *andRun) seedTheta() error {
	b, s, nq := r.b, r.b.stream, r.nq
	var total, scratch *cuda.Buffer
	if err := r.mem.gets([]**cuda.Buffer{&r.res0, &r.cnt0, &total, &scratch}, 8*r.nres, 4*nq, 4*nq, 8*r.scratchWords); err != nil {
		return err
	}
	t := b.tm.start(s)
	if err := b.qk.TopK(s, false, nq, r.pMeta, r.cdoc.Ptr(), r.cscore.Ptr(), r.cq.Ptr(), r.n, 0, b.n, r.res0.Ptr(), r.cnt0.Ptr(),
		total.Ptr(), scratch.Ptr(), r.pScr); err != nil {
		return err
	}
	b.tm.stop(s, t, phTopK)
	b.prof.Launches++
	r.mem.retire(total, scratch)
	return nil
}
