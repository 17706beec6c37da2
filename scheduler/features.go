// Package scheduler assigns a stream of queries to two processors, a CPU
// and a GPU, each an engine.Backend, following Ding et al., "Using Graphics
// Processors for High Performance IR Query Processing" (WWW'09) §9:
//
//   - every query's cost on each processor is predicted by a regression on
//     query features (shortest and second-shortest list length, sum of list
//     lengths, number of terms; Features, CostModel), fitted on measured
//     times of a training slice and refitted online from measured times;
//   - queries go to one of three queues, GPU-preferred, CPU-preferred and
//     "either", by the ratio of their predicted finish times, with a
//     threshold that adapts to the queues (see Scheduler);
//   - an idle processor serves its own queue, then the oldest "either"
//     query, then steals from the tail of the other processor's queue
//     (sparing a batching processor's next batch, and preferring the
//     queries it is relatively best at); a query that has
//     used up a fraction of its time to the deadline (500 ms by default)
//     jumps to the front of its preferred processor;
//   - GPU work is batched as in Ao et al. (VLDB'11) §4.1, PARA: a batch
//     grows until the sum of its predicted costs or of its shortest-list
//     lengths reaches a threshold c, or its oldest query has waited a time
//     limit; a CPU slot (Processor.Sequential) takes the queued queries up
//     to a cost budget per hand-off and runs them one at a time, so that
//     the single dispatcher is not what limits a CPU whose queries take a
//     few microseconds.
//
// Config.Placement PlaceGPUFirst replaces the first three points (issue
// 24): every query goes to the GPU, whose batches are sized by its measured
// batch time (BatchModel: fixed part + time per query, refitted from every
// batch), and the CPU takes only the overflow the GPU is predicted to
// answer too late, on at most the cores the GPU side's host work leaves
// (measured online); see gpufirst.go.
//
// The scheduler never changes results: every Result carries exactly the
// engine.Response its backend wrote. The replay driver (Experiment) compares
// the four configurations of Ding's Figure 7, CPU only, GPU only, the better
// processor per query one query at a time, and CPU and GPU in parallel, and
// CPU and GPU without stealing, on a query log with Poisson arrivals, and
// searches each one's highest sustained rate (p99 delay within the
// deadline, no growing queue) to within 5%, repeated with different
// arrivals (RateSearch, Run.Sustained). Its CPU+GPU setups give the CPU
// only the cores the GPU's host side leaves (ProbeSplit, HostCores,
// HybridCPUSlots), so that the hybrid does not slow the GPU by taking its
// host's cores.
package scheduler

import (
	"slices"

	"github.com/qpengine/qp/engine"
	"github.com/qpengine/qp/index"
)

// Features are the characteristics of a query that its cost is predicted
// from (Ding et al. WWW'09 §9: "the length of shortest list and the second
// shortest list, the sum of lengths of all lists, and the number of terms"),
// plus the longest list and the mode. Lengths are document frequencies of the distinct query
// terms present in the index; with QTF a repeated term still reads its list
// once, so it counts once here too.
type Features struct {
	Mode    engine.Mode
	Terms   int    // distinct query terms present in the index (lists read)
	Missing int    // distinct query terms absent from the index
	Min     uint64 // length of the shortest list; 0 when Terms == 0
	Second  uint64 // length of the second-shortest list; 0 when Terms < 2
	Max     uint64 // length of the longest list; 0 when Terms == 0
	Sum     uint64 // sum of the list lengths
}

// Empty reports whether the query reads no postings: it has no list in the
// index, or it is an AND with a term absent from the index (whose result is
// empty without reading a list; an AndOr query then runs its OR part).
func (f Features) Empty() bool {
	return f.Terms == 0 || (f.Mode == engine.And && f.Missing > 0)
}

// QueryFeatures computes q's features from x's dictionary (one binary
// search per term; it reads no posting list), or from the lookup q carries
// for x (engine.Query.Dict: none then). Invalid queries (no terms, too
// many, bad k or mode) get features too: the backend reports their error,
// and they cost next to nothing.
func QueryFeatures(x *index.Index, q engine.Query) Features {
	if ids, dfs, ok := q.Looked(x); ok {
		return lookedFeatures(q, ids, dfs)
	}
	f := Features{Mode: q.Mode}
	var buf [16]int
	ids := buf[:0]
	missing := 0
	var miss []string
	for _, t := range q.Terms {
		id, ok := x.Lookup(t)
		if !ok {
			// Count distinct missing terms (rare, so a linear scan).
			if !slices.Contains(miss, t) {
				miss = append(miss, t)
				missing++
			}
			continue
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	f.Terms, f.Missing = len(ids), missing
	for _, id := range ids {
		f.addList(uint64(x.Record(id).DF))
	}
	return f
}

// addList counts one distinct list of length df into f's lengths.
func (f *Features) addList(df uint64) {
	f.Sum += df
	f.Max = max(f.Max, df)
	switch {
	case f.Min == 0 || df < f.Min:
		f.Second, f.Min = f.Min, df
	case f.Second == 0 || df < f.Second:
		f.Second = df
	}
}

// lookedFeatures is QueryFeatures of q from its terms' dictionary IDs and
// document frequencies (ids[i], dfs[i] for q.Terms[i]; ID -1: absent), as
// index.LookupDictDF gives them: the same Features, lists counted in the
// same order (a term's first occurrence).
func lookedFeatures(q engine.Query, ids []int, dfs []uint32) Features {
	f := Features{Mode: q.Mode}
	for i, id := range ids {
		if id < 0 {
			if !slices.Contains(q.Terms[:i], q.Terms[i]) { // distinct missing terms
				f.Missing++
			}
			continue
		}
		if !slices.Contains(ids[:i], id) {
			f.Terms++
			f.addList(uint64(dfs[i]))
		}
	}
	return f
}

// LookupQuery looks q's terms up in x once (index.LookupDictDF) and
// returns q's features (QueryFeatures) and the lookup, which the caller
// can hand to the backends with the query (engine.Query.Dict) so that the
// one that answers it does not look its terms up a second time (issue 24,
// hostcut: the lookups were a third of the GPU's host preparation). The
// replay driver looks its log up this way once (Experiment.CarryLookups).
func LookupQuery(x *index.Index, q engine.Query) (Features, *engine.TermLookup) {
	l := &engine.TermLookup{X: x, IDs: make([]int, len(q.Terms)), DFs: make([]uint32, len(q.Terms))}
	x.LookupDictDF(q.Terms, l.IDs, l.DFs)
	return lookedFeatures(q, l.IDs, l.DFs), l
}

// batchPostings is the query's share of BatchPolicy.MaxPostings: the
// shortest list of an AND or AND+OR query (the candidates it starts from),
// all lists of an OR query (it decodes and accumulates them whole).
func (f Features) batchPostings() uint64 {
	if f.Mode == engine.Or {
		return f.Sum
	}
	return f.Min
}
