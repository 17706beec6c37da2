package gpu

import (
	"math"

	"github.com/qpengine/qp/cuda"
	"github.com/qpengine/qp/engine"
)

// OrMaxScore (Options.Or) runs each OR query whose shortest list is short
// against the others (orMSRoute) as MaxScore over that one essential list
// (Turtle & Flood, IP&M 1995; PISA's maxscore), on the AND step machinery
// of and.go in keep-misses mode:
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
//  4. Certificate (host, orMSCertified): that is the query's answer when
//     no document outside the shortest list can reach its k-th score
//     theta: the fold (fadd, canonical order) of the other terms' maxima
//     is strictly below theta (such a document's score is a fold of at
//     most those contributions, and fadd is monotone; equal could still
//     win a tie by docID), or the query has one term. Otherwise (fewer
//     than k candidates, or a second essential list) the query runs on the
//     OR tiles as before.
//
// The certificate is MaxScore with one essential list: the non-essential
// lists are every list but the shortest. Queries that need two or more
// essential lists are not served (a per-query union of lists would be
// needed); docs/GPU-QUERY.md gives their share (TestOrMSEstimate).
const OrMaxScore = "maxscore"

// OrGPUMaxScore is the engine.Stats OrAlgo of the OR queries that
// OrMaxScore answered (the others say OrGPU).
const OrGPUMaxScore engine.OrStrategy = "gpu-maxscore"

// orMSProbeCost is the cost of probing one candidate in one further list
// relative to one posting added by the tiles (orMSRoute): locate (a
// binary search in the skip table), the share of a decoded block, match
// and compaction.
const orMSProbeCost = 4

// orMSRoute reports whether an OR query of m terms whose lists hold post
// postings, df0 of them in the shortest, runs MaxScore first: when its
// candidates' probes cost less than the tiles' work on all postings.
func orMSRoute(post, df0 int64, m int) bool {
	return df0+orMSProbeCost*df0*int64(m-1) < post
}

// runOrMS runs the OR queries of qs that orMSRoute picks as MaxScore over
// their shortest list (every query has >= 1 known term and needOr); those
// it certifies get their results and needOr = false, the others keep
// needOr for the tiles.
func (b *Backend) runOrMS(mem *devMem, qs []*prep, out []engine.Response) error {
	var sel []*prep
	for _, p := range qs {
		ti := b.info[p.terms[0].id]
		if orMSRoute(p.postings(), int64(ti.df), len(p.terms)) {
			sel = append(sel, p)
		}
	}
	if len(sel) == 0 {
		return nil
	}
	if err := b.runAndMode(mem, sel, out, true); err != nil {
		return err
	}
	b.prof.OrMSQueries += int64(len(sel))
	for _, p := range sel {
		if !p.needOr {
			b.prof.OrMSCertified++
		}
	}
	return nil
}

// validOr reports whether name is an OR strategy (Options.Or).
func validOr(name string) bool { return name == OrTiled || name == OrDense || name == OrMaxScore }

// orMSCertified reports whether the top k of p's shortest-list candidates
// (keys: its rank keys, best first) is p's OR answer (OrMaxScore's step
// 4).
func (b *Backend) orMSCertified(p *prep, keys []uint64) bool {
	if len(p.terms) == 1 {
		return true
	}
	if len(keys) < p.q.K || !b.bmExact() || b.opt.orNoPrune {
		return false
	}
	theta := math.Float32frombits(^uint32(keys[p.q.K-1] >> 32))
	var other float32
	for _, t := range p.terms[1:] {
		other += float32(t.w * b.info[t.id].max) // the QTerm mx of fillQueries; no FMA
	}
	return other < theta
}

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
